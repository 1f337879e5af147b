/* Where the spatial ops cut: random_resized_crop's window, resize's output size, center_crop's offset.
 * Each follows torchvision's arithmetic line by line, including Python's round (half to even, which is
 * C's rint in the default rounding mode) and int() truncation, because a one-pixel difference in the
 * window changes every output pixel. */
#include <math.h>

#include "decode_scale.h"
#include "ops.h"
#include "sat.h"

#define RRC_ATTEMPTS 10

static double rng_uniform(void *ctx) { return pb_rng_uniform((pb_rng *)ctx); }

/* torch.randint(0, n + 1): an integer in [0, n] from one uniform draw. */
static int randint_inclusive(pb_uniform_fn uniform, void *ctx, int n) {
  int k = (int)(uniform(ctx) * (double)(n + 1));
  return k > n ? n : k; /* u < 1, but (n+1)*u can still round up to n+1 */
}

/* A trimmed side: rounded, at least one pixel (a crop of none fails every op after it) and at most the
 * image's (saturated first: a ratio near 0 makes W / rmin overflow an int). */
static int trimmed_side(double exact, int limit) {
  int side = pb_sat_int_from_double(rint(exact));
  return side < 1 ? 1 : side > limit ? limit : side;
}

/* The fallback: the whole image, trimmed to the nearest allowed aspect ratio, centred. */
static void rrc_fallback(int H, int W, const double ratio[2], int *i, int *j, int *h, int *w) {
  double in_ratio = (double)W / (double)H;
  double rmin = fmin(ratio[0], ratio[1]), rmax = fmax(ratio[0], ratio[1]);
  *w = W;
  *h = H;
  if (in_ratio < rmin)
    *h = trimmed_side(W / rmin, H);
  else if (in_ratio > rmax)
    *w = trimmed_side(H * rmax, W);
  *i = (H - *h) / 2;
  *j = (W - *w) / 2;
}

void pb_rrc_params_from(pb_uniform_fn uniform, void *ctx, int H, int W, const double scale[2],
                        const double ratio[2], int *i, int *j, int *h, int *w) {
  double area = (double)H * (double)W;
  double log_r0 = log(ratio[0]), log_r1 = log(ratio[1]);
  for (int attempt = 0; attempt < RRC_ATTEMPTS; attempt++) {
    double target_area = area * (scale[0] + (scale[1] - scale[0]) * uniform(ctx));
    double aspect = exp(log_r0 + (log_r1 - log_r0) * uniform(ctx));
    /* saturated: an extreme ratio (the ops take any, the config 1:100 at most) must fail the attempt, not
     * overflow the cast */
    int cw = pb_sat_int_from_double(rint(sqrt(target_area * aspect)));
    int ch = pb_sat_int_from_double(rint(sqrt(target_area / aspect)));
    if (cw > 0 && cw <= W && ch > 0 && ch <= H) {
      *i = randint_inclusive(uniform, ctx, H - ch);
      *j = randint_inclusive(uniform, ctx, W - cw);
      *h = ch;
      *w = cw;
      return;
    }
  }
  rrc_fallback(H, W, ratio, i, j, h, w);
}

void pb_rrc_params(pb_rng *rng, int H, int W, const double scale[2], const double ratio[2], int *i, int *j,
                   int *h, int *w) {
  pb_rrc_params_from(rng_uniform, rng, H, W, scale, ratio, i, j, h, w);
}

void pb_fused_crop_region(pb_rng *rng, int sh, int sw, const pb_op_cfg *crop, bool per_crop, int *denom, int rect[4]) {
  int i, j, h, w;
  pb_rrc_params(rng, sh, sw, crop->scale, crop->ratio, &i, &j, &h, &w);
  int d = per_crop ? pb_crop_denom(h, w, (int)crop->size) : 1;
  *denom = d;
  rect[0] = j, rect[1] = i, rect[2] = w, rect[3] = h;
  if (d > 1)
    pb_crop_scaled(j, i, w, h, d, pb_jpeg_scaled_dim(sw, d), pb_jpeg_scaled_dim(sh, d), &rect[0], &rect[1], &rect[2],
                   &rect[3]);
}

void pb_resize_shorter_dims(int H, int W, int size, int *out_h, int *out_w) {
  /* Python: int(size * long / short) — an exact integer product, one correctly rounded division;
   * saturated, since 65535x1 to a shorter side of 65535 is past INT_MAX (the map stage then refuses it). */
  int shorter = W <= H ? W : H, longer = W <= H ? H : W;
  int new_long = pb_sat_int_from_double((double)((int64_t)size * longer) / (double)shorter);
  *out_w = W <= H ? size : new_long;
  *out_h = W <= H ? new_long : size;
}

/* One axis of torchvision's center_crop: pad (size-n)//2 before when the image is too small, else
 * start at round((n - size) / 2). */
static int center_offset(int n, int size) {
  if (size > n) return -((size - n) / 2);
  return (int)rint((n - size) / 2.0);
}

void pb_center_crop_params(int H, int W, int size_h, int size_w, int *top, int *left) {
  *top = center_offset(H, size_h);
  *left = center_offset(W, size_w);
}

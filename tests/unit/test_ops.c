/* The map image ops (src/engine/pipeline/ops): random_resized_crop geometry against an independent transcription of
 * torchvision's get_params fed the same draws, bilinear against hand-computed values and Pillow's output
 * (vectors generated once with Pillow 13's Image.resize(BILINEAR) on the same synthetic image), resize's
 * shorter-side rule, center_crop with padding, flip, normalize to float32/float16 and to_chw.
 *
 * PB_OPS_BENCH=1 also prints ns per output pixel of a 500x375 -> 224x224 random_resized_crop. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ops.h"
#include "unit_util.h"

static const double k_scale[2] = {0.08, 1.0};
static const double k_ratio[2] = {3.0 / 4.0, 4.0 / 3.0};

/* ---- helpers ---- */

/* The synthetic image the Pillow vectors were made from: smooth ramps plus a little texture. */
static uint8_t pattern(int y, int x, int c) { return (uint8_t)((x * 37 + y * 91 + c * 53 + ((x * y) % 7) * 11) % 256); }

static pb_image make_u8(int H, int W, int C) {
  uint8_t *d = malloc((size_t)H * W * C);
  assert_non_null(d);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++)
      for (int c = 0; c < C; c++) d[((size_t)y * W + x) * C + c] = pattern(y, x, c);
  return (pb_image){d, H, W, C, PB_DTYPE_UINT8, false};
}

static pb_image make_out(int H, int W, int C, pb_dtype t) {
  pb_image o = {NULL, H, W, C, t, false};
  o.data = calloc(1, pb_image_bytes(&o));
  assert_non_null(o.data);
  return o;
}

/* A scripted uniform source: returns u[0], u[1], ... (tests of the draw order). */
typedef struct script {
  const double *u;
  int n, next;
} script;

static double script_draw(void *ctx) {
  script *s = ctx;
  assert_true(s->next < s->n); /* the code under test drew more than the reference expects */
  return s->u[s->next++];
}

static double rng_draw(void *ctx) { return pb_rng_uniform(ctx); }

/* Python's round(): half to even, written out rather than relying on rint's rounding mode. */
static int py_round(double x) {
  double f = floor(x), d = x - f;
  if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0)) f += 1.0;
  return (int)f;
}

/* torchvision.transforms.RandomResizedCrop.get_params, transcribed; torch.randint(0, n+1) as floor(u*(n+1)). */
static void ref_rrc(pb_uniform_fn draw, void *ctx, int H, int W, const double scale[2], const double ratio[2],
                    int r[4]) {
  double area = (double)H * W, lr0 = log(ratio[0]), lr1 = log(ratio[1]);
  for (int attempt = 0; attempt < 10; attempt++) {
    double target_area = area * (scale[0] + (scale[1] - scale[0]) * draw(ctx));
    double aspect = exp(lr0 + (lr1 - lr0) * draw(ctx));
    int w = py_round(sqrt(target_area * aspect)), h = py_round(sqrt(target_area / aspect));
    if (0 < w && w <= W && 0 < h && h <= H) {
      r[0] = (int)floor(draw(ctx) * (H - h + 1));
      r[1] = (int)floor(draw(ctx) * (W - w + 1));
      r[2] = h;
      r[3] = w;
      return;
    }
  }
  double in_ratio = (double)W / H, rmin = fmin(ratio[0], ratio[1]), rmax = fmax(ratio[0], ratio[1]);
  int w = W, h = H;
  if (in_ratio < rmin) h = py_round(w / rmin);
  else if (in_ratio > rmax) w = py_round(h * rmax);
  r[0] = (H - h) / 2;
  r[1] = (W - w) / 2;
  r[2] = h;
  r[3] = w;
}

static void rrc_scripted(const double *u, int n, int H, int W, const double scale[2], const double ratio[2],
                         int r[4], int *used) {
  script s = {u, n, 0};
  pb_rrc_params_from(script_draw, &s, H, W, scale, ratio, &r[0], &r[1], &r[2], &r[3]);
  *used = s.next;
}

/* ---- random_resized_crop parameters ---- */

static void test_rrc_reproducible_and_seed_dependent(void **state) {
  (void)state;
  int same = 0;
  pb_rng a, b, c;
  pb_rng_seed(&a, 42);
  pb_rng_seed(&b, 42);
  pb_rng_seed(&c, 43);
  for (int k = 0; k < 200; k++) {
    int ra[4], rb[4], rc[4];
    pb_rrc_params(&a, 375, 500, k_scale, k_ratio, &ra[0], &ra[1], &ra[2], &ra[3]);
    pb_rrc_params(&b, 375, 500, k_scale, k_ratio, &rb[0], &rb[1], &rb[2], &rb[3]);
    pb_rrc_params(&c, 375, 500, k_scale, k_ratio, &rc[0], &rc[1], &rc[2], &rc[3]);
    assert_memory_equal(ra, rb, sizeof ra);
    same += memcmp(ra, rc, sizeof ra) == 0;
  }
  assert_true(same < 5);
}

static void test_rrc_inside_image(void **state) {
  (void)state;
  pb_rng rng;
  pb_rng_seed(&rng, 7);
  for (int k = 0; k < 20000; k++) {
    int H = 1 + (int)(pb_rng_uniform(&rng) * 600), W = 1 + (int)(pb_rng_uniform(&rng) * 600), i, j, h, w;
    pb_rrc_params(&rng, H, W, k_scale, k_ratio, &i, &j, &h, &w);
    assert_int_cmp(h, >, 0);
    assert_int_cmp(w, >, 0);
    assert_int_cmp(i, >=, 0);
    assert_int_cmp(j, >=, 0);
    assert_int_cmp(i + h, <=, H);
    assert_int_cmp(j + w, <=, W);
  }
}

/* Draws that make every attempt fail land in each branch of the centre-crop fallback. */
static void test_rrc_fallback(void **state) {
  (void)state;
  double u[20];
  for (int k = 0; k < 20; k++) u[k] = 0.5;
  int r[4], used;
  const double full[2] = {1.0, 1.0}, wide[2] = {2.0, 3.0}, tall[2] = {0.5, 0.75}, square[2] = {0.9, 1.1};
  rrc_scripted(u, 20, 100, 100, full, wide, r, &used); /* too square for [2,3]: full width, h = W / 2 */
  assert_int_equal(used, 20);
  assert_int_equal(r[0], 25), assert_int_equal(r[1], 0), assert_int_equal(r[2], 50), assert_int_equal(r[3], 100);
  rrc_scripted(u, 20, 100, 400, full, tall, r, &used); /* too wide: full height, w = round(100 * 0.75) */
  assert_int_equal(r[0], 0), assert_int_equal(r[1], 162), assert_int_equal(r[2], 100), assert_int_equal(r[3], 75);
  const double too_big[2] = {1.5, 1.5}; /* areas over the image (not a valid config, but defined) */
  rrc_scripted(u, 20, 100, 100, too_big, square, r, &used); /* ratio in range: the whole image */
  assert_int_equal(r[0], 0), assert_int_equal(r[1], 0), assert_int_equal(r[2], 100), assert_int_equal(r[3], 100);
}

/* Issue 32: a ratio far from the image's own left the fallback a side of 0 pixels (500x375 at 1e-9: 0 wide),
 * so every sample failed; one near 0 also overflowed the int cast of an attempt's side (undefined
 * behaviour, UBSan's float-cast-overflow).  The crop now always has at least one pixel a side, inside. */
static void test_rrc_extreme_ratio_keeps_a_pixel(void **state) {
  (void)state;
  const double ratios[][2] = {{1e-9, 1e-9}, {1e9, 1e9}, {1e-300, 1e-300}, {1e300, 1e300}, {0.01, 0.01}, {100, 100}};
  const int sizes[][2] = {{375, 500}, {1, 1}, {3, 40}, {40, 3}};
  pb_image out = make_out(8, 8, 3, PB_DTYPE_UINT8);
  for (size_t r = 0; r < PB_ARRAY_LEN(ratios); r++) {
    for (size_t z = 0; z < PB_ARRAY_LEN(sizes); z++) {
      int H = sizes[z][0], W = sizes[z][1], rect[4];
      pb_image in = make_u8(H, W, 3);
      pb_rng rng;
      pb_rng_seed(&rng, 5);
      int rc = pb_random_resized_crop(&in, &rng, k_scale, ratios[r], &out, PB_RESAMPLE_BILINEAR, NULL, rect);
      if (rc) fail_msg("ratio %g on %dx%d: %s", ratios[r][0], W, H, pb_ops_why());
      assert_int_cmp(rect[2], >=, 1);
      assert_int_cmp(rect[3], >=, 1);
      assert_int_cmp(rect[0] + rect[2], <=, H);
      assert_int_cmp(rect[1] + rect[3], <=, W);
      free(in.data);
    }
  }
  free(out.data);
}

/* Hand-worked draws: the first attempt succeeds; Python's half-to-even round; a zero-size attempt retries. */
static void test_rrc_scripted_by_hand(void **state) {
  (void)state;
  int r[4], used;
  const double u1[] = {0.5, 0.5, 0.5, 0.25};
  /* area 187500 * (0.08 + 0.92/2) = 101250, aspect exp(mid of log range) ~ 1: w = h = round(318.198) = 318;
   * top = floor(0.5 * 58) = 29, left = floor(0.25 * 183) = 45 */
  rrc_scripted(u1, 4, 375, 500, k_scale, k_ratio, r, &used);
  assert_int_equal(used, 4);
  assert_int_equal(r[0], 29), assert_int_equal(r[1], 45), assert_int_equal(r[2], 318), assert_int_equal(r[3], 318);
  /* 16x16, ratio 1, scales in binary fractions so the areas are exact: attempt 1 has area 256 / 1024 =
   * 0.25, side round(0.5) = 0, rejected; attempt 2 area 256 * 25 / 1024 = 6.25, side round(2.5) = 2 (half
   * to even; half up would say 3); top = floor(0.99 * 15) = 14 */
  const double one[2] = {1.0, 1.0}, tiny[2] = {0x1p-10, 25 * 0x1p-10};
  const double u2[] = {0.0, 0.3, 1.0, 0.3, 0.99, 0.0};
  rrc_scripted(u2, 6, 16, 16, tiny, one, r, &used);
  assert_int_equal(used, 6);
  assert_int_equal(r[0], 14), assert_int_equal(r[1], 0), assert_int_equal(r[2], 2), assert_int_equal(r[3], 2);
}

/* Random scripts and random images: the implementation and the transcription agree on every draw. */
static void test_rrc_matches_reference(void **state) {
  (void)state;
  pb_rng gen;
  pb_rng_seed(&gen, 99);
  const double scales[3][2] = {{0.08, 1.0}, {0.5, 1.0}, {0.9, 1.0}}, ratios[3][2] = {{0.75, 4.0 / 3}, {0.2, 5}, {1, 1}};
  for (int k = 0; k < 30000; k++) {
    int H = 1 + (int)(pb_rng_uniform(&gen) * 300), W = 1 + (int)(pb_rng_uniform(&gen) * 300);
    const double *sc = scales[k % 3], *ra = ratios[(k / 3) % 3];
    pb_rng a, b;
    pb_rng_seed(&a, (uint64_t)k);
    pb_rng_seed(&b, (uint64_t)k);
    int got[4], want[4];
    pb_rrc_params(&a, H, W, sc, ra, &got[0], &got[1], &got[2], &got[3]);
    ref_rrc(rng_draw, &b, H, W, sc, ra, want);
    assert_memory_equal(got, want, sizeof got);
    assert_memory_equal(&a, &b, sizeof a); /* same number of draws */
  }
}

/* ---- resampling ---- */

static void check_u8(const pb_image *o, const uint8_t *want, int tolerance) {
  size_t n = pb_image_bytes(o);
  const uint8_t *got = o->data;
  for (size_t k = 0; k < n; k++) {
    if (abs((int)got[k] - (int)want[k]) > tolerance) fail_msg("element %zu: got %d, want %d", k, got[k], want[k]);
  }
}

static void test_bilinear_2x2_to_4x4(void **state) {
  (void)state;
  uint8_t px[4] = {0, 64, 128, 255}, out[16];
  pb_image in = {px, 2, 2, 1, PB_DTYPE_UINT8, false}, o = {out, 4, 4, 0, PB_DTYPE_FLOAT32, true};
  /* taps at -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to the last pixel) on both axes */
  const uint8_t want[16] = {0, 16, 48, 64, 32, 52, 92, 112, 96, 124, 179, 207, 128, 160, 223, 255};
  assert_int_equal(pb_crop_resize_bilinear(&in, 0, 0, 2, 2, &o), 0);
  assert_int_equal(o.channels, 1), assert_int_equal(o.dtype, PB_DTYPE_UINT8), assert_false(o.chw);
  check_u8(&o, want, 0);
  /* upscaling, Pillow's antialiased filter is the same bilinear (Pillow gives exactly these values) */
  uint8_t scratch[4096];
  assert_true(pb_crop_resize_scratch_bytes(&in, 2, 2, 4, 4, PB_RESAMPLE_BILINEAR_AA) <= sizeof scratch);
  memset(out, 0, sizeof out);
  assert_int_equal(pb_crop_resize(&in, 0, 0, 2, 2, &o, PB_RESAMPLE_BILINEAR_AA, scratch), 0);
  check_u8(&o, want, 0);
}

static void test_bilinear_4x4_to_2x2(void **state) {
  (void)state;
  uint8_t px[16], out[4], scratch[4096];
  for (int k = 0; k < 16; k++) px[k] = (uint8_t)(k * 10);
  pb_image in = {px, 4, 4, 1, PB_DTYPE_UINT8, false}, o = {out, 2, 2, 1, PB_DTYPE_UINT8, false};
  /* plain: taps at 0.5 and 2.5, the mean of each 2x2 block */
  const uint8_t plain[4] = {25, 45, 105, 125};
  assert_int_equal(pb_crop_resize_bilinear(&in, 0, 0, 4, 4, &o), 0);
  check_u8(&o, plain, 0);
  /* antialiased: weights 3/7 3/7 1/7 (and mirrored) on each axis; Pillow: 36 52 98 114 */
  const uint8_t aa[4] = {36, 52, 98, 114};
  assert_int_equal(pb_crop_resize(&in, 0, 0, 4, 4, &o, PB_RESAMPLE_BILINEAR_AA, scratch), 0);
  check_u8(&o, aa, 0);
}

static void test_bilinear_identity(void **state) {
  (void)state;
  pb_image in = make_u8(5, 7, 3), o = make_out(5, 7, 3, PB_DTYPE_UINT8);
  uint8_t scratch[8192];
  assert_int_equal(pb_crop_resize_bilinear(&in, 0, 0, 5, 7, &o), 0);
  assert_memory_equal(o.data, in.data, pb_image_bytes(&in));
  memset(o.data, 0, pb_image_bytes(&o));
  assert_int_equal(pb_resize(&in, &o, PB_RESAMPLE_BILINEAR_AA, scratch), 0);
  assert_memory_equal(o.data, in.data, pb_image_bytes(&in));
  free(in.data);
  free(o.data);
}

/* Vectors from Pillow 13: Image.fromarray(crop).resize((ow, oh), Image.BILINEAR) on pattern(). */
static const uint8_t pil_down_13x17_w2_3_9x11_to_4x5[60] = {
    128, 113, 124, 125, 98,  130, 136, 144, 108, 125, 136, 110, 140, 89,  142, 124, 129, 87,  134, 159,
    106, 117, 169, 121, 120, 142, 93,  144, 151, 97,  145, 108, 93,  124, 112, 133, 128, 157, 116, 155,
    124, 94,  126, 86,  119, 128, 92,  113, 117, 129, 123, 120, 113, 135, 126, 97,  112, 117, 108, 114,
};
static const uint8_t pil_up_13x17_w1_2_4x5_to_7x9[189] = {
    187, 240, 37,  203, 171, 53,  230, 55,  80,  143, 53,  106, 27,  80,  133, 54,  107, 160, 80,  133, 186,
    107, 160, 213, 123, 176, 229, 136, 189, 77,  153, 152, 95,  182, 89,  124, 126, 87,  140, 48,  101, 154,
    77,  130, 183, 105, 148, 201, 134, 126, 179, 152, 113, 166, 54,  107, 142, 74,  121, 162, 106, 142, 193,
    98,  141, 194, 81,  134, 187, 113, 166, 219, 146, 172, 225, 178, 73,  126, 197, 13,  66,  101, 154, 79,
    110, 163, 88,  124, 177, 102, 138, 134, 116, 153, 78,  131, 167, 92,  145, 172, 97,  150, 136, 62,  115,
    115, 40,  93,  160, 213, 10,  154, 207, 10,  143, 196, 9,   170, 117, 38,  206, 21,  74,  205, 21,  74,
    186, 28,  81,  90,  64,  117, 33,  86,  139, 180, 233, 30,  142, 195, 47,  78,  131, 74,  78,  90,  92,
    93,  54,  107, 120, 82,  135, 135, 107, 160, 100, 123, 176, 78,  131, 184, 193, 246, 43,  135, 188, 70,
    37,  90,  115, 20,  73,  126, 22,  75,  128, 67,  120, 173, 103, 156, 209, 106, 159, 212, 107, 160, 213,
};
static const uint8_t pil_gray_48x64_to_5x7[35] = {
    125, 130, 132, 133, 132, 132, 131, 121, 123, 125, 128, 131, 130, 130, 118, 122, 125, 128,
    129, 130, 133, 120, 120, 121, 124, 128, 130, 133, 115, 115, 116, 120, 122, 123, 127,
};

static void test_antialias_matches_pillow(void **state) {
  (void)state;
  static uint8_t scratch[1 << 16];
  pb_image in = make_u8(13, 17, 3), down = make_out(4, 5, 3, PB_DTYPE_UINT8), up = make_out(7, 9, 3, PB_DTYPE_UINT8);
  assert_true(pb_crop_resize_scratch_bytes(&in, 13, 17, 7, 9, PB_RESAMPLE_BILINEAR_AA) <= sizeof scratch);
  assert_int_equal(pb_crop_resize(&in, 2, 3, 9, 11, &down, PB_RESAMPLE_BILINEAR_AA, scratch), 0);
  check_u8(&down, pil_down_13x17_w2_3_9x11_to_4x5, 0);
  assert_int_equal(pb_crop_resize(&in, 1, 2, 4, 5, &up, PB_RESAMPLE_BILINEAR_AA, scratch), 0);
  check_u8(&up, pil_up_13x17_w1_2_4x5_to_7x9, 0);
  /* Upscaling, plain bilinear is the same filter; Pillow rounds between its two passes, we round once. */
  assert_int_equal(pb_crop_resize_bilinear(&in, 1, 2, 4, 5, &up), 0);
  check_u8(&up, pil_up_13x17_w1_2_4x5_to_7x9, 1);
  pb_image gray = make_u8(48, 64, 1), small = make_out(5, 7, 1, PB_DTYPE_UINT8);
  assert_int_equal(pb_resize(&gray, &small, PB_RESAMPLE_BILINEAR_AA, scratch), 0);
  check_u8(&small, pil_gray_48x64_to_5x7, 0);
  free(in.data), free(down.data), free(up.data), free(gray.data), free(small.data);
}

/* The uint8 resamplers' vector kernels (antialiased: AVX2 where the CPU has it; plain bilinear: SSE2)
 * give the same bytes as their C loops: random content, windows touching every image edge, shrinking and
 * growing, 1 to 4 channels, widths that leave vector tails.  Exactly malloc'ed images, so the sanitizers
 * catch a kernel reading past the last pixel. */
static void test_simd_matches_c(void **state) {
  (void)state;
  static uint8_t scratch[1 << 22];
  pb_rng rng;
  pb_rng_seed(&rng, 23);
  for (int it = 0; it < 800; it++) {
    int H = 1 + (int)(pb_rng_uniform(&rng) * 300), W = 1 + (int)(pb_rng_uniform(&rng) * 300), C = 1 + it % 4;
    int h = 1 + (int)(pb_rng_uniform(&rng) * H), w = 1 + (int)(pb_rng_uniform(&rng) * W);
    if (it % 3 == 0 && h >= 4) h -= h % 4; /* the image's last row inside a four-row step of the AA kernel */
    int top = it % 3 == 0 ? H - h : (int)(pb_rng_uniform(&rng) * (H - h + 1));
    int left = it % 3 == 0 ? W - w : (int)(pb_rng_uniform(&rng) * (W - w + 1));
    int oh = 1 + (int)(pb_rng_uniform(&rng) * 240), ow = 1 + (int)(pb_rng_uniform(&rng) * 240);
    pb_image in = make_out(H, W, C, PB_DTYPE_UINT8);
    for (size_t k = 0; k < pb_image_bytes(&in); k++) ((uint8_t *)in.data)[k] = (uint8_t)(pb_rng_next(&rng) >> 56);
    pb_image vec = make_out(oh, ow, C, PB_DTYPE_UINT8), ref = make_out(oh, ow, C, PB_DTYPE_UINT8);
    pb_resample mode = it % 2 ? PB_RESAMPLE_BILINEAR : PB_RESAMPLE_BILINEAR_AA;
    assert_true(pb_crop_resize_scratch_bytes(&in, h, w, oh, ow, mode) <= sizeof scratch);
    pb_ops_allow_simd(true);
    assert_int_equal(pb_crop_resize(&in, top, left, h, w, &vec, mode, scratch), 0);
    pb_ops_allow_simd(false);
    assert_int_equal(pb_crop_resize(&in, top, left, h, w, &ref, mode, scratch), 0);
    pb_ops_allow_simd(true);
    assert_memory_equal(vec.data, ref.data, pb_image_bytes(&ref));
    free(in.data), free(vec.data), free(ref.data);
  }
}

/* torch's upsample_bilinear2d (align_corners=false) in double, for one output element. */
static double ref_bilinear(const pb_image *in, int top, int left, int h, int w, int oh, int ow, int y, int x,
                           int c) {
  double sy = fmax((y + 0.5) * h / oh - 0.5, 0.0), sx = fmax((x + 0.5) * w / ow - 0.5, 0.0);
  int y0 = PB_MIN((int)sy, h - 1), x0 = PB_MIN((int)sx, w - 1);
  int y1 = PB_MIN(y0 + 1, h - 1), x1 = PB_MIN(x0 + 1, w - 1);
  double fy = sy - y0, fx = sx - x0;
  const uint8_t *d = in->data;
#define AT(yy, xx) (double)d[((size_t)(top + (yy)) * in->width + left + (xx)) * in->channels + c]
  return (AT(y0, x0) * (1 - fx) + AT(y0, x1) * fx) * (1 - fy) + (AT(y1, x0) * (1 - fx) + AT(y1, x1) * fx) * fy;
#undef AT
}

/* Random windows and sizes, up and down, uint8 and float32: plain bilinear within rounding of the double
 * reference.  Also the sanitizer's check that no size reads or writes outside the buffers. */
static void test_bilinear_random_vs_reference(void **state) {
  (void)state;
  pb_rng rng;
  pb_rng_seed(&rng, 5);
  pb_image in = make_u8(40, 50, 3);
  pb_image fin = make_out(40, 50, 3, PB_DTYPE_FLOAT32);
  for (size_t k = 0; k < 40 * 50 * 3; k++) ((float *)fin.data)[k] = ((uint8_t *)in.data)[k];
  for (int it = 0; it < 300; it++) {
    int h = 1 + (int)(pb_rng_uniform(&rng) * 40), w = 1 + (int)(pb_rng_uniform(&rng) * 50);
    int top = (int)(pb_rng_uniform(&rng) * (40 - h + 1)), left = (int)(pb_rng_uniform(&rng) * (50 - w + 1));
    int oh = 1 + (int)(pb_rng_uniform(&rng) * 70), ow = 1 + (int)(pb_rng_uniform(&rng) * 70);
    pb_image o = make_out(oh, ow, 3, PB_DTYPE_UINT8), fo = make_out(oh, ow, 3, PB_DTYPE_FLOAT32);
    assert_int_equal(pb_crop_resize_bilinear(&in, top, left, h, w, &o), 0);
    assert_int_equal(pb_crop_resize_bilinear(&fin, top, left, h, w, &fo), 0);
    for (int y = 0; y < oh; y++)
      for (int x = 0; x < ow; x++)
        for (int c = 0; c < 3; c++) {
          double want = ref_bilinear(&in, top, left, h, w, oh, ow, y, x, c);
          size_t at = ((size_t)y * ow + x) * 3 + c;
          assert_true(fabs(((uint8_t *)o.data)[at] - want) <= 0.5 + 0.14); /* Q11 weights: < 0.13 off */
          assert_true(fabs(((float *)fo.data)[at] - want) < 1e-2); /* float vs double taps */
        }
    free(o.data), free(fo.data);
  }
  free(in.data), free(fin.data);
}

/* Every dtype, layout and mode over random geometry; CHW output equals to_chw of the HWC output. */
static void test_resample_layouts_and_dtypes(void **state) {
  (void)state;
  static uint8_t scratch[1 << 20];
  pb_rng rng;
  pb_rng_seed(&rng, 11);
  for (int it = 0; it < 200; it++) {
    int H = 1 + (int)(pb_rng_uniform(&rng) * 30), W = 1 + (int)(pb_rng_uniform(&rng) * 30), C = 1 + it % 4;
    int oh = 1 + (int)(pb_rng_uniform(&rng) * 40), ow = 1 + (int)(pb_rng_uniform(&rng) * 40);
    pb_resample mode = it % 2 ? PB_RESAMPLE_BILINEAR_AA : PB_RESAMPLE_BILINEAR;
    pb_dtype t = (pb_dtype)((it / 2) % 3);
    pb_image u8 = make_u8(H, W, C), in = make_out(H, W, C, t), chw = make_out(H, W, C, t);
    assert_int_equal(pb_normalize(&u8, &in, (double[]){0}, 1, (double[]){1}, 1, t), 0);
    assert_int_equal(pb_to_chw(&in, &chw), 0);
    pb_image o = make_out(oh, ow, C, t), oc = make_out(oh, ow, C, t), oc_hwc = make_out(oh, ow, C, t);
    assert_true(pb_crop_resize_scratch_bytes(&in, H, W, oh, ow, mode) <= sizeof scratch);
    assert_int_equal(pb_resize(&in, &o, mode, scratch), 0);
    assert_int_equal(pb_resize(&chw, &oc, mode, scratch), 0);
    assert_true(oc.chw);
    assert_int_equal(pb_to_chw(&o, &oc_hwc), 0);
    assert_memory_equal(oc.data, oc_hwc.data, pb_image_bytes(&o));
    free(u8.data), free(in.data), free(chw.data), free(o.data), free(oc.data), free(oc_hwc.data);
  }
}

static void test_crop_resize_rejects_bad_windows(void **state) {
  (void)state;
  uint8_t px[12], out[4];
  pb_image in = {px, 2, 2, 3, PB_DTYPE_UINT8, false}, o = {out, 1, 1, 3, PB_DTYPE_UINT8, false};
  assert_int_equal(pb_crop_resize_bilinear(&in, 1, 0, 2, 2, &o), -EINVAL);
  assert_int_equal(pb_crop_resize_bilinear(&in, 0, -1, 1, 1, &o), -EINVAL);
  assert_int_equal(pb_crop_resize_bilinear(&in, 0, 0, 0, 1, &o), -EINVAL);
  assert_int_equal(pb_crop_resize(&in, 0, 0, 1, 1, &o, PB_RESAMPLE_BILINEAR_AA, NULL), -EINVAL);
  o.data = NULL;
  assert_int_equal(pb_crop_resize_bilinear(&in, 0, 0, 1, 1, &o), -EINVAL);
}

static void test_random_resized_crop_reproducible(void **state) {
  (void)state;
  pb_image in = make_u8(75, 100, 3);
  pb_image a = make_out(32, 32, 3, PB_DTYPE_UINT8), b = make_out(32, 32, 3, PB_DTYPE_UINT8);
  int differ = 0;
  for (uint64_t seed = 0; seed < 20; seed++) {
    pb_rng r1, r2, r3;
    pb_rng_seed(&r1, seed), pb_rng_seed(&r2, seed), pb_rng_seed(&r3, seed + 1000);
    int rect1[4], rect2[4];
    assert_int_equal(pb_random_resized_crop(&in, &r1, k_scale, k_ratio, &a, PB_RESAMPLE_BILINEAR, NULL, rect1), 0);
    assert_int_equal(pb_random_resized_crop(&in, &r2, k_scale, k_ratio, &b, PB_RESAMPLE_BILINEAR, NULL, rect2), 0);
    assert_memory_equal(a.data, b.data, pb_image_bytes(&a));
    assert_memory_equal(rect1, rect2, sizeof rect1);
    assert_int_equal(pb_random_resized_crop(&in, &r3, k_scale, k_ratio, &b, PB_RESAMPLE_BILINEAR, NULL, NULL), 0);
    differ += memcmp(a.data, b.data, pb_image_bytes(&a)) != 0;
  }
  assert_true(differ >= 18);
  free(in.data), free(a.data), free(b.data);
}

/* ---- resize, center_crop ---- */

static void test_resize_shorter_side(void **state) {
  (void)state;
  int h, w;
  pb_resize_shorter_dims(375, 500, 224, &h, &w); /* 224 * 500 / 375 = 298.67 -> int() = 298 */
  assert_int_equal(h, 224), assert_int_equal(w, 298);
  pb_resize_shorter_dims(500, 375, 224, &h, &w);
  assert_int_equal(h, 298), assert_int_equal(w, 224);
  pb_resize_shorter_dims(100, 100, 50, &h, &w);
  assert_int_equal(h, 50), assert_int_equal(w, 50);
  pb_resize_shorter_dims(3, 1000, 10, &h, &w); /* 10 * 1000 / 3 = 3333.3 */
  assert_int_equal(h, 10), assert_int_equal(w, 3333);
  pb_resize_shorter_dims(6, 9, 4, &h, &w); /* exactly 6: no float truncation to 5 */
  assert_int_equal(h, 4), assert_int_equal(w, 6);
  pb_image in = make_u8(6, 9, 3), o = make_out(h, w, 3, PB_DTYPE_UINT8);
  assert_int_equal(pb_resize(&in, &o, PB_RESAMPLE_BILINEAR, NULL), 0);
  assert_int_equal(o.height, 4), assert_int_equal(o.width, 6);
  free(in.data), free(o.data);
  /* 65535 * 65535 is past INT_MAX: saturated (the map stage refuses it by name), not wrapped negative by an
   * undefined cast (x86 gave INT_MIN, which slipped past the stage's "over 65535" check) */
  pb_resize_shorter_dims(1, 65535, 65535, &h, &w);
  assert_int_equal(h, 65535), assert_int_equal(w, INT32_MAX);
}

static void test_center_crop_offsets(void **state) {
  (void)state;
  int top, left;
  pb_center_crop_params(5, 5, 3, 3, &top, &left);
  assert_int_equal(top, 1), assert_int_equal(left, 1);
  pb_center_crop_params(4, 6, 3, 3, &top, &left); /* round(0.5) = 0, round(1.5) = 2: half to even */
  assert_int_equal(top, 0), assert_int_equal(left, 2);
  pb_center_crop_params(2, 6, 5, 4, &top, &left); /* pad (5-2)//2 = 1 above; round(1.0) = 1 */
  assert_int_equal(top, -1), assert_int_equal(left, 1);
  pb_center_crop_params(375, 500, 224, 224, &top, &left);
  assert_int_equal(top, 76), assert_int_equal(left, 138);
}

static void test_center_crop_pixels_and_padding(void **state) {
  (void)state;
  pb_image in = make_u8(5, 6, 3), o = make_out(3, 3, 3, PB_DTYPE_UINT8);
  assert_int_equal(pb_center_crop(&in, &o), 0); /* top 1, left round(1.5) = 2 */
  const uint8_t *d = o.data;
  for (int y = 0; y < 3; y++)
    for (int x = 0; x < 3; x++)
      for (int c = 0; c < 3; c++) assert_int_equal(d[(y * 3 + x) * 3 + c], pattern(y + 1, x + 2, c));
  /* 2x3 into 5x5: one zero row above, two below; one zero column left, one right */
  pb_image small = make_u8(2, 3, 1), big = make_out(5, 5, 1, PB_DTYPE_UINT8);
  memset(big.data, 0xAA, 25);
  assert_int_equal(pb_center_crop(&small, &big), 0);
  const uint8_t *b = big.data;
  for (int y = 0; y < 5; y++)
    for (int x = 0; x < 5; x++) {
      bool inside = y >= 1 && y < 3 && x >= 1 && x < 4;
      assert_int_equal(b[y * 5 + x], inside ? pattern(y - 1, x - 1, 0) : 0);
    }
  free(in.data), free(o.data), free(small.data), free(big.data);
}

/* ---- flip ---- */

static void test_flip(void **state) {
  (void)state;
  pb_image in = make_u8(4, 5, 3), o = make_out(4, 5, 3, PB_DTYPE_UINT8);
  assert_int_equal(pb_hflip(&in, &o), 0);
  const uint8_t *d = o.data;
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 5; x++)
      for (int c = 0; c < 3; c++) assert_int_equal(d[(y * 5 + x) * 3 + c], pattern(y, 4 - x, c));
  assert_int_equal(pb_hflip(&o, &o), 0); /* in place, twice = identity */
  assert_memory_equal(o.data, in.data, pb_image_bytes(&in));
  pb_image chw = make_out(4, 5, 3, PB_DTYPE_FLOAT32), f = make_out(4, 5, 3, PB_DTYPE_FLOAT32);
  assert_int_equal(pb_normalize(&in, &f, (double[]){0}, 1, (double[]){1}, 1, PB_DTYPE_FLOAT32), 0);
  assert_int_equal(pb_to_chw(&f, &chw), 0);
  assert_int_equal(pb_hflip(&chw, &chw), 0);
  assert_float_equal(((float *)chw.data)[2 * 20 + 1 * 5 + 0], pattern(1, 4, 2), 0);
  free(in.data), free(o.data), free(chw.data), free(f.data);
}

static void test_flip_probability(void **state) {
  (void)state;
  pb_image in = make_u8(2, 3, 3), o = make_out(2, 3, 3, PB_DTYPE_UINT8);
  pb_rng rng, ref;
  pb_rng_seed(&rng, 3), pb_rng_seed(&ref, 3);
  int flips = 0;
  for (int k = 0; k < 100; k++) {
    assert_int_equal(pb_random_flip(&in, &o, &rng, 0.0), 0);
    assert_memory_equal(o.data, in.data, pb_image_bytes(&in));
    assert_int_equal(pb_random_flip(&in, &o, &rng, 1.0), 1);
    flips += pb_random_flip(&in, &o, &rng, 0.5);
  }
  assert_int_cmp(flips, >, 30);
  assert_int_cmp(flips, <, 70);
  for (int k = 0; k < 300; k++) pb_rng_uniform(&ref); /* exactly one draw per call, whatever p */
  assert_memory_equal(&rng, &ref, sizeof rng);
  free(in.data), free(o.data);
}

/* ---- normalize ---- */

static void test_normalize_float32(void **state) {
  (void)state;
  const double mean[3] = {123.675, 116.28, 103.53}, std[3] = {58.395, 57.12, 57.375};
  pb_image in = make_u8(4, 6, 3), o = make_out(4, 6, 3, PB_DTYPE_FLOAT32);
  assert_int_equal(pb_normalize_out_bytes(&in, PB_DTYPE_FLOAT32), 4 * 6 * 3 * 4);
  assert_int_equal(pb_normalize(&in, &o, mean, 3, std, 3, PB_DTYPE_FLOAT32), 0);
  assert_int_equal(o.dtype, PB_DTYPE_FLOAT32);
  const uint8_t *s = in.data;
  const float *d = o.data;
  for (int k = 0; k < 72; k++) { /* torchvision: float32 sub, then float32 div */
    float want = ((float)s[k] - (float)mean[k % 3]) / (float)std[k % 3];
    assert_memory_equal(&d[k], &want, sizeof want);
  }
  /* float input, in place, one mean/std for every channel */
  assert_int_equal(pb_normalize(&o, &o, (double[]){1.0}, 1, (double[]){0.5}, 1, PB_DTYPE_FLOAT32), 0);
  float want0 = (((float)s[0] - (float)mean[0]) / (float)std[0] - 1.0f) / 0.5f;
  assert_float_equal(d[0], want0, 0);
  /* CHW input: channel from the plane */
  pb_image chw = make_out(4, 6, 3, PB_DTYPE_UINT8), oc = make_out(4, 6, 3, PB_DTYPE_FLOAT32);
  assert_int_equal(pb_to_chw(&in, &chw), 0);
  assert_int_equal(pb_normalize(&chw, &oc, mean, 3, std, 3, PB_DTYPE_FLOAT32), 0);
  float want_c2 = ((float)pattern(0, 1, 2) - (float)mean[2]) / (float)std[2];
  assert_float_equal(((float *)oc.data)[2 * 24 + 1], want_c2, 0);
  free(in.data), free(o.data), free(chw.data), free(oc.data);
}

static void test_normalize_float16_and_uint8(void **state) {
  (void)state;
  uint8_t px[4] = {1, 0, 255, 7};
  uint16_t h[4];
  pb_image in = {px, 1, 4, 1, PB_DTYPE_UINT8, false}, o = {h, 1, 4, 1, PB_DTYPE_FLOAT16, false};
  assert_int_equal(pb_normalize(&in, &o, (double[]){0}, 1, (double[]){1}, 1, PB_DTYPE_FLOAT16), 0);
  assert_int_equal(h[0], 0x3C00);          /* 1.0 */
  assert_int_equal(h[2], 0x5BF8);          /* 255 */
  assert_int_equal(pb_normalize(&in, &o, (double[]){2}, 1, (double[]){1}, 1, PB_DTYPE_FLOAT16), 0);
  assert_int_equal(h[1], 0xC000);          /* (0 - 2) / 1 = -2 */
  assert_int_equal(pb_normalize(&in, &o, (double[]){0}, 1, (double[]){0.001}, 1, PB_DTYPE_FLOAT16), 0);
  assert_int_equal(h[2], 0x7C00);          /* 255000 overflows to +inf */
  assert_int_equal(h[0], pb_float_to_half(1.0f / 0.001f));
  /* uint8 passes through untouched, copied or in place */
  uint8_t copy[4];
  pb_image c = {copy, 1, 4, 1, PB_DTYPE_FLOAT32, false};
  assert_int_equal(pb_normalize(&in, &c, NULL, 0, NULL, 0, PB_DTYPE_UINT8), 0);
  assert_int_equal(c.dtype, PB_DTYPE_UINT8);
  assert_memory_equal(copy, px, 4);
  assert_int_equal(pb_normalize(&in, &in, NULL, 0, NULL, 0, PB_DTYPE_UINT8), 0);
  /* a float image to uint8 is rounded and saturated, not normalized */
  float fl[4] = {-3.2f, 12.5f, 300.0f, NAN};
  pb_image fin = {fl, 1, 4, 1, PB_DTYPE_FLOAT32, false};
  assert_int_equal(pb_normalize(&fin, &c, NULL, 0, NULL, 0, PB_DTYPE_UINT8), 0);
  assert_memory_equal(copy, ((uint8_t[]){0, 13, 255, 0}), 4);
  /* refused: channel count mismatch, zero std, widening in place */
  pb_image rgb = make_u8(2, 2, 3), f = make_out(2, 2, 3, PB_DTYPE_FLOAT32);
  assert_int_equal(pb_normalize(&rgb, &f, (double[]){1, 2}, 2, (double[]){1, 1}, 2, PB_DTYPE_FLOAT32), -EINVAL);
  assert_int_equal(pb_normalize(&rgb, &f, (double[]){1}, 1, (double[]){0}, 1, PB_DTYPE_FLOAT32), -EINVAL);
  assert_int_equal(pb_normalize(&rgb, &rgb, (double[]){1}, 1, (double[]){1}, 1, PB_DTYPE_FLOAT32), -EINVAL);
  free(rgb.data), free(f.data);
}

/* Issue 32: a refused op said only "an op failed on this image".  Each refusal records its reason, and the
 * map stage's text names the op by index and name with it. */
static void test_op_failure_names_op_and_reason(void **state) {
  (void)state;
  char text[300];
  pb_image gray = make_u8(2, 2, 1), f = make_out(2, 2, 1, PB_DTYPE_FLOAT32);
  int rc = pb_normalize(&gray, &f, (double[]){1, 2, 3}, 3, (double[]){1}, 1, PB_DTYPE_FLOAT32);
  assert_int_equal(rc, -EINVAL);
  pb_op_failure_text(text, sizeof text, 2, PB_OP_NORMALIZE, rc);
  assert_string_equal(text, "op 2 (normalize) failed: 3 mean values for a 1-channel image "
                            "(expected 1 value or one per channel)");
  /* consumed: a later failure that records nothing does not repeat it */
  pb_op_failure_text(text, sizeof text, 0, PB_OP_RESIZE, -EINVAL);
  assert_string_equal(text, "op 0 (resize) failed: it refused this image (no reason recorded)");
  pb_op_failure_text(text, sizeof text, 1, PB_OP_CENTER_CROP, -ENOMEM);
  assert_string_equal(text, "op 1 (center_crop) failed: out of memory");
  /* a crop window outside the image, and a zero std, say so */
  pb_image rgb = make_u8(4, 4, 3), o = make_out(2, 2, 3, PB_DTYPE_UINT8);
  assert_int_equal(pb_crop_resize_bilinear(&rgb, 0, 3, 2, 2, &o), -EINVAL);
  assert_string_equal(pb_ops_why(),
                      "the window 2x2 at x 3, y 0 is not inside the 4x4 image (expected at least 1x1, inside)");
  assert_int_equal(pb_crop_resize_bilinear(&rgb, 0, 0, 0, 2, &o), -EINVAL);
  assert_non_null(strstr(pb_ops_why(), "the window 2x0 at x 0, y 0 is not inside"));
  assert_int_equal(pb_normalize(&gray, &f, (double[]){1}, 1, (double[]){0}, 1, PB_DTYPE_FLOAT32), -EINVAL);
  assert_string_equal(pb_ops_why(), "std[0] is 0 (expected a number other than 0)");
  free(gray.data), free(f.data), free(rgb.data), free(o.data);
}

static void test_half_conversion(void **state) {
  (void)state;
  assert_int_equal(pb_float_to_half(1.0f), 0x3C00);
  assert_int_equal(pb_float_to_half(-2.0f), 0xC000);
  assert_int_equal(pb_float_to_half(65504.0f), 0x7BFF);   /* largest half */
  assert_int_equal(pb_float_to_half(65519.0f), 0x7BFF);   /* below the midpoint to 65536: rounds down */
  assert_int_equal(pb_float_to_half(65520.0f), 0x7C00);   /* the midpoint: to even, which is inf */
  assert_int_equal(pb_float_to_half(1.0f + 0x1p-11f), 0x3C00);      /* tie: to even (down) */
  assert_int_equal(pb_float_to_half(1.0f + 3 * 0x1p-11f), 0x3C02);  /* tie: to even (up) */
  assert_int_equal(pb_float_to_half(0x1p-24f), 0x0001);             /* smallest subnormal */
  assert_int_equal(pb_float_to_half(0x1p-25f), 0x0000);             /* tie: to even (zero) */
  assert_int_equal(pb_float_to_half(3 * 0x1p-25f), 0x0002);
  assert_int_equal(pb_float_to_half(0x1p-14f), 0x0400);             /* smallest normal */
  assert_int_equal(pb_float_to_half(-0.0f), 0x8000);
  assert_int_equal(pb_float_to_half(INFINITY), 0x7C00);
  assert_int_equal(pb_float_to_half(-INFINITY), 0xFC00);
  assert_int_equal(pb_float_to_half(NAN) & 0x7E00, 0x7E00);
  assert_float_equal(pb_half_to_float(0x3555), 0.333251953125, 0);
  for (uint32_t h = 0; h < 0x10000; h++) { /* every non-NaN half survives the round trip */
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;
    assert_int_equal(pb_float_to_half(pb_half_to_float((uint16_t)h)), h);
  }
#ifdef __FLT16_MAX__
  pb_rng rng; /* against the compiler's own conversion, over every exponent */
  pb_rng_seed(&rng, 1);
  for (int k = 0; k < 200000; k++) {
    uint32_t bits = (uint32_t)pb_rng_next(&rng);
    float f;
    memcpy(&f, &bits, sizeof f);
    if (isnan(f)) continue;
    _Float16 g = (_Float16)f;
    uint16_t want;
    memcpy(&want, &g, sizeof want);
    assert_int_equal(pb_float_to_half(f), want);
  }
#endif
}

/* ---- to_chw ---- */

static void test_to_chw(void **state) {
  (void)state;
  uint8_t px[18], out[18];
  for (int p = 0; p < 6; p++)
    for (int c = 0; c < 3; c++) px[p * 3 + c] = (uint8_t)(p * 10 + c);
  pb_image in = {px, 2, 3, 3, PB_DTYPE_UINT8, false}, o = {out, 0, 0, 0, PB_DTYPE_FLOAT32, false};
  assert_int_equal(pb_to_chw(&in, &o), 0);
  assert_true(o.chw), assert_int_equal(o.height, 2), assert_int_equal(o.width, 3), assert_int_equal(o.channels, 3);
  const uint8_t want[18] = {0, 10, 20, 30, 40, 50, 1, 11, 21, 31, 41, 51, 2, 12, 22, 32, 42, 52};
  assert_memory_equal(out, want, 18);
  float fpx[18], fout[18];
  for (int k = 0; k < 18; k++) fpx[k] = px[k] + 0.5f;
  pb_image fin = {fpx, 2, 3, 3, PB_DTYPE_FLOAT32, false}, fo = {fout, 2, 3, 3, PB_DTYPE_FLOAT32, false};
  assert_int_equal(pb_to_chw(&fin, &fo), 0);
  for (int k = 0; k < 18; k++) assert_float_equal(fout[k], want[k] + 0.5f, 0);
  assert_int_equal(pb_to_chw(&in, &in), -EINVAL);
}

/* flip + normalize + to_chw in one pass equals the three ops in sequence, value for value: every channel
 * count the tables take, both float dtypes, with and without the flip and the layout change, odd sizes,
 * one mean/std or one per channel.  Anything but a uint8 HWC input is refused (the map stage then runs
 * the ops one by one). */
static void test_flip_normalize_chw_fused(void **state) {
  (void)state;
  pb_rng rng;
  pb_rng_seed(&rng, 31);
  const double mean[4] = {123.675, 116.28, 103.53, 7.5}, std[4] = {58.395, 57.12, 57.375, 0.25};
  for (int it = 0; it < 320; it++) { /* every combination 5 times: widths around the AVX2 path's 8 */
    int C = 1 + it % 4, H = 1 + (int)(pb_rng_uniform(&rng) * 37), W = 1 + (int)(pb_rng_uniform(&rng) * 41);
    bool flip = (it / 4) % 2, chw = (it / 8) % 2;
    pb_dtype t = (it / 16) % 2 ? PB_DTYPE_FLOAT16 : PB_DTYPE_FLOAT32;
    int nm = (it / 32) % 2 ? 1 : C;
    pb_image in = make_out(H, W, C, PB_DTYPE_UINT8);
    for (size_t k = 0; k < pb_image_bytes(&in); k++) ((uint8_t *)in.data)[k] = (uint8_t)(pb_rng_next(&rng) >> 56);
    pb_image flipped = make_out(H, W, C, PB_DTYPE_UINT8), norm = make_out(H, W, C, t), got = make_out(H, W, C, t);
    if (flip) assert_int_equal(pb_hflip(&in, &flipped), 0);
    else memcpy(flipped.data, in.data, pb_image_bytes(&in));
    assert_int_equal(pb_normalize(&flipped, &norm, mean, nm, std, nm, t), 0);
    pb_image want = norm;
    if (chw) {
      want = make_out(H, W, C, t);
      assert_int_equal(pb_to_chw(&norm, &want), 0);
    }
    assert_int_equal(pb_flip_normalize_chw(&in, &got, flip, mean, nm, std, nm, t, chw), 0);
    assert_int_equal(got.dtype, t), assert_int_equal(got.chw, chw), assert_int_equal(got.channels, C);
    assert_int_equal(got.height, H), assert_int_equal(got.width, W);
    assert_memory_equal(got.data, want.data, pb_image_bytes(&want));
    /* the streaming variant (a batch slot), 32-byte aligned so its non-temporal rows run where they can */
    size_t nbytes = pb_image_bytes(&want);
    pb_image streamed = got;
    streamed.data = aligned_alloc(64, (nbytes + 63) / 64 * 64);
    assert_int_equal(pb_flip_normalize_chw_stream(&in, &streamed, flip, mean, nm, std, nm, t, chw), 0);
    assert_memory_equal(streamed.data, want.data, nbytes);
    free(streamed.data);
    free(in.data), free(flipped.data), free(norm.data), free(got.data);
    if (chw) free(want.data);
  }
  for (int k = 0; k < 4; k++) { /* sizes whose every row is 32-byte aligned: the non-temporal rows all run */
    int H = k < 2 ? 224 : 16, W = k < 2 ? 224 : 24;
    bool flip = k % 2;
    pb_image in = make_out(H, W, 3, PB_DTYPE_UINT8), got = make_out(H, W, 3, PB_DTYPE_FLOAT32);
    for (size_t b = 0; b < pb_image_bytes(&in); b++) ((uint8_t *)in.data)[b] = (uint8_t)(pb_rng_next(&rng) >> 56);
    size_t nbytes = pb_image_bytes(&got);
    pb_image streamed = got;
    streamed.data = aligned_alloc(64, nbytes);
    assert_int_equal(pb_flip_normalize_chw(&in, &got, flip, mean, 3, std, 3, PB_DTYPE_FLOAT32, true), 0);
    assert_int_equal(pb_flip_normalize_chw_stream(&in, &streamed, flip, mean, 3, std, 3, PB_DTYPE_FLOAT32, true), 0);
    assert_memory_equal(streamed.data, got.data, nbytes);
    free(in.data), free(got.data), free(streamed.data);
  }
  uint8_t px[12] = {0};
  float out[12];
  pb_image u8 = {px, 2, 2, 3, PB_DTYPE_UINT8, false}, o = {out, 2, 2, 3, PB_DTYPE_FLOAT32, false};
  pb_image chw_in = {px, 2, 2, 3, PB_DTYPE_UINT8, true};
  assert_int_equal(pb_flip_normalize_chw(&chw_in, &o, false, mean, 3, std, 3, PB_DTYPE_FLOAT32, true), -EINVAL);
  assert_int_equal(pb_flip_normalize_chw(&u8, &o, false, mean, 3, std, 3, PB_DTYPE_UINT8, true), -EINVAL);
  assert_int_equal(pb_flip_normalize_chw(&u8, &u8, false, mean, 3, std, 3, PB_DTYPE_FLOAT32, true), -EINVAL);
  assert_int_equal(pb_flip_normalize_chw(&u8, &o, false, mean, 2, std, 2, PB_DTYPE_FLOAT32, true), -EINVAL);
}

/* ---- speed (PB_OPS_BENCH=1) ---- */

/* Best of 7 rounds: the machine is shared, and the minimum is the least disturbed estimate. */
#define BENCH_ROUNDS 7

static void bench_rrc(const pb_image *in, pb_resample mode, void *scratch, const char *what) {
  pb_image o = make_out(224, 224, 3, PB_DTYPE_UINT8);
  double best_ns = INFINITY;
  int n = 300;
  for (int round = 0; round < BENCH_ROUNDS; round++) {
    pb_rng rng;
    pb_rng_seed(&rng, 1); /* the same crops every round */
    uint64_t t0 = pb_now_ns();
    for (int k = 0; k < n; k++)
      assert_int_equal(pb_random_resized_crop(in, &rng, k_scale, k_ratio, &o, mode, scratch, NULL), 0);
    best_ns = fmin(best_ns, (double)(pb_now_ns() - t0) / n);
  }
  printf("  rrc 500x375 -> 224x224 %-12s %7.1f us/sample  %6.2f ns/output pixel\n", what, best_ns / 1e3,
         best_ns / (224.0 * 224.0));
  free(o.data);
}

/* One fixed window to 224x224: shorter than the output, it takes the horizontal-first path. */
static void bench_window(const pb_image *in, int h, int w, const char *what) {
  pb_image o = make_out(224, 224, 3, PB_DTYPE_UINT8);
  double best_ns = INFINITY;
  int n = 300;
  for (int round = 0; round < BENCH_ROUNDS; round++) {
    uint64_t t0 = pb_now_ns();
    for (int k = 0; k < n; k++)
      assert_int_equal(pb_crop_resize(in, 10, 20, h, w, &o, PB_RESAMPLE_BILINEAR, NULL), 0);
    best_ns = fmin(best_ns, (double)(pb_now_ns() - t0) / n);
  }
  printf("  crop %dx%d -> 224x224 bilinear %-10s %7.1f us/sample\n", w, h, what, best_ns / 1e3);
  free(o.data);
}

typedef enum {
  BENCH_FLIP,
  BENCH_NORM_F32,
  BENCH_NORM_F16,
  BENCH_CHW_U8,
  BENCH_CHW_F32,
  BENCH_FUSED_F32,
  BENCH__COUNT
} bench_op;

static void bench_one(bench_op op, pb_image *crop, pb_image *f, pb_image *h, pb_image *c) {
  const double mean[3] = {123.675, 116.28, 103.53}, std[3] = {58.395, 57.12, 57.375};
  switch (op) {
    case BENCH_FLIP: pb_hflip(crop, crop); break;
    case BENCH_NORM_F32: pb_normalize(crop, f, mean, 3, std, 3, PB_DTYPE_FLOAT32); break;
    case BENCH_NORM_F16: pb_normalize(crop, h, mean, 3, std, 3, PB_DTYPE_FLOAT16); break;
    case BENCH_CHW_U8: pb_to_chw(crop, c); break;
    case BENCH_CHW_F32: pb_to_chw(f, c); break;
    default: pb_flip_normalize_chw(crop, c, true, mean, 3, std, 3, PB_DTYPE_FLOAT32, true); break;
  }
}

static void bench_pixel_ops(pb_image *crop) {
  static const char *names[BENCH__COUNT] = {"flip (in place)", "normalize->f32", "normalize->f16", "to_chw u8",
                                            "to_chw f32", "flip+norm+chw"};
  pb_image f = make_out(224, 224, 3, PB_DTYPE_FLOAT32), h = make_out(224, 224, 3, PB_DTYPE_FLOAT16);
  pb_image c = make_out(224, 224, 3, PB_DTYPE_FLOAT32);
  pb_normalize(crop, &f, (double[]){0}, 1, (double[]){1}, 1, PB_DTYPE_FLOAT32);
  for (int op = 0; op < BENCH__COUNT; op++) {
    double best_ns = INFINITY;
    for (int round = 0; round < BENCH_ROUNDS; round++) {
      uint64_t t0 = pb_now_ns();
      for (int k = 0; k < 200; k++) bench_one((bench_op)op, crop, &f, &h, &c);
      best_ns = fmin(best_ns, (double)(pb_now_ns() - t0) / 200);
    }
    printf("  224x224x3 %-16s %7.1f us/sample  %6.2f ns/pixel\n", names[op], best_ns / 1e3, best_ns / (224.0 * 224.0));
  }
  free(f.data), free(h.data), free(c.data);
}

/* A benchmark, not a test: run only with PB_OPS_BENCH=1 (main below), so it is not in the unit list. */
static void bench_ops(void **state) {
  (void)state;
  pb_image in = make_u8(375, 500, 3), crop = make_u8(224, 224, 3);
  size_t sb = pb_crop_resize_scratch_bytes(&in, 375, 500, 224, 224, PB_RESAMPLE_BILINEAR_AA);
  void *scratch = malloc(sb);
  assert_non_null(scratch);
  bench_rrc(&in, PB_RESAMPLE_BILINEAR, NULL, "bilinear");
  bench_rrc(&in, PB_RESAMPLE_BILINEAR_AA, scratch, "antialiased");
  pb_ops_allow_simd(false);
  bench_rrc(&in, PB_RESAMPLE_BILINEAR_AA, scratch, "aa, C loops");
  bench_window(&in, 160, 200, "no AVX2");
  pb_ops_allow_simd(true);
  bench_window(&in, 160, 200, "");
  bench_pixel_ops(&crop);
  free(scratch), free(in.data), free(crop.data);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rrc_reproducible_and_seed_dependent),
      cmocka_unit_test(test_rrc_inside_image),
      cmocka_unit_test(test_rrc_fallback),
      cmocka_unit_test(test_rrc_extreme_ratio_keeps_a_pixel),
      cmocka_unit_test(test_rrc_scripted_by_hand),
      cmocka_unit_test(test_rrc_matches_reference),
      cmocka_unit_test(test_bilinear_2x2_to_4x4),
      cmocka_unit_test(test_bilinear_4x4_to_2x2),
      cmocka_unit_test(test_bilinear_identity),
      cmocka_unit_test(test_antialias_matches_pillow),
      cmocka_unit_test(test_bilinear_random_vs_reference),
      cmocka_unit_test(test_resample_layouts_and_dtypes),
      cmocka_unit_test(test_crop_resize_rejects_bad_windows),
      cmocka_unit_test(test_random_resized_crop_reproducible),
      cmocka_unit_test(test_resize_shorter_side),
      cmocka_unit_test(test_center_crop_offsets),
      cmocka_unit_test(test_center_crop_pixels_and_padding),
      cmocka_unit_test(test_flip),
      cmocka_unit_test(test_flip_probability),
      cmocka_unit_test(test_normalize_float32),
      cmocka_unit_test(test_normalize_float16_and_uint8),
      cmocka_unit_test(test_op_failure_names_op_and_reason),
      cmocka_unit_test(test_half_conversion),
      cmocka_unit_test(test_to_chw),
      cmocka_unit_test(test_simd_matches_c),
      cmocka_unit_test(test_flip_normalize_chw_fused),
  };
  if (getenv("PB_OPS_BENCH")) {
    const struct CMUnitTest bench[] = {cmocka_unit_test(bench_ops)};
    return cmocka_run_group_tests_name("ops benchmark (PB_OPS_BENCH)", bench, NULL, NULL);
  }
  return cmocka_run_group_tests(tests, NULL, NULL);
}

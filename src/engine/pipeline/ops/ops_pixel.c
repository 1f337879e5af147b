/* The ops that move or rescale pixels without resampling: center_crop (with torchvision's zero padding),
 * flip, normalize and to_chw.  Each inner loop is specialised on the pixel size (through always_inline
 * helpers called with constants) because a memcpy of a runtime size per pixel costs more than the copy. */
#include <errno.h>

#include "ops_internal.h"

size_t pb_image_bytes(const pb_image *im) {
  if (im->height <= 0 || im->width <= 0 || im->channels <= 0) return 0;
  return (size_t)im->height * (size_t)im->width * (size_t)im->channels * pb_ops_elem_bytes(im->dtype);
}

/* Bytes of one "pixel" of a plane: all channels for HWC, one element for a CHW plane. */
static size_t plane_pixel_bytes(const pb_image *im) {
  return pb_ops_elem_bytes(im->dtype) * (size_t)(im->chw ? 1 : im->channels);
}

/* ---- center_crop ---- */

/* One plane: rows of ow pixels from (top, left), zeros where the window leaves the image. */
static void crop_pad_plane(const char *src, int H, int W, char *dst, int oh, int ow, size_t px, int top, int left) {
  int x_lo = PB_MIN(PB_MAX(-left, 0), ow), x_hi = PB_MAX(PB_MIN(W - left, ow), x_lo);
  for (int y = 0; y < oh; y++) {
    char *d = dst + (size_t)y * (size_t)ow * px;
    int sy = top + y;
    if (sy < 0 || sy >= H || x_lo == x_hi) {
      memset(d, 0, (size_t)ow * px);
      continue;
    }
    memset(d, 0, (size_t)x_lo * px);
    memcpy(d + (size_t)x_lo * px, src + ((size_t)sy * (size_t)W + (size_t)(left + x_lo)) * px,
           (size_t)(x_hi - x_lo) * px);
    memset(d + (size_t)x_hi * px, 0, (size_t)(ow - x_hi) * px);
  }
}

int pb_crop_pad(const pb_image *in, int top, int left, pb_image *out) {
  int rc = pb_ops_check_io(in, out);
  if (rc) return rc;
  if (out->height <= 0 || out->width <= 0)
    return pb_ops_fail("the output would be %dx%d (expected at least 1x1)", out->width, out->height);
  pb_ops_inherit(in, out);
  size_t px = plane_pixel_bytes(in);
  size_t in_plane = (size_t)in->height * (size_t)in->width * px, out_plane = (size_t)out->height * out->width * px;
  for (int p = 0; p < (in->chw ? in->channels : 1); p++)
    crop_pad_plane((const char *)in->data + p * in_plane, in->height, in->width, (char *)out->data + p * out_plane,
                   out->height, out->width, px, top, left);
  return 0;
}

int pb_center_crop(const pb_image *in, pb_image *out) {
  int rc = pb_ops_check_io(in, out);
  if (rc) return rc;
  int top, left;
  pb_center_crop_params(in->height, in->width, out->height, out->width, &top, &left);
  return pb_crop_pad(in, top, left, out);
}

/* ---- flip ---- */

bool pb_flip_draw(pb_rng *rng, double p) { return pb_rng_uniform(rng) < p; }

/* Mirror one row of w pixels of px bytes.  With px a constant the memcpys become register moves. */
static inline __attribute__((always_inline)) void flip_row_n(const uint8_t *src, uint8_t *dst, int w, size_t px) {
  if (src == dst) {
    uint8_t t[16];
    for (size_t a = 0, b = (size_t)w - 1; a < b; a++, b--) {
      memcpy(t, dst + a * px, px);
      memcpy(dst + a * px, dst + b * px, px);
      memcpy(dst + b * px, t, px);
    }
    return;
  }
  for (size_t x = 0; x < (size_t)w; x++) memcpy(dst + x * px, src + ((size_t)w - 1 - x) * px, px);
}

/* Any pixel size, a byte at a time (channel counts the fast paths do not cover). */
static void flip_row_any(const uint8_t *src, uint8_t *dst, int w, size_t px) {
  for (size_t a = 0, b = (size_t)w - 1; src == dst && a < b; a++, b--)
    for (size_t k = 0; k < px; k++) {
      uint8_t t = dst[a * px + k];
      dst[a * px + k] = dst[b * px + k];
      dst[b * px + k] = t;
    }
  for (size_t x = 0; src != dst && x < (size_t)w; x++)
    for (size_t k = 0; k < px; k++) dst[x * px + k] = src[((size_t)w - 1 - x) * px + k];
}

static void flip_row(const uint8_t *src, uint8_t *dst, int w, size_t px) {
  switch (px) {
    case 1: flip_row_n(src, dst, w, 1); break;
    case 2: flip_row_n(src, dst, w, 2); break;
    case 3: flip_row_n(src, dst, w, 3); break;
    case 4: flip_row_n(src, dst, w, 4); break;
    case 6: flip_row_n(src, dst, w, 6); break;
    case 8: flip_row_n(src, dst, w, 8); break;
    case 12: flip_row_n(src, dst, w, 12); break;
    case 16: flip_row_n(src, dst, w, 16); break;
    default: flip_row_any(src, dst, w, px); break;
  }
}

int pb_hflip(const pb_image *in, pb_image *out) {
  int rc = pb_ops_check_io(in, out);
  if (rc) return rc;
  *out = (pb_image){out->data, in->height, in->width, in->channels, in->dtype, in->chw};
  size_t px = plane_pixel_bytes(in), row = (size_t)in->width * px;
  size_t rows = (size_t)in->height * (size_t)(in->chw ? in->channels : 1); /* CHW: every plane's rows */
  for (size_t r = 0; r < rows; r++)
    flip_row((const uint8_t *)in->data + r * row, (uint8_t *)out->data + r * row, in->width, px);
  return 0;
}

int pb_random_flip(const pb_image *in, pb_image *out, pb_rng *rng, double p) {
  int rc = pb_ops_check_io(in, out);
  if (rc) return rc;
  if (pb_flip_draw(rng, p)) {
    rc = pb_hflip(in, out);
    return rc ? rc : 1;
  }
  *out = (pb_image){out->data, in->height, in->width, in->channels, in->dtype, in->chw};
  if (out->data != in->data) memcpy(out->data, in->data, pb_image_bytes(in));
  return 0;
}

/* ---- to_chw ---- */

static inline __attribute__((always_inline)) void chw_n(const uint8_t *src, uint8_t *dst, size_t hw, size_t C,
                                                        size_t eb) {
  for (size_t p = 0; p < hw; p++)
#pragma GCC unroll 4
    for (size_t c = 0; c < C; c++) memcpy(dst + (c * hw + p) * eb, src + (p * C + c) * eb, eb);
}

int pb_to_chw(const pb_image *in, pb_image *out) {
  int rc = pb_ops_check_io(in, out);
  if (rc) return rc;
  if (out->data == in->data) return pb_ops_fail("to_chw cannot work in place (expected another output buffer)");
  *out = (pb_image){out->data, in->height, in->width, in->channels, in->dtype, true};
  size_t hw = (size_t)in->height * (size_t)in->width, C = (size_t)in->channels, eb = pb_ops_elem_bytes(in->dtype);
  if (in->chw || C == 1) {
    memcpy(out->data, in->data, pb_image_bytes(in));
  } else if (C == 3) {
    if (eb == 1) chw_n(in->data, out->data, hw, 3, 1);
    else if (eb == 2) chw_n(in->data, out->data, hw, 3, 2);
    else chw_n(in->data, out->data, hw, 3, 4);
  } else {
    chw_n(in->data, out->data, hw, C, eb);
  }
  return 0;
}

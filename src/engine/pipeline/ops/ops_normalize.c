/* normalize: (x - mean[c]) / std[c] to float32 or float16, or a uint8 pass-through.
 *
 * The arithmetic is torchvision's: float32 subtract, float32 divide (tensor.sub_(mean).div_(std)), then
 * for float16 one rounding of that float32 result (.half()).  A uint8 input has only 256 values per
 * channel, so they are computed once per call into a table and the pixel loop is a lookup; that is
 * both exact and faster than the arithmetic. */
#include <errno.h>

#include "ops_internal.h"

#define LUT_CHANNELS PB_MAX_CHANNELS

typedef struct norm_params {
  int nch;                     /* channels */
  float mean[LUT_CHANNELS], std[LUT_CHANNELS];
  const double *mean_all, *std_all; /* the caller's arrays, for images with more channels than fit */
  int nmean, nstd;
} norm_params;

static float norm_mean(const norm_params *np, int c) {
  return c < LUT_CHANNELS ? np->mean[c] : (float)np->mean_all[np->nmean == 1 ? 0 : c];
}

static float norm_std(const norm_params *np, int c) {
  return c < LUT_CHANNELS ? np->std[c] : (float)np->std_all[np->nstd == 1 ? 0 : c];
}

static float norm_value(const norm_params *np, int c, float x) { return (x - norm_mean(np, c)) / norm_std(np, c); }

/* Element i of an image with `nch` channels, in this layout, is in channel: */
static int channel_of(size_t i, const pb_image *im, size_t hw) {
  return (int)(im->chw ? i / hw : i % (size_t)im->channels);
}

/* The per-channel tables of a uint8 input: every value's float32 result, and (lut16 not NULL) that
 * result rounded once to float16, as .half() does. */
static void norm_luts(const norm_params *np, float (*lut)[256], uint16_t (*lut16)[256]) {
  for (int c = 0; c < np->nch; c++)
    for (int v = 0; v < 256; v++) {
      lut[c][v] = norm_value(np, c, (float)v);
      if (lut16) lut16[c][v] = pb_float_to_half(lut[c][v]);
    }
}

/* uint8 in: a lookup per element in its channel's table (lut: norm_luts' float32 or float16 one).  T is
 * float or half_t; always inlined, so each caller's loop is compiled for its own element type. */
#define LUT_APPLY(T)                                                                                              \
  static inline __attribute__((always_inline)) void lut_apply_##T(const uint8_t *src, T *dst, const T(*lut)[256], \
                                                                  const pb_image *in, int nch) {                  \
    size_t hw = (size_t)in->height * (size_t)in->width, n = hw * (size_t)nch;                                     \
    if (nch == 3 && !in->chw) {                                                                                   \
      for (size_t i = 0; i < n; i += 3) {                                                                         \
        dst[i] = lut[0][src[i]];                                                                                  \
        dst[i + 1] = lut[1][src[i + 1]];                                                                          \
        dst[i + 2] = lut[2][src[i + 2]];                                                                          \
      }                                                                                                           \
      return;                                                                                                     \
    }                                                                                                             \
    for (size_t i = 0; i < n; i++) dst[i] = lut[channel_of(i, in, hw)][src[i]];                                   \
  }
typedef uint16_t half_t;
LUT_APPLY(float)
LUT_APPLY(half_t)

static void norm_u8_f32(const uint8_t *src, float *dst, const pb_image *in, const norm_params *np) {
  float lut[LUT_CHANNELS][256];
  norm_luts(np, lut, NULL);
  lut_apply_float(src, dst, (const float(*)[256])lut, in, np->nch);
}

static void norm_u8_f16(const uint8_t *src, uint16_t *dst, const pb_image *in, const norm_params *np) {
  float lut32[LUT_CHANNELS][256];
  uint16_t lut[LUT_CHANNELS][256];
  norm_luts(np, lut32, lut);
  lut_apply_half_t(src, dst, (const half_t(*)[256])lut, in, np->nch);
}

/* Float input, or more channels than the tables hold: the arithmetic per element, front to back (which
 * is what makes a same-size or narrowing conversion safe in place). */
static void norm_generic(const pb_image *in, void *dst, pb_dtype out_t, const norm_params *np) {
  size_t hw = (size_t)in->height * (size_t)in->width, n = hw * (size_t)np->nch;
  for (size_t i = 0; i < n; i++)
    pb_ops_store(dst, i, out_t, norm_value(np, channel_of(i, in, hw), pb_ops_load(in->data, i, in->dtype)));
}

/* out_dtype uint8: no normalization; a uint8 image is copied, a float one rounded and saturated. */
static void pass_u8(const pb_image *in, void *dst) {
  size_t n = pb_image_bytes(in) / pb_ops_elem_bytes(in->dtype);
  if (in->dtype == PB_DTYPE_UINT8) {
    if (dst != in->data) memcpy(dst, in->data, n);
    return;
  }
  for (size_t i = 0; i < n; i++) pb_ops_store(dst, i, PB_DTYPE_UINT8, pb_ops_load(in->data, i, in->dtype));
}

static int norm_params_init(norm_params *np, const pb_image *in, const double *mean, int nmean, const double *std,
                            int nstd) {
  int C = in->channels;
  if (!mean || !std) return pb_ops_fail("no mean or std values");
  if (nmean != 1 && nmean != C)
    return pb_ops_fail("%d mean values for a %d-channel image (expected 1 value or one per channel)", nmean, C);
  if (nstd != 1 && nstd != C)
    return pb_ops_fail("%d std values for a %d-channel image (expected 1 value or one per channel)", nstd, C);
  *np = (norm_params){.nch = C, .mean_all = mean, .std_all = std, .nmean = nmean, .nstd = nstd};
  for (int c = 0; c < C; c++) {
    double s = std[nstd == 1 ? 0 : c];
    if (!(s != 0.0)) return pb_ops_fail("std[%d] is %g (expected a number other than 0)", c, s); /* also NaN */
    if (c < LUT_CHANNELS) {
      np->mean[c] = (float)mean[nmean == 1 ? 0 : c];
      np->std[c] = (float)s;
    }
  }
  return 0;
}

size_t pb_normalize_out_bytes(const pb_image *in, pb_dtype out_dtype) {
  pb_image o = *in;
  o.dtype = out_dtype;
  return pb_image_bytes(&o);
}

int pb_normalize(const pb_image *in, pb_image *out, const double *mean, int nmean, const double *std, int nstd,
                 pb_dtype out_dtype) {
  norm_params np;
  int rc = pb_ops_check_io(in, out);
  if (rc) return rc;
  if ((unsigned)out_dtype > PB_DTYPE_FLOAT32)
    return pb_ops_fail("the output element type %d is unknown (expected uint8, float16 or float32)", (int)out_dtype);
  if (out->data == in->data && pb_ops_elem_bytes(out_dtype) > pb_ops_elem_bytes(in->dtype))
    return pb_ops_fail("in place to a wider element type (expected another output buffer)");
  rc = out_dtype == PB_DTYPE_UINT8 ? 0 : norm_params_init(&np, in, mean, nmean, std, nstd);
  if (rc) return rc;
  *out = (pb_image){out->data, in->height, in->width, in->channels, out_dtype, in->chw};
  bool lut = in->dtype == PB_DTYPE_UINT8 && in->channels <= LUT_CHANNELS;
  if (out_dtype == PB_DTYPE_UINT8)
    pass_u8(in, out->data);
  else if (lut && out_dtype == PB_DTYPE_FLOAT32)
    norm_u8_f32(in->data, out->data, in, &np);
  else if (lut)
    norm_u8_f16(in->data, out->data, in, &np);
  else
    norm_generic(in, out->data, out_dtype, &np);
  return 0;
}

/* ---- flip + normalize + to_chw ---- */

/* One output row from source row `src` (HWC, C channels): mirrored when flip, each value looked up in
 * its channel's table; CHW writes channel c at plane c, HWC interleaves.  T is float or uint16_t (half).
 * Always inlined, so the common case (3 channels to CHW, below) is compiled with those as constants. */
#define FUSED_ROW(T)                                                                                      \
  static inline __attribute__((always_inline)) void fused_row_##T(const uint8_t *src, int W, int C,       \
                                                                  bool flip, const T (*lut)[256], T *dst, \
                                                                  size_t plane, bool chw) {               \
    for (int x = 0; x < W; x++) {                                                                         \
      const uint8_t *p = src + (size_t)(flip ? W - 1 - x : x) * (size_t)C;                                \
      for (int c = 0; c < C; c++) {                                                                       \
        size_t at = chw ? (size_t)c * plane + (size_t)x : (size_t)x * (size_t)C + (size_t)c;              \
        dst[at] = lut[c][p[c]];                                                                           \
      }                                                                                                   \
    }                                                                                                     \
  }                                                                                                       \
  static void fused_rows_##T(const pb_image *in, bool flip, const T (*lut)[256], T *out, bool chw,      \
                             const norm_params *np, bool stream) {                                        \
    int C = in->channels, W = in->width;                                                                  \
    size_t plane = (size_t)in->height * (size_t)W, row = (size_t)W * (size_t)C;                           \
    bool avx2 = sizeof(T) == sizeof(float) && C == 3 && chw && pb_ops_avx2();                             \
    for (int y = 0; y < in->height; y++) {                                                                \
      const uint8_t *src = (const uint8_t *)in->data + (size_t)y * row;                                   \
      T *dst = out + (chw ? (size_t)y * (size_t)W : (size_t)y * row);                                     \
      if (avx2) { /* 8 pixels at a time; the last W % 8 (the first ones of the source when flipped) */    \
        bool nt = stream && ((uintptr_t)dst | plane * sizeof(T)) % 32 == 0; /* aligned streaming stores */  \
        int x = nt ? pb_norm_row3_chw_f32_avx2_nt(src, W, flip, np->mean, np->std, (float *)dst, plane)   \
                   : pb_norm_row3_chw_f32_avx2(src, W, flip, np->mean, np->std, (float *)dst, plane);     \
        fused_row_##T(flip ? src : src + (size_t)x * 3, W - x, 3, flip, lut, dst + x, plane, true);       \
      } else if (C == 3 && chw)                                                                           \
        fused_row_##T(src, W, 3, flip, lut, dst, plane, true);                                            \
      else                                                                                                \
        fused_row_##T(src, W, C, flip, lut, dst, plane, chw);                                             \
    }                                                                                                     \
  }
FUSED_ROW(float)
FUSED_ROW(half_t)

static int flip_normalize_chw(const pb_image *in, pb_image *out, bool flip, const double *mean, int nmean,
                              const double *std, int nstd, pb_dtype out_dtype, bool chw, bool stream) {
  norm_params np;
  int rc = pb_ops_check_io(in, out);
  if (rc) return rc;
  if (out->data == in->data || in->dtype != PB_DTYPE_UINT8 || in->chw || in->channels > LUT_CHANNELS ||
      (out_dtype != PB_DTYPE_FLOAT32 && out_dtype != PB_DTYPE_FLOAT16))
    return pb_ops_fail("the one-pass flip/normalize/to_chw takes a uint8 HWC image of at most %d channels into "
                       "another float buffer", LUT_CHANNELS);
  rc = norm_params_init(&np, in, mean, nmean, std, nstd);
  if (rc) return rc;
  *out = (pb_image){out->data, in->height, in->width, in->channels, out_dtype, chw};
  float lut[LUT_CHANNELS][256]; /* the same tables as norm_u8_f32 / norm_u8_f16, so the same values */
  uint16_t lut16[LUT_CHANNELS][256];
  norm_luts(&np, lut, out_dtype == PB_DTYPE_FLOAT16 ? lut16 : NULL);
  if (out_dtype == PB_DTYPE_FLOAT32)
    fused_rows_float(in, flip, (const float(*)[256])lut, out->data, chw, &np, stream);
  else
    fused_rows_half_t(in, flip, (const half_t(*)[256])lut16, out->data, chw, &np, false);
  if (stream) pb_store_fence();
  return 0;
}

int pb_flip_normalize_chw(const pb_image *in, pb_image *out, bool flip, const double *mean, int nmean,
                          const double *std, int nstd, pb_dtype out_dtype, bool chw) {
  return flip_normalize_chw(in, out, flip, mean, nmean, std, nstd, out_dtype, chw, false);
}

int pb_flip_normalize_chw_stream(const pb_image *in, pb_image *out, bool flip, const double *mean, int nmean,
                                 const double *std, int nstd, pb_dtype out_dtype, bool chw) {
  return flip_normalize_chw(in, out, flip, mean, nmean, std, nstd, out_dtype, chw, true);
}

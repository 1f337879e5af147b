/* Antialiased bilinear resampling: Pillow's BILINEAR resize (libImaging/Resample.c), which is what
 * torchvision computes for PIL images and, near enough, for tensors with antialias=True.
 *
 * A triangle filter whose support widens by the downscale factor, so every source pixel contributes
 * (plain bilinear samples 2 of every N when shrinking N-fold, and aliases).  Separable: a horizontal pass
 * over the rows the vertical filter will need, into caller scratch, then a vertical pass.  uint8 follows
 * Pillow bit for bit: 22-bit fixed-point weights, the intermediate rounded to uint8. */
#include <errno.h>
#include <math.h>

#include "ops_internal.h"

#define AA_BITS 22
#define AA_ROUND (1 << (AA_BITS - 1))

/* Per output coordinate along one axis: the first source index, the tap count and `ksize` weights. */
typedef struct aa_axis {
  int32_t *start, *count;
  void *weights; /* int32_t Q22 for uint8, float otherwise; ksize per output */
  int ksize;
  int32_t *pairs; /* uint8 horizontal axis with AVX2: the weights in pairs for pb_aa_hrow4_u8_avx2 (NULL:
                   * not filled, or a weight out of its range) */
} aa_axis;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Pillow's bound on taps per output: support = max(in/out, 1), 2 * ceil(support) + 1. */
static int aa_ksize(int in_n, int out_n) {
  double fs = (double)in_n / (double)out_n;
  return (int)ceil(fs < 1.0 ? 1.0 : fs) * 2 + 1;
}

/* Tap pairs per output for the four-row kernel: ksize / 2 rounded up. */
static int aa_npairs(int ksize) { return (ksize + 1) / 2; }

static size_t aa_axis_bytes(int in_n, int out_n) {
  int ksize = aa_ksize(in_n, out_n);
  return align64(2 * (size_t)out_n * sizeof(int32_t)) + align64((size_t)out_n * (size_t)ksize * 4) +
         align64((size_t)out_n * (size_t)aa_npairs(ksize) * 2 * sizeof(int32_t));
}

/* uint8 keeps its intermediate in uint8 (as Pillow does); the float types in float32. */
static size_t aa_work_bytes(pb_dtype t) { return t == PB_DTYPE_UINT8 ? 1 : sizeof(float); }

size_t pb_crop_resize_scratch_bytes(const pb_image *in, int h, int w, int out_h, int out_w, pb_resample mode) {
  if (mode == PB_RESAMPLE_BILINEAR || h <= 0 || w <= 0 || out_h <= 0 || out_w <= 0) return 0;
  size_t tmp = (size_t)h * (size_t)out_w * (size_t)in->channels * aa_work_bytes(in->dtype);
  return aa_axis_bytes(w, out_w) + aa_axis_bytes(h, out_h) + align64(tmp);
}

static double triangle(double x) {
  x = fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

/* Pillow's precompute_coeffs + normalize_coeffs_8bpc for a window of in_n pixels starting at 0. */
static void aa_axis_fill(aa_axis *ax, int in_n, int out_n, bool fixed) {
  double scale = (double)in_n / (double)out_n, fs = scale < 1.0 ? 1.0 : scale, inv_fs = 1.0 / fs;
  for (int o = 0; o < out_n; o++) {
    double center = (o + 0.5) * scale, sum = 0.0;
    int lo = PB_MAX((int)(center - fs + 0.5), 0), hi = PB_MIN((int)(center + fs + 0.5), in_n);
    for (int x = lo; x < hi; x++) sum += triangle((x - center + 0.5) * inv_fs);
    ax->start[o] = lo;
    ax->count[o] = hi - lo;
    for (int x = lo; x < hi; x++) {
      double k = sum != 0.0 ? triangle((x - center + 0.5) * inv_fs) / sum : 0.0;
      size_t slot = (size_t)o * (size_t)ax->ksize + (size_t)(x - lo);
      if (fixed)
        ((int32_t *)ax->weights)[slot] = (int32_t)(k * (1 << AA_BITS) + 0.5);
      else
        ((float *)ax->weights)[slot] = (float)k;
    }
  }
}

/* The four-row kernel's table (see pb_aa_hrow4_u8_avx2): per output and pair of taps t, t+1 (a missing
 * t+1 weighs 0), the high parts (w >> 11) as two int16s in one int32, then the low parts (w & 2047).
 * No table (ax->pairs stays NULL) if a weight lies outside 0..2^22, where the split would not fit 16 bits. */
static void aa_axis_pair_up(aa_axis *ax, int out_n, int32_t *table) {
  const int32_t *wq = ax->weights;
  int np = aa_npairs(ax->ksize);
  for (int o = 0; o < out_n; o++) {
    const int32_t *k = wq + (size_t)o * (size_t)ax->ksize;
    int32_t *dst = table + (size_t)o * (size_t)np * 2;
    for (int p = 0; p < np; p++) {
      int t = 2 * p;
      uint32_t k0 = t < ax->count[o] ? (uint32_t)k[t] : 0, k1 = t + 1 < ax->count[o] ? (uint32_t)k[t + 1] : 0;
      if (k0 > (1u << AA_BITS) || k1 > (1u << AA_BITS)) return; /* negative ones wrap above too */
      dst[2 * p] = (int32_t)((k0 >> 11) | (k1 >> 11) << 16);
      dst[2 * p + 1] = (int32_t)((k0 & 2047u) | (k1 & 2047u) << 16);
    }
  }
  ax->pairs = table;
}

/* Carve one axis's tables out of the scratch at *p. */
static aa_axis aa_axis_at(char **p, int in_n, int out_n) {
  aa_axis ax = {(int32_t *)*p, (int32_t *)*p + out_n, NULL, aa_ksize(in_n, out_n), NULL};
  ax.weights = *p + align64(2 * (size_t)out_n * sizeof(int32_t));
  *p += aa_axis_bytes(in_n, out_n);
  return ax;
}

/* The pair table's place in an axis's scratch (aa_axis_bytes): after its weights. */
static int32_t *aa_pairs_slot(const aa_axis *ax, int out_n) {
  return (int32_t *)((char *)ax->weights + align64((size_t)out_n * (size_t)ax->ksize * 4));
}

static uint8_t clip8(int32_t acc) {
  int32_t v = acc >> AA_BITS;
  return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* One output pixel of the horizontal pass, uint8, nch <= 4: the channels accumulate side by side so each
 * tap's weight is loaded once. */
static inline __attribute__((always_inline)) void aa_hpix_u8_n(const uint8_t *s, const int32_t *k, int n,
                                                               uint8_t *dst, int nch) {
  int32_t acc[4] = {AA_ROUND, AA_ROUND, AA_ROUND, AA_ROUND};
  for (int t = 0; t < n; t++)
#pragma GCC unroll 4
    for (int ch = 0; ch < nch; ch++) acc[ch] += s[t * nch + ch] * k[t];
#pragma GCC unroll 4
  for (int ch = 0; ch < nch; ch++) dst[ch] = clip8(acc[ch]);
}

/* Any channel count, one channel at a time. */
static void aa_hpix_u8_any(const uint8_t *s, const int32_t *k, int n, uint8_t *dst, int nch) {
  for (int ch = 0; ch < nch; ch++) {
    int32_t acc = AA_ROUND;
    for (int t = 0; t < n; t++) acc += s[t * nch + ch] * k[t];
    dst[ch] = clip8(acc);
  }
}

static inline __attribute__((always_inline)) void aa_hrow_u8_n(const uint8_t *src, uint8_t *dst, const aa_axis *ax,
                                                               int x, int out_w, int nch) {
  const int32_t *wq = ax->weights;
  for (dst += (size_t)x * (size_t)nch; x < out_w; x++, dst += nch) {
    const uint8_t *s = src + (size_t)ax->start[x] * (size_t)nch;
    const int32_t *k = wq + (size_t)x * (size_t)ax->ksize;
    if (nch <= 4)
      aa_hpix_u8_n(s, k, ax->count[x], dst, nch);
    else
      aa_hpix_u8_any(s, k, ax->count[x], dst, nch);
  }
}

/* Horizontal pass of one uint8 source row from output pixel x on: the C loop, inlined per channel count
 * so the channel loops unroll. */
static void aa_hrow_u8_from(const uint8_t *src, uint8_t *dst, const aa_axis *ax, int x, int out_w, int nch) {
  switch (nch) {
    case 1: aa_hrow_u8_n(src, dst, ax, x, out_w, 1); break;
    case 3: aa_hrow_u8_n(src, dst, ax, x, out_w, 3); break;
    case 4: aa_hrow_u8_n(src, dst, ax, x, out_w, 4); break;
    default: aa_hrow_u8_n(src, dst, ax, x, out_w, nch); break;
  }
}

static bool aa_vector_rows(int nch) { return (nch == 3 || nch == 4) && pb_ops_avx2(); }

/* Source rows `stride` apart (two, or one when stride is 0) into tmp rows `len` apart: the AVX2 kernel
 * takes both at once (3 or 4 channels), the C loop does the rest. */
static void aa_hrows_u8(const uint8_t *src, ptrdiff_t stride, int width, uint8_t *dst, size_t len, const aa_axis *ax,
                        int out_w, int nch) {
  int x = 0;
  if (aa_vector_rows(nch))
    x = pb_aa_hrow2_u8_avx2(src, src + stride, width, dst, dst + (stride ? len : 0), ax->start, ax->count,
                            ax->weights, ax->ksize, out_w, nch);
  aa_hrow_u8_from(src, dst, ax, x, out_w, nch);
  if (stride) aa_hrow_u8_from(src + stride, dst + len, ax, x, out_w, nch);
}

/* Horizontal pass, one source row of float16/float32 (element index `s0`) into float. */
static void aa_hrow_f(const void *src, size_t s0, float *dst, const aa_axis *ax, int out_w, int nch, pb_dtype t) {
  const float *wf = ax->weights;
  for (int x = 0; x < out_w; x++) {
    size_t s = s0 + (size_t)ax->start[x] * (size_t)nch;
    const float *k = wf + (size_t)x * (size_t)ax->ksize;
    for (int ch = 0; ch < nch; ch++) {
      float acc = 0.0f;
      for (int i = 0; i < ax->count[x]; i++) acc += pb_ops_load(src, s + (size_t)(i * nch + ch), t) * k[i];
      dst[(size_t)x * nch + ch] = acc;
    }
  }
}

/* Vertical pass, one output row: `rows` points at the first source row used, rows are `len` apart. */
static void aa_vrow_u8(const uint8_t *rows, size_t len, const int32_t *k, int n, uint8_t *dst) {
  for (size_t i = pb_ops_avx2() ? pb_aa_vrow_u8_avx2(rows, len, k, n, dst) : 0; i < len; i++) {
    int32_t acc = AA_ROUND;
    for (int t = 0; t < n; t++) acc += rows[(size_t)t * len + i] * k[t];
    dst[i] = clip8(acc);
  }
}

static void aa_vrow_f(const float *rows, size_t len, const float *k, int n, void *dst, size_t d0, pb_dtype t) {
  for (size_t i = 0; i < len; i++) {
    float acc = 0.0f;
    for (int r = 0; r < n; r++) acc += rows[(size_t)r * len + i] * k[r];
    pb_ops_store(dst, d0 + i, t, acc);
  }
}

/* Four source rows `stride` apart into tmp rows `len` apart: the four-row AVX2 kernel, then the C loop
 * for the output pixels it leaves. */
static void aa_hrows4_u8(const uint8_t *src, ptrdiff_t stride, int width, uint8_t *dst, size_t len, const aa_axis *ax,
                         int out_w, int nch) {
  int x = pb_aa_hrow4_u8_avx2(src, stride, width, dst, len, ax->start, ax->count, ax->pairs, aa_npairs(ax->ksize),
                              out_w, nch);
  for (int r = 0; r < 4; r++) aa_hrow_u8_from(src + r * stride, dst + (size_t)r * len, ax, x, out_w, nch);
}

/* Horizontal pass over the source rows [y_first, y_end) into tmp (out_w * nch per row). */
static void aa_hpass(const pb_plane *src, const aa_axis *ax, int out_w, int y_first, int y_end, void *tmp,
                     pb_dtype t) {
  size_t len = (size_t)out_w * (size_t)src->nch;
  if (t == PB_DTYPE_UINT8 && ax->pairs && aa_vector_rows(src->nch)) /* four rows a step, then as below */
    for (; y_first + 4 <= y_end; y_first += 4, tmp = (uint8_t *)tmp + 4 * len)
      aa_hrows4_u8((const uint8_t *)src->base + (size_t)y_first * (size_t)src->row_stride, src->row_stride,
                   src->width, tmp, len, ax, out_w, src->nch);
  for (int y = y_first; y < y_end; y++) {
    size_t row = (size_t)y * (size_t)src->row_stride, at = (size_t)(y - y_first) * len;
    if (t == PB_DTYPE_UINT8) {
      ptrdiff_t stride = y + 1 < y_end ? src->row_stride : 0; /* two rows a step, the last alone */
      aa_hrows_u8((const uint8_t *)src->base + row, stride, src->width, (uint8_t *)tmp + at, len, ax, out_w, src->nch);
      y += stride != 0;
    } else
      aa_hrow_f(src->base, row, (float *)tmp + at, ax, out_w, src->nch, t);
  }
}

static void aa_vpass(const void *tmp, int y_first, const aa_axis *ay, const pb_plane *dst, pb_dtype t) {
  size_t len = (size_t)dst->width * (size_t)dst->nch;
  for (int y = 0; y < dst->height; y++) {
    size_t first = (size_t)(ay->start[y] - y_first) * len, d0 = (size_t)y * (size_t)dst->row_stride;
    size_t k = (size_t)y * (size_t)ay->ksize;
    if (t == PB_DTYPE_UINT8)
      aa_vrow_u8((const uint8_t *)tmp + first, len, (const int32_t *)ay->weights + k, ay->count[y],
                 (uint8_t *)dst->base + d0);
    else
      aa_vrow_f((const float *)tmp + first, len, (const float *)ay->weights + k, ay->count[y], dst->base, d0, t);
  }
}

int pb_crop_resize(const pb_image *in, int top, int left, int h, int w, pb_image *out, pb_resample mode,
                   void *scratch) {
  if (mode == PB_RESAMPLE_BILINEAR) return pb_crop_resize_bilinear(in, top, left, h, w, out);
  int rc = pb_ops_check_window(in, top, left, h, w, out);
  if (rc) return rc;
  if (!scratch || mode != PB_RESAMPLE_BILINEAR_AA)
    return pb_ops_fail("no scratch buffer or an unknown resampling mode");
  pb_ops_inherit(in, out);
  char *p = scratch;
  aa_axis ax = aa_axis_at(&p, w, out->width), ay = aa_axis_at(&p, h, out->height);
  aa_axis_fill(&ax, w, out->width, in->dtype == PB_DTYPE_UINT8);
  aa_axis_fill(&ay, h, out->height, in->dtype == PB_DTYPE_UINT8);
  if (in->dtype == PB_DTYPE_UINT8 && aa_vector_rows(in->channels))
    aa_axis_pair_up(&ax, out->width, aa_pairs_slot(&ax, out->width));
  /* Only the rows some output row reads go through the horizontal pass. */
  int y_first = ay.start[0], y_end = ay.start[out->height - 1] + ay.count[out->height - 1];
  for (int plane = 0; plane < (in->chw ? in->channels : 1); plane++) {
    pb_plane src = pb_ops_window_plane(in, plane, top, left, h, w);
    pb_plane dst = pb_ops_window_plane(out, plane, 0, 0, out->height, out->width);
    aa_hpass(&src, &ax, out->width, y_first, y_end, p, in->dtype);
    aa_vpass(p, y_first, &ay, &dst, in->dtype);
  }
  return 0;
}

int pb_random_resized_crop(const pb_image *in, pb_rng *rng, const double scale[2], const double ratio[2],
                           pb_image *out, pb_resample mode, void *scratch, int rect[4]) {
  int rc = pb_ops_check_in(in);
  if (rc) return rc;
  int i, j, h, w;
  pb_rrc_params(rng, in->height, in->width, scale, ratio, &i, &j, &h, &w);
  if (rect) {
    rect[0] = i;
    rect[1] = j;
    rect[2] = h;
    rect[3] = w;
  }
  return pb_crop_resize(in, i, j, h, w, out, mode, scratch);
}

int pb_resize(const pb_image *in, pb_image *out, pb_resample mode, void *scratch) {
  int rc = pb_ops_check_in(in);
  if (rc) return rc;
  return pb_crop_resize(in, 0, 0, in->height, in->width, out, mode, scratch);
}

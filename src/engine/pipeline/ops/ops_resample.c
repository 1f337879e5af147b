/* Plain bilinear resampling of a crop window: the cost centre of random_resized_crop and resize.
 *
 * The window is read in place.  Per-column taps are computed once per call for a strip of up to BL_STRIP
 * output columns (on the stack, so wide outputs need no allocation) and reused by every row.  uint8 runs
 * separably in 16-bit fixed point (below); float16/float32 take the four taps per output directly.  The
 * antialiased mode is Pillow's filter, in ops_resample_aa.c. */
#include <errno.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "ops_internal.h"

#define BL_BITS 11
#define BL_ONE (1u << BL_BITS)
#define BL_ROUND (1u << (2 * BL_BITS - 1))
#define BL_STRIP 512

/* One output coordinate's two taps along an axis. */
typedef struct bl_tap {
  int i0;      /* first source index */
  int step;    /* 1, or 0 when i0 is the last source index (the edge is clamped) */
  float frac;  /* weight of the second tap */
} bl_tap;

/* Taps of the output strip's columns, in elements (index * channels). */
typedef struct bl_cols {
  int32_t off[BL_STRIP];
  int32_t next[BL_STRIP]; /* element distance to the second tap */
  uint16_t wq[BL_STRIP];  /* second tap's weight, Q11 */
  int32_t wpair[BL_STRIP]; /* both taps' weights as int16s, (1 - fx) | fx << 16, for pmaddwd */
  float wf[BL_STRIP];
} bl_cols;

/* torch's upsample_bilinear2d (align_corners=false) index math, in float as ATen does for uint8/float:
 * src = (dst + 0.5) * in/out - 0.5, clamped below at 0; the second tap clamps at the far edge. */
static bl_tap bl_tap_at(int d, int in_n, int out_n) {
  float scale = (float)in_n / (float)out_n;
  float src = scale * ((float)d + 0.5f) - 0.5f;
  if (src < 0.0f) src = 0.0f;
  int i0 = (int)src;
  if (i0 > in_n - 1) i0 = in_n - 1;
  float frac = src - (float)i0;
  return (bl_tap){i0, i0 < in_n - 1, frac > 1.0f ? 1.0f : frac};
}

static uint32_t bl_q11(float frac) { return (uint32_t)(frac * (float)BL_ONE + 0.5f); }

static void bl_fill_cols(bl_cols *c, int x_first, int n, int in_w, int out_w, int nch) {
  for (int x = 0; x < n; x++) {
    bl_tap t = bl_tap_at(x_first + x, in_w, out_w);
    c->off[x] = t.i0 * nch;
    c->next[x] = t.step * nch;
    c->wq[x] = (uint16_t)bl_q11(t.frac);
    c->wpair[x] = (int32_t)((BL_ONE - c->wq[x]) | (uint32_t)c->wq[x] << 16);
    c->wf[x] = t.frac;
  }
}

/* ---- uint8: separable in 16-bit fixed point ----
 * The intermediate is "value * 128" in uint16 (Q11 weights, rounded to Q7), the second pass rounds once
 * to uint8.  Which pass goes first depends on the vertical scale, so the horizontal pass (taps gathered
 * per column: two pixels a step with AVX2) runs as few times as possible, and the vertical one (two rows
 * blended element by element) is a contiguous loop that AVX2 or SSE2 does 16 elements at a time:
 *  - shrinking vertically: per output row, blend its two source rows over the strip's source span, then
 *    interpolate that one row horizontally (one horizontal pass per output row);
 *  - otherwise: interpolate each needed source row horizontally once and keep the last two, since
 *    consecutive output rows share them (fewer horizontal passes than output rows). */
#define BL_ROW_ELEMS 2048 /* elements of one cached row: strip columns * channels */
#define BL_MID_SHIFT 4    /* Q11 horizontal result -> Q7 in uint16 (max 255 * 128 = 32640) */
#define BL_OUT_SHIFT (BL_BITS - BL_MID_SHIFT + BL_BITS)

typedef struct bl_rowcache {
  uint16_t row[2][BL_ROW_ELEMS];
  int y[2]; /* the source row each slot holds, -1 when empty */
} bl_rowcache;

static inline __attribute__((always_inline)) void bl_hrow_u8_n(const uint8_t *src, uint16_t *dst, const bl_cols *c,
                                                               int x, int n, int nch) {
  for (dst += (size_t)x * (size_t)nch; x < n; x++, dst += nch) {
    const uint8_t *a = src + c->off[x];
    int nx = c->next[x];
    uint32_t fx = c->wq[x], gx = BL_ONE - fx;
#pragma GCC unroll 4
    for (int ch = 0; ch < nch; ch++)
      dst[ch] = (uint16_t)((a[ch] * gx + a[ch + nx] * fx + (1u << (BL_MID_SHIFT - 1))) >> BL_MID_SHIFT);
  }
}

/* Inlined per channel count so the channel loop unrolls; AVX2 first for 3 and 4 channels.  row_elems:
 * the elements of the window's row that may be read. */
static void bl_hrow_u8(const uint8_t *src, int row_elems, uint16_t *dst, const bl_cols *c, int n, int nch) {
  int x = (nch == 3 || nch == 4) && pb_ops_avx2()
              ? pb_bl_hrow_avx2(src, row_elems, dst, c->off, c->next, c->wpair, n, nch, BL_MID_SHIFT)
              : 0;
  switch (nch) {
    case 1: bl_hrow_u8_n(src, dst, c, x, n, 1); break;
    case 3: bl_hrow_u8_n(src, dst, c, x, n, 3); break;
    case 4: bl_hrow_u8_n(src, dst, c, x, n, 4); break;
    default: bl_hrow_u8_n(src, dst, c, x, n, nch); break;
  }
}

/* The slots holding source rows y0 and y1, interpolating the ones not cached (never evicting the other). */
static void bl_rows_for(bl_rowcache *rc, const pb_plane *src, int y0, int y1, const bl_cols *c, int n,
                        const uint16_t **t0, const uint16_t **t1) {
  int s0 = rc->y[0] == y0 ? 0 : rc->y[1] == y0 ? 1 : -1;
  int s1 = rc->y[0] == y1 ? 0 : rc->y[1] == y1 ? 1 : -1;
  if (s0 < 0) {
    s0 = s1 == 0 ? 1 : 0;
    bl_hrow_u8((const uint8_t *)src->base + (size_t)y0 * (size_t)src->row_stride, src->width * src->nch, rc->row[s0],
               c, n, src->nch);
    rc->y[s0] = y0;
  }
  if (s1 < 0) {
    s1 = 1 - s0;
    bl_hrow_u8((const uint8_t *)src->base + (size_t)y1 * (size_t)src->row_stride, src->width * src->nch, rc->row[s1],
               c, n, src->nch);
    rc->y[s1] = y1;
  }
  *t0 = rc->row[s0];
  *t1 = rc->row[s1];
}

/* dst[i] = round((t0[i] * (1 - fy) + t1[i] * fy) / 128): fixed point, so the SSE2 and scalar paths agree. */
static void bl_vrow_u8(const uint16_t *t0, const uint16_t *t1, uint32_t fy, uint8_t *dst, size_t len) {
  uint32_t gy = BL_ONE - fy;
  size_t i = 0;
#ifdef __SSE2__
  /* pmaddwd of interleaved (t0, t1) with (gy, fy): both fit int16, the sum int32 */
  const __m128i w = _mm_set1_epi32((int)(gy | (fy << 16))), round = _mm_set1_epi32(1 << (BL_OUT_SHIFT - 1));
  for (; i + 16 <= len; i += 16) {
    __m128i r[4];
    for (int half = 0; half < 2; half++) {
      __m128i a = _mm_loadu_si128((const __m128i *)(t0 + i + 8 * half));
      __m128i b = _mm_loadu_si128((const __m128i *)(t1 + i + 8 * half));
      r[2 * half] = _mm_srli_epi32(_mm_add_epi32(_mm_madd_epi16(_mm_unpacklo_epi16(a, b), w), round), BL_OUT_SHIFT);
      r[2 * half + 1] =
          _mm_srli_epi32(_mm_add_epi32(_mm_madd_epi16(_mm_unpackhi_epi16(a, b), w), round), BL_OUT_SHIFT);
    }
    __m128i lo = _mm_packs_epi32(r[0], r[1]), hi = _mm_packs_epi32(r[2], r[3]);
    _mm_storeu_si128((__m128i *)(dst + i), _mm_packus_epi16(lo, hi));
  }
#endif
  for (; i < len; i++) dst[i] = (uint8_t)((t0[i] * gy + t1[i] * fy + (1u << (BL_OUT_SHIFT - 1))) >> BL_OUT_SHIFT);
}

static void bl_plane_u8_hfirst(const pb_plane *src, const pb_plane *dst) {
  bl_cols cols;
  bl_rowcache rc;
  int strip = PB_MIN(BL_STRIP, BL_ROW_ELEMS / src->nch);
  for (int x0 = 0; x0 < dst->width; x0 += strip) {
    int n = PB_MIN(strip, dst->width - x0);
    bl_fill_cols(&cols, x0, n, src->width, dst->width, src->nch);
    rc.y[0] = rc.y[1] = -1;
    for (int y = 0; y < dst->height; y++) {
      bl_tap ty = bl_tap_at(y, src->height, dst->height);
      const uint16_t *t0, *t1;
      bl_rows_for(&rc, src, ty.i0, ty.i0 + ty.step, &cols, n, &t0, &t1);
      uint8_t *d = (uint8_t *)dst->base + (size_t)y * (size_t)dst->row_stride + (size_t)x0 * (size_t)dst->nch;
      bl_vrow_u8(t0, t1, bl_q11(ty.frac), d, (size_t)n * (size_t)src->nch);
    }
  }
}

#define BL_SPAN_ELEMS 4096 /* source elements one blended row may span (>= 2 * PB_OPS_MAX_CHANNELS) */
#define BL_SPAN_PAD 4      /* room past the span for the hmid kernels' 4-element loads */

/* mid[i] = round((a[i] * (1 - fy) + b[i] * fy) * 128), the vertical pass when it goes first. */
static void bl_vblend_u8(const uint8_t *a, const uint8_t *b, uint32_t fy, uint16_t *mid, size_t len) {
  uint32_t gy = BL_ONE - fy;
  size_t i = pb_ops_avx2() ? pb_bl_vblend_avx2(a, b, (int32_t)(gy | fy << 16), mid, len, BL_MID_SHIFT) : 0;
#ifdef __SSE2__
  const __m128i w = _mm_set1_epi32((int)(gy | (fy << 16))), round = _mm_set1_epi32(1 << (BL_MID_SHIFT - 1));
  const __m128i zero = _mm_setzero_si128();
  for (; i + 16 <= len; i += 16) {
    __m128i va = _mm_loadu_si128((const __m128i *)(a + i)), vb = _mm_loadu_si128((const __m128i *)(b + i));
    for (int half = 0; half < 2; half++) {
      __m128i a16 = half ? _mm_unpackhi_epi8(va, zero) : _mm_unpacklo_epi8(va, zero);
      __m128i b16 = half ? _mm_unpackhi_epi8(vb, zero) : _mm_unpacklo_epi8(vb, zero);
      __m128i lo = _mm_srli_epi32(_mm_add_epi32(_mm_madd_epi16(_mm_unpacklo_epi16(a16, b16), w), round), BL_MID_SHIFT);
      __m128i hi = _mm_srli_epi32(_mm_add_epi32(_mm_madd_epi16(_mm_unpackhi_epi16(a16, b16), w), round), BL_MID_SHIFT);
      _mm_storeu_si128((__m128i *)(mid + i + 8 * half), _mm_packs_epi32(lo, hi));
    }
  }
#endif
  for (; i < len; i++) mid[i] = (uint16_t)((a[i] * gy + b[i] * fy + (1u << (BL_MID_SHIFT - 1))) >> BL_MID_SHIFT);
}

static inline __attribute__((always_inline)) void bl_hmid_n(const uint16_t *mid, uint8_t *dst, const bl_cols *c,
                                                            int n, int nch) {
  for (int x = 0; x < n; x++, dst += nch) {
    const uint16_t *a = mid + c->off[x];
    int nx = c->next[x];
    uint32_t fx = c->wq[x], gx = BL_ONE - fx;
#pragma GCC unroll 4
    for (int ch = 0; ch < nch; ch++)
      dst[ch] = (uint8_t)((a[ch] * gx + a[ch + nx] * fx + (1u << (BL_OUT_SHIFT - 1))) >> BL_OUT_SHIFT);
  }
}

#ifdef __SSE2__
/* 3 or 4 channels, SSE2: the pixel's two taps interleaved element by element and multiplied-added with
 * (1 - fx, fx) in one pmaddwd (the values fit int16: mid <= 32640, weights <= 2048), then the scalar
 * loop's rounding and shift.  The same integers, so the same bytes.  Reads one element past a
 * 3-channel pixel: `mid` has room for it (BL_SPAN_PAD), and that lane is never stored. */
static inline __attribute__((always_inline)) void bl_hmid_sse2_n(const uint16_t *mid, uint8_t *dst,
                                                                 const bl_cols *c, int x, int n, int nch) {
  const __m128i round = _mm_set1_epi32(1 << (BL_OUT_SHIFT - 1));
  for (dst += (size_t)x * (size_t)nch; x < n; x++, dst += nch) {
    const uint16_t *a = mid + c->off[x];
    __m128i t0 = _mm_loadl_epi64((const __m128i *)a), t1 = _mm_loadl_epi64((const __m128i *)(a + c->next[x]));
    __m128i w = _mm_set1_epi32(c->wpair[x]);
    __m128i v = _mm_srli_epi32(_mm_add_epi32(_mm_madd_epi16(_mm_unpacklo_epi16(t0, t1), w), round), BL_OUT_SHIFT);
    v = _mm_packs_epi32(v, v);
    pb_ops_put_pixel(dst, (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(v, v)), nch);
  }
}
#endif

/* Inlined per channel count so the channel loop unrolls. */
static void bl_hmid(const uint16_t *mid, uint8_t *dst, const bl_cols *c, int n, int nch) {
#ifdef __SSE2__
  if ((nch == 3 || nch == 4) && pb_ops_simd_allowed()) {
    /* AVX2 two pixels a step, SSE2 the odd one left (or all of them without AVX2) */
    int x = pb_ops_avx2() ? pb_bl_hmid_avx2(mid, dst, c->off, c->next, c->wpair, n, nch, BL_OUT_SHIFT) : 0;
    if (nch == 3) bl_hmid_sse2_n(mid, dst, c, x, n, 3);
    else bl_hmid_sse2_n(mid, dst, c, x, n, 4);
    return;
  }
#endif
  switch (nch) {
    case 1: bl_hmid_n(mid, dst, c, n, 1); break;
    case 3: bl_hmid_n(mid, dst, c, n, 3); break;
    case 4: bl_hmid_n(mid, dst, c, n, 4); break;
    default: bl_hmid_n(mid, dst, c, n, nch); break;
  }
}

/* Up to n columns from x0 whose source elements fit one blended row; offsets become relative to the
 * span's first element (*lo).  Returns the column count; *len is the span. */
static int bl_fill_span(bl_cols *c, int x0, int n, const pb_plane *src, int out_w, int *lo, int *len) {
  bl_fill_cols(c, x0, n, src->width, out_w, src->nch);
  *lo = c->off[0];
  while (n > 1 && c->off[n - 1] + c->next[n - 1] + src->nch - *lo > BL_SPAN_ELEMS) n--;
  for (int x = 0; x < n; x++) c->off[x] -= *lo;
  *len = c->off[n - 1] + c->next[n - 1] + src->nch;
  return n;
}

static void bl_plane_u8_vfirst(const pb_plane *src, const pb_plane *dst) {
  bl_cols cols;
  uint16_t mid[BL_SPAN_ELEMS + BL_SPAN_PAD] = {0}; /* zeroed: the vector loads read one element past a row */
  for (int x0 = 0, n, lo, len; x0 < dst->width; x0 += n) {
    n = bl_fill_span(&cols, x0, PB_MIN(BL_STRIP, dst->width - x0), src, dst->width, &lo, &len);
    for (int y = 0; y < dst->height; y++) {
      bl_tap ty = bl_tap_at(y, src->height, dst->height);
      const uint8_t *a = (const uint8_t *)src->base + (size_t)ty.i0 * (size_t)src->row_stride + lo;
      bl_vblend_u8(a, a + ty.step * src->row_stride, bl_q11(ty.frac), mid, (size_t)len);
      bl_hmid(mid, (uint8_t *)dst->base + (size_t)y * (size_t)dst->row_stride + (size_t)x0 * (size_t)dst->nch,
              &cols, n, src->nch);
    }
  }
}

static void bl_plane_u8(const pb_plane *src, const pb_plane *dst) {
  if (src->height > dst->height)
    bl_plane_u8_vfirst(src, dst);
  else
    bl_plane_u8_hfirst(src, dst);
}

/* One output row strip, float16/float32 (rows are element indices into base). */
static inline __attribute__((always_inline)) void bl_row_f_t(const void *base, size_t r0, size_t r1, float fy,
                                                             void *dst, size_t d0, const bl_cols *c, int n,
                                                             int nch, pb_dtype t) {
  for (int x = 0; x < n; x++) {
    size_t a = r0 + (size_t)c->off[x], b = r1 + (size_t)c->off[x], nx = (size_t)c->next[x];
    float fx = c->wf[x];
    for (int ch = 0; ch < nch; ch++) {
      float top = pb_ops_load(base, a + ch, t) * (1.0f - fx) + pb_ops_load(base, a + ch + nx, t) * fx;
      float bot = pb_ops_load(base, b + ch, t) * (1.0f - fx) + pb_ops_load(base, b + ch + nx, t) * fx;
      pb_ops_store(dst, d0 + (size_t)x * nch + ch, t, top * (1.0f - fy) + bot * fy);
    }
  }
}

static void bl_row_f(const void *base, size_t r0, size_t r1, float fy, void *dst, size_t d0, const bl_cols *c,
                     int n, int nch, pb_dtype t) {
  if (t == PB_DTYPE_FLOAT32)
    bl_row_f_t(base, r0, r1, fy, dst, d0, c, n, nch, PB_DTYPE_FLOAT32);
  else
    bl_row_f_t(base, r0, r1, fy, dst, d0, c, n, nch, PB_DTYPE_FLOAT16);
}

/* float16/float32: the four taps per output read straight from the window (the column taps are computed
 * once per strip, not per row). */
static void bl_plane_f(const pb_plane *src, const pb_plane *dst, pb_dtype t) {
  bl_cols cols;
  for (int x0 = 0; x0 < dst->width; x0 += BL_STRIP) {
    int n = PB_MIN(BL_STRIP, dst->width - x0);
    bl_fill_cols(&cols, x0, n, src->width, dst->width, src->nch);
    for (int y = 0; y < dst->height; y++) {
      bl_tap ty = bl_tap_at(y, src->height, dst->height);
      size_t r0 = (size_t)ty.i0 * (size_t)src->row_stride, r1 = r0 + (size_t)(ty.step * src->row_stride);
      size_t d0 = (size_t)y * (size_t)dst->row_stride + (size_t)x0 * (size_t)dst->nch;
      bl_row_f(src->base, r0, r1, ty.frac, dst->base, d0, &cols, n, src->nch, t);
    }
  }
}

/* ---- shared with the antialiased path ---- */

/* Plane p of the (top, left, h, w) window: every channel of an HWC image, or channel p of a CHW one. */
pb_plane pb_ops_window_plane(const pb_image *im, int p, int top, int left, int h, int w) {
  size_t eb = pb_ops_elem_bytes(im->dtype), H = (size_t)im->height, W = (size_t)im->width;
  if (im->chw)
    return (pb_plane){(char *)im->data + ((size_t)p * H * W + (size_t)top * W + (size_t)left) * eb,
                      (ptrdiff_t)W, h, w, 1};
  size_t C = (size_t)im->channels;
  return (pb_plane){(char *)im->data + ((size_t)top * W + (size_t)left) * C * eb, (ptrdiff_t)(W * C), h, w,
                    im->channels};
}

int pb_ops_check_window(const pb_image *in, int top, int left, int h, int w, const pb_image *out) {
  int rc = pb_ops_check_io(in, out);
  if (rc) return rc;
  if (out->height <= 0 || out->width <= 0)
    return pb_ops_fail("the output would be %dx%d (expected at least 1x1)", out->width, out->height);
  if (top < 0 || left < 0 || h <= 0 || w <= 0 || top > in->height - h || left > in->width - w)
    return pb_ops_fail("the window %dx%d at x %d, y %d is not inside the %dx%d image (expected at least 1x1, inside)",
                       w, h, left, top, in->width, in->height);
  if (in->channels > PB_OPS_MAX_CHANNELS)
    return pb_ops_fail("%d channels (expected at most %d)", in->channels, PB_OPS_MAX_CHANNELS);
  return 0;
}

/* Give `out` the input's channels, dtype and layout (the caller chose data and size). */
void pb_ops_inherit(const pb_image *in, pb_image *out) {
  out->channels = in->channels;
  out->dtype = in->dtype;
  out->chw = in->chw;
}

size_t pb_resize_out_bytes(const pb_image *in, int out_h, int out_w) {
  if (out_h <= 0 || out_w <= 0 || in->channels <= 0) return 0;
  return (size_t)out_h * (size_t)out_w * (size_t)in->channels * pb_ops_elem_bytes(in->dtype);
}

int pb_crop_resize_bilinear(const pb_image *in, int top, int left, int h, int w, pb_image *out) {
  int rc = pb_ops_check_window(in, top, left, h, w, out);
  if (rc) return rc;
  pb_ops_inherit(in, out);
  int planes = in->chw ? in->channels : 1;
  for (int p = 0; p < planes; p++) {
    pb_plane src = pb_ops_window_plane(in, p, top, left, h, w);
    pb_plane dst = pb_ops_window_plane(out, p, 0, 0, out->height, out->width);
    if (in->dtype == PB_DTYPE_UINT8)
      bl_plane_u8(&src, &dst);
    else
      bl_plane_f(&src, &dst, in->dtype);
  }
  return 0;
}

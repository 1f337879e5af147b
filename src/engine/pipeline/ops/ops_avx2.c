/* AVX2 kernels of the image ops, bit for bit the same as their C loops:
 * - the antialiased uint8 resampler (ops_resample_aa.c), and so Pillow: the same Q22 weights, exact
 *   32-bit products and sums (vpmulld, or vpmaddwd on weights split in two halves), the same shift and
 *   the same clip to 0..255 (the saturating packs do it).  Pillow-SIMD is faster still because it drops
 *   to 16-bit weights, which changes pixels; these keep them.
 * - plain bilinear's uint8 passes (ops_resample.c): the horizontal pass from a source row or from the
 *   blended row, and the vertical blend, in the same 16-bit fixed point with vpmaddwd.
 * - the fused flip + normalize + to_chw tail (ops_normalize.c): the float32 subtract and divide its
 *   tables hold, computed 8 at a time.
 * Chosen at run time, once, when the CPU has AVX2; tests turn them off to compare against the C loops
 * (pb_ops_allow_simd). */
#include <stdatomic.h>

#include "ops_internal.h"

static atomic_int simd_allowed = 1;

void pb_ops_allow_simd(bool on) { atomic_store(&simd_allowed, on ? 1 : 0); }

bool pb_ops_simd_allowed(void) { return atomic_load_explicit(&simd_allowed, memory_order_relaxed) != 0; }

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AA_BITS 22
#define AA_ROUND (1 << (AA_BITS - 1))

bool pb_ops_avx2(void) {
  static atomic_int have = -1; /* every thread that finds it unset computes the same value */
  int h = atomic_load_explicit(&have, memory_order_relaxed);
  if (h < 0) atomic_store_explicit(&have, h = __builtin_cpu_supports("avx2") ? 1 : 0, memory_order_relaxed);
  return h && atomic_load_explicit(&simd_allowed, memory_order_relaxed);
}

/* The horizontal pass over two source rows of `width` pixels at once, nch 3 or 4: they share the taps,
 * so each weight is broadcast once for both (lanes 0-3 the first row's pixel, 4-7 the second's); a lone
 * row passes itself as both.  An output pixel whose taps reach the row's last pixel is left to the
 * caller when nch is 3 (the 4-byte load's fourth byte would lie past the row, possibly past the image):
 * returns how many leading output pixels were done. */
__attribute__((target("avx2"))) int pb_aa_hrow2_u8_avx2(const uint8_t *src0, const uint8_t *src1, int width,
                                                       uint8_t *dst0, uint8_t *dst1, const int32_t *start,
                                                       const int32_t *count, const int32_t *weights, int ksize,
                                                       int out_w, int nch) {
  int x = 0;
  for (; x < out_w; x++, dst0 += nch, dst1 += nch) {
    if (nch == 3 && start[x] + count[x] >= width) break;
    const uint8_t *a = src0 + (size_t)start[x] * (size_t)nch, *b = src1 + (size_t)start[x] * (size_t)nch;
    const int32_t *k = weights + (size_t)x * (size_t)ksize;
    __m256i acc = _mm256_set1_epi32(AA_ROUND);
    for (int t = 0; t < count[x]; t++) {
      int32_t va, vb;
      memcpy(&va, a + (size_t)t * (size_t)nch, 4);
      memcpy(&vb, b + (size_t)t * (size_t)nch, 4);
      __m256i px = _mm256_cvtepu8_epi32(_mm_insert_epi32(_mm_cvtsi32_si128(va), vb, 1));
      acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(px, _mm256_set1_epi32(k[t])));
    }
    acc = _mm256_srai_epi32(acc, AA_BITS);
    __m256i w16 = _mm256_packs_epi32(acc, acc); /* within each 128-bit lane: one row's pixel */
    __m256i b8 = _mm256_packus_epi16(w16, w16);  /* clip to 0..255, as clip8 does */
    pb_ops_put_pixel(dst0, (uint32_t)_mm_cvtsi128_si32(_mm256_castsi256_si128(b8)), nch);
    pb_ops_put_pixel(dst1, (uint32_t)_mm_cvtsi128_si32(_mm256_extracti128_si256(b8, 1)), nch);
  }
  return x;
}

/* The horizontal pass over four rows at once, two taps per multiply: vpmaddwd multiplies 16-bit pixels
 * by 16-bit weights and adds neighbouring products, so each 32-bit lane sums one channel of one row over
 * a pair of taps.  A Q22 weight (0..2^22, the triangle filter's are never negative) does not fit 16 bits,
 * so it goes in as two halves, w = hi * 2^11 + lo, and sum(p * w) = (sum(p * hi) << 11) + sum(p * lo):
 * the same integer as the C loop's, with no overflow (255 * 2^22 * taps-rounding stays below 2^31).
 * Lanes: 0-3 row 0 (low 128 bits) and row 1 (high), 4-7 rows 2 and 3, in a second register.  An 8-byte
 * load covers a pair's two pixels; output pixels whose last load would pass the row's end are left to
 * the caller.  Each output pixel is stored as 4 bytes; with 3 channels the fourth lands on the next
 * pixel, which is always written afterwards (the row's last pixel never passes the test above). */
__attribute__((target("avx2"))) int pb_aa_hrow4_u8_avx2(const uint8_t *src, ptrdiff_t stride, int width, uint8_t *dst,
                                                       size_t len, const int32_t *start, const int32_t *count,
                                                       const int32_t *pairs, int npairs, int out_w, int nch) {
  /* bytes of pixels t and t+1 to (t.c0, t+1.c0, t.c1, t+1.c1, ...) as 16-bit lanes; -1 zeroes */
  const __m256i shuf = nch == 3 ? _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1, 0, -1,
                                                   3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1)
                                : _mm256_setr_epi8(0, -1, 4, -1, 1, -1, 5, -1, 2, -1, 6, -1, 3, -1, 7, -1, 0, -1,
                                                   4, -1, 1, -1, 5, -1, 2, -1, 6, -1, 3, -1, 7, -1);
  /* the same for the next pair, 2 pixels on */
  const __m256i shuf1 = nch == 3 ? _mm256_setr_epi8(6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1, 6, -1,
                                                    9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1)
                                 : _mm256_setr_epi8(8, -1, 12, -1, 9, -1, 13, -1, 10, -1, 14, -1, 11, -1, 15, -1, 8,
                                                    -1, 12, -1, 9, -1, 13, -1, 10, -1, 14, -1, 11, -1, 15, -1);
  const __m256i round = _mm256_set1_epi32(AA_ROUND);
  const uint8_t *r0 = src, *r1 = src + stride, *r2 = src + 2 * stride, *r3 = src + 3 * stride;
  int x = 0;
  for (; x < out_w; x++) {
    int n = count[x], np = (n + 1) / 2;
    if ((size_t)(start[x] + 2 * np - 2) * (size_t)nch + 8 > (size_t)width * (size_t)nch) break;
    size_t at = (size_t)start[x] * (size_t)nch;
    const int32_t *kp = pairs + (size_t)x * (size_t)npairs * 2;
    __m256i hi01 = _mm256_setzero_si256(), hi23 = hi01, lo01 = round, lo23 = round;
    int p = 0;
    if (np == 2 && at + 16 <= (size_t)width * (size_t)nch) { /* both pairs from one 16-byte load a row */
      __m256i w01 = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(r0 + at))),
                                            _mm_loadu_si128((const __m128i *)(r1 + at)), 1);
      __m256i w23 = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(r2 + at))),
                                            _mm_loadu_si128((const __m128i *)(r3 + at)), 1);
      for (; p < 2; p++) {
        __m256i sh = p ? shuf1 : shuf;
        __m256i v01 = _mm256_shuffle_epi8(w01, sh), v23 = _mm256_shuffle_epi8(w23, sh);
        __m256i kh = _mm256_set1_epi32(kp[2 * p]), kl = _mm256_set1_epi32(kp[2 * p + 1]);
        hi01 = _mm256_add_epi32(hi01, _mm256_madd_epi16(v01, kh));
        hi23 = _mm256_add_epi32(hi23, _mm256_madd_epi16(v23, kh));
        lo01 = _mm256_add_epi32(lo01, _mm256_madd_epi16(v01, kl));
        lo23 = _mm256_add_epi32(lo23, _mm256_madd_epi16(v23, kl));
      }
    }
    for (; p < np; p++, at += 2 * (size_t)nch) {
      __m256i v01 = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(r0 + at))),
                                            _mm_loadl_epi64((const __m128i *)(r1 + at)), 1);
      __m256i v23 = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(r2 + at))),
                                            _mm_loadl_epi64((const __m128i *)(r3 + at)), 1);
      v01 = _mm256_shuffle_epi8(v01, shuf);
      v23 = _mm256_shuffle_epi8(v23, shuf);
      __m256i kh = _mm256_set1_epi32(kp[2 * p]), kl = _mm256_set1_epi32(kp[2 * p + 1]);
      hi01 = _mm256_add_epi32(hi01, _mm256_madd_epi16(v01, kh));
      hi23 = _mm256_add_epi32(hi23, _mm256_madd_epi16(v23, kh));
      lo01 = _mm256_add_epi32(lo01, _mm256_madd_epi16(v01, kl));
      lo23 = _mm256_add_epi32(lo23, _mm256_madd_epi16(v23, kl));
    }
    __m256i a01 = _mm256_srai_epi32(_mm256_add_epi32(_mm256_slli_epi32(hi01, 11), lo01), AA_BITS);
    __m256i a23 = _mm256_srai_epi32(_mm256_add_epi32(_mm256_slli_epi32(hi23, 11), lo23), AA_BITS);
    /* per 128-bit lane: packs gives (row 0|1 pixel, row 2|3 pixel) as int16, packus clips to bytes */
    __m256i b8 = _mm256_packus_epi16(_mm256_packs_epi32(a01, a23), _mm256_setzero_si256());
    __m128i b02 = _mm256_castsi256_si128(b8), b13 = _mm256_extracti128_si256(b8, 1);
    size_t d = (size_t)x * (size_t)nch;
    uint32_t p0 = (uint32_t)_mm_cvtsi128_si32(b02), p2 = (uint32_t)_mm_extract_epi32(b02, 1);
    uint32_t p1 = (uint32_t)_mm_cvtsi128_si32(b13), p3 = (uint32_t)_mm_extract_epi32(b13, 1);
    memcpy(dst + d, &p0, 4);
    memcpy(dst + len + d, &p1, 4);
    memcpy(dst + 2 * len + d, &p2, 4);
    memcpy(dst + 3 * len + d, &p3, 4);
  }
  return x;
}

/* The vertical pass, one output row of len elements: n source rows `len` apart, 8 elements at a time.
 * Returns how many leading elements were done (the caller finishes the tail). */
__attribute__((target("avx2"))) size_t pb_aa_vrow_u8_avx2(const uint8_t *rows, size_t len, const int32_t *k, int n,
                                                         uint8_t *dst) {
  size_t i = 0;
  for (; i + 16 <= len; i += 16) {
    __m256i a0 = _mm256_set1_epi32(AA_ROUND), a1 = a0;
    for (int t = 0; t < n; t++) {
      __m128i px = _mm_loadu_si128((const __m128i *)(rows + (size_t)t * len + i));
      __m256i w = _mm256_set1_epi32(k[t]);
      a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(px), w));
      a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(px, 8)), w));
    }
    a0 = _mm256_srai_epi32(a0, AA_BITS);
    a1 = _mm256_srai_epi32(a1, AA_BITS);
    /* packs work within 128-bit lanes: put the halves back in order before storing */
    __m256i w16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(a0, a1), 0xD8);
    __m128i b = _mm_packus_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1));
    _mm_storeu_si128((__m128i *)(dst + i), b);
  }
  return i;
}

/* One plain-bilinear pixel's two taps, 4 elements each, interleaved element by element for pmaddwd. */
static inline __m128i bl_taps(const uint16_t *a, int next) {
  return _mm_unpacklo_epi16(_mm_loadl_epi64((const __m128i *)a), _mm_loadl_epi64((const __m128i *)(a + next)));
}

/* Two output pixels' taps, interleaved (tap 0, tap 1) as int16 pairs, pixel x in the low lane and x+1
 * in the high one, times their (1 - f, f) weights wpair[0], wpair[1]: rounded and shifted, one int32 per
 * element. */
__attribute__((target("avx2"))) static inline __m256i bl_weigh2(__m256i taps, const int32_t *wpair, __m256i round,
                                                                __m128i shift) {
  const __m256i lanes = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  __m256i w = _mm256_permutevar8x32_epi32(_mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)wpair)), lanes);
  return _mm256_srl_epi32(_mm256_add_epi32(_mm256_madd_epi16(taps, w), round), shift);
}

__attribute__((target("avx2"))) int pb_bl_hmid_avx2(const uint16_t *mid, uint8_t *dst, const int32_t *off,
                                                   const int32_t *next, const int32_t *wpair, int n, int nch,
                                                   int out_shift) {
  const __m256i round = _mm256_set1_epi32(1 << (out_shift - 1));
  const __m128i shift = _mm_cvtsi32_si128(out_shift);
  int x = 0;
  for (; x + 2 <= n; x += 2, dst += 2 * nch) {
    /* 4 elements from each tap (the 4th past a 3-channel pixel: bl_hmid's buffer has room, never stored) */
    __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(bl_taps(mid + off[x], next[x])),
                                        bl_taps(mid + off[x + 1], next[x + 1]), 1);
    __m256i r = bl_weigh2(v, wpair + x, round, shift);
    r = _mm256_packus_epi16(_mm256_packs_epi32(r, r), r); /* per lane: the pixel's bytes first */
    uint32_t px0 = (uint32_t)_mm_cvtsi128_si32(_mm256_castsi256_si128(r));
    uint32_t px1 = (uint32_t)_mm_cvtsi128_si32(_mm256_extracti128_si256(r, 1));
    if (x + 2 < n) { /* 4-byte stores: a 3-channel pixel's 4th byte lands on the next one, written after */
      memcpy(dst, &px0, 4);
      memcpy(dst + nch, &px1, 4);
    } else { /* the strip's last pixel: nothing of this row is written after it */
      pb_ops_put_pixel(dst, px0, nch);
      pb_ops_put_pixel(dst + nch, px1, nch);
    }
  }
  return x;
}

/* One source pixel's two taps, 4 bytes each (the 4th past a 3-channel pixel), interleaved byte by byte. */
static inline __m128i bl_src_taps(const uint8_t *a, int next) {
  int32_t t0, t1;
  memcpy(&t0, a, 4);
  memcpy(&t1, a + next, 4);
  return _mm_unpacklo_epi8(_mm_cvtsi32_si128(t0), _mm_cvtsi32_si128(t1));
}

__attribute__((target("avx2"))) int pb_bl_hrow_avx2(const uint8_t *src, int row_elems, uint16_t *dst,
                                                   const int32_t *off, const int32_t *next, const int32_t *wpair,
                                                   int n, int nch, int mid_shift) {
  const __m256i round = _mm256_set1_epi32(1 << (mid_shift - 1));
  const __m128i shift = _mm_cvtsi32_si128(mid_shift);
  int x = 0;
  /* Offsets and second taps only grow along the row: the first pair whose 4-byte load would pass the
   * row's end (a 3-channel row's last pixel) ends the loop, and the C loop does it. */
  for (; x + 2 <= n && off[x + 1] + next[x + 1] + 4 <= row_elems; x += 2, dst += 2 * nch) {
    __m128i taps = _mm_unpacklo_epi64(bl_src_taps(src + off[x], next[x]), bl_src_taps(src + off[x + 1], next[x + 1]));
    __m256i v = _mm256_cvtepu8_epi16(taps); /* pixel x's (tap 0, tap 1) pairs in the low lane, x+1's high */
    __m256i r = bl_weigh2(v, wpair + x, round, shift);
    r = _mm256_packs_epi32(r, r); /* per lane: the pixel's 4 uint16s first (<= 32640: no saturation) */
    uint64_t px0 = (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(r));
    uint64_t px1 = (uint64_t)_mm_cvtsi128_si64(_mm256_extracti128_si256(r, 1));
    if (x + 2 < n || nch == 4) { /* 8-byte stores: a 3-channel pixel's 4th element lands on the next one */
      memcpy(dst, &px0, 8);
      memcpy(dst + nch, &px1, 8);
    } else { /* the strip's last pixel: nothing of this row is written after it */
      memcpy(dst, &px0, 6);
      memcpy(dst + nch, &px1, 6);
    }
  }
  return x;
}

__attribute__((target("avx2"))) size_t pb_bl_vblend_avx2(const uint8_t *a, const uint8_t *b, int32_t wpair,
                                                        uint16_t *mid, size_t len, int mid_shift) {
  const __m256i w = _mm256_set1_epi32(wpair), round = _mm256_set1_epi32(1 << (mid_shift - 1));
  const __m128i shift = _mm_cvtsi32_si128(mid_shift);
  size_t i = 0;
  for (; i + 16 <= len; i += 16) {
    __m256i a16 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(a + i)));
    __m256i b16 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(b + i)));
    /* unpack and pack both work within 128-bit lanes, so elements 0-7 and 8-15 come back in order */
    __m256i lo = _mm256_madd_epi16(_mm256_unpacklo_epi16(a16, b16), w);
    __m256i hi = _mm256_madd_epi16(_mm256_unpackhi_epi16(a16, b16), w);
    lo = _mm256_srl_epi32(_mm256_add_epi32(lo, round), shift);
    hi = _mm256_srl_epi32(_mm256_add_epi32(hi, round), shift);
    _mm256_storeu_si256((__m256i *)(mid + i), _mm256_packs_epi32(lo, hi));
  }
  return i;
}

/* Byte shuffles that pick one channel of 8 RGB pixels out of 24 bytes held as 16 (lo) + 8 (hi): for
 * channel c, in output order, or (flip) in mirrored order.  -1 zeroes a byte, so lo's and hi's picks OR. */
static const int8_t pick_lo[2][3][16] = {
    {{0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
     {1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
     {2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}},
    {{-1, -1, 15, 12, 9, 6, 3, 0, -1, -1, -1, -1, -1, -1, -1, -1},
     {-1, -1, -1, 13, 10, 7, 4, 1, -1, -1, -1, -1, -1, -1, -1, -1},
     {-1, -1, -1, 14, 11, 8, 5, 2, -1, -1, -1, -1, -1, -1, -1, -1}}};
static const int8_t pick_hi[2][3][16] = {
    {{-1, -1, -1, -1, -1, -1, 2, 5, -1, -1, -1, -1, -1, -1, -1, -1},
     {-1, -1, -1, -1, -1, 0, 3, 6, -1, -1, -1, -1, -1, -1, -1, -1},
     {-1, -1, -1, -1, -1, 1, 4, 7, -1, -1, -1, -1, -1, -1, -1, -1}},
    {{5, 2, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
     {6, 3, 0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
     {7, 4, 1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}}};

/* Both store kinds from one body: `nt` is a constant in each caller below, so each gets its own loop. */
static inline __attribute__((always_inline, target("avx2"))) int norm_row3_chw_f32(const uint8_t *src, int W,
                                                                                  bool flip, const float mean[3],
                                                                                  const float std[3], float *dst,
                                                                                  size_t plane, bool nt) {
  __m128i lo_mask[3], hi_mask[3];
  __m256 m[3], s[3];
  for (int c = 0; c < 3; c++) {
    lo_mask[c] = _mm_loadu_si128((const __m128i *)pick_lo[flip][c]);
    hi_mask[c] = _mm_loadu_si128((const __m128i *)pick_hi[flip][c]);
    m[c] = _mm256_set1_ps(mean[c]);
    s[c] = _mm256_set1_ps(std[c]);
  }
  int x = 0;
  for (; x + 8 <= W; x += 8) {
    /* output pixels x..x+7 read source pixels x..x+7, or W-8-x..W-1-x mirrored */
    const uint8_t *p = src + (size_t)(flip ? W - 8 - x : x) * 3;
    __m128i lo = _mm_loadu_si128((const __m128i *)p), hi = _mm_loadl_epi64((const __m128i *)(p + 16));
    for (int c = 0; c < 3; c++) {
      __m128i v8 = _mm_or_si128(_mm_shuffle_epi8(lo, lo_mask[c]), _mm_shuffle_epi8(hi, hi_mask[c]));
      __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v8));
      /* (x - mean) / std in float32, two roundings, as the tables compute it: the same values */
      __m256 r = _mm256_div_ps(_mm256_sub_ps(v, m[c]), s[c]);
      if (nt)
        _mm256_stream_ps(dst + (size_t)c * plane + (size_t)x, r);
      else
        _mm256_storeu_ps(dst + (size_t)c * plane + (size_t)x, r);
    }
  }
  return x;
}

__attribute__((target("avx2"))) int pb_norm_row3_chw_f32_avx2(const uint8_t *src, int W, bool flip,
                                                             const float mean[3], const float std[3], float *dst,
                                                             size_t plane) {
  return norm_row3_chw_f32(src, W, flip, mean, std, dst, plane, false);
}

__attribute__((target("avx2"))) int pb_norm_row3_chw_f32_avx2_nt(const uint8_t *src, int W, bool flip,
                                                                const float mean[3], const float std[3],
                                                                float *dst, size_t plane) {
  return norm_row3_chw_f32(src, W, flip, mean, std, dst, plane, true);
}

void pb_store_fence(void) { _mm_sfence(); }

#else

bool pb_ops_avx2(void) { return false; }

int pb_norm_row3_chw_f32_avx2(const uint8_t *src, int W, bool flip, const float mean[3], const float std[3],
                              float *dst, size_t plane) {
  return 0;
}

int pb_norm_row3_chw_f32_avx2_nt(const uint8_t *src, int W, bool flip, const float mean[3], const float std[3],
                                 float *dst, size_t plane) {
  return 0;
}

void pb_store_fence(void) {}

int pb_bl_hmid_avx2(const uint16_t *mid, uint8_t *dst, const int32_t *off, const int32_t *next, const int32_t *wpair,
                    int n, int nch, int out_shift) {
  return 0;
}

int pb_bl_hrow_avx2(const uint8_t *src, int row_elems, uint16_t *dst, const int32_t *off, const int32_t *next,
                    const int32_t *wpair, int n, int nch, int mid_shift) {
  return 0;
}

size_t pb_bl_vblend_avx2(const uint8_t *a, const uint8_t *b, int32_t wpair, uint16_t *mid, size_t len,
                         int mid_shift) {
  return 0;
}

int pb_aa_hrow2_u8_avx2(const uint8_t *src0, const uint8_t *src1, int width, uint8_t *dst0, uint8_t *dst1,
                        const int32_t *start, const int32_t *count, const int32_t *weights, int ksize, int out_w,
                        int nch) {
  return 0;
}

int pb_aa_hrow4_u8_avx2(const uint8_t *src, ptrdiff_t stride, int width, uint8_t *dst, size_t len,
                        const int32_t *start, const int32_t *count, const int32_t *pairs, int npairs, int out_w,
                        int nch) {
  return 0;
}

size_t pb_aa_vrow_u8_avx2(const uint8_t *rows, size_t len, const int32_t *k, int n, uint8_t *dst) { return 0; }

#endif

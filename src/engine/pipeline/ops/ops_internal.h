/* Shared by the ops' .c files only: element access by dtype and the window/plane walk. */
#ifndef PB_OPS_INTERNAL_H
#define PB_OPS_INTERNAL_H

#include <string.h>

#include "ops.h"

static inline size_t pb_ops_elem_bytes(pb_dtype t) {
  return t == PB_DTYPE_UINT8 ? 1 : t == PB_DTYPE_FLOAT16 ? 2 : 4;
}

/* Element k of a uint8/float16/float32 array as a float (the slow paths only). */
static inline float pb_ops_load(const void *p, size_t k, pb_dtype t) {
  if (t == PB_DTYPE_UINT8) return ((const uint8_t *)p)[k];
  if (t == PB_DTYPE_FLOAT16) return pb_half_to_float(((const uint16_t *)p)[k]);
  return ((const float *)p)[k];
}

/* Store v as element k: uint8 rounds to nearest and saturates, float16 rounds to nearest even. */
static inline void pb_ops_store(void *p, size_t k, pb_dtype t, float v) {
  if (t == PB_DTYPE_UINT8) {
    float r = v > 0.0f ? (v < 255.0f ? v : 255.0f) : 0.0f; /* NaN -> 0: casting NaN is undefined */
    ((uint8_t *)p)[k] = (uint8_t)(r + 0.5f);
  } else if (t == PB_DTYPE_FLOAT16) {
    ((uint16_t *)p)[k] = pb_float_to_half(v);
  } else {
    ((float *)p)[k] = v;
  }
}

/* ops_why.c: a refusal records its reason (pb_ops_why) and returns -EINVAL. */
int pb_ops_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 0 for an image with data, positive sides and channels and a known dtype; else pb_ops_fail's -EINVAL. */
int pb_ops_check_in(const pb_image *in);
/* The same, and an output with data. */
int pb_ops_check_io(const pb_image *in, const pb_image *out);

/* One interleaved plane to resample: all channels of an HWC image, or one channel of a CHW image.
 * Strides are in elements. */
typedef struct pb_plane {
  char *base;            /* first element of the window */
  ptrdiff_t row_stride;  /* elements between rows */
  int height, width, nch; /* window size; channels interleaved per pixel */
} pb_plane;

pb_plane pb_ops_window_plane(const pb_image *im, int p, int top, int left, int h, int w);
/* 0 when the window lies inside `in` and both images have data; -EINVAL otherwise. */
int pb_ops_check_window(const pb_image *in, int top, int left, int h, int w, const pb_image *out);
void pb_ops_inherit(const pb_image *in, pb_image *out);

/* A vector kernel's result pixel (channel bytes from the low end of px) stored at dst, nch 3 or 4: byte by
 * byte for 3, since a memcpy of a runtime size is a call per pixel. */
static inline void pb_ops_put_pixel(uint8_t *dst, uint32_t px, int nch) {
  if (nch == 4) {
    memcpy(dst, &px, 4);
    return;
  }
  dst[0] = (uint8_t)px;
  dst[1] = (uint8_t)(px >> 8);
  dst[2] = (uint8_t)(px >> 16);
}

/* AVX2 kernels (ops_avx2.c) of the antialiased uint8 resampler and the fused flip/normalize/to_chw tail,
 * exact to their C loops.
 * pb_ops_avx2: the CPU has AVX2 and tests have not turned them off.  Each returns how much of the row(s)
 * it did (output pixels, elements); the caller's C loop does the rest. */
bool pb_ops_avx2(void);
/* Tests have not turned vector kernels off (pb_ops_allow_simd); for SSE2 paths, which every x86-64 has. */
bool pb_ops_simd_allowed(void);
int pb_aa_hrow2_u8_avx2(const uint8_t *src0, const uint8_t *src1, int width, uint8_t *dst0, uint8_t *dst1,
                        const int32_t *start, const int32_t *count, const int32_t *weights, int ksize, int out_w,
                        int nch);
/* Four source rows `stride` bytes apart into four tmp rows `len` apart, 3 or 4 channels, with the taps
 * taken in pairs: `pairs` holds per output pixel `npairs` entries of two int32s, the pair's weights split
 * at bit 11 (weight >> 11, then weight & 2047) as two int16s each (see aa_axis_pair_up). */
int pb_aa_hrow4_u8_avx2(const uint8_t *src, ptrdiff_t stride, int width, uint8_t *dst, size_t len,
                        const int32_t *start, const int32_t *count, const int32_t *pairs, int npairs, int out_w,
                        int nch);
size_t pb_aa_vrow_u8_avx2(const uint8_t *rows, size_t len, const int32_t *k, int n, uint8_t *dst);
/* Plain bilinear's horizontal pass from the blended row `mid` (ops_resample.c, bl_hmid), 3 or 4 channels,
 * two output pixels a step: each pixel's two taps interleaved and multiplied-added with wpair[x]
 * ((1 - fx) | fx << 16) in one vpmaddwd lane, then the C loop's rounding and shift.  Returns how many
 * leading pixels it did (an even count). */
int pb_bl_hmid_avx2(const uint16_t *mid, uint8_t *dst, const int32_t *off, const int32_t *next, const int32_t *wpair,
                    int n, int nch, int out_shift);
/* Plain bilinear's horizontal pass over a source row (bl_hrow_u8, when it goes first), 3 or 4 channels,
 * two output pixels a step, into the Q7 uint16 row the vertical pass blends: the same pmaddwd as
 * pb_bl_hmid_avx2 on the taps' bytes widened to int16.  Loads stay within the row's row_elems elements;
 * returns how many leading pixels it did. */
int pb_bl_hrow_avx2(const uint8_t *src, int row_elems, uint16_t *dst, const int32_t *off, const int32_t *next,
                    const int32_t *wpair, int n, int nch, int mid_shift);
/* Plain bilinear's vertical pass when it goes first (bl_vblend_u8): two source rows blended with
 * wpair ((1 - fy) | fy << 16) into the Q7 uint16 row, 16 elements a step.  Returns the elements done. */
size_t pb_bl_vblend_avx2(const uint8_t *a, const uint8_t *b, int32_t wpair, uint16_t *mid, size_t len,
                         int mid_shift);
/* flip + normalize to float32 + to_chw of one row of W 3-channel pixels (ops_normalize.c's fused tail),
 * 8 output pixels at a time with the same float32 subtract and divide as its tables: returns how many
 * leading output pixels it did. */
int pb_norm_row3_chw_f32_avx2(const uint8_t *src, int W, bool flip, const float mean[3], const float std[3],
                              float *dst, size_t plane);
/* The same with non-temporal stores (dst and plane 32-byte aligned); the caller ends with pb_store_fence. */
int pb_norm_row3_chw_f32_avx2_nt(const uint8_t *src, int W, bool flip, const float mean[3], const float std[3],
                                 float *dst, size_t plane);
/* Orders earlier non-temporal stores before what follows (a hand-off of the buffer). */
void pb_store_fence(void);

#endif

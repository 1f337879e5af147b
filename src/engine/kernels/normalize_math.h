/* The arithmetic of normalize.on_device, shared by the CUDA kernel (cuda_kernels.cu) and the host tests
 * (test_normalize_math.c) so the kernel's indexing is checked where there is no GPU.
 *
 * One batch of n uint8 images, each h x w x c (HWC, or c x h x w when in_chw), becomes n x c x h x w
 * (NCHW) float values (x - mean[ch]) * inv_std[ch], in pixel units as the host normalize op does. */
#ifndef PB_NORMALIZE_MATH_H
#define PB_NORMALIZE_MATH_H

#include <stdint.h>

#ifdef __CUDACC__
#define PB_HD __host__ __device__ __forceinline__
#else
#define PB_HD static inline
#endif

#define PB_NORM_MAX_CHANNELS 4

typedef struct pb_norm_params {
  int n, h, w, c;
  int in_chw;                              /* input layout: 0 HWC, 1 CHW */
  int out_half;                            /* output dtype: 0 float32, 1 float16 */
  float mean[PB_NORM_MAX_CHANNELS];        /* pixel units (0..255) */
  float inv_std[PB_NORM_MAX_CHANNELS];
} pb_norm_params;

/* The input index that output element `o` (NCHW order) reads. */
PB_HD uint64_t pb_norm_src_index(const pb_norm_params *p, uint64_t o) {
  uint64_t hw = (uint64_t)p->h * (uint64_t)p->w, chw = hw * (uint64_t)p->c;
  uint64_t img = o / chw, r = o % chw;
  uint64_t ch = r / hw, pix = r % hw;
  if (p->in_chw) return img * chw + ch * hw + pix;
  return img * chw + pix * (uint64_t)p->c + ch;
}

/* The channel of output element `o`. */
PB_HD int pb_norm_channel(const pb_norm_params *p, uint64_t o) {
  uint64_t hw = (uint64_t)p->h * (uint64_t)p->w;
  return (int)((o / hw) % (uint64_t)p->c);
}

PB_HD float pb_norm_value(const pb_norm_params *p, uint8_t x, int ch) {
  return ((float)x - p->mean[ch]) * p->inv_std[ch];
}

#endif

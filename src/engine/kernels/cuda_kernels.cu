// The device side of pipebench: a step kernel that keeps the GPU busy for a given number of clock cycles,
// and the on-device normalize (uint8 HWC -> float32/float16 NCHW).  Host code (device_cuda.c) is C and
// calls these through the extern "C" launchers below, which return the launch's cudaError_t.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "normalize_math.h"

// Every thread of every block spins until `cycles` SM clocks have passed, so the whole GPU is occupied
// for the step as a training step's kernels would occupy it.  clock64 counts at the SM clock; the host
// converts milliseconds to cycles with a rate calibrated at start-up against CUDA events.
__global__ void pb_spin_kernel(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void pb_normalize_kernel(const uint8_t *in, void *out, pb_norm_params p, uint64_t total) {
  for (uint64_t o = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; o < total;
       o += (uint64_t)gridDim.x * blockDim.x) {
    float v = pb_norm_value(&p, in[pb_norm_src_index(&p, o)], pb_norm_channel(&p, o));
    if (p.out_half)
      ((__half *)out)[o] = __float2half_rn(v);
    else
      ((float *)out)[o] = v;
  }
}

extern "C" int pb_cuda_launch_spin(cudaStream_t stream, int blocks, long long cycles) {
  pb_spin_kernel<<<blocks, 32, 0, stream>>>(cycles);
  return (int)cudaGetLastError();
}

extern "C" int pb_cuda_launch_normalize(cudaStream_t stream, const uint8_t *in, void *out, const pb_norm_params *p,
                                        int sm_count) {
  uint64_t total = (uint64_t)p->n * p->c * p->h * p->w;
  if (total == 0) return 0;
  uint64_t want = (total + 255) / 256;
  unsigned blocks = (unsigned)(want < (uint64_t)sm_count * 8 ? want : (uint64_t)sm_count * 8);
  pb_normalize_kernel<<<blocks, 256, 0, stream>>>(in, out, *p, total);
  return (int)cudaGetLastError();
}

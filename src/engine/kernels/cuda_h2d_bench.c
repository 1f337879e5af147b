/* Built only with a CUDA toolkit: the host-to-device ceiling for `pipebench calibrate`.  A plain copy
 * loop, nothing of pipebench's engine: cudaMemcpyAsync of one buffer to GPU 0 on one stream, timed with
 * CUDA events, from pinned (cudaMallocHost) or pageable (malloc) memory.  The median of the repetitions is
 * the ceiling the h2d stage is put against. */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "stats.h"

#define H2D_CK(call)                                                                                     \
  do {                                                                                                   \
    cudaError_t e_ = (call);                                                                             \
    if (e_ != cudaSuccess) {                                                                             \
      snprintf(why, why_len, "%s: %s", #call, cudaGetErrorName(e_));                                      \
      rc = -EIO;                                                                                         \
      goto out;                                                                                          \
    }                                                                                                    \
  } while (0)

int pb_cuda_h2d_gb_per_s(size_t bytes, bool pinned, int reps, double *gb_per_s, char *why, size_t why_len) {
  int rc = 0;
  void *host = NULL, *dev = NULL;
  cudaStream_t stream = NULL;
  cudaEvent_t start = NULL, end = NULL;
  double rate[64];
  if (reps > 64) reps = 64;
  *gb_per_s = NAN;
  H2D_CK(cudaSetDevice(0));
  if (pinned) H2D_CK(cudaMallocHost(&host, bytes));
  else if (!(host = malloc(bytes))) return snprintf(why, why_len, "out of memory"), -ENOMEM;
  memset(host, 1, bytes); /* pageable pages must exist before they are timed */
  H2D_CK(cudaMalloc(&dev, bytes));
  H2D_CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  H2D_CK(cudaEventCreate(&start));
  H2D_CK(cudaEventCreate(&end));
  H2D_CK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream)); /* warm-up */
  H2D_CK(cudaStreamSynchronize(stream));
  for (int i = 0; i < reps; i++) {
    float ms = 0;
    H2D_CK(cudaEventRecord(start, stream));
    H2D_CK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream));
    H2D_CK(cudaEventRecord(end, stream));
    H2D_CK(cudaEventSynchronize(end));
    H2D_CK(cudaEventElapsedTime(&ms, start, end));
    rate[i] = ms > 0 ? (double)bytes / (ms * 1e6) : NAN;
  }
  *gb_per_s = pb_percentile(rate, (size_t)reps, 50);
out:
  if (start) cudaEventDestroy(start);
  if (end) cudaEventDestroy(end);
  if (stream) cudaStreamDestroy(stream);
  if (dev) cudaFree(dev);
  if (host && pinned) cudaFreeHost(host);
  else free(host);
  return rc;
}

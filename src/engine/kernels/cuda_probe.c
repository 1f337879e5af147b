/* Built only with a CUDA toolkit: asks the CUDA runtime whether a GPU is usable.  On a machine without a
 * driver or GPU cudaGetDeviceCount fails, and the error (its name and text) is what the user is told. */
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "device.h"

int pb_cuda_device_count(char *name, size_t name_len, char *why, size_t why_len) {
  int count = 0;
  if (name_len) name[0] = '\0';
  cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    snprintf(why, why_len, "cudaGetDeviceCount: %s (%s)", cudaGetErrorName(rc), cudaGetErrorString(rc));
    return 0;
  }
  if (count <= 0) {
    snprintf(why, why_len, "cudaGetDeviceCount found 0 GPUs");
    return 0;
  }
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) snprintf(name, name_len, "%s", prop.name);
  return count;
}

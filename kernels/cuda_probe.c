/* Built only with a CUDA toolkit: asks the CUDA runtime whether a GPU is usable.  On a machine without a
 * driver cudaGetDeviceCount fails, which simply means "no GPU". */
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "device.h"

int pb_cuda_device_count(char *name, size_t name_len) {
  int count = 0;
  if (name_len) name[0] = '\0';
  if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) return 0;
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) snprintf(name, name_len, "%s", prop.name);
  return count;
}

/* Choosing and calling the device.  This version drives the emulated device only; with --device auto
 * it says so once when a CUDA GPU is present, and --device gpu is refused rather than faked. */
#include <errno.h>
#include <stdio.h>

#include "device.h"

#ifndef PB_HAVE_CUDA
int pb_cuda_device_count(char *name, size_t name_len) {
  if (name_len) name[0] = '\0';
  return 0;
}
#endif

int pb_device_open(pb_device *d, const pb_config *cfg, pb_device_kind kind, char *notice, size_t notice_len,
                   pb_err *err) {
  char gpu_name[128];
  int gpus = kind == PB_DEVICE_EMULATED ? 0 : pb_cuda_device_count(gpu_name, sizeof gpu_name);
  if (notice_len) notice[0] = '\0';
  if (kind == PB_DEVICE_GPU) {
    pb_err_set(err,
               "device.kind: gpu was asked for, but %s (expected --device emulated or auto; the CUDA "
               "device path is not in this version)",
               gpus > 0 ? "this version cannot drive a CUDA GPU yet" : "no usable CUDA GPU was found");
    return -ENODEV;
  }
  if (kind == PB_DEVICE_AUTO && gpus > 0)
    snprintf(notice, notice_len,
             "found %d CUDA GPU(s) (%s), but this version drives only the emulated device; using it", gpus,
             gpu_name);
  else if (kind == PB_DEVICE_AUTO)
    snprintf(notice, notice_len, "no usable CUDA GPU; using the emulated device");
  pb_device_emulated_init(d, cfg);
  return 0;
}

int pb_device_h2d(pb_device *d, const pb_elem *batch, uint64_t *start_ns, uint64_t *end_ns) {
  return d->ops->h2d(d, batch, start_ns, end_ns);
}

int pb_device_step(pb_device *d, int index, const pb_elem *batch, uint64_t *start_ns, uint64_t *end_ns) {
  return d->ops->step(d, index, batch, start_ns, end_ns);
}

void pb_device_close(pb_device *d) {
  if (d->ops && d->ops->close) d->ops->close(d);
  d->ops = NULL;
}

/* Choosing and calling the device.  --device gpu drives CUDA GPUs (device_cuda.c) or exits 1 naming the
 * CUDA error; auto takes a usable GPU and otherwise falls back to the emulated device with one line on
 * stderr; emulated never touches CUDA. */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "device.h"

#ifndef PB_HAVE_CUDA
int pb_cuda_device_count(char *name, size_t name_len, char *why, size_t why_len) {
  if (name_len) name[0] = '\0';
  snprintf(why, why_len, "this pipebench was built without CUDA (no toolkit at build time)");
  return 0;
}

int pb_cuda_h2d_gb_per_s(size_t bytes, bool pinned, int reps, double *gb_per_s, char *why, size_t why_len) {
  (void)bytes, (void)pinned, (void)reps;
  *gb_per_s = NAN;
  snprintf(why, why_len, "this pipebench was built without CUDA");
  return -ENODEV;
}

int pb_device_cuda_open(pb_device *d, const pb_config *cfg, int gpus_found, pb_err *err) {
  (void)d, (void)cfg, (void)gpus_found;
  return pb_err_setc(err, -ENODEV, "device.kind: gpu: this pipebench was built without CUDA");
}
#endif

int pb_device_open(pb_device *d, const pb_config *cfg, pb_device_kind kind, char *notice, size_t notice_len,
                   pb_err *err) {
  char gpu_name[128], why[256] = "";
  int gpus = kind == PB_DEVICE_EMULATED ? 0 : pb_cuda_device_count(gpu_name, sizeof gpu_name, why, sizeof why);
  if (notice_len) notice[0] = '\0';
  if (kind == PB_DEVICE_GPU && gpus <= 0)
    return pb_err_setc(err, -ENODEV,
                       "device.kind: gpu was asked for, but no usable CUDA GPU was found: %s (expected a "
                       "machine with an NVIDIA GPU and driver, or --device emulated)",
                       why);
  if (gpus > 0) {
    int rc = pb_device_cuda_open(d, cfg, gpus, err);
    if (rc == 0 || kind == PB_DEVICE_GPU) return rc;
    snprintf(notice, notice_len, "found %d CUDA GPU(s) but cannot use them (%s); using the emulated device", gpus,
             err->msg);
    pb_device_emulated_init(d, cfg);
    return 0;
  }
  if (kind == PB_DEVICE_AUTO) snprintf(notice, notice_len, "no usable CUDA GPU (%s); using the emulated device", why);
  pb_device_emulated_init(d, cfg);
  return 0;
}

int pb_device_h2d(pb_device *d, int index, pb_elem *batch, pb_h2d_times *t) {
  return d->ops->h2d(d, index, batch, t);
}

bool pb_device_can_launch(const pb_device *d, const pb_elem *batch) {
  return d->ops->launch && batch->h2d_end_ns; /* without an h2d stage the copy is part of the step */
}

int pb_device_launch(pb_device *d, int index, pb_elem *batch) {
  return d->ops->launch(d, index, batch);
}

int pb_device_step(pb_device *d, int index, pb_elem *batch, uint64_t ready_ns, uint64_t *start_ns,
                   uint64_t *end_ns) {
  return d->ops->step(d, index, batch, ready_ns, start_ns, end_ns);
}

void pb_device_discard(pb_device *d, pb_elem *batch) {
  if (d->ops && d->ops->discard) d->ops->discard(d, batch);
}

void pb_device_cancel(pb_device *d) {
  if (d->ops && d->ops->cancel) d->ops->cancel(d);
}

void pb_device_finish(pb_device *d, struct pb_step *steps, size_t nsteps, uint64_t window_start_ns,
                      uint64_t window_end_ns) {
  if (d->ops && d->ops->finish) d->ops->finish(d, steps, nsteps, window_start_ns, window_end_ns);
}

void pb_device_close(pb_device *d) {
  if (d->ops && d->ops->close) d->ops->close(d);
  d->ops = NULL;
}

const char *pb_device_error(const pb_device *d) { return d->error; }

int pb_device_default_id(int local_rank, int count, int i, int gpus) {
  if (gpus < 1) return 0;
  return (int)(((long long)local_rank * count + i) % gpus);
}

double pb_device_draw_step_ms(pb_device *d, int index) {
  double ms = d->step_ms;
  if (d->step_normal) ms = pb_rng_normal(&d->rng[index], d->step_ms, d->step_stdev_ms);
  return ms > 0 ? ms : 0;
}

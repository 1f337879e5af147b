/* The device a pipeline feeds: it copies batches host-to-device and runs one step per batch.
 *
 * One interface, two implementations that produce the same timeline: the emulated device
 * (device_emulated.c: a copy engine at device.h2d_gb_per_s and a step of device.step_ms, neither using
 * host CPU) and, in a later version, CUDA.  Every call reports the interval it really took on the host's
 * monotonic clock (pb_now_ns), which is what the analysis reads. */
#ifndef PB_DEVICE_H
#define PB_DEVICE_H

#include <stdint.h>
#include <uv.h>

#include "common.h"
#include "config.h"
#include "elem.h"

typedef struct pb_device pb_device;

typedef struct pb_device_ops {
  /* Copies a batch to the device; waits until the copy is done. */
  int (*h2d)(pb_device *d, const pb_elem *batch, uint64_t *start_ns, uint64_t *end_ns);
  /* Runs the step for a batch already on device `index`; waits until it is done. */
  int (*step)(pb_device *d, int index, const pb_elem *batch, uint64_t *start_ns, uint64_t *end_ns);
  void (*close)(pb_device *d);
} pb_device_ops;

struct pb_device {
  const pb_device_ops *ops;
  const char *kind;            /* "gpu" | "emulated" (report: device.kind) */
  const char *timing_source;   /* "cupti" | "cuda_events" | "emulated" */
  char name[128];
  int count;
  /* emulated */
  double h2d_gb_per_s;
  uv_mutex_t copy_lock;        /* one copy engine shared by every copy */
  uint64_t copy_free_at_ns;
  bool step_normal;
  double step_ms, step_stdev_ms;
  pb_rng rng[PB_MAX_DEVICES];  /* per device: step-time draws are reproducible with the seed */
};

/* Opens the device of `kind` (auto: a usable CUDA GPU, else emulated).  `notice` receives a one-line
 * remark for stderr when auto fell back (empty otherwise).  Returns 0, or -ENODEV with err set when a
 * GPU was required and cannot be used. */
int pb_device_open(pb_device *d, const pb_config *cfg, pb_device_kind kind, char *notice, size_t notice_len,
                   pb_err *err);
int pb_device_h2d(pb_device *d, const pb_elem *batch, uint64_t *start_ns, uint64_t *end_ns);
int pb_device_step(pb_device *d, int index, const pb_elem *batch, uint64_t *start_ns, uint64_t *end_ns);
void pb_device_close(pb_device *d);

/* The emulated implementation (always available). */
void pb_device_emulated_init(pb_device *d, const pb_config *cfg);

/* CUDA presence (cuda_probe.c when built with CUDA; 0 otherwise).  Fills name with GPU 0's name. */
int pb_cuda_device_count(char *name, size_t name_len);

#endif

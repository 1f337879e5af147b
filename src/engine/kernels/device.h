/* The device a pipeline feeds: it copies batches host-to-device and runs one step per batch.
 *
 * One interface, two implementations that produce the same timeline: the emulated device
 * (device_emulated.c: a copy engine at device.h2d_gb_per_s and a step of device.step_ms, neither using
 * host CPU) and CUDA (device_cuda.c: pinned host buffers, a copy stream per `streams`, a compute stream,
 * device double buffering, a clock-calibrated step kernel, CUPTI or CUDA-event timestamps).  Every call
 * reports the interval it really took on the host's monotonic clock (pb_now_ns), which is what the
 * analysis reads; a GPU's own timeline (CUPTI) replaces those intervals after the run (finish). */
#ifndef PB_DEVICE_H
#define PB_DEVICE_H

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "common.h"
#include "config.h"
#include "elem.h"
#include "pool.h"
#include "record_types.h"

typedef struct pb_device pb_device;
struct pb_step;

/* What one host-to-device copy took.  The wait for a free device buffer (the device is behind) is
 * backpressure, not copy time: the h2d stage counts it as blocked. */
typedef struct pb_h2d_times {
  uint64_t start_ns, end_ns;           /* the copy itself */
  uint64_t wait_start_ns, wait_end_ns; /* waiting for a device buffer (equal when there was no wait) */
} pb_h2d_times;


typedef struct pb_device_ops {
  /* Copies a batch to device `index` (-1: the device takes the next in round-robin order and notes it
   * in batch->device); waits until the copy is done.  0, -ECANCELED, or -EIO (pb_device_error says). */
  int (*h2d)(pb_device *d, int index, pb_elem *batch, pb_h2d_times *t);
  /* Runs the step for a batch already on device `index`; waits until it is done.  ready_ns is the
   * earliest the step could start: the batch was on the device and the device's previous step over.
   * The emulated device starts the step then (see device_emulated.c); a GPU starts it when its launch
   * reaches it. */
  int (*step)(pb_device *d, int index, pb_elem *batch, uint64_t ready_ns, uint64_t *start_ns, uint64_t *end_ns);
  /* Optional (NULL: the device does not queue ahead).  Starts the step for a batch already on device
   * `index` without waiting for it, behind the steps already launched there, as a training loop queues its
   * next step while the GPU runs the current one; its `step` call then waits for it and reports its
   * times.  0 or -EIO. */
  int (*launch)(pb_device *d, int index, pb_elem *batch);
  /* The batch will not be stepped (the run ended): free what its copy holds on the device (after its
   * launched step, if any, is over). */
  void (*discard)(pb_device *d, pb_elem *batch);
  /* Wakes every thread waiting inside the device (the run is cancelled). */
  void (*cancel)(pb_device *d);
  /* After the run: replace the step intervals with the device's own timeline where it has one. */
  void (*finish)(pb_device *d, struct pb_step *steps, size_t nsteps, uint64_t window_start_ns,
                 uint64_t window_end_ns);
  void (*close)(pb_device *d);
} pb_device_ops;


struct pb_device {
  const pb_device_ops *ops;
  const char *kind;            /* "gpu" | "emulated" (report: device.kind) */
  const char *timing_source;   /* "cupti" | "cuda_events" | "emulated" */
  char timing_source_reason[256]; /* why CUPTI is not the source on a GPU ("" otherwise) */
  char name[128];
  int count;
  int ids[PB_MAX_DEVICES];     /* GPU ids (device.ids, or 0..count-1) */
  char names[PB_MAX_DEVICES][64];
  bool assigns_at_h2d;         /* a copy fixes the batch's device: steps deal by batch->device */
  bool pinned_host;            /* batch buffers come from host_mem (pinned) */
  pb_pool_mem host_mem;        /* the batch pool's allocator when pinned_host (pinned memory) */
  pb_step_kernel_check step_kernel;
  double idle_pct_cuda_events; /* the CUDA-event timeline's idle %, when CUPTI's replaced it (else NAN) */
  uint64_t gpu_timestamps_dropped; /* CUPTI records with zero or inverted timestamps, filtered out */
  char error[256];             /* the last failed device call, for messages */
  /* emulated */
  double h2d_gb_per_s;
  uv_mutex_t copy_lock;        /* one copy engine shared by every copy */
  uint64_t copy_free_at_ns;
  bool step_normal;
  double step_ms, step_stdev_ms;
  pb_rng rng[PB_MAX_DEVICES];  /* per device: step-time draws are reproducible with the seed */
  atomic_uint next_device;     /* round-robin dealing of copies */
  atomic_bool cancelled;       /* pb_device_cancel: a step's sleep ends (an error stop, not only a signal) */
  void *impl;                  /* the CUDA implementation's state */
};

/* Opens the device of `kind` (auto: a usable CUDA GPU, else emulated).  `notice` receives a one-line
 * remark for stderr when auto fell back (empty otherwise).  Returns 0, or a negative errno with err set
 * when a GPU was required and cannot be used (or failed to start). */
int pb_device_open(pb_device *d, const pb_config *cfg, pb_device_kind kind, char *notice, size_t notice_len,
                   pb_err *err);
int pb_device_h2d(pb_device *d, int index, pb_elem *batch, pb_h2d_times *t);
int pb_device_step(pb_device *d, int index, pb_elem *batch, uint64_t ready_ns, uint64_t *start_ns,
                   uint64_t *end_ns);
/* Whether the device can start a step ahead (pb_device_launch) for a batch its h2d stage copied. */
bool pb_device_can_launch(const pb_device *d, const pb_elem *batch);
int pb_device_launch(pb_device *d, int index, pb_elem *batch);
void pb_device_discard(pb_device *d, pb_elem *batch);
void pb_device_cancel(pb_device *d);
void pb_device_finish(pb_device *d, struct pb_step *steps, size_t nsteps, uint64_t window_start_ns,
                      uint64_t window_end_ns);
void pb_device_close(pb_device *d);
/* The last device error as text ("" when none). */
const char *pb_device_error(const pb_device *d);

/* The emulated implementation (always available). */
void pb_device_emulated_init(pb_device *d, const pb_config *cfg);
/* The step length to emulate or run for step number `index` of a device (constant or a normal draw). */
double pb_device_draw_step_ms(pb_device *d, int index);

/* The GPU a device of this process takes when device.ids is not given: rank local_rank of the ranks on this
 * host takes devices local_rank x count .. + count - 1, wrapped over the host's gpus (one device per rank:
 * GPU local_rank % gpus). */
int pb_device_default_id(int local_rank, int count, int i, int gpus);

/* CUDA presence (cuda_probe.c when built with CUDA).  Returns the number of usable GPUs (0 when none,
 * with `why` naming the CUDA error) and GPU 0's name. */
int pb_cuda_device_count(char *name, size_t name_len, char *why, size_t why_len);
/* `pipebench calibrate`: host-to-device bandwidth to GPU 0 in GB/s (10^9 bytes/s), the median of `reps`
 * timed copies of `bytes` from pinned or pageable memory (cuda_h2d_bench.c).  0, or -errno with `why`. */
int pb_cuda_h2d_gb_per_s(size_t bytes, bool pinned, int reps, double *gb_per_s, char *why, size_t why_len);
/* The CUDA implementation (device_cuda.c; without CUDA it refuses). */
int pb_device_cuda_open(pb_device *d, const pb_config *cfg, int gpus_found, pb_err *err);

#endif

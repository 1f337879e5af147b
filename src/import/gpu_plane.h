/* The GPU planes of a TensorFlow Profiler capture ("/device:GPU:N", written by XLA's CUPTI collector): the
 * kernels each device ran and the copies it made, for the device's busy time and the host-to-device share of
 * the steps (issue 35).  An event is a kernel when it carries a `kernel_details` stat, a copy when it carries
 * `memcpy_details` ("kind_src:pinned kind_dst:device size:602112 dest:0 async:1"; without that stat, a name
 * "MemcpyH2D", "MemcpyD2H", ...).  Anything else on the plane (memsets, allocations, the derived lines a
 * viewer adds) is left out: it is neither the device computing nor the input arriving. */
#ifndef PB_IMPORT_GPU_PLANE_H
#define PB_IMPORT_GPU_PLANE_H

#include <stddef.h>
#include <stdint.h>

#include "xspace.h"

typedef enum pb_gpu_op_kind { PB_GPU_KERNEL = 1, PB_GPU_H2D, PB_GPU_D2H, PB_GPU_D2D } pb_gpu_op_kind;

typedef struct pb_gpu_op {
  int64_t start_ps, end_ps; /* the capture's clock, as the host plane's */
  uint64_t bytes;           /* a copy's size (0: a kernel, or not said) */
  int kind;                 /* pb_gpu_op_kind */
  int device;               /* N of "/device:GPU:N" */
} pb_gpu_op;

typedef struct pb_gpu_activity {
  int ndevices;   /* GPU planes seen (0: a CPU-only capture) */
  pb_gpu_op *ops; /* every kernel and copy of every device, in start order (owned) */
  size_t nops, cap;
  size_t nkernels, nh2d;
} pb_gpu_activity;

/* Reads every "/device:GPU:N" plane of x into *out (pb_gpu_free it).  0 (with ndevices 0 when there is
 * none), or -ENOMEM. */
int pb_gpu_read(const pb_xspace *x, pb_gpu_activity *out);
void pb_gpu_free(pb_gpu_activity *g);

/* What a copy's `memcpy_details` says of its direction and size: the kind, or 0 when it names no direction
 * (bytes is then left alone). */
int pb_gpu_memcpy_kind(const char *details, uint64_t *bytes);

/* The time in [t0_ps, t1_ps) during which at least one kernel of any device ran, in ps: the union of the
 * kernels, not their sum (streams overlap). */
int64_t pb_gpu_kernel_busy_ps(const pb_gpu_activity *g, int64_t t0_ps, int64_t t1_ps);

#endif

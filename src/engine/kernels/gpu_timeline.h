/* The GPU's own timeline of a run, merged into the steps.
 *
 * A tracer (cupti_trace.c) hands over raw activity records in whatever order they arrive: kernels and
 * host-to-device copies, each with the CUDA correlation id of the API call that issued it, and
 * "external" records that tie a correlation id to an id of ours.  The device pushes the batch's trace
 * key (pb_step.key) as that external id around the calls of a batch: kind COMPUTE around its step,
 * kind COPY around its host-to-device copy.  pb_gpu_timeline_apply joins the two and replaces the
 * host-observed h2d/compute intervals of every step with the intervals the GPU really spent on them.
 *
 * Pure C, no CUDA headers: it is always built and unit-tested without a GPU.
 *
 * Thread safety: none.  A timeline is a plain growable container; the caller serialises every call
 * (the CUPTI tracer adds under its own mutex, and applies only after it has stopped collecting). */
#ifndef PB_GPU_TIMELINE_H
#define PB_GPU_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pb_step; /* steps.h: kept out of here so the tracer does not pull in the engine's headers */

/* Kinds of external correlation: what the device was doing for the batch when it pushed the key. */
enum { PB_GPU_EXT_COMPUTE = 0, PB_GPU_EXT_COPY = 1 };

/* One kernel or host-to-device copy, as reported by the tracer (times on pb_now_ns's clock). */
typedef struct pb_gpu_activity {
  uint64_t start_ns, end_ns;
  uint64_t bytes;            /* copies only */
  uint32_t correlation_id;   /* of the CUDA API call that issued it */
  uint32_t device_id;        /* CUDA device id: kept for diagnostics; the join is by key alone (keys are
                              * unique across devices, and step.device is an index, not a CUDA id) */
  uint8_t ext_kind;          /* which external kind it belongs to: kernels COMPUTE, copies COPY */
} pb_gpu_activity;

/* correlation id -> external id of one kind.  seq keeps arrival order for a stable join. */
typedef struct pb_gpu_external {
  uint64_t external_id;
  uint32_t correlation_id;
  uint32_t seq;
  uint8_t kind;
} pb_gpu_external;

typedef struct pb_gpu_timeline {
  pb_gpu_activity *act;
  size_t nact, act_cap;
  pb_gpu_external *ext;
  size_t next, ext_cap;
  uint64_t dropped_invalid;  /* records with a zero or inverted interval (no timing collected) */
  uint64_t ignored_memcpy;   /* device-to-host, device-to-device, ...: not part of feeding the GPU */
  uint64_t dropped_records;  /* lost by the tracer (CUPTI had no buffer, or no memory to keep them) */
} pb_gpu_timeline;

/* What pb_gpu_timeline_apply did. */
typedef struct pb_gpu_apply_stats {
  size_t compute_rewritten;  /* steps whose compute interval was rewritten */
  size_t h2d_rewritten;      /* steps whose h2d interval was rewritten */
  size_t no_record;          /* steps without any GPU record */
  size_t rejected;           /* steps left untouched: GPU compute would start before the copy ended */
  uint64_t unmatched;        /* kernels/copies whose external id is no step's key */
  uint64_t uncorrelated;     /* kernels/copies without an external record of their kind */
  uint64_t h2d_bytes;        /* bytes of the copies that were applied to a step */
} pb_gpu_apply_stats;

void pb_gpu_timeline_init(pb_gpu_timeline *tl);
void pb_gpu_timeline_free(pb_gpu_timeline *tl);

/* Each returns 0, or -ENOMEM (the record is lost, the timeline stays usable).  Invalid intervals
 * (start 0, end 0, end < start) are not stored and count in dropped_invalid. */
int pb_gpu_timeline_add_kernel(pb_gpu_timeline *tl, uint32_t correlation_id, uint32_t device_id,
                               uint64_t start_ns, uint64_t end_ns);
/* Only host-to-device copies are kept; the others count in ignored_memcpy. */
int pb_gpu_timeline_add_memcpy(pb_gpu_timeline *tl, uint32_t correlation_id, uint32_t device_id,
                               uint64_t start_ns, uint64_t end_ns, uint64_t bytes, bool host_to_device);
/* kind: PB_GPU_EXT_COMPUTE or PB_GPU_EXT_COPY (-EINVAL otherwise). */
int pb_gpu_timeline_add_external(pb_gpu_timeline *tl, uint32_t correlation_id, int kind, uint64_t external_id);

/* Rewrites the steps from the GPU records: for each step, the kernels correlated to (COMPUTE, key) give
 * compute_start_ns = their earliest start and compute_end_ns = their latest end; the copies correlated
 * to (COPY, key) give h2d_start_ns/h2d_end_ns the same way (a batch may be copied in several chunks).
 * Only intervals with records are overwritten.  A step whose resulting compute would start before its
 * resulting copy ended (impossible on a real GPU: a sign of a wrong correlation) is left as it was.
 *
 * prev_end_ns and ready_ns are never touched, even where a rewritten interval now starts before them
 * (GPU work was queued before the host saw the call return): the caller re-derives the step window.
 * bytes, samples and the rest stay too.  The records are sorted in place (apply may be called again).
 * Returns 0 or -ENOMEM (steps untouched).  `out` may be NULL. */
int pb_gpu_timeline_apply(pb_gpu_timeline *tl, struct pb_step *steps, size_t nsteps, pb_gpu_apply_stats *out);

#endif

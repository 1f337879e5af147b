/* CUPTI activity tracing: the GPU's own start/end times of every kernel and host-to-device copy,
 * attributed to batches, so the CUDA device can report what the GPU did rather than what the host saw.
 *
 * Built only with a CUDA toolkit (the file names contain "cupti").  CUPTI is process-global, so is this
 * module: one tracing session at a time.
 *
 * How it fits together:
 *   pb_cupti_start            before the device threads start (ideally before the first CUDA call)
 *   pb_cupti_push/pop         around the CUDA calls of one batch, on the thread that makes them:
 *                             PB_GPU_EXT_COPY around its host-to-device copy, PB_GPU_EXT_COMPUTE around
 *                             its step, with the batch's trace key (pb_step.key) as external id
 *   pb_cupti_stop             after the device threads have joined: flushes and hands the records over
 *   pb_gpu_timeline_apply     merges them into the steps (gpu_timeline.h)
 *
 * GPU timestamps are taken on pb_now_ns's clock (a CUPTI timestamp callback), so they land on the
 * host's timeline next to every other event of the run.  Only runtime-API calls are correlated
 * (CUPTI_ACTIVITY_KIND_RUNTIME): work launched through the driver API directly is not attributed. */
#ifndef PB_CUPTI_TRACE_H
#define PB_CUPTI_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_timeline.h"

/* Starts tracing.  0, or -1 with a one-line reason (the CUPTI call, its error, a hint) after undoing
 * what was set up: the caller then times with CUDA events instead.  Not thread-safe against stop. */
int pb_cupti_start(char *reason, size_t reason_len);

/* Tags the calling thread's next CUDA calls with (kind, external_id) until the matching pop.
 * kind: PB_GPU_EXT_COMPUTE or PB_GPU_EXT_COPY.  No-ops when tracing is not active; a failure is not
 * fatal (the calls just stay unattributed) and counts in pb_cupti_push_errors.  Any thread. */
void pb_cupti_push(int kind, uint64_t external_id);
void pb_cupti_pop(int kind);
/* Failed pushes and pops since the last pb_cupti_start. */
uint64_t pb_cupti_push_errors(void);

/* Flushes every pending record, stops tracing and moves what was collected into *out (always
 * initialised; the caller frees it with pb_gpu_timeline_free).  out->dropped_records counts records
 * lost (CUPTI had no buffer, or no memory to keep them).  0, with reason empty or noting lost records;
 * -1 with a reason when tracing was not active or the flush/disable failed (then *out may be
 * incomplete: keep the host's timings). */
int pb_cupti_stop(pb_gpu_timeline *out, char *reason, size_t reason_len);

#endif

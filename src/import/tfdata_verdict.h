/* What a TensorFlow Profiler capture says of its tf.data pipeline by itself, before any twin runs (issue 35):
 * the steps' share waiting for input, each iterator's capacity in samples per second, the slowest one, and
 * advice in tf.data's own terms (num_parallel_calls, prefetch, cache) with the samples/s a capacity model
 * predicts.
 *
 * The model: an iterator's capacity is its parallelism over its functions' mean latency, or one over its own
 * time per call, in samples (elements before the batch, batches after it); the device takes a batch per mean
 * step time less input wait.  Input-bound (5 % of the steps' time or more waiting): the bottleneck is the
 * iterator of the lowest capacity, unless even that one reaches the device's rate (then the steps wait for
 * want of overlap, not of speed); else the device.  A prediction is the lowest of the device's rate and the
 * capacities after the change. */
#ifndef PB_TFDATA_VERDICT_H
#define PB_TFDATA_VERDICT_H

#include "tfdata.h"

#define PB_TF_MAX_ADVICE 4
#define PB_TF_INPUT_BOUND_PCT 5.0 /* the profiler's "moderately input-bound" threshold */

typedef struct pb_tf_advice {
  char text[320];              /* "num_parallel_calls=2 on fused(MapDataset:2,BatchDatasetV2:3) (now 1)" */
  int iterator;                /* the iterator it changes, -1: the pipeline's end (prefetch) or the machine */
  double predicted_per_s;      /* samples/s after it; NAN: not predicted */
} pb_tf_advice;

typedef struct pb_tf_verdict {
  double input_bound_pct;      /* pb_tfdata_input_bound_pct */
  int64_t batch_size;          /* samples per step: the first batching iterator's; 1 without one */
  double step_ms, device_ms;   /* means over the steps after the first: the step, the step less the pipeline's part
                               * of its wait (pb_tfdata_step_ms) */
  double h2d_ms;               /* of device_ms, the step's own copies to the device (0 without GPU planes) */
  double actual_per_s;         /* batch_size / step_ms */
  double device_per_s;         /* batch_size / device_ms: what the device would take */
  int bottleneck;              /* iterator index; -1: none (not input-bound, every iterator keeps up, no steps) */
  bool keeps_up;               /* input-bound, yet every iterator's capacity reaches the device's rate: the wait
                                * is not throughput but overlap (a batch made inside the step) */
  double capacity_per_s[PB_TF_MAX_ITERATORS]; /* samples/s; NAN where unknown (prefetch, the root) */
  int nadvice;
  pb_tf_advice advice[PB_TF_MAX_ADVICE]; /* the most predicted gain first */
} pb_tf_verdict;

void pb_tfdata_verdict(const pb_tfdata *t, pb_tf_verdict *v);

#endif

/* How busy the cores were with a tf.data job's function executions (its `ExecutorState::Process` events), to
 * tell a function run's waits for a core from its waits for anything else (tfdata.h `waits`): a twin's own
 * threads contend for the cores as the job's did, so only the other waits become its `sleep`.
 *
 * Plain data over picosecond spans; nothing here knows the capture's format. */
#ifndef PB_TF_BUSY_H
#define PB_TF_BUSY_H

#include <stddef.h>
#include <stdint.h>

/* [start_ps, end_ps); empty (end_ps <= start_ps) spans are not executions and are skipped. */
typedef struct pb_tf_span {
  int64_t start_ps, end_ps;
} pb_tf_span;

/* How many executions ran at once, as a step function: from t_ps[i] until t_ps[i + 1] (for the last, on),
 * count[i] of them. */
typedef struct pb_tf_busy {
  int64_t *t_ps;
  int *count;
  size_t n;
} pb_tf_busy;

/* From every execution of the capture (n spans).  0 or -ENOMEM (then *b is empty). */
int pb_tf_busy_build(const pb_tf_span *execs, size_t n, pb_tf_busy *b);
void pb_tf_busy_free(pb_tf_busy *b);
/* The part of [from_ps, to_ps) during which `cores` or more executions ran; 0 when cores is not known (<= 0). */
int64_t pb_tf_busy_ps(const pb_tf_busy *b, int64_t from_ps, int64_t to_ps, int cores);
/* One function run's waits: the gaps between its executions (run[0..n), in start order; overlapping ones
 * merged) less their part when `cores` or more executions ran.  Not the time before its first execution or
 * after its last. */
int64_t pb_tf_run_waits_ps(const pb_tf_span *run, size_t n, const pb_tf_busy *b, int cores);

#endif

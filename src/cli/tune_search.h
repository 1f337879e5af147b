/* `pipebench tune`'s search arithmetic (docs/TUNING.md), as pure functions: the knobs' allowed values and
 * the steps between them, the threads a stage needs for a rate (with headroom), the cores rule, the
 * allocation of threads to stages, and the pick among candidates.
 * tune.c runs the trials and reads the model; the decisions are here so the unit tests reach them
 * (tests/unit/test_tune.c). */
#ifndef PB_TUNE_SEARCH_H
#define PB_TUNE_SEARCH_H

#include <stdbool.h>

#include "common.h"
#include "config.h"
#include "tune_result.h" /* the knobs and points */

#define PB_TUNE_HEADROOM 1.10 /* allocation: threads for 10 % more than the target rate */

/* What the search reads of a trial's model of the pipeline, per knob (for threads knobs). */
typedef struct pb_tune_rates {
  double thread_s[PB_TUNE_MAX_KNOBS]; /* one thread's seconds per delivered sample on an idle machine */
  double bw_cap[PB_TUNE_MAX_KNOBS];   /* a read's bandwidth cap, samples/s (INFINITY: none) */
  bool cpu_bound[PB_TUNE_MAX_KNOBS], valid[PB_TUNE_MAX_KNOBS];
} pb_tune_rates;

/* The knob's smallest and largest allowed value. */
int pb_tune_knob_min(const pb_tune_knob *k);
int pb_tune_knob_max(const pb_tune_knob *k);

/* The smallest allowed value >= want (the largest when none is); the largest <= want (the smallest when none
 * is).  Within 1e-9 counts as equal. */
int pb_tune_snap_up(const pb_tune_knob *k, double want);
int pb_tune_snap_down(const pb_tune_knob *k, double want);

/* The next allowed value above / below cur, or cur when there is none. */
int pb_tune_step_up(const pb_tune_knob *k, int cur);
int pb_tune_step_down(const pb_tune_knob *k, int cur);

/* A --set list (`path` = texts[0..n)) as the knob's allowed values: integers from 1 to PB_MAX_THREADS,
 * sorted, without repeats (n <= PB_TUNE_MAX_VALUES).  0, or -EINVAL with err set to one line ("tune: --set ...: ...").
 */
int pb_tune_list_values(pb_tune_knob *k, const char *path, const char (*texts)[64], int n, pb_err *err);

/* The base config's value v on the knob: snapped down onto the list, the smallest when below it. */
int pb_tune_base_value(const pb_tune_knob *k, int v);

/* The cores rule: the threads of the CPU-bound stages (by the model) stay within twice the cores plus one
 * per such stage.  Depth knobs and stages the model does not know are not counted. */
bool pb_tune_within_cores(const pb_tune_knob *knobs, int nknobs, const pb_tune_rates *r, const pb_tune_point *p,
                          int ncpu);

/* Knob k's samples/s with `threads` threads each as fast as on an idle machine, within its bandwidth cap. */
double pb_tune_stage_cap(const pb_tune_rates *r, int k, int threads);

/* Threads for `rate` samples/s at `thread_s` seconds per sample per thread, as an allowed value: with
 * PB_TUNE_HEADROOM, except that a listed value reaching the rate itself is not passed over for it. */
int pb_tune_threads_needed(const pb_tune_knob *k, double thread_s, double rate);

/* Plumber's allocation: from `from`, every threads knob the model knows sized for `target` samples/s
 * (pb_tune_threads_needed), then trimmed, a step at a time on the CPU-bound stage with the most slack
 * (capacity / target), until within the cores rule or no stage can give a thread. */
void pb_tune_allocate(const pb_tune_knob *knobs, int nknobs, const pb_tune_rates *r, int ncpu, double target,
                      const pb_tune_point *from, pb_tune_point *out);

typedef struct pb_tune_candidate {
  pb_tune_point p;
  char change[160];
  double predicted;
  bool up_to;   /* the prediction is the device's rate (a recommendation's ceiling) */
  bool explore; /* a step around the best point: picked only when exploring */
} pb_tune_candidate;

/* The candidate predicted best (the first of equals; NAN predictions never), or -1; steps around the best
 * point only when exploring. */
int pb_tune_pick(const pb_tune_candidate *c, int n, bool exploring);

/* Trials allowed: --max-trials when given, else a quarter of a listed space (at least 2) or `fallback`,
 * at most `limit`. */
int pb_tune_max_trials(int given, bool listed, long space_size, int fallback, int limit);

#endif

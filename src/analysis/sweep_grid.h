/* A sweep's grid (docs/TUNING.md "sweep"): the --set lists split into axes, the combinations (the last list
 * varies fastest), the best trial, and what the intervals of repeated trials allow to claim about it.  Pure:
 * no I/O, no config loading (src/cli/sweep.c does that). */
#ifndef PB_SWEEP_GRID_H
#define PB_SWEEP_GRID_H

#include <stdbool.h>
#include <stddef.h>

#include "common.h"
#include "repeat_stats.h"

/* One swept (or, for tune, searched) path and its values. */
#define PB_SWEEP_MAX_AXES 8
#define PB_SWEEP_MAX_VALUES 64
typedef struct pb_axis {
  char path[256];
  int nvalues;
  char values[PB_SWEEP_MAX_VALUES][64];
} pb_axis;

#define PB_SWEEP_MAX_TRIALS 4096

/* Splits the command line's --set list: PATH=V1,V2,.. (a comma in a value that is not a JSON array or
 * object) becomes an axis, anything else stays a fixed override in fixed[].  0, or -EINVAL with err set
 * (too many axes or values, an empty value). */
int pb_sweep_split_sets(const char *const *sets, int nsets, pb_axis *axes, int *naxes, const char **fixed,
                        int *nfixed, pb_err *err);

/* The number of combinations of the axes' values; once past PB_SWEEP_MAX_TRIALS it stops multiplying, so
 * the result is only known to be too many (never an overflow). */
long pb_sweep_combinations(const pb_axis *axes, int naxes);

/* Trial t's value index on axis a (0 <= t < the combinations): the last axis varies fastest. */
int pb_sweep_value_index(const pb_axis *axes, int naxes, int t, int a);

/* The trial with the highest samples/s among those that can be the best (status 0: all its repeats
 * completed; a report; a rate), the first of equal rates; -1 when none.  rows[t]: trial t's figures (with
 * repeats, the medians), status[t]: its status (-1: not run). */
int pb_sweep_best(const pb_run_figures *rows, const int *status, int ntrials);

/* What a sweep with repeats may claim about its best (docs/TUNING.md "sweep --repeat"). */
typedef enum pb_sweep_decision {
  PB_SWEEP_NO_BEST = 0,         /* no trial counted (or one repeat each: nothing to decide) */
  PB_SWEEP_BEST,                /* the best's interval lies above every other trial's that ran */
  PB_SWEEP_NO_DIFFERENCE,       /* another trial's interval overlaps the best's (both covering >= 90 %) */
  PB_SWEEP_UNDECIDED,           /* an interval is missing or covers less than 90 %, or nothing to compare */
} pb_sweep_decision;

/* The decision over n trials: rate[t] the samples/s interval of trial t over the repeats that count,
 * ran[t] whether it ran at all (a trial that ran and has no interval, e.g. its repeats failed, leaves the
 * best undecided), best the trial with the highest median (-1: none).  The best is measurably the best only
 * when its interval and every other trial's that ran decide (pb_interval_decisive) and its interval lies
 * above each; one decisive overlap is "no measurable difference".  When undecided, why (len > 0) says why
 * in words ("too few repeats to tell (coverage 75.0 %)", "trial 3 has no interval: ..", "no other trial
 * ran to compare it with"). */
pb_sweep_decision pb_sweep_decide(const pb_interval *rate, const bool *ran, int n, int best, char *why, size_t len);

#endif

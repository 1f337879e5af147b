/* `pipebench sweep` (docs/CONTRACT.md §1): every combination of the --set PATH=V1,V2,.. lists, one run each, one
 * table (text on stdout, sweep.csv and sweep.json in the output directory), the best marked. */
#ifndef PB_SWEEP_H
#define PB_SWEEP_H

#include "multirun.h"
#include "repeat.h"

/* One swept (or, for tune, searched) path and its values. */
#define PB_SWEEP_MAX_AXES 8
#define PB_SWEEP_MAX_VALUES 64
typedef struct pb_axis {
  char path[256];
  int nvalues;
  char values[PB_SWEEP_MAX_VALUES][64];
} pb_axis;

/* Splits the command line's --set list: PATH=V1,V2,.. (a comma in a value that is not a JSON array or
 * object) becomes an axis, anything else stays a fixed override in fixed[].  0, or -EINVAL with err set
 * (too many axes or values, an empty value). */
int pb_sweep_split_sets(const char *const *sets, int nsets, pb_axis *axes, int *naxes, const char **fixed,
                        int *nfixed, pb_err *err);

/* What pb_sweep_split_sets's comparison of strings misses: one key under two spellings (stages.aug.threads
 * and stages[1].threads), given two lists or a list and a value, of which the later would silently win in
 * every combination while the table shows the other's values.  Resolves the paths against FILE with the
 * fixed overrides applied.  canon (NULL, or naxes entries) receives each axis's resolved path.  0, or
 * -EINVAL with err set (the config does not load, or a key is named twice). */
int pb_sweep_check_keys(const char *file, const pb_axis *axes, int naxes, const char *const *fixed, int nfixed,
                        char (*canon)[PB_CFG_PATH_LEN], pb_err *err);

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

int pb_sweep(pb_multi *m);

#endif

/* `pipebench tune` (docs/CONTRACT.md §1): searches thread counts per stage and prefetch depth for the most samples/s
 * within the machine's cores and limits.max_memory_mb, each step chosen by the analysis' capacity model and
 * verified by a measured run.  See docs/TUNING.md. */
#ifndef PB_TUNE_H
#define PB_TUNE_H

#include "multirun.h"
#include "repeat.h"
#include "tune_result.h"

typedef struct pb_tune_opts {
  double budget_s;              /* --budget-s: no trial starts that would end after it (default 600) */
  const char *write_file;       /* --write FILE: the tuned config */
  int max_trials;               /* 0: a quarter of the space when it is given as lists, else 12 */
} pb_tune_opts;

int pb_tune(pb_multi *m, const pb_tune_opts *o);

/* ---------- the decisions, for the unit tests (docs/TUNING.md) ---------- */
/* (a trial's "up to" ceiling reached and the re-measure's outcome are tune_result.h's) */

/* Seconds the search keeps for the re-measure when it judges --budget-s: none at --repeat 1 (the search
 * runs as it would without a re-measure, which then runs only if the budget left allows it) or while the
 * best is the base config (nothing to re-measure); else pairs x (the base's longest run + the best's). */
double pb_tune_remeasure_reserve_s(int repeats, bool best_is_base, int pairs, double base_run_s, double best_run_s);

#endif

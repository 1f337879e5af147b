/* `pipebench tune` (docs/CONTRACT.md §1): searches thread counts per stage and prefetch depth for the most samples/s
 * within the machine's cores and limits.max_memory_mb, each step chosen by the analysis' capacity model and
 * verified by a measured run.  See docs/TUNING.md. */
#ifndef PB_TUNE_H
#define PB_TUNE_H

#include "multirun.h"
#include "repeat.h"

typedef struct pb_tune_opts {
  double budget_s;              /* --budget-s: no trial starts that would end after it (default 600) */
  const char *write_file;       /* --write FILE: the tuned config */
  int max_trials;               /* 0: a quarter of the space when it is given as lists, else 12 */
} pb_tune_opts;

int pb_tune(pb_multi *m, const pb_tune_opts *o);

/* ---------- the decisions, for the unit tests (docs/TUNING.md) ---------- */

/* An "up to" prediction (the device's rate, a ceiling) that the run reached: measured within the tolerance
 * max(1 %, min(the run's noise, 5 %)) below it.  noise_pct: the run's throughput.noise_pct (NAN: 0). */
bool pb_tune_reached_ceiling(bool up_to, double predicted, double measured, double noise_pct);

/* The tolerance above, as a fraction. */
double pb_tune_ceiling_tolerance(double noise_pct);

/* Seconds the search keeps for the re-measure when it judges --budget-s: none at --repeat 1 (the search
 * runs as it would without a re-measure, which then runs only if the budget left allows it) or while the
 * best is the base config (nothing to re-measure); else pairs x (the base's longest run + the best's). */
double pb_tune_remeasure_reserve_s(int repeats, bool best_is_base, int pairs, double base_run_s, double best_run_s);

/* What the re-measure of the best against the base allows to claim. */
typedef enum pb_tune_outcome {
  PB_TUNE_NOT_NEEDED = 0,       /* the base config is the best: nothing to re-measure */
  PB_TUNE_NOT_REMEASURED,       /* the budget left did not allow it: the search's gain is not confirmed */
  PB_TUNE_INTERRUPTED,          /* interrupted before or during it: no claim */
  PB_TUNE_TOO_FEW,              /* an interval missing or covering less than 90 % (runs that failed): no claim */
  PB_TUNE_GAIN,                 /* the best's interval lies above the base's */
  PB_TUNE_NO_DIFFERENCE,        /* the intervals overlap */
  PB_TUNE_BASE_FASTER,          /* the base's interval lies above the best's: the base config is written */
} pb_tune_outcome;

pb_tune_outcome pb_tune_remeasure_outcome(bool needed, bool skipped, bool interrupted, const pb_interval *base,
                                          const pb_interval *best);

/* The outcome's name in tune.json ("gain", "no_measurable_difference", ...; NULL for PB_TUNE_NOT_NEEDED). */
const char *pb_tune_outcome_name(pb_tune_outcome o);

#endif

/* `pipebench tune` (CONTRACT §1): searches thread counts per stage and prefetch depth for the most samples/s
 * within the machine's cores and limits.max_memory_mb, each step chosen by the analysis' capacity model and
 * verified by a measured run.  See docs/TUNING.md. */
#ifndef PB_TUNE_H
#define PB_TUNE_H

#include "multirun.h"

typedef struct pb_tune_opts {
  double budget_s;              /* --budget-s: no trial starts that would end after it (default 600) */
  const char *write_file;       /* --write FILE: the tuned config */
  int max_trials;               /* 0: a quarter of the space when it is given as lists, else 12 */
} pb_tune_opts;

int pb_tune(pb_multi *m, const pb_tune_opts *o);

#endif

/* `pipebench ab` (docs/CONTRACT.md §1): the same config run three times, DS-Analyzer's method: synthetic (in-memory
 * samples, the ceiling of everything after the per-sample stages), real with the dataset's files evicted from
 * the page cache, and real with them cached; one table, the ratios, the lost throughput split into fetch
 * (storage) and preprocessing (CPU) stalls, and a one-line verdict.  With --repeat N the three run N times,
 * interleaved, and the verdict claims only differences outside the intervals.  See docs/AB.md. */
#ifndef PB_AB_H
#define PB_AB_H

#include "ab_out.h"
#include "ab_verdict.h"
#include "multirun.h"
#include "repeat.h"

/* m: command "ab", the config file, the command line's --set overrides and options.  Returns the exit
 * status (docs/CONTRACT.md §1). */
int pb_ab(pb_multi *m);

#endif

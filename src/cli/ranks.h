/* `pipebench run` as one rank of a multi-process job (`mpirun -np N pipebench --config X.json`, issue 8).
 *
 * Each rank runs its own pipeline on its shard of the files (round-robin over the listing, DLIO's rule)
 * into <out>/rank-<r>/ (its report.json, report.html, trace.json).  Rank 0 chooses <out> and tells the
 * others; at the end every rank sends its report to rank 0, which writes the job's <out>/report.json and
 * summary (src/reports/ranks_out.h says what they hold) and merges the ranks' traces into <out>/trace.json.
 *
 * The job's exit status is the worst rank's (each rank prints its own error line), reached without a hang:
 * every rank takes the same collectives whatever happened to its run. */
#ifndef PB_RANKS_H
#define PB_RANKS_H

#include "config.h"
#include "run.h"

/* Runs cfg as this rank of the world (src/engine/world.h); returns the job's exit status on every rank. */
int pb_ranks_run(const pb_config *cfg, const pb_run_opts *opts);

#endif

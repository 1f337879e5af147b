/* `pipebench run` as one rank of a multi-process job (`mpirun -np N pipebench --config X.json`, issue 8).
 *
 * Each rank runs its own pipeline on its shard of the files (round-robin over the listing, DLIO's rule)
 * into <out>/rank-<r>/ (its report.json, report.html, trace.json).  Rank 0 chooses <out> and tells the
 * others; at the end every rank sends its report to rank 0, which writes the job's <out>/report.json:
 *
 *   - throughput: summed over the ranks; accounting: summed (it balances when every rank's does);
 *   - ranks[]: one summary per rank; most_input_bound_rank: the rank with the largest input_bound_pct
 *     (ties: the slower one), the rank that holds a synchronous job back;
 *   - every other figure (steps, breakdown, idle, stages, critical path, bottleneck, recommendations) is
 *     that rank's (`figures_from_rank`), so the job's report names the bottleneck that matters;
 *   - rank_skew: the spread of samples/s between ranks.
 *
 * The job's exit status is the worst rank's (each rank prints its own error line), reached without a hang:
 * every rank takes the same collectives whatever happened to its run. */
#ifndef PB_RANKS_H
#define PB_RANKS_H

#include <cjson/cJSON.h>

#include "config.h"
#include "run.h"

/* Runs cfg as this rank of the world (src/engine/world.h); returns the job's exit status on every rank. */
int pb_ranks_run(const pb_config *cfg, const pb_run_opts *opts);

/* Rank 0's job report from every rank's (reports[r]: the rank's report.json tree with "rank", "host",
 * "status", "out_dir", "shard" added, or an object with only "rank" and "status" when the rank wrote none).
 * Returns a new tree; NULL when out of memory. */
cJSON *pb_ranks_aggregate(cJSON *const *reports, int n);

#endif

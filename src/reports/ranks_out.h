/* What an MPI job (`mpirun -np N pipebench --config X.json`, src/cli/ranks.h) writes on rank 0: the job's
 * report.json, made from every rank's, and its summary on stdout.
 *
 * Each rank sends rank 0 its report.json tree with "rank", "host", "status", "out_dir" and "shard" added
 * (the ranks' wire format, src/cli/ranks.c), or an object with only "rank" and "status" when it wrote none.
 * The job's report:
 *   - throughput: summed over the ranks; accounting: summed (it balances when every rank's does);
 *   - ranks[]: one summary per rank; most_input_bound_rank: the rank with the largest input_bound_pct
 *     (ties: the slower one), the rank that holds a synchronous job back;
 *   - every other figure (steps, breakdown, idle, stages, critical path, bottleneck, recommendations) is
 *     that rank's (`figures_from_rank`), so the job's report names the bottleneck that matters;
 *   - rank_skew: the spread of samples/s between ranks. */
#ifndef PB_RANKS_OUT_H
#define PB_RANKS_OUT_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "common.h"

/* Rank 0's job report from every rank's (reports[r], as above).  Returns a new tree; NULL when out of
 * memory. */
cJSON *pb_ranks_aggregate(cJSON *const *reports, int n);

/* Writes job as <dir>/report.json, whole or not at all (as a run's own: a reader never sees half of it).
 * *text: the JSON written, for --json (the caller frees it; NULL when out of memory), also when the write
 * failed.  0, or a negative errno with err's line naming the file. */
int pb_ranks_write_json(cJSON *job, const char *dir, char **text, pb_err *err);

/* The job's summary: throughput over all ranks, a row per rank, the most input-bound rank's bottleneck,
 * the skew, the accounting, where the outputs are (dir) and the merged trace when <dir>/trace.json exists. */
void pb_ranks_print_text(FILE *out, const cJSON *job, const char *dir, const char *name);

#endif

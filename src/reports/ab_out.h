/* What `pipebench ab` writes (docs/AB.md): ab.json and the table on stdout, from the command's result. */
#ifndef PB_AB_OUT_H
#define PB_AB_OUT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ab_verdict.h"
#include "repeat_stats.h"

/* One of the three runs over its repeats. */
typedef struct pb_ab_run_out {
  int nreps;                    /* repeats started (0: the run never started) */
  const pb_run_figures *reps;   /* [nreps], in the order they ran */
  const pb_repeat_summary *sum; /* the medians and intervals over them */
  double resident_pct;          /* the cold runs' highest, the warm runs' lowest share of the dataset in the
                                 * page cache as they started (NAN: synthetic, or not measured) */
} pb_ab_run_out;

/* The command's result. */
typedef struct pb_ab_out {
  const char *config_file, *out_dir;
  int status; /* the command's exit status so far (the runs') */
  bool interrupted;
  int repeats; /* --repeat, at least 1 */
  const char *dataset_path;
  uint64_t files, bytes;     /* the dataset's */
  uint64_t unreadable_files; /* skipped by any page-cache pass */
  uint64_t synced;           /* files fdatasync'ed before an eviction would drop them */
  pb_ab_run_out run[PB_AB_RUNS];
  const pb_ab_numbers *x; /* pb_ab_compute's */
  const char *verdict;    /* pb_ab_verdict's */
  bool cold_effective, warm_effective;
} pb_ab_out;

/* "synthetic", "real-cold", "real-warm": run k's directory under the command's. */
const char *pb_ab_dir(int k);

/* ab.json's tree (docs/AB.md); NULL: out of memory. */
cJSON *pb_ab_json(const pb_ab_out *o);

/* The table, the intervals with repeats, the ratios, the stalls and the verdict, wrapped as the run's summary. */
void pb_ab_print_text(FILE *out, const pb_ab_out *o);

#endif

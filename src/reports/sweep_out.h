/* What `pipebench sweep` writes (docs/TUNING.md "sweep"): the table on stdout, sweep.csv and sweep.json, from
 * the command's result. */
#ifndef PB_SWEEP_OUT_H
#define PB_SWEEP_OUT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "common.h"
#include "repeat_stats.h"
#include "sweep_grid.h"

/* The command's result; the arrays are per trial (ntrials of them), runs per trial and repeat. */
typedef struct pb_sweep_out {
  const char *config_file, *out_dir;
  const char *const *fixed; /* the --set overrides that are not lists */
  int nfixed;
  const pb_axis *axes;
  int naxes;
  int ntrials;
  int repeats;                   /* --repeat: runs of each trial, at least 1 */
  const int *status;             /* the trial's status over its repeats; -1: not run */
  const int *nruns;              /* repeats run */
  const pb_run_figures *runs;    /* runs[t * repeats + r] */
  const pb_repeat_summary *sums; /* medians and intervals over the trial's repeats */
  const pb_run_figures *rows;    /* the trial's figures (with repeats, the medians) */
  int best;                      /* pb_sweep_best's; -1: none */
  pb_sweep_decision decision;    /* with repeats, pb_sweep_decide's */
  const char *undecided;         /* why, when PB_SWEEP_UNDECIDED */
  bool interrupted;
} pb_sweep_out;

/* The table (one row per trial that ran, the best marked) and with repeats what the intervals allow to say. */
void pb_sweep_print_table(FILE *out, const pb_sweep_out *s);

/* <out_dir>/sweep.csv, whole or not at all (pb_write_atomic).  0, or a negative errno with err set. */
int pb_sweep_write_csv(const pb_sweep_out *s, pb_err *err);

/* sweep.json's tree (docs/TUNING.md). */
cJSON *pb_sweep_json(const pb_sweep_out *s);

#endif

/* What a repeated measurement writes (docs/REPORTS.md "Repeats"): the intervals and the "repeats" object as
 * JSON, the summary lines, repeats.csv, and the measurement's report.json and report.html made from its median
 * repeat's.  The functions that write files return 0 or a negative errno with err set to one line. */
#ifndef PB_REPEAT_OUT_H
#define PB_REPEAT_OUT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "common.h"
#include "repeat_stats.h"

/* {median, lo, hi} rounded to `decimals` (null where not available), and values[] when `values` is given
 * (n of them, NAN as null). */
cJSON *pb_interval_json(const pb_interval *iv, int decimals, const double *values, int n);

/* The "repeats" object of a report.json (docs/REPORTS.md): n, runs, coverage_pct, median_repeat, one
 * interval per figure with its values, and bottleneck {stage: repeats that named it}.  NULL: out of
 * memory. */
cJSON *pb_repeat_json(const pb_run_figures *runs, int nruns, const pb_repeat_summary *s);

/* The summary lines: one per figure, "median (lo-hi, C % interval)", and how many repeats named each
 * bottleneck. */
void pb_repeat_print_text(FILE *out, const pb_run_figures *runs, int nruns, const pb_repeat_summary *s);

/* run --repeat's status line after an interrupt: nrun of the nasked repeats run, the figures of ncounted. */
void pb_repeat_print_stopped(FILE *out, int nrun, int nasked, int ncounted);

/* <median_dir>/report.json with `repeats` added (taken over, also on failure), and "interrupted": true when
 * `interrupted` (a repeat of the measurement was, whichever repeat the copy is of): the report of a
 * repeated measurement.  NULL with err set when it cannot be read. */
cJSON *pb_repeat_report(const char *median_dir, cJSON *repeats, bool interrupted, pb_err *err);

/* Writes `report` as <dir>/report.json when `json`, and <dir>/report.html from <median_dir>/report.html
 * when there is one: that page's data with `report` (the tree above, interrupted and repeats included) in
 * place of the repeat's own, titled `title`, so that the page says what report.json says.  0, or a negative
 * errno with err set. */
int pb_repeat_write_report(const char *dir, const char *median_dir, const cJSON *report, bool json, const char *title,
                           pb_err *err);

/* <path>: the intervals as a table (run --repeat with --format csv): figure,median,lo,hi,coverage_pct,n,runs
 * for samples/s, device idle %, AU % and input-bound %.  0, or a negative errno with err set. */
int pb_repeat_write_csv(const char *path, const pb_repeat_summary *s, pb_err *err);

#endif

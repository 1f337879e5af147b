/* report.html: one self-contained page (inline CSS, SVG drawn by inline JS, no network fetch) made of the
 * template src/reports/html/report.html, which the build embeds in the binary, and the figures as JSON.
 *
 * The page's data (docs/REPORTS.md):
 *   run:   {"kind":"run", name, out_dir, report (report.json's tree), steps (per measured step, binned to at
 *           most PB_HTML_MAX_BARS bars), throughput (samples/s over time), queues (queue fill over time)}
 *   ab, sweep, tune, job: {"kind":..., name, config, out_dir, run_reports, result (ab.json, sweep.json,
 *           tune.json or an mpirun job's report.json tree)} */
#ifndef PB_HTML_H
#define PB_HTML_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "record.h"
#include "report.h"

#define PB_HTML_MAX_BARS 400       /* step-time bars; more steps are binned (each bar their mean) */
#define PB_HTML_MAX_RATE_BINS 120  /* throughput-over-time points */

/* The data of a run's page (a new tree; NULL when out of memory). */
cJSON *pb_html_run_data(const pb_report *r, const pb_record *rec);

/* Writes the page for `data` to path (atomically: path.tmp renamed into place).  0 or -errno. */
int pb_html_write(const char *path, const char *title, const cJSON *data);

/* <out>/report.html of a run.  0 or -errno. */
int pb_report_write_html(const pb_report *r, const pb_record *rec, const char *path);

/* <out>/report.html of ab, sweep, tune or an mpirun job (kind "job", src/cli/ranks.c): `result` is the command's JSON; run_reports says whether each run
 * wrote a report.html of its own (the page then links to them).  0 or -errno. */
int pb_html_write_command(const char *kind, const char *name, const char *config, const char *out_dir,
                          bool run_reports, const cJSON *result, const char *path);

#endif

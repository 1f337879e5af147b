/* --format csv: the per-stage table (stages.csv) and the per-step table (steps.csv), each with a header
 * row (RFC 4180: fields holding a comma, a quote or a line break are quoted).  docs/REPORTS.md lists the
 * columns. */
#ifndef PB_CSV_H
#define PB_CSV_H

#include <stdio.h>

#include "record.h"
#include "report.h"

/* stages.csv: one row per stage with report.json's stage keys as columns, a fixed list (the same figures,
 * rounded the same way; an empty cell where report.json has null), graph.parent as `parent`.  0 or -errno. */
int pb_csv_write_stages(const pb_report *r, const char *path);

/* steps.csv: one row per step in completion order, warm-up included (measured = 0), times in ms since
 * the run started, and the step's breakdown (input_wait, h2d, compute, other) as report.json's means
 * take it.  0 or -errno. */
int pb_csv_write_steps(const pb_record *rec, const char *path);

/* One cell: as it is, or quoted (RFC 4180) when it holds a comma, a quote or a line break. */
void pb_csv_put_field(FILE *f, const char *s);

#endif

/* The figures of a run as ab, sweep and tune write them (docs/AB.md, docs/TUNING.md): the JSON of a run's
 * headline figures, numbers rounded as report.json rounds them, and a table's bottleneck cell. */
#ifndef PB_MULTIRUN_OUT_H
#define PB_MULTIRUN_OUT_H

#include <cjson/cJSON.h>

#include "repeat_stats.h"
#include "report.h"

/* A run's headline figures as JSON: status, out_dir, samples_per_s, batches_per_s, device_idle_pct,
 * accelerator_utilization_pct, input_bound_pct, classification, bottleneck, interrupted. */
cJSON *pb_multi_run_json(const pb_report *r, int status, const char *out_dir);
/* The same from a run's figures (or a repeated measurement's: its medians, pb_repeat_figures). */
cJSON *pb_multi_figures_json(const pb_run_figures *f, const char *out_dir);

/* Adds v rounded to `decimals` (as report.json rounds: samples/s 1, percentages 2), or null when NAN/inf. */
void pb_multi_add_number(cJSON *o, const char *key, double v, int decimals);

/* "bottleneck" cell of a table: the stage, "device", or "-". */
const char *pb_multi_bottleneck(const pb_report *r);

#endif

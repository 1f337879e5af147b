/* `pipebench analyze PATH` (docs/CONTRACT.md §1): the report recomputed from a saved trace.json (or the run
 * directory holding one), through the same code path as a live run (pb_metrics_compute on a pb_record). */
#ifndef PB_ANALYZE_H
#define PB_ANALYZE_H

#include "run.h"

/* Uses opts->out_dir, formats, json_stdout and quiet.  Returns the process exit status (0; 1 when the trace
 * cannot be read or a report cannot be written; 2 when PATH is not a pipebench trace); prints its own
 * errors. */
int pb_analyze(const char *path, const pb_run_opts *opts);

#endif

/* What `pipebench tune` writes of its search (docs/TUNING.md): tune.json, and the summary on stdout (the
 * trials' table, the tuned point, the re-measure's verdict, the prediction error, the tuned config's path),
 * both from the plain result the command fills (tune_result.h). */
#ifndef PB_TUNE_OUT_H
#define PB_TUNE_OUT_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "tune_result.h"

/* tune.json: the command, the space, the trials (each with its run's figures, sets, prediction and error),
 * the best, the gains, the re-measure, the prediction error's summary and why the search stopped.
 * tuned_path: the tuned config written (NULL: none, and "tuned_config" is null); interrupted: the command
 * was. */
cJSON *pb_tune_out_json(const pb_tune_result *r, const char *tuned_path, bool interrupted);

/* The summary: a row per trial, the tuned point against the base, the re-measure's lines when there was one
 * to do, the prediction error, and "tuned config: <tuned_path>" (when not NULL).  r has a trial. */
void pb_tune_out_text(FILE *out, const pb_tune_result *r, const char *tuned_path);

#endif

/* `pipebench gen` (CONTRACT §1): writes the dataset that the config's dataset.generate describes into
 * dataset.path, in dataset.format, so the real path has files to read and decode. */
#ifndef PB_GEN_H
#define PB_GEN_H

#include <stdbool.h>

#include "config.h"

typedef struct pb_gen_opts {
  bool force;    /* overwrite a dataset written for another spec */
  bool quiet;    /* no progress, no summary */
  bool no_progress; /* no live progress line (it is shown only on a terminal anyway) */
  bool json_stdout; /* --json: the summary as JSON on stdout */
  const char *out_dir; /* --out: also write <out_dir>/gen.json, the same summary (NULL: none) */
} pb_gen_opts;

/* Returns the process exit status; prints its own errors and summary (stderr). */
int pb_gen(const pb_config *cfg, const pb_gen_opts *opts);

/* True when the config can generate its dataset and dataset.path holds nothing yet (the first run of a
 * preset generates it). */
bool pb_gen_missing(const pb_config *cfg);
/* What run, sweep and tune do before reading a dataset: when it is missing, say so and generate it.  0, or
 * gen's exit status. */
int pb_gen_if_missing(const pb_config *cfg, bool quiet, bool no_progress);

#endif

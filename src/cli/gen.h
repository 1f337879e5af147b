/* `pipebench gen` (docs/CONTRACT.md §1): writes the dataset that the config's dataset.generate describes into
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

/* What run, sweep, tune, ab and calibrate do before reading a dataset that dataset.generate describes:
 * when dataset.path holds no files, an unfinished gen, or a dataset of pipebench's generated with other
 * settings (the manifest's), say so and generate it (replacing pipebench's own files).  0, or gen's exit
 * status. */
int pb_gen_if_missing(const pb_config *cfg, bool quiet, bool no_progress);

#endif

/* What the commands made of several runs share (ab, sweep, tune): loading the config with the command
 * line's --set overrides plus a trial's own, running it quietly into a subdirectory of the command's output
 * directory and keeping its report, and the one-line and JSON summaries of a run. */
#ifndef PB_MULTIRUN_H
#define PB_MULTIRUN_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "multirun_out.h"
#include "repeat.h"
#include "report.h"
#include "run.h"

#define PB_MULTI_MAX_SETS 320

typedef struct pb_multi {
  const char *command;          /* "ab", "sweep", "tune" */
  const char *config_file;
  const char *const *base_sets; /* the command line's --set overrides (fixed for every run) */
  int nbase_sets;
  pb_run_opts run;              /* the command line's options; out_dir is the command's directory */
  bool device_given;            /* --device given; else each run uses its config's device.kind */
  int repeat;                   /* --repeat: runs of each measurement (0 or 1: one) */
  FILE *text_out;               /* when set, each run's text summary goes here (run --repeat keeps the
                                 * median repeat's) */
  char out_dir[PB_PATH_LEN];    /* made by pb_multi_begin */
  char name[128];               /* the config's name (report.html's title) */
  char progress_label[PB_NAME_LEN + 64]; /* the current run's, for its live progress line */
  int runs;                     /* runs started so far */
  bool first_notice_shown;
} pb_multi;

/* Loads the base config (with `sets` after the base overrides: sweep's first combination, whose lists may
 * supply a key the file lacks), checks it can run, generates a preset's missing dataset (unless every run
 * is synthetic) and makes the output directory.  0, or the exit status after printing one line. */
int pb_multi_begin(pb_multi *m, const char *const *sets, int nsets, pb_config *base, bool needs_real_data);

/* The config with the base overrides, then `sets` (PATH=VALUE each).  0, or -EINVAL with err set. */
int pb_multi_load(const pb_multi *m, const char *const *sets, int nsets, pb_config *cfg, pb_err *err);

/* Runs `cfg` into <out_dir>/<name> (report.json, and trace.json, report.html and the CSV tables as --format
 * and --no-trace say), without its text summary; its live progress line (on a terminal) is labelled
 * "<command> <name>"; `report` receives the run's report when the run got as far
 * as writing one.  Returns pb_run's exit status. */
int pb_multi_run(pb_multi *m, const pb_config *cfg, const char *name, bool synthetic, pb_report *report);

/* Repeats per measurement: --repeat, at least 1. */
int pb_multi_repeats(const pb_multi *m);

/* The directory of repeat r (0-based) of the measurement `name`: "<name>" with one repeat, else
 * "<name>/repeat-<r+1>" (relative to the command's directory). */
void pb_multi_repeat_name(const pb_multi *m, const char *name, int r, char *out, size_t len);

/* <out_dir>/<name>/report.json of a repeated measurement: the report of its median repeat (the last that
 * wrote one when none measured) with the "repeats" object added, and that repeat's report.html.  Nothing
 * with one repeat, or when no repeat wrote a report.  0, or PB_EXIT_RUNTIME after one line. */
int pb_multi_write_repeats(const pb_multi *m, const char *name, const pb_run_figures *runs, int nruns,
                           const pb_repeat_summary *s);

/* `pipebench run --repeat N` (N > 1): N runs of the config into <out>/repeat-1 .. repeat-N, and
 * <out>/report.json (pb_multi_write_repeats); the text summary is the median repeat's, then the intervals.
 * Returns the exit status. */
int pb_multi_run_repeated(pb_multi *m);

/* Writes `json` pretty-printed to <out_dir>/<name>, and the command's report.html from it when the formats
 * include html.  0, or PB_EXIT_RUNTIME after printing one line. */
int pb_multi_write_json(const pb_multi *m, const char *name, cJSON *json);

#endif

/* One run (docs/CONTRACT.md §1 `pipebench run`): plan the pipeline, open the device, run warm-up and measured
 * steps, stop on the run's limit, end of data or a signal, then write the report. */
#ifndef PB_RUN_H
#define PB_RUN_H

#include <stdbool.h>
#include <stdio.h>

#include "config.h"

enum { PB_FMT_TEXT = 1, PB_FMT_JSON = 2, PB_FMT_CSV = 4, PB_FMT_HTML = 8, PB_FMT_TRACE = 16 };

typedef struct pb_run_opts {
  bool synthetic;               /* --data synthetic */
  pb_device_kind device;        /* --device, or device.kind when not given */
  const char *out_dir;          /* --out; NULL = pipebench-out/<name>-<UTC time> */
  unsigned formats;             /* PB_FMT_* bits */
  bool formats_given;           /* --format was on the command line */
  bool json_stdout, quiet, no_progress, no_trace;
  bool result_line;             /* run and analyze: the one-line result when the text summary is not printed */
  /* For the commands made of several runs (ab, sweep, tune): */
  bool quiet_notices;           /* no device fallback notice (a later run of the same command) */
  bool notices_on_stderr;       /* the device fallback on stderr too (ab, sweep, tune: their output has no header) */
  const char *progress_label;   /* printed before the live progress figures ("tune trial 3: ..."); NULL: none */
  int rank, world_size;         /* one rank of a multi-process job (src/cli/ranks.c): its shard of the files;
                                 * world_size 0 or 1: the whole dataset */
  struct pb_exchange *exchange; /* this rank's gradient exchange (src/engine/allreduce.h); NULL: none */
  struct pb_report *result;     /* when set, the run's report is copied here (its config left NULL; its
                                 * string pointers are the run's and dangle after it: numbers only) */
  char **result_json;           /* when set, receives the report as JSON text (malloc'd; NULL if none) */
  FILE *text_out;               /* when set, the text summary goes here whatever formats says (run --repeat
                                 * prints the median repeat's) */
} pb_run_opts;

/* Returns the process exit status (docs/CONTRACT.md §1); prints its own errors. */
int pb_run(const pb_config *cfg, const pb_run_opts *opts);


/* Makes the output directory: `given` (--out; made if missing, must be writable), else
 * pipebench-out/<name>[-<kind>]-<UTC yyyymmdd-HHMMSS>.  0, or an exit status after printing one line. */
int pb_run_make_out_dir(const pb_config *cfg, const char *given, const char *kind, char *out, size_t len);

struct pb_report;
struct pb_record;
/* Writes the views `formats` asks for besides report.json and trace.json: report.html (html), stages.csv
 * and steps.csv (csv), into out_dir (run and analyze).  0, or PB_EXIT_RUNTIME after printing one line. */
int pb_run_write_views(unsigned formats, const char *out_dir, const struct pb_report *r, const struct pb_record *rec);

/* For main.c: parse a --format list.  -EINVAL with err set on an unknown name. */
int pb_parse_formats(const char *list, unsigned *formats, pb_err *err);
struct pb_engine;
/* The planned engine's buffers against limits.max_memory_mb: 0, or exit 2 after run's one-line refusal
 * (run and sweep's pre-check say the same). */
int pb_run_check_memory(const pb_config *cfg, const struct pb_engine *e);
/* Plans cfg's pipeline (synthetic: without its per-sample stages) and checks it as above: 0, or the exit
 * status after one line.  A pipeline that cannot be planned (its dataset not there yet) is a usage error,
 * or with unplannable_ok nothing to check (validate: run generates the dataset first, then plans). */
int pb_run_plan_memory(const pb_config *cfg, bool synthetic, bool unplannable_ok);

#endif

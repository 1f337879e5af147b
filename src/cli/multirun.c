#include "multirun.h"
#include "json_text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "engine.h"
#include "gen.h"
#include "html.h"

int pb_multi_load(const pb_multi *m, const char *const *sets, int nsets, pb_config *cfg, pb_err *err) {
  const char *all[PB_MULTI_MAX_SETS + 1];
  int n = 0;
  for (int i = 0; i < m->nbase_sets && n < PB_MULTI_MAX_SETS; i++) all[n++] = m->base_sets[i];
  for (int i = 0; i < nsets && n < PB_MULTI_MAX_SETS; i++) all[n++] = sets[i];
  all[n] = NULL;
  return pb_config_load(cfg, m->config_file, all, n, err);
}

/* A GPU asked for (--device gpu, or device.kind gpu without --device) that cannot be opened fails here,
 * once, as a plain run would fail (exit 1, one line); auto falls back and emulated always opens. */
static int probe_device(const pb_multi *m, const pb_config *cfg) {
  pb_device_kind kind = m->device_given ? m->run.device : cfg->device.kind;
  if (kind != PB_DEVICE_GPU) return 0;
  pb_device *d = calloc(1, sizeof *d);
  if (!d) return PB_EXIT_RUNTIME;
  char notice[256];
  pb_err err;
  int rc = 0;
  if (pb_device_open(d, cfg, kind, notice, sizeof notice, &err)) {
    fprintf(stderr, "pipebench: %s: %s\n", cfg->file, err.msg);
    rc = PB_EXIT_RUNTIME;
  } else {
    pb_device_close(d);
  }
  free(d);
  return rc;
}

int pb_multi_begin(pb_multi *m, const char *const *sets, int nsets, pb_config *base, bool needs_real_data) {
  pb_err err;
  if (pb_multi_load(m, sets, nsets, base, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  if (pb_engine_check(base, !needs_real_data, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  int rc = needs_real_data ? pb_gen_if_missing(base, m->run.quiet, m->run.no_progress) : 0;
  /* run --repeat refuses what a plain run refuses before it makes its directory, once: a pipeline over
   * limits.max_memory_mb (exit 2), a GPU that cannot be opened (exit 1) */
  if (!rc && strcmp(m->command, "run") == 0) rc = pb_run_plan_memory(base, m->run.synthetic, false);
  if (!rc && strcmp(m->command, "run") == 0) rc = probe_device(m, base);
  if (rc) return rc;
  snprintf(m->name, sizeof m->name, "%s", base->name);
  /* run --repeat makes the directory a run would: pipebench-out/<name>-<UTC time> */
  const char *kind = strcmp(m->command, "run") == 0 ? NULL : m->command;
  return pb_run_make_out_dir(base, m->run.out_dir, kind, m->out_dir, sizeof m->out_dir);
}

int pb_multi_run(pb_multi *m, const pb_config *cfg, const char *name, bool synthetic, pb_report *report) {
  pb_run_opts o = m->run;
  char dir[PB_PATH_LEN + 64];
  snprintf(dir, sizeof dir, "%s/%s", m->out_dir, name);
  o.out_dir = dir;
  o.synthetic = synthetic;
  if (!m->device_given) o.device = cfg->device.kind;
  /* the command prints its own table; each run keeps its own files */
  o.formats = (m->run.formats & (PB_FMT_TRACE | PB_FMT_HTML | PB_FMT_CSV)) | PB_FMT_JSON;
  o.json_stdout = false;
  snprintf(m->progress_label, sizeof m->progress_label, "%s %s", m->command, name);
  o.progress_label = m->progress_label;
  o.quiet_notices = m->first_notice_shown;
  o.notices_on_stderr = true;
  o.text_out = m->text_out;
  o.result = report;
  m->first_notice_shown = true;
  m->runs++;
  memset(report, 0, sizeof *report);
  report->samples_per_s = NAN;
  /* a run whose generate settings differ from the dataset there (a sweep over a generate key that
   * keeps one dataset.path) reads the files its config names, as `run` would */
  int rc = synthetic ? 0 : pb_gen_if_missing(cfg, m->run.quiet, m->run.no_progress);
  return rc ? rc : pb_run(cfg, &o);
}

static int text_body(FILE *f, const void *text) {
  return fprintf(f, "%s\n", (const char *)text) < 0 ? (errno ? -errno : -EIO) : 0;
}

int pb_multi_write_json(const pb_multi *m, const char *name, cJSON *json) {
  char path[PB_PATH_LEN + 64];
  snprintf(path, sizeof path, "%s/%s", m->out_dir, name);
  char *text = json ? pb_json_print(json, true) : NULL;
  /* whole or not at all, and no NAME.tmp after a second signal (pb_write_atomic) */
  int rc = text ? pb_write_atomic(path, text_body, text) : -ENOMEM;
  free(text);
  if (rc) {
    fprintf(stderr, "pipebench: %s: cannot write: %s (expected a writable output directory with room for it)\n",
            path, strerror(-rc));
    return PB_EXIT_RUNTIME;
  }
  if (!(m->run.formats & PB_FMT_HTML)) return 0;
  snprintf(path, sizeof path, "%s/report.html", m->out_dir);
  rc = pb_html_write_command(m->command, m->name, m->config_file, m->out_dir, true, json, path);
  if (rc) {
    fprintf(stderr, "pipebench: %s: cannot write the HTML report: %s\n", path, strerror(-rc));
    return PB_EXIT_RUNTIME;
  }
  return 0;
}

/* ---------- repeats ---------- */

int pb_multi_repeats(const pb_multi *m) { return m->repeat > 1 ? m->repeat : 1; }

void pb_multi_repeat_name(const pb_multi *m, const char *name, int r, char *out, size_t len) {
  if (pb_multi_repeats(m) == 1) snprintf(out, len, "%s", name);
  else if (name[0]) snprintf(out, len, "%s/repeat-%d", name, r + 1);
  else snprintf(out, len, "repeat-%d", r + 1);
}

/* The repeat whose report stands for the measurement: the median one, else the last that wrote one. */
static int report_repeat(const pb_run_figures *runs, int nruns, const pb_repeat_summary *s) {
  if (s->median_repeat >= 0) return s->median_repeat;
  for (int r = nruns - 1; r >= 0; r--)
    if (runs[r].have) return r;
  return -1;
}

/* pb_repeat_write_report, with its error on stderr: 0, or PB_EXIT_RUNTIME. */
static int write_report(const char *dir, const char *median_dir, const cJSON *tree, bool json, const char *title) {
  pb_err err;
  if (pb_repeat_write_report(dir, median_dir, tree, json, title, &err) == 0) return 0;
  fprintf(stderr, "pipebench: %s\n", err.msg);
  return PB_EXIT_RUNTIME;
}

/* The measurement's report.json tree (the stand-in repeat's with "repeats"), marked interrupted when a repeat
 * was or `stopped` (a signal between two repeats); NULL after one line. */
static cJSON *repeats_report(const pb_multi *m, const char *name, const pb_run_figures *runs, int nruns,
                             const pb_repeat_summary *s, bool stopped, char *median_dir, size_t len) {
  int r = report_repeat(runs, nruns, s);
  char sub[160]; /* "trial-NNN/repeat-R", "real-cold/repeat-R" */
  if (r < 0) return NULL;
  pb_multi_repeat_name(m, name, r, sub, sizeof sub);
  snprintf(median_dir, len, "%s/%s", m->out_dir, sub);
  pb_err err;
  bool interrupted = pb_repeat_any_interrupted(runs, nruns) || stopped;
  cJSON *tree = pb_repeat_report(median_dir, pb_repeat_json(runs, nruns, s), interrupted, &err);
  if (!tree) fprintf(stderr, "pipebench: %s\n", err.msg);
  return tree;
}

int pb_multi_write_repeats(const pb_multi *m, const char *name, const pb_run_figures *runs, int nruns,
                           const pb_repeat_summary *s) {
  if (pb_multi_repeats(m) == 1 || report_repeat(runs, nruns, s) < 0) return 0;
  char median_dir[PB_PATH_LEN + 192], dir[PB_PATH_LEN + 192];
  cJSON *tree = repeats_report(m, name, runs, nruns, s, false, median_dir, sizeof median_dir);
  snprintf(dir, sizeof dir, "%s/%s", m->out_dir, name);
  char title[192];
  snprintf(title, sizeof title, "pipebench report: %s", m->name);
  int rc = tree ? write_report(dir, median_dir, tree, true, title) : PB_EXIT_RUNTIME;
  cJSON_Delete(tree);
  return rc;
}

/* ---------- run --repeat ---------- */

typedef struct run_repeats {
  pb_multi *m;
  pb_config *cfg;
  pb_report *scratch;           /* the current repeat's report */
  pb_run_figures runs[PB_REPEAT_MAX];
  char *text[PB_REPEAT_MAX];    /* each repeat's text summary, when the summary is wanted */
  int nruns;
} run_repeats;

static bool wants_text(const pb_multi *m) {
  return !m->run.quiet && !m->run.json_stdout && (m->run.formats & PB_FMT_TEXT);
}

static int run_one_repeat(run_repeats *x, int r) {
  pb_multi *m = x->m;
  char name[32], b[32];
  size_t len = 0;
  snprintf(name, sizeof name, "repeat-%d", r + 1);
  m->text_out = wants_text(m) ? open_memstream(&x->text[r], &len) : NULL;
  uint64_t t0 = pb_now_ns();
  int rc = pb_multi_run(m, x->cfg, name, m->run.synthetic, x->scratch);
  if (m->text_out) fclose(m->text_out);
  m->text_out = NULL;
  pb_run_figures_of(x->scratch, rc, (double)(pb_now_ns() - t0) / 1e9, &x->runs[r]);
  x->nruns = r + 1;
  if (!m->run.quiet)
    fprintf(stderr, "pipebench: run: repeat %d/%d: %.2f s, %s samples/s%s\n", r + 1, m->repeat, x->runs[r].wall_s,
            isfinite(x->runs[r].samples_per_s) ? (snprintf(b, sizeof b, "%.1f", x->runs[r].samples_per_s), b) : "n/a",
            rc == PB_EXIT_INTERRUPTED ? " (interrupted: it does not count)" : rc ? " (failed: it does not count)" : "");
  return rc;
}

/* One repeat after another; the first that fails or is interrupted ends them (the same config would fail
 * the same way again). */
static int run_repeats_all(run_repeats *x) {
  if (!x->m->run.quiet)
    fprintf(stderr, "pipebench: run: %d repeats into %s\n", x->m->repeat, x->m->out_dir);
  for (int r = 0; r < x->m->repeat; r++) {
    if (pb_signalled()) return PB_EXIT_INTERRUPTED;
    int rc = run_one_repeat(x, r);
    if (rc) return rc;
  }
  return 0;
}

/* <out>/repeats.csv (--format csv): the intervals as a table. */
static int write_csv(const pb_multi *m, const pb_repeat_summary *s) {
  if (!(m->run.formats & PB_FMT_CSV)) return 0;
  char path[PB_PATH_LEN + 32];
  snprintf(path, sizeof path, "%s/repeats.csv", m->out_dir);
  pb_err err;
  if (pb_repeat_write_csv(path, s, &err) == 0) return 0;
  fprintf(stderr, "pipebench: %s\n", err.msg);
  return PB_EXIT_RUNTIME;
}

/* <out>/report.json and report.html, and on stdout the median repeat's summary with the intervals (or the
 * JSON). */
static int finish_repeats(run_repeats *x, int rc) {
  pb_multi *m = x->m;
  pb_repeat_summary s;
  pb_repeat_summarize(x->runs, x->nruns, &s);
  char median_dir[PB_PATH_LEN + 192], title[192];
  if (report_repeat(x->runs, x->nruns, &s) < 0) return rc ? rc : PB_EXIT_RUNTIME;
  /* a signal between two repeats interrupted the command too, though no repeat was cut */
  cJSON *tree = repeats_report(m, "", x->runs, x->nruns, &s, rc == PB_EXIT_INTERRUPTED, median_dir, sizeof median_dir);
  snprintf(title, sizeof title, "pipebench report: %s", m->name);
  int wrc = tree ? write_report(m->out_dir, median_dir, tree, m->run.formats & PB_FMT_JSON, title) : PB_EXIT_RUNTIME;
  int crc = write_csv(m, &s);
  if (!wrc) wrc = crc;
  if (tree && m->run.json_stdout) {
    char *text = pb_json_print(tree, true);
    if (text) printf("%s\n", text);
    free(text);
  } else if (wants_text(m)) {
    int r = report_repeat(x->runs, x->nruns, &s);
    if (x->text[r]) fputs(x->text[r], stdout);
    pb_repeat_print_text(stdout, x->runs, x->nruns, &s);
    if (rc == PB_EXIT_INTERRUPTED) pb_repeat_print_stopped(stdout, x->nruns, m->repeat, s.n);
  }
  cJSON_Delete(tree);
  return rc ? rc : wrc;
}

int pb_multi_run_repeated(pb_multi *m) {
  run_repeats *x = calloc(1, sizeof *x);
  pb_config *cfg = calloc(1, sizeof *cfg);
  pb_report *scratch = calloc(1, sizeof *scratch);
  int rc = x && cfg && scratch ? 0 : PB_EXIT_RUNTIME;
  if (!rc) {
    *x = (run_repeats){.m = m, .cfg = cfg, .scratch = scratch};
    rc = pb_multi_begin(m, NULL, 0, cfg, !m->run.synthetic);
    if (!rc) rc = finish_repeats(x, run_repeats_all(x));
  }
  for (int r = 0; x && r < x->nruns; r++) free(x->text[r]);
  free(x);
  free(cfg);
  free(scratch);
  return rc;
}

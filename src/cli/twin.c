/* pipebench twin CAPTURE..: reads a TensorFlow Profiler capture of a tf.data job (src/import/; of several captures
 * of one job, the least disturbed), says what its input pipeline did, and writes a pipebench config that emulates it
 * (src/import/twin.h) for tune, sweep, ab and what-if to work on without TensorFlow or the data (issue 35). */
#include "twin_cmd.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "common.h"
#include "config.h"
#include "config_write.h"
#include "record.h"
#include "tfdata.h"
#include "tfdata_verdict.h"
#include "twin.h"
#include "xspace.h"

/* A capture of several hosts: each one's share waiting, the one read first. */
static void print_hosts(const pb_capture *c) {
  for (int i = 0; c->nhosts > 1 && i < c->nhosts && i < PB_MAX_IMPORT_HOSTS; i++)
    printf("host      %s: %.1f %% of the steps' time waiting for input%s\n", c->hosts[i].capture,
           c->hosts[i].input_bound_pct, i == 0 ? " (the most input-bound: read)" : "");
}

static void print_pipeline(const char *path, const pb_tfdata *t, const pb_tf_verdict *v) {
  printf("capture   %s (host %s): %zu \"%s\" steps, %.1f %% of their time waiting for input\n", path,
         t->host[0] ? t->host : "not named", t->nsteps, t->step_name[0] ? t->step_name : "-", v->input_bound_pct);
  int chain[PB_TF_MAX_ITERATORS];
  int n = pb_tfdata_chain(t, chain, PB_TF_MAX_ITERATORS);
  printf("pipeline  %-38s %8s %7s %12s %9s %12s %10s\n", "iterator (source first)", "parallel", "calls", "own us/call",
         "functions", "us/function", "samples/s");
  for (int i = 0; i < n; i++) {
    const pb_tf_iterator *it = &t->iterators[chain[i]];
    char par[24] = "-";
    if (it->parallelism > 0) snprintf(par, sizeof par, "%lld", (long long)it->parallelism);
    pb_numbuf cap, fn;
    printf("          %-38.38s %8s %7llu %12.1f %9llu %12s %10s\n", it->parent < 0 ? "Root" : it->name, par,
           (unsigned long long)it->calls.n, pb_tf_times_mean_ns(&it->calls) / 1e3, (unsigned long long)it->functions.n,
           pb_fmt_double(&fn, "%.1f", it->functions.n ? pb_tf_times_mean_ns(&it->functions) / 1e3 : NAN),
           pb_fmt_double(&cap, "%.0f", v->capacity_per_s[chain[i]]));
  }
  printf("          (an asynchronous iterator's own time is its consumer's wait for it; its work is its functions')\n");
}

/* The capture's own verdict and advice in tf.data's terms (tfdata_verdict.h). */
static void print_verdict(const pb_tfdata *t, const pb_tf_verdict *v) {
  pb_numbuf a, b, c;
  if (v->bottleneck >= 0)
    printf(
        "verdict   input-bound (%.1f %% waiting): the slowest is %s, %s samples/s; the device takes %s, the job "
        "ran at %s\n",
        v->input_bound_pct, t->iterators[v->bottleneck].name,
        pb_fmt_double(&a, "%.0f", v->capacity_per_s[v->bottleneck]), pb_fmt_double(&b, "%.0f", v->device_per_s),
        pb_fmt_double(&c, "%.0f", v->actual_per_s));
  else if (v->keeps_up)
    printf(
        "verdict   input-bound (%.1f %% waiting), yet every iterator keeps up with the device's %s samples/s: the "
        "steps wait for want of overlap, not of speed; the job ran at %s\n",
        v->input_bound_pct, pb_fmt_double(&a, "%.0f", v->device_per_s), pb_fmt_double(&b, "%.0f", v->actual_per_s));
  else
    printf(
        "verdict   not input-bound (%.1f %% waiting, under %.0f %%): the device's steps are the limit; the job ran "
        "at %s samples/s\n",
        v->input_bound_pct, PB_TF_INPUT_BOUND_PCT, pb_fmt_double(&a, "%.0f", v->actual_per_s));
  for (int i = 0; i < v->nadvice; i++) {
    char pred[64] = "";
    if (!isnan(v->advice[i].predicted_per_s))
      snprintf(pred, sizeof pred, "  -> %.0f samples/s predicted", v->advice[i].predicted_per_s);
    printf("%-10s%s%s\n", i == 0 ? "advice" : "", v->advice[i].text, pred);
  }
}

/* A capture whose functions ran much slower (or faster) at its end than at its start: the twin spins their mean
 * over the whole capture, which is neither. */
static void print_drift(const pb_tfdata *t) {
  double drift = pb_tfdata_work_drift_pct(t);
  if (!(fabs(drift) >= PB_WORK_DRIFT_WARN_PCT)) return;
  printf(
      "warning   the pipeline's functions ran %.0f %% %s at the capture's end than at its start: the profiler or the "
      "machine changed the job while it was captured, and the twin spins their mean over the whole capture "
      "(docs/IMPORT.md, \"Capturing\": capture the job again, or several times, and give twin them all)\n",
      fabs(drift), drift > 0 ? "slower" : "faster");
}

/* "vm.xplane.pb" -> "vm": the capture's host part, for the twin's name and file. */
static void base_name(const char *path, char *out, size_t len) {
  const char *slash = strrchr(path, '/'), *b = slash ? slash + 1 : path;
  size_t n = strlen(b) < len - 1 ? strlen(b) : len - 1;
  memcpy(out, b, n);
  out[n] = '\0';
  if (pb_ends_with(out, PB_CAPTURE_SUFFIX)) out[n - strlen(PB_CAPTURE_SUFFIX)] = '\0';
  for (char *c = out; *c; c++)
    if (*c == '/' || (unsigned char)*c < 0x20) *c = '_';
  if (!out[0]) snprintf(out, len, "capture");
}

/* The kinds of a capture's iterators, source first ("Range ParallelMapV2 BatchV2 Prefetch Root"): two captures of
 * one job have the same, whatever numbers their datasets got. */
static void chain_kinds(const pb_tfdata *t, char *out, size_t len) {
  int chain[PB_TF_MAX_ITERATORS];
  int n = pb_tfdata_chain(t, chain, PB_TF_MAX_ITERATORS);
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < n && used < len; i++)
    used += (size_t)snprintf(out + used, len - used, "%s%s", i ? " " : "", t->iterators[chain[i]].kind);
}

typedef struct picked {
  pb_capture *c;         /* the fastest capture, open */
  pb_tf_verdict verdict; /* its verdict (tfdata_verdict.h), whose actual_per_s chose it */
  int n;                 /* captures read */
  double min_ps, max_ps; /* their jobs' samples/s */
} picked;

/* Opens o's captures and keeps the one whose job ran fastest: the profiler only slows a job down, by amounts that
 * vary from one capture to the next (docs/PERFORMANCE.md), so the fastest is the least disturbed.  They must be of
 * one pipeline.  Prints each one's rate when there are several.  The exit status, after its own error line. */
static int open_fastest(const pb_twin_opts *o, picked *p) {
  char first_kinds[512], kinds[512];
  memset(p, 0, sizeof *p);
  p->min_ps = INFINITY, p->max_ps = -INFINITY;
  double best = -INFINITY;
  for (int i = 0; i < o->ncaptures; i++) {
    pb_capture *c = calloc(1, sizeof *c);
    if (!c) return fprintf(stderr, "pipebench: out of memory\n"), PB_EXIT_RUNTIME;
    int rc = pb_capture_open(o->captures[i], "twin", c);
    if (rc) return free(c), rc;
    chain_kinds(&c->t, i ? kinds : first_kinds, sizeof kinds);
    if (i && strcmp(kinds, first_kinds) != 0) {
      fprintf(stderr,
              "pipebench: twin: %s: not a capture of the same job as %s (expected one pipeline; its iterators are "
              "%s, the first's %s)\n",
              c->path, p->c->path, kinds, first_kinds);
      pb_capture_free(c), free(c);
      return PB_EXIT_USAGE;
    }
    pb_tf_verdict v;
    pb_tfdata_verdict(&c->t, &v);
    double rate = isfinite(v.actual_per_s) ? v.actual_per_s : -1; /* -1: its steps do not say */
    pb_numbuf said, drift;
    if (o->ncaptures > 1 && !o->quiet)
      printf("%-10s%s: the job ran at %s samples/s, its functions drifted %s %% (end against start)\n",
             i == 0 ? "captures" : "", c->path, pb_fmt_double(&said, "%.0f", rate >= 0 ? rate : NAN),
             pb_fmt_double(&drift, "%+.0f", pb_tfdata_work_drift_pct(&c->t)));
    p->n++;
    if (rate >= 0) p->min_ps = fmin(p->min_ps, rate), p->max_ps = fmax(p->max_ps, rate);
    if (i == 0 || rate > best) {
      best = rate;
      if (p->c) pb_capture_free(p->c), free(p->c);
      p->c = c, p->verdict = v;
    } else {
      pb_capture_free(c), free(c);
    }
  }
  if (o->ncaptures > 1 && !o->quiet)
    printf("          the twin is made from %s, the fastest: the profiler only slows a job, by amounts that vary\n",
           p->c->path);
  return 0;
}

/* The config's "about" names the other captures' span too. */
static void about_captures(const picked *p, cJSON *cfg) {
  cJSON *about = cJSON_GetObjectItemCaseSensitive(cfg, "about");
  if (p->n < 2 || !isfinite(p->min_ps) || !cJSON_IsString(about)) return;
  char text[512]; /* the key's limit: 511 characters */
  snprintf(text, sizeof text, "%s; the fastest of %d captures of the job (%.0f to %.0f samples/s)", about->valuestring,
           p->n, p->min_ps, p->max_ps);
  cJSON_ReplaceItemInObjectCaseSensitive(cfg, "about", cJSON_CreateString(text));
}

int pb_twin_cmd(const pb_twin_opts *o) {
  picked p;
  int rc = open_fastest(o, &p);
  if (rc) {
    if (p.c) pb_capture_free(p.c), free(p.c);
    return rc;
  }
  pb_capture *c = p.c;
  const pb_tfdata t = c->t;
  const char *path = c->path;
  char host[96], name[128], file[PB_PATH_LEN];
  if (!o->quiet) print_hosts(c);
  const pb_tf_verdict *verdict = &p.verdict;
  if (!o->quiet) print_pipeline(path, &t, verdict), print_verdict(&t, verdict), print_drift(&t);
  base_name(path, host, sizeof host);
  snprintf(name, sizeof name, "twin-%s", host);
  if (o->out_file)
    snprintf(file, sizeof file, "%s", o->out_file);
  else
    snprintf(file, sizeof file, "%s-twin.json", host);
  pb_twin_notes *notes = calloc(1, sizeof *notes);
  pb_err err = {{0}};
  cJSON *cfg = NULL;
  int made = notes ? pb_twin_config(&t, path, name, notes, &cfg, &err) : pb_err_setc(&err, -ENOMEM, "out of memory");
  if (made) {
    fprintf(stderr, "pipebench: twin: %s\n", err.msg);
    rc = made == -ENOMEM ? PB_EXIT_RUNTIME : PB_EXIT_USAGE;
  }
  if (!rc) about_captures(&p, cfg);
  if (!rc) rc = pb_config_write("twin", file, cfg, o->force);
  if (!rc) rc = pb_config_check_written("twin", file);
  if (!rc && !o->quiet) {
    for (int i = 0; i < notes->n; i++) printf("%-10s%s\n", i == 0 ? "twin" : "", notes->line[i]);
    printf("wrote %s\nnext:  pipebench run %s   (or tune, sweep, ab on it)\n", file, file);
  }
  cJSON_Delete(cfg);
  free(notes);
  pb_capture_free(c);
  free(c);
  return rc;
}

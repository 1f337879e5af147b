/* pipebench twin CAPTURE: reads a TensorFlow Profiler capture of a tf.data job (src/import/), says what its
 * input pipeline did, and writes a pipebench config that emulates it (src/import/twin.h) for tune, sweep, ab
 * and what-if to work on without TensorFlow or the data (issue 35). */
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

int pb_twin_cmd(const pb_twin_opts *o) {
  pb_capture *c = calloc(1, sizeof *c);
  if (!c) return fprintf(stderr, "pipebench: out of memory\n"), PB_EXIT_RUNTIME;
  int rc = pb_capture_open(o->capture, "twin", c);
  if (rc) return free(c), rc;
  const pb_tfdata t = c->t;
  const char *path = c->path;
  char host[96], name[128], file[PB_PATH_LEN];
  if (!o->quiet) print_hosts(c);
  pb_tf_verdict verdict;
  pb_tfdata_verdict(&t, &verdict);
  if (!o->quiet) print_pipeline(path, &t, &verdict), print_verdict(&t, &verdict);
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

/* What `pipebench sweep` writes (sweep_out.h): the table on stdout, sweep.csv and sweep.json. */
#include "sweep_out.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "csv.h"
#include "multirun_out.h"
#include "repeat_out.h"

static const char *fmt_num(char *buf, size_t len, const char *fmt, double v) {
  if (isnan(v)) snprintf(buf, len, "n/a");
  else snprintf(buf, len, fmt, v);
  return buf;
}

static bool ran(const pb_sweep_out *s, int t) { return s->status[t] >= 0 && s->rows[t].have; }

/* Trial u (not the best) cannot be told from the best: both intervals decide, and they overlap. */
static bool overlaps_best(const pb_sweep_out *s, int u) {
  return s->repeats > 1 && s->best >= 0 && u != s->best && s->status[u] >= 0 &&
         pb_interval_compare(&s->sums[s->best].samples_per_s, &s->sums[u].samples_per_s) == PB_DIFF_OVERLAP;
}

/* Whether overlaps_best is decided for trial u: both intervals decide (else JSON null, CSV empty). */
static bool overlap_decided(const pb_sweep_out *s, int u) {
  return s->repeats > 1 && s->best >= 0 && u != s->best && s->status[u] >= 0 &&
         pb_interval_compare(&s->sums[s->best].samples_per_s, &s->sums[u].samples_per_s) != PB_DIFF_UNDECIDED;
}

static int axis_width(const pb_sweep_out *s, int a) { return (int)PB_MAX(8, strlen(s->axes[a].path)); }

/* The marker after a row: the best, or with repeats the highest median and the trials within its interval. */
static const char *row_mark(const pb_sweep_out *s, int t) {
  if (t == s->best) return s->repeats > 1 && s->decision != PB_SWEEP_BEST ? "  <- highest median" : "  <- best";
  if (overlaps_best(s, t)) return "  ~ best";
  return s->status[t] == PB_EXIT_INTERRUPTED ? "  (interrupted)" : s->status[t] ? "  (failed)" : "";
}

static void print_row(const pb_sweep_out *s, int t, FILE *out) {
  char b1[32], b2[32], b3[32], iv[64] = "";
  const pb_run_figures *r = &s->rows[t];
  const pb_interval *rate = &s->sums[t].samples_per_s;
  fprintf(out, "%-5d", t + 1);
  for (int a = 0; a < s->naxes; a++)
    fprintf(out, " %-*s", axis_width(s, a), s->axes[a].values[pb_sweep_value_index(s->axes, s->naxes, t, a)]);
  if (!ran(s, t)) {
    fprintf(out, " failed (exit %d)\n", s->status[t]);
    return;
  }
  if (s->repeats > 1 && pb_interval_has(rate)) snprintf(iv, sizeof iv, "%.1f-%.1f", rate->lo, rate->hi);
  fprintf(out, " %12s", fmt_num(b1, sizeof b1, "%.1f", r->samples_per_s));
  if (s->repeats > 1) fprintf(out, " %17s", iv[0] ? iv : "n/a");
  fprintf(out, " %8s %8s  %-14s%s\n", fmt_num(b2, sizeof b2, "%.1f", r->device_idle_pct),
          fmt_num(b3, sizeof b3, "%.1f", r->accelerator_utilization_pct), r->bottleneck[0] ? r->bottleneck : "-",
          row_mark(s, t));
}

/* With repeats, what the intervals allow to say about the best. */
static void print_verdict(const pb_sweep_out *s, FILE *out) {
  if (s->repeats == 1 || s->best < 0) return;
  const pb_interval *b = &s->sums[s->best].samples_per_s;
  char list[512] = "";
  size_t n = 0;
  for (int u = 0; u < s->ntrials && n < sizeof list; u++)
    if (overlaps_best(s, u)) n += (size_t)snprintf(list + n, sizeof list - n, "%s%d", n ? ", " : "", u + 1);
  if (s->decision == PB_SWEEP_NO_DIFFERENCE)
    fprintf(out, "\nno measurable difference: the highest median, trial %d (%.1f samples/s), and trial(s) %s\n"
                 "  overlap within their intervals (%.1f %% for trial %d); more --repeat narrows them\n",
            s->best + 1, b->median, list, 100 * b->coverage, s->best + 1);
  else if (s->decision == PB_SWEEP_BEST)
    fprintf(out, "\nbest: trial %d, its interval (%.1f-%.1f samples/s, %.1f %%) above every other trial's\n",
            s->best + 1, b->lo, b->hi, 100 * b->coverage);
  else
    fprintf(out, "\nundecided: the highest median is trial %d (%.1f samples/s), but no trial is shown to be the best:\n"
                 "  %s; %d or more completed repeats give intervals of at least %.0f %%\n",
            s->best + 1, b->median, s->undecided, PB_REPEAT_MIN_DECISIVE, 100 * PB_REPEAT_MIN_COVERAGE);
}

void pb_sweep_print_table(FILE *out, const pb_sweep_out *s) {
  fprintf(out, "%-5s", "trial");
  for (int a = 0; a < s->naxes; a++) fprintf(out, " %-*s", axis_width(s, a), s->axes[a].path);
  fprintf(out, " %12s", "samples/s");
  if (s->repeats > 1) fprintf(out, " %17s", "interval");
  fprintf(out, " %8s %8s  %-14s\n", "idle %", "AU %", "bottleneck");
  for (int t = 0; t < s->ntrials; t++)
    if (s->status[t] >= 0) print_row(s, t, out);
  print_verdict(s, out);
}

/* As report.json rounds them: samples/s to 0.1, percentages to 0.01. */
static void csv_num(FILE *f, double v, int decimals) {
  if (isnan(v)) fputc(',', f);
  else fprintf(f, ",%.*f", decimals, v);
}

static void csv_header(const pb_sweep_out *s, FILE *f) {
  fprintf(f, "trial");
  for (int a = 0; a < s->naxes; a++) {
    fputc(',', f);
    pb_csv_put_field(f, s->axes[a].path);
  }
  fprintf(f, ",status,samples_per_s,batches_per_s,device_idle_pct,accelerator_utilization_pct,bottleneck,best");
  fprintf(f, "%s\n", s->repeats > 1 ? ",samples_per_s_lo,samples_per_s_hi,coverage_pct,overlaps_best" : "");
}

static void csv_row(const pb_sweep_out *s, int t, FILE *f) {
  const pb_run_figures *r = &s->rows[t];
  fprintf(f, "%d", t + 1);
  for (int a = 0; a < s->naxes; a++) { /* a swept dataset.path may hold a comma or a line break */
    fputc(',', f);
    pb_csv_put_field(f, s->axes[a].values[pb_sweep_value_index(s->axes, s->naxes, t, a)]);
  }
  fprintf(f, ",%d", s->status[t]);
  csv_num(f, ran(s, t) ? r->samples_per_s : NAN, 1);
  csv_num(f, ran(s, t) ? r->batches_per_s : NAN, 1);
  csv_num(f, ran(s, t) ? r->device_idle_pct : NAN, 2);
  csv_num(f, ran(s, t) ? r->accelerator_utilization_pct : NAN, 2);
  fprintf(f, ",%s,%d", ran(s, t) ? (r->bottleneck[0] ? r->bottleneck : "-") : "", t == s->best);
  if (s->repeats > 1) {
    const pb_interval *iv = &s->sums[t].samples_per_s;
    csv_num(f, iv->lo, 1);
    csv_num(f, iv->hi, 1);
    csv_num(f, 100 * iv->coverage, 2);
    if (overlap_decided(s, t)) fprintf(f, ",%d", overlaps_best(s, t));
    else fputc(',', f);
  }
  fputc('\n', f);
}

static int csv_body(FILE *f, const void *arg) {
  const pb_sweep_out *s = arg;
  csv_header(s, f);
  for (int t = 0; t < s->ntrials; t++)
    if (s->status[t] >= 0) csv_row(s, t, f);
  return 0;
}

int pb_sweep_write_csv(const pb_sweep_out *s, pb_err *err) {
  char path[PB_PATH_LEN + 32];
  snprintf(path, sizeof path, "%s/sweep.csv", s->out_dir);
  int rc = pb_write_atomic(path, csv_body, s);
  if (!rc) return 0;
  return pb_err_setc(err, rc, "%s: cannot write the table: %s (expected a writable output directory)", path,
                     strerror(-rc));
}

static cJSON *trial_json(const pb_sweep_out *s, int t) {
  char dir[PB_PATH_LEN + 32];
  snprintf(dir, sizeof dir, "%s/trial-%03d", s->out_dir, t + 1);
  cJSON *o = pb_multi_figures_json(&s->rows[t], dir);
  cJSON *sets = cJSON_AddObjectToObject(o, "sets");
  for (int a = 0; a < s->naxes; a++)
    cJSON_AddStringToObject(sets, s->axes[a].path, s->axes[a].values[pb_sweep_value_index(s->axes, s->naxes, t, a)]);
  cJSON_AddNumberToObject(o, "trial", t + 1);
  cJSON_AddBoolToObject(o, "best", t == s->best);
  if (s->repeats == 1) {
    cJSON_AddNullToObject(o, "repeats");
    cJSON_AddNullToObject(o, "overlaps_best");
    return o;
  }
  cJSON_AddItemToObject(o, "repeats", pb_repeat_json(&s->runs[(size_t)t * s->repeats], s->nruns[t], &s->sums[t]));
  if (overlap_decided(s, t)) cJSON_AddBoolToObject(o, "overlaps_best", overlaps_best(s, t));
  else cJSON_AddNullToObject(o, "overlaps_best");
  return o;
}

/* With repeats: whether the best is measurably the best, and the trials its interval does not separate;
 * null where the intervals cannot decide (docs/TUNING.md). */
static void add_difference(const pb_sweep_out *s, cJSON *o) {
  static const char *const names[] = {[PB_SWEEP_BEST] = "best", [PB_SWEEP_NO_DIFFERENCE] = "no_measurable_difference",
                                      [PB_SWEEP_UNDECIDED] = "undecided"};
  if (s->repeats == 1 || s->decision == PB_SWEEP_NO_BEST) {
    cJSON_AddNullToObject(o, "decision");
    cJSON_AddNullToObject(o, "undecided_reason");
    cJSON_AddNullToObject(o, "no_measurable_difference");
    cJSON_AddNullToObject(o, "indistinguishable_from_best");
    return;
  }
  cJSON_AddStringToObject(o, "decision", names[s->decision]);
  if (s->decision == PB_SWEEP_UNDECIDED) {
    cJSON_AddStringToObject(o, "undecided_reason", s->undecided);
    cJSON_AddNullToObject(o, "no_measurable_difference");
    cJSON_AddNullToObject(o, "indistinguishable_from_best");
    return;
  }
  cJSON_AddNullToObject(o, "undecided_reason");
  cJSON_AddBoolToObject(o, "no_measurable_difference", s->decision == PB_SWEEP_NO_DIFFERENCE);
  cJSON *ties = cJSON_AddArrayToObject(o, "indistinguishable_from_best");
  for (int u = 0; ties && u < s->ntrials; u++)
    if (overlaps_best(s, u)) cJSON_AddItemToArray(ties, cJSON_CreateNumber(u + 1));
}

cJSON *pb_sweep_json(const pb_sweep_out *s) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "command", "sweep");
  cJSON_AddStringToObject(o, "config", s->config_file);
  cJSON *fixed = cJSON_AddArrayToObject(o, "fixed_sets");
  for (int i = 0; i < s->nfixed; i++) cJSON_AddItemToArray(fixed, cJSON_CreateString(s->fixed[i]));
  cJSON *axes = cJSON_AddArrayToObject(o, "axes");
  for (int a = 0; a < s->naxes; a++) {
    cJSON *ax = cJSON_CreateObject();
    cJSON_AddStringToObject(ax, "path", s->axes[a].path);
    cJSON *vals = cJSON_AddArrayToObject(ax, "values");
    for (int v = 0; v < s->axes[a].nvalues; v++) cJSON_AddItemToArray(vals, cJSON_CreateString(s->axes[a].values[v]));
    cJSON_AddItemToArray(axes, ax);
  }
  cJSON_AddNumberToObject(o, "combinations", s->ntrials);
  cJSON_AddNumberToObject(o, "repeat", s->repeats);
  cJSON *trials = cJSON_AddArrayToObject(o, "trials");
  for (int t = 0; t < s->ntrials; t++)
    if (s->status[t] >= 0) cJSON_AddItemToArray(trials, trial_json(s, t));
  if (s->best >= 0) cJSON_AddItemToObject(o, "best", trial_json(s, s->best));
  else cJSON_AddNullToObject(o, "best");
  add_difference(s, o);
  cJSON_AddBoolToObject(o, "interrupted", s->interrupted);
  return o;
}

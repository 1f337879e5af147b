/* pipebench sweep: the cartesian product of the --set lists, run one after the other in the order of the
 * lists (the last list varies fastest), each into <out>/trial-NNN.  Every combination's config is loaded
 * before the first run, so a bad value fails in a second, not after an hour of runs. */
#include "sweep.h"
#include "json_text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "engine.h"
#include "gen.h"

#define PB_SWEEP_MAX_TRIALS 4096

typedef struct sweep {
  pb_multi *m;
  pb_axis axes[PB_SWEEP_MAX_AXES];
  int naxes;
  const char *fixed[PB_MULTI_MAX_SETS];
  int nfixed;
  int ntrials;
  int repeats;                  /* --repeat: runs of each trial */
  int *status;                  /* per trial: the worst exit status of its repeats, -1 = not run */
  int *nruns;                   /* per trial: repeats run */
  pb_run_figures *runs;         /* per trial and repeat: runs[t * repeats + r] */
  pb_repeat_summary *sums;      /* per trial: medians and intervals over its repeats */
  pb_run_figures *rows;         /* per trial: its figures (with repeats, the medians) */
  pb_report *scratch;           /* the current run's report */
  int best;                     /* trial index, -1 = none */
  pb_sweep_decision decision;   /* with repeats: what the intervals allow to claim about the best */
  char undecided[256];          /* why, when PB_SWEEP_UNDECIDED */
} sweep;

/* ---------- the lists ---------- */

static int add_axis(pb_axis *a, const char *set, size_t path_len, const char *list, pb_err *err) {
  memset(a, 0, sizeof *a);
  if (path_len >= sizeof a->path) return pb_err_set(err, "--set %s: path too long (expected a dotted config path)", set);
  memcpy(a->path, set, path_len);
  for (const char *v = list;; v++) {
    size_t len = strcspn(v, ",");
    if (len == 0) return pb_err_set(err, "--set %s: empty value in the list (expected PATH=V1,V2,..)", set);
    if (len >= sizeof a->values[0] || a->nvalues == PB_SWEEP_MAX_VALUES)
      return pb_err_set(err, "--set %s: too many or too long values (expected at most %d values of %zu characters)",
                        set, PB_SWEEP_MAX_VALUES, sizeof a->values[0] - 1);
    memcpy(a->values[a->nvalues], v, len);
    a->values[a->nvalues++][len] = '\0';
    v += len;
    if (!*v) break;
  }
  return 0;
}

/* A path given one value and also a list: the list's values would silently replace the one value in every
 * combination, so the user's intent is unclear; refuse it. */
static int fixed_not_swept(const char *const *fixed, int nfixed, const pb_axis *axes, int naxes, pb_err *err) {
  for (int i = 0; i < nfixed; i++) {
    size_t len = strcspn(fixed[i], "=");
    for (int a = 0; a < naxes; a++)
      if (strlen(axes[a].path) == len && strncmp(axes[a].path, fixed[i], len) == 0)
        return pb_err_set(err, "--set %s: %s is also given a list (expected one value or one list per path)",
                          fixed[i], axes[a].path);
  }
  return 0;
}

int pb_sweep_split_sets(const char *const *sets, int nsets, pb_axis *axes, int *naxes, const char **fixed,
                        int *nfixed, pb_err *err) {
  *naxes = *nfixed = 0;
  for (int i = 0; i < nsets; i++) {
    const char *eq = strchr(sets[i], '=');
    const char *v = eq ? eq + 1 : NULL;
    bool list = v && strchr(v, ',') && v[0] != '[' && v[0] != '{' && v[0] != '"';
    if (!list) {
      fixed[(*nfixed)++] = sets[i];
      continue;
    }
    if (*naxes == PB_SWEEP_MAX_AXES)
      return pb_err_set(err, "--set %s: more than %d lists (expected fewer swept paths)", sets[i], PB_SWEEP_MAX_AXES);
    int rc = add_axis(&axes[*naxes], sets[i], (size_t)(eq - sets[i]), v, err);
    if (rc) return rc;
    for (int a = 0; a < *naxes; a++)
      if (strcmp(axes[a].path, axes[*naxes].path) == 0)
        return pb_err_set(err, "--set %s: %s has a list already (expected one list per path)", sets[i],
                          axes[a].path);
    ++*naxes;
  }
  return fixed_not_swept(fixed, *nfixed, axes, *naxes, err);
}

/* The path part of PATH=VALUE into out. */
static void path_of(const char *set, char *out) {
  size_t len = PB_MIN(strcspn(set, "="), (size_t)PB_CFG_PATH_LEN - 1);
  memcpy(out, set, len);
  out[len] = '\0';
}

int pb_sweep_check_keys(const char *file, const pb_axis *axes, int naxes, const char *const *fixed, int nfixed,
                        char (*canon)[PB_CFG_PATH_LEN], pb_err *err) {
  int n = naxes + nfixed;
  char(*paths)[PB_CFG_PATH_LEN] = malloc(sizeof *paths * (size_t)(2 * n + 1));
  const char **ptrs = malloc(sizeof *ptrs * (size_t)(n + 1));
  if (!paths || !ptrs) {
    free(paths);
    free(ptrs);
    return pb_err_set(err, "out of memory");
  }
  for (int i = 0; i < n; i++) {
    path_of(i < naxes ? axes[i].path : fixed[i - naxes], paths[i]);
    ptrs[i] = paths[i];
  }
  char(*keys)[PB_CFG_PATH_LEN] = paths + n; /* keys[i]: paths[i] resolved */
  int rc = pb_config_canonical_paths(file, fixed, nfixed, ptrs, n, keys, err);
  for (int i = 0; !rc && i < naxes; i++) {
    for (int j = 0; !rc && j < n; j++)
      if (j != i && (j > i || j >= naxes) && strcmp(keys[i], keys[j]) == 0)
        rc = j < naxes ? pb_err_set(err, "--set %s=..: %s is the same key, and has a list already (expected one list per key)",
                                    paths[j], paths[i])
                       : pb_err_set(err, "--set %s: %s is the same key, and is given a list (expected one value or one "
                                         "list per key)", fixed[j - naxes], paths[i]);
    if (canon) snprintf(canon[i], PB_CFG_PATH_LEN, "%s", keys[i]);
  }
  free(paths);
  free(ptrs);
  return rc;
}

/* Trial t's value index on axis a: the last axis varies fastest. */
static int value_index(const sweep *s, int t, int a) {
  for (int b = s->naxes - 1; b > a; b--) t /= s->axes[b].nvalues;
  return t % s->axes[a].nvalues;
}

/* Trial t's --set expressions into buf (one per axis). */
static void trial_sets(const sweep *s, int t, char buf[][320], const char **sets) {
  for (int a = 0; a < s->naxes; a++) {
    snprintf(buf[a], 320, "%s=%s", s->axes[a].path, s->axes[a].values[value_index(s, t, a)]);
    sets[a] = buf[a];
  }
}

/* Loads every combination once: a value the config refuses stops the sweep before any run. */
static int check_all(sweep *s, pb_config *cfg) {
  char buf[PB_SWEEP_MAX_AXES][320];
  const char *sets[PB_SWEEP_MAX_AXES];
  pb_err err;
  for (int t = 0; t < s->ntrials; t++) {
    trial_sets(s, t, buf, sets);
    if (pb_multi_load(s->m, sets, s->naxes, cfg, &err) || pb_engine_check(cfg, s->m->run.synthetic, &err)) {
      fprintf(stderr, "pipebench: %s\n", err.msg);
      return PB_EXIT_USAGE;
    }
  }
  return 0;
}

static uint64_t path_hash(const char *p) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  return h;
}

/* Before the first run: every combination's dataset generated (a swept dataset.path or dataset.generate
 * key names one the base config does not, and `run` would generate it too) and its memory planned, so
 * that a combination that cannot run fails now, not after the ones before it have run.  Only the first
 * combination of each dataset.path generates here: later ones with other generate settings for the same
 * directory would only overwrite it; pb_multi_run generates again, before its run, when one differs. */
static int prepare_all(sweep *s, pb_config *cfg) {
  char buf[PB_SWEEP_MAX_AXES][320];
  const char *sets[PB_SWEEP_MAX_AXES];
  pb_err err;
  bool real = !s->m->run.synthetic;
  uint64_t *paths = calloc((size_t)s->ntrials, sizeof *paths);
  if (!paths) return PB_EXIT_RUNTIME;
  int rc = 0;
  for (int t = 0; t < s->ntrials && !rc && !pb_signalled(); t++) {
    trial_sets(s, t, buf, sets);
    if (pb_multi_load(s->m, sets, s->naxes, cfg, &err)) {
      fprintf(stderr, "pipebench: %s\n", err.msg);
      rc = PB_EXIT_USAGE;
      break;
    }
    paths[t] = path_hash(cfg->dataset.path);
    bool first = true;
    for (int u = 0; u < t && first; u++) first = paths[u] != paths[t];
    if (real && first) rc = pb_gen_if_missing(cfg, s->m->run.quiet, s->m->run.no_progress);
    if (!rc) rc = pb_run_plan_memory(cfg, !real, false);
  }
  free(paths);
  if (rc) return rc;
  return pb_signalled() ? PB_EXIT_INTERRUPTED : 0;
}

/* ---------- output ---------- */

static const char *fmt_num(char *buf, size_t len, const char *fmt, double v) {
  if (isnan(v)) snprintf(buf, len, "n/a");
  else snprintf(buf, len, fmt, v);
  return buf;
}

static bool ran(const sweep *s, int t) { return s->status[t] >= 0 && s->rows[t].have; }

/* Each trial's medians and intervals over the repeats it ran; its status is its repeats' (130 when one was
 * interrupted, else the first failure), the same in every output. */
static void summarize(sweep *s) {
  for (int t = 0; t < s->ntrials; t++) {
    const pb_run_figures *runs = &s->runs[(size_t)t * s->repeats];
    pb_repeat_summarize(runs, s->nruns[t], &s->sums[t]);
    pb_repeat_figures(runs, s->nruns[t], &s->sums[t], &s->rows[t]);
    if (s->nruns[t]) s->status[t] = s->rows[t].status;
  }
}

/* A trial that can be the best: all its repeats completed, and they measured a rate. */
static bool measured(const sweep *s, int t) { return ran(s, t) && s->status[t] == 0 && !isnan(s->rows[t].samples_per_s); }

/* Trial u (not the best) cannot be told from the best: both intervals decide, and they overlap. */
static bool overlaps_best(const sweep *s, int u) {
  return s->repeats > 1 && s->best >= 0 && u != s->best && s->status[u] >= 0 &&
         pb_interval_compare(&s->sums[s->best].samples_per_s, &s->sums[u].samples_per_s) == PB_DIFF_OVERLAP;
}

/* Whether overlaps_best is decided for trial u: both intervals decide (else JSON null, CSV empty). */
static bool overlap_decided(const sweep *s, int u) {
  return s->repeats > 1 && s->best >= 0 && u != s->best && s->status[u] >= 0 &&
         pb_interval_compare(&s->sums[s->best].samples_per_s, &s->sums[u].samples_per_s) != PB_DIFF_UNDECIDED;
}

pb_sweep_decision pb_sweep_decide(const pb_interval *rate, const bool *ran, int n, int best, char *why, size_t len) {
  if (len) why[0] = '\0';
  if (best < 0 || best >= n) return PB_SWEEP_NO_BEST;
  if (!pb_interval_decisive(&rate[best])) {
    pb_interval_undecided_text(&rate[best], why, len);
    return PB_SWEEP_UNDECIDED;
  }
  for (int u = 0; u < n; u++) /* one decisive overlap settles it, whatever the others */
    if (u != best && ran[u] && pb_interval_compare(&rate[best], &rate[u]) == PB_DIFF_OVERLAP) return PB_SWEEP_NO_DIFFERENCE;
  int others = 0;
  for (int u = 0; u < n; u++) {
    if (u == best || !ran[u]) continue;
    others++;
    if (pb_interval_decisive(&rate[u])) continue;
    char what[96];
    pb_interval_undecided_text(&rate[u], what, sizeof what);
    if (len) snprintf(why, len, "trial %d: %s", u + 1, what);
    return PB_SWEEP_UNDECIDED;
  }
  if (others == 0) {
    if (len) snprintf(why, len, "no other trial ran to compare it with");
    return PB_SWEEP_UNDECIDED;
  }
  return PB_SWEEP_BEST;
}

/* The highest (median) samples/s; with repeats, what its interval allows to claim. */
static void pick_best(sweep *s) {
  s->best = -1;
  for (int t = 0; t < s->ntrials; t++)
    if (measured(s, t) && (s->best < 0 || s->rows[t].samples_per_s > s->rows[s->best].samples_per_s)) s->best = t;
  s->decision = PB_SWEEP_NO_BEST;
  s->undecided[0] = '\0';
  if (s->repeats == 1 || s->ntrials <= 0 || s->ntrials > PB_SWEEP_MAX_TRIALS) return;
  size_t n = (size_t)s->ntrials;
  pb_interval *rate = malloc(sizeof *rate * n);
  bool *trial_ran = malloc(sizeof *trial_ran * n);
  if (rate && trial_ran) {
    for (int t = 0; t < s->ntrials; t++) {
      rate[t] = s->sums[t].samples_per_s;
      trial_ran[t] = s->status[t] >= 0;
    }
    s->decision = pb_sweep_decide(rate, trial_ran, s->ntrials, s->best, s->undecided, sizeof s->undecided);
  }
  free(rate);
  free(trial_ran);
}

static int axis_width(const sweep *s, int a) { return (int)PB_MAX(8, strlen(s->axes[a].path)); }

/* The marker after a row: the best, or with repeats the highest median and the trials within its interval. */
static const char *row_mark(const sweep *s, int t) {
  if (t == s->best) return s->repeats > 1 && s->decision != PB_SWEEP_BEST ? "  <- highest median" : "  <- best";
  if (overlaps_best(s, t)) return "  ~ best";
  return s->status[t] == PB_EXIT_INTERRUPTED ? "  (interrupted)" : s->status[t] ? "  (failed)" : "";
}

static void print_row(const sweep *s, int t, FILE *out) {
  char b1[32], b2[32], b3[32], iv[64] = "";
  const pb_run_figures *r = &s->rows[t];
  const pb_interval *rate = &s->sums[t].samples_per_s;
  fprintf(out, "%-5d", t + 1);
  for (int a = 0; a < s->naxes; a++) fprintf(out, " %-*s", axis_width(s, a), s->axes[a].values[value_index(s, t, a)]);
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
static void print_verdict(const sweep *s, FILE *out) {
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

static void print_table(const sweep *s, FILE *out) {
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

static void csv_header(const sweep *s, FILE *f) {
  fprintf(f, "trial");
  for (int a = 0; a < s->naxes; a++) {
    fputc(',', f);
    pb_csv_put_field(f, s->axes[a].path);
  }
  fprintf(f, ",status,samples_per_s,batches_per_s,device_idle_pct,accelerator_utilization_pct,bottleneck,best");
  fprintf(f, "%s\n", s->repeats > 1 ? ",samples_per_s_lo,samples_per_s_hi,coverage_pct,overlaps_best" : "");
}

static void csv_row(const sweep *s, int t, FILE *f) {
  const pb_run_figures *r = &s->rows[t];
  fprintf(f, "%d", t + 1);
  for (int a = 0; a < s->naxes; a++) { /* a swept dataset.path may hold a comma or a line break */
    fputc(',', f);
    pb_csv_put_field(f, s->axes[a].values[value_index(s, t, a)]);
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
  const sweep *s = arg;
  csv_header(s, f);
  for (int t = 0; t < s->ntrials; t++)
    if (s->status[t] >= 0) csv_row(s, t, f);
  return 0;
}

/* sweep.csv: one row per trial run, the swept values as columns (whole or not at all, and recorded in the
 * directory's manifest as pipebench's, pb_write_atomic). */
static int write_csv(const sweep *s) {
  char path[PB_PATH_LEN + 32];
  snprintf(path, sizeof path, "%s/sweep.csv", s->m->out_dir);
  int rc = pb_write_atomic(path, csv_body, s);
  if (!rc) return 0;
  fprintf(stderr, "pipebench: %s: cannot write the table: %s (expected a writable output directory)\n", path,
          strerror(-rc));
  return PB_EXIT_RUNTIME;
}

static cJSON *trial_json(const sweep *s, int t) {
  char dir[PB_PATH_LEN + 32];
  snprintf(dir, sizeof dir, "%s/trial-%03d", s->m->out_dir, t + 1);
  cJSON *o = pb_multi_figures_json(&s->rows[t], dir);
  cJSON *sets = cJSON_AddObjectToObject(o, "sets");
  for (int a = 0; a < s->naxes; a++) cJSON_AddStringToObject(sets, s->axes[a].path, s->axes[a].values[value_index(s, t, a)]);
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
static void add_difference(const sweep *s, cJSON *o) {
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

static cJSON *sweep_json(const sweep *s, bool interrupted) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "command", "sweep");
  cJSON_AddStringToObject(o, "config", s->m->config_file);
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
  cJSON_AddBoolToObject(o, "interrupted", interrupted);
  return o;
}

/* ---------- the runs ---------- */

static void show_trial(const sweep *s, int t, int r, const char *const *sets, double wall_s, int rc) {
  char line[1024] = "", b[32], rep[48] = "";
  size_t len = 0;
  for (int a = 0; a < s->naxes && len < sizeof line; a++)
    len += (size_t)snprintf(line + len, sizeof line - len, "%s%s", a ? " " : "", sets[a]);
  if (s->repeats > 1) snprintf(rep, sizeof rep, " (repeat %d/%d)", r + 1, s->repeats);
  fprintf(stderr, "pipebench: sweep: trial %d/%d%s %s: %.1f s, %s samples/s%s\n", t + 1, s->ntrials, rep, line,
          wall_s, fmt_num(b, sizeof b, "%.1f", s->scratch->version ? s->scratch->samples_per_s : NAN),
          rc == PB_EXIT_INTERRUPTED ? " (interrupted)" : rc ? " (failed)" : "");
}

/* Repeat r of trial t into <out>/trial-NNN (with repeats, <out>/trial-NNN/repeat-R).  A config that no
 * longer loads (checked before; its files may have changed) is the trial's failure, exit 2, kept in the
 * table as "failed (exit 2)". */
static int run_trial(sweep *s, int t, int r, pb_config *cfg) {
  char buf[PB_SWEEP_MAX_AXES][320], trial[32], name[64];
  const char *sets[PB_SWEEP_MAX_AXES];
  pb_err err;
  pb_run_figures *f = &s->runs[(size_t)t * s->repeats + r];
  trial_sets(s, t, buf, sets);
  int rc;
  if (pb_multi_load(s->m, sets, s->naxes, cfg, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    rc = PB_EXIT_USAGE;
    pb_run_figures_of(NULL, rc, 0, f);
  } else {
    snprintf(trial, sizeof trial, "trial-%03d", t + 1);
    pb_multi_repeat_name(s->m, trial, r, name, sizeof name);
    uint64_t t0 = pb_now_ns();
    rc = pb_multi_run(s->m, cfg, name, s->m->run.synthetic, s->scratch);
    double wall_s = (double)(pb_now_ns() - t0) / 1e9;
    pb_run_figures_of(s->scratch, rc, wall_s, f);
    if (!s->m->run.quiet) show_trial(s, t, r, sets, wall_s, rc);
  }
  s->nruns[t] = r + 1;
  if (s->status[t] <= 0) s->status[t] = rc; /* the trial keeps its first failure (summarize settles it) */
  return rc;
}

/* Round after round, every combination once per round: a machine that drifts moves every trial alike. */
static int run_all(sweep *s, pb_config *cfg, bool *interrupted) {
  int worst = 0;
  for (int r = 0; r < s->repeats; r++)
    for (int t = 0; t < s->ntrials; t++) {
      int rc = pb_signalled() ? PB_EXIT_INTERRUPTED : run_trial(s, t, r, cfg);
      if (rc == PB_EXIT_INTERRUPTED || pb_signalled()) {
        *interrupted = true;
        return PB_EXIT_INTERRUPTED;
      }
      if (rc && !worst) worst = rc;
    }
  return worst;
}

/* With repeats, each trial's directory gets the report of its median repeat with the intervals. */
static int write_repeat_reports(const sweep *s) {
  int rc = 0;
  for (int t = 0; t < s->ntrials && s->repeats > 1; t++) {
    char trial[32];
    snprintf(trial, sizeof trial, "trial-%03d", t + 1);
    int wrc = s->nruns[t] ? pb_multi_write_repeats(s->m, trial, &s->runs[(size_t)t * s->repeats], s->nruns[t], &s->sums[t]) : 0;
    if (!rc) rc = wrc;
  }
  return rc;
}

static int finish(sweep *s, int rc, bool interrupted) {
  summarize(s);
  pick_best(s);
  int rrc = write_repeat_reports(s);
  cJSON *json = sweep_json(s, interrupted);
  int wrc = pb_multi_write_json(s->m, "sweep.json", json);
  int crc = write_csv(s); /* attempted whatever sweep.json did */
  if (!wrc) wrc = crc;
  if (!wrc) wrc = rrc;
  if (s->m->run.json_stdout) {
    char *text = pb_json_print(json, true);
    if (text) printf("%s\n", text);
    free(text);
  } else if (!s->m->run.quiet && (s->m->run.formats & PB_FMT_TEXT)) { /* --format without text: no table */
    print_table(s, stdout);
    if (!wrc) printf("\nsweep: %s/sweep.csv, %s/sweep.json\n", s->m->out_dir, s->m->out_dir);
  }
  cJSON_Delete(json);
  return rc ? rc : wrc;
}

/* The per-trial tables, sized for the combinations and the repeats. */
static int alloc_trials(sweep *s, long n) {
  s->repeats = pb_multi_repeats(s->m);
  s->status = malloc(sizeof *s->status * (size_t)n);
  s->nruns = calloc((size_t)n, sizeof *s->nruns);
  s->runs = calloc((size_t)n * (size_t)s->repeats, sizeof *s->runs);
  s->sums = calloc((size_t)n, sizeof *s->sums);
  s->rows = calloc((size_t)n, sizeof *s->rows);
  s->scratch = calloc(1, sizeof *s->scratch);
  if (!s->status || !s->nruns || !s->runs || !s->sums || !s->rows || !s->scratch) return PB_EXIT_RUNTIME;
  for (int t = 0; t < n; t++) s->status[t] = -1;
  return 0;
}

static void free_sweep(sweep *s) {
  if (!s) return;
  free(s->status);
  free(s->nruns);
  free(s->runs);
  free(s->sums);
  free(s->rows);
  free(s->scratch);
  free(s);
}

static int setup(sweep *s, pb_multi *m) {
  pb_err err;
  s->m = m;
  if (pb_sweep_split_sets(m->base_sets, m->nbase_sets, s->axes, &s->naxes, s->fixed, &s->nfixed, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  if (s->naxes && pb_sweep_check_keys(m->config_file, s->axes, s->naxes, s->fixed, s->nfixed, NULL, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  if (s->naxes == 0) {
    fprintf(stderr, "pipebench: sweep: no list to sweep (expected --set PATH=V1,V2,.. at least once)\n");
    return PB_EXIT_USAGE;
  }
  long n = 1;
  for (int a = 0; a < s->naxes && n <= PB_SWEEP_MAX_TRIALS; a++) n *= s->axes[a].nvalues;
  if (n > PB_SWEEP_MAX_TRIALS) {
    fprintf(stderr, "pipebench: sweep: more than %d combinations (expected shorter lists)\n", PB_SWEEP_MAX_TRIALS);
    return PB_EXIT_USAGE;
  }
  s->ntrials = (int)n;
  m->base_sets = s->fixed;
  m->nbase_sets = s->nfixed;
  return alloc_trials(s, n);
}

int pb_sweep(pb_multi *m) {
  sweep *s = calloc(1, sizeof *s);
  pb_config *cfg = calloc(1, sizeof *cfg);
  int rc = s && cfg ? setup(s, m) : PB_EXIT_RUNTIME;
  if (!rc) rc = check_all(s, cfg);
  /* the base config's own dataset is not generated here: a swept dataset.path may never use it, and
   * prepare_all generates each combination's (the base's among them when a combination uses it) */
  char first_buf[PB_SWEEP_MAX_AXES][320];
  const char *first[PB_SWEEP_MAX_AXES];
  if (!rc) trial_sets(s, 0, first_buf, first); /* the base may need a swept key to load at all */
  if (!rc) rc = pb_multi_begin(m, first, s->naxes, cfg, false);
  if (!rc) rc = prepare_all(s, cfg);
  if (!rc) {
    bool interrupted = false;
    if (!m->run.quiet)
      fprintf(stderr, "pipebench: sweep: %d combinations%s into %s\n", s->ntrials,
              s->repeats > 1 ? ", each once a round" : "", m->out_dir);
    rc = run_all(s, cfg, &interrupted);
    rc = finish(s, rc, interrupted);
  }
  free_sweep(s);
  free(cfg);
  return rc;
}

/* pipebench sweep: the cartesian product of the --set lists, run one after the other in the order of the
 * lists (the last list varies fastest), each into <out>/trial-NNN.  Every combination's config is loaded
 * before the first run, so a bad value fails in a second, not after an hour of runs.  The grid and the best
 * are src/analysis/sweep_grid.c; the table, sweep.csv and sweep.json src/reports/sweep_out.c. */
#include "sweep.h"
#include "json_text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "gen.h"

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

/* Trial t's --set expressions into buf (one per axis). */
static void trial_sets(const sweep *s, int t, char buf[][320], const char **sets) {
  for (int a = 0; a < s->naxes; a++) {
    snprintf(buf[a], 320, "%s=%s", s->axes[a].path, s->axes[a].values[pb_sweep_value_index(s->axes, s->naxes, t, a)]);
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

/* ---------- the results ---------- */

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

/* The highest (median) samples/s; with repeats, what its interval allows to claim. */
static void pick_best(sweep *s) {
  s->best = pb_sweep_best(s->rows, s->status, s->ntrials);
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

/* ---------- the runs ---------- */

static void show_trial(const sweep *s, int t, int r, const char *const *sets, double wall_s, int rc) {
  char line[1024] = "", rep[48] = "";
  size_t len = 0;
  for (int a = 0; a < s->naxes && len < sizeof line; a++)
    len += (size_t)snprintf(line + len, sizeof line - len, "%s%s", a ? " " : "", sets[a]);
  if (s->repeats > 1) snprintf(rep, sizeof rep, " (repeat %d/%d)", r + 1, s->repeats);
  char rate[32];
  snprintf(rate, sizeof rate, "%.1f", s->scratch->samples_per_s);
  fprintf(stderr, "pipebench: sweep: trial %d/%d%s %s: %.1f s, %s samples/s%s\n", t + 1, s->ntrials, rep, line,
          wall_s, s->scratch->version && !isnan(s->scratch->samples_per_s) ? rate : "n/a",
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

/* The command's result for src/reports/sweep_out.c (pointing into s). */
static pb_sweep_out result(const sweep *s, bool interrupted) {
  return (pb_sweep_out){.config_file = s->m->config_file, .out_dir = s->m->out_dir, .fixed = s->fixed,
                        .nfixed = s->nfixed, .axes = s->axes, .naxes = s->naxes, .ntrials = s->ntrials,
                        .repeats = s->repeats, .status = s->status, .nruns = s->nruns, .runs = s->runs,
                        .sums = s->sums, .rows = s->rows, .best = s->best, .decision = s->decision,
                        .undecided = s->undecided, .interrupted = interrupted};
}

/* sweep.csv, with its error on stderr: 0, or PB_EXIT_RUNTIME. */
static int write_csv(const pb_sweep_out *out) {
  pb_err err;
  if (pb_sweep_write_csv(out, &err) == 0) return 0;
  fprintf(stderr, "pipebench: %s\n", err.msg);
  return PB_EXIT_RUNTIME;
}

static int finish(sweep *s, int rc, bool interrupted) {
  summarize(s);
  pick_best(s);
  int rrc = write_repeat_reports(s);
  pb_sweep_out out = result(s, interrupted);
  cJSON *json = pb_sweep_json(&out);
  int wrc = pb_multi_write_json(s->m, "sweep.json", json);
  int crc = write_csv(&out); /* attempted whatever sweep.json did */
  if (!wrc) wrc = crc;
  if (!wrc) wrc = rrc;
  if (s->m->run.json_stdout) {
    char *text = pb_json_print(json, true);
    if (text) printf("%s\n", text);
    free(text);
  } else if (!s->m->run.quiet && (s->m->run.formats & PB_FMT_TEXT)) { /* --format without text: no table */
    pb_sweep_print_table(stdout, &out);
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
  long n = pb_sweep_combinations(s->axes, s->naxes);
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

/* pipebench tune: a model-guided search of thread counts per stage and prefetch depth.
 *
 * The knobs: `threads` of every read, decode, map and batch stage, and the `depth` of the prefetch stage.
 * Their values: the --set PATH=V1,V2,.. lists when given (the search then stays inside exactly the space
 * a `pipebench sweep` of the same lists would run), else 1..256 threads and depth 1..256.
 *
 * Each trial is a measured run, and its report carries the model of the pipeline fitted to it (the one
 * model of src/analysis/model.h, which the bottleneck rule and the recommendations use too): a candidate's
 * prediction is that model's simulation of the pipeline with the candidate's threads and depths.  The
 * candidates for the next trial come from the model fitted to the best run so far and to each other
 * trial, and from their analyses:
 *   allocation   threads sized for the model's best rate (Plumber's allocation of cores to stages by
 *                their measured per-core rates), with 10 % headroom
 *   bottleneck   more threads for the stage the analysis blames (critical path, cross-checked)
 *   move         a thread moved from a CPU-bound stage with slack to a CPU-bound bottleneck when the
 *                cores are saturated
 *   prefetch     twice the depth when the pipeline keeps up on average but the device still waits
 *   recommend    the analysis' own recommendations that are knob changes (their predictions get checked)
 *   explore      one step around the best point, while the model is unchecked or has been wrong
 * The candidate with the highest predicted samples/s runs next.  The search stops when the device is the
 * limit, when no candidate is predicted to gain 2 % and the model has been checked and right (median
 * |error| within 15 %), after two trials in a row that did not gain 2 %, at the trial limit, or when the
 * next trial would end after --budget-s.  Every trial's prediction is compared with its measurement.
 * See docs/TUNING.md. */
#include "tune.h"
#include "json_edit.h"
#include "json_text.h"
#include "stage_desc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis.h"
#include "engine.h"
#include "sweep.h"
#include "tune_out.h"
#include "tune_search.h"

#define MAX_KNOBS PB_TUNE_MAX_KNOBS
_Static_assert(PB_SWEEP_MAX_VALUES <= PB_TUNE_MAX_VALUES, "a --set list fits a knob");
#define MAX_TRIALS 256
#define DEFAULT_MAX_TRIALS 12
#define DEFAULT_BUDGET_S 600.0
#define GAIN 1.02                 /* a change must gain 2 % to count: run-to-run noise on a busy machine */
#define MODEL_MISS_PCT 15.0       /* median |prediction error| above which the model is not trusted to stop */
/* The base and the best, re-measured interleaved at least this many times: 5 pairs give each a (min, max)
 * interval of 93.75 %, the fewest that can decide a difference (repeat.h) */
#define REMEASURE_MIN_PAIRS PB_REPEAT_MIN_DECISIVE
#define CEILING_MATCH PB_TUNE_CEILING_MATCH /* a prediction within 1 % of the device's rate: "up to" */

typedef pb_tune_knob knob;
typedef pb_tune_point point;
typedef pb_tune_trial trial;
typedef pb_tune_remeasure remeasure;

/* A trial's model of the pipeline (model.h, in its report), and what tune reads of it per knob. */
typedef struct model {
  const pb_report *r;
  int row[MAX_KNOBS];           /* the knob's stage in the model (-1: not there, e.g. skipped) */
  pb_tune_rates rates;          /* per knob: one thread's seconds per sample, bandwidth cap, CPU-bound */
} model;

typedef struct tuner {
  pb_multi *m;
  pb_config *cfg;               /* scratch */
  knob knobs[MAX_KNOBS];
  int nknobs;
  const char *fixed[PB_MULTI_MAX_SETS];
  int nfixed;
  bool listed;                  /* the space was given as lists */
  long space_size;              /* combinations, when listed */
  trial trials[MAX_TRIALS];
  int ntrials, best, max_trials;
  double budget_s;
  uint64_t t0_ns, search_end_ns;
  char stop_reason[384];
  int ncpu;
  int repeats;                  /* --repeat: runs of each trial */
  remeasure re;
} tuner;

/* ---------- knobs and points ---------- */

static int snap_up(const knob *k, double want) { return pb_tune_snap_up(k, want); }
static int step_up(const knob *k, int cur) { return pb_tune_step_up(k, cur); }
static int step_down(const knob *k, int cur) { return pb_tune_step_down(k, cur); }

static bool same_point(const tuner *t, const point *a, const point *b) {
  for (int k = 0; k < t->nknobs; k++)
    if (a->v[k] != b->v[k]) return false;
  return true;
}

static bool tried(const tuner *t, const point *p) {
  for (int i = 0; i < t->ntrials; i++)
    if (same_point(t, &t->trials[i].p, p)) return true;
  return false;
}

/* Room for "<path>=<int>": the knob path plus '=', up to 11 digits with sign, and the NUL. */
#define SET_LEN (PB_NAME_LEN + 32 + 16)

static void point_sets(const tuner *t, const point *p, char buf[][SET_LEN], const char **sets) {
  for (int k = 0; k < t->nknobs; k++) {
    snprintf(buf[k], SET_LEN, "%s=%d", t->knobs[k].path, p->v[k]);
    sets[k] = buf[k];
  }
}

static int load_point(tuner *t, const point *p, pb_err *err) {
  char buf[MAX_KNOBS][SET_LEN];
  const char *sets[MAX_KNOBS];
  point_sets(t, p, buf, sets);
  return pb_multi_load(t->m, sets, t->nknobs, t->cfg, err);
}

/* The pipeline's planned buffers at this point fit limits.max_memory_mb. */
static bool fits_memory(tuner *t, const point *p) {
  pb_err err;
  if (load_point(t, p, &err)) return false;
  pb_engine *e = calloc(1, sizeof *e);
  if (!e) return false;
  bool ok = false;
  if (!pb_engine_plan(e, t->cfg, t->m->run.synthetic, t->cfg->device.count, &err)) {
    char who[256];
    ok = pb_engine_memory_bytes(e, PB_QUEUES_FULL, who, sizeof who) <= (uint64_t)t->cfg->max_memory_mb * 1000000u;
  }
  pb_engine_close(e);
  free(e);
  return ok;
}

/* The cores rule (pb_tune_within_cores) on the model's CPU-bound stages. */
static bool within_cores(const tuner *t, const model *md, const point *p) {
  return pb_tune_within_cores(t->knobs, t->nknobs, &md->rates, p, t->ncpu);
}

/* ---------- the model ---------- */

static int knob_for_stage(const tuner *t, const char *name, bool depth) {
  for (int k = 0; k < t->nknobs; k++)
    if (t->knobs[k].depth == depth && strcmp(t->cfg->stages[t->knobs[k].stage].name, name) == 0) return k;
  return -1;
}

/* What tune reads of a trial's model of the pipeline (model.h, carried by its report): each knob's row,
 * and for a threads knob one thread's seconds per delivered sample on an idle machine. */
static void fit_model(const tuner *t, const pb_report *r, model *md) {
  memset(md, 0, sizeof *md);
  md->r = r;
  const pb_model *pm = &r->model;
  for (int k = 0; k < t->nknobs; k++) {
    md->row[k] = pb_model_row(pm, t->cfg->stages[t->knobs[k].stage].name);
    const pb_model_stage *ms = md->row[k] >= 0 ? &pm->stages[md->row[k]] : NULL;
    md->rates.valid[k] = pm->valid && ms && ms->valid;
    if (!md->rates.valid[k] || t->knobs[k].depth) continue;
    md->rates.cpu_bound[k] = ms->cpu_share >= PB_CPU_BOUND_FRACTION;
    double cap = pb_model_stage_capacity(r, md->row[k]); /* threads x this thread's rate, in samples/s */
    md->rates.thread_s[k] = cap > 0 ? ms->threads / cap : 0;
    md->rates.bw_cap[k] = ms->rate_cap_per_s > 0 ? ms->rate_cap_per_s * (ms->batched ? pm->batch_size : 1) : INFINITY;
  }
}

/* A knob stage's samples/s with `threads` threads, each as fast as on an idle machine (the cores bound
 * them together: the simulation knows). */
static double stage_cap(const model *md, int k, int threads) { return pb_tune_stage_cap(&md->rates, k, threads); }

/* The point as a change to the model's pipeline. */
static void point_change(const tuner *t, const model *md, const point *p, pb_model_change *c) {
  pb_model_change_init(c);
  for (int k = 0; k < t->nknobs; k++) {
    if (md->row[k] < 0) continue;
    if (t->knobs[k].depth) c->queue_capacity[md->row[k]] = p->v[k];
    else c->threads[md->row[k]] = p->v[k];
  }
}

/* The model's samples/s at point p: the simulation of the pipeline with those threads and depths. */
static double predict(const tuner *t, const model *md, const point *p) {
  pb_model_change c;
  point_change(t, md, p, &c);
  pb_model_result res;
  return md->r->model.valid && pb_model_predict(&md->r->model, &c, &res) ? res.samples_per_s : NAN;
}

/* The best the model allows with any threads: the device, the stages that are not knobs, the cores'
 * limit, bandwidth caps. */
static double ceiling(const tuner *t, const model *md) {
  const pb_report *r = md->r;
  double rate = isnan(r->device_rate_per_s) ? INFINITY : r->device_rate_per_s;
  if (!isnan(r->cpu_limit_per_s)) rate = fmin(rate, r->cpu_limit_per_s);
  for (int i = 0; i < r->model.nstages; i++) {
    bool is_knob = false;
    for (int k = 0; k < t->nknobs; k++) is_knob = is_knob || (md->row[k] == i && !t->knobs[k].depth);
    double cap = pb_model_stage_capacity(r, i);
    if (!is_knob && !isnan(cap)) rate = fmin(rate, cap);
  }
  for (int k = 0; k < t->nknobs; k++)
    if (!t->knobs[k].depth && md->rates.valid[k]) rate = fmin(rate, md->rates.bw_cap[k]);
  return rate;
}

/* Threads a stage needs for `rate` samples/s, as an allowed value (pb_tune_threads_needed). */
static int threads_needed(const tuner *t, const model *md, int k, double rate) {
  return pb_tune_threads_needed(&t->knobs[k], md->rates.thread_s[k], rate);
}

/* ---------- candidates ---------- */

typedef pb_tune_candidate candidate;

typedef struct cand_list {
  /* From the best trial (at most 13 + prefetch knobs), the steps around it (2 per knob), then the other
   * trials, newest first, while there is room. */
  candidate v[4 * (PB_MAX_RECOMMENDATIONS + 8) + 2 * MAX_KNOBS];
  int n;
  bool offering_explore;        /* what offer() is adding now */
} cand_list;

/* A prediction at the device's rate (within 1 %) of the report it was made from: a ceiling the change
 * cannot pass, not an estimate of how far it gets ("up to"). */
static bool at_device_rate(const pb_report *r, double predicted) {
  double dev = r->device_rate_per_s;
  return isfinite(dev) && dev > 0 && fabs(predicted - dev) <= CEILING_MATCH * dev;
}

/* Adds a candidate unless the list is full or the point is listed, measured, over the cores guard or
 * over memory (checked in that order: the memory check plans the pipeline).  The list keeps the first
 * of equal points, so whoever offers first keeps the label and the prediction.  Returns the candidate
 * when it now carries this offer's label and prediction, else NULL. */
static candidate *offer(tuner *t, cand_list *cl, const model *md, const point *p, double predicted, const char *fmt,
                        const char *name) {
  for (int i = 0; i < cl->n; i++) {
    candidate *c = &cl->v[i];
    if (!same_point(t, &c->p, p)) continue;
    if (!c->explore || cl->offering_explore) return NULL;
    c->explore = false; /* a model's own reason beats a step around */
    c->predicted = predicted;
    c->up_to = at_device_rate(md->r, predicted);
    snprintf(c->change, sizeof c->change, fmt, name);
    return c;
  }
  if (cl->n == (int)PB_ARRAY_LEN(cl->v)) return NULL;
  if (tried(t, p) || !within_cores(t, md, p) || !fits_memory(t, p)) return NULL;
  candidate *c = &cl->v[cl->n++];
  *c = (candidate){.p = *p, .predicted = predicted, .up_to = at_device_rate(md->r, predicted),
                   .explore = cl->offering_explore};
  snprintf(c->change, sizeof c->change, fmt, name);
  return c;
}

static const char *stage_name(const tuner *t, int k) { return t->cfg->stages[t->knobs[k].stage].name; }

/* Plumber's allocation: every threads knob sized for the model's ceiling. */
static void offer_allocation(tuner *t, cand_list *cl, const model *md, const point *from) {
  double target = ceiling(t, md);
  if (isinf(target) || isnan(target)) return;
  point p; /* over the cores' guard: trimmed on the stages with the most slack first */
  pb_tune_allocate(t->knobs, t->nknobs, &md->rates, t->ncpu, target, from, &p);
  offer(t, cl, md, &p, predict(t, md, &p), "allocation%s", "");
}

/* The cores the trial's pipeline could use (the model's: affinity and quota less others' load), else the
 * online CPUs. */
static double trial_cores(const tuner *t, const trial *tr) {
  return tr->rep->model.valid && tr->rep->model.cores > 0 ? tr->rep->model.cores : t->ncpu;
}

/* More threads for the stage the analysis blames, enough for the next limit when the model knows it. */
static void offer_bottleneck(tuner *t, cand_list *cl, const model *md, const trial *best) {
  int k = knob_for_stage(t, best->rep->bottleneck_stage, false);
  if (k < 0 || !md->rates.valid[k]) return;
  point p = best->p;
  int want = threads_needed(t, md, k, ceiling(t, md));
  p.v[k] = want > best->p.v[k] ? want : step_up(&t->knobs[k], best->p.v[k]);
  if (p.v[k] != best->p.v[k]) offer(t, cl, md, &p, predict(t, md, &p), "%s: more threads (bottleneck)", stage_name(t, k));
  point q = best->p; /* one step only: the model may overshoot */
  q.v[k] = step_up(&t->knobs[k], best->p.v[k]);
  if (q.v[k] != best->p.v[k]) offer(t, cl, md, &q, predict(t, md, &q), "%s: one more thread (bottleneck)", stage_name(t, k));
  /* Saturated cores: take a thread from the CPU-bound stage with the most slack. */
  if (!md->rates.cpu_bound[k] || best->rep->cores_used < 0.85 * trial_cores(t, best)) return;
  double rate = best->rep->samples_per_s;
  int donor = -1;
  for (int d = 0; d < t->nknobs; d++) {
    if (d == k || t->knobs[d].depth || !md->rates.valid[d] || !md->rates.cpu_bound[d]) continue;
    int fewer = step_down(&t->knobs[d], best->p.v[d]);
    if (fewer == best->p.v[d] || stage_cap(md, d, fewer) < 1.15 * rate) continue;
    if (donor < 0 || stage_cap(md, d, fewer) > stage_cap(md, donor, step_down(&t->knobs[donor], best->p.v[donor]))) donor = d;
  }
  if (donor < 0) return;
  q.v[donor] = step_down(&t->knobs[donor], best->p.v[donor]);
  offer(t, cl, md, &q, predict(t, md, &q), "%s: a thread moved to it (cores saturated)", stage_name(t, k));
}

/* Deeper prefetch when the pipeline keeps up on average and the device still waits. */
static void offer_prefetch(tuner *t, cand_list *cl, const model *md, const trial *best) {
  const pb_report *r = best->rep;
  if (!(r->device_idle_pct > 2) || isnan(r->model_capacity_per_s) || isnan(r->device_rate_per_s) ||
      r->model_capacity_per_s < 1.1 * r->device_rate_per_s)
    return;
  for (int k = 0; k < t->nknobs; k++) {
    if (!t->knobs[k].depth) continue;
    point p = best->p;
    p.v[k] = snap_up(&t->knobs[k], 2.0 * best->p.v[k]);
    if (p.v[k] != best->p.v[k]) offer(t, cl, md, &p, predict(t, md, &p), "%s: deeper (device waits on variance)", stage_name(t, k));
  }
}


/* Saturated cores: the CPU-bound stages with more threads each (twice, else half as many again).  The
 * scheduler shares the cores among runnable threads, so more of them may win the stages a bigger share
 * against the engine's other threads and fill the gaps where one blocks on a queue.  Predicted by the
 * model like any other point (with the cores it had): a candidate to measure, not a promise. */
static void offer_oversubscribe(tuner *t, cand_list *cl, const model *md, const trial *best) {
  if (best->rep->cores_used < 0.85 * trial_cores(t, best)) return;
  for (double f = 2.0; f >= 1.5; f -= 0.5) {
    point p = best->p;
    for (int k = 0; k < t->nknobs; k++)
      if (!t->knobs[k].depth && md->rates.valid[k] && md->rates.cpu_bound[k])
        p.v[k] = snap_up(&t->knobs[k], f * best->p.v[k]);
    if (within_cores(t, md, &p)) {
      offer(t, cl, md, &p, predict(t, md, &p), "more threads, CPU-bound (cores saturated)%s", "");
      return;
    }
  }
}

/* A recommendation made only of knob changes ("--set stages.X.threads=N ..."), as a point; false if not. */
static bool recommendation_point(const tuner *t, const char *action, const point *from, point *p) {
  *p = *from;
  char buf[sizeof ((pb_recommendation *)0)->action];
  snprintf(buf, sizeof buf, "%s", action);
  int n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
    if (strcmp(tok, "--set") == 0) continue;
    char name[PB_NAME_LEN], what[16];
    int v;
    if (sscanf(tok, "stages.%63[^.].%15[a-z]=%d", name, what, &v) != 3) return false;
    int k = knob_for_stage(t, name, strcmp(what, "depth") == 0);
    if (k < 0 || (strcmp(what, "depth") && strcmp(what, "threads"))) return false;
    if (t->knobs[k].nvalues && snap_up(&t->knobs[k], v) != v) return false; /* outside the listed space */
    if (v < 1 || v > PB_TUNE_RANGE_MAX) return false;
    p->v[k] = v;
    n++;
  }
  return n > 0;
}

static void offer_recommendations(tuner *t, cand_list *cl, const model *md, const trial *best) {
  for (int i = 0; i < best->rep->nrecommendations; i++) {
    const pb_recommendation *rc = &best->rep->recommendations[i];
    point p;
    if (isnan(rc->predicted_samples_per_s) || !recommendation_point(t, rc->action, &best->p, &p)) continue;
    candidate *c = offer(t, cl, md, &p, rc->predicted_samples_per_s, "recommendation: %s", rc->action);
    if (c) c->up_to = c->up_to || rc->up_to; /* the analysis' own "up to" */
  }
}

/* The candidate predicted best (pb_tune_pick), or -1; steps around the best point only when exploring. */
static int pick(const cand_list *cl, bool exploring) { return pb_tune_pick(cl->v, cl->n, exploring); }

/* ---------- trials ---------- */

static double elapsed_s(const tuner *t) { return (double)(pb_now_ns() - t->t0_ns) / 1e9; }

/* The search's own time, without the re-measure after it (all of it while the search runs). */
static double search_s(const tuner *t) {
  return (double)((t->search_end_ns ? t->search_end_ns : pb_now_ns()) - t->t0_ns) / 1e9;
}

static double measured(const trial *tr) { return pb_tune_trial_measured(tr); }
static double error_pct(const trial *tr) { return pb_tune_trial_error_pct(tr); }

static void point_text(const tuner *t, const point *p, char *out, size_t len) {
  pb_tune_point_text(t->knobs, t->nknobs, p, out, len);
}

static void show_trial(const tuner *t, const trial *tr) {
  if (t->m->run.quiet) return;
  char pred[32] = "-", err[32] = "", pt[1024], over[48] = "";
  if (!isnan(tr->predicted)) snprintf(pred, sizeof pred, "%s%.1f", tr->up_to ? "up to " : "", tr->predicted);
  if (!isnan(error_pct(tr))) snprintf(err, sizeof err, " (prediction error %+.1f %%)", error_pct(tr));
  if (t->repeats > 1) snprintf(over, sizeof over, " (median of %d)", tr->sum.n);
  point_text(t, &tr->p, pt, sizeof pt);
  fprintf(stderr, "pipebench: tune: trial %d, %s: %s\n", t->ntrials, tr->change, pt);
  if (tr->status)
    fprintf(stderr, "pipebench: tune:   %s (exit %d) after %.1f s\n",
            tr->status == PB_EXIT_INTERRUPTED ? "interrupted" : "failed", tr->status, tr->wall_s);
  else
    fprintf(stderr, "pipebench: tune:   predicted %s, measured %.1f samples/s%s%s, %.1f s; bottleneck %s\n", pred,
            measured(tr), over, err, tr->wall_s, pb_multi_bottleneck(tr->rep));
}

/* Keeps the report of the repeat that stands for the trial (the median one, else the last that wrote one)
 * and writes the trial's report.json with the intervals. */
static void keep_median(tuner *t, trial *tr, const pb_report *reps, const char *name) {
  pb_repeat_summarize(tr->runs, tr->nruns, &tr->sum);
  int keep = tr->sum.median_repeat;
  for (int r = tr->nruns - 1; keep < 0 && r >= 0; r--)
    if (reps[r].version) keep = r;
  *tr->rep = reps[keep >= 0 ? keep : tr->nruns - 1];
  pb_multi_write_repeats(t->m, name, tr->runs, tr->nruns, &tr->sum);
}

/* The trial's runs into <out>/<name> (with repeats <out>/<name>/repeat-R), one after another: the next
 * trial is chosen from this one, so trials cannot interleave.  The first that fails ends them. */
static int run_repeats(tuner *t, trial *tr, const char *name) {
  pb_report *reps = t->repeats > 1 ? calloc((size_t)t->repeats, sizeof *reps) : NULL;
  tr->runs = calloc((size_t)t->repeats, sizeof *tr->runs);
  if (!tr->runs || (t->repeats > 1 && !reps)) {
    free(reps);
    return tr->status = PB_EXIT_RUNTIME;
  }
  for (int r = 0; r < t->repeats && !tr->status && !pb_signalled(); r++) {
    char sub[64];
    pb_multi_repeat_name(t->m, name, r, sub, sizeof sub);
    pb_report *rep = reps ? &reps[r] : tr->rep;
    uint64_t t0 = pb_now_ns();
    int rc = pb_multi_run(t->m, t->cfg, sub, t->m->run.synthetic, rep);
    double wall_s = (double)(pb_now_ns() - t0) / 1e9;
    tr->wall_s += wall_s;
    tr->longest_run_s = fmax(tr->longest_run_s, wall_s);
    pb_run_figures_of(rep, rc, wall_s, &tr->runs[r]);
    tr->nruns = r + 1;
    tr->status = rc;
  }
  if (reps && tr->nruns) keep_median(t, tr, reps, name);
  else pb_repeat_summarize(tr->runs, tr->nruns, &tr->sum);
  free(reps);
  if (tr->nruns == 0) tr->status = PB_EXIT_INTERRUPTED; /* signalled before its first run */
  return tr->status;
}

static int run_point(tuner *t, const point *p, const char *change, double predicted, bool up_to) {
  trial *tr = &t->trials[t->ntrials];
  memset(tr, 0, sizeof *tr);
  tr->p = *p;
  tr->predicted = predicted;
  tr->up_to = up_to;
  snprintf(tr->change, sizeof tr->change, "%s", change);
  tr->rep = calloc(1, sizeof *tr->rep);
  pb_err err;
  if (!tr->rep) return PB_EXIT_RUNTIME;
  if (load_point(t, p, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    free(tr->rep);
    tr->rep = NULL;
    return PB_EXIT_USAGE;
  }
  char name[32];
  snprintf(name, sizeof name, "trial-%03d", t->ntrials + 1);
  run_repeats(t, tr, name);
  t->ntrials++;
  show_trial(t, tr);
  return tr->status;
}

static double longest_trial_s(const tuner *t) {
  double s = 0;
  for (int i = 0; i < t->ntrials; i++) s = fmax(s, t->trials[i].wall_s);
  return s;
}

/* Pairs of the re-measure: --repeat N when N >= 5, else 5. */
static int remeasure_pairs(const tuner *t) { return PB_MAX(t->repeats, REMEASURE_MIN_PAIRS); }

double pb_tune_remeasure_reserve_s(int repeats, bool best_is_base, int pairs, double base_run_s, double best_run_s) {
  if (repeats <= 1 || best_is_base) return 0;
  return pairs * (base_run_s + best_run_s);
}

/* The re-measure's expected length now: pairs x (the base's longest run + the best's). */
static double remeasure_estimate_s(const tuner *t) {
  return remeasure_pairs(t) * (t->trials[0].longest_run_s + t->trials[t->best].longest_run_s);
}

/* The time the search keeps for the re-measure (pb_tune_remeasure_reserve_s). */
static double remeasure_reserve_s(const tuner *t) {
  return pb_tune_remeasure_reserve_s(t->repeats, t->best == 0, remeasure_pairs(t), t->trials[0].longest_run_s,
                                     t->trials[t->best].longest_run_s);
}

/* Why the search stops now (in t->stop_reason), or false to go on. */
static bool should_stop(tuner *t, int without_gain) {
  const trial *best = &t->trials[t->best];
  if (t->ntrials >= t->max_trials)
    snprintf(t->stop_reason, sizeof t->stop_reason, "trial limit (%d)", t->max_trials);
  else if (elapsed_s(t) + longest_trial_s(t) + remeasure_reserve_s(t) > t->budget_s)
    snprintf(t->stop_reason, sizeof t->stop_reason, "time budget (--budget-s %g): another trial%s would end after it",
             t->budget_s, remeasure_reserve_s(t) > 0 ? " and the re-measure" : "");
  else if (strcmp(best->rep->bottleneck_stage, "device") == 0 && best->rep->device_idle_pct < 3)
    snprintf(t->stop_reason, sizeof t->stop_reason, "the device is the limit (idle %.1f %%)", best->rep->device_idle_pct);
  else if (without_gain >= 2)
    snprintf(t->stop_reason, sizeof t->stop_reason, "two trials in a row gained less than %.0f %%", (GAIN - 1) * 100);
  else
    return false;
  return true;
}

static int error_summary(const tuner *t, double *median, double *max) {
  return pb_tune_error_summary(t->trials, t->ntrials, median, max);
}

/* The model's predictions have been checked and held: at least one was measured, and the median
 * |prediction error| so far is within MODEL_MISS_PCT.  Before that the model is one run's guess. */
static bool model_verified(const tuner *t) {
  double median, max;
  return error_summary(t, &median, &max) > 0 && median <= MODEL_MISS_PCT;
}

/* One step up on every knob from the best point, the bottleneck's threads first (the list keeps the
 * first of equal predictions), then one step down on the others.  Offered only when the model is not
 * verified (model_verified). */
static void offer_neighbours(tuner *t, cand_list *cl, const model *md, const trial *best) {
  cl->offering_explore = true;
  int first = knob_for_stage(t, best->rep->bottleneck_stage, false);
  for (int pass = 0; pass < 3; pass++)
    for (int k = 0; k < t->nknobs; k++) {
      if ((pass == 0) != (k == first)) continue;
      point p = best->p;
      p.v[k] = pass < 2 ? step_up(&t->knobs[k], best->p.v[k]) : step_down(&t->knobs[k], best->p.v[k]);
      char what[sizeof t->knobs[k].path + 32];
      snprintf(what, sizeof what, "explore: %s one step %s", t->knobs[k].path + strlen("stages."),
               pass < 2 ? "up" : "down");
      if (p.v[k] != best->p.v[k]) offer(t, cl, md, &p, predict(t, md, &p), "%s", what);
    }
  cl->offering_explore = false;
}

/* Every kind of candidate, from `md`, the model fitted to trial `from`. */
static void offer_from(tuner *t, cand_list *cl, const model *md, const trial *from) {
  offer_allocation(t, cl, md, &from->p);
  offer_bottleneck(t, cl, md, from);
  offer_prefetch(t, cl, md, from);
  offer_oversubscribe(t, cl, md, from);
  offer_recommendations(t, cl, md, from);
}

/* Runs the most promising candidate; 1 when none is worth a trial, else the trial's exit status.  The
 * candidates come from the best trial and from the others too: a trial that measured worse may have
 * met a limit the best run did not reach (a stage starved of cores by the threads it added), and the
 * change that lifts that limit may be the way past both.  The list keeps the first of equal points,
 * so the best trial's own candidates come first. */
static int next_trial(tuner *t, int *without_gain) {
  const trial *best = &t->trials[t->best];
  cand_list *cl = calloc(1, sizeof *cl);
  if (!cl) {
    snprintf(t->stop_reason, sizeof t->stop_reason, "out of memory for the candidates");
    return -1;
  }
  model md;
  fit_model(t, best->rep, &md);
  offer_from(t, cl, &md, best);
  offer_neighbours(t, cl, &md, best);
  for (int j = t->ntrials - 1; j >= 0; j--) {
    const trial *tr = &t->trials[j];
    if (j == t->best || tr->status != 0 || !tr->rep || !tr->rep->version) continue;
    fit_model(t, tr->rep, &md);
    offer_from(t, cl, &md, tr);
  }
  double best_rate = measured(best);
  int i = pick(cl, false);
  bool worth_it = i >= 0 && cl->v[i].predicted >= GAIN * best_rate;
  if (!worth_it && !model_verified(t)) {
    /* The model is unchecked or has been wrong: its predictions cannot say that nothing near the best
     * point is better, so the most promising change runs anyway, or a step around the best point. */
    i = pick(cl, true);
    worth_it = i >= 0;
  }
  if (!worth_it) {
    if (i < 0) snprintf(t->stop_reason, sizeof t->stop_reason, "no untried change left in the space");
    else snprintf(t->stop_reason, sizeof t->stop_reason, "no change is predicted to gain %.0f %%", (GAIN - 1) * 100);
    free(cl);
    return -1;
  }
  int rc = run_point(t, &cl->v[i].p, cl->v[i].change, cl->v[i].predicted, cl->v[i].up_to);
  free(cl);
  double got = measured(&t->trials[t->ntrials - 1]);
  if (rc || isnan(got) || got < GAIN * best_rate) ++*without_gain;
  else *without_gain = 0;
  if (!rc && !isnan(got) && got > best_rate) t->best = t->ntrials - 1;
  return rc;
}

static int search(tuner *t, const point *base) {
  t->t0_ns = pb_now_ns();
  int rc = run_point(t, base, "base config", NAN, false);
  if (rc) {
    if (rc == PB_EXIT_INTERRUPTED) snprintf(t->stop_reason, sizeof t->stop_reason, "interrupted");
    else snprintf(t->stop_reason, sizeof t->stop_reason, "the base config's run failed (exit %d)", rc);
    return rc;
  }
  t->best = 0;
  int without_gain = 0;
  while (!should_stop(t, without_gain)) {
    if (pb_signalled()) {
      snprintf(t->stop_reason, sizeof t->stop_reason, "interrupted");
      return PB_EXIT_INTERRUPTED;
    }
    rc = next_trial(t, &without_gain);
    if (rc < 0) break;
    if (rc == PB_EXIT_INTERRUPTED || pb_signalled()) {
      snprintf(t->stop_reason, sizeof t->stop_reason, "interrupted");
      return PB_EXIT_INTERRUPTED;
    }
    if (rc == PB_EXIT_USAGE) return rc;
  }
  return 0;
}

/* ---------- the re-measure ---------- */

enum { RE_BASE = PB_TUNE_RE_BASE, RE_BEST = PB_TUNE_RE_BEST };

/* One run of the base (side RE_BASE) or the best point into <out>/remeasure/<base|best>-<i>. */
static int remeasure_one(tuner *t, pb_report *scratch, int side, int i) {
  const trial *tr = &t->trials[side == RE_BASE ? 0 : t->best];
  pb_err err;
  if (load_point(t, &tr->p, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  char name[64];
  snprintf(name, sizeof name, "remeasure/%s-%d", side == RE_BASE ? "base" : "best", i + 1);
  uint64_t t0 = pb_now_ns();
  int rc = pb_multi_run(t->m, t->cfg, name, t->m->run.synthetic, scratch);
  pb_run_figures_of(scratch, rc, (double)(pb_now_ns() - t0) / 1e9, &t->re.runs[side][i]);
  t->re.done[side] = i + 1;
  return rc;
}

static void settle(tuner *t) {
  remeasure *re = &t->re;
  for (int side = RE_BASE; side <= RE_BEST; side++) pb_repeat_summarize(re->runs[side], re->done[side], &re->sum[side]);
  re->outcome = pb_tune_remeasure_outcome(re->needed, re->skipped, re->interrupted, &re->sum[RE_BASE].samples_per_s,
                                          &re->sum[RE_BEST].samples_per_s);
}

static void show_remeasure(const tuner *t) {
  if (t->m->run.quiet || !t->re.started) return;
  const remeasure *re = &t->re;
  char a[160], b[160];
  static const char *const what[] = {[PB_TUNE_INTERRUPTED] = "interrupted, no claim",
                                     [PB_TUNE_TOO_FEW] = "too few runs completed to tell",
                                     [PB_TUNE_GAIN] = "a measurable gain",
                                     [PB_TUNE_NO_DIFFERENCE] = "no measurable difference",
                                     [PB_TUNE_BASE_FASTER] = "the base config is measurably faster"};
  fprintf(stderr, "pipebench: tune: re-measured: base %s, best %s samples/s: %s\n",
          pb_interval_text(&re->sum[RE_BASE].samples_per_s, 1, a, sizeof a),
          pb_interval_text(&re->sum[RE_BEST].samples_per_s, 1, b, sizeof b),
          (unsigned)re->outcome < PB_ARRAY_LEN(what) && what[re->outcome] ? what[re->outcome] : "-");
}

/* The search's stop reason, after an interrupt in the re-measure: the command was interrupted, the search
 * had stopped for its own reason. */
static void note_interrupted_remeasure(tuner *t) {
  char was[256];
  snprintf(was, sizeof was, "%.250s", t->stop_reason);
  snprintf(t->stop_reason, sizeof t->stop_reason, "interrupted during the re-measure (the search had stopped: %s)",
           was);
}

/* After the search: the base config and the best point again, interleaved (base, best, base, best, ...),
 * so a drifting machine moves both alike; a run that fails just does not count.  Nothing to do when the
 * base is the best; not done when it would end after --budget-s (the search's gain is then reported as not
 * re-measured).  `rc` is the search's exit status: an interrupted search leaves the re-measure undone.
 * Returns the exit status. */
static int run_remeasure(tuner *t, int rc) {
  remeasure *re = &t->re;
  re->needed = t->best > 0;
  if (!re->needed) return rc;
  re->pairs = remeasure_pairs(t);
  re->estimate_s = remeasure_estimate_s(t);
  re->interrupted = rc == PB_EXIT_INTERRUPTED || pb_signalled();
  if (re->interrupted && rc != PB_EXIT_INTERRUPTED) note_interrupted_remeasure(t); /* the search had ended */
  if (!re->interrupted && rc)
    snprintf(re->why_not, sizeof re->why_not, "the search ended with exit %d", rc);
  else if (!re->interrupted && elapsed_s(t) + re->estimate_s > t->budget_s)
    snprintf(re->why_not, sizeof re->why_not, "%d pairs (~%.1f s) would end after --budget-s %g", re->pairs,
             re->estimate_s, t->budget_s);
  re->skipped = re->why_not[0] != '\0';
  if (re->interrupted || re->skipped) {
    settle(t);
    if (re->skipped && !t->m->run.quiet)
      fprintf(stderr, "pipebench: tune: not re-measuring trial %d against the base config: %s\n", t->best + 1,
              re->why_not);
    return rc ? rc : re->interrupted ? PB_EXIT_INTERRUPTED : 0;
  }
  pb_report *scratch = calloc(1, sizeof *scratch);
  if (!scratch) return PB_EXIT_RUNTIME;
  if (!t->m->run.quiet)
    fprintf(stderr, "pipebench: tune: re-measuring the base config and trial %d, %d pairs interleaved (~%.1f s)\n",
            t->best + 1, re->pairs, re->estimate_s);
  uint64_t t0 = pb_now_ns();
  re->started = true;
  for (int i = 0; i < re->pairs && !rc; i++)
    for (int side = RE_BASE; side <= RE_BEST && !rc; side++) {
      int status = pb_signalled() ? PB_EXIT_INTERRUPTED : remeasure_one(t, scratch, side, i);
      if (status == PB_EXIT_INTERRUPTED || pb_signalled()) rc = PB_EXIT_INTERRUPTED;
      else if (status == PB_EXIT_USAGE) rc = status;
    }
  free(scratch);
  re->wall_s = (double)(pb_now_ns() - t0) / 1e9;
  re->interrupted = rc == PB_EXIT_INTERRUPTED;
  if (re->interrupted) note_interrupted_remeasure(t);
  settle(t);
  show_remeasure(t);
  return rc;
}

/* ---------- the space ---------- */

/* A --set list as a knob's allowed values (pb_tune_list_values). */
static int list_values(knob *k, const pb_axis *ax) {
  pb_err err;
  if (!pb_tune_list_values(k, ax->path, (const char(*)[64])ax->values, ax->nvalues, &err)) return 0;
  fprintf(stderr, "pipebench: %s\n", err.msg);
  return PB_EXIT_USAGE;
}

static void add_knob(tuner *t, int stage, bool depth) {
  knob *k = &t->knobs[t->nknobs++];
  memset(k, 0, sizeof *k);
  k->stage = stage;
  k->depth = depth;
  snprintf(k->path, sizeof k->path, "stages.%s.%s", t->cfg->stages[stage].name, depth ? "depth" : "threads");
}

/* Is `key` (a --set path resolved by pb_sweep_check_keys: stages[N].KEY) this knob? */
static bool knob_is(const knob *k, const char *key) {
  char mine[64];
  snprintf(mine, sizeof mine, "stages[%d].%s", k->stage, k->depth ? "depth" : "threads");
  return strcmp(mine, key) == 0;
}

/* Every threads and depth knob of the config.  Which stages have one is the config schema's word
 * (pb_config_stage_key_max: a "threads" above 1, a "depth"), as for the recommendations. */
/* Each stage's knobs, as its type's description lists them (src/core/stages/: threads of read, decode, map
 * and batch; prefetch's depth). */
static void collect_knobs(tuner *t) {
  for (int i = 0; i < t->cfg->nstages; i++) {
    const pb_stage_desc *d = pb_stage_desc_for(t->cfg->stages[i].type);
    for (const char *const *k = d && d->knobs ? d->knobs : NULL; k && *k; k++) add_knob(t, i, strcmp(*k, "depth") == 0);
  }
}

/* The knobs searched: every one of the config (collect_knobs); with lists, only the listed ones, with their
 * values. */
static int find_knobs(tuner *t, const pb_axis *axes, const char (*canon)[PB_CFG_PATH_LEN], int naxes) {
  collect_knobs(t);
  if (!naxes) return 0;
  knob listed[MAX_KNOBS];
  int n = 0;
  t->space_size = 1;
  for (int a = 0; a < naxes; a++) {
    int k = 0;
    while (k < t->nknobs && !knob_is(&t->knobs[k], canon[a])) k++;
    if (k == t->nknobs) {
      fprintf(stderr, "pipebench: tune: --set %s=..: not a knob the tuner searches (expected stages.<name>.threads "
                      "of a read, decode, map or batch stage, or stages.<prefetch>.depth)\n", axes[a].path);
      return PB_EXIT_USAGE;
    }
    listed[n] = t->knobs[k];
    if (list_values(&listed[n], &axes[a])) return PB_EXIT_USAGE;
    t->space_size *= listed[n++].nvalues;
  }
  memcpy(t->knobs, listed, sizeof listed[0] * (size_t)n);
  t->nknobs = n;
  t->listed = true;
  return 0;
}

/* The base config's values, moved onto the lists when it is not on them. */
static void base_point(const tuner *t, point *p) {
  for (int k = 0; k < t->nknobs; k++) {
    const pb_stage_cfg *sc = &t->cfg->stages[t->knobs[k].stage];
    int v = t->knobs[k].depth ? (int)sc->depth : sc->threads;
    p->v[k] = pb_tune_base_value(&t->knobs[k], v);
  }
}

/* ---------- output ---------- */

/* The search as plain data for tune.json and the summary (tune_out.h); the elapsed time as of now. */
static pb_tune_result result_of(const tuner *t) {
  return (pb_tune_result){.config_file = t->m->config_file,
                          .out_dir = t->m->out_dir,
                          .knobs = t->knobs,
                          .nknobs = t->nknobs,
                          .listed = t->listed,
                          .space_size = t->space_size,
                          .trials = t->trials,
                          .ntrials = t->ntrials,
                          .best = t->best,
                          .ncpu = t->ncpu,
                          .max_trials = t->max_trials,
                          .repeats = t->repeats,
                          .budget_s = t->budget_s,
                          .elapsed_s = elapsed_s(t),
                          .search_s = search_s(t),
                          .stop_reason = t->stop_reason,
                          .re = &t->re};
}

/* The trial whose config tune writes (pb_tune_written_trial). */
static int written_trial(const tuner *t) {
  pb_tune_result r = {.best = t->best, .re = &t->re};
  return pb_tune_written_trial(&r);
}

static int write_config(tuner *t, const char *path);

/* The user's config file with only the knobs changed to the written trial's values (--write: a diff of the
 * two files shows the tuning), as malloc'd text; NULL, with why, when its text cannot be edited so. */
static char *edited_original(const tuner *t, char *why, size_t why_len) {
  char *text = NULL;
  size_t len = 0;
  int rc = pb_read_file(t->m->config_file, 16u << 20, &text, &len); /* the loader took it, so it is small */
  if (rc) {
    snprintf(why, why_len, "cannot read it again: %s", strerror(-rc));
    return NULL;
  }
  pb_config *file_cfg = calloc(1, sizeof *file_cfg); /* the file's own values: a knob left as they are is not written */
  pb_err err;
  if (!file_cfg || pb_config_load(file_cfg, t->m->config_file, NULL, 0, &err)) {
    snprintf(why, why_len, "cannot load it again: %.200s", file_cfg ? err.msg : "out of memory");
    free(file_cfg);
    free(text);
    return NULL;
  }
  const pb_tune_point *p = &t->trials[written_trial(t)].p;
  for (int k = 0; k < t->nknobs && text; k++) {
    const pb_tune_knob *kn = &t->knobs[k];
    const pb_stage_cfg *own = &file_cfg->stages[kn->stage];
    if (p->v[k] == (kn->depth ? (int)own->depth : own->threads)) continue;
    char *next = NULL;
    rc = pb_json_edit_stage_key(text, t->cfg->stages[kn->stage].name, kn->depth ? "depth" : "threads", p->v[k], &next);
    if (rc)
      snprintf(why, why_len, "stage \"%s\" not found in its text (%s)", t->cfg->stages[kn->stage].name,
               rc == -ENOENT ? "no such stage" : strerror(-rc));
    free(text);
    text = next;
  }
  free(file_cfg);
  return text;
}

/* --write FILE: the user's config with the tuned knobs changed (edited_original), or, when its text cannot be
 * edited (said on stderr), the resolved config tune measured. */
static int write_user_config(tuner *t, const char *path) {
  char why[256] = "";
  char *text = edited_original(t, why, sizeof why);
  if (!text) {
    fprintf(stderr, "pipebench: tune: --write: %s: %s; writing the whole resolved config instead\n", t->m->config_file,
            why);
    return write_config(t, path);
  }
  errno = 0;
  FILE *f = fopen(path, "w");
  int rc = f && fputs(text, f) >= 0 ? 0 : PB_EXIT_RUNTIME;
  if (f && fclose(f) != 0) rc = PB_EXIT_RUNTIME;
  if (rc)
    fprintf(stderr, "pipebench: %s: cannot write the tuned config: %s (expected a writable path)\n", path,
            errno ? strerror(errno) : "I/O error");
  free(text);
  return rc;
}

/* The best trial's config, resolved (valid and runnable), to `path`. */
static int write_config(tuner *t, const char *path) {
  pb_err err;
  if (load_point(t, &t->trials[written_trial(t)].p, &err)) return fprintf(stderr, "pipebench: %s\n", err.msg), PB_EXIT_RUNTIME;
  cJSON *json = pb_config_to_json(t->cfg);
  char *text = json ? pb_json_print(json, true) : NULL;
  errno = 0;
  FILE *f = text ? fopen(path, "w") : NULL;
  int rc = f && fprintf(f, "%s\n", text) >= 0 ? 0 : PB_EXIT_RUNTIME;
  if (f && fclose(f) != 0) rc = PB_EXIT_RUNTIME;
  if (rc) fprintf(stderr, "pipebench: %s: cannot write the tuned config: %s (expected a writable path)\n", path,
                  errno ? strerror(errno) : "out of memory");
  free(text);
  cJSON_Delete(json);
  return rc;
}

static int finish(tuner *t, const pb_tune_opts *o, int rc) {
  bool have = t->ntrials > 0 && t->best >= 0 && !isnan(measured(&t->trials[t->best]));
  char tuned[PB_PATH_LEN + 32];
  snprintf(tuned, sizeof tuned, "%s/tuned.json", t->m->out_dir);
  /* Every output is attempted whatever failed before it (a --write that fails must not cost tune.json);
   * the summary names only a tuned config that was written. */
  int wrc = have ? write_config(t, tuned) : 0;
  int user_rc = have && o->write_file ? write_user_config(t, o->write_file) : 0;
  pb_tune_result res = result_of(t);
  cJSON *json = pb_tune_out_json(&res, have && !wrc ? tuned : NULL, rc == PB_EXIT_INTERRUPTED);
  int jrc = pb_multi_write_json(t->m, "tune.json", json);
  if (t->m->run.json_stdout) {
    char *text = pb_json_print(json, true);
    if (text) printf("%s\n", text);
    free(text);
  } else if (!t->m->run.quiet && have && (t->m->run.formats & PB_FMT_TEXT)) { /* --format without text: none */
    pb_tune_out_text(stdout, &res, o->write_file && !user_rc ? o->write_file : !wrc ? tuned : NULL);
  }
  cJSON_Delete(json);
  return rc ? rc : wrc ? wrc : user_rc ? user_rc : jrc;
}

/* ---------- the command ---------- */

/* --write's directory exists and can be written: 0, or exit 2 with one line. */
static int check_writable(const char *path) {
  char dir[PB_PATH_LEN];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    fprintf(stderr, "pipebench: tune: --write %s: a directory (expected a file path)\n", path);
    return PB_EXIT_USAGE;
  }
  /* access() alone passes a writable regular file: the parent must be a directory */
  int why = stat(dir, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : access(dir, W_OK) != 0 ? errno : 0;
  if (why) {
    fprintf(stderr, "pipebench: tune: --write %s: cannot write in %s: %s (expected a writable directory)\n", path, dir,
            strerror(why));
    return PB_EXIT_USAGE;
  }
  return 0;
}

static int setup(tuner *t, pb_multi *m, const pb_tune_opts *o) {
  pb_axis *axes = calloc(PB_SWEEP_MAX_AXES, sizeof *axes);
  char(*canon)[PB_CFG_PATH_LEN] = calloc(PB_SWEEP_MAX_AXES, sizeof *canon);
  int naxes = 0, rc = 0;
  pb_err err;
  if (!axes || !canon) {
    free(axes);
    free(canon);
    return PB_EXIT_RUNTIME;
  }
  if (pb_sweep_split_sets(m->base_sets, m->nbase_sets, axes, &naxes, t->fixed, &t->nfixed, &err) ||
      (naxes && pb_sweep_check_keys(m->config_file, axes, naxes, t->fixed, t->nfixed, canon, &err))) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    rc = PB_EXIT_USAGE;
  }
  t->m = m;
  m->base_sets = t->fixed;
  m->nbase_sets = t->nfixed;
  if (!rc && o->write_file) rc = check_writable(o->write_file); /* before the search, not after it */
  /* the lists are checked on the config before pb_multi_begin generates a dataset or makes a directory */
  if (!rc && pb_multi_load(m, NULL, 0, t->cfg, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    rc = PB_EXIT_USAGE;
  }
  if (!rc) rc = find_knobs(t, axes, (const char(*)[PB_CFG_PATH_LEN])canon, naxes);
  if (!rc) rc = pb_multi_begin(m, NULL, 0, t->cfg, !m->run.synthetic); /* the same config again: the knobs stand */
  free(axes);
  free(canon);
  if (rc) return rc;
  if (!t->nknobs) {
    fprintf(stderr, "pipebench: tune: %s: nothing to tune (expected a read, decode, map or batch stage, or a prefetch)\n",
            m->config_file);
    return PB_EXIT_USAGE;
  }
  t->repeats = pb_multi_repeats(m);
  t->ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (t->ncpu < 1) t->ncpu = 1;
  t->budget_s = o->budget_s > 0 ? o->budget_s : DEFAULT_BUDGET_S;
  t->max_trials = pb_tune_max_trials(o->max_trials, t->listed, t->space_size, DEFAULT_MAX_TRIALS, MAX_TRIALS);
  return 0;
}

int pb_tune(pb_multi *m, const pb_tune_opts *o) {
  tuner *t = calloc(1, sizeof *t);
  if (!t || !(t->cfg = calloc(1, sizeof *t->cfg))) {
    free(t);
    return PB_EXIT_RUNTIME;
  }
  t->best = -1;
  int rc = setup(t, m, o);
  if (!rc) {
    point base;
    base_point(t, &base);
    if (!m->run.quiet)
      fprintf(stderr, "pipebench: tune: %d knobs, at most %d trials%s, budget %g s, into %s\n", t->nknobs,
              t->max_trials, t->repeats > 1 ? " (each repeated)" : "", t->budget_s, m->out_dir);
    rc = search(t, &base);
    t->search_end_ns = pb_now_ns();
    if (t->best >= 0) rc = run_remeasure(t, rc);
    if (t->ntrials) rc = finish(t, o, rc);
  }
  for (int i = 0; i < t->ntrials; i++) {
    free(t->trials[i].rep);
    free(t->trials[i].runs);
  }
  free(t->cfg);
  free(t);
  return rc;
}

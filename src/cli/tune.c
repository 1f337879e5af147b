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
#include "json_text.h"

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

#define MAX_KNOBS (PB_MAX_STAGES + 1)
#define MAX_TRIALS 256
#define DEFAULT_MAX_TRIALS 12
#define DEFAULT_BUDGET_S 600.0
#define GAIN 1.02                 /* a change must gain 2 % to count: run-to-run noise on a busy machine */
#define HEADROOM 1.10             /* allocation: threads for 10 % more than the target rate */
#define MODEL_MISS_PCT 15.0       /* median |prediction error| above which the model is not trusted to stop */
#define RANGE_MAX 256
/* The base and the best, re-measured interleaved at least this many times: 5 pairs give each a (min, max)
 * interval of 93.75 %, the fewest that can decide a difference (repeat.h) */
#define REMEASURE_MIN_PAIRS PB_REPEAT_MIN_DECISIVE
#define CEILING_MATCH 0.01        /* a prediction within 1 % of the device's rate is that ceiling ("up to") */
#define CEILING_NOISE_MAX 0.05    /* the run's noise widens the "reached" tolerance up to 5 %, no further */

typedef struct knob {
  int stage;                    /* config stage index */
  bool depth;                   /* prefetch depth; else threads */
  char path[PB_NAME_LEN + 32];  /* stages.<name>.threads|depth */
  int nvalues;                  /* > 0: the listed values, ascending; 0: the range 1..RANGE_MAX */
  int values[PB_SWEEP_MAX_VALUES];
} knob;

typedef struct point {
  int v[MAX_KNOBS];
} point;

typedef struct trial {
  point p;
  char change[160];
  double predicted;             /* samples/s (NAN for the first trial) */
  bool up_to;                   /* the prediction is the device's rate: a ceiling, not an estimate */
  int status;                   /* pb_run's exit status (the worst of its repeats) */
  double wall_s;                /* all its repeats */
  double longest_run_s;         /* its longest repeat */
  pb_report *rep;               /* its (median repeat's) report: the model and the analysis */
  int nruns;                    /* repeats run */
  pb_run_figures *runs;         /* each one's figures (one with --repeat 1) */
  pb_repeat_summary sum;        /* the medians and intervals over the repeats that count */
} trial;

/* The base config and the best point run again after the search, interleaved (base, best, base, ...):
 * the gain is claimed only when the best's interval lies above the base's. */
typedef struct remeasure {
  bool needed;                  /* the best is not the base config */
  int pairs;                    /* asked for when needed */
  double estimate_s;            /* its expected length: pairs x (the base's longest run + the best's) */
  bool skipped;                 /* not run: it would have ended after --budget-s, or the search failed */
  char why_not[160];            /* why it was not run, when skipped */
  bool started, interrupted;
  int done[2];                  /* runs done: [0] base, [1] best */
  pb_run_figures runs[2][PB_REPEAT_MAX];
  pb_repeat_summary sum[2];
  double wall_s;
  pb_tune_outcome outcome;
} remeasure;

/* A trial's model of the pipeline (model.h, in its report), and what tune reads of it per knob. */
typedef struct model {
  const pb_report *r;
  int row[MAX_KNOBS];           /* the knob's stage in the model (-1: not there, e.g. skipped) */
  double thread_s[MAX_KNOBS];   /* one thread's seconds per delivered sample on an idle machine */
  double bw_cap[MAX_KNOBS];     /* a read's bandwidth cap, samples/s (INFINITY: none) */
  bool cpu_bound[MAX_KNOBS], valid[MAX_KNOBS];
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

static int knob_min(const knob *k) { return k->nvalues ? k->values[0] : 1; }
static int knob_max(const knob *k) { return k->nvalues ? k->values[k->nvalues - 1] : RANGE_MAX; }

/* The smallest allowed value >= want (the largest when none is). */
static int snap_up(const knob *k, double want) {
  if (!k->nvalues) return want < 1 ? 1 : want > RANGE_MAX ? RANGE_MAX : (int)ceil(want - 1e-9);
  for (int i = 0; i < k->nvalues; i++)
    if (k->values[i] >= want - 1e-9) return k->values[i];
  return knob_max(k);
}

/* The largest allowed value <= want (the smallest when none is). */
static int snap_down(const knob *k, double want) {
  if (!k->nvalues) return want < 1 ? 1 : want > RANGE_MAX ? RANGE_MAX : (int)floor(want + 1e-9);
  for (int i = k->nvalues - 1; i >= 0; i--)
    if (k->values[i] <= want + 1e-9) return k->values[i];
  return knob_min(k);
}

/* The next allowed value above / below cur, or cur when there is none. */
static int step_up(const knob *k, int cur) { return cur >= knob_max(k) ? cur : snap_up(k, cur + 1); }
static int step_down(const knob *k, int cur) { return cur <= knob_min(k) ? cur : snap_down(k, cur - 1); }

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
    ok = pb_engine_memory_bytes(e, who, sizeof who) <= (uint64_t)t->cfg->max_memory_mb * 1000000u;
  }
  pb_engine_close(e);
  free(e);
  return ok;
}

/* Threads of the CPU-bound stages (by the model) stay within twice the cores plus one per stage: a thread
 * per core keeps the cores busy, the rest cover threads blocked on their queues; beyond that, threads only
 * add switching and memory.  Stages that wait without CPU are not counted: threads are right for them. */
static bool within_cores(const tuner *t, const model *md, const point *p) {
  int threads = 0, stages = 0;
  for (int k = 0; k < t->nknobs; k++)
    if (!t->knobs[k].depth && md->valid[k] && md->cpu_bound[k]) threads += p->v[k], stages++;
  return threads <= 2 * t->ncpu + stages;
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
    md->valid[k] = pm->valid && ms && ms->valid;
    if (!md->valid[k] || t->knobs[k].depth) continue;
    md->cpu_bound[k] = ms->cpu_share >= PB_CPU_BOUND_FRACTION;
    double cap = pb_model_stage_capacity(r, md->row[k]); /* threads x this thread's rate, in samples/s */
    md->thread_s[k] = cap > 0 ? ms->threads / cap : 0;
    md->bw_cap[k] = ms->rate_cap_per_s > 0 ? ms->rate_cap_per_s * (ms->batched ? pm->batch_size : 1) : INFINITY;
  }
}

/* A knob stage's samples/s with `threads` threads, each as fast as on an idle machine (the cores bound
 * them together: the simulation knows). */
static double stage_cap(const model *md, int k, int threads) {
  double cap = md->thread_s[k] > 0 ? threads / md->thread_s[k] : INFINITY;
  return fmin(cap, md->bw_cap[k]);
}

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
    if (!t->knobs[k].depth && md->valid[k]) rate = fmin(rate, md->bw_cap[k]);
  return rate;
}

/* Threads a stage needs for `rate` samples/s, as an allowed value: with headroom when the values allow
 * it, but a listed value that reaches the rate itself is not passed over for the headroom (with lists
 * like 1,2,4,8,16 the headroom would double the threads). */
static int threads_needed(const tuner *t, const model *md, int k, double rate) {
  double need = fmax(1, rate * md->thread_s[k]);
  int with_headroom = snap_up(&t->knobs[k], need * HEADROOM), without = snap_up(&t->knobs[k], need);
  return t->knobs[k].nvalues && without < with_headroom && without >= need - 1e-9 ? without : with_headroom;
}

/* ---------- candidates ---------- */

typedef struct candidate {
  point p;
  char change[160];
  double predicted;
  bool up_to;                   /* the prediction is the device's rate (a recommendation's ceiling) */
  bool explore;                 /* a step around the best point: picked only when exploring */
} candidate;

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
  point p = *from;
  for (int k = 0; k < t->nknobs; k++)
    if (!t->knobs[k].depth && md->valid[k]) p.v[k] = threads_needed(t, md, k, target);
  /* Over the cores' guard: trim the stages with the most slack first. */
  for (int guard = 0; guard < 4096 && !within_cores(t, md, &p); guard++) {
    int best = -1;
    double best_slack = 0;
    for (int k = 0; k < t->nknobs; k++) {
      if (t->knobs[k].depth || !md->valid[k] || !md->cpu_bound[k] || step_down(&t->knobs[k], p.v[k]) == p.v[k]) continue;
      double slack = stage_cap(md, k, p.v[k]) / target;
      if (best < 0 || slack > best_slack) best = k, best_slack = slack;
    }
    if (best < 0) break;
    p.v[best] = step_down(&t->knobs[best], p.v[best]);
  }
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
  if (k < 0 || !md->valid[k]) return;
  point p = best->p;
  int want = threads_needed(t, md, k, ceiling(t, md));
  p.v[k] = want > best->p.v[k] ? want : step_up(&t->knobs[k], best->p.v[k]);
  if (p.v[k] != best->p.v[k]) offer(t, cl, md, &p, predict(t, md, &p), "%s: more threads (bottleneck)", stage_name(t, k));
  point q = best->p; /* one step only: the model may overshoot */
  q.v[k] = step_up(&t->knobs[k], best->p.v[k]);
  if (q.v[k] != best->p.v[k]) offer(t, cl, md, &q, predict(t, md, &q), "%s: one more thread (bottleneck)", stage_name(t, k));
  /* Saturated cores: take a thread from the CPU-bound stage with the most slack. */
  if (!md->cpu_bound[k] || best->rep->cores_used < 0.85 * trial_cores(t, best)) return;
  double rate = best->rep->samples_per_s;
  int donor = -1;
  for (int d = 0; d < t->nknobs; d++) {
    if (d == k || t->knobs[d].depth || !md->valid[d] || !md->cpu_bound[d]) continue;
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
      if (!t->knobs[k].depth && md->valid[k] && md->cpu_bound[k]) p.v[k] = snap_up(&t->knobs[k], f * best->p.v[k]);
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
    if (v < 1 || v > RANGE_MAX) return false;
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

/* The candidate predicted best (the first of equals), or -1; steps around the best point only when
 * exploring. */
static int pick(const cand_list *cl, bool exploring) {
  int best = -1;
  for (int i = 0; i < cl->n; i++)
    if ((exploring || !cl->v[i].explore) && !isnan(cl->v[i].predicted) &&
        (best < 0 || cl->v[i].predicted > cl->v[best].predicted))
      best = i;
  return best;
}

/* ---------- trials ---------- */

static double elapsed_s(const tuner *t) { return (double)(pb_now_ns() - t->t0_ns) / 1e9; }

/* The search's own time, without the re-measure after it (all of it while the search runs). */
static double search_s(const tuner *t) {
  return (double)((t->search_end_ns ? t->search_end_ns : pb_now_ns()) - t->t0_ns) / 1e9;
}

/* The trial's samples/s: the median of its repeats that count (its one run's with --repeat 1); NAN when
 * a repeat failed or was interrupted (such a trial is never the best). */
static double measured(const trial *tr) {
  if (tr->status != 0 || !tr->rep || !tr->rep->version || !tr->runs || tr->sum.n == 0) return NAN;
  return tr->sum.samples_per_s.median;
}

double pb_tune_ceiling_tolerance(double noise_pct) {
  double noise = isfinite(noise_pct) && noise_pct > 0 ? noise_pct / 100 : 0;
  return fmax(CEILING_MATCH, fmin(noise, CEILING_NOISE_MAX));
}

bool pb_tune_reached_ceiling(bool up_to, double predicted, double measured_per_s, double noise_pct) {
  return up_to && isfinite(predicted) && !isnan(measured_per_s) &&
         measured_per_s >= predicted * (1 - pb_tune_ceiling_tolerance(noise_pct));
}

/* The run's noise, in %, as its report says (NAN: unknown). */
static double noise_pct(const trial *tr) { return tr->rep ? tr->rep->noise_pct : NAN; }

/* An "up to" prediction that the run reached: the device's rate was the limit, and the distance to it says
 * nothing about the model. */
static bool reached_ceiling(const trial *tr) {
  return pb_tune_reached_ceiling(tr->up_to, tr->predicted, measured(tr), noise_pct(tr));
}

/* (predicted - measured) / measured x 100, NAN when either is missing or the prediction could not have
 * been wrong (reached_ceiling). */
static double error_pct(const trial *tr) {
  double m = measured(tr);
  if (isnan(tr->predicted) || isnan(m) || m <= 0 || reached_ceiling(tr)) return NAN;
  return (tr->predicted - m) / m * 100;
}

static void point_text(const tuner *t, const point *p, char *out, size_t len) {
  size_t n = 0;
  out[0] = '\0';
  for (int k = 0; k < t->nknobs && n < len; k++)
    n += (size_t)snprintf(out + n, len - n, "%s%s=%d", k ? " " : "", t->knobs[k].path, p->v[k]);
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

static int error_summary(const tuner *t, double *median, double *max);

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

enum { RE_BASE, RE_BEST };

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

pb_tune_outcome pb_tune_remeasure_outcome(bool needed, bool skipped, bool interrupted, const pb_interval *base,
                                          const pb_interval *best) {
  if (!needed) return PB_TUNE_NOT_NEEDED;
  if (interrupted) return PB_TUNE_INTERRUPTED;
  if (skipped) return PB_TUNE_NOT_REMEASURED;
  switch (pb_interval_compare(best, base)) {
  case PB_DIFF_ABOVE: return PB_TUNE_GAIN;
  case PB_DIFF_BELOW: return PB_TUNE_BASE_FASTER;
  case PB_DIFF_OVERLAP: return PB_TUNE_NO_DIFFERENCE;
  default: return PB_TUNE_TOO_FEW;
  }
}

const char *pb_tune_outcome_name(pb_tune_outcome o) {
  static const char *const names[] = {[PB_TUNE_NOT_NEEDED] = NULL, [PB_TUNE_NOT_REMEASURED] = "not_remeasured",
                                      [PB_TUNE_INTERRUPTED] = "interrupted", [PB_TUNE_TOO_FEW] = "too_few_repeats",
                                      [PB_TUNE_GAIN] = "gain", [PB_TUNE_NO_DIFFERENCE] = "no_measurable_difference",
                                      [PB_TUNE_BASE_FASTER] = "base_faster"};
  return (unsigned)o < PB_ARRAY_LEN(names) ? names[o] : NULL;
}

static double remeasured_gain_pct(const remeasure *re) {
  double base = re->sum[RE_BASE].samples_per_s.median, best = re->sum[RE_BEST].samples_per_s.median;
  return base > 0 ? (best - base) / base * 100 : NAN;
}

/* The trial whose config tune writes: the best, unless the re-measure found the base measurably faster. */
static int written_trial(const tuner *t) { return t->re.outcome == PB_TUNE_BASE_FASTER ? 0 : t->best; }

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

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

/* A --set list as a knob's allowed values: positive integers, sorted, without repeats. */
static int list_values(knob *k, const pb_axis *ax) {
  for (int i = 0; i < ax->nvalues; i++) {
    char *end;
    long v = strtol(ax->values[i], &end, 10);
    if (*end || v < 1 || v > PB_MAX_THREADS) {
      fprintf(stderr, "pipebench: tune: --set %s: \"%s\" is not a count (expected integers from 1 to %d)\n", ax->path,
              ax->values[i], PB_MAX_THREADS);
      return PB_EXIT_USAGE;
    }
    k->values[k->nvalues++] = (int)v;
  }
  qsort(k->values, (size_t)k->nvalues, sizeof k->values[0], cmp_int);
  int n = 0;
  for (int i = 0; i < k->nvalues; i++)
    if (!n || k->values[i] != k->values[n - 1]) k->values[n++] = k->values[i];
  k->nvalues = n;
  return 0;
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

/* Every threads and depth knob of the config; with lists, only the listed ones, with their values.  Which
 * stages have one is the config schema's word (pb_config_stage_key_max: a "threads" above 1, a "depth"),
 * as for the recommendations. */
static int find_knobs(tuner *t, const pb_axis *axes, const char (*canon)[PB_CFG_PATH_LEN], int naxes) {
  for (int i = 0; i < t->cfg->nstages; i++) {
    pb_stage_type ty = t->cfg->stages[i].type;
    if (pb_config_stage_key_max(ty, "threads") > 1) add_knob(t, i, false);
    if (pb_config_stage_key_max(ty, "depth") > 0) add_knob(t, i, true);
  }
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
    p->v[k] = v < knob_min(&t->knobs[k]) ? knob_min(&t->knobs[k]) : snap_down(&t->knobs[k], v);
  }
}

/* ---------- output ---------- */

/* The trial's figures: its run's, or with repeats the medians and the median repeat's bottleneck. */
static cJSON *trial_figures_json(const trial *tr, const char *dir) {
  if (!tr->runs) return pb_multi_run_json(NULL, tr->status, dir);
  pb_run_figures f;
  pb_repeat_figures(tr->runs, tr->nruns, &tr->sum, &f);
  f.status = tr->status;
  return pb_multi_figures_json(&f, dir);
}

#define CEILING_NOTE                                                                                 \
  "predicted up to the device's rate, and measured within the run's noise of it (at least 1 %, at most\n" \
  "  5 %): not a check of the model"

/* The trial's note: how close to the ceiling it measured, and the tolerance that makes it "reached". */
static void ceiling_note(const trial *tr, char *out, size_t len) {
  double m = measured(tr);
  snprintf(out, len,
           "predicted up to the device's rate (%.1f samples/s) and measured %.1f, %.1f %% below it, within the "
           "tolerance of %.1f %% (the run's noise, at least 1 %%, at most 5 %%): not a check of the model",
           tr->predicted, m, 100 * (tr->predicted - m) / tr->predicted,
           100 * pb_tune_ceiling_tolerance(noise_pct(tr)));
}

static cJSON *trial_json(const tuner *t, int i) {
  const trial *tr = &t->trials[i];
  char dir[PB_PATH_LEN + 32];
  snprintf(dir, sizeof dir, "%s/trial-%03d", t->m->out_dir, i + 1);
  cJSON *o = trial_figures_json(tr, dir);
  cJSON_AddNumberToObject(o, "trial", i + 1);
  cJSON_AddStringToObject(o, "change", tr->change);
  cJSON *sets = cJSON_AddObjectToObject(o, "sets");
  for (int k = 0; k < t->nknobs; k++) cJSON_AddNumberToObject(sets, t->knobs[k].path, tr->p.v[k]);
  pb_multi_add_number(o, "predicted_samples_per_s", tr->predicted, 1);
  cJSON_AddBoolToObject(o, "predicted_up_to", tr->up_to);
  pb_multi_add_number(o, "prediction_error_pct", error_pct(tr), 2);
  char note[320];
  if (reached_ceiling(tr)) ceiling_note(tr, note, sizeof note);
  if (reached_ceiling(tr)) cJSON_AddStringToObject(o, "prediction_note", note);
  else cJSON_AddNullToObject(o, "prediction_note");
  cJSON_AddBoolToObject(o, "best", i == t->best);
  if (t->repeats > 1 && tr->runs) cJSON_AddItemToObject(o, "repeats", pb_repeat_json(tr->runs, tr->nruns, &tr->sum));
  else cJSON_AddNullToObject(o, "repeats");
  return o;
}

/* A boolean the re-measure decides: null where it decided nothing (not run, interrupted, too few). */
static void add_decided(cJSON *o, const char *key, const remeasure *re, bool v) {
  bool decided = re->outcome == PB_TUNE_GAIN || re->outcome == PB_TUNE_NO_DIFFERENCE || re->outcome == PB_TUNE_BASE_FASTER;
  if (decided) cJSON_AddBoolToObject(o, key, v);
  else cJSON_AddNullToObject(o, key);
}

/* tune.json's "remeasure": null when the base config is the best; else what it found (outcome), each side's
 * repeats object (with its trial; null when it did not run), the booleans and the gain of the medians. */
static cJSON *remeasure_json(const tuner *t) {
  const remeasure *re = &t->re;
  if (!re->needed) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, "pairs", re->pairs);
  cJSON_AddStringToObject(o, "outcome", pb_tune_outcome_name(re->outcome));
  if (re->skipped) cJSON_AddStringToObject(o, "not_remeasured_reason", re->why_not);
  else cJSON_AddNullToObject(o, "not_remeasured_reason");
  pb_multi_add_number(o, "estimate_s", re->estimate_s, 3);
  pb_multi_add_number(o, "wall_s", re->started ? re->wall_s : NAN, 3);
  static const char *const keys[] = {"base", "tuned"};
  for (int side = RE_BASE; side <= RE_BEST; side++) {
    cJSON *r = re->started ? pb_repeat_json(re->runs[side], re->done[side], &re->sum[side]) : cJSON_CreateNull();
    if (re->started && r) cJSON_AddNumberToObject(r, "trial", side == RE_BASE ? 1 : t->best + 1);
    cJSON_AddItemToObject(o, keys[side], r);
  }
  add_decided(o, "no_measurable_difference", re, re->outcome == PB_TUNE_NO_DIFFERENCE);
  add_decided(o, "gain_measurable", re, re->outcome == PB_TUNE_GAIN);
  add_decided(o, "base_measurably_faster", re, re->outcome == PB_TUNE_BASE_FASTER);
  pb_multi_add_number(o, "gain_pct", re->started ? remeasured_gain_pct(re) : NAN, 2);
  cJSON_AddBoolToObject(o, "interrupted", re->interrupted);
  return o;
}

/* The gain tune.json claims: the re-measure's when it found one (else null: unconfirmed, none, or the base
 * faster), 0 when the base config is the best (nothing to re-measure). */
static double claimed_gain_pct(const tuner *t) {
  if (t->re.outcome == PB_TUNE_NOT_NEEDED) return t->best == 0 ? 0 : NAN;
  return t->re.outcome == PB_TUNE_GAIN ? remeasured_gain_pct(&t->re) : NAN;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median and max of |prediction error| over the trials that have one; returns how many. */
static int error_summary(const tuner *t, double *median, double *max) {
  double v[MAX_TRIALS];
  int n = 0;
  for (int i = 0; i < t->ntrials; i++)
    if (!isnan(error_pct(&t->trials[i]))) v[n++] = fabs(error_pct(&t->trials[i]));
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  *median = n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : NAN;
  *max = n ? v[n - 1] : NAN;
  return n;
}

static void add_num(cJSON *o, const char *key, double v, int decimals) { pb_multi_add_number(o, key, v, decimals); }

static cJSON *space_json(const tuner *t) {
  cJSON *space = cJSON_CreateArray();
  for (int k = 0; k < t->nknobs; k++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", t->knobs[k].path);
    if (t->knobs[k].nvalues) cJSON_AddItemToObject(o, "values", cJSON_CreateIntArray(t->knobs[k].values, t->knobs[k].nvalues));
    else cJSON_AddItemToObject(o, "range", cJSON_CreateIntArray((const int[]){1, RANGE_MAX}, 2));
    cJSON_AddItemToArray(space, o);
  }
  return space;
}

static cJSON *tune_json(const tuner *t, const char *tuned_path, bool interrupted) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "command", "tune");
  cJSON_AddStringToObject(o, "config", t->m->config_file);
  cJSON_AddItemToObject(o, "space", space_json(t));
  if (t->listed) cJSON_AddNumberToObject(o, "space_size", (double)t->space_size);
  else cJSON_AddNullToObject(o, "space_size");
  cJSON_AddNumberToObject(o, "ncpu", t->ncpu);
  cJSON_AddNumberToObject(o, "max_trials", t->max_trials);
  cJSON_AddNumberToObject(o, "budget_s", t->budget_s);
  pb_multi_add_number(o, "elapsed_s", elapsed_s(t), 3);
  pb_multi_add_number(o, "search_elapsed_s", search_s(t), 3);
  cJSON *trials = cJSON_AddArrayToObject(o, "trials");
  for (int i = 0; i < t->ntrials; i++) cJSON_AddItemToArray(trials, trial_json(t, i));
  bool have = t->ntrials && t->best >= 0;
  if (have) cJSON_AddItemToObject(o, "best", trial_json(t, t->best));
  else cJSON_AddNullToObject(o, "best");
  double base = t->ntrials ? measured(&t->trials[0]) : NAN, tuned = have ? measured(&t->trials[t->best]) : NAN;
  add_num(o, "base_samples_per_s", base, 1);
  add_num(o, "tuned_samples_per_s", tuned, 1);
  add_num(o, "search_gain_pct", base > 0 ? (tuned - base) / base * 100 : NAN, 2);
  add_num(o, "gain_pct", claimed_gain_pct(t), 2);
  cJSON_AddNumberToObject(o, "repeat", t->repeats);
  cJSON_AddItemToObject(o, "remeasure", remeasure_json(t));
  add_decided(o, "no_measurable_difference", &t->re, t->re.outcome == PB_TUNE_NO_DIFFERENCE);
  double med, max;
  int n = error_summary(t, &med, &max);
  cJSON *pe = cJSON_AddObjectToObject(o, "prediction_error_pct");
  cJSON_AddNumberToObject(pe, "trials", n);
  add_num(pe, "median_abs", med, 2);
  add_num(pe, "max_abs", max, 2);
  cJSON_AddStringToObject(o, "stop_reason", t->stop_reason);
  if (tuned_path) cJSON_AddStringToObject(o, "tuned_config", tuned_path);
  else cJSON_AddNullToObject(o, "tuned_config");
  if (tuned_path) cJSON_AddNumberToObject(o, "tuned_trial", written_trial(t) + 1);
  else cJSON_AddNullToObject(o, "tuned_trial");
  cJSON_AddBoolToObject(o, "interrupted", interrupted);
  return o;
}

/* The best row's mark: "<- best", unless the re-measure did not confirm it ("<- highest"); the base row's
 * when the re-measure found it measurably faster (its config is the one written). */
static const char *best_mark(const tuner *t, int i) {
  pb_tune_outcome o = t->re.outcome;
  if (i == 0 && i != t->best && o == PB_TUNE_BASE_FASTER) return "  <- written (faster when re-measured)";
  if (i != t->best) return "";
  return o == PB_TUNE_NOT_NEEDED || o == PB_TUNE_GAIN ? "  <- best" : "  <- highest";
}

static void print_row(const tuner *t, int i, FILE *out) {
  const trial *tr = &t->trials[i];
  char pred[48] = "-", meas[32] = "failed", err[32] = "-";
  if (tr->status == PB_EXIT_INTERRUPTED) snprintf(meas, sizeof meas, "interrupted");
  if (!isnan(tr->predicted)) snprintf(pred, sizeof pred, "%s%.1f", tr->up_to ? "up to " : "", tr->predicted);
  if (!isnan(measured(tr))) snprintf(meas, sizeof meas, "%.1f", measured(tr));
  if (!isnan(error_pct(tr))) snprintf(err, sizeof err, "%+.1f", error_pct(tr));
  else if (reached_ceiling(tr)) snprintf(err, sizeof err, "n/a *");
  fprintf(out, "%-5d %-44.44s", i + 1, tr->change);
  for (int k = 0; k < t->nknobs; k++) fprintf(out, " %*d", (int)PB_MAX(6, strlen(t->knobs[k].path) - 7), tr->p.v[k]);
  fprintf(out, " %16s %10s %8s  %s%s\n", pred, meas, err, tr->status ? "-" : pb_multi_bottleneck(tr->rep),
          best_mark(t, i));
}

static void print_table(const tuner *t, FILE *out) {
  fprintf(out, "%-5s %-44s", "trial", "change");
  for (int k = 0; k < t->nknobs; k++)
    fprintf(out, " %*s", (int)PB_MAX(6, strlen(t->knobs[k].path) - 7), t->knobs[k].path + 7); /* no "stages." */
  fprintf(out, " %16s %10s %8s  %s\n", "predicted", "measured", "error %", "bottleneck");
  bool note = false;
  for (int i = 0; i < t->ntrials; i++) {
    print_row(t, i, out);
    note = note || reached_ceiling(&t->trials[i]);
  }
  if (note) fprintf(out, "* %s\n", CEILING_NOTE);
}

static int ceilings_reached(const tuner *t) {
  int n = 0;
  for (int i = 0; i < t->ntrials; i++) n += reached_ceiling(&t->trials[i]);
  return n;
}

/* The re-measure's lines: the gain only when the best's interval lies above the base's (both covering at
 * least 90 %); no claim when it was not run, was interrupted or has too few runs. */
static void print_remeasure(const tuner *t, FILE *out) {
  const remeasure *re = &t->re;
  char a[160], b[160], why[96];
  int pairs = PB_MIN(re->done[RE_BASE], re->done[RE_BEST]), begun = PB_MAX(re->done[RE_BASE], re->done[RE_BEST]);
  if (re->outcome == PB_TUNE_NOT_REMEASURED) {
    fprintf(out, "not re-measured: %s; the search's %+.1f %% is not confirmed\n", re->why_not,
            (measured(&t->trials[t->best]) / measured(&t->trials[0]) - 1) * 100);
    return;
  }
  if (re->outcome == PB_TUNE_INTERRUPTED) {
    if (re->started)
      fprintf(out, "re-measure interrupted in pair %d of %d: no claim (trial %d, the search's highest, is written "
                   "unconfirmed)\n", begun, re->pairs, t->best + 1);
    else
      fprintf(out, "not re-measured (interrupted): no claim (trial %d, the search's highest, is written unconfirmed)\n",
              t->best + 1);
    return;
  }
  fprintf(out, "re-measured, %d pairs interleaved in %.1f s (samples/s):\n  base %s, tuned %s\n", pairs, re->wall_s,
          pb_interval_text(&re->sum[RE_BASE].samples_per_s, 1, a, sizeof a),
          pb_interval_text(&re->sum[RE_BEST].samples_per_s, 1, b, sizeof b));
  if (re->outcome == PB_TUNE_GAIN)
    fprintf(out, "  gain %+.1f %%: the tuned config's interval lies above the base config's\n", remeasured_gain_pct(re));
  else if (re->outcome == PB_TUNE_BASE_FASTER)
    fprintf(out, "  no gain: the base config is measurably faster (its interval lies above trial %d's; the search's "
                 "lead was noise), so the base config is the one written\n", t->best + 1);
  else if (re->outcome == PB_TUNE_NO_DIFFERENCE)
    fprintf(out, "  no measurable difference: the intervals overlap, so the tuned config is not shown to be faster "
                 "(it is written all the same)\n");
  else
    fprintf(out, "  no claim: %s; runs that failed do not count, and trial %d is written unconfirmed\n",
            pb_interval_undecided_text(pb_interval_decisive(&re->sum[RE_BASE].samples_per_s)
                                           ? &re->sum[RE_BEST].samples_per_s : &re->sum[RE_BASE].samples_per_s,
                                       why, sizeof why), t->best + 1);
}

static void print_summary(const tuner *t, const char *tuned_path, FILE *out) {
  print_table(t, out);
  double base = measured(&t->trials[0]), tuned = measured(&t->trials[t->best]);
  char pt[1024];
  point_text(t, &t->trials[t->best].p, pt, sizeof pt);
  if (t->re.needed)
    fprintf(out, "\ntuned: %s\n  searched: %.1f samples/s against the base config's %.1f (%+.1f %%); %d trials in "
                 "%.1f s\n  stopped: %s\n", pt, tuned, base, (tuned - base) / base * 100, t->ntrials, search_s(t),
            t->stop_reason);
  else
    fprintf(out, "\ntuned: %s\n  %.1f samples/s, %+.1f %% over the base config's %.1f; %d trials in %.1f s; stopped: %s\n",
            pt, tuned, (tuned - base) / base * 100, base, t->ntrials, search_s(t), t->stop_reason);
  if (t->re.needed) print_remeasure(t, out);
  double med, max;
  int n = error_summary(t, &med, &max);
  if (n) fprintf(out, "prediction error: median |error| %.1f %%, max %.1f %% over %d trials (target 15 %%)\n", med, max, n);
  else if (ceilings_reached(t))
    fprintf(out, "prediction error: none to check (every prediction measured was the device's rate, and reached)\n");
  if (tuned_path)
    fprintf(out, "tuned config: %s%s\n", tuned_path, written_trial(t) == 0 && t->best != 0 ? " (the base config)" : "");
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
  int user_rc = have && o->write_file ? write_config(t, o->write_file) : 0;
  cJSON *json = tune_json(t, have && !wrc ? tuned : NULL, rc == PB_EXIT_INTERRUPTED);
  int jrc = pb_multi_write_json(t->m, "tune.json", json);
  if (t->m->run.json_stdout) {
    char *text = pb_json_print(json, true);
    if (text) printf("%s\n", text);
    free(text);
  } else if (!t->m->run.quiet && have && (t->m->run.formats & PB_FMT_TEXT)) { /* --format without text: none */
    print_summary(t, o->write_file && !user_rc ? o->write_file : !wrc ? tuned : NULL, stdout);
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
  t->max_trials = o->max_trials > 0 ? o->max_trials
                  : t->listed       ? (int)PB_MAX(2, t->space_size / 4)
                                    : DEFAULT_MAX_TRIALS;
  if (t->max_trials > MAX_TRIALS) t->max_trials = MAX_TRIALS;
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

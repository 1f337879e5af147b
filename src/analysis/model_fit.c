/* Fitting the model (model.h) to a run, and calibrating it against what the run measured. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "model.h"

/* The calibration's factor stays within these: beyond them the replay is too far from the run for one
 * factor to be an honest correction, and the model says it does not fit (fit_error_pct). */
#define SCALE_MIN 0.67
#define SCALE_MAX 1.5
#define FIT_TOLERANCE 0.01 /* a replay within 1 % of the run needs no calibration */
#define SATURATED_UTILIZATION 0.8 /* a stage busy this share of the window set the pace */
#define SATURATED_CORES 0.8       /* the stages kept this share of the usable cores busy */

static pb_model_role role_of(const pb_stage_rec *s) {
  if (s->is_source) return PB_ROLE_SOURCE;
  if (strcmp(s->type, "batch") == 0) return PB_ROLE_BATCH;
  if (strcmp(s->type, "shuffle") == 0) return PB_ROLE_SHUFFLE;
  if (strcmp(s->type, "cache") == 0) return PB_ROLE_CACHE;
  return PB_ROLE_SERVER;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* q[i] = the (i + 0.5) / N quantile of sorted v, then all scaled so that their mean is v's mean: a
 * uniform draw among them has the distribution's shape and exactly its mean. */
static void quantiles_of_sorted(const double *v, size_t n, double *q) {
  double sum = 0, qsum = 0;
  for (size_t i = 0; i < n; i++) sum += v[i];
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) {
    double pos = ((double)i + 0.5) / PB_MODEL_QUANTILES * (double)n - 0.5;
    size_t lo = pos <= 0 ? 0 : (size_t)pos;
    if (lo >= n - 1) lo = n - 1;
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    double f = pos - (double)lo;
    if (f < 0) f = 0;
    q[i] = v[lo] + (v[hi] - v[lo]) * f;
    qsum += q[i];
  }
  double mean = sum / (double)n, qmean = qsum / PB_MODEL_QUANTILES;
  if (qmean > 0)
    for (int i = 0; i < PB_MODEL_QUANTILES; i++) q[i] *= mean / qmean;
}

/* The histogram's quantiles (each bucket's representative value), mean-preserving, in seconds. */
static void quantiles_of_hist(const pb_hist *h, double factor, double *q) {
  double qsum = 0;
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) {
    double p = ((double)i + 0.5) / PB_MODEL_QUANTILES * 100.0;
    q[i] = (double)pb_hist_percentile(h, p) / 1e9;
    qsum += q[i];
  }
  double mean = pb_hist_mean(h) / 1e9, qmean = qsum / PB_MODEL_QUANTILES;
  double k = (qmean > 0 ? mean / qmean : 1) * factor;
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) q[i] *= k;
}

/* A read capped by bandwidth_mb_per_s (for the whole stage): elements/s it cannot exceed. */
static double rate_cap(const pb_record *rec, const pb_stage_rec *s, const pb_stage_report *sr) {
  if (s->cfg_index < 0 || strcmp(s->type, "read") != 0 || !sr->calls || !sr->bytes_out) return 0;
  double mb = rec->cfg->stages[s->cfg_index].bandwidth_mb_per_s;
  return mb > 0 ? mb * 1e6 / ((double)sr->bytes_out / (double)sr->calls) : 0;
}

#define LEVEL_MIN_CALLS 16 /* a window with fewer calls says nothing of the pace: level 1 */
/* The windows' spread must exceed chance by this many of its standard errors (a variance's is
 * sqrt(2 / (windows - 1)) of it) before a stage has levels: i.i.d. calls keep the plain draws. */
#define LEVEL_SIGNIFICANCE 3.0

typedef struct level_sums {
  double sum[PB_MODEL_LEVELS], sumsq[PB_MODEL_LEVELS], n[PB_MODEL_LEVELS];
} level_sums;

/* Each window's mean over the calls' mean, shrunk towards 1 by `keep`; 1 where a window had too few calls. */
static void set_levels(pb_model_stage *ms, const level_sums *ls, int nwin, double win_s, double mean, double keep) {
  for (int w = 0; w < nwin; w++)
    ms->level[w] = ls->n[w] >= LEVEL_MIN_CALLS ? (float)(1 + keep * (ls->sum[w] / ls->n[w] / mean - 1)) : 1.0f;
  ms->nlevels = nwin;
  ms->level_window_s = win_s;
}

void pb_model_fit_levels(pb_model_stage *ms, const double *start_s, const double *service_s, size_t n, double run_s) {
  ms->nlevels = 0;
  if (!(run_s > 0) || !n) return;
  double win_s = fmax(PB_MODEL_LEVEL_MIN_S, run_s / PB_MODEL_LEVELS);
  int nwin = (int)fmin(PB_MODEL_LEVELS, ceil(run_s / win_s));
  level_sums *ls = calloc(1, sizeof *ls);
  if (!ls) return; /* no levels: the plain draws */
  for (size_t i = 0; i < n; i++) {
    int w = start_s[i] >= 0 ? (int)(start_s[i] / win_s) : -1;
    if (w < 0 || w >= nwin) continue;
    ls->sum[w] += service_s[i], ls->sumsq[w] += service_s[i] * service_s[i], ls->n[w] += 1;
  }
  double tot = 0, calls = 0, used = 0, chance = 0, spread = 0;
  for (int w = 0; w < nwin; w++)
    if (ls->n[w] >= LEVEL_MIN_CALLS) tot += ls->sum[w], calls += ls->n[w], used++;
  double mean = calls > 0 ? tot / calls : 0;
  for (int w = 0; w < nwin && mean > 0 && used >= 3; w++) {
    if (ls->n[w] < LEVEL_MIN_CALLS) continue;
    double m = ls->sum[w] / ls->n[w], var = fmax(0, ls->sumsq[w] / ls->n[w] - m * m);
    chance += var / (ls->n[w] - 1) / used; /* a window mean's variance, were the calls i.i.d. */
    spread += (m - mean) * (m - mean) / (used - 1);
  }
  if (used >= 3 && spread > chance * (1 + LEVEL_SIGNIFICANCE * sqrt(2 / (used - 1))))
    set_levels(ms, ls, nwin, win_s, mean, 1 - chance / spread);
  free(ls);
}

/* The stage's traced calls: each one's process segments from the one that began it (an input arrived, or
 * a source's work began) up to the next call's, and when it began (s from the run's start). */
static size_t collect_calls(const pb_stage_rec *s, uint64_t start_ns, double *start_s, double *service_s) {
  size_t n = 0;
  for (int k = 0; k < s->threads; k++) {
    const pb_worker_trace *wt = &s->workers[k];
    bool open = false; /* the current call is start_s[n - 1] */
    for (uint32_t i = 0; i < wt->n; i++) {
      const pb_event *e = &wt->ev[i];
      if (e->kind != PB_EV_PROCESS) continue;
      if (e->flags & (PB_EVF_CALL_START | PB_EVF_PRODUCE)) {
        open = e->t0_ns >= start_ns;
        if (open) start_s[n] = (double)(e->t0_ns - start_ns) / 1e9, service_s[n++] = 0;
      }
      if (open && e->t1_ns > e->t0_ns) service_s[n - 1] += (double)(e->t1_ns - e->t0_ns) / 1e9;
    }
  }
  return n;
}

/* The stage's pace over the run (model.h: level), from its trace; none untraced. */
static void fit_levels(pb_model_stage *ms, const pb_record *rec, const pb_stage_rec *s) {
  ms->nlevels = 0;
  if (!s->workers || rec->window_end_ns <= rec->start_ns) return;
  size_t cap = 0;
  for (int k = 0; k < s->threads; k++) cap += s->workers[k].n;
  double *start_s = malloc((cap ? cap : 1) * sizeof *start_s), *service_s = malloc((cap ? cap : 1) * sizeof *service_s);
  if (start_s && service_s) /* else no levels: the plain draws */
    pb_model_fit_levels(ms, start_s, service_s, collect_calls(s, rec->start_ns, start_s, service_s),
                        (double)(rec->window_end_ns - rec->start_ns) / 1e9);
  free(start_s);
  free(service_s);
}

static void fit_stage(pb_model_stage *ms, const pb_record *rec, int row, const pb_stage_report *sr,
                      bool saturated_cores, double samples_per_file) {
  const pb_stage_rec *s = &rec->stages[row];
  memset(ms, 0, sizeof *ms);
  snprintf(ms->name, sizeof ms->name, "%s", s->name);
  snprintf(ms->type, sizeof ms->type, "%s", s->type);
  ms->report_row = row;
  ms->role = role_of(s);
  ms->threads = s->threads > 0 ? s->threads : 1;
  ms->max_threads = s->cfg_index >= 0 ? (int)pb_config_stage_key_max(rec->cfg->stages[s->cfg_index].type, "threads") : 1;
  ms->queue_capacity = s->queue_capacity > 0 ? s->queue_capacity : 1;
  ms->buffer = s->cfg_index >= 0 && ms->role == PB_ROLE_SHUFFLE ? rec->cfg->stages[s->cfg_index].buffer : 0;
  if (s->cfg_index >= 0) {
    const pb_stage_cfg *sc = &rec->cfg->stages[s->cfg_index];
    ms->ahead_per_thread = sc->type == PB_STAGE_MAP ? (int)sc->ahead : 0;
    ms->on_demand = sc->type == PB_STAGE_BATCH && sc->on_demand;
  }
  ms->batched = s->batched && ms->role != PB_ROLE_BATCH;
  ms->bytes_per_element = sr->calls ? (double)sr->bytes_out / (double)sr->calls : 0;
  ms->rate_cap_per_s = rate_cap(rec, s, sr);
  ms->elements_per_call = 1;
  /* A read of multi-sample files reads a whole file, then hands its samples on: they arrive in bursts,
   * and a full queue holds the rest back in the reading thread. */
  if (s->is_source && strcmp(s->type, "read") == 0 && samples_per_file > 1)
    ms->elements_per_call = (int)llround(samples_per_file);
  ms->saturated = !isnan(sr->utilization) && sr->utilization >= SATURATED_UTILIZATION;
  /* On cores the pipeline kept busy, a service's run-queue delay is the pipeline's own contention, which
   * the simulation adds back as it shares the cores: it comes off, and the CPU share is of what is left
   * (pb_stage_cpu_share).  On a machine with cores to spare it is the machine's wake-up latency (or other
   * tenants'), which stays whatever changes: the service keeps it, and the CPU share is of the whole. */
  double delay = saturated_cores && !isnan(sr->cpu_delay_fraction) ? sr->cpu_delay_fraction : 0;
  double share = isnan(sr->cpu_fraction) ? 0 : delay > 0 ? pb_stage_cpu_share(sr) : sr->cpu_fraction;
  ms->cpu_share = share > 1 ? 1 : share < 0 ? 0 : share;
  ms->valid = s->hist.count > 0;
  if (ms->valid) quantiles_of_hist(&s->hist, 1 - delay, ms->service_s);
  double sum = 0;
  for (int i = 0; i < PB_MODEL_QUANTILES; i++) sum += ms->service_s[i];
  ms->mean_s = sum / PB_MODEL_QUANTILES;
  if (ms->valid) fit_levels(ms, rec, s);
}

/* One step's device time: compute and exchange, and the copy when the device thread makes it (no h2d
 * stage: the step waits for it). */
static uint64_t step_busy_ns(const pb_step *st, bool copy_in_step) {
  uint64_t end = pb_step_end_ns(st), busy = end > st->compute_start_ns ? end - st->compute_start_ns : 0;
  if (copy_in_step && st->h2d_end_ns > st->h2d_start_ns) busy += st->h2d_end_ns - st->h2d_start_ns;
  return busy;
}

static bool fit_device(pb_model *m, const pb_record *rec, bool copy_in_step) {
  double *v = malloc((rec->nsteps ? rec->nsteps : 1) * sizeof *v);
  if (!v) return false;
  size_t n = 0;
  double compute_ns = 0, busy_ns = 0;
  m->ndevice_seq = 0;
  for (size_t i = 0; i < rec->nsteps; i++) {
    const pb_step *st = &rec->steps[i];
    uint64_t busy = step_busy_ns(st, copy_in_step);
    if (m->ndevice_seq < PB_MODEL_DEVICE_SEQ) m->device_seq_s[m->ndevice_seq++] = (float)((double)busy / 1e9);
    if (!st->measured) continue;
    v[n++] = (double)busy / 1e9;
    compute_ns += (double)(st->compute_end_ns - st->compute_start_ns);
    busy_ns += (double)busy;
  }
  /* device_idle_pct counts compute alone as the device's work; the simulation's device time also holds
   * the exchange and an in-step copy */
  m->device_compute_share = busy_ns > 0 ? compute_ns / busy_ns : 1;
  if (n) {
    qsort(v, n, sizeof *v, cmp_double);
    quantiles_of_sorted(v, n, m->device_s);
    double sum = 0;
    for (int i = 0; i < PB_MODEL_QUANTILES; i++) sum += m->device_s[i];
    m->device_mean_s = sum / PB_MODEL_QUANTILES;
  }
  free(v);
  return n > 0;
}

/* Samples a file held: what the source row made (not the samples_read of the accounting, which counts a
 * cache's replays too) over the files it read; 0 when unknown. */
static double samples_per_file(const pb_record *rec, const pb_report *r) {
  if (!r->files_read) return 0;
  for (int i = 0; i < rec->nstages; i++)
    if (rec->stages[i].is_source && !rec->stages[i].skipped)
      return (double)rec->stages[i].ctr.samples_out_total / (double)r->files_read;
  return 0;
}

/* Samples in one epoch of this process's data: the config's synthetic dataset or its generate section,
 * else the files the run listed times the samples a file held; 0 when unknown. */
static int64_t epoch_samples(const pb_record *rec, const pb_report *r) {
  const pb_config *cfg = rec->cfg;
  int world = rec->world_size > 1 ? rec->world_size : 1;
  if (cfg->dataset.format == PB_FMT_SYNTHETIC) return cfg->dataset.num_samples;
  const pb_generate_cfg *g = &cfg->dataset.generate;
  if (g->present && g->num_files > 0)
    return (int64_t)g->num_files * (g->samples_per_file > 0 ? g->samples_per_file : 1) / world;
  double per_file = samples_per_file(rec, r);
  if (rec->dataset_files > 0 && per_file > 0) return (int64_t)llround((double)rec->dataset_files * per_file);
  return 0;
}

static void fit_run(pb_model *m, const pb_record *rec, const pb_report *r) {
  m->warmup_steps = r->warmup_steps;
  /* the run as it ran: the steps it measured (a run limited by time, or by epochs, made that many; a
   * prediction over as many steps is one over the run, and long runs are then extrapolated alike) */
  m->steps = (int64_t)r->step_count;
  m->epoch_samples = epoch_samples(rec, r);
  m->seed = rec->cfg->seed;
}

/* The cores the pipeline's threads can use: what other processes left of the affinity CPUs (where their
 * load was measured), at most the cgroup quota (which others' load does not touch: on a busy 32-CPU node a
 * 2-core quota is still 2 cores). */
static void fit_cores(pb_model *m, const pb_record *rec) {
  double usable = rec->cores_usable > 0 ? rec->cores_usable : rec->ncpu;
  double affinity = rec->cores_affinity > 0 ? rec->cores_affinity : usable;
  double others = rec->cores_taken_by_others > 0 ? rec->cores_taken_by_others : 0;
  double left = affinity - others;
  if (!isnan(rec->cores_quota) && rec->cores_quota > 0 && rec->cores_quota < left) left = rec->cores_quota;
  m->cores_usable = usable;
  m->cores = left > 0.25 * usable ? left : 0.25 * usable;
}

/* Scales every host service time so the replay matches the measured samples/s (model.h).  Only an
 * input-bound run says how fast the pipeline is: a device-bound one only that it is fast enough. */
static void calibrate(pb_model *m, bool input_bound) {
  pb_model_result base;
  m->service_scale = 1;
  if (!pb_model_simulate(m, NULL, 1, &base)) {
    m->valid = false;
    snprintf(m->why, sizeof m->why, "the simulation delivered no measured step");
    return;
  }
  m->replay_samples_per_s = m->base_samples_per_s = base.samples_per_s;
  m->replay_idle_pct = m->base_idle_pct = base.idle_pct;
  double meas = m->measured_samples_per_s;
  m->fit_error_pct = meas > 0 ? (base.samples_per_s - meas) / meas * 100 : NAN;
  bool any_saturated = false; /* the scale applies to those alone: without one it changes nothing */
  for (int i = 0; i < m->nstages; i++) any_saturated = any_saturated || m->stages[i].saturated;
  if (!input_bound || !any_saturated || !(meas > 0) || fabs(base.samples_per_s - meas) <= FIT_TOLERANCE * meas) return;
  /* Throughput is about inversely proportional to the scale while the pipeline limits it: two secant
   * steps land within a fraction of a percent. */
  double k = base.samples_per_s / meas, got = base.samples_per_s;
  for (int it = 0; it < 3; it++) {
    if (k < SCALE_MIN || k > SCALE_MAX) return;
    pb_model_result t;
    if (!pb_model_simulate(m, NULL, k, &t)) return;
    got = t.samples_per_s;
    if (fabs(got - meas) <= FIT_TOLERANCE * meas) break;
    k *= got / meas;
  }
  if (fabs(got - meas) > 3 * FIT_TOLERANCE * meas || k < SCALE_MIN || k > SCALE_MAX) return;
  m->service_scale = k;
  m->calibrated = true;
  pb_model_result cal;
  if (pb_model_simulate(m, NULL, k, &cal)) m->base_samples_per_s = cal.samples_per_s, m->base_idle_pct = cal.idle_pct;
}

static void debug_print(const pb_model *m) {
  fprintf(stderr, "model: cores %.2f (usable %.2f), batch %d, devices %d, device mean %.3f ms, steps %lld + %lld "
          "warm-up, duration %.3f s, epoch %lld; replay %.1f/s (measured %.1f), scale %.4f%s\n",
          m->cores, m->cores_usable, m->batch_size, m->devices, m->device_mean_s * 1e3, (long long)m->steps,
          (long long)m->warmup_steps, m->duration_s, (long long)m->epoch_samples, m->replay_samples_per_s,
          m->measured_samples_per_s, m->service_scale, m->calibrated ? " (calibrated)" : "");
  for (int i = 0; i < m->nstages; i++) {
    const pb_model_stage *s = &m->stages[i];
    fprintf(stderr, "  %-12s %-8s role %d threads %d queue %d mean %.3f ms p50 %.3f p99 %.3f cpu %.2f%s%s cap %.1f/s "
            "per call %d\n",
            s->name, s->type, s->role, s->threads, s->queue_capacity, s->mean_s * 1e3,
            s->service_s[PB_MODEL_QUANTILES / 2] * 1e3, s->service_s[PB_MODEL_QUANTILES * 99 / 100] * 1e3, s->cpu_share,
            s->saturated ? " saturated" : "", s->batched ? " batched" : "", s->rate_cap_per_s, s->elements_per_call);
    double lo = 1, hi = 1;
    for (int w = 0; w < s->nlevels; w++) lo = fmin(lo, s->level[w]), hi = fmax(hi, s->level[w]);
    if (s->nlevels) fprintf(stderr, "    levels: %d x %.3f s, %.3f to %.3f\n", s->nlevels, s->level_window_s, lo, hi);
  }
}

/* PB_DEBUG_MODEL: the predicted rate and idle at each prefetch depth (of the last prefetch row, else of the
 * batch row's output queue), and what those predictions cost, for bench/bursty_depth.py to set against the
 * measured ones. */
static void debug_print_depths(const pb_model *m) {
  static const int depths[] = {1, 2, 4, 8, 16, 32, 64};
  int row = -1;
  for (int i = 0; i < m->nstages; i++)
    if (strcmp(m->stages[i].type, "prefetch") == 0 || (row < 0 && m->stages[i].role == PB_ROLE_BATCH)) row = i;
  if (row < 0) return;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (size_t k = 0; k < sizeof depths / sizeof depths[0]; k++) {
    pb_model_change c;
    pb_model_result res;
    pb_model_change_init(&c);
    c.queue_capacity[row] = depths[k];
    if (pb_model_predict(m, &c, &res))
      fprintf(stderr, "model: depth %d: %.1f/s idle %.2f %%\n", depths[k], res.samples_per_s, res.idle_pct);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "model: %zu predictions in %.3f s\n", sizeof depths / sizeof depths[0],
          (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
}

void pb_model_fit(pb_model *m, const pb_record *rec, const pb_report *r) {
  memset(m, 0, sizeof *m);
  m->service_scale = 1;
  if (!rec->cfg || !r->step_count || !(r->measured_s > 0)) {
    snprintf(m->why, sizeof m->why, "no measured step");
    return;
  }
  int bi = pb_config_batch_index(rec->cfg);
  m->batch_size = bi >= 0 ? (int)rec->cfg->stages[bi].size : 1;
  m->devices = rec->device_count > 0 ? rec->device_count : 1;
  bool h2d_stage = false;
  fit_cores(m, rec);
  bool saturated_cores = pb_report_cores_used(r) >= SATURATED_CORES * m->cores;
  for (int i = 0; i < rec->nstages && i < r->nstages; i++) {
    if (rec->stages[i].skipped) continue;
    if (strcmp(rec->stages[i].type, "h2d") == 0) h2d_stage = true;
    fit_stage(&m->stages[m->nstages++], rec, i, &r->stages[i], saturated_cores, samples_per_file(rec, r));
  }
  if (!m->nstages || m->stages[0].role != PB_ROLE_SOURCE || !fit_device(m, rec, !h2d_stage)) {
    snprintf(m->why, sizeof m->why, "no source stage or no measured step");
    return;
  }
  fit_run(m, rec, r);
  m->measured_samples_per_s = r->samples_per_s;
  m->measured_idle_pct = r->device_idle_pct;
  m->valid = true;
  calibrate(m, r->classification && strcmp(r->classification, "not_input_bound") != 0);
  if (getenv("PB_DEBUG_MODEL")) { /* PB_DEBUG_MODEL=1: the fitted model on stderr */
    debug_print(m);
    if (m->valid) debug_print_depths(m);
  }
}

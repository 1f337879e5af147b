/* The capacity figures and the bottleneck.
 *
 * Capacity of a stage (the model's, model.h) = threads / mean service time on an idle machine, scaled by
 * the model's calibration, in the pipeline's samples/s: what it could sustain if it never waited for
 * input or for downstream and had a core whenever it wanted one.  The device's rate = batch x devices /
 * mean device time.  The cores bound the pipeline at cores / (CPU seconds per sample, summed over every
 * stage): cpu_limit_per_s.
 *
 * The verdict (docs/CONTRACT.md §3, docs/METRICS.md "bottleneck"), in order:
 *   device      the run is not input-bound;
 *   transient   it was input-bound only during a transient inside the window (a cache's first epoch, a
 *               shuffle buffer's fill, a slow start): "device", and the reason says so;
 *   cores       the cores bind: the stages kept them busy and their CPU per sample allows no more than
 *               the lowest stage capacity: "cores", and the stages that spend them;
 *   stage       the stage with the most self time on the critical path (cross-checked against the
 *               model's lowest capacity; the reason says when the two disagree), and beside it every
 *               stage whose capacity is within the run's noise of the lowest (co-bottlenecks).
 * A stage with under 5 % of the path as self time is never named from the path.  Without a trace the
 * model alone decides. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"

#define PB_MIN_PATH_SELF_PCT 5.0   /* a stage named from the path did this share of the path's work */
#define PB_CO_TOLERANCE_PCT 5.0    /* capacities closer than this (or the run's noise) are one limit */
#define PB_CORES_BUSY_FRACTION 0.85 /* the stages kept this share of the usable cores busy */
#define PB_HOST_LATE_NOTE_PCT 5.0

/* ---------- the capacity figures ---------- */

/* Delivered samples per sample the report row handled: 1, or more upstream of a cache that replays (it
 * handled the first epoch only; pb_pipeline_capacities). */
static double delivered_per_own(const pb_stage_report *s) {
  return s->capacity_per_s > 0 && s->pipeline_capacity_per_s > 0 ? s->pipeline_capacity_per_s / s->capacity_per_s : 1;
}

double pb_model_stage_capacity(const pb_report *r, int mrow) {
  const pb_model *m = &r->model;
  const pb_model_stage *ms = &m->stages[mrow];
  if (!m->valid || !ms->valid || !(ms->mean_s > 0)) return NAN;
  double per_s = ms->threads / (ms->mean_s * (ms->saturated ? m->service_scale : 1));
  if (ms->rate_cap_per_s > 0 && ms->rate_cap_per_s < per_s) per_s = ms->rate_cap_per_s;
  if (ms->batched) per_s *= m->batch_size;
  return per_s * delivered_per_own(&r->stages[ms->report_row]);
}

/* CPU seconds one delivered sample costs in the model's row, CPU-bound or not: a read that waits 75 % of
 * its time may still spend 2 ms of CPU per sample copying it, and those cores are not there for others. */
static double cpu_s_per_sample(const pb_report *r, int mrow) {
  const pb_model *m = &r->model;
  const pb_model_stage *ms = &m->stages[mrow];
  if (!ms->valid) return 0;
  double s = ms->cpu_share * ms->mean_s * (ms->saturated ? m->service_scale : 1);
  if (ms->batched) s /= m->batch_size;
  return s / delivered_per_own(&r->stages[ms->report_row]);
}

static void capacity_model(pb_report *r, const pb_record *rec) {
  pb_pipeline_capacities(r); /* the measured figures, per report row */
  const pb_model *m = &r->model;
  r->cores_used = pb_report_cores_used(r);
  /* a step's device time includes its gradient exchange: the device takes no batch during it */
  const pb_config *cfg = rec->cfg;
  double batch = (double)cfg->stages[pb_config_batch_index(cfg)].size;
  double device_ms = r->compute_ms + (r->comm_ms > 0 ? r->comm_ms : 0);
  r->device_rate_per_s = device_ms > 0 ? batch * rec->device_count / (device_ms / 1e3) : NAN;
  double cpu = 0, low = INFINITY;
  int low_row = -1;
  for (int i = 0; m->valid && i < m->nstages; i++) {
    cpu += cpu_s_per_sample(r, i);
    double cap = pb_model_stage_capacity(r, i);
    if (!isnan(cap) && cap < low) low = cap, low_row = i;
  }
  r->cpu_limit_per_s = cpu > 0 ? m->cores / cpu : NAN;
  r->model_capacity_per_s = low_row >= 0 ? low : NAN;
  snprintf(r->model_stage, sizeof r->model_stage, "%s", low_row >= 0 ? m->stages[low_row].name : "");
}

/* ---------- helpers ---------- */

static void set_reason(pb_report *r, const char *stage, double capacity, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set_reason(pb_report *r, const char *stage, double capacity, const char *fmt, ...) {
  snprintf(r->bottleneck_stage, sizeof r->bottleneck_stage, "%s", stage);
  r->bottleneck_capacity_per_s = capacity;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->bottleneck_reason, sizeof r->bottleneck_reason, fmt, ap);
  va_end(ap);
}

static void append(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...) {
  size_t n = strlen(buf);
  if (n + 1 >= len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, len - n, fmt, ap);
  va_end(ap);
}

/* The stage with the most self time on the critical path (not the device), or NULL. */
static const pb_path_segment *path_bottleneck(const pb_report *r) {
  const pb_path_segment *best = NULL;
  for (int i = 0; i < r->npath_segments; i++) {
    const pb_path_segment *p = &r->path_segments[i];
    if (strcmp(p->stage, "device") != 0 && (!best || p->self_ms > best->self_ms)) best = p;
  }
  return best && best->self_ms > 0 ? best : NULL;
}

static bool negligible_on_path(const pb_report *r, const pb_path_segment *p) {
  return !(r->critical_path_total_ms > 0) || p->self_ms < PB_MIN_PATH_SELF_PCT / 100 * r->critical_path_total_ms;
}

static double tolerance(const pb_report *r) {
  double t = PB_CO_TOLERANCE_PCT;
  if (r->noise_pct > t) t = r->noise_pct;
  return t / 100;
}

/* ---------- the verdicts ---------- */

static void verdict_device(pb_report *r) {
  set_reason(r, "device", r->device_rate_per_s,
             "not input-bound: the device waited for input %.2f %% of step time (< 5 %%)", r->input_bound_pct);
}

/* The waiting is mostly the steps' own copies of their batches to the device (the device thread copies, or an
 * imported capture's steps do, after taking the batch), and no stage makes the copy ahead: the pipeline is not
 * what the device waits for, the copy is. */
static bool copy_bound(const pb_report *r, const pb_record *rec) {
  if (!(r->h2d_ms > r->input_wait_ms)) return false;
  for (int i = 0; i < rec->nstages; i++)
    if (strcmp(rec->stages[i].type, "h2d") == 0) return false;
  return true;
}

static void verdict_copy(pb_report *r) {
  set_reason(r, "h2d", NAN,
             "input-bound (%.1f %% of step time waiting), mostly on the steps' own copies of their batches to the "
             "device (%.2f ms a step; the input pipeline %.2f ms): copy them ahead of the steps (an h2d stage; in "
             "tf.data, prefetch_to_device)",
             r->input_bound_pct, r->h2d_ms, r->input_wait_ms);
}

/* Input-bound only during a transient (transient.c found it): no stage is to blame. */
static void verdict_transient(pb_report *r, double steady_pct) {
  set_reason(r, "device", r->device_rate_per_s,
             "input-bound over the whole window (%.1f %% of step time waiting), but only during a transient: %s; "
             "after it the device waited %.1f %% of step time, so no stage holds it back",
             r->input_bound_pct, r->transient, steady_pct);
}

/* The cores are busy and their limit is at (within the noise: `as_tight`) or below (`below`) the lowest
 * stage capacity. */
static bool cores_busy(const pb_report *r) {
  const pb_model *m = &r->model;
  return m->valid && !isnan(r->cpu_limit_per_s) && !isnan(r->model_capacity_per_s) &&
         r->cores_used >= PB_CORES_BUSY_FRACTION * m->cores;
}

/* The cores bind: their limit is below every stage's capacity by more than the noise, so the stages'
 * CPU per sample, not any one stage, limits the pipeline. */
static bool cores_bind(const pb_report *r) {
  return cores_busy(r) && r->cpu_limit_per_s < (1 - tolerance(r)) * r->model_capacity_per_s;
}

/* The cores are as tight as the named stage (within the noise): a co-limit, said beside it. */
static bool cores_as_tight(const pb_report *r) {
  return cores_busy(r) && r->cpu_limit_per_s <= (1 + tolerance(r)) * r->model_capacity_per_s;
}

static void verdict_cores(pb_report *r) {
  const pb_model *m = &r->model;
  char who[400] = "";
  double total = 0;
  for (int i = 0; i < m->nstages; i++) total += cpu_s_per_sample(r, i);
  for (int i = 0; i < m->nstages && total > 0; i++) {
    double c = cpu_s_per_sample(r, i);
    if (c / total >= 0.05) append(who, sizeof who, "%s%s %.0f %%", who[0] ? ", " : "", m->stages[i].name, c / total * 100);
  }
  set_reason(r, "cores", r->cpu_limit_per_s,
             "input-bound (%.1f %% of step time waiting) and the cores bind: %.2f of %.2f usable cores in use "
             "(%s; %.2f taken by other processes), and their CPU per sample allows %.1f samples/s, no more than "
             "the lowest stage capacity (%s, %.1f): more threads only queue for a core. CPU per sample by stage: %s",
             r->input_bound_pct, r->cores_used, r->cores_usable, r->cores_limited_by[0] ? r->cores_limited_by : "online CPUs",
             r->cores_taken_by_others, r->cpu_limit_per_s, r->model_stage, r->model_capacity_per_s, who);
}

/* The model's rows whose capacity is within the tolerance of the lowest, lowest first. */
static int near_lowest(const pb_report *r, int *rows, int max) {
  const pb_model *m = &r->model;
  int n = 0;
  double limit = r->model_capacity_per_s * (1 + tolerance(r));
  for (int i = 0; i < m->nstages && n < max; i++) {
    double cap = pb_model_stage_capacity(r, i);
    if (!isnan(cap) && cap <= limit) rows[n++] = i;
  }
  for (int i = 1; i < n; i++) /* a few rows: insertion sort by capacity */
    for (int j = i; j > 0 && pb_model_stage_capacity(r, rows[j]) < pb_model_stage_capacity(r, rows[j - 1]); j--) {
      int t = rows[j];
      rows[j] = rows[j - 1];
      rows[j - 1] = t;
    }
  return n;
}

/* Names `primary` and the co-bottlenecks beside it (the rows near the lowest capacity). */
static void name_co_stages(pb_report *r, const char *primary) {
  int rows[PB_MAX_STAGES + 2];
  int n = near_lowest(r, rows, PB_MAX_STAGES + 2);
  r->nco_stages = 0;
  bool primary_near = false;
  for (int i = 0; i < n; i++)
    if (strcmp(r->model.stages[rows[i]].name, primary) == 0) primary_near = true;
  if (!primary_near) return; /* the path names another stage than the model: no pair to speak of */
  for (int i = 0; i < n && r->nco_stages < 3; i++) {
    char name[PB_NAME_LEN]; /* a copy: both live in r */
    memcpy(name, r->model.stages[rows[i]].name, sizeof name);
    if (strcmp(name, primary) != 0) memcpy(r->co_stages[r->nco_stages++], name, sizeof name);
  }
}

static double capacity_of(const pb_report *r, const char *name) {
  int row = pb_model_row(&r->model, name);
  return row >= 0 ? pb_model_stage_capacity(r, row) : NAN;
}

static void append_co_stages(pb_report *r) {
  if (cores_as_tight(r) && r->nco_stages < 3) {
    snprintf(r->co_stages[r->nco_stages++], PB_NAME_LEN, "cores");
    append(r->bottleneck_reason, sizeof r->bottleneck_reason,
           "; the cores are as tight: %.2f of %.2f usable in use (%.2f taken by other processes) allow %.1f samples/s",
           r->cores_used, r->cores_usable, r->cores_taken_by_others, r->cpu_limit_per_s);
  }
  int stages = 0;
  for (int i = 0; i < r->nco_stages; i++) stages += strcmp(r->co_stages[i], "cores") != 0;
  if (!stages) return;
  append(r->bottleneck_reason, sizeof r->bottleneck_reason, "; co-bottleneck%s within the run's noise (%.0f %%) of it: ",
         stages > 1 ? "s" : "", tolerance(r) * 100);
  for (int i = 0, k = 0; i < r->nco_stages; i++)
    if (strcmp(r->co_stages[i], "cores") != 0)
      append(r->bottleneck_reason, sizeof r->bottleneck_reason, "%s%s (%.1f samples/s)", k++ ? ", " : "",
             r->co_stages[i], capacity_of(r, r->co_stages[i]));
  append(r->bottleneck_reason, sizeof r->bottleneck_reason, ": faster alone, either one leaves the other as the limit");
}

static void verdict_path(pb_report *r, const pb_path_segment *p) {
  char extra[400];
  double cap = capacity_of(r, p->stage);
  if (isnan(cap))
    snprintf(extra, sizeof extra, "; the model has no measured service time for it");
  else if (r->model_stage[0] && strcmp(r->model_stage, p->stage) != 0 && cap > r->model_capacity_per_s * (1 + tolerance(r)))
    snprintf(extra, sizeof extra,
             "; the model names %s instead (lowest capacity, %.1f samples/s against %.1f): the device waited on %s "
             "more often (rates that vary over time, or a stage starved by its input)",
             r->model_stage, r->model_capacity_per_s, cap, p->stage);
  else
    snprintf(extra, sizeof extra, "; the model agrees (capacity %.1f samples/s, the lowest within the run's noise)", cap);
  set_reason(r, p->stage, cap,
             "input-bound (%.1f %% of step time waiting): most self time on the critical path, %.1f of %.1f ms "
             "(%.1f %%)%s",
             r->input_bound_pct, p->self_ms, r->critical_path_total_ms,
             r->critical_path_total_ms > 0 ? p->self_ms / r->critical_path_total_ms * 100.0 : NAN, extra);
  name_co_stages(r, p->stage);
  append_co_stages(r);
}

static void verdict_model(pb_report *r, const char *why_not_path) {
  set_reason(r, r->model_stage, r->model_capacity_per_s,
             "input-bound (%.1f %% of step time waiting): lowest capacity (threads / mean service time), %.1f "
             "samples/s; capacity model only (%s)",
             r->input_bound_pct, r->model_capacity_per_s, why_not_path);
  name_co_stages(r, r->model_stage);
  append_co_stages(r);
}

static void append_host_late(pb_report *r) {
  if (!(r->host_late_pct >= PB_HOST_LATE_NOTE_PCT)) return;
  append(r->bottleneck_reason, sizeof r->bottleneck_reason,
         "; besides, the host launched steps late for %.1f %% of step time (%.2f ms a step: the device thread "
         "did not get a core in time on a loaded host), which cost the device time that is not input",
         r->host_late_pct, r->host_late_ms);
}

static void decide(pb_report *r, const pb_record *rec) {
  if (strcmp(r->classification, "not_input_bound") == 0) {
    verdict_device(r);
    return;
  }
  if (copy_bound(r, rec)) {
    verdict_copy(r);
    return;
  }
  /* A fill the config makes (a cache's, a shuffle's) explains itself first; the cores come before a
   * slow start, which saturated cores can look like (the device thread late, the pipeline catching up). */
  double steady_pct = NAN;
  pb_transient_kind t = pb_transient(r, rec, &steady_pct);
  bool transient_only = t != PB_TRANSIENT_NONE && steady_pct < 5.0;
  if (transient_only && t != PB_TRANSIENT_SLOW_START) {
    verdict_transient(r, steady_pct);
    return;
  }
  if (cores_bind(r)) {
    verdict_cores(r);
    return;
  }
  if (transient_only) {
    verdict_transient(r, steady_pct);
    return;
  }
  const pb_path_segment *p = r->critical_path_available ? path_bottleneck(r) : NULL;
  char refused[200] = "";
  if (p && negligible_on_path(r, p)) {
    snprintf(refused, sizeof refused, "the critical path's largest stage self time (%s, %.1f of %.1f ms) is under %.0f %% of it",
             p->stage, p->self_ms, r->critical_path_total_ms, PB_MIN_PATH_SELF_PCT);
    p = NULL;
  }
  if (p) verdict_path(r, p);
  else if (r->model_stage[0])
    verdict_model(r, refused[0] ? refused : r->traced ? "the critical path did not reach a stage" : "no trace: --no-trace");
}

void pb_bottleneck(pb_report *r, const pb_record *rec) {
  r->nco_stages = 0;
  r->transient[0] = '\0';
  capacity_model(r, rec);
  r->bottleneck_required_per_s = r->device_rate_per_s;
  if (!r->classification) return; /* no measured step */
  decide(r, rec);
  if (r->transient[0] && strcmp(r->bottleneck_stage, "device") != 0)
    append(r->bottleneck_reason, sizeof r->bottleneck_reason, "; the window also holds a transient: %s", r->transient);
  append_host_late(r);
}

#define _GNU_SOURCE /* qsort_r */
#include "analysis.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* pb_evref packed into a keymap value: row (8 bits), worker (16 bits), index (32 bits). */
static uint64_t pack(int row, int worker, uint32_t idx) {
  return ((uint64_t)row << 48) | ((uint64_t)worker << 32) | idx;
}

static pb_evref unpack(uint64_t v) {
  return (pb_evref){.row = (int)(v >> 48), .worker = (int)((v >> 32) & 0xffff), .idx = (uint32_t)v};
}

const pb_event *pb_analysis_event(const pb_analysis *a, pb_evref ref) {
  return &a->rec->stages[ref.row].workers[ref.worker].ev[ref.idx];
}

bool pb_analysis_emitter(const pb_analysis *a, int row, uint64_t key, pb_evref *ref) {
  uint64_t v;
  if (row < 0 || !pb_keymap_get(&a->emits[row], key, &v)) return false;
  *ref = unpack(v);
  return true;
}

static bool row_traced(const pb_stage_rec *sr) { return !sr->skipped && sr->workers; }

/* The analysed window: the measured window, from where every ring that overwrote events still has
 * them (rings keep the end of the run). */
static void find_window(pb_analysis *a) {
  const pb_record *rec = a->rec;
  a->t_stop = rec->window_start_ns;
  a->t_end = rec->window_end_ns;
  a->complete = true;
  for (int i = 0; i < rec->nstages; i++) {
    const pb_stage_rec *sr = &rec->stages[i];
    if (!row_traced(sr)) continue;
    for (int k = 0; k < sr->threads; k++) {
      const pb_worker_trace *t = &sr->workers[k];
      a->events += t->n;
      a->dropped += t->dropped;
      if (!t->dropped) continue;
      uint64_t first = t->n ? t->ev[0].t0_ns : UINT64_MAX;
      if (first > rec->window_start_ns) a->complete = false;
      if (first > a->t_stop) a->t_stop = first;
    }
  }
  if (a->t_stop > a->t_end) a->t_stop = a->t_end;
}

static int build_emits(pb_analysis *a, int row) {
  const pb_stage_rec *sr = &a->rec->stages[row];
  size_t n = 0;
  for (int k = 0; k < sr->threads; k++) n += sr->workers[k].n;
  if (pb_keymap_init(&a->emits[row], n)) return -ENOMEM;
  for (int k = 0; k < sr->threads; k++) {
    const pb_worker_trace *t = &sr->workers[k];
    for (uint32_t i = 0; i < t->n; i++)
      if (t->ev[i].kind == PB_EV_PROCESS && (t->ev[i].flags & PB_EVF_EMITTED))
        pb_keymap_put(&a->emits[row], t->ev[i].out, pack(row, k, i));
  }
  return 0;
}

/* Which row handed `key` on last, no later than `t`?  (PB_NO_ROW when none did.) */
static int latest_emitter(const pb_analysis *a, int self, uint64_t key, uint64_t t) {
  int best = PB_NO_ROW;
  uint64_t best_t = 0;
  for (int u = 0; u < a->rec->nstages; u++) {
    pb_evref ref;
    if (u == self || !pb_analysis_emitter(a, u, key, &ref)) continue;
    uint64_t te = pb_analysis_event(a, ref)->t1_ns;
    if (te <= t && (best == PB_NO_ROW || te >= best_t)) {
      best = u;
      best_t = te;
    }
  }
  return best;
}

/* A row's parent is the row that most of its inputs last came from: the graph comes from lineage.  Every
 * call that started on an input votes.  (A sample of the events taken with a stride aliased with a
 * stage's own pattern: a 1-thread stage whose events repeat with period 4, sampled every 2nd event, never
 * had a call start looked at, and every stage after it lost its parent on runs of 1,000+ steps.  All of
 * them cost one hash lookup per stage each: ~0.1 s for a million events.) */
static int find_parent(const pb_analysis *a, int row) {
  const pb_stage_rec *sr = &a->rec->stages[row];
  uint64_t votes[PB_MAX_STAGES + 1] = {0};
  for (int k = 0; k < sr->threads; k++) {
    const pb_worker_trace *t = &sr->workers[k];
    for (uint32_t i = 0; i < t->n; i++) {
      const pb_event *e = &t->ev[i];
      if (e->kind != PB_EV_PROCESS || !(e->flags & PB_EVF_CALL_START) || e->key == PB_NO_KEY) continue;
      int u = latest_emitter(a, row, e->key, e->t0_ns);
      if (u >= 0) votes[u]++;
    }
  }
  int best = PB_NO_ROW;
  for (int u = 0; u < a->rec->nstages; u++)
    if (votes[u] > 0 && (best == PB_NO_ROW || votes[u] > votes[best])) best = u;
  return best;
}

static int find_device_parent(const pb_analysis *a) {
  int votes[PB_MAX_STAGES + 1] = {0};
  const pb_record *rec = a->rec;
  for (size_t i = 0; i < rec->nsteps; i++) {
    int u = latest_emitter(a, PB_NO_ROW, rec->steps[i].key, rec->steps[i].compute_start_ns);
    if (u >= 0) votes[u]++;
  }
  int best = PB_NO_ROW;
  for (int u = 0; u < rec->nstages; u++)
    if (votes[u] > 0 && (best == PB_NO_ROW || votes[u] > votes[best])) best = u;
  return best;
}

static int cmp_step_end(const void *x, const void *y, void *steps) {
  const pb_step *st = steps;
  size_t i = *(const size_t *)x, j = *(const size_t *)y;
  uint64_t a = pb_step_end_ns(&st[i]), b = pb_step_end_ns(&st[j]);
  if (a != b) return (a > b) - (a < b);
  return (i < j) - (i > j); /* ties: the lowest index last, where the search lands (as the old scan chose) */
}

/* Steps by end time: with several devices (and exchanges) completion order is not quite end order, and
 * the critical path looks up "the step that ended last before t" once per backpressure hop, which must
 * not cost a pass over every step of a long run. */
static int sort_steps_by_end(pb_analysis *a) {
  const pb_record *rec = a->rec;
  a->steps_by_end = malloc((rec->nsteps ? rec->nsteps : 1) * sizeof *a->steps_by_end);
  if (!a->steps_by_end) return -ENOMEM;
  for (size_t i = 0; i < rec->nsteps; i++) a->steps_by_end[i] = i;
  qsort_r(a->steps_by_end, rec->nsteps, sizeof *a->steps_by_end, cmp_step_end, (void *)rec->steps); /* glibc */
  return 0;
}

/* Steps are recorded in completion order; per device that is also step order. */
static int order_steps(pb_analysis *a) {
  const pb_record *rec = a->rec;
  a->prev_step = malloc((rec->nsteps ? rec->nsteps : 1) * sizeof *a->prev_step);
  if (!a->prev_step) return -ENOMEM;
  long last[PB_MAX_DEVICES];
  for (int d = 0; d < PB_MAX_DEVICES; d++) last[d] = -1;
  for (size_t i = 0; i < rec->nsteps; i++) {
    int d = rec->steps[i].device < PB_MAX_DEVICES ? rec->steps[i].device : 0;
    a->prev_step[i] = last[d];
    last[d] = (long)i;
  }
  return sort_steps_by_end(a);
}

int pb_analysis_init(pb_analysis *a, const pb_record *rec) {
  memset(a, 0, sizeof *a);
  a->rec = rec;
  a->device_parent = PB_NO_ROW;
  for (int i = 0; i <= PB_MAX_STAGES; i++) a->parent[i] = PB_NO_ROW;
  if (order_steps(a)) return -ENOMEM;
  a->traced = rec->traced;
  if (!a->traced) return 0;
  find_window(a);
  for (int i = 0; i < rec->nstages; i++)
    if (row_traced(&rec->stages[i]) && build_emits(a, i)) return -ENOMEM;
  for (int i = 0; i < rec->nstages; i++)
    if (row_traced(&rec->stages[i]) && !rec->stages[i].is_source) a->parent[i] = find_parent(a, i);
  a->device_parent = find_device_parent(a);
  return 0;
}

void pb_analysis_free(pb_analysis *a) {
  for (int i = 0; i <= PB_MAX_STAGES; i++) pb_keymap_free(&a->emits[i]);
  free(a->prev_step);
  a->prev_step = NULL;
  free(a->steps_by_end);
  a->steps_by_end = NULL;
}

double pb_stage_cpu_share(const pb_stage_report *s) {
  double delay = s->cpu_delay_fraction;
  if (isnan(delay) || delay >= 1) return s->cpu_fraction; /* unknown: busy time includes any delay */
  double f = s->cpu_fraction / (1 - delay);
  return f > 1 ? 1 : f;
}

bool pb_stage_cpu_bound(const pb_stage_report *s) {
  return !isnan(s->cpu_fraction) && pb_stage_cpu_share(s) >= PB_CPU_BOUND_FRACTION;
}

/* A stage upstream of a cache handles the first epoch only, while the pipeline delivers every epoch:
 * its capacity bounds the pipeline at capacity / (its samples / the delivered ones).  The model and the
 * recommendations compare stages with each other and with the device in the pipeline's samples. */
void pb_pipeline_capacities(pb_report *r) {
  double delivered = r->measured_s > 0 && isfinite(r->samples_per_s) ? r->samples_per_s * r->measured_s : 0;
  bool cache_after = false; /* only upstream of a cache; elsewhere counts differ by the window's edges */
  for (int i = r->nstages - 1; i >= 0; i--) {
    pb_stage_report *s = &r->stages[i];
    double share = cache_after && s->samples > 0 && delivered > (double)s->samples ? (double)s->samples / delivered : 1;
    if (s->type && strcmp(s->type, "cache") == 0) cache_after = true;
    s->pipeline_capacity_per_s = s->capacity_per_s / share;
  }
}

double pb_report_cores_used(const pb_report *r) {
  double cores = 0;
  for (int i = 0; i < r->nstages; i++) {
    const pb_stage_report *sr = &r->stages[i];
    if (!sr->skipped && !isnan(sr->utilization) && !isnan(sr->cpu_fraction))
      cores += sr->utilization * sr->threads * sr->cpu_fraction;
  }
  return cores;
}

int pb_report_stage_index(const pb_report *r, const char *name) {
  for (int i = 0; i < r->nstages; i++)
    if (strcmp(r->stages[i].name, name) == 0) return i;
  return -1;
}

void pb_analysis_run(pb_report *r, const pb_record *rec) {
  pb_analysis *a = calloc(1, sizeof *a);
  bool ok = a && pb_analysis_init(a, rec) == 0;
  r->traced = rec->traced;
  if (ok && a->traced) {
    r->trace_events = a->events;
    r->trace_events_dropped = a->dropped;
    r->trace_complete = a->complete;
    r->trace_window_ms = a->t_end > a->t_stop ? (double)(a->t_end - a->t_stop) / 1e6 : 0;
    pb_graph_fill(r, a);
    pb_critical_path(r, a);
  }
  if (a) pb_analysis_free(a);
  free(a);
  pb_model_fit(&r->model, rec, r);
  pb_bottleneck(r, rec);
  pb_recommend(r, rec);
}

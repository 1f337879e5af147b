/* tune's search arithmetic (tune_search.h). */
#include "tune_search.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

int pb_tune_knob_min(const pb_tune_knob *k) { return k->nvalues ? k->values[0] : 1; }
int pb_tune_knob_max(const pb_tune_knob *k) { return k->nvalues ? k->values[k->nvalues - 1] : PB_TUNE_RANGE_MAX; }

int pb_tune_snap_up(const pb_tune_knob *k, double want) {
  if (!k->nvalues) return want < 1 ? 1 : want > PB_TUNE_RANGE_MAX ? PB_TUNE_RANGE_MAX : (int)ceil(want - 1e-9);
  for (int i = 0; i < k->nvalues; i++)
    if (k->values[i] >= want - 1e-9) return k->values[i];
  return pb_tune_knob_max(k);
}

int pb_tune_snap_down(const pb_tune_knob *k, double want) {
  if (!k->nvalues) return want < 1 ? 1 : want > PB_TUNE_RANGE_MAX ? PB_TUNE_RANGE_MAX : (int)floor(want + 1e-9);
  for (int i = k->nvalues - 1; i >= 0; i--)
    if (k->values[i] <= want + 1e-9) return k->values[i];
  return pb_tune_knob_min(k);
}

int pb_tune_step_up(const pb_tune_knob *k, int cur) {
  return cur >= pb_tune_knob_max(k) ? cur : pb_tune_snap_up(k, cur + 1);
}

int pb_tune_step_down(const pb_tune_knob *k, int cur) {
  return cur <= pb_tune_knob_min(k) ? cur : pb_tune_snap_down(k, cur - 1);
}

static int cmp_int(const void *a, const void *b) {
  return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

int pb_tune_list_values(pb_tune_knob *k, const char *path, const char (*texts)[64], int n, pb_err *err) {
  for (int i = 0; i < n; i++) {
    char *end;
    long v = strtol(texts[i], &end, 10);
    if (*end || v < 1 || v > PB_MAX_THREADS)
      return pb_err_set(err, "tune: --set %s: \"%s\" is not a count (expected integers from 1 to %d)", path, texts[i],
                        PB_MAX_THREADS);
    k->values[k->nvalues++] = (int)v;
  }
  qsort(k->values, (size_t)k->nvalues, sizeof k->values[0], cmp_int);
  int kept = 0;
  for (int i = 0; i < k->nvalues; i++)
    if (!kept || k->values[i] != k->values[kept - 1]) k->values[kept++] = k->values[i];
  k->nvalues = kept;
  return 0;
}

int pb_tune_base_value(const pb_tune_knob *k, int v) {
  return v < pb_tune_knob_min(k) ? pb_tune_knob_min(k) : pb_tune_snap_down(k, v);
}

/* A thread per core keeps the cores busy, the rest cover threads blocked on their queues; beyond that,
 * threads only add switching and memory.  Stages that wait without CPU are not counted: threads are right
 * for them. */
bool pb_tune_within_cores(const pb_tune_knob *knobs, int nknobs, const pb_tune_rates *r, const pb_tune_point *p,
                          int ncpu) {
  int threads = 0, stages = 0;
  for (int k = 0; k < nknobs; k++)
    if (!knobs[k].depth && r->valid[k] && r->cpu_bound[k]) threads += p->v[k], stages++;
  return threads <= 2 * ncpu + stages;
}

double pb_tune_stage_cap(const pb_tune_rates *r, int k, int threads) {
  double cap = r->thread_s[k] > 0 ? threads / r->thread_s[k] : INFINITY;
  return fmin(cap, r->bw_cap[k]);
}

/* With lists like 1,2,4,8,16 the headroom alone would double the threads. */
int pb_tune_threads_needed(const pb_tune_knob *k, double thread_s, double rate) {
  double need = fmax(1, rate * thread_s);
  int with_headroom = pb_tune_snap_up(k, need * PB_TUNE_HEADROOM), without = pb_tune_snap_up(k, need);
  return k->nvalues && without < with_headroom && without >= need - 1e-9 ? without : with_headroom;
}

/* The CPU-bound threads knob with the most slack at p that can still give a thread, or -1. */
static int most_slack(const pb_tune_knob *knobs, int nknobs, const pb_tune_rates *r, double target,
                      const pb_tune_point *p) {
  int best = -1;
  double best_slack = 0;
  for (int k = 0; k < nknobs; k++) {
    if (knobs[k].depth || !r->valid[k] || !r->cpu_bound[k] || pb_tune_step_down(&knobs[k], p->v[k]) == p->v[k])
      continue;
    double slack = pb_tune_stage_cap(r, k, p->v[k]) / target;
    if (best < 0 || slack > best_slack) best = k, best_slack = slack;
  }
  return best;
}

void pb_tune_allocate(const pb_tune_knob *knobs, int nknobs, const pb_tune_rates *r, int ncpu, double target,
                      const pb_tune_point *from, pb_tune_point *out) {
  *out = *from;
  for (int k = 0; k < nknobs; k++)
    if (!knobs[k].depth && r->valid[k]) out->v[k] = pb_tune_threads_needed(&knobs[k], r->thread_s[k], target);
  for (int guard = 0; guard < 4096 && !pb_tune_within_cores(knobs, nknobs, r, out, ncpu); guard++) {
    int k = most_slack(knobs, nknobs, r, target, out);
    if (k < 0) break;
    out->v[k] = pb_tune_step_down(&knobs[k], out->v[k]);
  }
}

int pb_tune_pick(const pb_tune_candidate *c, int n, bool exploring) {
  int best = -1;
  for (int i = 0; i < n; i++)
    if ((exploring || !c[i].explore) && !isnan(c[i].predicted) && (best < 0 || c[i].predicted > c[best].predicted))
      best = i;
  return best;
}

int pb_tune_max_trials(int given, bool listed, long space_size, int fallback, int limit) {
  int n = given > 0 ? given : listed ? (int)PB_MAX(2, space_size / 4) : fallback;
  return n > limit ? limit : n;
}

/* The critical path: which chain of work the device's last measured step waited on, back to the start
 * of the analysed window.
 *
 * The events form a dependency graph with four kinds of edges (ARCHITECTURE.md):
 *   data          a call starts on element k after the upstream stage handed k on;
 *                 a device step starts after its batch was handed to the device;
 *   worker order  a worker's segment starts after its previous segment ended;
 *   backpressure  a worker blocked on its output resumes when downstream made room: the downstream
 *                 event that ended last before it resumed;
 *   device order  a step starts after the previous step on the same device ended.
 * Walking backwards from the end of the last measured step, at each event we follow the predecessor
 * that finished last (the one that actually held this event back), and charge the time between to the
 * stage we are in: the event's own duration as its self time on the path, the gap before it (hand-off,
 * wake-up) as path time that is not self time.  The walk ends at the start of the analysed window. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "analysis.h"

typedef struct walk {
  const pb_analysis *a;
  uint64_t t;                    /* cursor: everything after it is attributed */
  bool at_device;
  size_t step;                   /* at_device */
  pb_evref ev;                   /* !at_device */
  uint64_t path_ns[PB_MAX_STAGES + 1], self_ns[PB_MAX_STAGES + 1];
  uint64_t device_ns, device_self_ns;
  uint64_t hops;
  const char *stop;
} walk;

/* Charges [from, w->t) (clipped to the window) to a row or the device, then moves the cursor to `from`. */
static void charge(walk *w, int row, uint64_t from, bool self) {
  uint64_t lo = from > w->a->t_stop ? from : w->a->t_stop;
  uint64_t ns = w->t > lo ? w->t - lo : 0;
  if (row == PB_DEVICE_ROW) {
    w->device_ns += ns;
    if (self) w->device_self_ns += ns;
  } else {
    w->path_ns[row] += ns;
    if (self) w->self_ns[row] += ns;
  }
  if (from < w->t) w->t = from;
}

static const pb_worker_trace *worker_of(const walk *w, pb_evref r) {
  return &w->a->rec->stages[r.row].workers[r.worker];
}

/* The worker's previous segment that was not a wait for input (a wait means it was starved: the data
 * edge explains that time). */
static bool prev_on_worker(const walk *w, pb_evref r, pb_evref *out) {
  const pb_worker_trace *t = worker_of(w, r);
  for (uint32_t i = r.idx; i-- > 0;) {
    if (t->ev[i].kind == PB_EV_WAIT) continue;
    *out = (pb_evref){.row = r.row, .worker = r.worker, .idx = i};
    return true;
  }
  return false;
}

/* In row `row`, the event (any worker; not a wait for input) that ended last in [from, t]. */
static bool latest_event_between(const walk *w, int row, uint64_t from, uint64_t t, pb_evref *out, uint64_t *end) {
  const pb_stage_rec *sr = &w->a->rec->stages[row];
  bool found = false;
  for (int k = 0; sr->workers && k < sr->threads; k++) {
    const pb_worker_trace *tr = &sr->workers[k];
    uint32_t lo = 0, hi = tr->n; /* first event with t1 > t (events are in time order) */
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (tr->ev[mid].t1_ns <= t) lo = mid + 1;
      else hi = mid;
    }
    for (uint32_t i = lo; i-- > 0;) {
      if (tr->ev[i].kind == PB_EV_WAIT) continue;
      if (tr->ev[i].t1_ns < from) break;
      if (!found || tr->ev[i].t1_ns > *end) {
        *out = (pb_evref){.row = row, .worker = k, .idx = i};
        *end = tr->ev[i].t1_ns;
        found = true;
      }
      break;
    }
  }
  return found;
}

/* The device step that ended last in [from, t]: a binary search over the steps sorted by end time. */
static bool latest_step_between(const walk *w, uint64_t from, uint64_t t, size_t *out, uint64_t *end) {
  const pb_record *rec = w->a->rec;
  const size_t *by_end = w->a->steps_by_end;
  size_t lo = 0, hi = rec->nsteps; /* first step (in end order) that ended after t */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pb_step_end_ns(&rec->steps[by_end[mid]]) <= t) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return false;
  uint64_t e = pb_step_end_ns(&rec->steps[by_end[lo - 1]]);
  if (e < from) return false;
  *out = by_end[lo - 1];
  *end = e;
  return true;
}

/* Rows downstream of `row` in the rebuilt graph (children, grandchildren, ...). */
static bool is_downstream(const pb_analysis *a, int row, int of) {
  for (int p = a->parent[row], guard = 0; p >= 0 && guard <= PB_MAX_STAGES; p = a->parent[p], guard++)
    if (p == of) return true;
  return false;
}

/* A worker of `row` blocked on its output until t: who made room?  A full queue empties when its
 * consumer takes the next element, right after the consumer's previous event ends; a pool refills when
 * a stage downstream (or the device) releases a buffer.  Either way: the downstream event that ended
 * last during the block.  (When it is itself a block, the walk resolves that one next.) */
static bool resolve_backpressure(walk *w, int row, const pb_event *blocked) {
  const pb_analysis *a = w->a;
  /* Never past the cursor: a hand-off is stamped after its push returns, so the consumer can have taken
   * the element (and the walk come from there) before the producer's block ends.  Looking up to the
   * block's end would find that consumer event again, or a later one, and the walk would go round. */
  /* And strictly before the cursor when it is what limits the search: an event (or a zero-length device
   * step) that ended exactly at the cursor can be the one the walk came from, through an edge that did not
   * move the cursor (a hand-off stamped after the device took the batch); finding it again went round
   * until the hop limit. */
  uint64_t t = blocked->t1_ns < w->t ? blocked->t1_ns : w->t - 1, from = blocked->t0_ns, best_end = 0;
  bool found = false, device = false;
  pb_evref best = {0};
  bool pool = blocked->flags & PB_EVF_BLOCKED_POOL;
  for (int c = 0; c < a->rec->nstages; c++) {
    bool consumer = pool ? is_downstream(a, c, row) : a->parent[c] == row;
    pb_evref r;
    uint64_t end = 0;
    if (!consumer || !latest_event_between(w, c, from, t, &r, &end)) continue;
    if (!found || end > best_end) best = r, best_end = end, found = true;
  }
  size_t step;
  uint64_t step_end = 0;
  bool device_consumes = a->device_parent == row || (pool && a->device_parent >= 0 && is_downstream(a, a->device_parent, row));
  if (device_consumes && latest_step_between(w, from, t, &step, &step_end) && (!found || step_end > best_end)) {
    device = true;
    best_end = step_end;
    found = true;
  }
  if (!found) return false;
  charge(w, row, best_end, false); /* the wake-up after room was made */
  if (device) {
    w->at_device = true;
    w->step = step;
  } else {
    w->at_device = false;
    w->ev = best;
  }
  return true;
}

/* When element `key`, handed on by event `ref`, became available downstream: the first HANDOFF on the
 * same worker after it (outputs go out in chunks).  *before = the worker's event just before that
 * hand-off (what the worker was doing while the element waited to go out).  Without one (a cancelled
 * run, an old trace), the emitting segment itself. */
#define PB_HANDOFF_SCAN 8192
static uint64_t handoff_time(const walk *w, pb_evref ref, pb_evref *before) {
  const pb_worker_trace *t = worker_of(w, ref);
  for (uint32_t i = ref.idx + 1; i < t->n && i - ref.idx < PB_HANDOFF_SCAN; i++)
    if (t->ev[i].kind == PB_EV_HANDOFF) {
      *before = (pb_evref){.row = ref.row, .worker = ref.worker, .idx = i - 1};
      return t->ev[i].t1_ns;
    }
  *before = ref;
  return t->ev[ref.idx].t1_ns;
}

/* The walk reached a worker's first event: nothing of it came before.  In a complete trace the time left
 * back to the window's start (with warmup_steps 0 the window opens as the run starts, before the threads
 * do) is this stage starting up, on the path but not its work; with events lost it is unknown. */
static bool reached_first_event(walk *w, int row) {
  if (w->a->complete) charge(w, row, w->a->t_stop, false);
  w->stop = w->a->complete ? "window start" : "trace window start";
  return false;
}

static bool move_to_previous(walk *w, pb_evref cur) {
  if (cur.idx == 0) return reached_first_event(w, cur.row);
  w->ev.idx = cur.idx - 1;
  return true;
}

/* The walk landed on an event that is not work: a hand-off (zero length), a wait, a block. */
static bool step_not_work(walk *w, pb_evref cur, const pb_event *e) {
  if (e->kind == PB_EV_BLOCKED) {
    if (e->t1_ns < w->t) charge(w, cur.row, e->t1_ns, false);
    if (resolve_backpressure(w, cur.row, e)) return true;
  }
  charge(w, cur.row, e->t0_ns, false); /* nothing to follow: the wait itself */
  return move_to_previous(w, cur);
}

/* One hop back from a worker's event. */
static bool step_worker(walk *w) {
  const pb_analysis *a = w->a;
  pb_evref cur = w->ev;
  const pb_event *e = pb_analysis_event(a, cur);
  if (e->kind != PB_EV_PROCESS) return step_not_work(w, cur, e);
  charge(w, cur.row, e->t0_ns, true);
  pb_evref prev, data, data_before;
  bool has_prev = prev_on_worker(w, cur, &prev);
  bool has_data = (e->flags & PB_EVF_CALL_START) && e->key != PB_NO_KEY &&
                  pb_analysis_emitter(a, a->parent[cur.row], e->key, &data);
  uint64_t t_prev = has_prev ? pb_analysis_event(a, prev)->t1_ns : 0;
  uint64_t t_data = has_data ? handoff_time(w, data, &data_before) : 0;
  if (!has_prev && !has_data) return reached_first_event(w, cur.row);
  if (has_data && (!has_prev || t_data > t_prev)) { /* it waited for its input */
    charge(w, cur.row, t_data, false);
    w->ev = data_before;
    return true;
  }
  charge(w, cur.row, t_prev, false);
  w->ev = prev;
  return true;
}

/* One hop back from a device step: its compute is device time; before it, the later of the previous
 * step on this device and the hand-off of its batch. */
static bool step_device(walk *w) {
  const pb_analysis *a = w->a;
  const pb_step *st = &a->rec->steps[w->step];
  charge(w, PB_DEVICE_ROW, st->compute_start_ns, true);
  long prev = a->prev_step[w->step];
  pb_evref data, data_before;
  bool has_data = pb_analysis_emitter(a, a->device_parent, st->key, &data);
  uint64_t t_prev = prev >= 0 ? pb_step_end_ns(&a->rec->steps[prev]) : 0;
  uint64_t t_data = has_data ? handoff_time(w, data, &data_before) : 0;
  if (prev < 0 && !has_data) {
    w->stop = "first step";
    return false;
  }
  if (has_data && (prev < 0 || t_data > t_prev)) { /* the device waited for this batch */
    charge(w, PB_DEVICE_ROW, t_data, false);   /* its own copy (without an h2d stage) and the hand-off */
    w->at_device = false;
    w->ev = data_before;
    return true;
  }
  charge(w, PB_DEVICE_ROW, t_prev, false);
  w->step = (size_t)prev;
  return true;
}

static bool last_measured_step(const pb_record *rec, size_t *out) {
  bool found = false;
  for (size_t i = 0; i < rec->nsteps; i++)
    if (rec->steps[i].measured && (!found || pb_step_end_ns(&rec->steps[i]) > pb_step_end_ns(&rec->steps[*out]))) {
      *out = i;
      found = true;
    }
  return found;
}

static void fill_report(pb_report *r, const walk *w) {
  const pb_record *rec = w->a->rec;
  uint64_t total = w->device_ns;
  for (int i = 0; i < rec->nstages; i++) total += w->path_ns[i];
  r->critical_path_available = true;
  r->critical_path_total_ms = (double)total / 1e6;
  r->critical_path_hops = w->hops;
  const char *end = w->a->complete ? "window start" : "trace window start";
  snprintf(r->critical_path_stop, sizeof r->critical_path_stop, "%s", w->stop ? w->stop : end);
  r->npath_segments = 0;
  for (int i = 0; i < rec->nstages && i < r->nstages; i++) {
    pb_stage_report *sr = &r->stages[i];
    if (rec->stages[i].skipped) continue;
    sr->critical_path_ms = (double)w->path_ns[i] / 1e6;
    sr->critical_path_self_ms = (double)w->self_ns[i] / 1e6;
    sr->critical_path_pct = total ? (double)w->path_ns[i] / (double)total * 100 : NAN;
    if (!w->path_ns[i]) continue;
    pb_path_segment *p = &r->path_segments[r->npath_segments++];
    snprintf(p->stage, sizeof p->stage, "%s", sr->name);
    p->ms = sr->critical_path_ms;
    p->self_ms = sr->critical_path_self_ms;
  }
  pb_path_segment *d = &r->path_segments[r->npath_segments++];
  snprintf(d->stage, sizeof d->stage, "device");
  d->ms = (double)w->device_ns / 1e6;
  d->self_ms = (double)w->device_self_ns / 1e6;
}

void pb_critical_path(pb_report *r, const pb_analysis *a) {
  walk *w = calloc(1, sizeof *w);
  if (!w) return;
  w->a = a;
  if (!last_measured_step(a->rec, &w->step)) {
    free(w);
    return;
  }
  w->at_device = true;
  w->t = pb_step_end_ns(&a->rec->steps[w->step]); /* the device's time: compute and gradient exchange */
  if (w->t > a->t_end) w->t = a->t_end;
  /* Every hop moves to an earlier event; the bound only guards against a malformed (loaded) trace. */
  uint64_t max_hops = 4 * (a->events + a->rec->nsteps) + 16;
  bool debug = getenv("PB_DEBUG_PATH") != NULL;
  while (w->t > a->t_stop) {
    if (++w->hops > max_hops) {
      w->stop = "hop limit (malformed trace)";
      break;
    }
    if (debug) { /* PB_DEBUG_PATH=1: every hop on stderr, ms after the analysed window's start */
      double t0 = (double)a->t_stop;
      if (w->at_device) fprintf(stderr, "t=%.3f device step %zu\n", ((double)w->t - t0) / 1e6, w->step);
      else {
        const pb_event *e = pb_analysis_event(a, w->ev);
        fprintf(stderr, "t=%.3f row %d w%d #%u kind %d f%x [%.3f,%.3f] key %llx out %llx\n", ((double)w->t - t0) / 1e6,
                w->ev.row, w->ev.worker, w->ev.idx, e->kind, e->flags, ((double)e->t0_ns - t0) / 1e6,
                ((double)e->t1_ns - t0) / 1e6, (unsigned long long)e->key, (unsigned long long)e->out);
      }
    }
    if (!(w->at_device ? step_device(w) : step_worker(w))) break;
  }
  fill_report(r, w);
  free(w);
}

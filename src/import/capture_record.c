/* The record of a tf.data job from its TensorFlow Profiler capture (capture_record.h). */
#include "capture_record.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_text.h"
#include "tfdata_verdict.h"
#include "twin.h"

#define BASE_NS 1000000000ull /* the record's clock: the capture's first event at 1 s (0 would read as "none") */
#define NONE UINT64_MAX       /* an element not handed on (or not taken) */

/* One worker's events as they are made. */
typedef struct ev_vec {
  pb_event *v;
  uint32_t n, cap;
  uint64_t free_ns; /* when its last event ends */
} ev_vec;

/* What a row took and handed on, per element: the sample's index before the batch, the batch's after it. */
typedef struct row_flow {
  uint64_t *took_ns; /* when it took element k of its input (NONE: not taken) */
  size_t ntook;
  uint64_t *out_ns; /* when it handed on its element k */
  size_t nout;
  bool out_batches; /* its elements are batches */
  int64_t *element; /* a row of functions: the tf.data element each run made part of (pb_tf_work.element) */
} row_flow;

typedef struct builder {
  const pb_tfdata *t;
  const pb_twin_notes *origin;
  pb_record *rec;
  int64_t origin_ps;
  int64_t batch_size;
  uint64_t sample_bytes;
  row_flow flow[PB_MAX_STAGES + 1];
  uint64_t *device_took_ns;        /* when a step took the last row's element k */
  uint64_t before_capture_samples; /* samples of batches in the capture that were read before it began */
  ev_vec *workers[PB_MAX_STAGES + 1];
} builder;

static uint64_t ns_of(const builder *b, int64_t ps) {
  return BASE_NS + ((uint64_t)ps - (uint64_t)b->origin_ps) / 1000u; /* ps >= origin: the difference fits a uint64 */
}

static int ev_push(ev_vec *w, uint64_t t0, uint64_t t1, uint64_t key, uint64_t out, uint8_t flags, uint64_t bytes) {
  if (w->n == w->cap) {
    uint32_t cap = w->cap ? 2 * w->cap : 256;
    pb_event *p = realloc(w->v, cap * sizeof *p);
    if (!p) return -ENOMEM;
    w->v = p, w->cap = cap;
  }
  if (t0 < w->free_ns) t0 = w->free_ns; /* a worker's events never overlap */
  if (t1 < t0) t1 = t0;
  w->v[w->n++] = (pb_event){.t0_ns = t0,
                            .t1_ns = t1,
                            .key = key,
                            .out = out,
                            .bytes = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes,
                            .kind = PB_EV_PROCESS,
                            .flags = flags};
  w->free_ns = t1;
  return 0;
}

/* Room for n elements in a flow array, every one NONE. */
static uint64_t *none_array(size_t n) {
  uint64_t *v = malloc((n ? n : 1) * sizeof *v);
  for (size_t k = 0; v && k < n; k++) v[k] = NONE;
  return v;
}

/* The worker of `w[threads]` free at t0, else the one free first (its event then starts late). */
static ev_vec *slot_at(ev_vec *w, int threads, uint64_t t0) {
  ev_vec *best = &w[0];
  for (int k = 0; k < threads; k++) {
    if (w[k].free_ns <= t0) return &w[k];
    if (w[k].free_ns < best->free_ns) best = &w[k];
  }
  return best;
}

/* ---------- the rows ---------- */

/* Is iterator i the same part of the pipeline as iterator `of`: the same kind, below parents that are (an
 * interleave's input pipelines are made anew for each of its inputs, each with datasets of new names: their maps
 * are one stage of the pipeline, whose elements the interleave takes in turn)? */
static bool same_part(const pb_tfdata *t, int i, int of) {
  for (int depth = 0; i >= 0 && of >= 0 && depth < PB_TF_MAX_ITERATORS; depth++) {
    if (i == of) return true;
    if (strcmp(t->iterators[i].kind, t->iterators[of].kind) != 0) return false;
    i = t->iterators[i].parent, of = t->iterators[of].parent;
  }
  return false;
}

typedef struct run_element {
  int64_t element;
  size_t run;
} run_element;

static int cmp_run_element(const void *x, const void *y) {
  const run_element *a = x, *c = y;
  if (a->element != c->element) return (a->element > c->element) - (a->element < c->element);
  return (a->run > c->run) - (a->run < c->run);
}

/* Where each of the row's n function runs handed its element: rank[j], its place among the elements the
 * iterator's consumer took, in the order it took them (`<Kind>Consume` events: with deterministic=False a
 * parallel map hands on whichever element is done first), then the runs whose elements were not taken in the
 * capture, in start order.  false (and rank untouched) when the capture cannot say: no element ids, a batch's
 * id shared by its runs (map-and-batch: its batches are joined by id, assign_batches), or no Consume event of
 * the runs' elements; the lineage then stays by start order.  -ENOMEM as a negative return. */
static int consume_ranks(const builder *b, const bool *part, const int64_t *element, size_t n, size_t *rank) {
  if (n == 0) return 0;
  run_element *by_id = malloc(n * sizeof *by_id);
  bool *ranked = calloc(n, sizeof *ranked);
  if (!by_id || !ranked) return free(by_id), free(ranked), -ENOMEM;
  bool usable = true;
  for (size_t j = 0; j < n; j++) {
    by_id[j] = (run_element){.element = element[j], .run = j};
    usable = usable && element[j] != 0;
  }
  qsort(by_id, n, sizeof *by_id, cmp_run_element);
  for (size_t j = 1; j < n && usable; j++) usable = by_id[j].element != by_id[j - 1].element;
  size_t next = 0;
  for (size_t k = 0; k < b->t->nconsumes && usable; k++) {
    const pb_tf_consume *c = &b->t->consumes[k];
    if (!part[c->iterator]) continue;
    size_t lo = 0, hi = n; /* the first entry of the element's id */
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (by_id[mid].element < c->element)
        lo = mid + 1;
      else
        hi = mid;
    }
    const run_element *hit = lo < n && by_id[lo].element == c->element ? &by_id[lo] : NULL;
    if (hit && !ranked[hit->run]) ranked[hit->run] = true, rank[hit->run] = next++;
  }
  usable = usable && next > 0;
  for (size_t j = 0; j < n && usable; j++)
    if (!ranked[j]) rank[j] = next++;
  free(by_id);
  free(ranked);
  return usable ? 1 : 0;
}

/* A row of an iterator's function runs or own time per call: one call per element, in start order; a function
 * run hands its element on in the order the consumer took it, where the capture says (consume_ranks). */
static int sample_row(builder *b, int row, const pb_twin_stage *o) {
  pb_stage_rec *sr = &b->rec->stages[row];
  const row_flow *up = &b->flow[row - 1];
  row_flow *f = &b->flow[row];
  int kind = o->role == PB_TWIN_FUNCTIONS ? PB_TF_FUNCTION : PB_TF_CALL;
  bool part[PB_TF_MAX_ITERATORS];
  for (int i = 0; i < b->t->niterators; i++) part[i] = same_part(b->t, i, o->iterator);
  size_t n = 0;
  for (size_t k = 0; k < b->t->nwork; k++) n += part[b->t->work[k].iterator] && b->t->work[k].kind == kind;
  if (row > 1 && n > up->nout) n = up->nout; /* no more elements than its input handed on */
  f->took_ns = none_array(n), f->out_ns = none_array(n), f->ntook = f->nout = n;
  f->element = calloc(n ? n : 1, sizeof *f->element);
  size_t *out = malloc((n ? n : 1) * sizeof *out);
  if (!f->took_ns || !f->out_ns || !f->element || !out) return free(out), -ENOMEM;
  size_t j = 0;
  for (size_t k = 0; k < b->t->nwork && j < n; k++) /* the runs' elements, then where each went */
    if (part[b->t->work[k].iterator] && b->t->work[k].kind == kind) out[j] = j, f->element[j++] = b->t->work[k].element;
  int rc = kind == PB_TF_FUNCTION ? consume_ranks(b, part, f->element, n, out) : 0;
  if (rc < 0) return free(out), rc;
  j = 0;
  for (size_t k = 0; k < b->t->nwork && j < n; k++) {
    const pb_tf_work *w = &b->t->work[k];
    if (!part[w->iterator] || w->kind != kind) continue;
    uint64_t t1 = ns_of(b, w->end_ps),
             t0 = kind == PB_TF_FUNCTION ? ns_of(b, w->start_ps) : t1 - (uint64_t)w->own_ps / 1000u;
    ev_vec *slot = slot_at(b->workers[row], sr->threads, t0);
    rc = ev_push(slot, t0, t1, j, out[j], PB_EVF_CALL_START | PB_EVF_EMITTED, b->sample_bytes);
    if (rc < 0) break;
    f->took_ns[j] = slot->v[slot->n - 1].t0_ns, f->out_ns[out[j]] = slot->free_ns, f->element[out[j]] = w->element;
    sr->cpu_ns += (uint64_t)w->own_ps / 1000u;
    j++;
  }
  free(out);
  return rc < 0 ? rc : 0;
}

typedef struct joining {
  uint64_t t_ns;
  size_t sample;
} joining;

static int cmp_joining(const void *x, const void *y) {
  const joining *a = x, *c = y;
  if (a->t_ns != c->t_ns) return (a->t_ns > c->t_ns) - (a->t_ns < c->t_ns);
  return (a->sample > c->sample) - (a->sample < c->sample);
}

/* A synchronous batching iterator's calls, one pass over the work: the b-th call's end and self time into
 * end_ns[b] and own_ns[b] for b < nb (0 where it made no such call; nothing for an asynchronous one). */
static void batch_calls(const builder *b, const pb_twin_stage *o, size_t nb, uint64_t *end_ns, uint64_t *own_ns) {
  if (o->iterator < 0 || b->t->iterators[o->iterator].async) return;
  size_t seen = 0;
  for (size_t k = 0; k < b->t->nwork && seen < nb; k++) {
    const pb_tf_work *w = &b->t->work[k];
    if (w->iterator != o->iterator || w->kind != PB_TF_CALL) continue;
    end_ns[seen] = ns_of(b, w->end_ps), own_ns[seen++] = (uint64_t)w->own_ps / 1000u;
  }
}

/* Which batch each sample of the row before joins, into batch_of (NONE: a batch not completed in the capture), and
 * each batch's size; the batches' count.  Map-and-batch says it: the runs started for one batch carry its element
 * id (a batch whose first runs began before the capture is smaller).  Else by order: the k-th `size` samples.
 * Never more than `size` in one. */
static size_t assign_batches(const builder *b, int row, size_t size, size_t *batch_of, size_t *members) {
  const row_flow *up = &b->flow[row - 1];
  const pb_twin_stage *o = &b->origin->stage[row - 1], *uo = row > 1 ? &b->origin->stage[row - 2] : NULL;
  bool by_id = up->element && uo && uo->iterator == o->iterator && up->nout && up->element[0];
  size_t nb = 0;
  for (size_t j = 0; j < up->nout; j++) {
    bool next = j > 0 && (members[nb] == size || (by_id && up->element[j] != up->element[j - 1]));
    nb += next;
    batch_of[j] = nb, members[nb]++;
  }
  size_t full = up->nout ? nb + 1 : 0; /* the last batch is complete only when it reached its size */
  if (full && members[nb] < size) full--;
  for (size_t j = 0; j < up->nout; j++)
    if (batch_of[j] >= full) batch_of[j] = NONE;
  return full;
}

/* A batch row: each sample joins when handed on; its batch goes when its last member joined. */
static int batch_row(builder *b, int row, const pb_twin_stage *o) {
  pb_stage_rec *sr = &b->rec->stages[row];
  const row_flow *up = &b->flow[row - 1];
  row_flow *f = &b->flow[row];
  size_t size = (size_t)b->rec->cfg->stages[row - 1].size, n = up->nout;
  joining *order = malloc((n ? n : 1) * sizeof *order);
  size_t *batch_of = malloc((n ? n : 1) * sizeof *batch_of), *members = calloc(n + 1, sizeof *members);
  size_t *joined = calloc(n + 1, sizeof *joined);
  uint64_t *last_join = calloc(n + 1, sizeof *last_join), *call_end = calloc(n + 1, sizeof *call_end);
  uint64_t *call_own = calloc(n + 1, sizeof *call_own);
  int rc = order && batch_of && members && joined && last_join && call_end && call_own ? 0 : -ENOMEM;
  size_t nb = rc ? 0 : assign_batches(b, row, size, batch_of, members);
  if (!rc) batch_calls(b, o, nb, call_end, call_own);
  f->took_ns = none_array(n), f->out_ns = none_array(nb), f->ntook = n, f->nout = nb, f->out_batches = true;
  if (!rc && (!f->took_ns || !f->out_ns)) rc = -ENOMEM;
  for (size_t j = 0; !rc && j < n; j++) {
    order[j] = (joining){.t_ns = up->out_ns[j], .sample = j};
    if (batch_of[j] != NONE && up->out_ns[j] > last_join[batch_of[j]]) last_join[batch_of[j]] = up->out_ns[j];
  }
  if (!rc) qsort(order, n, sizeof *order, cmp_joining);
  ev_vec *w = &b->workers[row][0];
  uint64_t batched = 0;
  for (size_t k = 0; !rc && k < n; k++) {
    size_t j = order[k].sample, batch = batch_of[j];
    bool full = batch != NONE && ++joined[batch] == members[batch];
    /* a batch goes when its last sample joined, or when its iterator's call returned, if later */
    uint64_t own = full ? call_own[batch] : 0, t1 = order[k].t_ns;
    if (full) t1 = call_end[batch] > last_join[batch] ? call_end[batch] : last_join[batch];
    uint64_t t0 = full && t1 - own > order[k].t_ns ? t1 - own : order[k].t_ns;
    uint8_t flags = PB_EVF_CALL_START | PB_EVF_JOINED | (full ? PB_EVF_EMITTED : 0);
    rc = ev_push(w, t0, t1, j, batch != NONE ? PB_BATCH_KEY(batch) : PB_NO_KEY, flags, b->sample_bytes);
    f->took_ns[j] = w->v[w->n - 1].t0_ns;
    batched += batch != NONE;
    if (full) f->out_ns[batch] = w->free_ns, sr->cpu_ns += own;
  }
  /* a batch whose first samples were made before the capture began: those count as read before it */
  b->before_capture_samples += nb * size > batched ? nb * size - batched : 0;
  sr->ctr.samples_in_flight = n - batched; /* the samples of a batch not completed in the capture */
  free(order), free(batch_of), free(members), free(joined), free(last_join), free(call_end), free(call_own);
  return rc;
}

/* A row that passes its input's elements on as they come (a prefetch). */
static int pass_row(builder *b, int row) {
  const row_flow *up = &b->flow[row - 1];
  row_flow *f = &b->flow[row];
  size_t n = up->nout;
  f->took_ns = none_array(n), f->out_ns = none_array(n), f->ntook = f->nout = n, f->out_batches = up->out_batches;
  if (!f->took_ns || !f->out_ns) return -ENOMEM;
  ev_vec *w = &b->workers[row][0];
  for (size_t k = 0; k < n; k++) {
    uint64_t key = up->out_batches ? PB_BATCH_KEY(k) : k;
    uint64_t bytes = b->sample_bytes * (up->out_batches ? (uint64_t)b->batch_size : 1u);
    int rc = ev_push(w, up->out_ns[k], up->out_ns[k], key, key, PB_EVF_CALL_START | PB_EVF_EMITTED, bytes);
    if (rc) return rc;
    f->took_ns[k] = f->out_ns[k] = w->free_ns;
  }
  return 0;
}

/* The in-memory source: an element for each the first row took, made as it took it. */
static int source_row(builder *b) {
  const row_flow *first = &b->flow[1];
  row_flow *f = &b->flow[0];
  f->nout = first->ntook;
  f->out_ns = none_array(f->nout);
  if (!f->out_ns) return -ENOMEM;
  ev_vec *w = &b->workers[0][0];
  for (size_t k = 0; k < f->nout; k++) {
    int rc = ev_push(w, first->took_ns[k], first->took_ns[k], PB_NO_KEY, k, PB_EVF_PRODUCE | PB_EVF_EMITTED,
                     b->sample_bytes);
    if (rc) return rc;
    f->out_ns[k] = w->free_ns;
  }
  return 0;
}

static int cmp_event(const void *x, const void *y) {
  const pb_event *a = x, *c = y;
  if (a->t0_ns != c->t0_ns) return (a->t0_ns > c->t0_ns) - (a->t0_ns < c->t0_ns);
  return (a->t1_ns > c->t1_ns) - (a->t1_ns < c->t1_ns);
}

/* ---------- the steps ---------- */

/* With GPU planes, what the device did in a step: its copies to the device and its kernels that began between
 * the step's marker and the next step's (to_ps).  The copy spans the first such H2D copy to the last; the
 * compute starts at the first kernel once the batch was ready (kernels before it belong to other work: the
 * previous step's tail, a copy engine's), and runs to the step's end, so that the steps keep the markers'
 * length: the gaps between kernels inside a step are the host's launches, not input (the kernels' own busy
 * share is source.gpu_kernel_busy_pct).  *cursor walks the start-ordered ops once over all the steps. */
static void gpu_step(const builder *b, int64_t from_ps, int64_t ready_ps, int64_t to_ps, size_t *cursor, pb_step *st) {
  const pb_gpu_activity *g = &b->t->gpu;
  while (*cursor < g->nops && g->ops[*cursor].start_ps < from_ps) ++*cursor;
  int64_t h2d0 = INT64_MAX, h2d1 = 0, k0 = INT64_MAX;
  uint64_t bytes = 0;
  for (size_t i = *cursor; i < g->nops && g->ops[i].start_ps < to_ps; i++) {
    const pb_gpu_op *op = &g->ops[i];
    if (op->kind == PB_GPU_H2D) {
      if (op->start_ps < h2d0) h2d0 = op->start_ps;
      if (op->end_ps > h2d1) h2d1 = op->end_ps < to_ps ? op->end_ps : to_ps;
      bytes += op->bytes;
    } else if (op->kind == PB_GPU_KERNEL && op->start_ps >= ready_ps && op->start_ps < k0) {
      k0 = op->start_ps;
    }
  }
  if (h2d0 != INT64_MAX && h2d1 > h2d0) {
    st->h2d_start_ns = ns_of(b, h2d0), st->h2d_end_ns = ns_of(b, h2d1);
    if (bytes) st->bytes = bytes;
  }
  uint64_t start = k0 != INT64_MAX ? ns_of(b, k0) : st->h2d_end_ns > st->ready_ns ? st->h2d_end_ns : st->ready_ns;
  st->compute_start_ns = start < st->compute_end_ns ? start : st->compute_end_ns;
}

/* The steps, each taking the next batch the last row handed on before its wait ended. */
static int make_steps(builder *b) {
  pb_record *rec = b->rec;
  const pb_tfdata *t = b->t;
  const row_flow *last = &b->flow[rec->nstages - 1];
  size_t first_measured = 0, next = 0; /* every step, as the profiler's input-pipeline analysis counts them */
  size_t gpu_cursor = 0;
  rec->steps = calloc(t->nsteps ? t->nsteps : 1, sizeof *rec->steps);
  b->device_took_ns = none_array(last->nout);
  if (!rec->steps || !b->device_took_ns) return -ENOMEM;
  if (!t->nsteps) return 0;
  rec->nsteps = t->nsteps;
  for (size_t i = 0; i < t->nsteps; i++) {
    const pb_tf_step *ts = &t->steps[i];
    pb_step *st = &rec->steps[i];
    uint64_t start = ns_of(b, ts->start_ps), end = ns_of(b, ts->start_ps + ts->duration_ps);
    uint64_t ready = ns_of(b, ts->start_ps + ts->wait_ps);
    /* the batch's last function run is seen to end a little after the step had it (its callback goes on after
     * handing the result over): a batch done within a twentieth of the step after the wait is the step's */
    bool have = next < last->nout && last->out_ns[next] <= ready + (end - start) / 20;
    *st = (pb_step){.prev_end_ns = start,
                    .ready_ns = ready,
                    .compute_start_ns = ready,
                    .compute_end_ns = end,
                    .bytes = ts->element_bytes > 0 ? (uint64_t)ts->element_bytes : 0,
                    .key = have ? PB_BATCH_KEY(next) : PB_NO_KEY,
                    .samples = (uint32_t)b->batch_size,
                    .measured = i >= first_measured};
    if (t->gpu.nops) {
      int64_t to_ps = i + 1 < t->nsteps ? t->steps[i + 1].start_ps : ts->start_ps + ts->duration_ps;
      gpu_step(b, ts->start_ps, ts->start_ps + ts->wait_ps, to_ps, &gpu_cursor, st);
    }
    if (have) b->device_took_ns[next++] = ready;
    rec->samples_consumed += (uint64_t)b->batch_size;
    rec->measured_count += st->measured;
  }
  rec->window_start_ns = rec->steps[first_measured].prev_end_ns;
  rec->window_end_ns = pb_step_end_ns(&rec->steps[t->nsteps - 1]);
  /* the batches of the steps that took none were made before the capture: their samples count as read */
  b->rec->stages[0].ctr.samples_out_total +=
      (uint64_t)(t->nsteps - next) * (uint64_t)b->batch_size + b->before_capture_samples;
  rec->queued_samples = (uint64_t)(last->nout - next) * (last->out_batches ? (uint64_t)b->batch_size : 1u);
  return 0;
}

/* ---------- each row's counters ---------- */

static uint64_t overlap_ns(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
  uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
  return hi > lo ? hi - lo : 0;
}

/* The mean share of the row's queue filled over the window: its elements from when it handed them on to when the
 * next row (or the device) took them, over its capacity. */
static double mean_fill(const builder *b, int row) {
  const pb_record *rec = b->rec;
  const row_flow *f = &b->flow[row];
  bool last = row + 1 == rec->nstages;
  const uint64_t *took = last ? b->device_took_ns : b->flow[row + 1].took_ns;
  size_t ntook = last ? f->nout : b->flow[row + 1].ntook;
  double held_ns = 0, window_ns = (double)(rec->window_end_ns - rec->window_start_ns);
  for (size_t k = 0; k < f->nout; k++) {
    uint64_t until = k < ntook && took && took[k] != NONE ? took[k] : rec->window_end_ns;
    if (f->out_ns[k] != NONE && until > f->out_ns[k])
      held_ns += (double)overlap_ns(f->out_ns[k], until, rec->window_start_ns, rec->window_end_ns);
  }
  int cap = rec->stages[row].queue_capacity > 0 ? rec->stages[row].queue_capacity : 1;
  double fill = window_ns > 0 ? held_ns / window_ns / cap : 0;
  return fill > 1 ? 1 : fill;
}

static void count_event(pb_stage_rec *sr, const pb_event *e, const builder *b) {
  const pb_record *rec = b->rec;
  uint64_t in_window = overlap_ns(e->t0_ns, e->t1_ns, rec->window_start_ns, rec->window_end_ns);
  if (e->kind == PB_EV_WAIT) sr->ctr.wait_in_ns += in_window;
  if (e->kind == PB_EV_BLOCKED) sr->ctr.blocked_out_ns += in_window;
  if (e->kind != PB_EV_PROCESS) return;
  uint64_t dur = e->t1_ns - e->t0_ns, samples_in = PB_KEY_IS_BATCH(e->key) ? (uint64_t)b->batch_size : 1;
  uint64_t samples_out = PB_KEY_IS_BATCH(e->out) ? (uint64_t)b->batch_size : 1;
  sr->ctr.busy_total_ns += dur;
  sr->ctr.busy_ns += in_window;
  if (e->flags & PB_EVF_EMITTED) {
    sr->ctr.samples_out_total += samples_out;
    if (e->t1_ns >= rec->window_start_ns && e->t1_ns < rec->window_end_ns) {
      sr->ctr.samples_out += samples_out;
      sr->ctr.bytes_out += samples_out * b->sample_bytes;
    }
  }
  if (!(e->flags & PB_EVF_CALL_START) || e->t1_ns < rec->window_start_ns || e->t1_ns >= rec->window_end_ns) return;
  sr->ctr.calls++; /* a call counts when it ends in the window, as a run counts it */
  sr->ctr.samples_in += samples_in;
  sr->ctr.bytes_in += samples_in * b->sample_bytes;
  pb_hist_add(&sr->hist, dur);
}

/* When the element an event takes was handed on by the row before (NONE: not known, or a source's). */
static uint64_t input_ready_ns(const builder *b, int row, const pb_event *e) {
  if (row == 0 || e->key == PB_NO_KEY) return NONE;
  const row_flow *up = &b->flow[row - 1];
  uint64_t k = PB_KEY_IS_BATCH(e->key) ? e->key & ~(1ull << 63) : e->key;
  return k < up->nout ? up->out_ns[k] : NONE;
}

/* The gaps between a worker's calls, as a run records them: waiting for its input until the row before handed
 * it on, then held back by the rows after it (tf.data's iterators make an element when asked for one, so a
 * worker whose input was there and did not start was not asked yet: downstream had no room).  A source is
 * never short of input. */
static int fill_gaps(const builder *b, int row, ev_vec *w) {
  pb_event *v = malloc((3 * (size_t)w->n + 1) * sizeof *v); /* a wait, a block and the call */
  if (!v) return -ENOMEM;
  uint32_t n = 0;
  for (uint32_t i = 0; i < w->n; i++) {
    const pb_event *e = &w->v[i];
    uint64_t from = i ? w->v[i - 1].t1_ns : e->t0_ns, ready = input_ready_ns(b, row, e);
    if (row > 0 && ready == NONE) ready = e->t0_ns; /* unknown: counted as a wait */
    if (row == 0) ready = from;
    uint64_t wait_end = ready < from ? from : ready > e->t0_ns ? e->t0_ns : ready;
    if (wait_end > from)
      v[n++] = (pb_event){.t0_ns = from, .t1_ns = wait_end, .key = PB_NO_KEY, .out = PB_NO_KEY, .kind = PB_EV_WAIT};
    if (e->t0_ns > wait_end)
      v[n++] =
          (pb_event){.t0_ns = wait_end, .t1_ns = e->t0_ns, .key = PB_NO_KEY, .out = PB_NO_KEY, .kind = PB_EV_BLOCKED};
    v[n++] = *e;
  }
  free(w->v);
  w->v = v, w->n = n, w->cap = n;
  return 0;
}

/* Each worker's events into the row, the last PB_TRACE_MAX_RING of them (as a run's ring keeps the end). */
static int finish_row(builder *b, int row) {
  pb_stage_rec *sr = &b->rec->stages[row];
  sr->workers = calloc((size_t)sr->threads, sizeof *sr->workers);
  if (!sr->workers) return -ENOMEM;
  for (int k = 0; k < sr->threads; k++) {
    ev_vec *w = &b->workers[row][k];
    if (w->n) qsort(w->v, w->n, sizeof *w->v, cmp_event);
    if (fill_gaps(b, row, w)) return -ENOMEM;
    for (uint32_t i = 0; i < w->n; i++) count_event(sr, &w->v[i], b);
    uint32_t keep = w->n > PB_TRACE_MAX_RING ? PB_TRACE_MAX_RING : w->n;
    if (keep < w->n) memmove(w->v, w->v + (w->n - keep), keep * sizeof *w->v);
    sr->workers[k] = (pb_worker_trace){.ev = w->v, .n = keep, .dropped = w->n - keep};
    w->v = NULL;
  }
  uint64_t window_ns = b->rec->window_end_ns - b->rec->window_start_ns;
  uint64_t capacity_ns = (uint64_t)sr->threads * window_ns;
  uint64_t accounted_ns = sr->ctr.busy_ns + sr->ctr.wait_in_ns + sr->ctr.blocked_out_ns;
  if (capacity_ns > accounted_ns)
    sr->ctr.wait_in_ns += capacity_ns - accounted_ns; /* before its first call, after its last */
  sr->queue_mean_fill = mean_fill(b, row);
  return 0;
}

/* ---------- the whole ---------- */

/* The row's shape from its config stage (row 0: the in-memory source). */
static void row_shape(builder *b, int row) {
  pb_stage_rec *sr = &b->rec->stages[row];
  const pb_config *cfg = b->rec->cfg;
  pb_hist_reset(&sr->hist);
  sr->cpu_delay_ns = -1; /* the capture does not say how long threads waited for a core */
  if (row == 0) {
    snprintf(sr->name, sizeof sr->name, "source");
    snprintf(sr->type, sizeof sr->type, "source");
    sr->threads = 1, sr->cfg_index = -1, sr->is_source = true, sr->queue_capacity = 1;
    return;
  }
  const pb_stage_cfg *sc = &cfg->stages[row - 1];
  snprintf(sr->name, sizeof sr->name, "%s", sc->name);
  snprintf(sr->type, sizeof sr->type, "%s", pb_stage_type_name(sc->type));
  sr->threads = sc->threads;
  sr->cfg_index = row - 1;
  sr->batched = b->flow[row - 1].out_batches || sc->type == PB_STAGE_BATCH;
  sr->queue_capacity = sc->type == PB_STAGE_PREFETCH ? (int)sc->depth : sc->threads; /* tf.data's buffers */
}

static int build_rows(builder *b) {
  pb_record *rec = b->rec;
  rec->nstages = 1 + rec->cfg->nstages;
  for (int row = 0; row < rec->nstages; row++) {
    row_shape(b, row);
    b->workers[row] = calloc((size_t)rec->stages[row].threads, sizeof(ev_vec));
    if (!b->workers[row]) return -ENOMEM;
  }
  for (int row = 1; row < rec->nstages; row++) {
    const pb_twin_stage *o = &b->origin->stage[row - 1];
    int rc = o->role == PB_TWIN_FUNCTIONS || o->role == PB_TWIN_OWN_TIME ? sample_row(b, row, o)
             : (o->role == PB_TWIN_BATCH || o->role == PB_TWIN_BATCH_OF_ONE) && !b->flow[row - 1].out_batches
                 ? batch_row(b, row, o)
                 : pass_row(b, row);
    if (rc) return rc;
  }
  int rc = source_row(b);
  if (!rc) rc = make_steps(b);
  for (int row = 0; !rc && row < rec->nstages; row++) rc = finish_row(b, row);
  /* a row that took fewer elements than its input handed on dropped them (a filter; an epoch's end) */
  for (int row = 1; !rc && row < rec->nstages; row++) {
    const row_flow *up = &b->flow[row - 1], *f = &b->flow[row];
    if (!f->out_batches && !up->out_batches && up->nout > f->ntook)
      rec->stages[row].ctr.samples_dropped_total += up->nout - f->ntook;
  }
  return rc;
}

/* The twin, made and loaded as the record's config. */
static int load_twin(const pb_tfdata *t, const char *capture, const char *name, pb_twin_notes *notes, pb_record *rec,
                     pb_err *err) {
  cJSON *json = NULL;
  int rc = pb_twin_config(t, capture, name, notes, &json, err);
  if (rc) return rc;
  char *text = pb_json_print(json, false);
  cJSON_Delete(json);
  rec->owned_cfg = calloc(1, sizeof *rec->owned_cfg);
  if (!text || !rec->owned_cfg) {
    free(text);
    return pb_err_setc(err, -ENOMEM, "%s: out of memory for its record", capture);
  }
  pb_err cerr = {{0}};
  rc = pb_config_parse(rec->owned_cfg, capture, text, NULL, 0, &cerr);
  free(text);
  if (rc) return pb_err_setc(err, -EBADMSG, "%s: its pipeline does not make a pipebench config: %s", capture, cerr.msg);
  rec->owned_cfg->run.warmup_steps = 0; /* the record's steps are the capture's, every one measured */
  rec->owned_cfg->run.steps = (int64_t)t->nsteps;
  rec->cfg = rec->owned_cfg;
  if (notes->nstages != rec->cfg->nstages)
    return pb_err_setc(err, -EBADMSG, "%s: more iterators than a pipebench pipeline holds (%d stages)", capture,
                       PB_MAX_STAGES);
  return 0;
}

/* Where the record came from, and the capture's own verdict and advice in tf.data's terms. */
static void fill_source(const pb_tfdata *t, const char *capture, pb_record_source *s) {
  snprintf(s->tool, sizeof s->tool, "tensorflow-profiler");
  snprintf(s->capture, sizeof s->capture, "%s", capture);
  snprintf(s->host, sizeof s->host, "%s", t->host);
  snprintf(s->step_marker, sizeof s->step_marker, "%s", t->step_name);
  pb_tf_verdict v;
  pb_tfdata_verdict(t, &v);
  if (v.bottleneck >= 0)
    snprintf(s->verdict, sizeof s->verdict, "input-bound: the slowest iterator is %s, %.0f samples/s",
             t->iterators[v.bottleneck].name, v.capacity_per_s[v.bottleneck]);
  else
    snprintf(s->verdict, sizeof s->verdict, "%s",
             v.keeps_up ? "input-bound, yet every iterator keeps up with the device: the steps wait for want of "
                          "overlap, not of speed"
                        : "not input-bound: the device's steps are the limit");
  s->work_drift_pct = pb_tfdata_work_drift_pct(t);
  s->gpu_devices = t->gpu.ndevices;
  s->gpu_kernel_busy_pct = NAN;
  if (t->gpu.ndevices && t->nsteps) {
    int64_t from = t->steps[0].start_ps, to = t->steps[t->nsteps - 1].start_ps + t->steps[t->nsteps - 1].duration_ps;
    if (to > from)
      s->gpu_kernel_busy_pct = 100.0 * (double)pb_gpu_kernel_busy_ps(&t->gpu, from, to) / (double)(to - from);
  }
  for (int i = 0; i < v.nadvice && s->nadvice < PB_MAX_IMPORT_ADVICE; i++) {
    pb_import_advice *a = &s->advice[s->nadvice++];
    snprintf(a->text, sizeof a->text, "%s", v.advice[i].text);
    a->predicted_per_s = v.advice[i].predicted_per_s;
  }
}

/* What the record says of the machine and the device: what the capture knows of them. */
static void fill_machine(const pb_tfdata *t, pb_record *rec) {
  int64_t budget = -1;
  for (int i = 0; i < t->niterators; i++)
    if (t->iterators[i].cpu_budget > 0) budget = t->iterators[i].cpu_budget;
  rec->world_size = 1;
  rec->device_count = 1;
  snprintf(rec->device_kind, sizeof rec->device_kind, "capture");
  snprintf(rec->device_name, sizeof rec->device_name, "the \"%.32s\" steps of host %.64s", t->step_name,
           t->host[0] ? t->host : "(not named)");
  snprintf(rec->timing_source, sizeof rec->timing_source, "profiler");
  rec->idle_pct_cuda_events = NAN;
  rec->start_ns = BASE_NS;
  rec->traced = true;
  rec->ncpu = budget > 0 && budget < 1 << 20 ? (int)budget : 0;
  rec->cores_usable = rec->cores_affinity = rec->ncpu;
  rec->cores_quota = NAN;
  if (budget > 0) snprintf(rec->cores_limited_by, sizeof rec->cores_limited_by, "tf.data's cpu_budget in the capture");
  for (int i = 0; i < rec->nstages; i++) rec->cpu_s += (double)rec->stages[i].cpu_ns / 1e9;
  pb_ceilings_none(&rec->ceilings, "an imported capture: no calibration of the machine it ran on");
}

/* The earliest moment the capture shows (its work's and its steps'): the record's clock starts there. */
static int64_t first_ps(const pb_tfdata *t) {
  int64_t first = t->nsteps ? t->steps[0].start_ps : INT64_MAX; /* both in start order */
  return t->nwork && t->work[0].start_ps < first ? t->work[0].start_ps : first;
}

static void free_builder(builder *b) {
  for (int row = 0; row <= PB_MAX_STAGES; row++) {
    for (int k = 0; b->workers[row] && k < b->rec->stages[row].threads; k++) free(b->workers[row][k].v);
    free(b->workers[row]);
    free(b->flow[row].took_ns);
    free(b->flow[row].out_ns);
    free(b->flow[row].element);
  }
  free(b->device_took_ns);
}

int pb_capture_record(const pb_tfdata *t, const char *capture, const char *name, pb_record *rec, pb_err *err) {
  memset(rec, 0, sizeof *rec);
  pb_twin_notes *notes = calloc(1, sizeof *notes);
  if (!notes) return pb_err_setc(err, -ENOMEM, "%s: out of memory for its record", capture);
  int rc = load_twin(t, capture, name, notes, rec, err);
  if (rc) {
    free(notes);
    return rc;
  }
  builder b = {.t = t, .origin = notes, .rec = rec, .origin_ps = first_ps(t)};
  const pb_stage_cfg *batch = NULL;
  for (int i = 0; i < rec->cfg->nstages && !batch; i++)
    if (rec->cfg->stages[i].type == PB_STAGE_BATCH) batch = &rec->cfg->stages[i];
  b.batch_size = batch ? batch->size : 1;
  b.sample_bytes = (uint64_t)pb_shape_bytes(&rec->cfg->dataset.sample);
  rc = build_rows(&b);
  free_builder(&b);
  free(notes);
  if (rc) return pb_err_setc(err, rc, "%s: out of memory for its record", capture);
  fill_machine(t, rec);
  fill_source(t, capture, &rec->source);
  return 0;
}

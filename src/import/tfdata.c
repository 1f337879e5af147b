/* A tf.data job from a TensorFlow Profiler capture (tfdata.h): the iterator tree and the steps. */
#include "tfdata.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "tf_busy.h"

#define ITERATOR_PREFIX "Iterator::"

static void times_add(pb_tf_times *t, double ps) {
  t->n++;
  t->sum_ps += ps;
  t->sumsq_ps2 += ps * ps;
}

double pb_tf_times_mean_ns(const pb_tf_times *t) { return t->n ? t->sum_ps / (double)t->n / 1e3 : 0; }

double pb_tf_times_stdev_ns(const pb_tf_times *t) {
  if (t->n < 2) return 0;
  double mean = t->sum_ps / (double)t->n, var = t->sumsq_ps2 / (double)t->n - mean * mean;
  return var > 0 ? sqrt(var) / 1e3 : 0;
}

/* Room for one more element in *v (n of them, cap allocated): doubles it, from `first`.  0 or -ENOMEM. */
static int grow(void **v, size_t n, size_t *cap, size_t elem_bytes, size_t first) {
  if (n < *cap) return 0;
  size_t want = *cap ? 2 * *cap : first;
  void *p = realloc(*v, want * elem_bytes);
  if (!p) return -ENOMEM;
  *v = p, *cap = want;
  return 0;
}

static int work_push(pb_tfdata *t, pb_tf_work w) {
  if (grow((void **)&t->work, t->nwork, &t->work_cap, sizeof *t->work, 1024)) return -ENOMEM;
  t->work[t->nwork++] = w;
  return 0;
}

static int consume_push(pb_tfdata *t, pb_tf_consume c) {
  if (grow((void **)&t->consumes, t->nconsumes, &t->consumes_cap, sizeof *t->consumes, 1024)) return -ENOMEM;
  t->consumes[t->nconsumes++] = c;
  return 0;
}

/* One event being read: where it is and what it says. */
typedef struct ev_ref {
  const pb_xspace *x;
  int plane, line;
  size_t index;
  pb_xevent ev;
} ev_ref;

static int64_t stat_int(const ev_ref *r, const char *stat, int64_t missing) {
  int64_t v;
  return pb_xspace_event_int(r->x, r->plane, r->line, r->index, stat, &v) ? v : missing;
}

static const char *stat_str(const ev_ref *r, const char *stat) {
  const char *s = NULL;
  return pb_xspace_event_str(r->x, r->plane, r->line, r->index, stat, &s) ? s : NULL;
}

/* ---------- iterators ---------- */

static size_t id_slot(const pb_tfdata *t, uint64_t id) {
  uint64_t h = id * 0x9e3779b97f4a7c15ull; /* Fibonacci hashing: ids are often sequential or pointer-like */
  size_t mask = t->ids_cap - 1, k = (size_t)(h >> 32) & mask;
  while (t->ids[k].iterator >= 0 && t->ids[k].id != id) k = (k + 1) & mask;
  return k;
}

static int find_iterator(const pb_tfdata *t, uint64_t id) {
  return t->ids_cap ? t->ids[id_slot(t, id)].iterator : -1;
}

/* Doubles the id table (or makes its first 1024 slots). */
static int grow_ids(pb_tfdata *t) {
  size_t cap = t->ids_cap ? 2 * t->ids_cap : 1024;
  pb_tf_id *old = t->ids;
  size_t old_cap = t->ids_cap;
  if (!(t->ids = malloc(cap * sizeof *t->ids))) return t->ids = old, -ENOMEM;
  t->ids_cap = cap;
  for (size_t k = 0; k < cap; k++) t->ids[k].iterator = -1;
  for (size_t k = 0; k < old_cap; k++)
    if (old[k].iterator >= 0) t->ids[id_slot(t, old[k].id)] = old[k];
  free(old);
  return 0;
}

static int add_id(pb_tfdata *t, uint64_t id, int iterator) {
  if (t->nids == PB_TF_MAX_IDS) return -E2BIG;
  if (2 * (t->nids + 1) > t->ids_cap && grow_ids(t)) return -ENOMEM;
  t->ids[id_slot(t, id)] = (pb_tf_id){.id = id, .iterator = iterator};
  t->nids++;
  return 0;
}

/* "ParallelMapV2" from "Iterator::Root::...::ForeverRepeat[2]::ParallelMapV2", an epoch's index left out. */
static void kind_of(const char *event, char *out, size_t len) {
  const char *colon = strrchr(event, ':');
  snprintf(out, len, "%.*s", (int)strcspn(colon ? colon + 1 : event, "["), colon ? colon + 1 : event);
}

/* An iterator already read of this kind and dataset name (another instance of it), or -1. */
static int same_dataset(const pb_tfdata *t, const char *kind, const char *name) {
  for (int i = 0; i < t->niterators; i++)
    if (strcmp(t->iterators[i].kind, kind) == 0 && strcmp(t->iterators[i].name, name) == 0) return i;
  return -1;
}

/* What an instance's event says of its iterator, where the iterator does not know it yet (an instance can say
 * "parallelism": "unavailable" where a later one says 2). */
static void learn_stats(pb_tf_iterator *it, const ev_ref *r) {
  if (it->parallelism < 0) it->parallelism = stat_int(r, "parallelism", -1);
  if (it->buffer_limit < 0) it->buffer_limit = stat_int(r, "buffer_limit", -1);
  if (it->batch_size < 0) it->batch_size = stat_int(r, "batch_size", -1);
  if (it->cpu_budget < 0) it->cpu_budget = stat_int(r, "cpu_budget", -1);
}

static void new_iterator(pb_tf_iterator *it, uint64_t id, const char *kind, const char *name, const ev_ref *r) {
  *it = (pb_tf_iterator){
      .id = id, .parent = -1, .parallelism = -1, .buffer_limit = -1, .batch_size = -1, .cpu_budget = -1};
  snprintf(it->kind, sizeof it->kind, "%s", kind);
  snprintf(it->name, sizeof it->name, "%s", name ? name : it->kind);
  it->parent_id = (uint64_t)stat_int(r, "parent_id", 0);
  const char *autotune = stat_str(r, "autotune");
  it->autotune = autotune && strcmp(autotune, "true") == 0;
}

/* The iterator an `Iterator::...` event calls, added the first time it is seen; -E2BIG past the tables'
 * sizes, -ENOMEM. */
static int iterator_of(pb_tfdata *t, const ev_ref *r) {
  uint64_t id = (uint64_t)stat_int(r, "id", 0);
  int i = find_iterator(t, id);
  if (i < 0) {
    char kind[48];
    kind_of(r->ev.name, kind, sizeof kind);
    const char *name = stat_str(r, "name");
    i = same_dataset(t, kind, name ? name : kind);
    if (i < 0 && t->niterators == PB_TF_MAX_ITERATORS) return -E2BIG;
    int rc = add_id(t, id, i >= 0 ? i : t->niterators);
    if (rc) return rc;
    if (i < 0) new_iterator(&t->iterators[i = t->niterators++], id, kind, name, r);
  }
  learn_stats(&t->iterators[i], r);
  return i;
}

/* An open Iterator call on a line: its iterator, its end, and its children's time so far. */
typedef struct open_call {
  int iterator, line;
  int64_t start_ps, end_ps;
  double children_ps;
  double duration_ps;
} open_call;

static int cmp_start(const void *a, const void *b) {
  const ev_ref *x = a, *y = b;
  if (x->ev.start_ps != y->ev.start_ps) return (x->ev.start_ps > y->ev.start_ps) - (x->ev.start_ps < y->ev.start_ps);
  return (x->ev.duration_ps < y->ev.duration_ps) - (x->ev.duration_ps > y->ev.duration_ps); /* outer first */
}

static int close_call(pb_tfdata *t, const open_call *c) {
  double self = c->duration_ps - c->children_ps;
  times_add(&t->iterators[c->iterator].calls, self > 0 ? self : 0);
  return work_push(t, (pb_tf_work){.iterator = c->iterator,
                                   .kind = PB_TF_CALL,
                                   .line = c->line,
                                   .start_ps = c->start_ps,
                                   .end_ps = c->end_ps,
                                   .own_ps = self > 0 ? (int64_t)self : 0});
}

/* The Iterator events of one line, in start order (outer first): each call's self time is its duration less
 * the calls nested in it. */
static int line_calls(pb_tfdata *t, ev_ref *evs, size_t n) {
  open_call stack[64];
  int depth = 0, rc = 0;
  qsort(evs, n, sizeof *evs, cmp_start);
  for (size_t k = 0; k < n && !rc; k++) {
    while (depth && stack[depth - 1].end_ps <= evs[k].ev.start_ps && !rc) rc = close_call(t, &stack[--depth]);
    int i = iterator_of(t, &evs[k]);
    if (i < 0) return i;
    if (depth) stack[depth - 1].children_ps += (double)evs[k].ev.duration_ps;
    if (depth == 64 && !rc) rc = close_call(t, &stack[--depth]); /* deeper than any real pipeline: counted flat */
    stack[depth++] = (open_call){.iterator = i,
                                 .line = evs[k].line,
                                 .start_ps = evs[k].ev.start_ps,
                                 .end_ps = evs[k].ev.start_ps + evs[k].ev.duration_ps,
                                 .duration_ps = (double)evs[k].ev.duration_ps};
  }
  while (depth && !rc) rc = close_call(t, &stack[--depth]);
  return rc;
}

/* The events of a line whose name starts with prefix, into *out (malloc'd); their count, or -ENOMEM. */
static ssize_t line_events(const pb_xspace *x, int plane, int line, const char *prefix, ev_ref **out) {
  pb_xline li;
  pb_xspace_line(x, plane, line, &li);
  ev_ref *v = malloc((li.nevents + 1) * sizeof *v);
  if (!v) return -ENOMEM;
  size_t n = 0;
  for (size_t e = 0; e < li.nevents; e++) {
    ev_ref r = {.x = x, .plane = plane, .line = line, .index = e};
    pb_xspace_event(x, plane, line, e, &r.ev);
    if (pb_starts_with(r.ev.name, prefix)) v[n++] = r;
  }
  *out = v;
  return (ssize_t)n;
}

static int read_iterators(const pb_xspace *x, int plane, pb_tfdata *t) {
  for (int l = 0; l < pb_xspace_nlines(x, plane); l++) {
    ev_ref *evs;
    ssize_t n = line_events(x, plane, l, ITERATOR_PREFIX, &evs);
    if (n < 0) return (int)n;
    int rc = line_calls(t, evs, (size_t)n);
    free(evs);
    if (rc) return rc;
  }
  for (int i = 0; i < t->niterators; i++) t->iterators[i].parent = find_iterator(t, t->iterators[i].parent_id);
  return 0;
}

/* ---------- asynchronous iterators and their functions ---------- */

/* A user function started by an iterator's runner, and its execution time on the threadpool. */
typedef struct fn_run {
  int64_t id;
  int owner;         /* iterator index; -1 for an execution (ExecutorState::Process) or its end (ExecutorDoneCallback) */
  int line;          /* the start's line */
  int64_t element;   /* the start's: the element_id of the Produce event around it, 0: none */
  double exec_ps;    /* an execution's duration */
  int64_t start_ps, end_ps; /* the start's; an execution's or callback's end */
} fn_run;

typedef struct fn_list {
  fn_run *v;
  size_t n, cap;
} fn_list;

static int fn_push(fn_list *l, fn_run r) {
  if (grow((void **)&l->v, l->n, &l->cap, sizeof *l->v, 256)) return -ENOMEM;
  l->v[l->n++] = r;
  return 0;
}

/* The iterator a runner line works for: the parent of the outermost Iterator calls its `<Kind>Produce` events
 * make (a parallel map's runner asks its input for the next element; the calls nested in those are its
 * input's own), the most frequent one; -1 for no runner. */
static int runner_owner(const pb_tfdata *t, const ev_ref *evs, size_t n) {
  int votes[PB_TF_MAX_ITERATORS] = {0}, best = -1;
  int64_t produce_end = INT64_MIN, call_end = INT64_MIN;
  for (size_t k = 0; k < n; k++) {
    const pb_xevent *e = &evs[k].ev;
    if (pb_ends_with(e->name, "Produce")) {
      produce_end = e->start_ps + e->duration_ps;
    } else if (pb_starts_with(e->name, ITERATOR_PREFIX) && e->start_ps < produce_end && e->start_ps >= call_end) {
      call_end = e->start_ps + e->duration_ps;
      int i = find_iterator(t, (uint64_t)stat_int(&evs[k], "id", 0));
      int p = i >= 0 ? t->iterators[i].parent : -1;
      if (p >= 0 && ++votes[p] > (best >= 0 ? votes[best] : 0)) best = p;
    }
  }
  return best;
}

/* The Iterator calls open on a line at a moment: a function started inside one is that iterator's (a
 * synchronous map runs its function within its GetNext, in its consumer's thread). */
typedef struct open_calls {
  int iterator[64];
  int64_t end_ps[64];
  int depth;
  int64_t produce_end_ps, produce_element; /* the last `<Kind>Produce` event with an element_id */
} open_calls;

static void open_calls_at(open_calls *o, int64_t t_ps) {
  while (o->depth && o->end_ps[o->depth - 1] <= t_ps) o->depth--;
  if (o->produce_end_ps <= t_ps) o->produce_element = 0;
}

static void open_call_push(open_calls *o, const pb_tfdata *t, const ev_ref *r) {
  int i = find_iterator(t, (uint64_t)stat_int(r, "id", 0));
  if (i < 0 || o->depth == 64) return;
  o->iterator[o->depth] = i;
  o->end_ps[o->depth++] = r->ev.start_ps + r->ev.duration_ps;
}

/* One line's function starts (each owned by the Iterator call around it, else by the line's runner) and
 * executions. */
static int line_functions(pb_tfdata *t, const ev_ref *evs, size_t n, fn_list *fns) {
  int runner = runner_owner(t, evs, n);
  if (runner >= 0) t->iterators[runner].async = true;
  open_calls open = {.depth = 0};
  for (size_t k = 0; k < n; k++) {
    const char *name = evs[k].ev.name;
    int rc = 0;
    const pb_xevent *e = &evs[k].ev;
    bool process = strcmp(name, "ExecutorState::Process") == 0;
    open_calls_at(&open, e->start_ps);
    int owner = open.depth ? open.iterator[open.depth - 1] : runner;
    if (pb_starts_with(name, ITERATOR_PREFIX))
      open_call_push(&open, t, &evs[k]);
    else if (pb_ends_with(name, "Produce") && (open.produce_element = stat_int(&evs[k], "element_id", 0)))
      open.produce_end_ps = e->start_ps + e->duration_ps;
    else if (open.depth && pb_ends_with(name, "Consume") && stat_int(&evs[k], "element_id", 0))
      rc = consume_push(t, (pb_tf_consume){.iterator = open.iterator[open.depth - 1],
                                           .element = stat_int(&evs[k], "element_id", 0),
                                           .t_ps = e->start_ps});
    else if (owner >= 0 && pb_starts_with(name, "InstantiatedCapturedFunction::Run"))
      rc = fn_push(fns, (fn_run){.id = stat_int(&evs[k], "id", 0),
                                 .owner = owner,
                                 .line = evs[k].line,
                                 .element = open.produce_element,
                                 .start_ps = e->start_ps});
    else if (process || strcmp(name, "ExecutorDoneCallback") == 0)
      rc = fn_push(fns, (fn_run){.id = stat_int(&evs[k], "id", 0),
                                 .owner = -1,
                                 .exec_ps = process ? (double)e->duration_ps : 0,
                                 .start_ps = e->start_ps,
                                 .end_ps = e->start_ps + e->duration_ps});
    if (rc) return rc;
  }
  return 0;
}

static int cmp_fn(const void *a, const void *b) {
  const fn_run *x = a, *y = b;
  if (x->id != y->id) return (x->id > y->id) - (x->id < y->id);
  bool xs = x->owner >= 0, ys = y->owner >= 0;
  if (xs != ys) return ys - xs;                                     /* the start (owner >= 0) before its executions */
  return (x->start_ps > y->start_ps) - (x->start_ps < y->start_ps); /* its executions in time order */
}

int pb_tfdata_cpu_budget(const pb_tfdata *t) {
  for (int i = 0; i < t->niterators; i++)
    if (t->iterators[i].cpu_budget > 0)
      return t->iterators[i].cpu_budget > 1000000 ? 1000000 : (int)t->iterators[i].cpu_budget;
  return -1;
}

/* t + d, d >= 0, held within int64 (a hostile capture's sums can pass it). */
static int64_t add_ps(int64_t t, double d) {
  double room = (double)INT64_MAX - (double)t;
  return d >= room ? INT64_MAX : t + (int64_t)d;
}

/* Each started function's executions summed, into its iterator's per-element work.  0 or -ENOMEM. */
static int attribute_functions(pb_tfdata *t, fn_list *fns) {
  if (fns->n) qsort(fns->v, fns->n, sizeof *fns->v, cmp_fn); /* NULL with none */
  pb_tf_span *execs = calloc(fns->n ? fns->n : 1, sizeof *execs); /* fns' executions, the rest empty */
  if (!execs) return -ENOMEM;
  for (size_t k = 0; k < fns->n; k++)
    if (fns->v[k].owner < 0 && fns->v[k].exec_ps > 0) execs[k] = (pb_tf_span){fns->v[k].start_ps, fns->v[k].end_ps};
  pb_tf_busy busy;
  int cores = pb_tfdata_cpu_budget(t), rc = pb_tf_busy_build(execs, fns->n, &busy);
  for (size_t k = 0; k < fns->n && !rc;) {
    size_t j = k;
    int owner = fns->v[k].owner;
    double exec = 0;
    int64_t end = INT64_MIN;
    for (; j < fns->n && fns->v[j].id == fns->v[k].id; j++) {
      exec += fns->v[j].exec_ps;
      if (fns->v[j].owner < 0 && fns->v[j].end_ps > end) end = fns->v[j].end_ps;
    }
    if (owner >= 0 && exec > 0) {
      times_add(&t->iterators[owner].functions, exec);
      double latency = end > fns->v[k].start_ps ? (double)end - (double)fns->v[k].start_ps : exec;
      times_add(&t->iterators[owner].latency, latency > exec ? latency : exec);
      times_add(&t->iterators[owner].waits, (double)pb_tf_run_waits_ps(execs + k + 1, j - k - 1, &busy, cores));
      const fn_run *r = &fns->v[k];
      rc = work_push(t, (pb_tf_work){.iterator = owner,
                                     .kind = PB_TF_FUNCTION,
                                     .line = r->line,
                                     .start_ps = r->start_ps,
                                     .end_ps = add_ps(r->start_ps, latency > exec ? latency : exec),
                                     .own_ps = (int64_t)exec,
                                     .element = r->element});
    }
    k = j;
  }
  pb_tf_busy_free(&busy);
  free(execs);
  return rc;
}

/* ---------- steps ---------- */

typedef struct step_list {
  pb_tf_step *v;
  size_t n, cap;
} step_list;

static int step_push(step_list *l, pb_tf_step s) {
  if (grow((void **)&l->v, l->n, &l->cap, sizeof *l->v, 64)) return -ENOMEM;
  l->v[l->n++] = s;
  return 0;
}

/* The step's wait inside [t0, t1), from the line's events evs[0..n) after the step marker (in start order, outer
 * first): from the step's start until its input was in hand, i.e. to the end of the last outermost event in
 * the step that holds an IteratorGetNext event (the eager call around the op: TFE_Py_FastPathExecute_C >
 * EagerExecute > ... > IteratorGetNextOp::DoCompute), clipped to the step, so that the Python iterator's own
 * time before the call counts as what it is, the loop waiting for its batch; `bytes` from the op's
 * element_size.  0 when the step holds no GetNext. */
static int64_t getnext_wait(const ev_ref *evs, size_t n, int64_t t0, int64_t t1, int64_t *bytes, int64_t *pipeline) {
  int64_t in_hand = t0, top_b = t0;
  *pipeline = -1;
  for (size_t k = 0; k < n && evs[k].ev.start_ps < t1; k++) {
    const pb_xevent *e = &evs[k].ev;
    if (e->start_ps >= top_b) /* a new outermost event */
      top_b = e->start_ps + e->duration_ps < t1 ? e->start_ps + e->duration_ps : t1;
    if (strcmp(e->name, ITERATOR_PREFIX "Root") == 0) {
      int64_t end = e->start_ps + e->duration_ps < t1 ? e->start_ps + e->duration_ps : t1;
      *pipeline = (*pipeline < 0 ? 0 : *pipeline) + (end > e->start_ps ? end - e->start_ps : 0);
    }
    if (!strstr(e->name, "IteratorGetNext")) continue;
    if (top_b > in_hand) in_hand = top_b;
    if (*bytes < 0) *bytes = stat_int(&evs[k], "element_size", -1);
  }
  return in_hand - t0;
}

static int line_steps(pb_tfdata *t, ev_ref *evs, size_t n, step_list *out) {
  for (size_t k = 0; k < n; k++) {
    int64_t num = stat_int(&evs[k], "step_num", INT64_MIN);
    if (num == INT64_MIN || evs[k].ev.duration_ps <= 0) continue;
    if (!t->step_name[0]) snprintf(t->step_name, sizeof t->step_name, "%s", evs[k].ev.name);
    if (strcmp(evs[k].ev.name, t->step_name) != 0) continue; /* one kind of marker: the first seen */
    int64_t t0 = evs[k].ev.start_ps, t1 = t0 + evs[k].ev.duration_ps, bytes = -1, pipeline;
    int64_t wait = getnext_wait(evs + k + 1, n - k - 1, t0, t1, &bytes, &pipeline);
    if (pipeline > wait) pipeline = wait;
    int rc = step_push(out, (pb_tf_step){.num = num,
                                         .start_ps = t0,
                                         .duration_ps = t1 - t0,
                                         .wait_ps = wait,
                                         .pipeline_ps = pipeline,
                                         .element_bytes = bytes});
    if (rc) return rc;
  }
  return 0;
}

static int cmp_step(const void *a, const void *b) {
  const pb_tf_step *x = a, *y = b;
  return (x->start_ps > y->start_ps) - (x->start_ps < y->start_ps);
}

static int cmp_consume(const void *a, const void *b) {
  const pb_tf_consume *x = a, *y = b;
  if (x->t_ps != y->t_ps) return (x->t_ps > y->t_ps) - (x->t_ps < y->t_ps);
  return (x->element > y->element) - (x->element < y->element);
}

static int cmp_work(const void *a, const void *b) {
  const pb_tf_work *x = a, *y = b;
  if (x->start_ps != y->start_ps) return (x->start_ps > y->start_ps) - (x->start_ps < y->start_ps);
  return (x->iterator > y->iterator) - (x->iterator < y->iterator);
}

/* Every line once, its events in start order: the functions started and run on it, and (on the threads that are
 * not the pipeline's own) the steps marked on it; then each function's run is given to its iterator, and the
 * steps put in start order. */
static int read_lines(const pb_xspace *x, int plane, pb_tfdata *t) {
  fn_list fns = {0};
  step_list steps = {0};
  int rc = 0;
  for (int l = 0; l < pb_xspace_nlines(x, plane) && !rc; l++) {
    pb_xline li;
    pb_xspace_line(x, plane, l, &li);
    ev_ref *evs;
    ssize_t n = line_events(x, plane, l, "", &evs);
    if (n < 0) {
      rc = (int)n;
      break;
    }
    qsort(evs, (size_t)n, sizeof *evs, cmp_start);
    rc = line_functions(t, evs, (size_t)n, &fns);
    if (!rc && !pb_starts_with(li.name, "tf_data_")) rc = line_steps(t, evs, (size_t)n, &steps);
    free(evs);
  }
  if (!rc) rc = attribute_functions(t, &fns);
  free(fns.v);
  if (rc) {
    free(steps.v);
    return rc;
  }
  if (steps.n) qsort(steps.v, steps.n, sizeof *steps.v, cmp_step); /* NULL with none */
  t->steps = steps.v, t->nsteps = steps.n;
  if (t->nwork) qsort(t->work, t->nwork, sizeof *t->work, cmp_work);
  if (t->nconsumes) qsort(t->consumes, t->nconsumes, sizeof *t->consumes, cmp_consume);
  return 0;
}

/* Each step's copies to a device: those that began between its marker and the next step's, counted once where
 * they overlap, and only up to its end (the step's own copy of its batch, not a prefetch into the next). */
static void steps_h2d(pb_tfdata *t) {
  const pb_gpu_activity *g = &t->gpu;
  size_t k = 0;
  for (size_t i = 0; i < t->nsteps; i++) {
    pb_tf_step *st = &t->steps[i];
    int64_t end = st->start_ps + st->duration_ps, to = i + 1 < t->nsteps ? t->steps[i + 1].start_ps : end;
    while (k < g->nops && g->ops[k].start_ps < st->start_ps) k++;
    int64_t covered = st->start_ps;
    for (size_t j = k; j < g->nops && g->ops[j].start_ps < to; j++) {
      if (g->ops[j].kind != PB_GPU_H2D) continue;
      int64_t a = g->ops[j].start_ps > covered ? g->ops[j].start_ps : covered;
      int64_t b = g->ops[j].end_ps < end ? g->ops[j].end_ps : end;
      if (b > a) st->h2d_ps += b - a, covered = b;
    }
  }
}

/* ---------- the whole ---------- */

int pb_tfdata_read(const pb_xspace *x, const char *what, pb_tfdata *out, pb_err *err) {
  memset(out, 0, sizeof *out);
  int plane = pb_xspace_find_plane(x, "/host:CPU");
  if (plane < 0)
    return pb_err_setc(err, -EBADMSG, "%s: no host plane (expected a \"/host:CPU\" plane, as TensorFlow's profiler writes)",
                       what);
  if (pb_xspace_nhosts(x) > 0) snprintf(out->host, sizeof out->host, "%s", pb_xspace_host(x, 0));
  int rc = read_iterators(x, plane, out);
  if (rc == -E2BIG)
    return pb_tfdata_free(out), pb_err_setc(err, -EBADMSG,
                                            "%s: more than %d tf.data iterators or %u iterator instances (expected "
                                            "one input pipeline)",
                                            what, PB_TF_MAX_ITERATORS, PB_TF_MAX_IDS);
  if (!rc) rc = read_lines(x, plane, out);
  if (!rc) rc = pb_gpu_read(x, &out->gpu);
  if (!rc) steps_h2d(out);
  if (rc) {
    pb_tfdata_free(out);
    return pb_err_setc(err, rc, "%s: out of memory reading the capture", what);
  }
  if (out->niterators == 0) {
    /* Say what the capture does hold: a JAX or PyTorch job's capture has steps and GPU planes but never tf.data's
     * events (their profilers do not record TensorFlow's), which is not the same mistake as profiling too late. */
    size_t nsteps = out->nsteps;
    int ngpus = out->gpu.ndevices;
    pb_tfdata_free(out);
    return pb_err_setc(err, -EBADMSG,
                       "%s: no tf.data iterator events (it has %zu marked steps and %d GPU plane(s); expected "
                       "Iterator::... events on the host plane: profile with TensorFlow's profiler while the tf.data "
                       "input pipeline runs)",
                       what, nsteps, ngpus);
  }
  return 0;
}

void pb_tfdata_free(pb_tfdata *t) {
  if (!t) return;
  free(t->steps);
  free(t->ids);
  free(t->work);
  free(t->consumes);
  pb_gpu_free(&t->gpu);
  t->steps = NULL, t->ids = NULL, t->work = NULL, t->consumes = NULL;
  t->nsteps = t->nids = t->ids_cap = t->nwork = t->work_cap = t->nconsumes = t->consumes_cap = 0;
}

/* The work an iterator did: its functions' and its calls' own time. */
static double work_ps(const pb_tf_iterator *it) { return it->functions.sum_ps + it->calls.sum_ps; }

int pb_tfdata_chain(const pb_tfdata *t, int *idx, int max) {
  int node = -1;
  for (int i = 0; i < t->niterators && node < 0; i++)
    if (t->iterators[i].parent < 0) node = i;
  int n = 0;
  bool seen[PB_TF_MAX_ITERATORS] = {false};
  while (node >= 0 && n < max && !seen[node]) { /* a cycle in a hostile file ends the walk */
    seen[node] = true;
    idx[n++] = node;
    int next = -1;
    for (int i = 0; i < t->niterators; i++)
      if (t->iterators[i].parent == node && (next < 0 || work_ps(&t->iterators[i]) > work_ps(&t->iterators[next])))
        next = i;
    node = next;
  }
  for (int a = 0, b = n - 1; a < b; a++, b--) { /* source first */
    int tmp = idx[a];
    idx[a] = idx[b], idx[b] = tmp;
  }
  return n;
}

void pb_tfdata_step_ms(const pb_tfdata *t, double *step_ms, double *device_ms, double *device_sd_ms) {
  size_t from = t->nsteps >= 3 ? 1 : 0, n = 0;
  double step = 0, device = 0, device_sq = 0;
  for (size_t i = from; i < t->nsteps; i++, n++) {
    const pb_tf_step *st = &t->steps[i]; /* the step less the pipeline's part of its wait */
    double ms = (double)(st->duration_ps - (st->pipeline_ps >= 0 ? st->pipeline_ps : st->wait_ps)) / 1e9;
    step += (double)t->steps[i].duration_ps / 1e9;
    device += ms, device_sq += ms * ms;
  }
  double mean = n ? device / (double)n : NAN, var = n ? device_sq / (double)n - mean * mean : 0;
  *step_ms = n ? step / (double)n : NAN;
  *device_ms = mean;
  if (device_sd_ms) *device_sd_ms = var > 0 ? sqrt(var) : 0;
}

double pb_tfdata_h2d_ms(const pb_tfdata *t) {
  size_t from = t->nsteps >= 3 ? 1 : 0; /* the steps pb_tfdata_step_ms averages */
  double sum = 0;
  for (size_t i = from; i < t->nsteps; i++) sum += (double)t->steps[i].h2d_ps / 1e9;
  return t->nsteps > from ? sum / (double)(t->nsteps - from) : NAN;
}

double pb_tfdata_input_bound_pct(const pb_tfdata *t) {
  double wait = 0, total = 0;
  for (size_t i = 0; i < t->nsteps; i++) {
    wait += (double)t->steps[i].wait_ps;
    total += (double)t->steps[i].duration_ps;
  }
  return total > 0 ? 100.0 * wait / total : NAN;
}

/* The function runs' span: the first and the last one's start (-1, -1: none). */
static void function_span(const pb_tfdata *t, int64_t *first_ps, int64_t *last_ps) {
  *first_ps = *last_ps = -1;
  for (size_t i = 0; i < t->nwork; i++) {
    if (t->work[i].kind != PB_TF_FUNCTION) continue;
    if (*first_ps < 0 || t->work[i].start_ps < *first_ps) *first_ps = t->work[i].start_ps;
    if (t->work[i].start_ps > *last_ps) *last_ps = t->work[i].start_ps;
  }
}

double pb_tfdata_work_drift_pct(const pb_tfdata *t) {
  int64_t from_ps, to_ps;
  function_span(t, &from_ps, &to_ps);
  if (to_ps <= from_ps) return NAN;
  int64_t third_ps = (to_ps - from_ps) / 3;
  /* per iterator: the runs, and the execution and runs in the first [0] and the last [1] third */
  double sum_ps[PB_TF_MAX_ITERATORS][2] = {{0}};
  uint64_t n[PB_TF_MAX_ITERATORS][2] = {{0}}, runs[PB_TF_MAX_ITERATORS] = {0};
  for (size_t i = 0; i < t->nwork; i++) {
    const pb_tf_work *w = &t->work[i];
    if (w->kind != PB_TF_FUNCTION || w->iterator < 0 || w->iterator >= PB_TF_MAX_ITERATORS) continue;
    runs[w->iterator]++;
    int part = w->start_ps < from_ps + third_ps ? 0 : w->start_ps >= to_ps - third_ps ? 1 : -1;
    if (part >= 0) sum_ps[w->iterator][part] += (double)w->own_ps, n[w->iterator][part]++;
  }
  double early = 0, late = 0;
  for (int it = 0; it < t->niterators; it++) {
    if (n[it][0] < PB_TF_DRIFT_MIN_RUNS || n[it][1] < PB_TF_DRIFT_MIN_RUNS) continue;
    early += (double)runs[it] * sum_ps[it][0] / (double)n[it][0];
    late += (double)runs[it] * sum_ps[it][1] / (double)n[it][1];
  }
  return early > 0 ? 100.0 * (late / early - 1) : NAN;
}

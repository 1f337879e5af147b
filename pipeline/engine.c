#include "engine.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- the measured window ---------- */

uint64_t pb_engine_clip(const pb_engine *e, uint64_t t0, uint64_t t1) {
  uint64_t ws = atomic_load_explicit(&e->window_start_ns, memory_order_relaxed);
  uint64_t we = atomic_load_explicit(&e->window_end_ns, memory_order_relaxed);
  uint64_t lo = t0 > ws ? t0 : ws, hi = t1 < we ? t1 : we;
  return hi > lo ? hi - lo : 0;
}

bool pb_engine_in_window(const pb_engine *e, uint64_t t) {
  return t >= atomic_load_explicit(&e->window_start_ns, memory_order_relaxed) &&
         t < atomic_load_explicit(&e->window_end_ns, memory_order_relaxed);
}

void pb_engine_open_window(pb_engine *e, uint64_t t_ns) { atomic_store(&e->window_start_ns, t_ns); }
void pb_engine_close_window(pb_engine *e, uint64_t t_ns) { atomic_store(&e->window_end_ns, t_ns); }

/* ---------- helpers for stages ---------- */

void pb_worker_abandon(pb_worker *w, pb_elem *e) {
  w->ctr.samples_in_flight += e->nsamples;
  pb_buf_release(e->buf);
  e->buf = NULL;
}

/* Pushes the buffered outputs; what a cancelled push leaves behind is counted in flight. */
static int flush_out(pb_worker *w) {
  if (w->nout == 0) return 0;
  pb_engine *e = w->stage->engine;
  int pushed = 0;
  uint64_t t0 = pb_now_ns();
  if (w->stage->out == pb_engine_output(e)) /* the device's input: it tells input wait from overhead */
    for (int i = 0; i < w->nout; i++) w->out[i].handoff_ns = t0;
  int rc = pb_queue_push_many(w->stage->out, w->out, w->nout, &pushed);
  uint64_t blocked = pb_engine_clip(e, t0, pb_now_ns());
  w->ctr.blocked_out_ns += blocked;
  w->blocked_in_call_ns += blocked;
  for (int i = pushed; i < w->nout; i++) pb_worker_abandon(w, &w->out[i]);
  w->nout = 0;
  if (rc < 0) w->cancelled = true;
  return rc;
}

int pb_emit(pb_worker *w, const pb_elem *e) {
  if (w->nout == 0) w->out_first_ns = pb_now_ns();
  w->out[w->nout++] = *e;
  w->ctr.samples_out_total += e->nsamples;
  if (pb_engine_in_window(w->stage->engine, w->out_first_ns)) {
    w->ctr.samples_out += e->nsamples;
    w->ctr.bytes_out += e->bytes;
  }
  return w->nout == PB_CHUNK ? flush_out(w) : 0;
}

pb_buf *pb_worker_get_buf(pb_worker *w, pb_pool *pool) {
  pb_buf *b = pb_pool_try_get(pool);
  if (b) return b;
  /* Never wait for a buffer while holding unsent outputs: they may be the very buffers that, once
   * consumed downstream, come back to this pool. */
  if (flush_out(w) < 0) return NULL;
  uint64_t t0 = pb_now_ns();
  b = pb_pool_get(pool);
  uint64_t blocked = pb_engine_clip(w->stage->engine, t0, pb_now_ns());
  w->ctr.blocked_out_ns += blocked;
  w->blocked_in_call_ns += blocked;
  return b;
}

/* ---------- worker loops ---------- */

/* One call's bookkeeping: service time excludes time spent blocked on the output. */
static void count_call(pb_worker *w, const pb_elem *in, uint64_t t0, uint64_t t1) {
  pb_engine *e = w->stage->engine;
  uint64_t service = t1 - t0 - PB_MIN(w->blocked_in_call_ns, t1 - t0);
  w->blocked_in_call_ns = 0;
  if (!pb_engine_in_window(e, t1)) return;
  w->ctr.busy_ns += service;
  w->ctr.calls++;
  w->ctr.samples_in += in->nsamples;
  w->ctr.bytes_in += in->bytes;
  pb_hist_add(&w->hist, service);
}

static void abandon_inputs(pb_worker *w, int from, int n) {
  for (int i = from; i < n; i++) pb_worker_abandon(w, &w->in[i]);
}

/* Processes one popped chunk; returns -ECANCELED when the run was cancelled meanwhile. */
static int process_chunk(pb_worker *w, int n) {
  const pb_stage_ops *ops = w->stage->ops;
  uint64_t t0 = pb_now_ns();
  for (int i = 0; i < n; i++) {
    pb_elem in = w->in[i];
    int rc = ops->process(w, &w->in[i]);
    uint64_t t1 = pb_now_ns();
    count_call(w, &in, t0, t1);
    if (rc < 0 || w->cancelled) {
      abandon_inputs(w, i + 1, n);
      return -ECANCELED;
    }
    if (w->nout && t1 - w->out_first_ns >= PB_FLUSH_AFTER_NS && flush_out(w) < 0) {
      abandon_inputs(w, i + 1, n);
      return -ECANCELED;
    }
    t0 = t1;
  }
  return flush_out(w);
}

static void run_transform(pb_worker *w) {
  pb_stage *s = w->stage;
  for (;;) {
    uint64_t t0 = pb_now_ns();
    int n = pb_queue_pop_many(s->in, w->in, PB_CHUNK);
    w->ctr.wait_in_ns += pb_engine_clip(s->engine, t0, pb_now_ns());
    if (n < 0 || (n > 0 && process_chunk(w, n) < 0)) return; /* cancelled */
    if (n == 0) {                                             /* end of data */
      if (s->ops->flush && s->ops->flush(w) < 0) return;
      flush_out(w);
      return;
    }
  }
}

static void run_source(pb_worker *w) {
  pb_stage *s = w->stage;
  while (!w->cancelled) {
    uint64_t t0 = pb_now_ns();
    int n = s->ops->produce(w, w->out, PB_CHUNK);
    uint64_t t1 = pb_now_ns();
    if (n <= 0) return;
    w->nout = n;
    w->out_first_ns = t0;
    if (pb_engine_in_window(s->engine, t1)) {
      /* A source makes a chunk in one call; each element is charged an equal share. */
      uint64_t per = (t1 - t0) / (uint64_t)n;
      w->ctr.busy_ns += t1 - t0;
      w->ctr.calls += (uint64_t)n;
      for (int i = 0; i < n; i++) {
        pb_hist_add(&w->hist, per);
        w->ctr.samples_out += w->out[i].nsamples;
        w->ctr.bytes_out += w->out[i].bytes;
      }
    }
    for (int i = 0; i < n; i++) w->ctr.samples_out_total += w->out[i].nsamples;
    flush_out(w);
  }
}

static void worker_main(void *arg) {
  pb_worker *w = arg;
  pb_stage *s = w->stage;
  pb_thread_precise_timers();
  if (s->is_source)
    run_source(w);
  else
    run_transform(w);
  if (w->cancelled || atomic_load(&s->engine->cancelled)) {
    if (s->ops->abandon) w->ctr.samples_in_flight += s->ops->abandon(w);
  }
  pb_queue_producer_done(s->out);
}

/* ---------- planning ---------- */

static int refuse_unimplemented(const pb_config *cfg, int i, pb_err *err) {
  const pb_stage_cfg *sc = &cfg->stages[i];
  return pb_err_set(err,
                    "%s: stages[%d].type: stage \"%s\" of type %s is not implemented in this version "
                    "(expected only in-memory sources with map spin/sleep, batch, prefetch and h2d; "
                    "try --data synthetic)",
                    cfg->file, i, sc->name, pb_stage_type_name(sc->type));
}

static int refuse_op(const pb_config *cfg, int i, int j, pb_err *err) {
  return pb_err_set(err,
                    "%s: stages[%d].ops[%d].op: map op %s is not implemented in this version "
                    "(expected spin or sleep; try --data synthetic, which skips per-sample stages)",
                    cfg->file, i, j, pb_op_name(cfg->stages[i].ops[j].kind));
}

/* Is stage i of cfg runnable by this build?  Map stages only with the emulation ops so far. */
static int check_implemented(const pb_config *cfg, int i, pb_err *err) {
  const pb_stage_cfg *sc = &cfg->stages[i];
  if (!pb_stage_ops_for(sc->type)) return refuse_unimplemented(cfg, i, err);
  for (int j = 0; sc->type == PB_STAGE_MAP && j < sc->nops; j++) {
    pb_op_kind k = sc->ops[j].kind;
    if (k != PB_OP_SPIN && k != PB_OP_SLEEP) return refuse_op(cfg, i, j, err);
  }
  return 0;
}

static void add_stage(pb_engine *e, const pb_stage_ops *ops, const pb_stage_cfg *sc, bool batched) {
  pb_stage *s = &e->stages[e->nstages];
  *s = (pb_stage){.ops = ops, .cfg = sc, .index = e->nstages, .engine = e, .batched = batched};
  s->is_source = sc == NULL;
  s->threads = sc ? (sc->type == PB_STAGE_H2D ? sc->streams : sc->threads) : 1;
  snprintf(s->name, sizeof s->name, "%s", sc ? sc->name : "source");
  e->nstages++;
}

/* The sample the source must emit: the shape after the last per-sample stage that will be skipped. */
static pb_shape source_shape(const pb_config *cfg, bool synthetic) {
  int b = pb_config_batch_index(cfg);
  if (synthetic && b > 0) return cfg->stages[b - 1].out_shape;
  return cfg->dataset.sample;
}

int pb_engine_plan(pb_engine *e, const pb_config *cfg, bool synthetic, int consumers, pb_err *err) {
  memset(e, 0, sizeof *e);
  e->cfg = cfg;
  e->synthetic = synthetic;
  e->consumers = consumers;
  atomic_store(&e->window_start_ns, UINT64_MAX);
  atomic_store(&e->window_end_ns, UINT64_MAX);
  int b = pb_config_batch_index(cfg);
  if (!synthetic && cfg->dataset.format != PB_FMT_SYNTHETIC) return check_implemented(cfg, 0, err);
  pb_shape shape = source_shape(cfg, synthetic);
  if (!shape.known) {
    char buf[64];
    return pb_err_set(err,
                      "%s: stages[%d]: the sample shape after this stage is %s, so synthetic data "
                      "cannot be generated (expected dataset.generate.image or a map op with a size)",
                      cfg->file, b - 1, pb_shape_str(&shape, buf, sizeof buf));
  }
  add_stage(e, &pb_stage_source_ops, NULL, false);
  e->stages[0].sample_shape = shape;
  for (int i = synthetic ? b : 0; i < cfg->nstages; i++) {
    int rc = check_implemented(cfg, i, err);
    if (rc) return rc;
    add_stage(e, pb_stage_ops_for(cfg->stages[i].type), &cfg->stages[i], i >= b);
    e->stages[e->nstages - 1].sample_shape = shape; /* emulation ops keep the shape */
  }
  return 0;
}

uint64_t pb_engine_memory_bytes(const pb_engine *e, char *who, size_t who_len) {
  uint64_t total = 0;
  size_t used = 0;
  if (who_len) who[0] = '\0';
  for (int i = 0; i < e->nstages; i++) {
    const pb_stage *s = &e->stages[i];
    uint64_t bytes = s->ops->memory_bytes ? s->ops->memory_bytes(s) : 0;
    total += bytes;
    if (bytes >= 1000000 && used < who_len) {
      used += (size_t)snprintf(who + used, who_len - used, "%s%s %.0f MB", used ? ", " : "", s->name,
                               (double)bytes / 1e6);
    }
  }
  return total;
}

/* ---------- start / stop ---------- */

/* The output queue of stage i: samples before batch, batches after; prefetch's holds `depth`. */
int pb_stage_out_capacity(const pb_stage *s) {
  if (!s->batched) return PB_SAMPLE_QUEUE_CAPACITY;
  if (s->cfg->type == PB_STAGE_PREFETCH) return (int)s->cfg->depth;
  if (s->cfg->type == PB_STAGE_H2D) return s->cfg->streams;
  return 1;
}

int pb_engine_next_consumers(const pb_engine *e, int i) {
  return i + 1 < e->nstages ? e->stages[i + 1].threads : e->consumers;
}

static int init_stage(pb_engine *e, int i, pb_err *err) {
  pb_stage *s = &e->stages[i];
  int rc = pb_queue_init(&e->queues[i], pb_stage_out_capacity(s), s->threads, pb_engine_next_consumers(e, i));
  if (rc) return pb_err_set(err, "cannot allocate the queue after stage %s", s->name), -ENOMEM;
  s->out = &e->queues[i];
  s->in = i > 0 ? &e->queues[i - 1] : NULL;
  s->workers = calloc((size_t)s->threads, sizeof *s->workers);
  if (!s->workers) return pb_err_set(err, "out of memory for stage %s", s->name), -ENOMEM;
  for (int k = 0; k < s->threads; k++) {
    s->workers[k] = (pb_worker){.stage = s, .index = k};
    pb_rng_seed(&s->workers[k].rng, e->cfg->seed ^ ((uint64_t)i << 32) ^ (uint64_t)k);
    pb_hist_reset(&s->workers[k].hist);
  }
  return s->ops->init ? s->ops->init(s, err) : 0;
}

int pb_engine_start(pb_engine *e, pb_err *err) {
  for (int i = 0; i < e->nstages; i++) {
    int rc = init_stage(e, i, err);
    if (rc) return rc;
  }
  for (int i = 0; i < e->nstages; i++) {
    pb_stage *s = &e->stages[i];
    for (int k = 0; k < s->threads; k++) {
      if (uv_thread_create(&s->workers[k].thread, worker_main, &s->workers[k]) != 0) {
        pb_engine_cancel(e);
        return pb_err_set(err, "cannot start a thread for stage %s", s->name), -EAGAIN;
      }
    }
  }
  e->started = true;
  return 0;
}

pb_queue *pb_engine_output(pb_engine *e) { return &e->queues[e->nstages - 1]; }

void pb_engine_cancel(pb_engine *e) {
  atomic_store(&e->cancelled, true);
  for (int i = 0; i < e->nstages; i++) {
    if (e->queues[i].ring) pb_queue_cancel(&e->queues[i]);
    if (e->stages[i].state && e->stages[i].ops->cancel) e->stages[i].ops->cancel(&e->stages[i]);
  }
}

void pb_engine_join(pb_engine *e) {
  if (!e->started) return;
  for (int i = 0; i < e->nstages; i++)
    for (int k = 0; k < e->stages[i].threads; k++) uv_thread_join(&e->stages[i].workers[k].thread);
  e->started = false;
}

uint64_t pb_engine_drain(pb_engine *e) {
  uint64_t samples = 0;
  for (int i = 0; i < e->nstages; i++)
    if (e->queues[i].ring) samples += pb_queue_drain(&e->queues[i]);
  return samples;
}

void pb_engine_close(pb_engine *e) {
  pb_engine_join(e);
  for (int i = 0; i < e->nstages; i++) {
    pb_stage *s = &e->stages[i];
    if (s->ops->close) s->ops->close(s);
    free(s->workers);
    s->workers = NULL;
    pb_queue_close(&e->queues[i]);
  }
}

void pb_stage_totals(const pb_stage *s, pb_counters *ctr, pb_hist *hist) {
  memset(ctr, 0, sizeof *ctr);
  pb_hist_reset(hist);
  for (int k = 0; k < s->threads; k++) {
    const pb_counters *c = &s->workers[k].ctr;
    ctr->calls += c->calls;
    ctr->samples_in += c->samples_in;
    ctr->samples_out += c->samples_out;
    ctr->busy_ns += c->busy_ns;
    ctr->wait_in_ns += c->wait_in_ns;
    ctr->blocked_out_ns += c->blocked_out_ns;
    ctr->bytes_in += c->bytes_in;
    ctr->bytes_out += c->bytes_out;
    ctr->samples_out_total += c->samples_out_total;
    ctr->samples_dropped_total += c->samples_dropped_total;
    ctr->samples_in_flight += c->samples_in_flight;
    pb_hist_merge(hist, &s->workers[k].hist);
  }
}

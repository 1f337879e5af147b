#include "steps.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

int pb_steps_init(pb_steps *s, const pb_config *cfg, pb_engine *e, pb_device *d, pb_exchange *x) {
  memset(s, 0, sizeof *s);
  s->engine = e;
  s->device = d;
  s->exchange = x && x->active ? x : NULL;
  if (cfg->device.allreduce.mode == PB_ALLREDUCE_MODEL) s->comm_model_ns = pb_allreduce_model_ns(&cfg->device.allreduce);
  s->warmup = cfg->run.warmup_steps;
  if (cfg->run.stop == PB_STOP_STEPS) s->target = cfg->run.steps;
  /* at least 1 ns: a duration under a nanosecond would round to 0, which means no limit */
  if (cfg->run.stop == PB_STOP_DURATION) s->duration_ns = PB_MAX((uint64_t)(cfg->run.duration_s * 1e9), 1u);
  /* Room for the whole run when it is small; longer runs grow the array per step. */
  s->cap = s->target ? (size_t)(s->warmup + s->target) + (size_t)d->count : 1024;
  if (s->cap > 65536) s->cap = 65536;
  s->v = malloc(s->cap * sizeof *s->v);
  if (!s->v) return -ENOMEM;
  s->mem_limit = PB_STEPS_IN_MEMORY;
  s->spill_fd = -1;
  s->spill_off = true; /* until pb_steps_spill_to */
  uv_mutex_init(&s->lock);
  uv_cond_init(&s->changed);
  uv_cond_init(&s->dealt);
  /* The run starts now, before the pipeline's threads do: without warm-up steps the window opens here,
   * so the stage counters see the pipeline filling. */
  s->start_ns = pb_now_ns();
  if (s->warmup == 0) {
    s->window_open = true;
    s->window_start_ns = s->window_end_ns = s->start_ns;
    pb_engine_open_window(s->engine, s->start_ns);
  }
  return 0;
}

/* Under the lock: the run is over; the engine's window closes where the measured window ended (the
 * last measured step, or the interrupt). */
static void finish_locked(pb_steps *s) {
  if (s->done) return;
  s->done = true;
  if (s->window_open) pb_engine_close_window(s->engine, s->window_end_ns);
  uv_cond_broadcast(&s->changed);
  uv_cond_broadcast(&s->dealt);
}

/* A measured step whose device was already busy (or waiting) when the window opened starts at the
 * window: the time before belongs to warm-up. */
static void clamp_to_window(pb_step *st, uint64_t start_ns) {
  if (st->prev_end_ns < start_ns) st->prev_end_ns = start_ns;
  if (st->ready_ns < start_ns) st->ready_ns = start_ns;
  if (st->compute_start_ns < start_ns) st->compute_start_ns = start_ns;
  if (st->compute_end_ns < start_ns) st->compute_end_ns = start_ns; /* the window opened in its exchange */
  if (st->comm_end_ns && st->comm_start_ns < start_ns) st->comm_start_ns = start_ns;
}

/* Under the lock: the first run.warmup_steps completed steps are warm-up; the window opens when the
 * last of them has ended (device threads may record out of order, hence the maximum). */
static void count_warmup(pb_steps *s, const pb_step *st, size_t idx) {
  if (pb_step_end_ns(st) > s->warmup_end_ns) s->warmup_end_ns = pb_step_end_ns(st);
  if ((int64_t)idx + 1 < s->warmup) return;
  s->window_open = true;
  s->window_start_ns = s->window_end_ns = s->warmup_end_ns;
  pb_engine_open_window(s->engine, s->window_start_ns);
}

/* Under the lock: classify step record `st` (completion number idx) and move the window. */
static void advance_window(pb_steps *s, pb_step *st, size_t idx) {
  st->measured = false;
  if (s->done) return;
  if (!s->window_open) {
    count_warmup(s, st, idx);
    return;
  }
  if (pb_step_end_ns(st) <= s->window_start_ns) return; /* ended before the window: recorded late */
  clamp_to_window(st, s->window_start_ns);
  st->measured = true;
  s->measured_count++;
  s->measured_samples += st->samples;
  s->measured_compute_ns += st->compute_end_ns - st->compute_start_ns;
  if (pb_step_end_ns(st) > s->window_end_ns) s->window_end_ns = pb_step_end_ns(st);
  bool reached = s->target && (int64_t)s->measured_count == s->target;
  if (s->duration_ns && s->window_end_ns - s->window_start_ns >= s->duration_ns) reached = true;
  if (reached) finish_locked(s);
}

static int record(pb_steps *s, const pb_step *st) {
  uv_mutex_lock(&s->lock);
  if (pb_steps_make_room(s)) {
    uv_mutex_unlock(&s->lock);
    return -ENOMEM;
  }
  size_t idx = s->n++;
  pb_step *slot = &s->v[idx - s->spilled];
  *slot = *st;
  s->samples_consumed += st->samples;
  advance_window(s, slot, idx);
  uv_mutex_unlock(&s->lock);
  return 0;
}

static bool is_done(pb_steps *s) {
  uv_mutex_lock(&s->lock);
  bool done = s->done;
  uv_mutex_unlock(&s->lock);
  return done;
}

/* One step: the batch is on the host; copy it unless the h2d stage already did, then compute.  The
 * step can start once the batch is ready (st->ready_ns) and, when the copy is part of the step, copied. */
static int run_step(pb_steps *s, int index, pb_elem *batch, pb_step *st) {
  st->bytes = batch->bytes;
  st->key = pb_elem_key(batch);
  st->samples = batch->nsamples;
  st->device = (uint16_t)index;
  st->h2d_start_ns = batch->h2d_start_ns;
  st->h2d_end_ns = batch->h2d_end_ns;
  if (!batch->h2d_end_ns) { /* no h2d stage: the copy is part of the step, on this device */
    pb_h2d_times t;
    int rc = pb_device_h2d(s->device, index, batch, &t);
    if (rc) return rc;
    st->h2d_start_ns = t.start_ns;
    st->h2d_end_ns = t.end_ns;
  }
  uint64_t ready_ns = st->ready_ns > st->h2d_end_ns ? st->ready_ns : st->h2d_end_ns;
  return pb_device_step(s->device, index, batch, ready_ns, &st->compute_start_ns, &st->compute_end_ns);
}

/* A device call failed: the batch's samples are errors (not lost), and the run stops with exit 1. */
static void fail(pb_steps *s, const pb_elem *batch, int rc) {
  uv_mutex_lock(&s->lock);
  s->samples_failed += batch->nsamples;
  if (!s->failed) {
    s->failed = true;
    const char *why = pb_device_error(s->device);
    snprintf(s->failure, sizeof s->failure, "device: a step failed: %s", why[0] ? why : strerror(-rc));
  }
  finish_locked(s);
  uv_mutex_unlock(&s->lock);
}

/* When the batch became available to the device: its hand-off into the last queue, clamped to
 * [previous step's end, pop].  Time after that until the pop is the device side's own overhead
 * (counted as "other"), not input wait: the batch was there.  A batch popped (and launched) while the
 * previous step still ran was ready at that step's end. */
static uint64_t ready_time(const pb_elem *batch, uint64_t prev_end_ns, uint64_t popped_ns) {
  uint64_t t = batch->handoff_ns > prev_end_ns ? batch->handoff_ns : prev_end_ns;
  if (popped_ns < prev_end_ns) popped_ns = prev_end_ns;
  return t < popped_ns ? t : popped_ns;
}

/* ---- dealing batches to devices ---- */

static bool fifo_take(pb_deal_fifo *f, pb_elem *out) {
  if (f->n == 0) return false;
  *out = f->v[f->head];
  f->head = (f->head + 1) % f->cap;
  f->n--;
  return true;
}

static int fifo_put(pb_deal_fifo *f, const pb_elem *e) {
  if (f->n == f->cap) { /* grow: bounded by the batches the pipeline can hold at once */
    size_t cap = f->cap ? 2 * f->cap : 8;
    pb_elem *v = malloc(cap * sizeof *v);
    if (!v) return -ENOMEM;
    for (size_t i = 0; i < f->n; i++) v[i] = f->v[(f->head + i) % f->cap];
    free(f->v);
    f->v = v;
    f->head = 0;
    f->cap = cap;
  }
  f->v[(f->head + f->n) % f->cap] = *e;
  f->n++;
  return 0;
}

/* The device a batch goes to: the one a GPU copy already put it on, else the next in turn. */
static int deal_target(pb_steps *s, const pb_elem *b) {
  if (s->device->assigns_at_h2d && b->h2d_end_ns && b->device < s->device->count) return b->device;
  return (int)(s->next_deal++ % (uint64_t)s->device->count);
}

/* Under the lock: files a popped batch (or, at the end, notes there are no more). */
static void file_batch(pb_steps *s, const pb_elem *b, int got) {
  if (got <= 0) {
    s->no_more = true;
    return;
  }
  if (fifo_put(&s->fifo[deal_target(s, b)], b) == 0) return;
  s->samples_undelivered += b->nsamples; /* out of memory: counted, never lost */
  pb_buf_release(b->buf);
  s->no_more = true;
}

/* The next batch for device `index`: from its own FIFO, or popped from the pipeline by whichever device
 * thread is free (one at a time) and filed under its device.  False at the end of data or of the run. */
static bool next_batch(pb_steps *s, int index, pb_elem *out) {
  pb_queue *q = pb_engine_output(s->engine);
  bool got_one = false;
  uv_mutex_lock(&s->lock);
  /* Once the run is over, leftovers stay filed for drain_fifos (counted as queued). */
  while (!s->done && !(got_one = fifo_take(&s->fifo[index], out)) && !s->no_more) {
    if (s->popping) {
      uv_cond_wait(&s->dealt, &s->lock);
      continue;
    }
    s->popping = true;
    uv_mutex_unlock(&s->lock);
    pb_elem b;
    int got = pb_queue_pop_many(q, &b, 1);
    uv_mutex_lock(&s->lock);
    s->popping = false;
    file_batch(s, &b, got);
    uv_cond_broadcast(&s->dealt);
  }
  uv_mutex_unlock(&s->lock);
  return got_one;
}

/* Like next_batch, but waits only until deadline_ns (and tries once even after it): true when a batch
 * for device `index` came by then; batches for other devices are filed for them on the way.  The end of
 * data is left for next_batch to find. */
static bool next_batch_by(pb_steps *s, int index, pb_elem *out, uint64_t deadline_ns) {
  pb_queue *q = pb_engine_output(s->engine);
  bool got_one = false, tried = false;
  uv_mutex_lock(&s->lock);
  while (!s->done && !(got_one = fifo_take(&s->fifo[index], out)) && !s->no_more) {
    uint64_t now = pb_now_ns();
    if (tried && now >= deadline_ns) break;
    if (s->popping) { /* another device thread pops for everyone: wait for what it files */
      if (now >= deadline_ns) break;
      uv_cond_timedwait(&s->dealt, &s->lock, deadline_ns - now);
      continue;
    }
    tried = true;
    s->popping = true;
    uv_mutex_unlock(&s->lock);
    pb_elem b;
    int got = pb_queue_pop_until(q, &b, deadline_ns);
    uv_mutex_lock(&s->lock);
    s->popping = false;
    if (got != 0) file_batch(s, &b, got);
    uv_cond_broadcast(&s->dealt);
    if (got == 0) break;
  }
  uv_mutex_unlock(&s->lock);
  return got_one;
}

/* The batch after the current one, taken while the current step runs, when the device queues ahead. */
typedef struct ahead {
  bool have;
  pb_elem batch;
  uint64_t popped_ns;
  int launch_rc; /* its launch's result: a failure fails its own step, in turn */
} ahead;

/* Queue ahead (pb_device_launch): while the device runs the current batch's step, take the next batch
 * for it if it comes before that step should end (device.step_ms from now), and launch its step behind
 * the current one when it is on the device, as a training loop's asynchronous launches do: the device
 * goes on to it without waiting for this thread to notice the current step's end.  Its host buffer goes
 * back to the pool at once: the step reads the device's copy. */
static void launch_ahead(pb_steps *s, int index, const pb_elem *current, ahead *n) {
  /* A gradient exchange ends each step on the host: the next step's compute waits for it (no overlap). */
  if (s->exchange || s->comm_model_ns) return;
  if (n->have || !pb_device_can_launch(s->device, current)) return;
  uint64_t deadline_ns = pb_now_ns() + (uint64_t)(s->device->step_ms * 1e6);
  if (!next_batch_by(s, index, &n->batch, deadline_ns)) return;
  n->have = true;
  n->popped_ns = pb_now_ns();
  n->launch_rc = 0;
  if (!pb_device_can_launch(s->device, &n->batch)) return;
  n->launch_rc = pb_device_launch(s->device, index, &n->batch);
  pb_buf_release(n->batch.buf);
  n->batch.buf = NULL;
  n->batch.data = NULL;
}

/* The run ended with a batch taken ahead: it was not stepped (queued samples, as in drain_fifos). */
static void drop_ahead(pb_steps *s, ahead *n) {
  if (!n->have) return;
  uv_mutex_lock(&s->lock);
  s->samples_undelivered += n->batch.nsamples;
  uv_mutex_unlock(&s->lock);
  pb_device_discard(s->device, &n->batch);
  pb_buf_release(n->batch.buf);
  n->have = false;
}

/* After the compute: the gradient exchange (device.allreduce).  The model's time is device time from the
 * compute's end, like the emulated device's step; a real exchange is timed as it runs.  Returns true when
 * another rank has stopped: this step is this rank's last. */
static bool exchange_gradients(pb_steps *s, pb_step *st) {
  if (s->comm_model_ns) {
    st->comm_start_ns = st->compute_end_ns;
    st->comm_end_ns = st->compute_end_ns + s->comm_model_ns;
    pb_sleep_until_ns(st->comm_end_ns);
    return false;
  }
  if (!s->exchange) return false;
  bool peer_stopped = pb_exchange_step(s->exchange, &st->comm_start_ns, &st->comm_end_ns);
  if (st->comm_start_ns < st->compute_end_ns) st->comm_start_ns = st->compute_end_ns; /* a GPU's clock */
  if (st->comm_end_ns < st->comm_start_ns) st->comm_end_ns = st->comm_start_ns;
  return peer_stopped;
}

/* Another rank stopped: this rank ends here too (its window closes at this step). */
static void stop_with_peer(pb_steps *s) {
  uv_mutex_lock(&s->lock);
  s->peer_stopped = true;
  finish_locked(s);
  uv_mutex_unlock(&s->lock);
}

static void device_main(void *p) {
  pb_device_thread *a = p;
  pb_steps *s = a->steps;
  uint64_t prev_end = s->start_ns;
  ahead next = {0};
  pb_thread_precise_timers();
  while (!is_done(s)) {
    pb_elem batch;
    uint64_t popped_ns;
    int rc = 0;
    if (next.have) { /* taken (and launched, when on the device) while the previous step ran */
      batch = next.batch;
      popped_ns = next.popped_ns;
      rc = next.launch_rc;
      next.have = false;
    } else {
      if (!next_batch(s, a->index, &batch)) break; /* end of data or cancelled */
      popped_ns = pb_now_ns();
      if (pb_device_can_launch(s->device, &batch)) rc = pb_device_launch(s->device, a->index, &batch);
    }
    if (!rc) launch_ahead(s, a->index, &batch, &next);
    pb_step st = {.prev_end_ns = prev_end, .ready_ns = ready_time(&batch, prev_end, popped_ns)};
    if (!rc) rc = run_step(s, a->index, &batch, &st);
    pb_buf_release(batch.buf);
    if (rc == -ECANCELED) { /* the run ended while this batch waited for a device buffer: queued */
      uv_mutex_lock(&s->lock);
      s->samples_undelivered += batch.nsamples;
      uv_mutex_unlock(&s->lock);
      pb_device_discard(s->device, &batch);
      break;
    }
    if (rc) {
      pb_device_discard(s->device, &batch);
      fail(s, &batch, rc);
      break;
    }
    bool peer_stopped = exchange_gradients(s, &st);
    if (record(s, &st)) { /* out of memory for the step record: the run fails, the batch counted */
      fail(s, &batch, -ENOMEM);
      break;
    }
    if (peer_stopped) {
      stop_with_peer(s);
      break;
    }
    prev_end = pb_step_end_ns(&st);
  }
  drop_ahead(s, &next);
  /* This rank makes no more steps: the others learn it at their next exchange (allreduce.h). */
  if (s->exchange) pb_exchange_leave(s->exchange);
  uv_mutex_lock(&s->lock);
  if (--s->active_devices == 0 && !s->done) {
    s->end_of_data = true;
    finish_locked(s);
  }
  uv_mutex_unlock(&s->lock);
}

int pb_steps_start(pb_steps *s, pb_err *err) {
  s->active_devices = s->device->count;
  for (int i = 0; i < s->device->count; i++) {
    s->threads[i].steps = s;
    s->threads[i].index = i;
    if (uv_thread_create(&s->threads[i].thread, device_main, &s->threads[i]) != 0) {
      uv_mutex_lock(&s->lock);
      s->active_devices -= s->device->count - i;
      uv_mutex_unlock(&s->lock);
      return pb_err_setc(err, -EAGAIN, "cannot start the device thread");
    }
    s->threads_started++;
  }
  return 0;
}

bool pb_steps_wait(pb_steps *s, int timeout_ms) {
  uv_mutex_lock(&s->lock);
  if (!s->done) uv_cond_timedwait(&s->changed, &s->lock, (uint64_t)timeout_ms * 1000000u);
  bool done = s->done;
  uv_mutex_unlock(&s->lock);
  return done;
}

void pb_steps_stop(pb_steps *s) {
  uv_mutex_lock(&s->lock);
  /* An interrupted run's window ends now: the stage counters ran until now too. */
  if (s->window_open && !s->done) s->window_end_ns = pb_now_ns();
  finish_locked(s);
  uv_mutex_unlock(&s->lock);
}

/* Batches dealt to a device that stopped before stepping them: released, and their samples counted
 * (the accounting's queued samples). */
static void drain_fifos(pb_steps *s) {
  for (int i = 0; i < PB_MAX_DEVICES; i++) {
    pb_elem b;
    while (fifo_take(&s->fifo[i], &b)) {
      s->samples_undelivered += b.nsamples;
      pb_device_discard(s->device, &b);
      pb_buf_release(b.buf);
    }
  }
}

void pb_steps_join(pb_steps *s) {
  for (int i = 0; i < s->threads_started; i++) uv_thread_join(&s->threads[i].thread);
  s->threads_started = 0;
  drain_fifos(s);
}

size_t pb_steps_count(pb_steps *s) {
  uv_mutex_lock(&s->lock);
  size_t n = s->n;
  uv_mutex_unlock(&s->lock);
  return n;
}

void pb_steps_close(pb_steps *s) {
  for (int i = 0; i < PB_MAX_DEVICES; i++) free(s->fifo[i].v);
  uv_cond_destroy(&s->dealt);
  uv_cond_destroy(&s->changed);
  uv_mutex_destroy(&s->lock);
  pb_steps_free_record(s);
}

void pb_steps_get_live(pb_steps *s, pb_steps_live *out) {
  uv_mutex_lock(&s->lock);
  *out = (pb_steps_live){.done = s->n,
                         .warmup = s->warmup,
                         .target = s->target,
                         .duration_ns = s->duration_ns,
                         .measuring = s->window_open,
                         .window_start_ns = s->window_start_ns,
                         .measured = s->measured_count,
                         .measured_samples = s->measured_samples,
                         .measured_compute_ns = s->measured_compute_ns,
                         .devices = s->device && s->device->count > 0 ? s->device->count : 1};
  uv_mutex_unlock(&s->lock);
}

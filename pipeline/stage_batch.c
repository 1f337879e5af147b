/* `batch`: collates `size` samples into one contiguous buffer (a real copy, as a framework's collate
 * does, with streaming stores: nothing on this core reads the batch again), taken from a pool sized so
 * that every buffer the downstream stages can hold exists up front.
 * Each worker fills its own batch.  At end of data a partial batch is dropped (drop_remainder, counted)
 * or handed on short. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "engine.h"

typedef struct batch_worker batch_worker;

typedef struct batch_state {
  pb_pool pool;
  size_t batch_bytes;
  bool pool_ready;
  /* End of data: the workers' partial batches are merged here so that, as with one thread, at most one
   * remainder is dropped or handed on short. */
  uv_mutex_t merge_lock;
  batch_worker *leftover;       /* a partial batch waiting for more samples */
  int workers_flushed;
} batch_state;

struct batch_worker {
  pb_buf *cur;
  uint32_t *sizes;   /* bytes of each sample in the batch (samples may differ in size) */
  size_t used_bytes;
  uint32_t count;
  uint64_t first_id;
  uint64_t batch_id; /* given when the batch starts (trace: membership) */
  uint32_t epoch;
};

/* Buffers that can be out at once: one partial per batch worker, plus every queue slot and every
 * thread (holding one) downstream, plus one per device. */
static int pool_buffers(const pb_stage *s) {
  const pb_engine *e = s->engine;
  int n = s->threads + pb_stage_out_capacity(s);
  for (int i = s->index + 1; i < e->nstages; i++)
    n += e->stages[i].threads + pb_stage_out_capacity(&e->stages[i]);
  return n + e->consumers;
}

static size_t batch_bytes(const pb_stage *s) { return (size_t)s->sample_bytes; }

static uint64_t batch_memory(const pb_stage *s) { return (uint64_t)pool_buffers(s) * batch_bytes(s); }

static void free_workers(const pb_stage *s, batch_worker *ws) {
  for (int k = 0; ws && k < s->threads; k++) free(ws[k].sizes);
  free(ws);
}

/* On a GPU the pool is pinned host memory (the device's allocator), so batches are collated straight
 * into memory the copy engine can read by DMA. */
static int pinned_failed(const pb_stage *s, batch_state *st, batch_worker *ws, pb_err *err) {
  const pb_device *dev = s->engine->device;
  int n = pool_buffers(s);
  free(st);
  free_workers(s, ws);
  return pb_err_set(err,
                    "cannot allocate %d pinned batch buffers of %zu bytes (%.1f MB in all): %s (expected less: "
                    "lower the prefetch depth or the batch size, or set stages.<h2d>.pinned=false)",
                    n, batch_bytes(s), (double)n * (double)batch_bytes(s) / 1e6, dev->error),
         -ENOMEM;
}

/* Everything that can fail (the workers' size arrays, then the pool) comes before anything that needs
 * undoing (the mutex, the workers' state pointers), so a failure frees what it allocated and no more. */
static int batch_init(pb_stage *s, pb_err *err) {
  batch_state *st = calloc(1, sizeof *st);
  batch_worker *ws = calloc((size_t)s->threads, sizeof *ws);
  if (!st || !ws) goto oom;
  for (int k = 0; k < s->threads; k++)
    if (!(ws[k].sizes = malloc((size_t)s->cfg->size * sizeof *ws[k].sizes))) goto oom;
  st->batch_bytes = batch_bytes(s);
  const pb_device *dev = s->engine->device;
  const pb_pool_mem *mem = dev && dev->pinned_host ? &dev->host_mem : NULL;
  /* 4096-byte alignment: what O_DIRECT and pinned-memory registration want. */
  if (pb_pool_init_mem(&st->pool, pool_buffers(s), st->batch_bytes, 4096, mem) != 0) {
    if (mem) return pinned_failed(s, st, ws, err);
    goto oom;
  }
  st->pool_ready = true;
  uv_mutex_init(&st->merge_lock);
  for (int k = 0; k < s->threads; k++) s->workers[k].state = &ws[k];
  s->state = st;
  return 0;
oom:
  free(st);
  free_workers(s, ws);
  return pb_err_set(err, "out of memory for %d batch buffers of %zu bytes", pool_buffers(s), batch_bytes(s)),
         -ENOMEM;
}

static int emit_batch(pb_worker *w, batch_worker *b) {
  pb_elem batch = {.id = b->first_id,
                   .batch_id = b->batch_id,
                   .data = b->cur->data,
                   .bytes = b->used_bytes,
                   .buf = b->cur,
                   .nsamples = b->count,
                   .epoch = b->epoch,
                   .file_index = PB_NO_FILE};
  b->cur = NULL;
  b->count = 0;
  b->used_bytes = 0;
  atomic_fetch_add_explicit(&w->stage->engine->batches_made, 1, memory_order_relaxed);
  return pb_emit(w, &batch);
}

static int batch_process(pb_worker *w, pb_elem *in) {
  batch_state *st = w->stage->state;
  batch_worker *b = w->state;
  /* Samples can differ in size (record_bytes_stdev): a batch buffer grows to the largest batch seen,
   * during warm-up, and is reused from then on. */
  if (b->cur && b->used_bytes + in->bytes > b->cur->capacity_bytes &&
      pb_buf_grow(b->cur, (b->used_bytes + in->bytes) * 5 / 4, b->used_bytes)) {
    pb_worker_error(w, in, NULL, "out of memory for a batch buffer", true);
    return 0;
  }
  if (!b->cur) {
    b->cur = pb_worker_get_buf(w, &st->pool);
    if (!b->cur) {
      pb_worker_abandon(w, in);
      return -ECANCELED;
    }
    /* Planned size, or (shape unknown until the first sample) room for `size` samples like this one. */
    size_t need = PB_MAX(st->batch_bytes, (size_t)w->stage->cfg->size * in->bytes);
    if (pb_buf_reserve(b->cur, need)) {
      pb_worker_error(w, in, NULL, "out of memory for a batch buffer", true);
      return 0;
    }
    b->first_id = in->id;
    b->epoch = in->epoch;
    /* Numbered when started, so the trace can record each sample's batch as it joins. */
    b->batch_id = atomic_fetch_add(&w->stage->engine->next_batch_id, 1);
  }
  pb_worker_trace_joined(w, b->batch_id);
  pb_copy_streaming((char *)b->cur->data + b->used_bytes, in->data, in->bytes);
  b->used_bytes += in->bytes;
  b->sizes[b->count++] = (uint32_t)in->bytes;
  pb_buf_release(in->buf);
  return b->count == (uint32_t)w->stage->cfg->size ? emit_batch(w, b) : 0;
}

/* Moves samples from the end of `from` into `to` until `to` is full or `from` is empty. */
static int move_samples(batch_worker *to, batch_worker *from, uint32_t size) {
  while (from->count && to->count < size) {
    uint32_t bytes = from->sizes[--from->count];
    from->used_bytes -= bytes;
    if (pb_buf_grow(to->cur, to->used_bytes + bytes, to->used_bytes)) return -ENOMEM;
    memcpy((char *)to->cur->data + to->used_bytes, (char *)from->cur->data + from->used_bytes, bytes);
    to->used_bytes += bytes;
    to->sizes[to->count++] = bytes;
  }
  return 0;
}

/* The last flush decides the final remainder: hand it on short, or drop it (counted). */
static int finish_remainder(pb_worker *w, batch_worker *b) {
  if (!w->stage->cfg->drop_remainder) return emit_batch(w, b);
  w->ctr.samples_dropped_total += b->count;
  pb_buf_release(b->cur);
  b->cur = NULL;
  b->count = 0;
  return 0;
}

/* Under merge_lock: folds this worker's partial batch into the shared leftover; full batches go on. */
static int merge_partial(pb_worker *w, batch_state *st, batch_worker *b) {
  uint32_t size = (uint32_t)w->stage->cfg->size;
  if (b->cur && st->leftover && st->leftover->cur) {
    if (move_samples(st->leftover, b, size)) return -ENOMEM;
    if (st->leftover->count == size && emit_batch(w, st->leftover) < 0) return -ECANCELED;
    if (b->count == 0) {
      pb_buf_release(b->cur);
      b->cur = NULL;
    }
  }
  if (b->cur && (!st->leftover || !st->leftover->cur)) st->leftover = b; /* adopt what remains */
  return 0;
}

static int batch_flush(pb_worker *w) {
  batch_state *st = w->stage->state;
  batch_worker *b = w->state;
  uv_mutex_lock(&st->merge_lock);
  int rc = merge_partial(w, st, b);
  bool last = ++st->workers_flushed == w->stage->threads;
  if (!rc && last && st->leftover && st->leftover->cur) rc = finish_remainder(w, st->leftover);
  uv_mutex_unlock(&st->merge_lock);
  return rc;
}

static uint64_t release_partial(batch_worker *b) {
  uint64_t held = b->cur ? b->count : 0;
  pb_buf_release(b->cur);
  b->cur = NULL;
  b->count = 0;
  return held;
}

static uint64_t batch_abandon(pb_worker *w) {
  batch_state *st = w->stage->state;
  batch_worker *b = w->state;
  if (!b) return 0;
  /* The shared leftover (maybe another worker's, adopted at its flush) is ended by whoever is
   * cancelled first: a worker that was cancelled never flushed, so the remainder would never come. */
  uv_mutex_lock(&st->merge_lock);
  uint64_t held = 0;
  if (st->leftover && st->leftover != b) held += release_partial(st->leftover);
  st->leftover = NULL;
  held += release_partial(b);
  uv_mutex_unlock(&st->merge_lock);
  return held;
}

static void batch_cancel(pb_stage *s) {
  batch_state *st = s->state;
  if (st->pool_ready) pb_pool_cancel(&st->pool);
}

static void batch_close(pb_stage *s) {
  batch_state *st = s->state;
  if (!st) return;
  if (st->pool_ready) {
    pb_pool_close(&st->pool);
    uv_mutex_destroy(&st->merge_lock);
  }
  if (s->workers) {
    for (int k = 0; k < s->threads; k++) {
      batch_worker *b = s->workers[k].state;
      if (b) free(b->sizes);
    }
    free(s->workers[0].state);
  }
  free(st);
  s->state = NULL;
}

const pb_stage_ops pb_stage_batch_ops = {
    .type = "batch",
    .memory_bytes = batch_memory,
    .init = batch_init,
    .process = batch_process,
    .flush = batch_flush,
    .abandon = batch_abandon,
    .cancel = batch_cancel,
    .close = batch_close,
};

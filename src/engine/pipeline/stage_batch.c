/* `batch`: collates `size` samples into one contiguous buffer (a real copy, as a framework's collate
 * does, with streaming stores: nothing on this core reads the batch again), taken from a pool sized so
 * that every buffer the downstream stages can hold exists up front.
 * Each worker fills its own batch.  At end of data a partial batch is dropped (drop_remainder, counted)
 * or handed on short.
 *
 * With fuse_map (stage_batch.h) there is no copy: the map's workers take slots in a shared forming batch
 * and write their results there; the batch stage counts the samples as they arrive and hands a batch on
 * when every slot taken in it has arrived.  A sample the map failed on after taking its slot arrives as a
 * gap (slot_error): counted as an error here, and the batch is closed up over it before it goes on. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "account.h"
#include "engine.h"
#include "sat.h"
#include "stage_batch.h"

typedef struct batch_worker batch_worker;

/* fuse_map: a batch whose slots the map's workers are filling. */
typedef struct forming {
  pb_buf *buf;
  uint32_t taken, arrived, gaps; /* slots handed out; samples arrived; slots whose sample failed */
  uint32_t *gap_slots;           /* the gaps' slot numbers (size entries) */
  uint64_t first_id, batch_id;
  uint32_t epoch;
  bool in_use;
} forming;

typedef struct batch_state {
  pb_pool pool;
  size_t batch_bytes;
  bool pool_ready;
  /* End of data: the workers' partial batches are merged here so that, as with one thread, at most one
   * remainder is dropped or handed on short. */
  uv_mutex_t merge_lock;
  batch_worker *leftover;       /* a partial batch waiting for more samples */
  int workers_flushed;
  /* fuse_map: forming batches, one record per pool buffer (each holds one while in use) */
  bool in_place;
  size_t slot_bytes;
  uv_mutex_t slot_lock;         /* the records, `open`, `abandoned` */
  forming *forming;
  int nforming;
  forming *open;                /* the batch whose slots are being taken; NULL: the next take starts one */
  bool abandoned;               /* the run was cancelled: no more slots, arrivals count in flight */
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

static bool in_place(const pb_stage *s) {
  return s->index > 0 && pb_map_writes_into_batch(&s->engine->stages[s->index - 1]);
}

/* fuse_map: batches that can be forming at once.  A slot is taken before the map's work on the sample
 * and freed when the sample reaches this stage, so the taken-but-not-arrived samples are at most those
 * the map's workers hold (one in work, a chunk of outputs each), its output queue and this stage's
 * workers' input chunks; they span that many samples' worth of batches, plus the open one. */
static int forming_buffers(const pb_stage *s, pb_queue_fill fill) {
  if (!in_place(s)) return 0;
  const pb_stage *map = &s->engine->stages[s->index - 1];
  int64_t size = s->cfg->size;
  int64_t held = (int64_t)map->threads * (pb_chunk_in_hand(map->out_chunk, fill) + 1) + pb_queue_slots(map, fill) +
                 (int64_t)s->threads * pb_chunk_in_hand(s->chunk, fill);
  return (int)((held + size - 1) / size) + 2;
}

/* Buffers that can be out at once: one partial per batch worker, plus every queue slot and every
 * thread (holding one) downstream, plus one per device; with fuse_map, the forming batches. */
static int pool_buffers(const pb_stage *s, pb_queue_fill fill) {
  const pb_engine *e = s->engine;
  int n = s->threads + pb_queue_slots(s, fill);
  for (int i = s->index + 1; i < e->nstages; i++) n += e->stages[i].threads + pb_queue_slots(&e->stages[i], fill);
  return n + e->consumers + forming_buffers(s, fill);
}

static size_t batch_bytes(const pb_stage *s) { return (size_t)s->sample_bytes; }

static uint64_t batch_memory(const pb_stage *s, pb_queue_fill fill) {
  return pb_sat_mul_u64((uint64_t)pool_buffers(s, fill), batch_bytes(s));
}

static void free_workers(const pb_stage *s, batch_worker *ws) {
  for (int k = 0; ws && k < s->threads; k++) free(ws[k].sizes);
  free(ws);
}

static void free_forming(batch_state *st) {
  for (int i = 0; st->forming && i < st->nforming; i++) free(st->forming[i].gap_slots);
  free(st->forming);
  st->forming = NULL;
}

/* fuse_map: a record per pool buffer, so that whoever holds a fresh buffer finds a free one. */
static int init_forming(const pb_stage *s, batch_state *st) {
  if (!in_place(s)) return 0;
  st->in_place = true;
  st->slot_bytes = (size_t)s->engine->stages[s->index - 1].sample_bytes;
  st->nforming = pool_buffers(s, PB_QUEUES_FULL);
  if (!(st->forming = calloc((size_t)st->nforming, sizeof *st->forming))) return -ENOMEM;
  for (int i = 0; i < st->nforming; i++)
    if (!(st->forming[i].gap_slots = malloc((size_t)s->cfg->size * sizeof(uint32_t)))) return -ENOMEM;
  return 0;
}

/* On a GPU the pool is pinned host memory (the device's allocator), so batches are collated straight
 * into memory the copy engine can read by DMA. */
static int pinned_failed(const pb_stage *s, batch_state *st, batch_worker *ws, pb_err *err) {
  const pb_device *dev = s->engine->device;
  int n = pool_buffers(s, PB_QUEUES_FULL);
  free_forming(st);
  free(st);
  free_workers(s, ws);
  return pb_err_setc(err, -ENOMEM,
                     "cannot allocate %d pinned batch buffers of %zu bytes (%.1f MB in all): %s (expected less: "
                     "lower the prefetch depth or the batch size, or set stages.<h2d>.pinned=false)",
                     n, batch_bytes(s), (double)n * (double)batch_bytes(s) / 1e6, dev->error);
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
  if (init_forming(s, st)) goto oom;
  const pb_device *dev = s->engine->device;
  const pb_pool_mem *mem = dev && dev->pinned_host ? &dev->host_mem : NULL;
  /* 4096-byte alignment: what O_DIRECT and pinned-memory registration want. */
  if (pb_pool_init_mem(&st->pool, pool_buffers(s, PB_QUEUES_FULL), st->batch_bytes, 4096, mem) != 0) {
    if (mem) return pinned_failed(s, st, ws, err);
    goto oom;
  }
  st->pool_ready = true;
  uv_mutex_init(&st->merge_lock);
  uv_mutex_init(&st->slot_lock);
  for (int k = 0; k < s->threads; k++) s->workers[k].state = &ws[k];
  s->state = st;
  return 0;
oom:
  if (st) free_forming(st);
  free(st);
  free_workers(s, ws);
  return pb_err_setc(err, -ENOMEM, "out of memory for %d batch buffers of %zu bytes", pool_buffers(s, PB_QUEUES_FULL),
                     batch_bytes(s));
}

/* Every batch handed on, copied or formed in place, is counted (a flood of errors with none is a broken run). */
static int emit_formed(pb_worker *w, pb_elem *batch) {
  atomic_fetch_add_explicit(&w->stage->engine->batches_made, 1, memory_order_relaxed);
  return pb_emit(w, batch);
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
  return emit_formed(w, &batch);
}

/* ---------- fuse_map: slots in a forming batch ---------- */

bool pb_map_writes_into_batch(const pb_stage *map) {
  const pb_engine *e = map->engine;
  if (!map->cfg || map->cfg->type != PB_STAGE_MAP || map->index + 1 >= e->nstages) return false;
  const pb_stage *next = &e->stages[map->index + 1];
  return next->cfg && next->cfg->type == PB_STAGE_BATCH && pb_config_batch_in_place(e->cfg, e->synthetic);
}

static void *slot_data(const batch_state *st, const forming *f, uint32_t slot) {
  return (char *)f->buf->data + (size_t)slot * st->slot_bytes;
}

/* Under slot_lock: a free record takes `buf` as the open batch; `in` is its first sample. */
static void open_forming(pb_engine *e, batch_state *st, pb_buf *buf, const pb_elem *in) {
  forming *f = NULL;
  for (int i = 0; i < st->nforming && !f; i++)
    if (!st->forming[i].in_use) f = &st->forming[i];
  /* every record in use holds a pool buffer other than `buf`, and there are as many records as buffers */
  f->buf = buf;
  f->taken = f->arrived = f->gaps = 0;
  f->first_id = in->id;
  f->epoch = in->epoch;
  f->batch_id = atomic_fetch_add(&e->next_batch_id, 1);
  f->in_use = true;
  st->open = f;
}

void *pb_batch_take_slot(pb_worker *w, pb_stage *batch, const pb_elem *in, void **owner) {
  batch_state *st = batch->state;
  uv_mutex_lock(&st->slot_lock);
  while (!st->open && !st->abandoned) {
    uv_mutex_unlock(&st->slot_lock);
    /* outside the lock: the wait is for the device to hand a batch buffer back */
    pb_buf *buf = pb_worker_get_buf(w, &st->pool);
    if (!buf) return NULL;
    if (pb_buf_reserve(buf, (size_t)batch->cfg->size * st->slot_bytes)) {
      pb_buf_release(buf);
      return NULL;
    }
    uv_mutex_lock(&st->slot_lock);
    if (!st->open && !st->abandoned)
      open_forming(batch->engine, st, buf, in);
    else
      pb_buf_release(buf); /* another worker started one meanwhile */
  }
  if (st->abandoned) {
    uv_mutex_unlock(&st->slot_lock);
    return NULL;
  }
  forming *f = st->open;
  uint32_t slot = f->taken++;
  if (f->taken == (uint32_t)batch->cfg->size) st->open = NULL;
  /* under the lock: a cancel (abandon_forming) may release f->buf as soon as it is let go */
  void *data = slot_data(st, f, slot);
  uv_mutex_unlock(&st->slot_lock);
  *owner = f;
  return data;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

void pb_batch_close_gaps(void *base, size_t slot_bytes, uint32_t taken, uint32_t *gap_slots, uint32_t gaps) {
  qsort(gap_slots, gaps, sizeof *gap_slots, cmp_u32);
  uint32_t samples = taken - gaps;
  uint32_t from = taken, top = gaps; /* gap_slots[top - 1]: the highest gap `from` has not passed yet */
  for (uint32_t i = 0; i < gaps && gap_slots[i] < samples; i++) {
    for (;;) { /* the highest slot below `from` that holds a sample */
      from--;
      if (top > 0 && gap_slots[top - 1] == from) {
        top--;
        continue;
      }
      break;
    }
    memcpy((char *)base + (size_t)gap_slots[i] * slot_bytes, (char *)base + (size_t)from * slot_bytes, slot_bytes);
  }
}

/* Under slot_lock: f, complete or the final remainder, becomes a batch element (empty: nsamples 0) and
 * its record is free again. */
static pb_elem take_forming(batch_state *st, forming *f) {
  if (f->gaps) pb_batch_close_gaps(f->buf->data, st->slot_bytes, f->taken, f->gap_slots, f->gaps);
  pb_elem batch = {.id = f->first_id,
                   .batch_id = f->batch_id,
                   .data = f->buf->data,
                   .bytes = (size_t)f->arrived * st->slot_bytes,
                   .buf = f->buf,
                   .nsamples = f->arrived,
                   .epoch = f->epoch,
                   .file_index = PB_NO_FILE};
  f->buf = NULL;
  f->in_use = false;
  if (st->open == f) st->open = NULL;
  return batch;
}

/* A sample whose payload is already in its slot (or a gap) arrives; the last one of a batch hands it on. */
static int arrive(pb_worker *w, batch_state *st, pb_elem *in) {
  forming *f = in->in_batch;
  uv_mutex_lock(&st->slot_lock);
  if (st->abandoned) { /* f's buffer went back already */
    uv_mutex_unlock(&st->slot_lock);
    pb_worker_abandon(w, in);
    return -ECANCELED;
  }
  if (in->slot_error) {
    f->gap_slots[f->gaps++] = (uint32_t)(((char *)in->data - (char *)f->buf->data) / st->slot_bytes);
  } else {
    pb_worker_trace_joined(w, f->batch_id);
    f->arrived++;
  }
  bool complete = f->taken == (uint32_t)w->stage->cfg->size && f->arrived + f->gaps == f->taken;
  pb_elem batch = {0};
  if (complete) batch = take_forming(st, f);
  uv_mutex_unlock(&st->slot_lock);
  if (in->slot_error) {
    pb_engine *e = w->stage->engine;
    char msg[PB_NAME_LEN + 160];
    snprintf(msg, sizeof msg, "stage %s: %s", e->stages[w->stage->index - 1].name, in->slot_error);
    pb_worker_error(w, in, pb_engine_file_path(e, in->file_index), msg, false);
  }
  if (!complete) return 0;
  if (batch.nsamples == 0) { /* every sample in it failed */
    pb_buf_release(batch.buf);
    return 0;
  }
  return emit_formed(w, &batch);
}

/* The last flush: every sample has arrived, so the open batch is the remainder. */
static int finish_in_place(pb_worker *w, batch_state *st) {
  uv_mutex_lock(&st->slot_lock);
  pb_elem batch = {0};
  bool have = st->open != NULL;
  if (have) batch = take_forming(st, st->open);
  uv_mutex_unlock(&st->slot_lock);
  if (!have) return 0;
  if (batch.nsamples == 0 || w->stage->cfg->drop_remainder) {
    pb_count_dropped(w, batch.nsamples);
    pb_buf_release(batch.buf);
    return 0;
  }
  return emit_formed(w, &batch);
}

/* Cancelled: the forming batches' arrived samples are in flight here (counted once, by the first
 * worker to abandon), their buffers go back; later arrivals and takes find `abandoned`. */
static uint64_t abandon_forming(batch_state *st) {
  uint64_t held = 0;
  uv_mutex_lock(&st->slot_lock);
  if (!st->abandoned)
    for (int i = 0; i < st->nforming; i++) {
      forming *f = &st->forming[i];
      if (!f->in_use) continue;
      held += f->arrived;
      pb_buf_release(f->buf);
      f->buf = NULL;
      f->in_use = false;
    }
  st->abandoned = true;
  st->open = NULL;
  uv_mutex_unlock(&st->slot_lock);
  return held;
}

/* ---------- collating by copy ---------- */

static int batch_process(pb_worker *w, pb_elem *in) {
  batch_state *st = w->stage->state;
  batch_worker *b = w->state;
  if (in->in_batch) return arrive(w, st, in);
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
  pb_count_dropped(w, b->count);
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
  if (!rc && last && st->in_place) rc = finish_in_place(w, st);
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
  if (st->in_place) held += abandon_forming(st);
  return held;
}

static void batch_cancel(pb_stage *s) {
  batch_state *st = s->state;
  if (st->pool_ready) pb_pool_cancel(&st->pool);
}

static void batch_close(pb_stage *s) {
  batch_state *st = s->state;
  if (!st) return;
  for (int i = 0; st->forming && i < st->nforming; i++) /* a run that stopped before its batches formed */
    if (st->forming[i].in_use) pb_buf_release(st->forming[i].buf);
  free_forming(st);
  if (st->pool_ready) {
    pb_pool_close(&st->pool);
    uv_mutex_destroy(&st->merge_lock);
    uv_mutex_destroy(&st->slot_lock);
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

/* on_demand: a batch starts only when its consumer asks (pb_queue_set_ahead's 0). */
static int batch_ahead_limit(const pb_stage *s) { return s->cfg->on_demand ? 0 : -1; }

/* The samples this worker's batch still lacks (it reserves the batch's slot before taking the first). */
static int batch_inputs_wanted(const pb_worker *w) {
  const batch_worker *b = w->state;
  return (int)((uint32_t)w->stage->cfg->size - b->count);
}

const pb_stage_ops pb_stage_batch_ops = {
    .type = "batch",
    .desc = &pb_stage_desc_batch,
    .memory_bytes = batch_memory,
    .ahead_limit = batch_ahead_limit,
    .inputs_wanted = batch_inputs_wanted,
    .init = batch_init,
    .process = batch_process,
    .flush = batch_flush,
    .abandon = batch_abandon,
    .cancel = batch_cancel,
    .close = batch_close,
};

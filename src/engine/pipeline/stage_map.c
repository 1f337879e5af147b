/* `map`: applies its ops to each sample in order (docs/CONTRACT.md §2).
 *
 * Image ops (ops/ops.h) run on the decoded image: random_resized_crop, resize, center_crop, flip,
 * normalize, to_chw.  Ops that make a new image write into one of two per-worker scratch buffers, the
 * last of them straight into a buffer from this stage's pool (so the result is not copied again);
 * flip works in place.  A map that ends in flip, normalize (to float, on the host) and to_chw runs those
 * as one pass (pb_flip_normalize_chw; the same values).  `spin` burns CPU for `us` microseconds and
 * `sleep` waits without CPU: the emulation ops.  A map of emulation ops only (or none) hands the
 * sample's own buffer on. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "sat.h"
#include "ops.h"
#include "stage_batch.h"

typedef struct map_state {
  pb_pool pool;
  bool pool_ready;
  pb_stage *into_batch;  /* fuse_map: the batch stage whose slots take the results (NULL: the pool does) */
  int last_new_image; /* index of the last op that makes a new image, -1 when none */
  int tail;           /* first op of a flip/normalize/to_chw tail run as one pass (run_fused_tail), -1: none */
} map_state;

typedef struct map_worker {
  void *scratch[2];
  size_t scratch_bytes[2];
  void *resample;
  size_t resample_bytes;
} map_worker;

static int last_new_image(const pb_stage_cfg *sc) {
  int last = -1;
  for (int i = 0; i < sc->nops; i++)
    if (pb_op_makes_new_image(&sc->ops[i])) last = i;
  return last;
}

/* The ops from `tail` to the end are flips, one normalize to float on the host and at most one to_chw:
 * those commute (each output value is the table value of one mirrored input pixel), so
 * pb_flip_normalize_chw does them in one pass over the image instead of one pass each.  -1 when the ops
 * do not end that way. */
static int fusable_tail(const pb_stage_cfg *sc) {
  int tail = sc->nops, norms = 0, chws = 0;
  for (; tail > 0; tail--) {
    const pb_op_cfg *op = &sc->ops[tail - 1];
    int norm = op->kind == PB_OP_NORMALIZE && !op->on_device && op->dtype != PB_DTYPE_UINT8;
    int chw = op->kind == PB_OP_TO_CHW;
    if (!(norm || chw || op->kind == PB_OP_FLIP) || norms + norm > 1 || chws + chw > 1) break;
    norms += norm;
    chws += chw;
  }
  return norms == 1 ? tail : -1;
}

/* A pool is needed when the map makes new images, or flips (a shared payload, e.g. a cache replay, is
 * flipped into a pooled copy, never in place). */
static bool needs_pool(const pb_stage_cfg *sc) {
  for (int i = 0; i < sc->nops; i++)
    if (sc->ops[i].kind == PB_OP_FLIP || pb_op_makes_new_image(&sc->ops[i])) return true;
  return false;
}

/* With fuse_map the results live in the batch stage's buffers (it plans them), not in a pool here. */
static uint64_t map_memory(const pb_stage *s, pb_queue_fill fill) {
  if (pb_map_writes_into_batch(s)) return 0;
  return needs_pool(s->cfg) ? pb_sat_mul_u64((uint64_t)pb_stage_pool_buffers(s, fill), s->sample_bytes) : 0;
}

static int map_init(pb_stage *s, pb_err *err) {
  map_state *st = calloc(1, sizeof *st);
  map_worker *ws = calloc((size_t)s->threads, sizeof *ws);
  if (!st || !ws) {
    free(st);
    free(ws);
    return pb_err_setc(err, -ENOMEM, "out of memory for stage %s", s->name);
  }
  st->last_new_image = last_new_image(s->cfg);
  st->tail = fusable_tail(s->cfg);
  if (pb_map_writes_into_batch(s)) {
    st->into_batch = &s->engine->stages[s->index + 1];
  } else if (needs_pool(s->cfg)) {
    if (pb_pool_init(&st->pool, pb_stage_pool_buffers(s, PB_QUEUES_FULL), 0, 64)) {
      free(st);
      free(ws);
      return pb_err_setc(err, -ENOMEM, "out of memory for stage %s's buffers", s->name);
    }
    st->pool_ready = true;
  }
  for (int k = 0; k < s->threads; k++) s->workers[k].state = &ws[k];
  s->state = st;
  return 0;
}

/* Grows *buf to at least bytes (steady state: never, once the largest image has been seen).  To a size
 * class (pool.h), as pooled buffers do: random crops ask for a new record size now and then all run long,
 * and growing to the byte left a trail of slightly-too-small holes in the heap. */
static void *grow(void **buf, size_t *have, size_t bytes) {
  if (*have >= bytes) return *buf;
  bytes = pb_buf_size_class(bytes);
  void *p = realloc(*buf, bytes);
  if (!p) return NULL;
  *buf = p;
  *have = bytes;
  return p;
}

static pb_image view_of(const pb_elem *e) {
  return (pb_image){.data = e->data, .height = e->height, .width = e->width, .channels = e->channels,
                    .dtype = (pb_dtype)e->dtype, .chw = e->chw};
}

/* The output image of `op` on `in` (dims, dtype, layout), without data. */
static pb_image out_dims(const pb_op_cfg *op, const pb_image *in) {
  pb_image out = *in;
  out.data = NULL;
  if (op->kind == PB_OP_RANDOM_RESIZED_CROP || op->kind == PB_OP_CENTER_CROP)
    out.height = out.width = (int)op->size;
  else if (op->kind == PB_OP_RESIZE)
    pb_resize_shorter_dims(in->height, in->width, (int)op->size, &out.height, &out.width);
  else if (op->kind == PB_OP_NORMALIZE && !op->on_device && op->dtype != PB_DTYPE_UINT8)
    out.dtype = op->dtype;
  else if (op->kind == PB_OP_TO_CHW)
    out.chw = true;
  return out;
}

typedef struct map_ctx {
  pb_worker *w;
  pb_elem *in;
  pb_buf *out_buf; /* the pooled result, once the last new-image op has run */
  void *slot_owner; /* fuse_map: the forming batch the result's slot is in */
  void *slot;       /* fuse_map: that slot */
  pb_image cur;
  int next_scratch;
  bool cancelled, wrong_size;
  char too_big[120]; /* an op's result over PB_MAX_SIDE: which op, what it would have made */
} map_ctx;

/* A sample carries 16-bit sides (the config refuses larger results when it knows the input's size). */
#define PB_MAX_SIDE 65535

/* fuse_map: the result goes into the next slot of the batch being formed. */
static void *batch_slot(map_ctx *c, size_t bytes) {
  map_state *st = c->w->stage->state;
  if (bytes != c->w->stage->sample_bytes) { /* a slot holds the planned bytes, every result's: a bug if not */
    c->wrong_size = true;
    return NULL;
  }
  c->slot = pb_batch_take_slot(c->w, st->into_batch, c->in, &c->slot_owner);
  if (!c->slot) c->cancelled = true; /* a take fails only when the run is cancelled */
  return c->slot;
}

/* Why destination(), pooled() or batch_slot() gave no buffer. */
static int no_buffer(const map_ctx *c) { return c->cancelled ? -ECANCELED : c->wrong_size ? -EMSGSIZE : -ENOMEM; }

/* The pooled buffer the map's result goes into (NULL: cancelled, or out of memory; c->cancelled says). */
static void *pooled(map_ctx *c, size_t bytes) {
  map_state *st = c->w->stage->state;
  if (st->into_batch) return batch_slot(c, bytes);
  c->out_buf = pb_worker_get_buf(c->w, &st->pool);
  if (!c->out_buf) {
    c->cancelled = true; /* a pool wait fails only when the run is cancelled */
    return NULL;
  }
  return pb_buf_reserve(c->out_buf, bytes) ? NULL : c->out_buf->data;
}

/* Where op k writes: the pooled output for the last new-image op, else the other scratch buffer. */
static void *destination(map_ctx *c, int k, size_t bytes) {
  map_state *st = c->w->stage->state;
  map_worker *mw = c->w->state;
  if (k == st->last_new_image) return pooled(c, bytes);
  int i = c->next_scratch;
  c->next_scratch ^= 1;
  return grow(&mw->scratch[i], &mw->scratch_bytes[i], bytes);
}

/* random_resized_crop and resize: plain 2x2-tap bilinear, or Pillow's antialiased filter. */
static pb_resample resample_of(const pb_op_cfg *op) {
  return op->antialias ? PB_RESAMPLE_BILINEAR_AA : PB_RESAMPLE_BILINEAR;
}

/* The decode stage (fused_crop) already cut the crop this op draws, all its rows and its columns from
 * crop_x on: the same draw keeps the random sequence of the ops after it, and only the resize is left. */
static int resize_precropped(map_ctx *c, const pb_op_cfg *op, pb_image *out, void *scratch) {
  int d, r[4]; /* the region decode cut, at the DCT scale it chose (crop_denom) */
  pb_fused_crop_region(&c->w->rng, c->in->full_height, c->in->full_width, op, c->in->crop_denom > 1, &d, r);
  int w = r[2], h = r[3];
  if (d != PB_MAX(c->in->crop_denom, 1) || h != c->cur.height || c->in->crop_x + w > c->cur.width)
    return -EINVAL; /* decode drew another crop: a bug */
  return pb_crop_resize(&c->cur, 0, c->in->crop_x, h, w, out, resample_of(op), scratch);
}

static int run_new_image_op(map_ctx *c, const pb_op_cfg *op, int k) {
  map_worker *mw = c->w->state;
  pb_image out = out_dims(op, &c->cur);
  /* before allocating it: a resize of a thin image (65000x1 to a shorter side of 224) would ask for GBs */
  if (out.height > PB_MAX_SIDE || out.width > PB_MAX_SIDE) {
    snprintf(c->too_big, sizeof c->too_big, "op %d (resize) would make a %dx%d image of this %dx%d one", k, out.width,
             out.height, c->cur.width, c->cur.height);
    return -E2BIG;
  }
  if (!(out.data = destination(c, k, pb_image_bytes(&out)))) return no_buffer(c);
  size_t need = pb_crop_resize_scratch_bytes(&c->cur, c->cur.height, c->cur.width, out.height, out.width,
                                             resample_of(op));
  void *rs = grow(&mw->resample, &mw->resample_bytes, need ? need : 1);
  if (!rs) return -ENOMEM;
  int rc = 0;
  switch (op->kind) {
    case PB_OP_RANDOM_RESIZED_CROP:
      rc = k == 0 && c->in->full_width ? resize_precropped(c, op, &out, rs)
                                       : pb_random_resized_crop(&c->cur, &c->w->rng, op->scale, op->ratio, &out,
                                                                resample_of(op), rs, NULL);
      break;
    case PB_OP_RESIZE: rc = pb_resize(&c->cur, &out, resample_of(op), rs); break;
    case PB_OP_CENTER_CROP: rc = pb_center_crop(&c->cur, &out); break;
    case PB_OP_NORMALIZE:
      rc = pb_normalize(&c->cur, &out, op->mean, op->nmean, op->std, op->nstd, op->dtype);
      break;
    case PB_OP_TO_CHW: rc = pb_to_chw(&c->cur, &out); break;
    default: break;
  }
  c->cur = out;
  return rc < 0 ? rc : 0;
}

/* Flip mirrors in place, but never a payload shared by many samples (the in-memory source's, a cache
 * replay): that one is flipped into a copy, pooled unless a later op makes a new image anyway. */
static int run_flip(map_ctx *c, const pb_op_cfg *op, int k) {
  if (!pb_flip_draw(&c->w->rng, op->p)) return 0;
  bool shared = c->cur.data == c->in->data && !c->in->buf;
  if (!shared) return pb_hflip(&c->cur, &c->cur) < 0 ? -EINVAL : 0;
  map_state *st = c->w->stage->state;
  size_t bytes = pb_image_bytes(&c->cur);
  pb_image out = c->cur;
  if (k > st->last_new_image) {
    out.data = pooled(c, bytes);
  } else {
    map_worker *mw = c->w->state;
    out.data = grow(&mw->scratch[c->next_scratch], &mw->scratch_bytes[c->next_scratch], bytes);
    c->next_scratch ^= 1;
  }
  if (!out.data) return no_buffer(c);
  pb_hflip(&c->cur, &out);
  c->cur = out;
  return 0;
}

/* The fusable tail (ops k..end) as one pass, when the image reaching it is uint8 HWC; 1 when it was
 * not (the caller then runs the ops one by one).  The flips draw in their order, as run_flip would. */
static int run_fused_tail(map_ctx *c, int k) {
  const pb_stage_cfg *sc = c->w->stage->cfg;
  if (c->cur.dtype != PB_DTYPE_UINT8 || c->cur.chw || c->cur.channels > PB_MAX_CHANNELS) return 1;
  const pb_op_cfg *norm = NULL;
  bool flip = false, chw = false;
  for (int i = k; i < sc->nops; i++) {
    const pb_op_cfg *op = &sc->ops[i];
    if (op->kind == PB_OP_FLIP) flip ^= pb_flip_draw(&c->w->rng, op->p);
    if (op->kind == PB_OP_NORMALIZE) norm = op;
    if (op->kind == PB_OP_TO_CHW) chw = true;
  }
  pb_image out = c->cur;
  out.dtype = norm->dtype;
  out.chw = chw;
  if (!(out.data = pooled(c, pb_image_bytes(&out)))) return no_buffer(c);
  /* into a batch slot: nothing on this core reads it again, so around the cache (as the copy would) */
  int rc = (c->slot ? pb_flip_normalize_chw_stream : pb_flip_normalize_chw)(&c->cur, &out, flip, norm->mean, norm->nmean,
                                                                          norm->std, norm->nstd, norm->dtype, chw);
  c->cur = out;
  return rc < 0 ? rc : 0;
}

/* This sample's time for a spin or sleep op, ns: `us`, or drawn from its dist with mean `us` (the worker's
 * seeded generator), at most 10 s. */
#define TIMED_OP_MAX_US 1e7
static uint64_t timed_op_ns(map_ctx *c, const pb_op_cfg *op) {
  double us = (double)op->us;
  if (op->dist == PB_OP_DIST_EXPONENTIAL) {
    us = -us * log(1.0 - pb_rng_uniform(&c->w->rng));
  } else if (op->dist == PB_OP_DIST_LOGNORMAL && us > 0) {
    double mu = log(us) - op->sigma * op->sigma / 2; /* E[exp(mu + sigma Z)] = us */
    us = exp(pb_rng_normal(&c->w->rng, mu, op->sigma));
  }
  return (uint64_t)(fmin(us, TIMED_OP_MAX_US) * 1000.0);
}

/* spin and sleep (up to 10 s each) in slices of 20 ms: a stop (a signal, or an error that cancelled the
 * engine) must not wait for the rest of one.  -ECANCELED when one came. */
#define TIMED_OP_SLICE_NS 20000000ull
static int timed_op(map_ctx *c, const pb_op_cfg *op) {
  const _Atomic bool *stopped = &c->w->stage->engine->cancelled;
  uint64_t left_ns = timed_op_ns(c, op), end_ns = pb_now_ns() + left_ns; /* sleep: an absolute end */
  while (left_ns) {
    uint64_t slice_ns = PB_MIN(left_ns, TIMED_OP_SLICE_NS);
    if (op->kind == PB_OP_SPIN) pb_spin_cpu_ns(slice_ns);
    else pb_sleep_until_ns(PB_MIN(end_ns, pb_now_ns() + slice_ns));
    left_ns = op->kind == PB_OP_SPIN ? left_ns - slice_ns : end_ns > pb_now_ns() ? end_ns - pb_now_ns() : 0;
    if (left_ns && (pb_signalled() || atomic_load_explicit(stopped, memory_order_relaxed))) return -ECANCELED;
  }
  return 0;
}

static int run_op(map_ctx *c, const pb_op_cfg *op, int k) {
  switch (op->kind) {
    case PB_OP_SPIN:
    case PB_OP_SLEEP: return timed_op(c, op);
    case PB_OP_FLIP: return run_flip(c, op, k);
    default:
      if (!pb_op_makes_new_image(op)) return 0; /* normalize to uint8, or on_device: nothing on the host */
      return run_new_image_op(c, op, k);
  }
}

static bool needs_image(const pb_stage_cfg *sc) {
  for (int i = 0; i < sc->nops; i++)
    if (sc->ops[i].kind != PB_OP_SPIN && sc->ops[i].kind != PB_OP_SLEEP) return true;
  return false;
}

/* The map's result becomes the element handed on: the pooled output, or the input's own buffer. */
static int hand_on(map_ctx *c) {
  /* not an image (a [16] float32 sample, say): only spin and sleep ran, so it goes on as it came */
  if (c->in->height == 0 && !c->out_buf) return pb_emit(c->w, c->in);
  pb_elem out = *c->in;
  if (c->out_buf || c->slot) {
    pb_buf_release(c->in->buf);
    out.buf = c->out_buf; /* NULL for a slot: the batch stage owns that buffer */
    out.in_batch = c->slot_owner;
  }
  out.data = c->cur.data;
  out.bytes = pb_image_bytes(&c->cur);
  out.height = (uint16_t)c->cur.height;
  out.width = (uint16_t)c->cur.width;
  out.channels = (uint8_t)c->cur.channels;
  out.dtype = (uint8_t)c->cur.dtype;
  out.chw = c->cur.chw;
  out.full_height = out.full_width = out.crop_x = 0; /* any fused crop is done */
  out.crop_denom = 0;
  return pb_emit(c->w, &out);
}

/* fuse_map: a sample that failed after taking its slot still goes to the batch stage, as a gap it counts
 * as the error (a batch is handed on when all its slots have come back). */
static int hand_on_gap(pb_worker *w, pb_elem *in, map_ctx *c, const char *what) {
  pb_elem gap = *in;
  pb_buf_release(in->buf);
  gap.buf = NULL;
  gap.data = c->slot;
  gap.bytes = 0;
  gap.in_batch = c->slot_owner;
  gap.slot_error = what;
  return pb_emit(w, &gap);
}

static int map_fail(pb_worker *w, pb_elem *in, map_ctx *c, const char *what) {
  if (c->out_buf) pb_buf_release(c->out_buf);
  if (w->cancelled) {
    pb_worker_abandon(w, in);
    return -ECANCELED;
  }
  if (c->slot) return hand_on_gap(w, in, c, what);
  char msg[PB_NAME_LEN + 320];
  snprintf(msg, sizeof msg, "stage %s: %s", w->stage->name, what);
  pb_worker_error(w, in, pb_engine_file_path(w->stage->engine, in->file_index), msg, false);
  return 0;
}

/* Each sample's random draws come from its own key (file, record, epoch; or its id in memory), so
 * augmentations are the same for the same seed however the threads are scheduled. */
static void seed_for_sample(pb_worker *w, const pb_elem *in) {
  pb_rng_seed(&w->rng, pb_elem_aug_seed(in, w->stage->engine->cfg->seed, w->stage->index));
}

static int map_process(pb_worker *w, pb_elem *in) {
  const pb_stage_cfg *sc = w->stage->cfg;
  seed_for_sample(w, in);
  map_ctx c = {.w = w, .in = in, .cur = view_of(in)};
  if (needs_image(sc) && in->height == 0)
    return map_fail(w, in, &c, "image ops need a decoded image (expected a decode stage before this map)");
  map_state *st = w->stage->state;
  for (int k = 0; k < sc->nops; k++) {
    int rc = k == st->tail ? run_fused_tail(&c, k) : 1;
    if (rc == 0) break; /* the tail was the rest of the ops */
    if (rc == 1) rc = run_op(&c, &sc->ops[k], k);
    if (rc == -ECANCELED) {
      w->cancelled = true;
      return map_fail(w, in, &c, "cancelled");
    }
    if (rc == -E2BIG) {
      char what[200];
      snprintf(what, sizeof what, "%s, wider or taller than %d pixels (expected a smaller resize)", c.too_big,
               PB_MAX_SIDE);
      return map_fail(w, in, &c, what);
    }
    if (rc == -EMSGSIZE)
      return map_fail(w, in, &c, "the result's size differs from the shape the config gives (fuse_map needs it)");
    if (rc < 0) { /* which op, and the reason it recorded (pb_ops_why) */
      char what[300];
      pb_op_failure_text(what, sizeof what, k, sc->ops[k].kind, rc);
      return map_fail(w, in, &c, what);
    }
  }
  if (c.cur.height > PB_MAX_SIDE || c.cur.width > PB_MAX_SIDE) /* an input that large, with no op to shrink it */
    return map_fail(w, in, &c, "the result is wider or taller than 65535 pixels (expected a smaller resize)");
  return hand_on(&c);
}

static void map_cancel(pb_stage *s) {
  map_state *st = s->state;
  if (st->pool_ready) pb_pool_cancel(&st->pool);
}

static void map_close(pb_stage *s) {
  map_state *st = s->state;
  if (!st) return;
  for (int k = 0; k < s->threads; k++) {
    map_worker *mw = s->workers[k].state;
    if (!mw) continue;
    free(mw->scratch[0]);
    free(mw->scratch[1]);
    free(mw->resample);
  }
  free(s->workers ? s->workers[0].state : NULL);
  if (st->pool_ready) pb_pool_close(&st->pool);
  free(st);
  s->state = NULL;
}

/* A map of only spin, sleep and flip ops hands on the buffers it received (flip works in place). */
static bool map_passes_buffers(const pb_stage *s) {
  for (int j = 0; j < s->cfg->nops; j++) {
    pb_op_kind k = s->cfg->ops[j].kind;
    if (k != PB_OP_SPIN && k != PB_OP_SLEEP && k != PB_OP_FLIP) return false;
  }
  return true;
}

/* `ahead`: samples in work or done and not yet taken, per thread (tf.data's parallel map buffer: one per call). */
static int map_ahead_limit(const pb_stage *s) {
  return s->cfg->ahead > 0 ? (int)PB_MIN(s->cfg->ahead * s->threads, PB_SAMPLE_QUEUE_CAPACITY) : -1;
}

const pb_stage_ops pb_stage_map_ops = {
    .type = "map",
    .desc = &pb_stage_desc_map,
    .ahead_limit = map_ahead_limit,
    .passes_buffers = map_passes_buffers,
    .memory_bytes = map_memory,
    .init = map_init,
    .process = map_process,
    .cancel = map_cancel,
    .close = map_close,
};

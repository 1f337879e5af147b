/* Planning a run before anything is allocated: which stages run, how big each queue and chunk is, how
 * many pooled buffers each stage needs, and what that costs in memory (checked against
 * limits.max_memory_mb).
 *
 * Sizes follow the payload: a queue holds at most ~64 MB of samples (256 small ones, 4 of 100 MB),
 * and a worker moves at most a quarter of its input queue per chunk, so large samples are not
 * hoarded.  A pool must cover every place its buffers can sit until a later stage releases them;
 * sized so, a stage waits on its pool only when the pipeline after it is full. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "sat.h"

#define QUEUE_BUDGET_BYTES (64u << 20)

static int refuse_unimplemented(const pb_config *cfg, int i, pb_err *err) {
  const pb_stage_cfg *sc = &cfg->stages[i];
  return pb_err_set(err,
                    "%s: stages[%d].type: stage \"%s\" of type %s is not implemented in this version "
                    "(expected read, decode, map, batch, prefetch or h2d; try --data synthetic)",
                    cfg->file, i, sc->name, pb_stage_type_name(sc->type));
}

static int check_implemented(const pb_config *cfg, int i, pb_err *err) {
  return pb_stage_ops_for(cfg->stages[i].type) ? 0 : refuse_unimplemented(cfg, i, err);
}

int pb_engine_check(const pb_config *cfg, bool synthetic, pb_err *err) {
  int first = synthetic ? pb_config_batch_index(cfg) : 0;
  for (int i = first; i < cfg->nstages; i++)
    if (check_implemented(cfg, i, err)) return -EINVAL;
  return 0;
}

uint32_t pb_engine_source_epochs(const pb_engine *e) {
  for (int i = 1; i < e->nstages; i++)
    if (e->stages[i].ops->replays_epoch) return 1;
  return e->cfg->run.stop == PB_STOP_EPOCHS ? (uint32_t)e->cfg->run.epochs : 0;
}

/* Bytes of one element leaving s: a batch of its samples after `batch`; before it, what the stage's type
 * estimates (read, decode), else the sample shape's bytes, else what came in. */
static uint64_t stage_bytes_estimate(const pb_stage *s, uint64_t input_bytes) {
  const pb_config *cfg = s->engine->cfg;
  uint64_t shape_bytes = pb_shape_bytes(&s->sample_shape);
  if (s->batched) return pb_sat_mul_u64(shape_bytes, (uint64_t)cfg->stages[pb_config_batch_index(cfg)].size);
  if (s->ops->sample_bytes) return s->ops->sample_bytes(s, input_bytes);
  return shape_bytes ? shape_bytes : input_bytes;
}

static int clamp_int(uint64_t v, int lo, int hi) { return v < (uint64_t)lo ? lo : v > (uint64_t)hi ? hi : (int)v; }

int pb_stage_out_capacity(const pb_stage *s) {
  if (!s->batched) return clamp_int(QUEUE_BUDGET_BYTES / PB_MAX(s->sample_bytes, 1), 4, PB_SAMPLE_QUEUE_CAPACITY);
  return s->ops->out_capacity ? s->ops->out_capacity(s) : 1;
}

int pb_engine_next_consumers(const pb_engine *e, int i) {
  return i + 1 < e->nstages ? e->stages[i + 1].threads : e->consumers;
}

/* Elements a worker of stage s takes at once: a quarter of its input queue, at most PB_CHUNK; one
 * batch at a time after `batch`. */
static int input_chunk(const pb_engine *e, const pb_stage *s) {
  if (s->index == 0) return PB_CHUNK; /* a source has no input */
  const pb_stage *prev = &e->stages[s->index - 1];
  if (prev->batched) return 1;
  return clamp_int((uint64_t)pb_stage_out_capacity(prev) / 4, 1, PB_CHUNK);
}

int pb_queue_slots(const pb_stage *s, pb_queue_fill fill) {
  return fill == PB_QUEUES_FULL ? pb_stage_out_capacity(s) : 0;
}

/* Elements one worker holds of a chunk: the whole chunk when its queue is full; one when the queues are empty,
 * for a worker takes what is there and hands on what it made within PB_FLUSH_AFTER_NS (one at a time for
 * the stages that own pools, whose elements take longer than that). */
int pb_chunk_in_hand(int chunk, pb_queue_fill fill) { return fill == PB_QUEUES_FULL ? chunk : 1; }

int pb_stage_pool_buffers(const pb_stage *s, pb_queue_fill fill) {
  const pb_engine *e = s->engine;
  int n = s->threads * (pb_chunk_in_hand(s->out_chunk, fill) + 1) + pb_queue_slots(s, fill);
  for (int j = s->index + 1; j < e->nstages; j++) {
    const pb_stage *t = &e->stages[j];
    n += t->threads * pb_chunk_in_hand(t->chunk, fill); /* in the next stage's hands (it releases or passes them on) */
    if (t->batched || !t->ops->passes_buffers || !t->ops->passes_buffers(t)) break;
    n += t->threads * pb_chunk_in_hand(t->out_chunk, fill) + pb_queue_slots(t, fill);
    if (t->ops->held_samples) n += (int)t->ops->held_samples(t);
  }
  return n + 1;
}

static void add_stage(pb_engine *e, const pb_stage_ops *ops, const pb_stage_cfg *sc, bool batched,
                      pb_shape shape) {
  pb_stage *s = &e->stages[e->nstages];
  *s = (pb_stage){.ops = ops, .cfg = sc, .index = e->nstages, .engine = e, .batched = batched,
                  .sample_shape = shape};
  s->is_source = e->nstages == 0;
  s->threads = !sc ? 1 : ops->threads ? ops->threads(sc) : sc->threads;
  snprintf(s->name, sizeof s->name, "%s", sc ? sc->name : "source");
  e->nstages++;
}

/* Sizes every stage: payload estimate, output queue, chunks. */
static void size_stages(pb_engine *e) {
  uint64_t bytes = 0;
  for (int i = 0; i < e->nstages; i++) {
    pb_stage *s = &e->stages[i];
    bytes = s->sample_bytes = stage_bytes_estimate(s, bytes);
  }
  for (int i = 0; i < e->nstages; i++) e->stages[i].chunk = input_chunk(e, &e->stages[i]);
  for (int i = 0; i < e->nstages; i++)
    e->stages[i].out_chunk = i + 1 < e->nstages ? e->stages[i + 1].chunk : 1;
}

/* The sample the in-memory source emits: the shape after the last per-sample stage it replaces. */
static pb_shape source_shape(const pb_config *cfg, bool synthetic) {
  int b = pb_config_batch_index(cfg);
  if (synthetic && b > 0) return cfg->stages[b - 1].out_shape;
  return cfg->dataset.sample;
}

static int plan_memory_source(pb_engine *e, pb_err *err) {
  const pb_config *cfg = e->cfg;
  int b = pb_config_batch_index(cfg);
  pb_shape shape = source_shape(cfg, e->synthetic);
  if (!shape.known) {
    char buf[64];
    return pb_err_set(err,
                      "%s: stages[%d]: the sample shape after this stage is %s, so synthetic data "
                      "cannot be generated (expected dataset.generate.image or a map op with a size)",
                      cfg->file, b - 1, pb_shape_str(&shape, buf, sizeof buf));
  }
  bool sized = cfg->dataset.format == PB_FMT_SYNTHETIC ? cfg->dataset.num_samples > 0 : cfg->dataset.generate.present;
  if (cfg->run.stop == PB_STOP_EPOCHS && !sized)
    return pb_err_set(err,
                      "%s: run.epochs: the epoch size of synthetic data is unknown (expected "
                      "dataset.generate with num_files and samples_per_file, or run.steps)",
                      cfg->file);
  add_stage(e, &pb_stage_source_ops, NULL, false, shape);
  for (int i = e->synthetic ? b : 0; i < cfg->nstages; i++) {
    if (check_implemented(cfg, i, err)) return -EINVAL;
    /* In memory the samples already have the shape of the last stage synthetic mode skips. */
    pb_shape out = e->synthetic ? shape : cfg->stages[i].out_shape;
    add_stage(e, pb_stage_ops_for(cfg->stages[i].type), &cfg->stages[i], i >= b, out);
  }
  return 0;
}

/* Real files: stage 0 is the read stage, the source.  The file list is taken now so that a missing
 * dataset fails before anything starts. */
static int plan_files(pb_engine *e, pb_err *err) {
  const pb_config *cfg = e->cfg;
  int b = pb_config_batch_index(cfg);
  for (int i = 0; i < cfg->nstages; i++) {
    if (check_implemented(cfg, i, err)) return -EINVAL;
    add_stage(e, pb_stage_ops_for(cfg->stages[i].type), &cfg->stages[i], i >= b, cfg->stages[i].out_shape);
  }
  pb_err ferr;
  if (pb_dataset_list(&cfg->dataset, &e->files, &e->files_skipped, &ferr)) {
    pb_err_set(err, "%s: dataset.path: %s", cfg->file, ferr.msg);
    return -ENOENT;
  }
  e->have_files = true;
  if (e->world_size > 1) {
    pb_file_list_shard(&e->files, e->rank, e->world_size);
    for (size_t i = 0; i < e->files.count; i++) e->files.files[i].index = i; /* read indexes by position */
  }
  return 0;
}

int pb_engine_plan(pb_engine *e, const pb_config *cfg, bool synthetic, int consumers, pb_err *err) {
  return pb_engine_plan_shard(e, cfg, synthetic, consumers, 0, 1, err);
}

int pb_engine_plan_shard(pb_engine *e, const pb_config *cfg, bool synthetic, int consumers, int rank,
                         int world_size, pb_err *err) {
  memset(e, 0, sizeof *e);
  e->cfg = cfg;
  e->synthetic = synthetic;
  e->consumers = consumers;
  e->rank = rank;
  e->world_size = world_size;
  atomic_store(&e->window_start_ns, UINT64_MAX);
  atomic_store(&e->window_end_ns, UINT64_MAX);
  uv_mutex_init(&e->errors_lock);
  bool files = !synthetic && cfg->dataset.format != PB_FMT_SYNTHETIC;
  int rc = files ? plan_files(e, err) : plan_memory_source(e, err);
  if (rc) return rc;
  size_stages(e);
  uint64_t limit_bytes = (uint64_t)cfg->max_memory_mb * 1000000u,
           planned = pb_engine_memory_bytes(e, PB_QUEUES_FULL, NULL, 0);
  e->mem_budget.allowed_bytes = limit_bytes > planned ? limit_bytes - planned : 0;
  return 0;
}

/* "12.3 MB" or "45.6 kB": a size as a message shows it. */
static const char *size_str(uint64_t bytes, char *buf, size_t len) {
  if (bytes >= 1000000)
    snprintf(buf, len, "%.1f MB", (double)bytes / 1e6);
  else
    snprintf(buf, len, "%.1f kB", (double)bytes / 1e3);
  return buf;
}

void pb_engine_over_plan_msg(const pb_stage *s, size_t bytes, char *msg, size_t len) {
  const pb_engine *e = s->engine;
  char got[32], plan[32], left[32];
  snprintf(msg, len,
           "a sample of %s: more than %s's plan of %s a sample plus the %s that limits.max_memory_mb (%lld MB) "
           "leaves past the plan (expected a smaller sample, or a larger limits.max_memory_mb)",
           size_str(bytes, got, sizeof got), s->name, size_str(s->sample_bytes, plan, sizeof plan),
           size_str(e->mem_budget.allowed_bytes, left, sizeof left), (long long)e->cfg->max_memory_mb);
}

uint64_t pb_engine_memory_bytes(const pb_engine *e, pb_queue_fill fill, char *who, size_t who_len) {
  uint64_t total = 0;
  size_t used = 0;
  if (who_len) who[0] = '\0';
  for (int i = 0; i < e->nstages; i++) {
    const pb_stage *s = &e->stages[i];
    uint64_t bytes = s->ops->memory_bytes ? s->ops->memory_bytes(s, fill) : 0;
    total = pb_sat_add_u64(total, bytes); /* a shape past 2^64 bytes keeps the sum at the top, not wrapped */
    if (bytes >= 1000000 && used < who_len)
      used += (size_t)snprintf(who + used, who_len - used, "%s%s %.0f MB", used ? ", " : "", s->name,
                               (double)bytes / 1e6);
  }
  return total;
}

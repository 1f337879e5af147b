/* `cache`: tf.data's cache() in memory.  During the first epoch it copies every sample it sees into
 * memory and hands the sample on; the source upstream then stops after that one epoch
 * (pb_engine_source_epochs), and at its end of data the cache replays the stored samples for the
 * remaining epochs (endlessly for a steps or duration run).  Replayed samples point into the cache and
 * carry no buffer: nothing downstream may write into them (map's flip copies first).  They count as
 * samples the source yielded, so the accounting still balances (docs/METRICS.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "account.h"
#include "engine.h"

typedef struct cache_state {
  pb_elem *entries; /* payload copies: data owned by the cache */
  size_t count, capacity;
  uint64_t bytes;        /* payload copies plus their entries */
  uint64_t budget_bytes; /* what limits.max_memory_mb leaves the cache after the other stages' buffers */
} cache_state;

/* Samples in one epoch, for the memory plan.  A generated dataset: num_files x samples_per_file, from
 * the config (what run reads once it has generated it: validate and sweep plan before that, when the
 * directory may still hold a dataset of other settings); raw files split exactly by record_bytes;
 * otherwise one per file, a floor (a TFRecord or npy file holds many): cache_process enforces the
 * budget on what it really holds. */
static uint64_t epoch_samples_estimate(const pb_stage *s) {
  const pb_engine *e = s->engine;
  const pb_config *cfg = e->cfg;
  const pb_generate_cfg *g = &cfg->dataset.generate;
  if (cfg->dataset.format == PB_FMT_SYNTHETIC) return (uint64_t)cfg->dataset.num_samples;
  if (g->present) return (uint64_t)g->num_files * (uint64_t)g->samples_per_file;
  if (cfg->dataset.format == PB_FMT_RAW && cfg->dataset.record_bytes > 0) {
    uint64_t n = 0;
    for (size_t i = 0; i < e->files.count; i++) n += e->files.files[i].bytes / (uint64_t)cfg->dataset.record_bytes;
    return n;
  }
  return (uint64_t)e->files.count;
}

/* Each cached sample: its payload and its entry (as store counts them). */
static uint64_t cache_memory(const pb_stage *s, pb_queue_fill fill) {
  (void)fill; /* the whole first epoch, however full the queues are */
  return epoch_samples_estimate(s) * ((uint64_t)s->sample_bytes + sizeof(pb_elem));
}

static uint64_t cache_budget(const pb_stage *s) {
  uint64_t limit = (uint64_t)s->engine->cfg->max_memory_mb * 1000000u;
  uint64_t others = pb_engine_memory_bytes(s->engine, PB_QUEUES_FULL, NULL, 0) - cache_memory(s, PB_QUEUES_FULL);
  return limit > others ? limit - others : 0;
}

static int cache_init(pb_stage *s, pb_err *err) {
  cache_state *st = calloc(1, sizeof *st);
  if (!st) return pb_err_setc(err, -ENOMEM, "out of memory for the cache");
  st->budget_bytes = cache_budget(s);
  s->state = st;
  s->workers[0].state = st;
  return 0;
}

/* Keeps a copy of a first-epoch sample (the cache grows only during that epoch). */
static int store(cache_state *st, const pb_elem *in) {
  if (st->count == st->capacity) {
    size_t cap = st->capacity ? 2 * st->capacity : 1024;
    pb_elem *e = realloc(st->entries, cap * sizeof *e);
    if (!e) return -ENOMEM;
    st->entries = e;
    st->capacity = cap;
  }
  void *copy = malloc(in->bytes ? in->bytes : 1);
  if (!copy) return -ENOMEM;
  memcpy(copy, in->data, in->bytes);
  pb_elem *e = &st->entries[st->count++];
  *e = *in;
  e->data = copy;
  e->buf = NULL;
  st->bytes += in->bytes + sizeof *e;
  return 0;
}

static int cache_process(pb_worker *w, pb_elem *in) {
  cache_state *st = w->state;
  char msg[300];
  if (st->bytes + in->bytes + sizeof *in > st->budget_bytes) {
    /* the plan's estimate was low (e.g. a TFRecord file holds many samples): stop rather than grow past
     * the limit, or replay a cache that lost samples */
    snprintf(msg, sizeof msg,
             "the first epoch does not fit the cache: over %.0f MB after %zu samples, what limits.max_memory_mb "
             "leaves it (expected a larger limit, or the cache after a stage with smaller samples)",
             (double)st->budget_bytes / 1e6, st->count);
    pb_worker_error(w, in, pb_engine_file_path(w->stage->engine, in->file_index), msg, true);
    return 0;
  }
  if (store(st, in)) {
    pb_worker_error(w, in, pb_engine_file_path(w->stage->engine, in->file_index),
                    "out of memory for the cache (expected a dataset that fits in memory)", true);
    return 0;
  }
  return pb_emit(w, in);
}

/* End of the first epoch: replay it for the rest of the run. */
static int cache_flush(pb_worker *w) {
  cache_state *st = w->state;
  const pb_config *cfg = w->stage->engine->cfg;
  uint64_t epochs = cfg->run.stop == PB_STOP_EPOCHS ? (uint64_t)cfg->run.epochs : UINT64_MAX;
  /* a cache that lost part of the epoch failed the run (cache_process's fatal errors, which also cancel the
   * engine, so no more of the chunk comes here): never replay a part */
  if (pb_engine_failed(w->stage->engine)) return 0;
  for (uint64_t epoch = 1; epoch < epochs && st->count && !w->cancelled; epoch++) {
    for (size_t i = 0; i < st->count; i++) {
      pb_elem e = st->entries[i];
      e.id = atomic_fetch_add(&w->stage->engine->next_sample_id, 1);
      e.epoch = (uint32_t)epoch;
      pb_count_replayed(w);
      if (pb_emit(w, &e) < 0) return -ECANCELED;
    }
  }
  return 0;
}

static void cache_close(pb_stage *s) {
  cache_state *st = s->state;
  if (!st) return;
  for (size_t i = 0; i < st->count; i++) free(st->entries[i].data);
  free(st->entries);
  free(st);
  s->state = NULL;
}

/* The first epoch's samples go on in their own buffers (the cache keeps copies). */
static bool cache_passes_buffers(const pb_stage *s) {
  (void)s; /* every stage of the type */
  return true;
}

const pb_stage_ops pb_stage_cache_ops = {
    .type = "cache",
    .desc = &pb_stage_desc_cache,
    .passes_buffers = cache_passes_buffers,
    .replays_epoch = true,
    .memory_bytes = cache_memory,
    .init = cache_init,
    .process = cache_process,
    .flush = cache_flush,
    .close = cache_close,
};

/* The in-memory source (docs/CONTRACT.md §4): one sample of the configured shape is generated once, seeded, and
 * every element points at it, so the source costs only the element hand-off.  It ends after
 * run.epochs x the epoch size when epochs are asked for, and is endless otherwise (tf.data's repeat()). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

typedef struct source_state {
  void *sample;
  size_t sample_bytes;
  uint64_t epoch_samples; /* 0 when the dataset has no size */
  uint64_t limit;         /* total samples to emit; 0 = endless */
  pb_elem proto;          /* every element is this one, with its own id and epoch */
} source_state;

/* Samples per epoch: the in-memory dataset's num_samples, or what `gen` would write. */
static uint64_t epoch_samples(const pb_config *cfg) {
  if (cfg->dataset.format == PB_FMT_SYNTHETIC) return (uint64_t)cfg->dataset.num_samples;
  const pb_generate_cfg *g = &cfg->dataset.generate;
  return g->present ? (uint64_t)(g->num_files * g->samples_per_file) : 0;
}

static uint64_t source_memory(const pb_stage *s, pb_queue_fill fill) {
  (void)fill; /* one sample, shared by every element */
  return pb_shape_bytes(&s->sample_shape);
}

/* Deterministic content: random bytes for uint8, values in [0,1) for floats, so a consumer that looks
 * at the numbers sees plausible pixels. */
static void fill_sample(void *data, size_t bytes, pb_dtype dtype, uint64_t seed) {
  pb_rng rng;
  pb_rng_seed(&rng, seed);
  if (dtype == PB_DTYPE_FLOAT32) {
    float *f = data;
    for (size_t i = 0; i < bytes / sizeof *f; i++) f[i] = (float)pb_rng_uniform(&rng);
    return;
  }
  uint8_t *b = data;
  for (size_t i = 0; i < bytes; i++) b[i] = (uint8_t)pb_rng_next(&rng);
  if (dtype == PB_DTYPE_FLOAT16) /* keep every half in [0.5, 2): sign 0, exponent 14 or 15 */
    for (size_t i = 1; i < bytes; i += 2) b[i] = (uint8_t)(0x38 | (b[i] & 0x07));
}

/* A 3-d sample is an image ([H,W,C], or [C,H,W] after to_chw): say so, so map's image ops accept it. */
static void describe_image(pb_elem *e, const pb_shape *shape) {
  if (shape->ndims != 3 || shape->dims[0] > 65535 || shape->dims[1] > 65535 || shape->dims[2] > 255) return;
  bool chw = shape->chw;
  e->height = (uint16_t)shape->dims[chw ? 1 : 0];
  e->width = (uint16_t)shape->dims[chw ? 2 : 1];
  e->channels = (uint8_t)shape->dims[chw ? 0 : 2];
  e->dtype = (uint8_t)shape->dtype;
  e->chw = chw;
}

static int source_init(pb_stage *s, pb_err *err) {
  const pb_config *cfg = s->engine->cfg;
  source_state *st = calloc(1, sizeof *st);
  if (!st) return pb_err_setc(err, -ENOMEM, "out of memory for the source");
  st->sample_bytes = pb_shape_bytes(&s->sample_shape);
  st->sample = aligned_alloc(64, (st->sample_bytes + 63) / 64 * 64);
  if (!st->sample) {
    pb_err_set(err, "out of memory for the synthetic sample (%zu bytes)", st->sample_bytes);
    free(st);
    return -ENOMEM;
  }
  fill_sample(st->sample, st->sample_bytes, s->sample_shape.dtype, cfg->seed);
  st->epoch_samples = epoch_samples(cfg);
  st->proto = (pb_elem){.batch_id = PB_NO_BATCH, .data = st->sample, .bytes = st->sample_bytes, .nsamples = 1,
                        .file_index = PB_NO_FILE};
  describe_image(&st->proto, &s->sample_shape);
  uint32_t epochs = pb_engine_source_epochs(s->engine);
  if (epochs) st->limit = st->epoch_samples * epochs; /* endless when the size is unknown (0) */
  s->state = st;
  return 0;
}

static int source_produce(pb_worker *w, int max) {
  pb_stage *s = w->stage;
  source_state *st = s->state;
  uint64_t first = atomic_fetch_add(&s->engine->next_sample_id, (uint64_t)max);
  int n = max;
  if (st->limit) {
    if (first >= st->limit) return 0;
    if (first + (uint64_t)n > st->limit) n = (int)(st->limit - first);
  }
  for (int i = 0; i < n; i++) {
    uint64_t id = first + (uint64_t)i;
    pb_elem e = st->proto;
    e.id = id;
    e.epoch = st->epoch_samples ? (uint32_t)(id / st->epoch_samples) : 0;
    if (pb_emit(w, &e) < 0) return -ECANCELED; /* the rest were never made: nothing to count */
  }
  return n;
}

static void source_close(pb_stage *s) {
  source_state *st = s->state;
  if (!st) return;
  free(st->sample);
  free(st);
  s->state = NULL;
}

const pb_stage_ops pb_stage_source_ops = {
    .type = "source",
    .memory_bytes = source_memory,
    .init = source_init,
    .produce = source_produce,
    .close = source_close,
};

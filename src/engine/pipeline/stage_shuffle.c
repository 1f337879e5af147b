/* `shuffle`: tf.data's shuffle(buffer): fill a buffer of `buffer` samples, then for each new sample hand
 * on a uniformly chosen one and put the new one in its place; at end of data hand on the rest in random
 * order.  Seeded, one thread.  The samples it holds keep their buffers, which the pools upstream count
 * (pb_stage_pool_buffers). */
#include <errno.h>
#include <stdlib.h>

#include "engine.h"

typedef struct shuffle_worker {
  pb_elem *held;
  size_t count, capacity;
} shuffle_worker;

static int shuffle_init(pb_stage *s, pb_err *err) {
  shuffle_worker *sw = calloc(1, sizeof *sw);
  if (sw) sw->held = malloc((size_t)s->cfg->buffer * sizeof *sw->held);
  if (!sw || !sw->held) {
    free(sw);
    return pb_err_setc(err, -ENOMEM, "out of memory for a shuffle buffer of %lld samples", (long long)s->cfg->buffer);
  }
  sw->capacity = (size_t)s->cfg->buffer;
  s->workers[0].state = sw;
  s->state = sw;
  return 0;
}

static int shuffle_process(pb_worker *w, pb_elem *in) {
  shuffle_worker *sw = w->state;
  if (sw->count < sw->capacity) {
    sw->held[sw->count++] = *in;
    return 0;
  }
  size_t j = pb_rng_next(&w->rng) % sw->capacity;
  pb_elem out = sw->held[j];
  sw->held[j] = *in;
  return pb_emit(w, &out);
}

static int shuffle_flush(pb_worker *w) {
  shuffle_worker *sw = w->state;
  while (sw->count) {
    size_t j = pb_rng_next(&w->rng) % sw->count;
    pb_elem out = sw->held[j];
    sw->held[j] = sw->held[--sw->count];
    if (pb_emit(w, &out) < 0) return -ECANCELED;
  }
  return 0;
}

static uint64_t shuffle_abandon(pb_worker *w) {
  shuffle_worker *sw = w->state;
  uint64_t held = 0;
  for (size_t i = 0; sw && i < sw->count; i++) {
    held += sw->held[i].nsamples;
    pb_buf_release(sw->held[i].buf);
  }
  if (sw) sw->count = 0;
  return held;
}

static void shuffle_close(pb_stage *s) {
  shuffle_worker *sw = s->state;
  if (!sw) return;
  free(sw->held);
  free(sw);
  s->state = NULL;
}

/* The buffer's samples keep their upstream buffers, and may be handed on after many newer ones. */
static uint64_t shuffle_held_samples(const pb_stage *s) { return (uint64_t)s->cfg->buffer * (uint64_t)s->threads; }
static bool shuffle_passes_buffers(const pb_stage *s) {
  (void)s; /* every stage of the type */
  return true;
}

const pb_stage_ops pb_stage_shuffle_ops = {
    .type = "shuffle",
    .desc = &pb_stage_desc_shuffle,
    .held_samples = shuffle_held_samples,
    .passes_buffers = shuffle_passes_buffers,
    .init = shuffle_init,
    .process = shuffle_process,
    .flush = shuffle_flush,
    .abandon = shuffle_abandon,
    .close = shuffle_close,
};

/* `prefetch`: decouples producer and consumer with a buffer of `depth` batches (its output queue), like
 * tf.data's prefetch.  Its thread only moves elements; the buffering is the queue itself. */
#include "engine.h"

static int prefetch_process(pb_worker *w, pb_elem *in) { return pb_emit(w, in); }

static int prefetch_out_capacity(const pb_stage *s) { return (int)s->cfg->depth; }
static bool prefetch_passes_buffers(const pb_stage *s) {
  (void)s; /* every stage of the type */
  return true;
}

const pb_stage_ops pb_stage_prefetch_ops = {
    .type = "prefetch",
    .desc = &pb_stage_desc_prefetch,
    .out_capacity = prefetch_out_capacity,
    .passes_buffers = prefetch_passes_buffers,
    .process = prefetch_process,
};

/* `prefetch`: decouples producer and consumer with a buffer of `depth` batches (its output queue), like
 * tf.data's prefetch.  Its thread only moves elements; the buffering is the queue itself. */
#include "engine.h"

static int prefetch_process(pb_worker *w, pb_elem *in) { return pb_emit(w, in); }

const pb_stage_ops pb_stage_prefetch_ops = {
    .type = "prefetch",
    .process = prefetch_process,
};

/* The shuffle stage's config facts: its keys (one thread, the buffer's samples).  It keeps the sample's
 * shape and may stand anywhere before the batch.  Its runtime is src/engine/pipeline/stage_shuffle.c. */
#include <stddef.h>

#include "config_internal.h"
#include "stage_desc.h"

static const pb_key shuffle_keys[] = {
    PB_CFG_STAGE_COMMON,
    PB_CFG_THREADS_ONE("a shuffle"),
    ROW(pb_stage_cfg, buffer, "buffer", PB_KT_INT, .min = 1, .max = 1e8, .def = "1024",
        .help = "Samples in the shuffle buffer."),
};
static const pb_key_table shuffle_table = TABLE(shuffle_keys, NULL);

const pb_stage_desc pb_stage_desc_shuffle = {
    .type = PB_STAGE_SHUFFLE,
    .name = "shuffle",
    .options = &shuffle_table,
    .place = PB_PLACE_BEFORE_BATCH,
};

/* The prefetch stage's config facts: its keys (one thread; `depth`, the batches it buffers, is the knob the
 * tuner searches).  Its runtime is src/engine/pipeline/stage_prefetch.c. */
#include <stddef.h>

#include "config_internal.h"
#include "stage_desc.h"

static const pb_key prefetch_keys[] = {
    PB_CFG_STAGE_COMMON,
    PB_CFG_THREADS_ONE("a prefetch"),
    ROW(pb_stage_cfg, depth, "depth", PB_KT_INT, .min = 1, .max = 1024, .def = "2",
        .help = "Batches buffered ahead of the device."),
};
static const pb_key_table prefetch_table = TABLE(prefetch_keys, NULL);

static const char *const prefetch_knobs[] = {"depth", NULL};

const pb_stage_desc pb_stage_desc_prefetch = {
    .type = PB_STAGE_PREFETCH,
    .name = "prefetch",
    .options = &prefetch_table,
    .place = PB_PLACE_AFTER_BATCH,
    .knobs = prefetch_knobs,
};

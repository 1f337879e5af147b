/* The h2d stage's config facts: its keys (its parallelism is `streams`, not threads) and that there is at
 * most one.  Its runtime is src/engine/pipeline/stage_h2d.c. */
#include <stddef.h>
#include <stdio.h>

#include "config_internal.h"
#include "stage_desc.h"

static const pb_key h2d_keys[] = {
    PB_CFG_STAGE_COMMON,
    PB_CFG_THREADS_ONE("an h2d"),
    ROW(pb_stage_cfg, pinned, "pinned", PB_KT_BOOL, .def = "true", .help = "Copy from pinned host memory."),
    ROW(pb_stage_cfg, streams, "streams", PB_KT_INT, .min = 1, .max = 16, .def = "1",
        .help = "Copy streams in flight."),
};
static const pb_key_table h2d_table = TABLE(h2d_keys, NULL);

/* One copy engine per run: a second h2d stage would copy batches already on the device. */
static int h2d_check(pb_cfg_ctx *c, int i) {
  for (int j = 0; j < i; j++) {
    if (c->cfg->stages[j].type != PB_STAGE_H2D) continue;
    char expect[96];
    snprintf(expect, sizeof expect, "at most one h2d stage; stages[%d] is one", j);
    return pb_cfg_stage_fail(c, i, "a second h2d stage", expect);
  }
  return 0;
}

const pb_stage_desc pb_stage_desc_h2d = {
    .type = PB_STAGE_H2D,
    .name = "h2d",
    .options = &h2d_table,
    .place = PB_PLACE_AFTER_BATCH,
    .check = h2d_check,
};

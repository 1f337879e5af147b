/* The batch stage's config facts: its keys.  Exactly one batch stands in every pipeline: it is where
 * config_pipeline.c's order rule turns from samples to batches, so that rule, not a check here, counts
 * it.  It keeps the per-sample shape (a batch is `size` of them).  Its runtime is src/engine/pipeline/stage_batch.c. */
#include <stddef.h>

#include "config_internal.h"
#include "stage_desc.h"

static const pb_key batch_keys[] = {
    PB_CFG_STAGE_COMMON,
    PB_CFG_THREADS_ANY,
    ROW(pb_stage_cfg, size, "size", PB_KT_INT, .min = 1, .max = 1e6, .flags = PB_KF_REQUIRED,
        .help = "Samples per batch."),
    ROW(pb_stage_cfg, drop_remainder, "drop_remainder", PB_KT_BOOL, .def = "true",
        .help = "Drop a last, short batch (its samples count as dropped)."),
    ROW(pb_stage_cfg, fuse_map, "fuse_map", PB_KT_BOOL, .def = "false",
        .help = "The map stage right before writes each result straight into its place in the batch (tf.data's "
                "map_and_batch fusion): no collate copy. Applies when that map makes a new image of a known shape."),
    ROW(pb_stage_cfg, on_demand, "on_demand", PB_KT_BOOL, .def = "false",
        .help = "Start a batch only when the next stage or the device asks for one: nothing is batched ahead (a "
                "tf.data pipeline without prefetch, whose batch is made inside the step's GetNext)."),
};

/* A batch made on demand takes its samples as it goes; fused, the map would take its slots ahead. */
static int batch_check(pb_cfg_ctx *c, const cJSON *obj, const char *path, void *base) {
  (void)obj;
  const pb_stage_cfg *sc = base;
  if (!sc->on_demand || !sc->fuse_map) return 0;
  char p[PB_CFG_PATH_MAX];
  pb_cfg_path_key(p, path, "on_demand");
  return pb_cfg_fail(c, p,
                     "true with fuse_map (expected one of them: a fused map fills its slots ahead of any demand)");
}
static const pb_key_table batch_table = TABLE(batch_keys, batch_check);

static const char *const batch_knobs[] = {"threads", NULL};

const pb_stage_desc pb_stage_desc_batch = {
    .type = PB_STAGE_BATCH,
    .name = "batch",
    .options = &batch_table,
    .place = PB_PLACE_BATCH,
    .knobs = batch_knobs,
};

/* The cache stage's config facts: its keys (one thread) and that its source must have an end.  It keeps
 * the sample's shape.  Its runtime is src/engine/pipeline/stage_cache.c. */
#include <stddef.h>
#include <stdio.h>

#include "config_internal.h"
#include "stage_desc.h"

static const pb_key cache_keys[] = {PB_CFG_STAGE_COMMON, PB_CFG_THREADS_ONE("a cache")};
static const pb_key_table cache_table = TABLE(cache_keys, NULL);

static bool earlier_cache(const pb_config *cfg, int i) {
  for (int j = 0; j < i; j++)
    if (cfg->stages[j].type == PB_STAGE_CACHE) return true;
  return false;
}

/* A cache keeps its first epoch and replays it: an endless synthetic source has no first epoch to end,
 * so the cache would copy every sample of the run and never replay (memory without bound, and none of it
 * planned).  Said once, at the first cache. */
static int cache_check_epoch(pb_cfg_ctx *c, int i) {
  const pb_dataset_cfg *d = &c->cfg->dataset;
  if (d->format != PB_FMT_SYNTHETIC || d->num_samples > 0 || earlier_cache(c->cfg, i)) return 0;
  char p[PB_CFG_PATH_MAX];
  snprintf(p, sizeof p, "stages[%d].type", i);
  return pb_cfg_fail(c, p,
                     "a cache of an endless synthetic dataset would never replay and grows without bound "
                     "(expected dataset.num_samples > 0 with a cache stage)");
}

const pb_stage_desc pb_stage_desc_cache = {
    .type = PB_STAGE_CACHE,
    .name = "cache",
    .options = &cache_table,
    .place = PB_PLACE_BEFORE_BATCH,
    .check_pipeline = cache_check_epoch,
};

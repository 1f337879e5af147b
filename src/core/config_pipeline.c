/* The order of stages (docs/CONTRACT.md §2): a source, per-sample stages, exactly one batch, then only prefetch
 * and h2d.  Each error names the offending stage's "type", since that is what has to change.  Where a type may
 * stand is its description's `place`; what else a type demands (one read, first; decode's payload; one h2d;
 * fused_crop's crop; a cache's epoch) is its description's check (src/core/stages/<type>.c). */
#include <stdio.h>

#include "config_internal.h"
#include "stage_desc.h"

int pb_cfg_stage_fail(pb_cfg_ctx *c, int i, const char *what, const char *expect) {
  char p[PB_CFG_PATH_MAX];
  snprintf(p, sizeof p, "stages[%d].type", i);
  return pb_cfg_fail(c, p, "%s (expected %s)", what, expect);
}

int pb_cfg_needs_files(pb_cfg_ctx *c, int i) {
  if (c->cfg->dataset.format != PB_FMT_SYNTHETIC) return 0;
  char what[128];
  snprintf(what, sizeof what, "a %s stage with dataset.format \"synthetic\"",
           pb_stage_type_name(c->cfg->stages[i].type));
  return pb_cfg_stage_fail(c, i, what, "no read or decode stage: the synthetic dataset is generated in memory");
}

/* Files need a read stage to open them; the synthetic dataset is its own source. */
static int check_source(pb_cfg_ctx *c) {
  const pb_config *cfg = c->cfg;
  if (cfg->dataset.format == PB_FMT_SYNTHETIC || cfg->stages[0].type == PB_STAGE_READ) return 0;
  char what[128];
  snprintf(what, sizeof what, "a %s stage first with dataset.format \"%s\"", pb_stage_type_name(cfg->stages[0].type),
           pb_format_name(cfg->dataset.format));
  return pb_cfg_stage_fail(c, 0, what, "a read stage first, or dataset.format \"synthetic\" for an in-memory source");
}

/* "only read, decode, map, shuffle or cache<tail>": the types that may stand at `place`, in the enum's order. */
static const char *types_at(pb_stage_place place, const char *tail, char *buf, size_t len) {
  const char *names[PB_STAGE__COUNT];
  int n = 0;
  for (int t = 0; t < PB_STAGE__COUNT; t++)
    if (pb_stage_desc_for((pb_stage_type)t)->place == place) names[n++] = pb_stage_desc_for((pb_stage_type)t)->name;
  size_t used = (size_t)snprintf(buf, len, "only");
  for (int j = 0; j < n && used < len; j++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", j == 0 ? " " : j + 1 < n ? ", " : " or ", names[j]);
  if (used < len) snprintf(buf + used, len - used, "%s", tail);
  return buf;
}

/* Before the batch only per-sample stages, after it only batch stages; exactly one batch. */
static int check_position(pb_cfg_ctx *c, int i, int *batch) {
  pb_stage_type t = c->cfg->stages[i].type;
  pb_stage_place place = pb_stage_desc_for(t)->place;
  char what[128], expect[96];
  snprintf(what, sizeof what, "a %s stage %s the batch stage", pb_stage_type_name(t), *batch < 0 ? "before" : "after");
  if (place == PB_PLACE_BATCH && *batch >= 0) {
    snprintf(expect, sizeof expect, "exactly one stage of type batch; stages[%d] is one", *batch);
    return pb_cfg_stage_fail(c, i, "a second batch stage", expect);
  }
  if (place == PB_PLACE_BATCH) {
    *batch = i;
    return 0;
  }
  if (*batch < 0 && place != PB_PLACE_BEFORE_BATCH)
    return pb_cfg_stage_fail(c, i, what, types_at(PB_PLACE_BEFORE_BATCH, " before batch", expect, sizeof expect));
  if (*batch >= 0 && place != PB_PLACE_AFTER_BATCH)
    return pb_cfg_stage_fail(c, i, what, types_at(PB_PLACE_AFTER_BATCH, " after batch", expect, sizeof expect));
  return 0;
}

int pb_cfg_check_pipeline(pb_cfg_ctx *c) {
  int batch = -1;
  int rc = check_source(c);
  for (int i = 0; !rc && i < c->cfg->nstages; i++) {
    const pb_stage_desc *d = pb_stage_desc_for(c->cfg->stages[i].type);
    rc = check_position(c, i, &batch);
    if (!rc && d->check) rc = d->check(c, i);
  }
  if (!rc && batch < 0) rc = pb_cfg_fail(c, "stages", "no batch stage (expected exactly one stage of type batch)");
  for (int i = 0; !rc && i < c->cfg->nstages; i++) {
    const pb_stage_desc *d = pb_stage_desc_for(c->cfg->stages[i].type);
    if (d->check_pipeline) rc = d->check_pipeline(c, i);
  }
  return rc;
}

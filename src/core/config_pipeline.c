/* The order of stages (docs/CONTRACT.md §2): a source, per-sample stages, exactly one batch, then only prefetch
 * and h2d.  Each error names the offending stage's "type", since that is what has to change. */
#include <stdio.h>

#include "config_internal.h"

static bool is_file_format(pb_format f) { return f != PB_FMT_SYNTHETIC; }

/* Stages that handle one sample at a time, and so belong before the batch. */
static bool is_per_sample(pb_stage_type t) {
  return t == PB_STAGE_READ || t == PB_STAGE_DECODE || t == PB_STAGE_MAP || t == PB_STAGE_SHUFFLE ||
         t == PB_STAGE_CACHE;
}

static int stage_fail(pb_cfg_ctx *c, int i, const char *what, const char *expect) {
  char p[PB_CFG_PATH_MAX];
  snprintf(p, sizeof p, "stages[%d].type", i);
  return pb_cfg_fail(c, p, "%s (expected %s)", what, expect);
}

/* Files need a read stage to open them; the synthetic dataset is its own source. */
static int check_source(pb_cfg_ctx *c) {
  const pb_config *cfg = c->cfg;
  if (!is_file_format(cfg->dataset.format) || cfg->stages[0].type == PB_STAGE_READ) return 0;
  char what[128];
  snprintf(what, sizeof what, "a %s stage first with dataset.format \"%s\"",
           pb_stage_type_name(cfg->stages[0].type), pb_format_name(cfg->dataset.format));
  return stage_fail(c, 0, what, "a read stage first, or dataset.format \"synthetic\" for an in-memory source");
}

/* A decode stage needs an encoded payload: JPEG files or tfrecord with JPEG payloads. */
static int check_decode(pb_cfg_ctx *c, int i, int decode_seen) {
  const pb_dataset_cfg *d = &c->cfg->dataset;
  char what[128];
  if (decode_seen >= 0) return stage_fail(c, i, "a second decode stage", "at most one decode stage");
  if (d->format == PB_FMT_TFRECORD && d->payload == PB_PAYLOAD_RAW)
    return stage_fail(c, i, "nothing to decode with dataset.payload \"raw\"",
                      "no decode stage: raw payloads are already tensors");
  if (d->format == PB_FMT_RAW || d->format == PB_FMT_NPY || d->format == PB_FMT_NPZ) {
    snprintf(what, sizeof what, "nothing to decode with dataset.format \"%s\"", pb_format_name(d->format));
    return stage_fail(c, i, what, "no decode stage: these samples are already tensors");
  }
  if (i == 0 || c->cfg->stages[0].type != PB_STAGE_READ)
    return stage_fail(c, i, "a decode stage without a read stage before it", "a read stage first");
  return 0;
}

/* read and decode only exist for files. */
static int check_source_stage(pb_cfg_ctx *c, int i, int *decode_seen) {
  pb_stage_type t = c->cfg->stages[i].type;
  if (t != PB_STAGE_READ && t != PB_STAGE_DECODE) return 0;
  if (!is_file_format(c->cfg->dataset.format)) {
    char what[128];
    snprintf(what, sizeof what, "a %s stage with dataset.format \"synthetic\"", pb_stage_type_name(t));
    return stage_fail(c, i, what, "no read or decode stage: the synthetic dataset is generated in memory");
  }
  if (t == PB_STAGE_READ)
    return i == 0 ? 0 : stage_fail(c, i, "a read stage after other stages", "at most one read stage, as stages[0]");
  int rc = check_decode(c, i, *decode_seen);
  *decode_seen = i;
  return rc;
}

/* Before the batch only per-sample stages, after it only prefetch and h2d (at most one h2d). */
static int check_position(pb_cfg_ctx *c, int i, int *batch, int *h2d) {
  pb_stage_type t = c->cfg->stages[i].type;
  char what[128], expect[96];
  snprintf(what, sizeof what, "a %s stage %s the batch stage", pb_stage_type_name(t), *batch < 0 ? "before" : "after");
  if (t == PB_STAGE_BATCH && *batch >= 0) {
    snprintf(expect, sizeof expect, "exactly one stage of type batch; stages[%d] is one", *batch);
    return stage_fail(c, i, "a second batch stage", expect);
  }
  if (t == PB_STAGE_BATCH) *batch = i;
  else if (*batch < 0 && !is_per_sample(t))
    return stage_fail(c, i, what, "only read, decode, map, shuffle or cache before batch");
  else if (*batch >= 0 && t != PB_STAGE_PREFETCH && t != PB_STAGE_H2D)
    return stage_fail(c, i, what, "only prefetch or h2d after batch");
  if (t != PB_STAGE_H2D) return 0;
  if (*h2d >= 0) {
    snprintf(expect, sizeof expect, "at most one h2d stage; stages[%d] is one", *h2d);
    return stage_fail(c, i, "a second h2d stage", expect);
  }
  *h2d = i;
  return 0;
}

/* decode's fused_crop draws the crop of the first map stage after it, which must therefore open with
 * random_resized_crop, with no cache in between (a cached crop would be replayed under another epoch's
 * draw). */
static int check_fused_crop(pb_cfg_ctx *c, int decode) {
  if (decode < 0 || !c->cfg->stages[decode].fused_crop) return 0;
  char p[PB_CFG_PATH_MAX];
  snprintf(p, sizeof p, "stages[%d].fused_crop", decode);
  for (int i = decode + 1; i < c->cfg->nstages; i++) {
    const pb_stage_cfg *s = &c->cfg->stages[i];
    if (s->type == PB_STAGE_CACHE)
      return pb_cfg_fail(c, p, "true with a cache stage before the crop (expected no cache between decode and the "
                               "map stage that crops)");
    if (s->type != PB_STAGE_MAP) continue;
    if (s->nops > 0 && s->ops[0].kind == PB_OP_RANDOM_RESIZED_CROP) return 0;
    break;
  }
  return pb_cfg_fail(c, p, "true without a crop to fuse (expected the first map stage after decode to begin with "
                           "a random_resized_crop op)");
}

/* A cache keeps its first epoch and replays it: an endless synthetic source has no first epoch to end,
 * so the cache would copy every sample of the run and never replay (memory without bound, and none of it
 * planned). */
static int check_cache_epoch(pb_cfg_ctx *c) {
  const pb_dataset_cfg *d = &c->cfg->dataset;
  if (d->format != PB_FMT_SYNTHETIC || d->num_samples > 0) return 0;
  for (int i = 0; i < c->cfg->nstages; i++) {
    if (c->cfg->stages[i].type != PB_STAGE_CACHE) continue;
    char p[PB_CFG_PATH_MAX];
    snprintf(p, sizeof p, "stages[%d].type", i);
    return pb_cfg_fail(c, p, "a cache of an endless synthetic dataset would never replay and grows without bound "
                             "(expected dataset.num_samples > 0 with a cache stage)");
  }
  return 0;
}

int pb_cfg_check_pipeline(pb_cfg_ctx *c) {
  int batch = -1, h2d = -1, decode = -1;
  int rc = check_source(c);
  for (int i = 0; !rc && i < c->cfg->nstages; i++) {
    rc = check_position(c, i, &batch, &h2d);
    if (!rc) rc = check_source_stage(c, i, &decode);
  }
  if (!rc && batch < 0) rc = pb_cfg_fail(c, "stages", "no batch stage (expected exactly one stage of type batch)");
  if (!rc) rc = check_fused_crop(c, decode);
  if (!rc) rc = check_cache_epoch(c);
  return rc;
}

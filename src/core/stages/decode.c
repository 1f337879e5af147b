/* The decode stage's config facts: its keys, what it needs before it (read, an encoded payload) and after
 * it (fused_crop's crop), and the image it emits.  Its runtime is src/engine/pipeline/stage_decode.c; the DCT scale
 * arithmetic that both use is decode_scale.c. */
#include <stddef.h>
#include <stdio.h>

#include "config_internal.h"
#include "decode_scale.h"
#include "stage_desc.h"

static const pb_key decode_keys[] = {
    PB_CFG_STAGE_COMMON,
    PB_CFG_THREADS_ANY,
    ROW(pb_stage_cfg, scale, "scale", PB_KT_ENUM, .choices = pb_cfg_decode_scale_names, .def = "\"auto\"",
        .help = "JPEG DCT scaling; auto decodes at full size."),
    ROW(pb_stage_cfg, max_pixels, "max_pixels", PB_KT_INT, .min = 1, .max = 1e12, .def = "100000000",
        .help = "Bigger images are refused as sample errors."),
    ROW(pb_stage_cfg, fused_crop, "fused_crop", PB_KT_BOOL, .def = "false",
        .help = "Decode only the region the next random_resized_crop keeps (the same pixels, less work)."),
};
static const pb_key_table decode_table = TABLE(decode_keys, NULL);

static bool earlier_decode(const pb_config *cfg, int i) {
  for (int j = 0; j < i; j++)
    if (cfg->stages[j].type == PB_STAGE_DECODE) return true;
  return false;
}

/* A decode stage needs files and an encoded payload (JPEG files or tfrecord with JPEG payloads), after the
 * read stage; one is enough. */
static int decode_check(pb_cfg_ctx *c, int i) {
  const pb_dataset_cfg *d = &c->cfg->dataset;
  char what[128];
  int rc = pb_cfg_needs_files(c, i);
  if (rc) return rc;
  if (earlier_decode(c->cfg, i)) return pb_cfg_stage_fail(c, i, "a second decode stage", "at most one decode stage");
  if (d->format == PB_FMT_TFRECORD && d->payload == PB_PAYLOAD_RAW)
    return pb_cfg_stage_fail(c, i, "nothing to decode with dataset.payload \"raw\"",
                             "no decode stage: raw payloads are already tensors");
  if (d->format == PB_FMT_RAW || d->format == PB_FMT_NPY || d->format == PB_FMT_NPZ) {
    snprintf(what, sizeof what, "nothing to decode with dataset.format \"%s\"", pb_format_name(d->format));
    return pb_cfg_stage_fail(c, i, what, "no decode stage: these samples are already tensors");
  }
  if (i == 0 || c->cfg->stages[0].type != PB_STAGE_READ)
    return pb_cfg_stage_fail(c, i, "a decode stage without a read stage before it", "a read stage first");
  return 0;
}

/* fused_crop draws the crop of the first map stage after the decode, which must therefore open with
 * random_resized_crop, with no cache in between (a cached crop would be replayed under another epoch's
 * draw). */
static int decode_check_fused_crop(pb_cfg_ctx *c, int decode) {
  if (!c->cfg->stages[decode].fused_crop) return 0;
  char p[PB_CFG_PATH_MAX];
  snprintf(p, sizeof p, "stages[%d].fused_crop", decode);
  for (int i = decode + 1; i < c->cfg->nstages; i++) {
    const pb_stage_cfg *s = &c->cfg->stages[i];
    if (s->type == PB_STAGE_CACHE)
      return pb_cfg_fail(c, p,
                         "true with a cache stage before the crop (expected no cache between decode and the "
                         "map stage that crops)");
    if (s->type != PB_STAGE_MAP) continue;
    if (s->nops > 0 && s->ops[0].kind == PB_OP_RANDOM_RESIZED_CROP) return 0;
    break;
  }
  return pb_cfg_fail(c, p,
                     "true without a crop to fuse (expected the first map stage after decode to begin with "
                     "a random_resized_crop op)");
}

/* DCT scaling rounds up, as libjpeg does. */
static int64_t scaled(int64_t px, int denom) { return (px + denom - 1) / denom; }

/* Decoded images are [H,W,3] uint8; H and W are known only from dataset.generate.image, scaled as the
 * decode stage scales them (`auto` by the resize after it: pb_decode_denom). */
static int decode_shape(pb_cfg_ctx *c, int i, pb_shape *out) {
  const pb_config *cfg = c->cfg;
  const pb_stage_cfg *decode = &cfg->stages[i];
  const pb_generate_cfg *g = &cfg->dataset.generate;
  int64_t dims[3] = {-1, -1, 3};
  if (g->present && g->has_image) {
    int denom = pb_decode_denom(decode, pb_decode_min_side(cfg, decode), (int)g->width, (int)g->height);
    dims[0] = scaled(g->height, denom);
    dims[1] = scaled(g->width, denom);
  }
  pb_cfg_set_shape(out, 3, dims, PB_DTYPE_UINT8);
  return 0;
}

static const char *const decode_knobs[] = {"threads", NULL};

const pb_stage_desc pb_stage_desc_decode = {
    .type = PB_STAGE_DECODE,
    .name = "decode",
    .options = &decode_table,
    .place = PB_PLACE_BEFORE_BATCH,
    .check = decode_check,
    .check_pipeline = decode_check_fused_crop,
    .shape = decode_shape,
    .knobs = decode_knobs,
};

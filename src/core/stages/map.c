/* The map stage's config facts: its keys (the op list, whose rows are config_schema.c's op tables) and
 * what its ops make of a sample's shape, checked op by op.  Its runtime is src/engine/pipeline/stage_map.c, the ops
 * themselves src/engine/pipeline/ops/. */
#include <stddef.h>
#include <stdio.h>

#include "config_internal.h"
#include "stage_desc.h"

static const pb_key map_keys[] = {
    PB_CFG_STAGE_COMMON,
    PB_CFG_THREADS_ANY,
    {.name = "ops",
     .type = PB_KT_CUSTOM,
     .parse = pb_cfg_parse_ops,
     .emit = pb_cfg_emit_ops,
     .flags = PB_KF_REQUIRED,
     .expect = "an array of 0 to 16 op objects",
     .help = "Ops applied in order; [] is a no-op map."},
    ROW(pb_stage_cfg, ahead, "ahead", PB_KT_INT, .min = 1, .max = 1024, .flags = PB_KF_OMIT_ZERO,
        .help = "Samples in work or done and not yet taken, per thread, at most (tf.data's parallel map: 1, its "
                "buffer being its num_parallel_calls). Default: no bound but its queue's."),
};
static const pb_key_table map_table = TABLE(map_keys, NULL);

/* Spatial ops need [H,W,C]; flip also takes [C,H,W]. */
static int need_image(pb_cfg_ctx *c, const char *path, const pb_op_cfg *op, const pb_shape *in, bool chw_ok) {
  if (in->ndims == 3 && (chw_ok || !in->chw)) return 0;
  char shape[96];
  pb_shape_str(in, shape, sizeof shape);
  const char *expect = in->ndims == 3                               ? "the op before to_chw"
                       : c->cfg->dataset.format == PB_FMT_SYNTHETIC ? "a dataset.shape of [H,W,C]"
                                                                    : "a decode stage before it";
  return pb_cfg_fail(c, path, "%s needs an image [H,W,C] (expected %s; the input is %s%s)", pb_op_name(op->kind),
                     expect, shape, in->chw ? ", channels first" : "");
}

static int64_t channels(const pb_shape *s) {
  if (s->ndims != 3) return -1;
  return s->chw ? s->dims[0] : s->dims[2];
}

/* mean/std hold one value for every channel, or one for all of them. */
static int check_normalize_channels(pb_cfg_ctx *c, const char *path, const pb_op_cfg *op, const pb_shape *in) {
  int64_t ch = channels(in);
  if (ch <= 0 || op->nmean == 1 || op->nmean == ch) return 0;
  char p[PB_CFG_PATH_MAX], shape[96];
  pb_cfg_path_key(p, path, "mean");
  return pb_cfg_fail(c, p, "%d values for %lld channels (expected 1 value or one per channel; the input is %s)",
                     op->nmean, (long long)ch, pb_shape_str(in, shape, sizeof shape));
}

/* Output [h, w] of a shorter-side resize; unknown (-1) when the input size is. */
static void resize_shorter(int64_t h, int64_t w, int64_t size, int64_t out[2]) {
  if (h <= 0 || w <= 0) {
    out[0] = out[1] = -1;
  } else if (h <= w) {
    out[0] = size;
    out[1] = size * w / h;
  } else {
    out[0] = size * h / w;
    out[1] = size;
  }
}

static int apply_op(pb_cfg_ctx *c, const char *path, const pb_op_cfg *op, pb_shape *cur) {
  int rc = 0;
  switch (op->kind) {
    case PB_OP_RANDOM_RESIZED_CROP:
    case PB_OP_CENTER_CROP: {
      rc = need_image(c, path, op, cur, false);
      int64_t dims[3] = {op->size, op->size, cur->dims[2]};
      if (!rc) pb_cfg_set_shape(cur, 3, dims, cur->dtype);
      break;
    }
    case PB_OP_RESIZE: { /* torchvision's Resize(int): the shorter side becomes size */
      rc = need_image(c, path, op, cur, false);
      int64_t dims[3];
      resize_shorter(cur->dims[0], cur->dims[1], op->size, dims);
      dims[2] = cur->dims[2];
      if (!rc) pb_cfg_set_shape(cur, 3, dims, cur->dtype);
      break;
    }
    case PB_OP_FLIP:
      rc = need_image(c, path, op, cur, true);
      break;
    case PB_OP_NORMALIZE: /* per-channel: the map stage runs it on decoded images only */
      rc = need_image(c, path, op, cur, true);
      if (!rc) rc = check_normalize_channels(c, path, op, cur);
      if (!op->on_device) cur->dtype = op->dtype; /* on the device the host stage still emits its input */
      break;
    case PB_OP_TO_CHW: {
      rc = need_image(c, path, op, cur, false);
      int64_t dims[3] = {cur->dims[2], cur->dims[0], cur->dims[1]};
      if (rc) break;
      pb_cfg_set_shape(cur, 3, dims, cur->dtype);
      cur->chw = true;
      break;
    }
    case PB_OP_SPIN:
    case PB_OP_SLEEP:
    case PB_OP__COUNT:
      break;
  }
  return rc;
}

/* A sample carries its image's height and width in 16 bits and its channels in 8 (src/engine/pipeline/elem.h):
 * an image op's input or output beyond that is refused here, not wrapped at run time (a 70000-pixel
 * side read as 4464 would crop the wrong pixels without an error). */
static int check_image_limits(pb_cfg_ctx *c, const char *path, const pb_op_cfg *op, const pb_shape *s,
                              const char *which) {
  if (op->kind == PB_OP_SPIN || op->kind == PB_OP_SLEEP || s->ndims != 3) return 0;
  int64_t h = s->chw ? s->dims[1] : s->dims[0], w = s->chw ? s->dims[2] : s->dims[1], ch = channels(s);
  if (h <= 65535 && w <= 65535 && ch <= 255) return 0;
  char shape[96];
  return pb_cfg_fail(c, path, "%s's %s is %s (expected images of at most 65535 x 65535 pixels and 255 channels)",
                     pb_op_name(op->kind), which, pb_shape_str(s, shape, sizeof shape));
}

static int map_shape(pb_cfg_ctx *c, int i, pb_shape *cur) {
  const pb_stage_cfg *st = &c->cfg->stages[i];
  for (int j = 0; j < st->nops; j++) {
    char p[PB_CFG_PATH_MAX];
    snprintf(p, sizeof p, "stages[%d].ops[%d]", i, j);
    int rc = check_image_limits(c, p, &st->ops[j], cur, "input");
    if (!rc) rc = apply_op(c, p, &st->ops[j], cur);
    if (!rc) rc = check_image_limits(c, p, &st->ops[j], cur, "output");
    if (rc) return rc;
  }
  return 0;
}

static const char *const map_knobs[] = {"threads", NULL};

const pb_stage_desc pb_stage_desc_map = {
    .type = PB_STAGE_MAP,
    .name = "map",
    .options = &map_table,
    .place = PB_PLACE_BEFORE_BATCH,
    .shape = map_shape,
    .knobs = map_knobs,
};

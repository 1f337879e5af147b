/* Per-sample shape inference: what one sample looks like leaving each stage, so synthetic mode can make
 * look-alike samples and the memory check can size buffers before anything runs. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config_internal.h"
#include "decode_scale.h"

size_t pb_dtype_size(pb_dtype d) {
  switch (d) {
  case PB_DTYPE_UINT8: return 1;
  case PB_DTYPE_FLOAT16: return 2;
  case PB_DTYPE_FLOAT32: return 4;
  }
  return 0;
}

/* Saturates at SIZE_MAX, which no memory limit admits. */
size_t pb_shape_bytes(const pb_shape *s) {
  if (!s->known || s->ndims <= 0) return 0;
  size_t bytes = pb_dtype_size(s->dtype);
  for (int i = 0; i < s->ndims && i < PB_MAX_DIMS; i++) {
    if (s->dims[i] <= 0) return 0;
    if (bytes > SIZE_MAX / (uint64_t)s->dims[i]) return SIZE_MAX;
    bytes *= (size_t)s->dims[i];
  }
  return bytes;
}

char *pb_shape_str(const pb_shape *s, char *buf, size_t len) {
  if (s->ndims <= 0) {
    if (s->known) snprintf(buf, len, "[] %s", pb_dtype_name(s->dtype));
    else snprintf(buf, len, "encoded bytes");
    return buf;
  }
  size_t used = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < s->ndims && i < PB_MAX_DIMS && used < len; i++) {
    const char *sep = i ? "," : "";
    if (s->dims[i] < 0) used += (size_t)snprintf(buf + used, len - used, "%s?", sep);
    else used += (size_t)snprintf(buf + used, len - used, "%s%lld", sep, (long long)s->dims[i]);
  }
  if (used < len) snprintf(buf + used, len - used, "] %s", pb_dtype_name(s->dtype));
  return buf;
}

/* Shapes are built in place with memset, padding included, so two equal configs are equal bytes. */
static void set_shape(pb_shape *s, int ndims, const int64_t *dims, pb_dtype dtype) {
  memset(s, 0, sizeof *s);
  s->ndims = ndims;
  s->dtype = dtype;
  s->known = true;
  for (int i = 0; i < ndims; i++) {
    s->dims[i] = dims[i];
    if (dims[i] < 0) s->known = false;
  }
}

static void set_encoded_bytes(pb_shape *s) {
  set_shape(s, 0, NULL, PB_DTYPE_UINT8);
  s->known = false;
}

/* JPEG payloads leave read still encoded; everything else is fixed-size records of bytes. */
static void read_output(const pb_dataset_cfg *d, pb_shape *out) {
  int64_t bytes = d->record_bytes > 0 ? d->record_bytes : -1;
  if (d->format == PB_FMT_JPEG || (d->format == PB_FMT_TFRECORD && d->payload == PB_PAYLOAD_JPEG))
    set_encoded_bytes(out);
  else
    set_shape(out, 1, &bytes, PB_DTYPE_UINT8);
}

/* DCT scaling rounds up, as libjpeg does. */
static int64_t scaled(int64_t px, int denom) { return (px + denom - 1) / denom; }

/* Decoded images are [H,W,3] uint8; H and W are known only from dataset.generate.image, scaled as the
 * decode stage scales them (`auto` by the resize after it: pb_decode_denom). */
static void decode_output(const pb_config *cfg, const pb_stage_cfg *decode, pb_shape *out) {
  const pb_generate_cfg *g = &cfg->dataset.generate;
  int64_t dims[3] = {-1, -1, 3};
  if (g->present && g->has_image) {
    int denom = pb_decode_denom(decode, pb_decode_min_side(cfg, decode), (int)g->width, (int)g->height);
    dims[0] = scaled(g->height, denom);
    dims[1] = scaled(g->width, denom);
  }
  set_shape(out, 3, dims, PB_DTYPE_UINT8);
}

/* Spatial ops need [H,W,C]; flip also takes [C,H,W]. */
static int need_image(pb_cfg_ctx *c, const char *path, const pb_op_cfg *op, const pb_shape *in, bool chw_ok) {
  if (in->ndims == 3 && (chw_ok || !in->chw)) return 0;
  char shape[96];
  pb_shape_str(in, shape, sizeof shape);
  const char *expect = in->ndims == 3 ? "the op before to_chw"
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
    if (!rc) set_shape(cur, 3, dims, cur->dtype);
    break;
  }
  case PB_OP_RESIZE: { /* torchvision's Resize(int): the shorter side becomes size */
    rc = need_image(c, path, op, cur, false);
    int64_t dims[3];
    resize_shorter(cur->dims[0], cur->dims[1], op->size, dims);
    dims[2] = cur->dims[2];
    if (!rc) set_shape(cur, 3, dims, cur->dtype);
    break;
  }
  case PB_OP_FLIP: rc = need_image(c, path, op, cur, true); break;
  case PB_OP_NORMALIZE: /* per-channel: the map stage runs it on decoded images only */
    rc = need_image(c, path, op, cur, true);
    if (!rc) rc = check_normalize_channels(c, path, op, cur);
    if (!op->on_device) cur->dtype = op->dtype; /* on the device the host stage still emits its input */
    break;
  case PB_OP_TO_CHW: {
    rc = need_image(c, path, op, cur, false);
    int64_t dims[3] = {cur->dims[2], cur->dims[0], cur->dims[1]};
    if (rc) break;
    set_shape(cur, 3, dims, cur->dtype);
    cur->chw = true;
    break;
  }
  case PB_OP_SPIN:
  case PB_OP_SLEEP:
  case PB_OP__COUNT: break;
  }
  return rc;
}

/* A sample carries its image's height and width in 16 bits and its channels in 8 (pipeline/elem.h):
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

static int map_output(pb_cfg_ctx *c, int i, pb_shape *cur) {
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

int pb_cfg_infer_shapes(pb_cfg_ctx *c) {
  pb_config *cfg = c->cfg;
  const pb_shape *sample = &cfg->dataset.sample;
  pb_shape cur;
  if (cfg->dataset.format == PB_FMT_SYNTHETIC) set_shape(&cur, sample->ndims, sample->dims, sample->dtype);
  else set_encoded_bytes(&cur); /* unused: file formats start with a read stage */
  for (int i = 0; i < cfg->nstages; i++) {
    pb_stage_cfg *st = &cfg->stages[i];
    int rc = 0;
    if (st->type == PB_STAGE_READ) read_output(&cfg->dataset, &cur);
    else if (st->type == PB_STAGE_DECODE) decode_output(cfg, st, &cur);
    else if (st->type == PB_STAGE_MAP) rc = map_output(c, i, &cur);
    if (rc) return rc;
    memcpy(&st->out_shape, &cur, sizeof cur); /* shuffle, cache, batch, prefetch, h2d keep the shape */
  }
  return 0;
}

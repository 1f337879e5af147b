/* decode_scale.h: the decode stage's DCT scale, as arithmetic. */
#include "decode_scale.h"

#include "common.h"

static int valid_denom(int scale_denom) {
  return scale_denom == 1 || scale_denom == 2 || scale_denom == 4 || scale_denom == 8;
}

int pb_jpeg_scaled_dim(int dim, int scale_denom) {
  if (!valid_denom(scale_denom) || dim <= 0) return 0;
  return (dim + scale_denom - 1) / scale_denom; /* TurboJPEG's TJSCALED at 1/scale_denom: rounded up */
}

int pb_jpeg_auto_scale(int width, int height, int min_side) {
  if (min_side <= 0) return 1;
  for (int denom = 8; denom > 1; denom /= 2) {
    int side = PB_MIN(pb_jpeg_scaled_dim(width, denom), pb_jpeg_scaled_dim(height, denom));
    if (side >= min_side) return denom;
  }
  return 1;
}

int pb_decode_min_side(const pb_config *cfg, const pb_stage_cfg *decode) {
  for (int i = (int)(decode - cfg->stages) + 1; i < cfg->nstages; i++) {
    const pb_stage_cfg *sc = &cfg->stages[i];
    for (int j = 0; sc->type == PB_STAGE_MAP && j < sc->nops; j++) {
      pb_op_kind k = sc->ops[j].kind;
      /* only a shorter-side resize gives nearly the same pixels from a smaller decode (PIL's draft());
       * a crop first would see another part of the image (center_crop) or upsample a small region
       * (random_resized_crop): full size */
      if (k == PB_OP_RESIZE) return (int)sc->ops[j].size;
      if (k == PB_OP_RANDOM_RESIZED_CROP || k == PB_OP_CENTER_CROP) return 0;
    }
  }
  return 0;
}

int pb_crop_denom(int crop_h, int crop_w, int out_side) {
  if (out_side <= 0) return 1;
  for (int denom = 8; denom > 1; denom /= 2)
    if (crop_h / denom >= out_side && crop_w / denom >= out_side) return denom;
  return 1;
}

/* [a, a + n) of a full-size axis at 1/denom, edges rounded to the nearest scaled pixel, inside [0, limit). */
static void scaled_span(int a, int n, int denom, int limit, int *sa, int *sn) {
  int lo = (a + denom / 2) / denom, hi = (a + n + denom / 2) / denom;
  if (hi > limit) hi = limit;
  if (lo > hi - 1) lo = hi - 1;
  if (lo < 0) lo = 0, hi = PB_MAX(hi, 1);
  *sa = lo, *sn = hi - lo;
}

void pb_crop_scaled(int x, int y, int w, int h, int denom, int sw, int sh, int *sx, int *sy, int *scw, int *sch) {
  scaled_span(x, w, denom, sw, sx, scw);
  scaled_span(y, h, denom, sh, sy, sch);
}

int pb_decode_denom(const pb_stage_cfg *decode, int min_side, int width, int height) {
  switch (decode->scale) {
    case PB_SCALE_1_2: return 2;
    case PB_SCALE_1_4: return 4;
    case PB_SCALE_1_8: return 8;
    case PB_SCALE_AUTO: return min_side ? pb_jpeg_auto_scale(width, height, min_side) : 1;
    default: return 1;
  }
}

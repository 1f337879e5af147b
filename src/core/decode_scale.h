/* The decode stage's output size, from the config and an image's size: which DCT scale it decodes at.
 * Pure arithmetic, in the core layer, because the config's shape inference (config_shape.c), the memory
 * plan's probes (plan_probe.c), `pipebench calibrate` and the stage itself (stage_decode.c) must agree. */
#ifndef PB_DECODE_SCALE_H
#define PB_DECODE_SCALE_H

#include "config.h"

/* One scaled side: TurboJPEG's TJSCALED, ceil(dim / scale_denom).  0 for a scale_denom not in {1,2,4,8}. */
int pb_jpeg_scaled_dim(int dim, int scale_denom);

/* The `scale: auto` choice: the largest denominator of 1, 2, 4, 8 whose scaled image keeps its shorter side
 * >= min_side (the crop size that follows decode), so decode does as little work as the crop allows.  1 when
 * even the full image is smaller than min_side, or when min_side <= 0 (nothing to size for: no scaling). */
int pb_jpeg_auto_scale(int width, int height, int min_side);

/* For `scale: auto`: the size the first spatial op after `decode` resizes the shorter side to, when that
 * op is a `resize` (the decode may not go below it); 0 (full size) when it is a crop or there is none.
 * `decode` points into cfg->stages. */
int pb_decode_min_side(const pb_config *cfg, const pb_stage_cfg *decode);
/* The stage's scale denominator for a width x height image: its fixed scale, or for auto the largest of 1,
 * 2, 4, 8 that keeps the shorter side >= min_side (1 when min_side is 0). */
int pb_decode_denom(const pb_stage_cfg *decode, int min_side, int width, int height);

/* fused_crop under scale "auto": the DCT scale of one crop of crop_h x crop_w pixels that a resize makes
 * out_side x out_side: the largest of 8, 4 and 2 that keeps both of the crop's sides at least out_side once
 * divided (a 2,000-px crop for 224 decodes at 1/8), else 1.  Never upsamples what a full decode would not. */
int pb_crop_denom(int crop_h, int crop_w, int out_side);

/* A crop drawn at full size (x, y, w, h), in the image decoded at 1/denom (sw x sh pixels): its edges at the
 * nearest scaled pixel (a shift of at most half a scaled pixel), at least one pixel wide and high, inside the
 * image.  The decode stage cuts this region and the map stage resizes it: both call this. */
void pb_crop_scaled(int x, int y, int w, int h, int denom, int sw, int sh, int *sx, int *sy, int *scw, int *sch);

#endif

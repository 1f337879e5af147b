/* The decode stage's choice of DCT scale (stage_decode.c), shared with `pipebench calibrate`, which
 * measures decoding exactly as the stage decodes. */
#ifndef PB_STAGE_DECODE_H
#define PB_STAGE_DECODE_H

#include "config.h"

/* For `scale: auto`: the size the first spatial op after `decode` resizes the shorter side to, when that
 * op is a `resize` (the decode may not go below it); 0 (full size) when it is a crop or there is none.
 * `decode` points into cfg->stages. */
int pb_decode_min_side(const pb_config *cfg, const pb_stage_cfg *decode);
/* The stage's scale denominator for a width x height image: its fixed scale, or for auto the largest of 1,
 * 2, 4, 8 that keeps the shorter side >= min_side (1 when min_side is 0). */
int pb_decode_denom(const pb_stage_cfg *decode, int min_side, int width, int height);

#endif

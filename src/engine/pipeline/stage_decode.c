/* `decode`: JPEG to packed RGB with libjpeg-turbo (TurboJPEG), one decoder per thread.  `scale` uses
 * libjpeg-turbo's DCT scaling (1/2, 1/4, 1/8 decode faster and smaller); `auto` picks the largest
 * reduction that keeps the shorter side at least the size of the first map op that resizes or crops.
 * `max_pixels` refuses huge images from the header, before any decoding.  A corrupt, truncated or
 * refused image is an error on that sample.  `fused_crop`: the stage draws the crop that the next map
 * stage's random_resized_crop would (the same seed, pb_elem_aug_seed) and decodes only that region
 * (jpeg_region.c), as tf.data's decode_and_crop_jpeg and DALI's fused decoder do; the map then only
 * resizes, and the pixels are the same.  The region comes out as wide as the iMCU columns libjpeg decodes
 * (elem crop_x says where the crop starts), so no row is copied. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "plan_probe.h"
#include "sat.h"
#include "jpeg.h"
#include "ops.h"
#include "decode_scale.h"

typedef struct decode_state {
  pb_pool pool;
  bool pool_ready;
  int auto_min_side; /* auto: the next crop/resize size (0 = none: full size) */
  /* fused_crop: the random_resized_crop it draws for, and the map stage whose seed it uses */
  const pb_op_cfg *crop;
  int crop_stage_index;
} decode_state;

typedef struct decode_worker {
  pb_jpeg_decoder *dec;
  pb_jpeg_region *region; /* fused_crop only */
} decode_worker;



/* fused_crop: the first map stage after this one opens with the crop (config_pipeline.c checks it). */
static void find_crop(const pb_stage *s, decode_state *st) {
  for (int i = s->index + 1; s->cfg->fused_crop && i < s->engine->nstages; i++) {
    const pb_stage_cfg *sc = s->engine->stages[i].cfg;
    if (!sc || sc->type != PB_STAGE_MAP) continue;
    if (sc->nops > 0 && sc->ops[0].kind == PB_OP_RANDOM_RESIZED_CROP) {
      st->crop = &sc->ops[0];
      st->crop_stage_index = i;
    }
    return;
  }
}

static uint64_t decode_memory(const pb_stage *s, pb_queue_fill fill) {
  return pb_sat_mul_u64((uint64_t)pb_stage_pool_buffers(s, fill), s->sample_bytes);
}

static int decode_init(pb_stage *s, pb_err *err) {
  decode_state *st = calloc(1, sizeof *st);
  if (!st || pb_pool_init(&st->pool, pb_stage_pool_buffers(s, PB_QUEUES_FULL), 0, 64)) {
    free(st);
    return pb_err_setc(err, -ENOMEM, "out of memory for the decode stage's buffers");
  }
  st->pool_ready = true;
  pb_pool_plan(&st->pool, s->sample_bytes, &s->engine->mem_budget); /* an image past the plan: its excess, or refused */
  st->auto_min_side = pb_decode_min_side(s->engine->cfg, s->cfg);
  find_crop(s, st);
  s->state = st;
  for (int k = 0; k < s->threads; k++) {
    decode_worker *dw = calloc(1, sizeof *dw);
    if (!dw) return pb_err_setc(err, -ENOMEM, "out of memory for the decode stage's decoders");
    s->workers[k].state = dw;
    if (pb_jpeg_decoder_init(&dw->dec, err)) return -ENOMEM;
    if (st->crop && pb_jpeg_region_init(&dw->region, err)) return -ENOMEM;
  }
  return 0;
}

static int decode_fail(pb_worker *w, pb_elem *in, pb_buf *out, const char *message) {
  pb_buf_release(out);
  char msg[1100]; /* pb_err's message, and the record */
  if (w->stage->engine->cfg->dataset.format == PB_FMT_TFRECORD) { /* many samples a file: say which */
    snprintf(msg, sizeof msg, "record %u (counting from 0): %s", in->record, message);
    message = msg;
  }
  pb_worker_error(w, in, pb_engine_file_path(w->stage->engine, in->file_index), message, false);
  return 0;
}

/* A decoded image that got no buffer: past the memory plan (-E2BIG), or out of memory. */
static int reserve_failed(const pb_stage *s, int rc, size_t bytes, pb_err *err) {
  if (rc == -E2BIG)
    pb_engine_over_plan_msg(s, bytes, err->msg, sizeof err->msg);
  else
    pb_err_set(err, "out of memory for the decoded image");
  return rc;
}

/* fused_crop: the region of the (scaled) sw x sh image the map stage's crop will keep, decoded into out.  Under
 * scale "auto" (per_crop) each crop is decoded at its own DCT scale, the smallest image that still holds the
 * crop at the crop op's output size (pb_crop_denom): the IDCT, upsampling and colour conversion then run on
 * up to 64x fewer pixels.  The map stage resizes what came out (pb_crop_scaled says where the crop is). */
static int decode_crop(pb_worker *w, const pb_elem *in, int denom, bool per_crop, int sw, int sh, pb_buf *out,
                       pb_elem *e, pb_err *err) {
  decode_state *st = w->stage->state;
  decode_worker *dw = w->state;
  pb_rng rng;
  pb_rng_seed(&rng, pb_elem_aug_seed(in, w->stage->engine->cfg->seed, st->crop_stage_index));
  int d, xywh[4];
  pb_fused_crop_region(&rng, sh, sw, st->crop, per_crop, &d, xywh);
  pb_jpeg_rect rect = {.x = xywh[0], .y = xywh[1], .w = xywh[2], .h = xywh[3]}, got;
  size_t bytes = pb_jpeg_region_capacity(&rect, pb_jpeg_scaled_dim(sw, d));
  int rc = pb_buf_reserve(out, bytes);
  if (rc) return reserve_failed(w->stage, rc, bytes, err);
  rc = pb_jpeg_decode_region(dw->region, in->data, in->bytes, &rect, denom * d, w->stage->cfg->max_pixels, out->data,
                             out->capacity_bytes, &got, err);
  if (rc) return rc;
  e->height = (uint16_t)got.h;
  e->width = (uint16_t)got.w;
  e->crop_x = (uint16_t)(rect.x - got.x);
  e->crop_denom = (uint8_t)d;
  e->full_height = (uint16_t)sh;
  e->full_width = (uint16_t)sw;
  return 0;
}

static int decode_process(pb_worker *w, pb_elem *in) {
  decode_state *st = w->stage->state;
  decode_worker *dw = w->state;
  pb_jpeg_decoder *dec = dw->dec;
  pb_err err;
  int width = 0, height = 0, out_w, out_h; /* tjDecompressHeader3 can succeed without setting them */
  if (pb_jpeg_header(dec, in->data, in->bytes, &width, &height, &err)) return decode_fail(w, in, NULL, err.msg);
  int64_t max_pixels = w->stage->cfg->max_pixels;
  if (max_pixels > 0 && (int64_t)width * height > max_pixels) { /* refuse before reserving its memory */
    char msg[200];
    snprintf(msg, sizeof msg, "image of %dx%d = %lld pixels is over max_pixels %lld (expected at most that many)",
             width, height, (long long)width * height, (long long)max_pixels);
    return decode_fail(w, in, NULL, msg);
  }
  int denom = pb_decode_denom(w->stage->cfg, st->auto_min_side, width, height);
  pb_buf *out = pb_worker_get_buf(w, &st->pool);
  if (!out) {
    pb_worker_abandon(w, in);
    return -ECANCELED;
  }
  pb_elem e = *in;
  if (st->crop) {
    bool per_crop = w->stage->cfg->scale == PB_SCALE_AUTO; /* denom is 1 then: a crop op comes first */
    if (decode_crop(w, in, denom, per_crop, pb_jpeg_scaled_dim(width, denom), pb_jpeg_scaled_dim(height, denom), out,
                    &e, &err))
      return decode_fail(w, in, out, err.msg);
  } else {
    size_t bytes = pb_jpeg_decoded_bytes(width, height, denom);
    int rc = pb_buf_reserve(out, bytes);
    if (rc) return reserve_failed(w->stage, rc, bytes, &err), decode_fail(w, in, out, err.msg);
    if (pb_jpeg_decode(dec, in->data, in->bytes, denom, w->stage->cfg->max_pixels, out->data, out->capacity_bytes,
                       &out_w, &out_h, &err))
      return decode_fail(w, in, out, err.msg);
    e.height = (uint16_t)out_h;
    e.width = (uint16_t)out_w;
  }
  pb_buf_release(in->buf);
  e.buf = out;
  e.data = out->data;
  e.bytes = (size_t)e.width * (size_t)e.height * 3;
  e.channels = 3;
  e.dtype = PB_DTYPE_UINT8;
  e.chw = 0;
  return pb_emit(w, &e);
}

static void decode_cancel(pb_stage *s) {
  decode_state *st = s->state;
  pb_pool_cancel(&st->pool);
}

static void decode_close(pb_stage *s) {
  decode_state *st = s->state;
  if (!st) return;
  for (int k = 0; s->workers && k < s->threads; k++) {
    decode_worker *dw = s->workers[k].state;
    if (!dw) continue;
    pb_jpeg_decoder_free(dw->dec);
    pb_jpeg_region_free(dw->region);
    free(dw);
    s->workers[k].state = NULL;
  }
  pb_pool_close(&st->pool);
  free(st);
  s->state = NULL;
}

/* Bytes of one decoded image: the shape's when dataset.generate.image gives it, else the largest of the
 * probed images' headers at the scale decode will use (plan_probe.c), else a guess. */
static uint64_t decode_sample_bytes(const pb_stage *s, uint64_t input_bytes) {
  (void)input_bytes; /* encoded bytes say little about the image */
  uint64_t shape_bytes = pb_shape_bytes(&s->sample_shape);
  if (shape_bytes) return shape_bytes;
  uint64_t probed = s->engine->have_files ? pb_probe_decoded_bytes(s->engine, s->cfg) : 0;
  return probed ? probed : 6u << 20; /* unknown image: ~2 MP */
}

const pb_stage_ops pb_stage_decode_ops = {
    .type = "decode",
    .desc = &pb_stage_desc_decode,
    .memory_bytes = decode_memory,
    .sample_bytes = decode_sample_bytes,
    .init = decode_init,
    .process = decode_process,
    .cancel = decode_cancel,
    .close = decode_close,
};

/* `decode`: JPEG to packed RGB with libjpeg-turbo (TurboJPEG), one decoder per thread.  `scale` uses
 * libjpeg-turbo's DCT scaling (1/2, 1/4, 1/8 decode faster and smaller); `auto` picks the largest
 * reduction that keeps the shorter side at least the size of the first map op that resizes or crops.
 * `max_pixels` refuses huge images from the header, before any decoding.  A corrupt, truncated or
 * refused image is an error on that sample. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "jpeg.h"

typedef struct decode_state {
  pb_pool pool;
  bool pool_ready;
  int fixed_denom;   /* 1, 2, 4, 8; 0 = auto */
  int auto_min_side; /* auto: the next crop/resize size (0 = none: full size) */
} decode_state;

static int denom_of(pb_decode_scale s) {
  switch (s) {
    case PB_SCALE_1_2: return 2;
    case PB_SCALE_1_4: return 4;
    case PB_SCALE_1_8: return 8;
    case PB_SCALE_AUTO: return 0;
    default: return 1;
  }
}

/* The size the image is cropped or resized to next, which the auto scale must not go below. */
static int next_size(const pb_stage *s) {
  const pb_config *cfg = s->engine->cfg;
  for (int i = s->index + 1; i < s->engine->nstages; i++) {
    const pb_stage_cfg *sc = s->engine->stages[i].cfg;
    for (int j = 0; sc && sc->type == PB_STAGE_MAP && j < sc->nops; j++) {
      pb_op_kind k = sc->ops[j].kind;
      if (k == PB_OP_RANDOM_RESIZED_CROP || k == PB_OP_RESIZE || k == PB_OP_CENTER_CROP) return (int)sc->ops[j].size;
    }
  }
  (void)cfg;
  return 0;
}

static uint64_t decode_memory(const pb_stage *s) { return (uint64_t)pb_stage_pool_buffers(s) * s->sample_bytes; }

static int decode_init(pb_stage *s, pb_err *err) {
  decode_state *st = calloc(1, sizeof *st);
  if (!st || pb_pool_init(&st->pool, pb_stage_pool_buffers(s), 0, 64)) {
    free(st);
    return pb_err_set(err, "out of memory for the decode stage's buffers"), -ENOMEM;
  }
  st->pool_ready = true;
  st->fixed_denom = denom_of(s->cfg->scale);
  st->auto_min_side = next_size(s);
  s->state = st;
  for (int k = 0; k < s->threads; k++) {
    pb_jpeg_decoder *dec = NULL;
    if (pb_jpeg_decoder_init(&dec, err)) return -ENOMEM;
    s->workers[k].state = dec;
  }
  return 0;
}

static int decode_fail(pb_worker *w, pb_elem *in, pb_buf *out, const char *message) {
  pb_buf_release(out);
  pb_worker_error(w, in, pb_engine_file_path(w->stage->engine, in->file_index), message, false);
  return 0;
}

static int decode_process(pb_worker *w, pb_elem *in) {
  decode_state *st = w->stage->state;
  pb_jpeg_decoder *dec = w->state;
  pb_err err;
  int width, height, out_w, out_h;
  if (pb_jpeg_header(dec, in->data, in->bytes, &width, &height, &err)) return decode_fail(w, in, NULL, err.msg);
  int64_t max_pixels = w->stage->cfg->max_pixels;
  if (max_pixels > 0 && (int64_t)width * height > max_pixels) { /* refuse before reserving its memory */
    char msg[200];
    snprintf(msg, sizeof msg, "image of %dx%d = %lld pixels is over max_pixels %lld (expected at most that many)",
             width, height, (long long)width * height, (long long)max_pixels);
    return decode_fail(w, in, NULL, msg);
  }
  int denom = st->fixed_denom ? st->fixed_denom
                              : (st->auto_min_side ? pb_jpeg_auto_scale(width, height, st->auto_min_side) : 1);
  pb_buf *out = pb_worker_get_buf(w, &st->pool);
  if (!out) {
    pb_worker_abandon(w, in);
    return -ECANCELED;
  }
  size_t bytes = pb_jpeg_decoded_bytes(width, height, denom);
  if (pb_buf_reserve(out, bytes)) return decode_fail(w, in, out, "out of memory for the decoded image");
  if (pb_jpeg_decode(dec, in->data, in->bytes, denom, w->stage->cfg->max_pixels, out->data, out->capacity_bytes,
                     &out_w, &out_h, &err))
    return decode_fail(w, in, out, err.msg);
  pb_elem e = *in;
  pb_buf_release(in->buf);
  e.buf = out;
  e.data = out->data;
  e.bytes = (size_t)out_w * (size_t)out_h * 3;
  e.height = (uint16_t)out_h;
  e.width = (uint16_t)out_w;
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
  for (int k = 0; s->workers && k < s->threads; k++) pb_jpeg_decoder_free(s->workers[k].state);
  pb_pool_close(&st->pool);
  free(st);
  s->state = NULL;
}

const pb_stage_ops pb_stage_decode_ops = {
    .type = "decode",
    .memory_bytes = decode_memory,
    .init = decode_init,
    .process = decode_process,
    .cancel = decode_cancel,
    .close = decode_close,
};

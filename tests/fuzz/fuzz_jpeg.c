/* libFuzzer target: JPEG decoding (src/engine/pipeline/dataset/jpeg.c over libjpeg-turbo), the way the decode stage
 * (src/engine/pipeline/stage_decode.c) runs it: header first, the max_pixels guard before any buffer is reserved, an
 * output buffer of exactly pb_jpeg_decoded_bytes, then pb_jpeg_decode.
 *
 * Input: one selector byte, then the JPEG file.  The selector picks the scaled decode that follows the
 * full-size one: 1/2, 1/4 or 1/8 (its low 2 bits: 0 = the stage's `scale: auto` choice for a 224 crop); its
 * next bits, the path a progressive scan's AC refinement takes (pb_jpeg_huff_refine_path: portable, SSSE3,
 * pdep), so that each is fuzzed whatever the CPU picks.
 * One decoder serves the whole process, as one serves every image of a decode worker thread, so a file that
 * leaves the handle in a bad state shows up on the next one.
 *
 * Checked besides ASan/UBSan/leaks: every failure is an error code the stage expects, with a one-line message; a
 * decoded image has exactly the scaled size; an image over max_pixels is refused from its header; a
 * buffer one byte short is refused; the region decoder (fused_crop) fails only with those codes too. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jpeg.h"
#include "jpeg_huff.h"

#define MAX_PIXELS 4000000 /* a fuzzed header can claim 65500x65500: refuse it, as the stage's max_pixels does */
#define AUTO_MIN_SIDE 224  /* the resnet preset's random_resized_crop size */

static pb_jpeg_decoder *dec;
static pb_jpeg_region *region; /* fused_crop's decoder (jpeg_region.c), also one for the process */

static void fail(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_jpeg: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

static void check_error(int rc, const pb_err *err, int allowed) {
  if (rc != -EBADMSG && rc != allowed) fail("unexpected error code", err->msg);
  if (!err->msg[0]) fail("error without a message", NULL);
  if (strchr(err->msg, '\n')) fail("error message of more than one line", err->msg);
}

/* Decodes at 1/denom into a buffer of exactly the size the stage reserves. */
static void decode(const uint8_t *data, size_t size, int width, int height, int denom) {
  size_t bytes = pb_jpeg_decoded_bytes(width, height, denom);
  if (bytes == 0) fail("pb_jpeg_decoded_bytes gave 0 for a valid header", NULL);
  uint8_t *out = malloc(bytes);
  if (!out) return;
  int ow = -1, oh = -1;
  pb_err err = {{0}};
  /* One byte short: refused before decoding. */
  int rc = pb_jpeg_decode(dec, data, size, denom, MAX_PIXELS, out, bytes - 1, &ow, &oh, &err);
  if (rc != -ENOBUFS) check_error(rc, &err, -ENOBUFS);
  rc = pb_jpeg_decode(dec, data, size, denom, MAX_PIXELS, out, bytes, &ow, &oh, &err);
  if (rc == 0) {
    if (ow != pb_jpeg_scaled_dim(width, denom) || oh != pb_jpeg_scaled_dim(height, denom))
      fail("decoded size differs from the scaled header size", NULL);
    /* Read every output byte: ASan would flag a short allocation, and the sum keeps the loop. */
    unsigned sum = 0;
    for (size_t i = 0; i < bytes; i++) sum += out[i];
    if (sum == 0xFFFFFFFFu) fprintf(stderr, "%u\n", sum);
  } else {
    check_error(rc, &err, -ENOMEM);
  }
  free(out);
}

/* Region r of the image at 1/denom (sw pixels wide) into a buffer of the capacity the stage reserves (too
 * small would be -ENOBUFS: a failure here); an error is one the stage expects, with one line. */
static void decode_rect(const uint8_t *data, size_t size, const pb_jpeg_rect *r, int denom, int sw) {
  size_t bytes = pb_jpeg_region_capacity(r, sw);
  uint8_t *out = malloc(bytes);
  if (!out) return;
  pb_err err = {{0}};
  pb_jpeg_rect got;
  int rc = pb_jpeg_decode_region(region, data, size, r, denom, MAX_PIXELS, out, bytes, &got, &err);
  if (rc) check_error(rc, &err, -EINVAL);
  free(out);
}

/* fused_crop's path: the centre half of the image at the selector's scale. */
static void decode_region(const uint8_t *data, size_t size, int width, int height, int denom) {
  int sw = pb_jpeg_scaled_dim(width, denom), sh = pb_jpeg_scaled_dim(height, denom);
  pb_jpeg_rect r = {sw / 4, sh / 4, sw / 2 > 0 ? sw / 2 : 1, sh / 2 > 0 ? sh / 2 : 1};
  decode_rect(data, size, &r, denom, sw);
}

/* fused_crop under scale auto: the centre half at full size, decoded at its own DCT scale for a 16-pixel
 * output (small, so that the fuzzer's small images scale too), where pb_crop_scaled puts it. */
static void decode_crop_scaled(const uint8_t *data, size_t size, int width, int height) {
  int w = width / 2 > 0 ? width / 2 : 1, h = height / 2 > 0 ? height / 2 : 1, d = pb_crop_denom(h, w, 16);
  int sw = pb_jpeg_scaled_dim(width, d), sh = pb_jpeg_scaled_dim(height, d);
  pb_jpeg_rect r;
  pb_crop_scaled(width / 4, height / 4, w, h, d, sw, sh, &r.x, &r.y, &r.w, &r.h);
  if (r.x < 0 || r.y < 0 || r.w < 1 || r.h < 1 || r.x + r.w > sw || r.y + r.h > sh)
    fail("pb_crop_scaled put the crop outside the scaled image", NULL);
  decode_rect(data, size, &r, d, sw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dec) {
    pb_err err;
    if (pb_jpeg_decoder_init(&dec, &err)) fail("pb_jpeg_decoder_init", err.msg);
    if (pb_jpeg_region_init(&region, &err)) fail("pb_jpeg_region_init", err.msg);
  }
  if (size < 1) return 0;
  int selector = data[0] & 3;
  pb_jpeg_huff_refine_path((data[0] >> 2) % 3); /* a progressive file's AC refinement path (jpeg_phuff.c) */
  data++, size--;

  /* The stage works on a heap buffer of exactly the file's size: copy, so ASan sees every over-read. */
  uint8_t *file = malloc(size ? size : 1);
  if (!file) return 0;
  memcpy(file, data, size);

  int width = 0, height = 0;
  pb_err err = {{0}};
  int rc = pb_jpeg_header(dec, file, size, &width, &height, &err);
  if (rc) {
    check_error(rc, &err, -ENOMEM);
  } else if (width <= 0 || height <= 0) {
    fail("pb_jpeg_header accepted a non-positive size", NULL);
  } else if ((int64_t)width * height > MAX_PIXELS) {
    /* The stage refuses it from the header; pb_jpeg_decode must too, before it looks at the buffer. */
    int ow, oh;
    rc = pb_jpeg_decode(dec, file, size, 1, MAX_PIXELS, NULL, 0, &ow, &oh, &err);
    if (rc != -EFBIG) fail("an image over max_pixels was not refused with -EFBIG", err.msg);
  } else {
    decode(file, size, width, height, 1);
    int denom = selector ? 1 << selector : pb_jpeg_auto_scale(width, height, AUTO_MIN_SIDE);
    if (denom != 1) decode(file, size, width, height, denom);
    decode_region(file, size, width, height, denom);
    decode_crop_scaled(file, size, width, height);
  }
  free(file);
  return 0;
}

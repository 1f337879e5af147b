/* JPEG encode and decode with libjpeg-turbo: the header through its TurboJPEG API (tjDecompressHeader3), the
 * pixels through libjpeg's own API with pipebench's Huffman decoder in libjpeg's place where the file allows
 * (jpeg_region.c, jpeg_huff.c), the encoder through TurboJPEG (tjCompress2).
 *
 * The decoder is the core of the `decode` stage: one pb_jpeg_decoder per worker thread (libjpeg's state is
 * not thread-safe, and creating one per image would cost more than decoding a small image), packed RGB out,
 * DCT scaling by 1/1, 1/2, 1/4 or 1/8, and a `max_pixels` guard checked from the header before any pixel is
 * decoded.  The encoder is what `pipebench gen` uses to write synthetic JPEGs (see synth_image.h).
 *
 * Error messages name what is wrong but not the file (these functions only see bytes): a caller that knows the
 * file writes "<file>: <msg>".  Return codes: 0; -EINVAL for a bad argument; -EBADMSG for corrupt, truncated
 * or unsupported image data (TurboJPEG warnings included: a partially decoded image is an error, never a
 * silent sample); -EFBIG for an image above max_pixels; -ENOBUFS for an output buffer that is too small;
 * -ENOMEM when TurboJPEG or malloc cannot allocate. */
#ifndef PB_JPEG_H
#define PB_JPEG_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "decode_scale.h" /* pb_jpeg_scaled_dim, pb_jpeg_auto_scale */

typedef struct pb_jpeg_decoder pb_jpeg_decoder;
typedef struct pb_jpeg_encoder pb_jpeg_encoder;

/* ---- decoding ---- */

int pb_jpeg_decoder_init(pb_jpeg_decoder **dec, pb_err *err);
void pb_jpeg_decoder_free(pb_jpeg_decoder *dec); /* NULL is fine */

/* Reads the image size from the JPEG header (no pixel is decoded). */
int pb_jpeg_header(pb_jpeg_decoder *dec, const uint8_t *data, size_t bytes, int *width, int *height,
                   pb_err *err);

/* Bytes of the packed RGB image pb_jpeg_decode writes for a width x height JPEG at 1/scale_denom:
 * scaled_width * scaled_height * 3.  0 for a bad size or scale_denom. */
size_t pb_jpeg_decoded_bytes(int width, int height, int scale_denom);

/* Decodes to packed RGB (3 bytes a pixel, rows of out_width * 3 bytes, no padding) scaled by 1/scale_denom
 * (1, 2, 4 or 8) with libjpeg's DCT scaling, so out_width = ceil(width / scale_denom).  Images whose
 * full-size width * height exceeds max_pixels (<= 0: no limit) are refused from the header, before decoding:
 * the guard is on the stored image, whatever the scaling, because that is what a hostile file can inflate.
 * Pixels are exactly what libjpeg-turbo's `djpeg -rgb [-scale 1/N]` writes (accurate integer IDCT, fancy
 * upsampling): the whole image is decoded as one region (pb_jpeg_decode_region), so its entropy data goes
 * through pipebench's own Huffman decoder when the file is one it decodes (baseline, restart markers or not; the
 * same coefficients, tests/unit/test_jpeg_huff.c), else libjpeg's.  A CMYK or YCCK JPEG is decoded to CMYK and
 * converted to RGB as Pillow does (pb_jpeg_cmyk_to_rgb). */
int pb_jpeg_decode(pb_jpeg_decoder *dec, const uint8_t *data, size_t bytes, int scale_denom, int64_t max_pixels,
                   uint8_t *out, size_t out_capacity_bytes, int *out_width, int *out_height, pb_err *err);

/* CMYK pixels of a JPEG (4 bytes each, as libjpeg decodes them) to packed RGB, the way Pillow converts them
 * (`Image.open(f).convert("RGB")`): a JPEG's CMYK is taken as Adobe's inverted CMYK, and each channel is
 * (255 - k) - (255 - k) * c / 255 on the inverted values, with Pillow's rounding.  `in` and `out` may be the
 * same buffer (each pixel is read before it is written over). */
void pb_jpeg_cmyk_to_rgb(const uint8_t *in, uint8_t *out, size_t pixels);

/* ---- decoding a region (jpeg_region.c) ---- */

typedef struct pb_jpeg_region pb_jpeg_region;
typedef struct pb_jpeg_rect {
  int x, y, w, h;               /* in the (scaled) output image's pixels */
} pb_jpeg_rect;

int pb_jpeg_region_init(pb_jpeg_region **r, pb_err *err);
void pb_jpeg_region_free(pb_jpeg_region *r); /* NULL is fine */
/* The bytes pb_jpeg_decode_region may write for `rect` of an image `image_width` pixels wide (after
 * scaling): libjpeg decodes whole iMCU columns (at most 32 pixels), so the region comes back widened. */
size_t pb_jpeg_region_capacity(const pb_jpeg_rect *rect, int image_width);
/* Decodes only the rows of `rect` of the image scaled by 1/scale_denom into `out`, packed RGB, `got->w`
 * pixels a row: the region widened on the left to an iMCU column (got->x <= rect->x) and by the pixel
 * fancy upsampling reads on each side, so libjpeg writes the rows in place.  got->y == rect->y and
 * got->h == rect->h; rect's pixels start at column rect->x - got->x of each row and are exactly
 * pb_jpeg_decode's (the columns around them need not be).  A fraction of the work for a small region.
 * 0, or a negative errno with err set (a bad JPEG, a region outside the image, over max_pixels, out
 * smaller than the widened region). */
int pb_jpeg_decode_region(pb_jpeg_region *r, const uint8_t *data, size_t bytes, const pb_jpeg_rect *rect,
                          int scale_denom, int64_t max_pixels, uint8_t *out, size_t out_capacity_bytes,
                          pb_jpeg_rect *got, pb_err *err);

/* ---- encoding ---- */

int pb_jpeg_encoder_init(pb_jpeg_encoder **enc, pb_err *err);
void pb_jpeg_encoder_free(pb_jpeg_encoder *enc); /* NULL is fine */

/* Encodes packed RGB (rows of width * 3 bytes) as a baseline JPEG, 4:2:0 chroma subsampling and the accurate
 * integer DCT (what cjpeg, PIL and most cameras write).  *jpeg is a malloc'ed copy of exactly *jpeg_bytes
 * bytes: the caller free()s it.  The encoder keeps its TurboJPEG output buffer between calls, so encoding
 * many images of one size allocates nothing but the returned copy. */
int pb_jpeg_encode_rgb(pb_jpeg_encoder *enc, const uint8_t *rgb, int width, int height, int quality,
                       uint8_t **jpeg, size_t *jpeg_bytes, pb_err *err);

#endif

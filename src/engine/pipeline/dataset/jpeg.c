/* TurboJPEG wrappers: the decode stage's per-thread decoder and the dataset generator's encoder. */
#include "jpeg.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <turbojpeg.h>

struct pb_jpeg_decoder {
  tjhandle tj;            /* the header */
  pb_jpeg_region *pixels; /* the pixels: libjpeg with pipebench's own Huffman decoder (jpeg_region.c) */
};

struct pb_jpeg_encoder {
  tjhandle tj;
  unsigned char *buf;    /* TurboJPEG's output buffer (tjAlloc'ed), kept between calls */
  unsigned long buf_cap; /* its size in bytes */
};

/* JPEG's own limit on a side (libjpeg's JPEG_MAX_DIMENSION). */
enum { PB_JPEG_MAX_SIDE = 65500 };

static int valid_denom(int scale_denom) {
  return scale_denom == 1 || scale_denom == 2 || scale_denom == 4 || scale_denom == 8;
}

/* TurboJPEG 2.1's tjDecompressHeader3 returns from an error without aborting libjpeg's decompressor, and the
 * next call then resumes the broken header's parsing state on the new file (a good image failed with "Bogus
 * DAC index" after a truncated one).  The 2.1 API has no reset, so a failed handle is replaced; failures are
 * rare and a new handle costs microseconds.  A NULL handle (if even that failed) is retried on the next use. */
static int fresh_handle(pb_jpeg_decoder *dec, pb_err *err) {
  if (dec->tj) tjDestroy(dec->tj);
  dec->tj = tjInitDecompress();
  if (dec->tj) return 0;
  pb_err_set(err, "jpeg decoder: tjInitDecompress failed: %s (expected a TurboJPEG handle)", tjGetErrorStr2(NULL));
  return -ENOMEM;
}

/* One line from TurboJPEG's last error, then a fresh handle.  A warning (TJERR_WARNING: e.g. a truncated file
 * that still decoded partly, with grey rows at the bottom) is named as such and is still an error: a damaged
 * image must be counted, not passed on as a sample. */
static int tj_error(pb_jpeg_decoder *dec, const char *what, pb_err *err) {
  const char *kind = tjGetErrorCode(dec->tj) == TJERR_WARNING ? "corrupt or truncated data" : "bad JPEG";
  pb_err_set(err, "%s: %s: %s (expected a complete, valid JPEG image)", what, kind, tjGetErrorStr2(dec->tj));
  pb_err discard;
  fresh_handle(dec, &discard);
  return -EBADMSG;
}

int pb_jpeg_decoder_init(pb_jpeg_decoder **dec, pb_err *err) {
  *dec = calloc(1, sizeof **dec);
  if (!*dec) return pb_err_setc(err, -ENOMEM, "jpeg decoder: out of memory (expected a few bytes free)");
  int rc = fresh_handle(*dec, err);
  if (rc == 0) rc = pb_jpeg_region_init(&(*dec)->pixels, err);
  if (rc < 0) {
    pb_jpeg_decoder_free(*dec);
    *dec = NULL;
  }
  return rc;
}

void pb_jpeg_decoder_free(pb_jpeg_decoder *dec) {
  if (!dec) return;
  if (dec->tj) tjDestroy(dec->tj);
  pb_jpeg_region_free(dec->pixels);
  free(dec);
}

/* Cheap checks that TurboJPEG would report less clearly.  (Sizes pass as unsigned long, which on the LP64 and
 * ILP32 targets we build for is as wide as size_t.) */
static int check_input(const uint8_t *data, size_t bytes, pb_err *err) {
  if (!data || bytes == 0) return pb_err_setc(err, -EBADMSG, "empty sample: 0 bytes (expected a JPEG image)");
  if (bytes < 2 || data[0] != 0xFF || data[1] != 0xD8)
    return pb_err_setc(err, -EBADMSG, "not a JPEG: no SOI marker at byte 0 (expected a file starting FF D8)");
  return 0;
}

/* The frame header (SOF0..15 but DHT, JPG, DAC): height, width and component count, or false.  For the
 * files TurboJPEG 2.1's header call refuses although libjpeg decodes them: luma sampling 3x1, 3x2, 4x2
 * and the like ("Could not determine subsampling type"). */
static bool frame_header(const uint8_t *d, size_t n, int *width, int *height, int *ncomp) {
  for (size_t i = 2; i + 9 < n;) {
    if (d[i] != 0xFF) return false;
    uint8_t m = d[i + 1];
    if (m == 0xFF) { i++; continue; } /* fill byte */
    size_t seg = ((size_t)d[i + 2] << 8) | d[i + 3];
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
      *height = (d[i + 5] << 8) | d[i + 6];
      *width = (d[i + 7] << 8) | d[i + 8];
      *ncomp = d[i + 9];
      return true;
    }
    if (m == 0xDA || seg < 2) return false; /* scan data before any frame header */
    i += 2 + seg;
  }
  return false;
}

int pb_jpeg_header(pb_jpeg_decoder *dec, const uint8_t *data, size_t bytes, int *width, int *height, pb_err *err) {
  int rc = check_input(data, bytes, err);
  if (rc < 0) return rc;
  if (!dec->tj && (rc = fresh_handle(dec, err)) < 0) return rc;
  int subsamp = 0, colorspace = 0, ncomp = 0;
  if (tjDecompressHeader3(dec->tj, data, (unsigned long)bytes, width, height, &subsamp, &colorspace) != 0) {
    if (!strstr(tjGetErrorStr2(dec->tj), "subsampling") || !frame_header(data, bytes, width, height, &ncomp))
      return tj_error(dec, "reading the JPEG header", err); /* else libjpeg still decodes it */
  }
  if (*width <= 0 || *height <= 0) { /* e.g. a file that ends after its SOI: libjpeg saw a fake EOI */
    pb_err_set(err,
               "JPEG header gives a %dx%d image: the %zu bytes end before a frame header, or it is damaged "
               "(expected a complete header with a positive size)",
               *width, *height, bytes);
    pb_err discard;
    fresh_handle(dec, &discard); /* whatever state that left, the next file does not inherit it */
    return -EBADMSG;
  }
  return 0;
}

size_t pb_jpeg_decoded_bytes(int width, int height, int scale_denom) {
  return (size_t)pb_jpeg_scaled_dim(width, scale_denom) * (size_t)pb_jpeg_scaled_dim(height, scale_denom) * 3u;
}

static int check_max_pixels(int width, int height, int64_t max_pixels, pb_err *err) {
  int64_t pixels = (int64_t)width * height;
  if (max_pixels <= 0 || pixels <= max_pixels) return 0;
  pb_err_set(err,
             "image is %dx%d = %lld pixels, over max_pixels %lld (expected at most %lld pixels; raise the "
             "decode stage's max_pixels to accept it)",
             width, height, (long long)pixels, (long long)max_pixels, (long long)max_pixels);
  return -EFBIG;
}

/* Pillow's MULDIV255: a * b / 255, rounded, without a division. */
static inline unsigned muldiv255(unsigned a, unsigned b) {
  unsigned t = a * b + 128;
  return ((t >> 8) + t) >> 8;
}

void pb_jpeg_cmyk_to_rgb(const uint8_t *in, uint8_t *out, size_t pixels) {
  for (size_t i = 0; i < pixels; i++) {
    const uint8_t *p = in + 4 * i;
    unsigned nk = p[3]; /* inverted K: 255 - k */
    uint8_t rgb[3];
    for (int ch = 0; ch < 3; ch++) rgb[ch] = (uint8_t)(nk - muldiv255(255u - p[ch], nk));
    memcpy(out + 3 * i, rgb, 3); /* after reading the pixel: out may be in */
  }
}

int pb_jpeg_decode(pb_jpeg_decoder *dec, const uint8_t *data, size_t bytes, int scale_denom, int64_t max_pixels,
                   uint8_t *out, size_t out_capacity_bytes, int *out_width, int *out_height, pb_err *err) {
  if (!valid_denom(scale_denom))
    return pb_err_set(err, "scale 1/%d (expected 1, 1/2, 1/4 or 1/8)", scale_denom);
  int width = 0, height = 0;
  int rc = pb_jpeg_header(dec, data, bytes, &width, &height, err);
  if (rc < 0) return rc;
  rc = check_max_pixels(width, height, max_pixels, err);
  if (rc < 0) return rc;
  int sw = pb_jpeg_scaled_dim(width, scale_denom), sh = pb_jpeg_scaled_dim(height, scale_denom);
  size_t need = (size_t)sw * (size_t)sh * 3u;
  if (!out || out_capacity_bytes < need)
    return pb_err_setc(err, -ENOBUFS, "output buffer of %zu bytes for a %dx%d RGB image (expected at least %zu bytes)",
                       out_capacity_bytes, sw, sh, need);
  /* The whole image as one region: libjpeg's decompressor (the same IDCT, upsampling and colour conversion
   * TurboJPEG would run) with pipebench's own Huffman decoder where the file allows it, and libjpeg's
   * careful path on broken data; a corrupt-data warning is an error there, as TJFLAG_STOPONWARNING made it.
   * A CMYK or YCCK image is converted to RGB there too (libjpeg cannot; ImageNet has 22 such files). */
  pb_jpeg_rect all = {.x = 0, .y = 0, .w = sw, .h = sh}, got;
  rc = pb_jpeg_decode_region(dec->pixels, data, bytes, &all, scale_denom, max_pixels, out, out_capacity_bytes, &got,
                             err);
  if (rc < 0) return rc;
  if (got.w != sw || got.h != sh)
    return pb_err_setc(err, -EBADMSG, "decoding: libjpeg gave %dx%d for a %dx%d image (expected the header's size)",
                       got.w, got.h, sw, sh);
  *out_width = sw;
  *out_height = sh;
  return 0;
}


int pb_jpeg_encoder_init(pb_jpeg_encoder **enc, pb_err *err) {
  *enc = calloc(1, sizeof **enc);
  if (!*enc) return pb_err_setc(err, -ENOMEM, "jpeg encoder: out of memory (expected a few bytes free)");
  (*enc)->tj = tjInitCompress();
  if (!(*enc)->tj) {
    pb_err_set(err, "jpeg encoder: tjInitCompress failed: %s (expected a TurboJPEG handle)", tjGetErrorStr2(NULL));
    free(*enc);
    *enc = NULL;
    return -ENOMEM;
  }
  return 0;
}

void pb_jpeg_encoder_free(pb_jpeg_encoder *enc) {
  if (!enc) return;
  tjFree(enc->buf);
  tjDestroy(enc->tj);
  free(enc);
}

/* tjBufSize is the worst case for any content, so with a buffer that large TurboJPEG never reallocates
 * (TJFLAG_NOREALLOC) and the buffer can be reused for every image of that size or smaller. */
static int reserve_output(pb_jpeg_encoder *enc, int width, int height, pb_err *err) {
  unsigned long need = tjBufSize(width, height, TJSAMP_420);
  if (need == (unsigned long)-1 || need > (unsigned long)INT_MAX) /* tjAlloc takes an int */
    return pb_err_set(err, "jpeg encoder: %dx%d is too large (expected a smaller image)", width, height);
  if (need <= enc->buf_cap) return 0;
  tjFree(enc->buf);
  enc->buf = tjAlloc((int)need);
  enc->buf_cap = enc->buf ? need : 0;
  if (!enc->buf) return pb_err_setc(err, -ENOMEM, "jpeg encoder: out of memory (expected %lu bytes free)", need);
  return 0;
}

int pb_jpeg_encode_rgb(pb_jpeg_encoder *enc, const uint8_t *rgb, int width, int height, int quality,
                       uint8_t **jpeg, size_t *jpeg_bytes, pb_err *err) {
  if (width <= 0 || height <= 0 || width > PB_JPEG_MAX_SIDE || height > PB_JPEG_MAX_SIDE)
    return pb_err_set(err, "jpeg encoder: image is %dx%d (expected sides of 1 to %d pixels)", width, height,
                      PB_JPEG_MAX_SIDE);
  if (quality < 1 || quality > 100)
    return pb_err_set(err, "jpeg encoder: quality %d (expected 1 to 100)", quality);
  int rc = reserve_output(enc, width, height, err);
  if (rc < 0) return rc;
  unsigned long size = enc->buf_cap;
  if (tjCompress2(enc->tj, rgb, width, width * 3, height, TJPF_RGB, &enc->buf, &size, TJSAMP_420, quality,
                  TJFLAG_NOREALLOC | TJFLAG_ACCURATEDCT) != 0)
    return pb_err_set(err, "jpeg encoder: tjCompress2 failed: %s (expected to encode a %dx%d image)",
                      tjGetErrorStr2(enc->tj), width, height);
  *jpeg = malloc(size);
  if (!*jpeg) return pb_err_setc(err, -ENOMEM, "jpeg encoder: out of memory (expected %lu bytes free)", size);
  memcpy(*jpeg, enc->buf, size);
  *jpeg_bytes = size;
  return 0;
}

/* Decoding only a region of a JPEG (the decode stage's `fused_crop`): libjpeg's own API, since TurboJPEG
 * 2.1 has no cropping.  jpeg_crop_scanline narrows the IDCT and colour conversion to the iMCU columns that
 * hold the region, jpeg_skip_scanlines passes over the rows above it, and decoding stops after its last
 * row, so the rows below are not even entropy-decoded.  The rows go straight into the caller's buffer as
 * libjpeg writes them (the region comes back as wide as those iMCU columns; copying each row out of a
 * scanline buffer cost ~5 % of a fused pipeline's time).  The region's pixels are those of the whole image
 * decoded by pb_jpeg_decode (same accurate integer IDCT and fancy upsampling), cropped:
 * tests/unit/test_jpeg.c checks it. */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* jpeglib.h needs stdio.h and size_t first */
#include <jpeglib.h>

#include "jpeg.h"
#include "jpeg_huff.h"

typedef struct region_err {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX];
  bool warning; /* the error was a corrupt-data warning, made an error */
} region_err;

struct pb_jpeg_region {
  struct jpeg_decompress_struct cinfo;
  region_err err;
  pb_jpeg_huff *huff; /* the entropy decoder put in libjpeg's place (jpeg_huff.c, jpeg_phuff.c) */
  uint8_t *cmyk;      /* a CMYK image's rows before their conversion to RGB (rare: grown on use) */
  size_t cmyk_cap_bytes;
};

static void on_error(j_common_ptr c) {
  region_err *e = (region_err *)c->err;
  c->err->format_message(c, e->msg);
  longjmp(e->jump, 1);
}

/* A corrupt-data warning is an error, as TJFLAG_STOPONWARNING makes it for the whole-image path. */
static void on_message(j_common_ptr c, int level) {
  if (level < 0) {
    ((region_err *)c->err)->warning = true;
    on_error(c);
  }
}

int pb_jpeg_region_init(pb_jpeg_region **r, pb_err *err) {
  *r = calloc(1, sizeof **r);
  if (*r && !((*r)->huff = pb_jpeg_huff_new())) {
    free(*r);
    *r = NULL;
  }
  if (!*r) return pb_err_setc(err, -ENOMEM, "jpeg region decoder: out of memory");
  (*r)->cinfo.err = jpeg_std_error(&(*r)->err.pub);
  (*r)->err.pub.error_exit = on_error;
  (*r)->err.pub.emit_message = on_message;
  if (setjmp((*r)->err.jump)) {
    pb_err_set(err, "jpeg region decoder: %s", (*r)->err.msg);
    pb_jpeg_huff_free((*r)->huff);
    free(*r);
    *r = NULL;
    return -ENOMEM;
  }
  jpeg_create_decompress(&(*r)->cinfo);
  return 0;
}

void pb_jpeg_region_free(pb_jpeg_region *r) {
  if (!r) return;
  jpeg_destroy_decompress(&r->cinfo);
  pb_jpeg_huff_free(r->huff);
  free(r->cmyk);
  free(r);
}

/* jpeg_crop_scanline moves the left edge down to an iMCU column (max_h_samp_factor x the scaled DCT size:
 * at most 4 x 8 pixels) and keeps the right one; one more pixel each side for fancy upsampling. */
#define REGION_WIDEN_PX (32 + 2)

size_t pb_jpeg_region_capacity(const pb_jpeg_rect *rect, int image_width) {
  if (rect->w <= 0 || rect->h <= 0) return 0;
  int w = PB_MIN(rect->w + REGION_WIDEN_PX, PB_MAX(image_width, rect->w));
  return (size_t)w * (size_t)rect->h * 3u;
}

/* Whether an EOI marker (FF D9) follows the scan data that starts at byte scan_at.  Decoding stops after
 * the region's last row, so libjpeg never reaches the end: without this a file cut short below the crop
 * would pass here while the whole-image decode refuses it ("Premature end of JPEG file").  Inside
 * entropy-coded data an FF is always followed by 00 or a restart marker, so FF D9 there is the end.
 * Usually it is the last two bytes; trailing bytes after it (which libjpeg ignores too) cost a scan. */
static bool has_eoi_after(const uint8_t *data, size_t bytes, size_t scan_at) {
  for (size_t i = bytes - 1; i > scan_at; i--)
    if (data[i] == 0xD9 && data[i - 1] == 0xFF) return true;
  return false;
}

/* ---- a progressive image ----
 *
 * Read in libjpeg's buffered-image mode, so that pipebench's own decoder (jpeg_phuff.c) is in place before the
 * first scan is decoded; every scan is read, then the output pass starts, as libjpeg's own single pass does
 * (the pixels are the same: block smoothing, on by default, finds nothing to do once every scan is in).
 * At 1/8 a full-resolution component's 8x8 block becomes one pixel from its DC coefficient alone (libjpeg's
 * 1x1 IDCT), so the AC scans of such a component (the luma; subsampled chroma gets a 2x2 IDCT, which reads AC
 * coefficients) are stepped over, not decoded; block smoothing is then off (it would estimate the missing AC
 * coefficients and, in libjpeg-turbo 2.1, nudge the DC ones): the pixels are those of the full decode at 1/8. */
static void start_progressive(pb_jpeg_region *r, const uint8_t *data, size_t bytes, bool dc_only) {
  struct jpeg_decompress_struct *c = &r->cinfo;
  c->buffered_image = TRUE;
  if (dc_only) c->do_block_smoothing = FALSE;
  jpeg_start_decompress(c); /* buffered: returns before any scan is decoded */
  pb_jpeg_huff_attach_progressive(r->huff, c, data, bytes, dc_only); /* else libjpeg's own decodes them */
  while (jpeg_consume_input(c) != JPEG_REACHED_EOI) {
  }
  c->client_data = NULL;
  jpeg_start_output(c, c->input_scan_number);
}

/* Room for 16 CMYK rows of a region whose RGB rows are row_bytes long. */
static int reserve_cmyk_rows(pb_jpeg_region *r, size_t row_bytes, pb_err *err) {
  size_t need = row_bytes / 3u * 4u * 16u;
  if (need <= r->cmyk_cap_bytes) return 0;
  uint8_t *p = realloc(r->cmyk, need);
  if (!p) return pb_err_setc(err, -ENOMEM, "decoding a CMYK JPEG: out of memory for %zu bytes", need);
  r->cmyk = p;
  r->cmyk_cap_bytes = need;
  return 0;
}

/* Up to 16 rows into out (row_bytes apart).  A CMYK image's rows are decoded into the region's own buffer
 * (reserve_cmyk_rows) and converted to RGB as pb_jpeg_decode does.  Returns the rows read; 0 when the data
 * ended. */
static JDIMENSION read_rows(pb_jpeg_region *r, uint8_t *out, size_t row_bytes, int n, bool cmyk) {
  JSAMPROW rows[16];
  size_t cmyk_row_bytes = row_bytes / 3u * 4u;
  for (int k = 0; k < n; k++) rows[k] = cmyk ? r->cmyk + (size_t)k * cmyk_row_bytes : out + (size_t)k * row_bytes;
  JDIMENSION done = jpeg_read_scanlines(&r->cinfo, rows, (JDIMENSION)n);
  for (JDIMENSION k = 0; cmyk && k < done; k++) pb_jpeg_cmyk_to_rgb(rows[k], out + k * row_bytes, row_bytes / 3u);
  return done;
}

/* The body, under setjmp: libjpeg errors jump back to pb_jpeg_decode_region. */
static int decode_rows(pb_jpeg_region *r, const uint8_t *data, size_t bytes, const pb_jpeg_rect *rect,
                       int scale_denom, int64_t max_pixels, uint8_t *out, size_t out_capacity_bytes,
                       pb_jpeg_rect *got, pb_err *err) {
  struct jpeg_decompress_struct *c = &r->cinfo;
  jpeg_mem_src(c, data, (unsigned long)bytes);
  jpeg_read_header(c, TRUE);
  if (!c->progressive_mode && !has_eoi_after(data, bytes, (size_t)(c->src->next_input_byte - data)))
    return pb_err_setc(err, -EBADMSG,
                       "decoding: corrupt or truncated data: Premature end of JPEG file, no end-of-image marker "
                       "after the scan data (expected a complete, valid JPEG image)");
  if (max_pixels > 0 && (int64_t)c->image_width * c->image_height > max_pixels)
    return pb_err_setc(err, -EFBIG, "image is %ux%u = %lld pixels, over max_pixels %lld (expected at most %lld pixels)",
                       c->image_width, c->image_height, (long long)c->image_width * c->image_height,
                       (long long)max_pixels, (long long)max_pixels);
  bool cmyk = c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK; /* no RGB conversion in libjpeg */
  c->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  c->scale_num = 1;
  c->scale_denom = (unsigned)scale_denom;
  c->dct_method = JDCT_ISLOW;
  c->do_fancy_upsampling = TRUE;
  if (c->progressive_mode && pb_jpeg_huff_is_allowed()) {
    start_progressive(r, data, bytes, scale_denom == 8);
  } else {
    jpeg_start_decompress(c);
    pb_jpeg_huff_attach(r->huff, c, data, bytes); /* when the file is one it decodes; else libjpeg's own */
  }
  if (rect->x < 0 || rect->y < 0 || rect->w <= 0 || rect->h <= 0 || (JDIMENSION)(rect->x + rect->w) > c->output_width ||
      (JDIMENSION)(rect->y + rect->h) > c->output_height)
    return pb_err_setc(err, -EINVAL, "region %dx%d at (%d, %d) outside the %ux%u image (expected inside it)", rect->w,
                       rect->h, rect->x, rect->y, c->output_width, c->output_height);
  /* One more pixel on each side than asked for: fancy upsampling reads the chroma sample beyond a column,
   * and at the edge of a crop libjpeg replicates the edge instead, so the region's own edge columns
   * would differ from the whole decode's.  jpeg_crop_scanline then widens to whole iMCU columns. */
  int left = rect->x > 0 ? rect->x - 1 : 0;
  int right = PB_MIN(rect->x + rect->w + 1, (int)c->output_width);
  JDIMENSION x0 = (JDIMENSION)left, cw = (JDIMENSION)(right - left);
  jpeg_crop_scanline(c, &x0, &cw); /* x0 <= left, x0 + cw >= right */
  size_t row_bytes = (size_t)cw * 3u;
  if (row_bytes * (size_t)rect->h > out_capacity_bytes)
    return pb_err_setc(err, -ENOBUFS, "output buffer of %zu bytes for a %ux%d region (expected at least %zu bytes)",
                       out_capacity_bytes, cw, rect->h, row_bytes * (size_t)rect->h);
  int rc = cmyk ? reserve_cmyk_rows(r, row_bytes, err) : 0;
  if (rc < 0) return rc;
  if (rect->y > 0 && jpeg_skip_scanlines(c, (JDIMENSION)rect->y) != (JDIMENSION)rect->y)
    return pb_err_setc(err, -EBADMSG, "truncated image (expected rows down to %d)", rect->y + rect->h);
  for (int y = 0; y < rect->h;) {
    JDIMENSION done = read_rows(r, out + (size_t)y * row_bytes, row_bytes, PB_MIN(rect->h - y, 16), cmyk);
    if (done == 0) return pb_err_setc(err, -EBADMSG, "truncated image (expected rows down to %d)", rect->y + rect->h);
    y += (int)done;
  }
  *got = (pb_jpeg_rect){.x = (int)x0, .y = rect->y, .w = (int)cw, .h = rect->h};
  return 0;
}

int pb_jpeg_decode_region(pb_jpeg_region *r, const uint8_t *data, size_t bytes, const pb_jpeg_rect *rect,
                          int scale_denom, int64_t max_pixels, uint8_t *out, size_t out_capacity_bytes,
                          pb_jpeg_rect *got, pb_err *err) {
  if (!data || bytes < 2 || data[0] != 0xFF || data[1] != 0xD8)
    return pb_err_setc(err, -EBADMSG, "not a JPEG: no SOI marker at byte 0 (expected a file starting FF D8)");
  if (scale_denom != 1 && scale_denom != 2 && scale_denom != 4 && scale_denom != 8)
    return pb_err_setc(err, -EINVAL, "scale 1/%d (expected 1, 1/2, 1/4 or 1/8)", scale_denom);
  if (!out) return pb_err_setc(err, -ENOBUFS, "no output buffer (expected one)");
  r->err.warning = false;
  if (setjmp(r->err.jump)) { /* libjpeg gave up: the message, and the decompressor made ready again */
    pb_err_set(err, "decoding: %s: %s (expected a complete, valid JPEG image)",
               r->err.warning ? "corrupt or truncated data" : "bad JPEG", r->err.msg);
    jpeg_abort_decompress(&r->cinfo);
    return -EBADMSG;
  }
  int rc = decode_rows(r, data, bytes, rect, scale_denom, max_pixels, out, out_capacity_bytes, got, err);
  jpeg_abort_decompress(&r->cinfo); /* the rows below the region are never decoded */
  return rc;
}

/* pb_jpeg_*: decoded pixels equal libjpeg-turbo's own djpeg at every DCT scale (baseline 4:2:0 from the
 * encoder; 4:4:4, 4:2:2, 3x1, 4x2, grayscale and progressive from cjpeg), the size helpers, and bad data - truncated at
 * every tenth, empty, garbage, header-only, corrupt scan data, above max_pixels - refused cleanly (run under
 * ASan) without spoiling the decoder for the next image. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
/* jpeglib.h needs stdio.h and size_t first: libjpeg's own API makes the CMYK and YCCK files */
#include <jpeglib.h>

#include "jpeg.h"
#include "ops.h"
#include "synth_image.h"
#include "unit_util.h"

typedef struct blob {
  uint8_t *data;
  size_t bytes;
} blob;

static blob synth_jpeg(int w, int h, int quality, uint64_t index) {
  blob b = {0};
  pb_err err = {{0}};
  assert_int_equal(pb_synth_jpeg(w, h, quality, 42, index, &b.data, &b.bytes, &err), 0);
  return b;
}

static pb_jpeg_decoder *decoder(void) {
  pb_jpeg_decoder *dec = NULL;
  pb_err err = {{0}};
  assert_int_equal(pb_jpeg_decoder_init(&dec, &err), 0);
  return dec;
}

/* ---- files and external tools ---- */

static char tmp_dir[64];

/* Runs a formatted shell command; its exit status as system() gives it. */
static int shell(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int shell(const char *fmt, ...) {
  char cmd[2048];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof cmd) fail_msg("command too long: %s", fmt);
  return system(cmd);
}

static int make_tmp_dir(void **state) {
  strcpy(tmp_dir, "/tmp/pb-test-jpeg-XXXXXX");
  return mkdtemp(tmp_dir) ? 0 : -1;
}

static int remove_tmp_dir(void **state) { return shell("rm -rf '%s'", tmp_dir) == 0 ? 0 : -1; }

/* A path in the test's temporary directory; one static buffer per name the tests use. */
static const char *tmp_path(const char *name) {
  static char paths[16][128];
  static const char *names[16];
  size_t i = 0;
  while (i < 16 && names[i] && strcmp(names[i], name) != 0) i++;
  assert_true(i < 16);
  names[i] = name;
  int n = snprintf(paths[i], sizeof paths[i], "%s/%s", tmp_dir, name);
  assert_int_cmp(n, >, 0);
  assert_uint_cmp((size_t)n, <, sizeof paths[i]);
  return paths[i];
}

static void write_file(const char *path, const void *data, size_t bytes) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, bytes, f), bytes);
  assert_int_equal(fclose(f), 0);
}

static blob read_file(const char *path) {
  blob b = {0};
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  b.bytes = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  b.data = malloc(b.bytes ? b.bytes : 1);
  assert_int_equal(fread(b.data, 1, b.bytes, f), b.bytes);
  fclose(f);
  return b;
}

static int tool_exists(const char *name) { return shell("command -v %s >/dev/null 2>&1", name) == 0; }

/* A binary PPM's header: "P6 <w> <h> 255" and one whitespace byte; returns the payload's offset. */
static size_t ppm_payload(const blob *ppm, int *w, int *h) {
  int maxval = 0, used = 0;
  assert_int_equal(sscanf((const char *)ppm->data, "P6 %d %d %d%n", w, h, &maxval, &used), 3);
  assert_int_equal(maxval, 255);
  return (size_t)used + 1;
}

/* ---- equality with djpeg ---- */

/* Decodes `jpeg_file` with djpeg at 1/denom and with pb_jpeg_decode, and compares every byte. */
static void assert_same_as_djpeg(pb_jpeg_decoder *dec, const char *jpeg_file, int denom) {
  const char *ppm_file = tmp_path("djpeg.ppm");
  int rc = shell("djpeg -rgb -pnm -dct int -scale 1/%d -outfile '%s' '%s'", denom, ppm_file, jpeg_file);
  if (rc != 0) fail_msg("djpeg on %s exited with %d", jpeg_file, rc);
  blob ppm = read_file(ppm_file), jpeg = read_file(jpeg_file);
  int ref_w = 0, ref_h = 0;
  size_t offset = ppm_payload(&ppm, &ref_w, &ref_h);

  int w = 0, h = 0, sw = 0, sh = 0;
  pb_err err = {{0}};
  assert_int_equal(pb_jpeg_header(dec, jpeg.data, jpeg.bytes, &w, &h, &err), 0);
  size_t need = pb_jpeg_decoded_bytes(w, h, denom);
  uint8_t *out = malloc(need);
  rc = pb_jpeg_decode(dec, jpeg.data, jpeg.bytes, denom, 0, out, need, &sw, &sh, &err);
  if (rc != 0) fail_msg("%s at 1/%d: %s", jpeg_file, denom, err.msg);
  assert_int_equal(sw, ref_w);
  assert_int_equal(sh, ref_h);
  assert_int_equal(need, ppm.bytes - offset);
  assert_memory_equal(out, ppm.data + offset, need);
  free(out);
  free(ppm.data);
  free(jpeg.data);
}

/* Writes the synthetic image as PPM and encodes it with cjpeg `options`: layouts our encoder does not write. */
static const char *cjpeg_file(int w, int h, const char *options, const char *name) {
  uint8_t *rgb = malloc((size_t)w * h * 3);
  assert_int_equal(pb_synth_rgb(rgb, w, h, 42, 9), 0);
  char header[64];
  int n = snprintf(header, sizeof header, "P6\n%d %d\n255\n", w, h);
  const char *ppm = tmp_path("in.ppm");
  FILE *f = fopen(ppm, "wb");
  assert_non_null(f);
  fwrite(header, 1, (size_t)n, f);
  fwrite(rgb, 1, (size_t)w * h * 3, f);
  fclose(f);
  free(rgb);
  const char *out = tmp_path(name);
  int rc = shell("cjpeg %s -outfile '%s' '%s'", options, out, ppm);
  if (rc != 0) fail_msg("cjpeg %s exited with %d", options, rc);
  return out;
}

static void test_pixels_equal_djpeg_at_every_scale(void **state) {
  if (!tool_exists("djpeg") || !tool_exists("cjpeg")) skip();
  pb_jpeg_decoder *dec = decoder();
  /* 500x375: the dataset's size; 333x251: odd sides, so every scale rounds up (TJSCALED). */
  const int sizes[][2] = {{500, 375}, {333, 251}};
  for (size_t k = 0; k < PB_ARRAY_LEN(sizes); k++) {
    blob b = synth_jpeg(sizes[k][0], sizes[k][1], 90, k);
    const char *file = tmp_path("synth.jpg");
    write_file(file, b.data, b.bytes);
    free(b.data);
    for (int denom = 1; denom <= 8; denom *= 2) assert_same_as_djpeg(dec, file, denom);
  }
  const char *layouts[][2] = {{"-quality 85 -sample 1x1", "444.jpg"},
                              {"-quality 85 -sample 2x1", "422.jpg"},
                              {"-quality 85 -grayscale", "gray.jpg"},
                              {"-quality 85 -progressive", "progressive.jpg"},
                              /* luma sampling TurboJPEG 2.1's header call refuses ("Could not determine
                               * subsampling type") but libjpeg decodes */
                              {"-quality 85 -sample 3x1", "31.jpg"},
                              {"-quality 85 -sample 4x2", "42.jpg"}};
  for (size_t k = 0; k < PB_ARRAY_LEN(layouts); k++) {
    const char *file = cjpeg_file(301, 199, layouts[k][0], layouts[k][1]);
    for (int denom = 1; denom <= 8; denom *= 2) assert_same_as_djpeg(dec, file, denom);
  }
  pb_jpeg_decoder_free(dec);
}

/* ---- sizes and scale choice ---- */

static void test_scaled_sizes_round_up(void **state) {
  assert_int_equal(pb_jpeg_scaled_dim(333, 1), 333);
  assert_int_equal(pb_jpeg_scaled_dim(333, 2), 167);
  assert_int_equal(pb_jpeg_scaled_dim(333, 4), 84);
  assert_int_equal(pb_jpeg_scaled_dim(333, 8), 42);
  assert_int_equal(pb_jpeg_scaled_dim(1, 8), 1);
  assert_int_equal(pb_jpeg_scaled_dim(333, 3), 0);
  assert_int_equal(pb_jpeg_decoded_bytes(500, 375, 1), 500 * 375 * 3);
  assert_int_equal(pb_jpeg_decoded_bytes(500, 375, 2), 250 * 188 * 3);
  assert_int_equal(pb_jpeg_decoded_bytes(500, 375, 5), 0);
  assert_int_equal(pb_jpeg_decoded_bytes(0, 375, 1), 0);
}

static void test_auto_scale_keeps_the_crop_size(void **state) {
  assert_int_equal(pb_jpeg_auto_scale(500, 375, 224), 1);   /* 1/2 would give 188 < 224 */
  assert_int_equal(pb_jpeg_auto_scale(1000, 750, 224), 2);  /* 375 >= 224; 1/4 gives 188 */
  assert_int_equal(pb_jpeg_auto_scale(4000, 3000, 224), 8); /* 375 */
  assert_int_equal(pb_jpeg_auto_scale(3000, 4000, 375), 8); /* portrait: the shorter side counts; exact fit */
  assert_int_equal(pb_jpeg_auto_scale(3000, 4000, 376), 4);
  assert_int_equal(pb_jpeg_auto_scale(100, 100, 224), 1); /* already smaller than the crop */
  assert_int_equal(pb_jpeg_auto_scale(500, 375, 0), 1);   /* no crop to size for */
  assert_int_equal(pb_jpeg_auto_scale(500, 375, 47), 8);  /* ceil(375 / 8) = 47 */
  assert_int_equal(pb_jpeg_auto_scale(500, 375, 48), 4);
}

/* fused_crop under scale "auto": each crop's DCT scale keeps both of its sides at least the output size once
 * divided, and its place in the scaled image is the full-size crop's edges at the nearest scaled pixel. */
static void test_crop_denom_and_place(void **state) {
  (void)state;
  assert_int_equal(pb_crop_denom(2000, 1800, 224), 8);
  assert_int_equal(pb_crop_denom(1792, 1792, 224), 8); /* exactly 224 at 1/8 */
  assert_int_equal(pb_crop_denom(1791, 2000, 224), 4); /* the shorter side decides */
  assert_int_equal(pb_crop_denom(500, 500, 224), 2);
  assert_int_equal(pb_crop_denom(447, 900, 224), 1); /* 223 at 1/2: never below the output */
  assert_int_equal(pb_crop_denom(4000, 4000, 0), 1);
  int x, y, w, h;
  pb_crop_scaled(13, 6, 1000, 801, 4, 500, 400, &x, &y, &w, &h);
  assert_int_equal(x, 3), assert_int_equal(w, 250);           /* 13/4 = 3.25 -> 3; 1013/4 = 253.25 -> 253 */
  assert_int_equal(y, 2), assert_int_equal(h, 200);           /* 6/4 = 1.5 -> 2; 807/4 = 201.75 -> 202 */
  pb_crop_scaled(1990, 0, 10, 16, 8, 250, 2, &x, &y, &w, &h); /* at the right edge: inside, one pixel */
  assert_int_equal(x, 249), assert_int_equal(w, 1), assert_int_equal(y, 0), assert_int_equal(h, 2);
  pb_crop_scaled(0, 0, 1, 1, 8, 250, 250, &x, &y, &w, &h); /* under half a scaled pixel: still one */
  assert_int_equal(x, 0), assert_int_equal(w, 1), assert_int_equal(h, 1);
}

/* PSNR of two 224x224x3 images (255 peak). */
static double psnr_224(const uint8_t *a, const uint8_t *b) {
  double se = 0;
  for (size_t p = 0; p < 224 * 224 * 3; p++) se += (double)(a[p] - b[p]) * (a[p] - b[p]);
  return se > 0 ? 10 * log10(255.0 * 255.0 * 224 * 224 * 3 / se) : 99;
}

/* The crop (x, y, w, h) of b decoded at 1/denom, resized (antialiased) to 224 x 224 into out. */
static void crop_224(pb_jpeg_region *r, const blob *b, int denom, int x, int y, int w, int h, uint8_t *out) {
  pb_jpeg_rect rect = {x, y, w, h}, got;
  size_t cap = pb_jpeg_region_capacity(&rect, 4096);
  uint8_t *buf = malloc(cap);
  pb_err err = {{0}};
  if (pb_jpeg_decode_region(r, b->data, b->bytes, &rect, denom, 0, buf, cap, &got, &err)) fail_msg("%s", err.msg);
  pb_image in = {buf, got.h, got.w, 3, PB_DTYPE_UINT8, false}, o = {out, 224, 224, 3, PB_DTYPE_UINT8, false};
  void *scratch = malloc(pb_crop_resize_scratch_bytes(&in, h, w, 224, 224, PB_RESAMPLE_BILINEAR_AA) + 64);
  assert_int_equal(pb_crop_resize(&in, 0, x - got.x, h, w, &o, PB_RESAMPLE_BILINEAR_AA, scratch), 0);
  free(scratch);
  free(buf);
}

/* A crop decoded at its DCT scale and resized is near the exact one (the DCT-domain reduction is another
 * filter: bench/dct_scale.py measures it on photographs), and nearer than the same crop put one scaled pixel
 * off: the place pb_crop_scaled gives is the right one. */
static void test_per_crop_scale_near_exact(void **state) {
  (void)state;
  pb_jpeg_region *r = NULL;
  pb_err err = {{0}};
  assert_int_equal(pb_jpeg_region_init(&r, &err), 0);
  blob b = synth_jpeg(1600, 1200, 90, 5);
  static uint8_t exact[224 * 224 * 3], scaled[224 * 224 * 3], shifted[224 * 224 * 3];
  static const double area[2] = {0.08, 1.0}, ratio[2] = {3.0 / 4, 4.0 / 3};
  pb_rng rng;
  pb_rng_seed(&rng, 9);
  int tried = 0;
  for (int k = 0; k < 40; k++) {
    int i, j, h, w;
    pb_rrc_params(&rng, 1200, 1600, area, ratio, &i, &j, &h, &w);
    int d = pb_crop_denom(h, w, 224), sw = pb_jpeg_scaled_dim(1600, d), sh = pb_jpeg_scaled_dim(1200, d);
    if (d == 1) continue;
    int x, y, cw, ch;
    pb_crop_scaled(j, i, w, h, d, sw, sh, &x, &y, &cw, &ch);
    crop_224(r, &b, 1, j, i, w, h, exact);
    crop_224(r, &b, d, x, y, cw, ch, scaled);
    int off = x + cw < sw ? 1 : -1;
    crop_224(r, &b, d, x + off, y, cw, ch, shifted);
    double near = psnr_224(exact, scaled), far = psnr_224(exact, shifted);
    /* the synthetic images are noise-like texture, harder than photographs: 26-37 dB here */
    if (near < 24 || near < far + 3)
      fail_msg("crop %dx%d at (%d, %d), 1/%d: %.1f dB, one pixel off %.1f dB", w, h, j, i, d, near, far);
    tried++;
  }
  assert_true(tried >= 20);
  free(b.data);
  pb_jpeg_region_free(r);
}

/* ---- bad data ---- */

static int decode_blob(pb_jpeg_decoder *dec, const uint8_t *data, size_t bytes, int64_t max_pixels, pb_err *err) {
  size_t cap = 500 * 375 * 3;
  uint8_t *out = malloc(cap);
  int w = 0, h = 0;
  err->msg[0] = '\0';
  int rc = pb_jpeg_decode(dec, data, bytes, 1, max_pixels, out, cap, &w, &h, err);
  free(out);
  return rc;
}

/* The decoder still decodes a good image exactly after a failure (TurboJPEG's error state is reset). */
static void assert_decoder_still_good(pb_jpeg_decoder *dec, const blob *good) {
  pb_err err = {{0}};
  assert_int_equal(decode_blob(dec, good->data, good->bytes, 0, &err), 0);
}

static void assert_bad(pb_jpeg_decoder *dec, const uint8_t *data, size_t bytes, const char *what) {
  pb_err err = {{0}};
  int rc = decode_blob(dec, data, bytes, 0, &err);
  if (rc >= 0) fail_msg("%s: decoded without an error", what);
  assert_int_equal(rc, -EBADMSG);
  assert_true(strlen(err.msg) > 10);
  assert_null(strchr(err.msg, '\n')); /* one line */
  assert_non_null(strstr(err.msg, "(expected"));
}

static void test_truncated_files_are_errors(void **state) {
  pb_jpeg_decoder *dec = decoder();
  blob good = synth_jpeg(500, 375, 90, 0);
  for (int tenth = 0; tenth < 10; tenth++) {
    size_t bytes = good.bytes * (size_t)tenth / 10;
    uint8_t *copy = malloc(bytes ? bytes : 1); /* an exact-size copy: ASan catches any read past the end */
    memcpy(copy, good.data, bytes);
    char what[64];
    snprintf(what, sizeof what, "prefix of %zu bytes", bytes);
    assert_bad(dec, copy, bytes, what);
    assert_decoder_still_good(dec, &good);
    free(copy);
  }
  /* Cut just before the end-of-image marker: all scan data present, only FF D9 missing. */
  assert_bad(dec, good.data, good.bytes - 2, "no EOI marker");
  pb_jpeg_decoder_free(dec);
  free(good.data);
}

/* Offset of the first byte after the start-of-scan header: everything before it is "header only".  Walks
 * the marker segments (FF xx, then a 2-byte big-endian length that counts itself) from the SOI. */
static size_t scan_data_offset(const blob *b) {
  size_t i = 2;
  while (i + 3 < b->bytes) {
    assert_int_equal(b->data[i], 0xFF);
    size_t end = i + 2 + (size_t)(b->data[i + 2] << 8 | b->data[i + 3]);
    if (b->data[i + 1] == 0xDA) return end;
    i = end;
  }
  fail_msg("no SOS marker");
  return 0;
}

static void test_empty_garbage_and_header_only_are_errors(void **state) {
  pb_jpeg_decoder *dec = decoder();
  blob good = synth_jpeg(500, 375, 90, 1);
  pb_err err = {{0}};
  assert_int_equal(decode_blob(dec, good.data, 0, 0, &err), -EBADMSG);
  assert_non_null(strstr(err.msg, "empty"));
  assert_int_equal(decode_blob(dec, NULL, 0, 0, &err), -EBADMSG);

  uint8_t garbage[4096];
  pb_rng r;
  pb_rng_seed(&r, 5);
  for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = (uint8_t)pb_rng_next(&r);
  assert_bad(dec, garbage, sizeof garbage, "random bytes");
  garbage[0] = 0xFF, garbage[1] = 0xD8; /* a JPEG's first marker, then noise */
  assert_bad(dec, garbage, sizeof garbage, "SOI then random bytes");
  assert_bad(dec, garbage, 2, "SOI only");

  size_t header = scan_data_offset(&good);
  uint8_t *copy = malloc(header);
  memcpy(copy, good.data, header);
  assert_bad(dec, copy, header, "header only");
  int w = 0, h = 0; /* the header alone still gives the size */
  int rc = pb_jpeg_header(dec, copy, header, &w, &h, &err);
  if (rc != 0) fail_msg("header only: %s", err.msg);
  assert_int_equal(w, 500);
  assert_int_equal(h, 375);
  free(copy);
  assert_decoder_still_good(dec, &good);
  pb_jpeg_decoder_free(dec);
  free(good.data);
}

/* TurboJPEG 2.1 leaves its handle mid-header after a failed header read; without a reset the next file's
 * header was parsed from that stale state and failed ("Bogus DAC index"). */
static void test_decoder_recovers_after_a_broken_header(void **state) {
  pb_jpeg_decoder *dec = decoder();
  blob good = synth_jpeg(200, 150, 90, 5);
  size_t header = scan_data_offset(&good);
  uint8_t cut[1024];
  assert_uint_cmp(header, >, 40);
  assert_uint_cmp(header, <=, sizeof cut);
  for (size_t bytes = 3; bytes < header; bytes += 7) { /* a header broken at many places */
    memcpy(cut, good.data, bytes);
    assert_bad(dec, cut, bytes, "broken header");
    int w = 0, h = 0;
    pb_err err = {{0}};
    int rc = pb_jpeg_header(dec, good.data, header, &w, &h, &err);
    if (rc != 0) fail_msg("after a header cut at %zu bytes: %s", bytes, err.msg);
    assert_int_equal(w, 200);
    assert_decoder_still_good(dec, &good);
  }
  pb_jpeg_decoder_free(dec);
  free(good.data);
}

static void test_corrupt_scan_data_never_crashes(void **state) {
  pb_jpeg_decoder *dec = decoder();
  blob good = synth_jpeg(320, 240, 90, 2);
  size_t start = scan_data_offset(&good);
  pb_rng r;
  pb_rng_seed(&r, 11);
  int errors = 0;
  for (int trial = 0; trial < 20; trial++) {
    blob bad = {malloc(good.bytes), good.bytes};
    memcpy(bad.data, good.data, good.bytes);
    for (int k = 0; k < 8; k++) bad.data[start + pb_rng_next(&r) % (good.bytes - start - 2)] = (uint8_t)pb_rng_next(&r);
    pb_err err = {{0}};
    errors += decode_blob(dec, bad.data, bad.bytes, 0, &err) < 0; /* either outcome; no crash, no overrun */
    free(bad.data);
  }
  print_message("corrupt scan data: %d of 20 detected as errors\n", errors);
  assert_decoder_still_good(dec, &good);
  pb_jpeg_decoder_free(dec);
  free(good.data);
}

static void test_max_pixels_is_checked_before_decoding(void **state) {
  pb_jpeg_decoder *dec = decoder();
  blob good = synth_jpeg(500, 375, 90, 3);
  pb_err err = {{0}};
  assert_int_equal(decode_blob(dec, good.data, good.bytes, 187499, &err), -EFBIG);
  assert_non_null(strstr(err.msg, "500x375 = 187500 pixels"));
  assert_non_null(strstr(err.msg, "max_pixels 187499"));
  assert_int_equal(decode_blob(dec, good.data, good.bytes, 187500, &err), 0); /* the limit itself is allowed */
  /* Scaling does not get round it: the guard is on the stored image. */
  int w = 0, h = 0;
  uint8_t *out = malloc(pb_jpeg_decoded_bytes(500, 375, 8));
  assert_int_equal(pb_jpeg_decode(dec, good.data, good.bytes, 8, 1000, out, pb_jpeg_decoded_bytes(500, 375, 8), &w,
                                  &h, &err),
                   -EFBIG);
  free(out);
  pb_jpeg_decoder_free(dec);
  free(good.data);
}

static void test_bad_arguments_are_refused(void **state) {
  pb_jpeg_decoder *dec = decoder();
  blob good = synth_jpeg(64, 48, 90, 4);
  uint8_t out[64 * 48 * 3];
  int w = 0, h = 0;
  pb_err err = {{0}};
  assert_int_equal(pb_jpeg_decode(dec, good.data, good.bytes, 3, 0, out, sizeof out, &w, &h, &err), -EINVAL);
  assert_non_null(strstr(err.msg, "scale 1/3 (expected 1, 1/2, 1/4 or 1/8)"));
  assert_int_equal(pb_jpeg_decode(dec, good.data, good.bytes, 1, 0, out, sizeof out - 1, &w, &h, &err), -ENOBUFS);
  assert_non_null(strstr(err.msg, "9216 bytes"));
  assert_int_equal(pb_jpeg_decode(dec, good.data, good.bytes, 2, 0, out, 32 * 24 * 3, &w, &h, &err), 0);
  assert_int_equal(w, 32);
  assert_int_equal(h, 24);
  pb_jpeg_decoder_free(dec);
  pb_jpeg_decoder_free(NULL);
  free(good.data);
}

/* Region decoding (fused_crop): exactly the whole decode's pixels in the region, at every scale, for
 * regions on and off the iMCU grid, at the edges, one pixel, and the whole image; a region outside the
 * image and a truncated file are errors, and the decoder works again after them. */
static void test_region_equals_whole_decode_cropped(void **state) {
  (void)state;
  pb_jpeg_decoder *dec = decoder();
  pb_jpeg_region *r = NULL;
  pb_err err = {{0}};
  assert_int_equal(pb_jpeg_region_init(&r, &err), 0);
  blob b = synth_jpeg(500, 375, 90, 3);
  uint8_t *whole = malloc(500 * 375 * 3), *part = malloc(500 * 375 * 3);
  const int denoms[] = {1, 2, 4, 8};
  for (size_t d = 0; d < 4; d++) {
    int ow, oh;
    assert_int_equal(pb_jpeg_decode(dec, b.data, b.bytes, denoms[d], 0, whole, 500 * 375 * 3, &ow, &oh, &err), 0);
    const pb_jpeg_rect rects[] = {{0, 0, ow, oh}, {0, 0, 1, 1}, {ow - 1, oh - 1, 1, 1}, {16, 16, ow - 16 < 32 ? ow - 16 : 32, oh - 16 < 32 ? oh - 16 : 32},
                                  {7, 5, ow / 2, oh / 3}, {ow / 3, oh / 2 - 1, ow - ow / 3, oh - oh / 2 + 1},
                                  {3, 0, ow - 5, oh}};
    pb_jpeg_rect random_rects[64];
    uint64_t x = 0x9E3779B97F4A7C15ULL * (d + 1);
    for (int k = 0; k < 64; k++) { /* and random ones, as the crop would draw them (xorshift) */
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      int w = 1 + (int)(x % (uint64_t)ow), h = 1 + (int)((x >> 20) % (uint64_t)oh);
      random_rects[k] = (pb_jpeg_rect){(int)((x >> 40) % (uint64_t)(ow - w + 1)), (int)((x >> 50) % (uint64_t)(oh - h + 1)), w, h};
    }
    for (size_t k = 0; k < sizeof rects / sizeof rects[0] + 64; k++) {
      const pb_jpeg_rect *q = k < sizeof rects / sizeof rects[0] ? &rects[k] : &random_rects[k - sizeof rects / sizeof rects[0]];
      if (q->w <= 0 || q->h <= 0) continue;
      size_t cap = pb_jpeg_region_capacity(q, ow);
      memset(part, 0xAB, 500 * 375 * 3);
      pb_jpeg_rect got;
      if (pb_jpeg_decode_region(r, b.data, b.bytes, q, denoms[d], 0, part, cap, &got, &err))
        fail_msg("1/%d, %dx%d at (%d, %d): %s", denoms[d], q->w, q->h, q->x, q->y, err.msg);
      /* widened on the left to an iMCU column (at most 32 pixels, plus the pixel fancy upsampling reads),
       * within the capacity it promised, and nothing written past it */
      assert_int_cmp(got.x, <=, q->x);
      assert_int_cmp(q->x - got.x, <=, 33);
      assert_int_cmp(got.x + got.w, >=, q->x + q->w);
      assert_int_cmp(got.x + got.w, <=, ow);
      assert_int_equal(got.y, q->y);
      assert_int_equal(got.h, q->h);
      assert_uint_cmp((size_t)got.w * (size_t)got.h * 3, <=, cap);
      for (size_t at = (size_t)got.w * (size_t)got.h * 3; at < cap; at++) assert_int_equal(part[at], 0xAB);
      for (int y = 0; y < q->h; y++)
        if (memcmp(part + ((size_t)y * (size_t)got.w + (size_t)(q->x - got.x)) * 3,
                   whole + ((size_t)(q->y + y) * ow + q->x) * 3, (size_t)q->w * 3))
          fail_msg("1/%d, %dx%d at (%d, %d): row %d differs from the whole decode", denoms[d], q->w, q->h, q->x,
                   q->y, y);
    }
  }
  pb_jpeg_rect outside = {400, 300, 200, 100}, got;
  assert_int_equal(pb_jpeg_decode_region(r, b.data, b.bytes, &outside, 1, 0, part, 500 * 375 * 3, &got, &err), -EINVAL);
  pb_jpeg_rect all = {0, 0, 500, 375}, middle = {100, 10, 50, 20};
  assert_true(pb_jpeg_decode_region(r, b.data, b.bytes / 2, &all, 1, 0, part, 500 * 375 * 3, &got, &err) < 0);
  assert_non_null(strstr(err.msg, "JPEG"));
  assert_true(pb_jpeg_decode_region(r, b.data, b.bytes, &all, 1, 1000, part, 500 * 375 * 3, &got, &err) < 0); /* max_pixels */
  /* a buffer that holds the region but not its widening: refused, not overrun */
  assert_int_equal(pb_jpeg_decode_region(r, b.data, b.bytes, &middle, 1, 0, part, 50 * 20 * 3, &got, &err), -ENOBUFS);
  assert_non_null(strstr(err.msg, "expected at least"));
  assert_int_equal(pb_jpeg_decode_region(r, b.data, b.bytes, &all, 1, 0, part, 500 * 375 * 3, &got, &err), 0);
  /* cut short below the region: the region decode never reaches the cut, yet refuses the file as the
   * whole decode does (no end-of-image marker) */
  pb_jpeg_rect top = {0, 0, 100, 16};
  assert_int_equal(pb_jpeg_decode_region(r, b.data, b.bytes * 9 / 10, &top, 1, 0, part, 500 * 375 * 3, &got, &err),
                   -EBADMSG);
  assert_non_null(strstr(err.msg, "Premature end of JPEG file"));
  assert_int_equal(pb_jpeg_decode_region(r, b.data, b.bytes, &top, 1, 0, part, 500 * 375 * 3, &got, &err), 0);
  free(whole);
  free(part);
  free(b.data);
  pb_jpeg_region_free(r);
  pb_jpeg_decoder_free(dec);
}

static void test_encoder_refuses_bad_input(void **state) {
  pb_jpeg_encoder *enc = NULL;
  pb_err err = {{0}};
  assert_int_equal(pb_jpeg_encoder_init(&enc, &err), 0);
  uint8_t rgb[12] = {0}, *jpeg = NULL;
  size_t bytes = 0;
  assert_int_equal(pb_jpeg_encode_rgb(enc, rgb, 2, 2, 0, &jpeg, &bytes, &err), -EINVAL);
  assert_int_equal(pb_jpeg_encode_rgb(enc, rgb, 0, 2, 90, &jpeg, &bytes, &err), -EINVAL);
  assert_int_equal(pb_jpeg_encode_rgb(enc, rgb, 70000, 1, 90, &jpeg, &bytes, &err), -EINVAL);
  assert_null(jpeg);
  assert_int_equal(pb_jpeg_encode_rgb(enc, rgb, 2, 2, 90, &jpeg, &bytes, &err), 0);
  assert_uint_cmp(bytes, >, 100);
  assert_int_equal(jpeg[0], 0xFF);
  assert_int_equal(jpeg[1], 0xD8);
  assert_int_equal(jpeg[bytes - 2], 0xFF);
  assert_int_equal(jpeg[bytes - 1], 0xD9);
  free(jpeg);
  pb_jpeg_encoder_free(enc);
  pb_jpeg_encoder_free(NULL);
}

/* ---- CMYK and YCCK (issue 34: ImageNet holds 22 CMYK JPEGs) ---- */

/* A w x h CMYK JPEG, stored as `space` (JCS_CMYK or JCS_YCCK), of smooth gradients; libjpeg writes the
 * Adobe marker such files carry. */
static blob cmyk_jpeg(int w, int h, J_COLOR_SPACE space) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr jerr;
  c.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&c);
  unsigned char *buf = NULL;
  unsigned long bytes = 0;
  jpeg_mem_dest(&c, &buf, &bytes);
  c.image_width = (JDIMENSION)w, c.image_height = (JDIMENSION)h;
  c.input_components = 4, c.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_colorspace(&c, space);
  jpeg_set_quality(&c, 95, TRUE);
  jpeg_start_compress(&c, TRUE);
  uint8_t *row = malloc((size_t)w * 4);
  for (int y = 0; y < h; y++) {
    for (int x = 0; x < w; x++) {
      uint8_t *p = row + 4 * x;
      p[0] = (uint8_t)(x * 255 / w), p[1] = (uint8_t)(y * 255 / h), p[2] = (uint8_t)((x + y) * 127 / (w + h));
      p[3] = (uint8_t)(255 - (x * 200 / w));
    }
    JSAMPROW r = row;
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  free(row);
  return (blob){.data = buf, .bytes = bytes};
}

/* The file's CMYK pixels as libjpeg decodes them (4 bytes each). */
static uint8_t *libjpeg_cmyk(const blob *b, int *w, int *h) {
  struct jpeg_decompress_struct c;
  struct jpeg_error_mgr jerr;
  c.err = jpeg_std_error(&jerr);
  jpeg_create_decompress(&c);
  jpeg_mem_src(&c, b->data, (unsigned long)b->bytes);
  jpeg_read_header(&c, TRUE);
  c.out_color_space = JCS_CMYK;
  c.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&c);
  *w = (int)c.output_width, *h = (int)c.output_height;
  uint8_t *px = malloc((size_t)*w * *h * 4);
  while (c.output_scanline < c.output_height) {
    JSAMPROW r = px + (size_t)c.output_scanline * *w * 4;
    jpeg_read_scanlines(&c, &r, 1);
  }
  jpeg_finish_decompress(&c);
  jpeg_destroy_decompress(&c);
  return px;
}

/* A CMYK JPEG that Pillow wrote decodes to exactly the RGB bytes Pillow's convert("RGB") gives
 * (tests/fixtures/cmyk.jpg and cmyk.rgb, from make_fixtures.py). */
static void test_cmyk_equals_pillow(void **state) {
  char jpg[1024], rgb[1024];
  fixture_path(jpg, sizeof jpg, "cmyk.jpg");
  fixture_path(rgb, sizeof rgb, "cmyk.rgb");
  blob j = read_file(jpg), want = read_file(rgb);
  assert_int_equal(want.bytes, 64 * 48 * 3);
  pb_jpeg_decoder *dec = decoder();
  uint8_t out[64 * 48 * 3];
  int w, h;
  pb_err err = {{0}};
  if (pb_jpeg_decode(dec, j.data, j.bytes, 1, 0, out, sizeof out, &w, &h, &err)) fail_msg("%s", err.msg);
  assert_int_equal(w, 64);
  assert_int_equal(h, 48);
  for (size_t i = 0; i < want.bytes; i++)
    if (out[i] != want.data[i]) fail_msg("byte %zu: %u, Pillow %u", i, out[i], want.data[i]);
  pb_jpeg_decoder_free(dec);
  free(j.data), free(want.data);
}

/* Hand-worked pixels of Pillow's conversion (inverted CMYK: 255 is no ink). */
static void test_cmyk_to_rgb_as_pillow(void **state) {
  const uint8_t in[] = {255, 255, 255, 255, /* no ink: white */ 0, 0, 0, 255, /* full C, M, Y: black */
                        128, 64,  0,   128, /* k half: 128 - 128*127/255 = 64, 128 - 128*191/255 = 32, 0 */
                        200, 100, 50,  0 /* full black ink: black whatever C, M, Y */};
  const uint8_t want[] = {255, 255, 255, 0, 0, 0, 64, 32, 0, 0, 0, 0};
  uint8_t out[12];
  pb_jpeg_cmyk_to_rgb(in, out, 4);
  for (int i = 0; i < 12; i++)
    if (out[i] != want[i]) fail_msg("byte %d: %u, expected %u", i, out[i], want[i]);
  uint8_t same[8] = {128, 64, 0, 128, 255, 255, 255, 255}; /* in place, as the region decode converts */
  pb_jpeg_cmyk_to_rgb(same, same, 2);
  assert_memory_equal(same, ((uint8_t[]){64, 32, 0, 255, 255, 255}), 6);
}

/* CMYK and YCCK files decode (they were refused as "CMYK JPEG") to the RGB of their CMYK pixels, within one
 * level of c * k / 255 worked in floating point; a region of them equals the whole decode cropped. */
static void test_cmyk_and_ycck_decode_to_rgb(void **state) {
  const J_COLOR_SPACE spaces[] = {JCS_CMYK, JCS_YCCK};
  pb_jpeg_decoder *dec = decoder();
  pb_jpeg_region *r = NULL;
  pb_err err = {{0}};
  assert_int_equal(pb_jpeg_region_init(&r, &err), 0);
  for (int s = 0; s < 2; s++) {
    blob b = cmyk_jpeg(97, 61, spaces[s]);
    int w, h, ow, oh;
    uint8_t *cmyk = libjpeg_cmyk(&b, &w, &h), *rgb = malloc((size_t)w * h * 3), *part = malloc((size_t)w * h * 3);
    if (pb_jpeg_decode(dec, b.data, b.bytes, 1, 0, rgb, (size_t)w * h * 3, &ow, &oh, &err))
      fail_msg("space %d: %s", s, err.msg);
    assert_int_equal(ow, w);
    assert_int_equal(oh, h);
    for (int i = 0; i < w * h * 3; i++) {
      double want = cmyk[i / 3 * 4 + i % 3] * cmyk[i / 3 * 4 + 3] / 255.0;
      if (rgb[i] < want - 1 || rgb[i] > want + 1) fail_msg("space %d byte %d: %u, expected %.2f", s, i, rgb[i], want);
    }
    pb_jpeg_rect rect = {13, 7, 40, 30}, got;
    if (pb_jpeg_decode_region(r, b.data, b.bytes, &rect, 1, 0, part, (size_t)w * h * 3, &got, &err))
      fail_msg("space %d region: %s", s, err.msg);
    for (int y = 0; y < rect.h; y++)
      assert_memory_equal(part + ((size_t)y * got.w + (rect.x - got.x)) * 3,
                          rgb + ((size_t)(rect.y + y) * w + rect.x) * 3, (size_t)rect.w * 3);
    free(cmyk), free(rgb), free(part), free(b.data);
  }
  pb_jpeg_region_free(r);
  pb_jpeg_decoder_free(dec);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pixels_equal_djpeg_at_every_scale),
      cmocka_unit_test(test_scaled_sizes_round_up),
      cmocka_unit_test(test_auto_scale_keeps_the_crop_size),
      cmocka_unit_test(test_crop_denom_and_place),
      cmocka_unit_test(test_per_crop_scale_near_exact),
      cmocka_unit_test(test_truncated_files_are_errors),
      cmocka_unit_test(test_empty_garbage_and_header_only_are_errors),
      cmocka_unit_test(test_decoder_recovers_after_a_broken_header),
      cmocka_unit_test(test_corrupt_scan_data_never_crashes),
      cmocka_unit_test(test_max_pixels_is_checked_before_decoding),
      cmocka_unit_test(test_bad_arguments_are_refused),
      cmocka_unit_test(test_encoder_refuses_bad_input),
      cmocka_unit_test(test_region_equals_whole_decode_cropped),
      cmocka_unit_test(test_cmyk_to_rgb_as_pillow),
      cmocka_unit_test(test_cmyk_equals_pillow),
      cmocka_unit_test(test_cmyk_and_ycck_decode_to_rgb),
  };
  return cmocka_run_group_tests(tests, make_tmp_dir, remove_tmp_dir);
}

/* pb_jpeg_huff (jpeg_huff.c), the Huffman decoder put in libjpeg's place: it takes over exactly the files
 * it should (baseline Huffman, one scan, no restarts); with it, every decoded pixel equals libjpeg's own
 * decode, for every chroma layout, quality (long codes at 100), optimised tables, scale, region and
 * skipped rows; on corrupt scan data (thousands of random mutations, run under ASan in CI) it fails where
 * libjpeg fails and decodes the same pixels where libjpeg decodes.  The documented differences: a bit
 * pattern that is no code ("bad Huffman code"), which libjpeg's fast path reads as a zero; and after
 * FF FF .. 00 in the scan, the one MCU where libjpeg-turbo's fast path leaves stale coefficients. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
/* after stdio.h: jpeglib.h needs FILE and size_t */
#include <jpeglib.h>

#include "jpeg.h"
#include "jpeg_huff.h"

/* ---- encoding test images with libjpeg's own encoder ---- */

typedef struct layout {
  const char *name;
  int h_samp, v_samp; /* the luma's sampling factors (chroma 1x1); 0: grayscale */
  int quality;
  bool optimize, progressive, arith;
  unsigned restart_interval;
} layout;

typedef struct blob {
  unsigned char *data;
  unsigned long bytes;
} blob;

/* A photo-like test pattern: gradients, edges and noise, so the AC coefficients span short and long
 * codes (at quality 100 many values need more bits than the 10-bit lookup window). */
static uint8_t *pattern(int w, int h, int channels, uint64_t seed) {
  uint8_t *px = malloc((size_t)w * (size_t)h * (size_t)channels);
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (int y = 0; y < h; y++)
    for (int i = 0; i < w; i++)
      for (int c = 0; c < channels; c++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int v = (i * 255 / w + y * (c + 1) * 3) % 256;
        if ((i / 24 + y / 16) % 3 == 0) v = 255 - v;         /* edges */
        v += (int)(x % 61) - 30 + ((i * 7 + y * 3) % 40 < 4 ? 90 : 0); /* noise and thin lines */
        size_t at = ((size_t)y * (size_t)w + (size_t)i) * (size_t)channels + (size_t)c;
        px[at] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
      }
  return px;
}

static blob encode(const layout *l, int w, int h, uint64_t seed) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr jerr;
  c.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&c);
  blob b = {0};
  jpeg_mem_dest(&c, &b.data, &b.bytes);
  bool gray = l->h_samp == 0;
  c.image_width = (JDIMENSION)w;
  c.image_height = (JDIMENSION)h;
  c.input_components = gray ? 1 : 3;
  c.in_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, l->quality, TRUE);
  if (!gray) {
    c.comp_info[0].h_samp_factor = l->h_samp;
    c.comp_info[0].v_samp_factor = l->v_samp;
  }
  c.optimize_coding = l->optimize;
  c.arith_code = l->arith;
  c.restart_interval = l->restart_interval;
  if (l->progressive) jpeg_simple_progression(&c);
  uint8_t *px = pattern(w, h, c.input_components, seed);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = px + (size_t)c.next_scanline * (size_t)w * (size_t)c.input_components;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  free(px);
  return b;
}

static const layout layouts[] = {
    {"4:2:0 q90", 2, 2, 90, false, false, false, 0},
    {"4:2:0 q75 optimised", 2, 2, 75, true, false, false, 0},
    {"4:4:4 q100", 1, 1, 100, false, false, false, 0},
    {"4:4:4 q100 optimised", 1, 1, 100, true, false, false, 0},
    {"4:2:2 q95", 2, 1, 95, false, false, false, 0},
    {"4:4:0 q85", 1, 2, 85, false, false, false, 0},
    {"4:1:1 q60", 4, 1, 60, true, false, false, 0},
    {"4x2 q30", 4, 2, 30, false, false, false, 0},
    {"gray q90", 0, 0, 90, false, false, false, 0},
    {"gray q100 optimised", 0, 0, 100, true, false, false, 0},
    /* libjpeg's own decoder keeps these */
    {"4:2:0 q90 restarts", 2, 2, 90, false, false, false, 3},
    {"4:2:0 q90 progressive", 2, 2, 90, false, true, false, 0},
    {"4:2:0 q90 arithmetic", 2, 2, 90, false, false, true, 0},
};
#define NLAYOUTS (sizeof layouts / sizeof layouts[0])
static bool takes_over(const layout *l) { return !l->restart_interval && !l->progressive && !l->arith; }

/* ---- decoding with libjpeg directly, with and without the replacement ---- */

typedef struct err_mgr {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX];
} err_mgr;

static void on_error(j_common_ptr c) {
  err_mgr *e = (err_mgr *)c->err;
  c->err->format_message(c, e->msg);
  longjmp(e->jump, 1);
}

static void on_message(j_common_ptr c, int level) {
  if (level < 0) on_error(c); /* warnings are errors, as in the region decoder */
}

/* Decodes the whole image (at 1/denom, rows [skip, height) after skipping the first `skip`) into out;
 * returns 0 or -1 with msg set; *attached says whether pb_jpeg_huff took over. */
static int decode_all(pb_jpeg_huff *h, const blob *b, int denom, int skip, uint8_t *out, size_t cap,
                      bool *attached, char *msg) {
  struct jpeg_decompress_struct c;
  err_mgr e;
  c.err = jpeg_std_error(&e.pub);
  e.pub.error_exit = on_error;
  e.pub.emit_message = on_message;
  jpeg_create_decompress(&c);
  *attached = false;
  if (setjmp(e.jump)) {
    strcpy(msg, e.msg);
    jpeg_destroy_decompress(&c);
    return -1;
  }
  jpeg_mem_src(&c, b->data, b->bytes);
  jpeg_read_header(&c, TRUE);
  c.out_color_space = JCS_RGB;
  c.scale_num = 1;
  c.scale_denom = (unsigned)denom;
  c.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&c);
  *attached = pb_jpeg_huff_attach(h, &c);
  size_t row_bytes = (size_t)c.output_width * 3;
  assert_true(row_bytes * c.output_height <= cap);
  if (skip > 0 && (JDIMENSION)skip < c.output_height) jpeg_skip_scanlines(&c, (JDIMENSION)skip);
  while (c.output_scanline < c.output_height) {
    JSAMPROW row = out + (size_t)c.output_scanline * row_bytes;
    if (jpeg_read_scanlines(&c, &row, 1) != 1) {
      strcpy(msg, "no row");
      jpeg_destroy_decompress(&c);
      return -1;
    }
  }
  jpeg_destroy_decompress(&c);
  return 0;
}

/* Whether pb_jpeg_huff takes over, and the pixels equal libjpeg's, whole and after skipped rows (the
 * skip decodes MCUs with no block to write), at every scale (at 1/8 libjpeg needs only the DC). */
static void test_same_pixels_as_libjpeg(void **state) {
  (void)state;
  pb_jpeg_huff *h = pb_jpeg_huff_new();
  assert_non_null(h);
  const int sizes[][2] = {{333, 251}, {64, 48}, {17, 9}, {1, 1}};
  size_t cap = 333 * 251 * 3;
  uint8_t *a = malloc(cap), *b = malloc(cap);
  char msg[JMSG_LENGTH_MAX];
  for (size_t k = 0; k < NLAYOUTS; k++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      blob img = encode(&layouts[k], sizes[s][0], sizes[s][1], k * 10 + s);
      for (int denom = 1; denom <= 8; denom *= 2)
        for (int skip = 0; skip <= 40; skip += 40) {
          bool on, off;
          memset(a, 0x11, cap);
          memset(b, 0x11, cap);
          pb_jpeg_huff_allow(false);
          if (decode_all(h, &img, denom, skip, a, cap, &off, msg)) fail_msg("%s: libjpeg: %s", layouts[k].name, msg);
          pb_jpeg_huff_allow(true);
          if (decode_all(h, &img, denom, skip, b, cap, &on, msg))
            fail_msg("%s: pb_jpeg_huff: %s", layouts[k].name, msg);
          assert_false(off);
          if (on != takes_over(&layouts[k])) fail_msg("%s: attached %d", layouts[k].name, on);
          if (memcmp(a, b, cap))
            fail_msg("%s %dx%d at 1/%d, %d rows skipped: pixels differ from libjpeg's", layouts[k].name,
                     sizes[s][0], sizes[s][1], denom, skip);
        }
      free(img.data);
    }
  free(a);
  free(b);
  pb_jpeg_huff_free(h);
}

/* The region decoder (fused_crop) with the replacement equals itself without it, on regions as the
 * crop draws them, for every layout. */
static void test_region_decoder_same_pixels(void **state) {
  (void)state;
  pb_jpeg_region *r = NULL;
  pb_err err = {{0}};
  assert_int_equal(pb_jpeg_region_init(&r, &err), 0);
  size_t cap = 400 * 300 * 3;
  uint8_t *a = malloc(cap), *b = malloc(cap);
  uint64_t x = 12345;
  for (size_t k = 0; k < NLAYOUTS; k++) {
    blob img = encode(&layouts[k], 400, 300, 77 + k);
    for (int n = 0; n < 40; n++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      int w = 1 + (int)(x % 400), hh = 1 + (int)((x >> 20) % 300);
      pb_jpeg_rect q = {(int)((x >> 40) % (uint64_t)(400 - w + 1)), (int)((x >> 50) % (uint64_t)(300 - hh + 1)), w, hh};
      pb_jpeg_rect got_a, got_b;
      memset(a, 0x11, cap);
      memset(b, 0x11, cap);
      pb_jpeg_huff_allow(false);
      if (pb_jpeg_decode_region(r, img.data, img.bytes, &q, 1, 0, a, cap, &got_a, &err)) fail_msg("%s", err.msg);
      pb_jpeg_huff_allow(true);
      if (pb_jpeg_decode_region(r, img.data, img.bytes, &q, 1, 0, b, cap, &got_b, &err)) fail_msg("%s", err.msg);
      assert_memory_equal(&got_a, &got_b, sizeof got_a);
      if (memcmp(a, b, cap))
        fail_msg("%s: region %dx%d at (%d, %d) differs", layouts[k].name, q.w, q.h, q.x, q.y);
    }
    free(img.data);
  }
  free(a);
  free(b);
  pb_jpeg_region_free(r);
}

static bool has_ff_ff(const uint8_t *p, size_t n) {
  for (size_t i = 0; i + 1 < n; i++)
    if (p[i] == 0xFF && p[i + 1] == 0xFF) return true;
  return false;
}

/* Corrupt scan data: bytes changed, cut out, markers dropped in.  With and without the replacement, the
 * same outcome: both fail, or both decode the same pixels; or only the replacement fails, on a bad
 * Huffman code (libjpeg's fast path reads one as a zero).  Never the other way round. */
static void test_corrupt_data_same_outcome(void **state) {
  (void)state;
  pb_jpeg_region *r = NULL;
  pb_err err = {{0}};
  assert_int_equal(pb_jpeg_region_init(&r, &err), 0);
  size_t cap = 160 * 120 * 3;
  uint8_t *a = malloc(cap), *b = malloc(cap);
  uint64_t x = 99;
  int both_ok = 0, both_failed = 0, bad_code_only = 0, libjpeg_stale = 0;
  const size_t picks[] = {0, 2, 4, 8}; /* 4:2:0, 4:4:4 q100, 4:2:2, gray */
  for (size_t pk = 0; pk < sizeof picks / sizeof picks[0]; pk++) {
    blob img = encode(&layouts[picks[pk]], 160, 120, 5 + pk);
    /* the scan data: after the SOS header, up to the EOI */
    size_t sos = 0;
    for (size_t i = 2; i + 1 < img.bytes; i++)
      if (img.data[i] == 0xFF && img.data[i + 1] == 0xDA) {
        sos = i + 2 + ((size_t)img.data[i + 2] << 8 | img.data[i + 3]);
        break;
      }
    assert_true(sos > 0 && sos + 2 < img.bytes);
    size_t scan_bytes = img.bytes - 2 - sos;
    uint8_t *m = malloc(img.bytes + 8);
    for (int n = 0; n < 1500; n++) {
      memcpy(m, img.data, img.bytes);
      size_t bytes = img.bytes;
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      size_t at = sos + (size_t)(x % scan_bytes);
      switch ((x >> 32) % 5) {
      case 0: m[at] ^= (uint8_t)(1u << ((x >> 40) % 8)); break; /* one bit */
      case 1: m[at] = (uint8_t)(x >> 48); break;                 /* one byte */
      case 2: /* a cut: the rest of the scan moves up */
        {
          size_t cut = 1 + (size_t)((x >> 40) % 64);
          if (at + cut > img.bytes - 2) cut = img.bytes - 2 - at;
          memmove(m + at, m + at + cut, img.bytes - at - cut);
          bytes -= cut;
        }
        break;
      case 3: m[at] = 0xFF, m[at + 1 < img.bytes - 2 ? at + 1 : at] = (uint8_t)(0xD0 + (x >> 40) % 8); break; /* RSTn */
      default: m[at] = 0xFF, m[at + 1 < img.bytes - 2 ? at + 1 : at] = 0xFF; break; /* fill bytes */
      }
      pb_jpeg_rect all = {0, 0, 160, 120}, got;
      pb_err ea = {{0}}, eb = {{0}};
      pb_jpeg_huff_allow(false);
      int ra = pb_jpeg_decode_region(r, m, bytes, &all, 1, 0, a, cap, &got, &ea);
      pb_jpeg_huff_allow(true);
      int rb = pb_jpeg_decode_region(r, m, bytes, &all, 1, 0, b, cap, &got, &eb);
      if (ra == 0 && rb == 0) {
        if (memcmp(a, b, cap)) {
          /* FF FF .. 00 is one FF byte to both; libjpeg's fast path first reads the FF FF as a marker,
           * decodes the MCU from zeros, then again the right way, into a block it does not zero again:
           * stale coefficients in that one MCU.  Only then may the pixels differ. */
          if (!has_ff_ff(m + sos, bytes - sos))
            fail_msg("%s, mutation %d at %zu: both decode, pixels differ", layouts[picks[pk]].name, n, at);
          libjpeg_stale++;
          continue;
        }
        both_ok++;
      } else if (ra != 0 && rb != 0) {
        both_failed++;
      } else if (ra == 0 && strstr(eb.msg, "bad Huffman code")) {
        bad_code_only++;
      } else {
        fail_msg("%s, mutation %d at %zu: libjpeg %d (%s), pb_jpeg_huff %d (%s)", layouts[picks[pk]].name, n, at, ra,
                 ea.msg, rb, eb.msg);
      }
    }
    free(m);
    free(img.data);
  }
  print_message("corrupt scans: %d decoded alike, %d refused by both, %d refused only as a bad Huffman code, %d with "
                "libjpeg's stale MCU after FF FF\n",
                both_ok, both_failed, bad_code_only, libjpeg_stale);
  assert_true(both_ok > 0 && both_failed > 0);
  free(a);
  free(b);
  pb_jpeg_region_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_pixels_as_libjpeg),
      cmocka_unit_test(test_region_decoder_same_pixels),
      cmocka_unit_test(test_corrupt_data_same_outcome),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

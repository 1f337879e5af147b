/* pb_jpeg_huff (jpeg_huff.c), the Huffman decoder put in libjpeg's place: it takes over exactly the files
 * it should (baseline Huffman, one scan, with or without restart intervals); with it, every decoded pixel equals
 * libjpeg's own decode, for every chroma layout, quality (long codes at 100), optimised tables, scale, region and
 * skipped rows; on corrupt scan data (thousands of random mutations, run under ASan in CI) it fails
 * exactly where libjpeg's careful path fails and decodes the same pixels where it decodes.  (libjpeg's
 * fast path differs from its own careful path: it reads a bit pattern that is no code as a zero, and
 * after FF FF .. 00 leaves stale coefficients in one MCU.) */
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
#include <jerror.h>

#include "jpeg.h"
#include "jpeg_huff.h"
#include "unit_util.h"

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
    {"4:2:0 q90 restarts", 2, 2, 90, false, false, false, 3},
    {"4:2:2 q95 restart every MCU", 2, 1, 95, false, false, false, 1},
    {"4:4:4 q85 restarts optimised", 1, 1, 85, true, false, false, 7},
    /* pb_jpeg_huff_attach declines these (progressive: pb_jpeg_huff_attach_progressive, tested below) */
    {"4:2:0 q90 progressive", 2, 2, 90, false, true, false, 0},
    {"4:2:0 q90 arithmetic", 2, 2, 90, false, false, true, 0},
};
#define NLAYOUTS (sizeof layouts / sizeof layouts[0])
static bool takes_over(const layout *l) { return !l->progressive && !l->arith; }

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

/* A source that hands libjpeg the file 400 bytes at a time, as a file reader would: then libjpeg's
 * Huffman decoder always takes its careful path (its fast path wants 512 bytes a block in the buffer).
 * At the end, a fake EOI and libjpeg's warning, as jpeg_mem_src does. */
#define CHUNK_BYTES 400
typedef struct chunked_src {
  struct jpeg_source_mgr pub;
  const blob *b;
  size_t at;
} chunked_src;

static void chunk_init(j_decompress_ptr c) { (void)c; }
static void chunk_term(j_decompress_ptr c) { (void)c; }

static boolean chunk_fill(j_decompress_ptr c) {
  static const JOCTET eoi[2] = {0xFF, JPEG_EOI};
  chunked_src *s = (chunked_src *)c->src;
  if (s->at >= s->b->bytes) {
    WARNMS(c, JWRN_JPEG_EOF);
    s->pub.next_input_byte = eoi;
    s->pub.bytes_in_buffer = 2;
    return TRUE;
  }
  size_t n = s->b->bytes - s->at < CHUNK_BYTES ? s->b->bytes - s->at : CHUNK_BYTES;
  s->pub.next_input_byte = s->b->data + s->at;
  s->pub.bytes_in_buffer = n;
  s->at += n;
  return TRUE;
}

static void chunk_skip(j_decompress_ptr c, long n) {
  while (n > (long)c->src->bytes_in_buffer) {
    n -= (long)c->src->bytes_in_buffer;
    chunk_fill(c);
  }
  c->src->next_input_byte += n;
  c->src->bytes_in_buffer -= (size_t)n;
}

static void chunked_source(j_decompress_ptr c, chunked_src *s, const blob *b) {
  *s = (chunked_src){.pub = {.init_source = chunk_init, .fill_input_buffer = chunk_fill,
                             .skip_input_data = chunk_skip, .resync_to_restart = jpeg_resync_to_restart,
                             .term_source = chunk_term},
                     .b = b};
  c->src = &s->pub;
}

/* Decodes the whole image (at 1/denom, rows [skip, height) after skipping the first `skip`) into out;
 * returns 0 or -1 with msg set; *attached says whether pb_jpeg_huff took over.  `chunked`: through the
 * 400-byte source, where pb_jpeg_huff must not take over (it reads the file in memory). */
static int decode_all(pb_jpeg_huff *h, const blob *b, int denom, int skip, uint8_t *out, size_t cap,
                      bool *attached, char *msg, bool chunked) {
  struct jpeg_decompress_struct c;
  err_mgr e;
  c.err = jpeg_std_error(&e.pub);
  e.pub.error_exit = on_error;
  e.pub.emit_message = on_message;
  jpeg_create_decompress(&c);
  chunked_src src;
  *attached = false;
  if (setjmp(e.jump)) {
    strcpy(msg, e.msg);
    jpeg_destroy_decompress(&c);
    return -1;
  }
  if (chunked)
    chunked_source(&c, &src, b);
  else
    jpeg_mem_src(&c, b->data, b->bytes);
  jpeg_read_header(&c, TRUE);
  c.out_color_space = JCS_RGB;
  c.scale_num = 1;
  c.scale_denom = (unsigned)denom;
  c.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&c);
  *attached = pb_jpeg_huff_attach(h, &c, b->data, b->bytes);
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
          if (decode_all(h, &img, denom, skip, a, cap, &off, msg, false))
            fail_msg("%s: libjpeg: %s", layouts[k].name, msg);
          pb_jpeg_huff_allow(true);
          if (decode_all(h, &img, denom, skip, b, cap, &on, msg, false))
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

/* Where the first scan's entropy-coded data starts: after its SOS header. */
static size_t first_scan_data(const blob *img) {
  for (size_t i = 2; i + 3 < img->bytes; i++)
    if (img->data[i] == 0xFF && img->data[i + 1] == 0xDA)
      return i + 2 + ((size_t)img->data[i + 2] << 8 | img->data[i + 3]);
  return 0;
}

/* m, a copy of img, corrupted at one place between `from` and the EOI marker (kept), as x picks: a bit or a byte
 * changed, up to 64 bytes cut out (the rest moves up), an RSTn marker or fill bytes dropped in.  The corrupted
 * size; *at_out the place. */
static size_t corrupt(uint8_t *m, const blob *img, size_t from, uint64_t x, size_t *at_out) {
  memcpy(m, img->data, img->bytes);
  size_t bytes = img->bytes, at = from + (size_t)(x % (img->bytes - 2 - from)),
         next = at + 1 < img->bytes - 2 ? at + 1 : at;
  switch ((x >> 32) % 5) {
    case 0:
      m[at] ^= (uint8_t)(1u << ((x >> 40) % 8));
      break; /* one bit */
    case 1:
      m[at] = (uint8_t)(x >> 48);
      break;  /* one byte */
    case 2: { /* a cut: the rest of the file moves up */
      size_t cut = 1 + (size_t)((x >> 40) % 64);
      if (at + cut > img->bytes - 2) cut = img->bytes - 2 - at;
      memmove(m + at, m + at + cut, img->bytes - at - cut);
      bytes -= cut;
      break;
    }
    case 3:
      m[at] = 0xFF, m[next] = (uint8_t)(0xD0 + (x >> 40) % 8);
      break; /* RSTn */
    default:
      m[at] = 0xFF, m[next] = 0xFF;
      break; /* fill bytes */
  }
  *at_out = at;
  return bytes;
}

/* A progressive image, every scan decoded by pb_jpeg_huff (jpeg_phuff.c) and, at 1/8, the 1x1 components' AC
 * scans stepped over (jpeg_region.c): the same pixels as libjpeg's own decode, whole (against libjpeg driven
 * directly, in its single pass) and in regions (against the region decoder with libjpeg's own entropy
 * decoding), at every scale.  4:2:0 (at 1/8 the chroma takes a 2x2 IDCT and all its scans), 4:4:4 (every
 * component 1x1 at 1/8), grayscale, restart intervals (one every MCU too), q100 (long codes, long EOB runs). */
static void test_progressive_same_pixels(void **state) {
  (void)state;
  pb_jpeg_region *r = NULL;
  pb_jpeg_huff *h = pb_jpeg_huff_new();
  pb_err err = {{0}};
  assert_int_equal(pb_jpeg_region_init(&r, &err), 0);
  const layout progressive[] = {{"4:2:0 q90 progressive", 2, 2, 90, false, true, false, 0},
                                {"4:4:4 q95 progressive", 1, 1, 95, false, true, false, 0},
                                {"gray q80 progressive", 0, 0, 80, false, true, false, 0},
                                {"4:2:2 q90 progressive restarts", 2, 1, 90, false, true, false, 2},
                                {"4:2:0 q100 progressive optimised", 2, 2, 100, true, true, false, 0},
                                {"4:4:4 q50 progressive restart every MCU", 1, 1, 50, false, true, false, 1}};
  const int sizes[][2] = {{801, 603}, {333, 251}, {64, 48}, {9, 17}};
  size_t cap = 801 * 603 * 3;
  uint8_t *a = malloc(cap), *b = malloc(cap);
  char msg[JMSG_LENGTH_MAX];
  uint64_t x = 4242;
  for (size_t k = 0; k < sizeof progressive / sizeof progressive[0]; k++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      blob img = encode(&progressive[k], sizes[s][0], sizes[s][1], 300 + k * 10 + s);
      for (int denom = 1; denom <= 8; denom *= 2) {
        pb_jpeg_huff_refine_path(denom == 1 ? 2 : denom == 2 ? 1 : 0); /* each refinement path somewhere */
        int ow = (sizes[s][0] + denom - 1) / denom, oh = (sizes[s][1] + denom - 1) / denom;
        bool attached;
        memset(a, 0x11, cap);
        memset(b, 0x11, cap);
        if (decode_all(h, &img, denom, 0, a, cap, &attached, msg, false))
          fail_msg("%s: libjpeg: %s", progressive[k].name, msg);
        assert_false(attached);
        pb_jpeg_rect got;
        if (pb_jpeg_decode_region(r, img.data, img.bytes, &(pb_jpeg_rect){0, 0, ow, oh}, denom, 0, b, cap, &got, &err))
          fail_msg("%s: %s", progressive[k].name, err.msg);
        if (memcmp(a, b, (size_t)ow * oh * 3))
          fail_msg("%s %dx%d at 1/%d: pixels differ", progressive[k].name, sizes[s][0], sizes[s][1], denom);
        for (int n = 0; n < 4; n++) { /* regions: against the same decode with libjpeg's own entropy decoding */
          x ^= x << 13, x ^= x >> 7, x ^= x << 17;
          int w = 1 + (int)(x % (uint64_t)ow), hh = 1 + (int)((x >> 20) % (uint64_t)oh);
          pb_jpeg_rect q = {(int)((x >> 40) % (uint64_t)(ow - w + 1)), (int)((x >> 50) % (uint64_t)(oh - hh + 1)), w, hh},
                       ga;
          pb_jpeg_huff_allow(false);
          if (pb_jpeg_decode_region(r, img.data, img.bytes, &q, denom, 0, a, cap, &ga, &err)) fail_msg("%s", err.msg);
          pb_jpeg_huff_allow(true);
          if (pb_jpeg_decode_region(r, img.data, img.bytes, &q, denom, 0, b, cap, &got, &err)) fail_msg("%s", err.msg);
          assert_memory_equal(&ga, &got, sizeof got);
          if (memcmp(a, b, (size_t)got.w * got.h * 3))
            fail_msg("%s: region %dx%d at (%d, %d) of 1/%d differs", progressive[k].name, q.w, q.h, q.x, q.y, denom);
        }
      }
      free(img.data);
    }
  pb_jpeg_huff_refine_path(2);
  free(a);
  free(b);
  pb_jpeg_huff_free(h);
  pb_jpeg_region_free(r);
}

/* Corrupt progressive data (bytes changed, cut out, markers dropped in, anywhere after the first scan's
 * header: scan data and the tables and scan headers between scans).  libjpeg's progressive decoder has no
 * fast path: its own decode through the region decoder is its careful behaviour.  pb_jpeg_huff: the same
 * outcome, and where both decode, the same pixels, at full size and at 1/2 (at 1/8 the skipped AC scans'
 * damage goes unseen by design). */
static void test_progressive_corrupt_same_outcome(void **state) {
  (void)state;
  pb_jpeg_region *r = NULL;
  pb_err err = {{0}};
  assert_int_equal(pb_jpeg_region_init(&r, &err), 0);
  size_t cap = 160 * 120 * 3;
  uint8_t *a = malloc(cap), *b = malloc(cap);
  uint64_t x = 777;
  int both_ok = 0, both_failed = 0, stricter = 0;
  const layout progressive[] = {{"4:2:0 q90 progressive", 2, 2, 90, false, true, false, 0},
                                {"4:4:4 q100 progressive", 1, 1, 100, false, true, false, 0},
                                {"gray q75 progressive", 0, 0, 75, false, true, false, 0},
                                {"4:2:2 q85 progressive restarts", 2, 1, 85, false, true, false, 3}};
  for (size_t pk = 0; pk < sizeof progressive / sizeof progressive[0]; pk++) {
    blob img = encode(&progressive[pk], 160, 120, 50 + pk);
    size_t sos = first_scan_data(&img);
    assert_uint_cmp(sos, >, 0);
    uint8_t *m = malloc(img.bytes + 8);
    for (int n = 0; n < 1200; n++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      size_t at, bytes = corrupt(m, &img, sos, x, &at);
      int denom = n % 2 ? 2 : 1, ow = 160 / denom, oh = 120 / denom;
      pb_jpeg_huff_refine_path(n % 3); /* every refinement path */
      pb_jpeg_rect whole = {0, 0, ow, oh}, got;
      pb_err ea = {{0}}, eb = {{0}};
      memset(a, 0x11, cap);
      memset(b, 0x11, cap);
      pb_jpeg_huff_allow(false);
      int ra = pb_jpeg_decode_region(r, m, bytes, &whole, denom, 0, a, cap, &got, &ea);
      pb_jpeg_huff_allow(true);
      int rb = pb_jpeg_decode_region(r, m, bytes, &whole, denom, 0, b, cap, &got, &eb);
      /* whole bytes of garbage at a scan's end, still in the reader: refused here; libjpeg, which reads fewer
       * bytes ahead, lets those in its bit buffer go silently: stricter, and counted */
      if (ra == 0 && rb != 0 && strstr(eb.msg, "extraneous bytes")) {
        stricter++;
        continue;
      }
      if ((ra == 0) != (rb == 0))
        fail_msg("%s, mutation %d at %zu: libjpeg %s (%s), pb_jpeg_huff %s (%s)", progressive[pk].name, n, at,
                 ra ? "fails" : "decodes", ea.msg, rb ? "fails" : "decodes", eb.msg);
      if (ra == 0 && memcmp(a, b, cap))
        fail_msg("%s, mutation %d at %zu: both decode, pixels differ", progressive[pk].name, n, at);
      if (ra == 0)
        both_ok++;
      else
        both_failed++;
    }
    free(m);
    free(img.data);
  }
  pb_jpeg_huff_refine_path(2);
  print_message("corrupt progressive files: %d decoded alike, %d refused by both, %d refused here only (garbage at "
                "a scan's end)\n", both_ok, both_failed, stricter);
  assert_int_cmp(stricter, <, (both_ok + both_failed) / 50);
  assert_int_cmp(both_ok, >, 0);
  assert_int_cmp(both_failed, >, 0);
  free(a);
  free(b);
  pb_jpeg_region_free(r);
}

/* Corrupt scan data: bytes changed, cut out, markers and fill bytes dropped in (the end-of-image marker
 * kept).  pb_jpeg_huff, through the region decoder, against libjpeg's careful path (the 400-byte
 * source): the same outcome, and where both decode, the same pixels, every time.  libjpeg through
 * jpeg_mem_src takes its fast path instead, which differs from its careful path in two ways (a bad
 * code read as a zero; a stale MCU after FF FF): counted, for the record. */
static void test_corrupt_data_same_outcome(void **state) {
  (void)state;
  pb_jpeg_region *r = NULL;
  pb_err err = {{0}};
  assert_int_equal(pb_jpeg_region_init(&r, &err), 0);
  pb_jpeg_huff *h = pb_jpeg_huff_new();
  size_t cap = 160 * 120 * 3;
  uint8_t *a = malloc(cap), *b = malloc(cap), *f = malloc(cap);
  uint64_t x = 99;
  int both_ok = 0, both_failed = 0, fast_path_differs = 0, restart_stricter = 0;
  char msg[JMSG_LENGTH_MAX];
  const size_t picks[] = {0, 2, 4, 8, 10, 11}; /* 4:2:0, 4:4:4 q100, 4:2:2, gray, and two with restarts */
  for (size_t pk = 0; pk < sizeof picks / sizeof picks[0]; pk++) {
    blob img = encode(&layouts[picks[pk]], 160, 120, 5 + pk);
    size_t sos = first_scan_data(&img); /* the scan data: after the SOS header, up to the EOI */
    assert_uint_cmp(sos, >, 0);
    assert_uint_cmp(sos + 2, <, img.bytes);
    uint8_t *m = malloc(img.bytes + 8);
    for (int n = 0; n < 1500; n++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      size_t at, bytes = corrupt(m, &img, sos, x, &at);
      blob mb = {m, bytes};
      bool attached;
      pb_jpeg_huff_allow(false);
      int ra = decode_all(h, &mb, 1, 0, a, cap, &attached, msg, true); /* libjpeg, careful path */
      int rf = pb_jpeg_decode_region(r, m, bytes, &(pb_jpeg_rect){0, 0, 160, 120}, 1, 0, f, cap,
                                     &(pb_jpeg_rect){0}, &err); /* libjpeg, fast path */
      pb_jpeg_huff_allow(true);
      decode_all(h, &mb, 1, 0, b, cap, &attached, msg, true);
      assert_false(attached); /* a source that does not hold the whole file: not taken over */
      pb_err eb = {{0}};
      pb_jpeg_rect got;
      int rb = pb_jpeg_decode_region(r, m, bytes, &(pb_jpeg_rect){0, 0, 160, 120}, 1, 0, b, cap, &got, &eb);
      /* at a restart marker, whole bytes of (corrupt) data left before it are refused here; libjpeg's careful
       * path lets them go silently when its reader had already met the marker (it warns only when it goes
       * looking for one): stricter, and counted */
      bool stricter = ra == 0 && rb != 0 && layouts[picks[pk]].restart_interval && strstr(eb.msg, "extraneous bytes");
      if (stricter) {
        restart_stricter++;
        continue;
      }
      if ((ra == 0) != (rb == 0))
        fail_msg("%s, mutation %d at %zu: libjpeg's careful path %s, pb_jpeg_huff %s (%s)", layouts[picks[pk]].name,
                 n, at, ra ? "fails" : "decodes", rb ? "fails" : "decodes", rb ? eb.msg : "");
      if (ra == 0 && memcmp(a, b, cap))
        fail_msg("%s, mutation %d at %zu: both decode, pixels differ", layouts[picks[pk]].name, n, at);
      if ((rf == 0) != (rb == 0) || (rf == 0 && memcmp(f, b, cap))) fast_path_differs++;
      if (ra == 0)
        both_ok++;
      else
        both_failed++;
    }
    free(m);
    free(img.data);
  }
  print_message(
      "corrupt scans: %d decoded alike, %d refused by both, %d refused here only (data left before a "
      "restart marker); libjpeg's fast path differs from its careful path in %d\n",
      both_ok, both_failed, restart_stricter, fast_path_differs);
  assert_int_cmp(both_ok, >, 0);
  assert_int_cmp(both_failed, >, 0);
  free(a);
  free(b);
  free(f);
  pb_jpeg_huff_free(h);
  pb_jpeg_region_free(r);
}

/* A file that ends without its end-of-image marker, read straight from memory (the region decoder
 * refuses such a file before decoding; another caller might not): libjpeg's reader runs past the end and
 * warns "Premature end of JPEG file"; so does pb_jpeg_huff's, even when the bits it needed were all there. */
static void test_end_of_buffer_is_premature_end(void **state) {
  (void)state;
  pb_jpeg_huff *h = pb_jpeg_huff_new();
  size_t cap = 64 * 48 * 3;
  uint8_t *out = malloc(cap);
  char msg[JMSG_LENGTH_MAX];
  const size_t picks[] = {0, 2, 8};
  for (size_t pk = 0; pk < sizeof picks / sizeof picks[0]; pk++) {
    blob img = encode(&layouts[picks[pk]], 64, 48, 3);
    blob cut = {img.data, img.bytes - 2}; /* no FF D9 */
    for (int on = 0; on <= 1; on++) {
      bool attached;
      pb_jpeg_huff_allow(on);
      assert_int_equal(decode_all(h, &cut, 1, 0, out, cap, &attached, msg, false), -1);
      assert_int_equal(attached, on);
      assert_non_null(strstr(msg, "Premature end of JPEG file"));
    }
    free(img.data);
  }
  free(out);
  pb_jpeg_huff_free(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_pixels_as_libjpeg),
      cmocka_unit_test(test_region_decoder_same_pixels),
      cmocka_unit_test(test_progressive_same_pixels),
      cmocka_unit_test(test_progressive_corrupt_same_outcome),
      cmocka_unit_test(test_corrupt_data_same_outcome),
      cmocka_unit_test(test_end_of_buffer_is_premature_end),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

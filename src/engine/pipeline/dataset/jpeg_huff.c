/* A faster Huffman decoder for baseline JPEGs, put in libjpeg's place (jpeg_huff.h).
 *
 * Why: in a fused decode (jpeg_region.c) libjpeg-turbo's entropy decoding is about two thirds of the
 * time; IDCT, upsampling and colour conversion, already SIMD, are the rest.  Its fast path looks a
 * symbol up 8 bits at a time, then reads the value's bits and sign-extends them in separate steps, and
 * loads the bit buffer a byte at a time, testing each for 0xFF.  This one:
 *  - looks up LOOK_BITS at once, and for the usual short code whose value bits fit in the same
 *    window, gets run, value and length from one table entry (as stb_image's fast AC table does);
 *  - refills 7 bytes at a time from one 8-byte load when none of them is 0xFF (one test for all).
 * The coefficients are exactly libjpeg's, in the same (natural) order, into the blocks libjpeg's
 * coefficient controller hands over, so libjpeg computes every pixel as it would have.
 *
 * How it plugs in: libjpeg calls cinfo->entropy->decode_mcu (jpegint.h, unchanged since IJG 6b) for
 * each MCU; pb_jpeg_huff_attach points it here after jpeg_start_decompress, when libjpeg has checked
 * the tables and the scan header and decoded nothing yet.
 *
 * Where it differs from libjpeg on broken data: a bit pattern that is no code of the table is an error
 * here ("bad Huffman code"), as it is in libjpeg's careful path; libjpeg's fast path (used until the
 * last few KB of a file) decodes it as a zero instead.  Everything else (data cut short by a marker or
 * the end, FF FF .. 00 read as one FF byte, a run past coefficient 63) follows libjpeg's careful path.
 * (libjpeg-turbo's fast path first takes that FF FF for a marker, decodes the MCU from zero bits, then
 * decodes it again the careful way into blocks it does not zero again: that one MCU keeps stale
 * coefficients.  Not here.)
 *
 * Restart intervals (camera JPEGs have them; libjpeg-turbo takes its slow path for them): at each one the
 * bits left in the byte are padding, the RSTn marker must follow at once with the expected n, and the DC
 * predictions start again from zero (F.2.1.3.1).  Anything else (bytes before the marker, another marker, a
 * wrong number) is libjpeg's warning, "found marker 0x.. instead of RST.." or extraneous data, which the
 * region decoder makes an error, as libjpeg's careful path then does. */
#include "jpeg_huff.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jpeg_huff_bits.h" /* and jerror.h, jpegint.h (which has no include guard) */

/* Zigzag to natural order, with 16 extra entries: corrupt data can run k past 63, and libjpeg then
 * writes coefficient 63 (its jpeg_natural_order has the same padding). */
const uint8_t pb_huff_natural_order[DCTSIZE2 + 16] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13,
    6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31,
    39, 46, 53, 60, 61, 54, 47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

/* -1: not decided yet; PB_DEBUG_LIBJPEG_HUFFMAN=1 in the environment leaves every file to libjpeg's own
 * decoder, for side-by-side timings (bench/huffman_ab.py). */
static atomic_int allowed = -1;

void pb_jpeg_huff_allow(bool on) { atomic_store(&allowed, on ? 1 : 0); }

bool pb_jpeg_huff_is_allowed(void) {
  int a = atomic_load_explicit(&allowed, memory_order_relaxed);
  if (a < 0) { /* every thread that finds it undecided decides the same */
    const char *v = getenv("PB_DEBUG_LIBJPEG_HUFFMAN");
    a = v && strcmp(v, "1") == 0 ? 0 : 1;
    int expected = -1;
    atomic_compare_exchange_strong(&allowed, &expected, a);
    a = atomic_load(&allowed);
  }
  return a != 0;
}

pb_jpeg_huff *pb_jpeg_huff_new(void) { return calloc(1, sizeof(pb_jpeg_huff)); }

void pb_jpeg_huff_free(pb_jpeg_huff *h) { free(h); }

/* F.12: the value of the s bits x (s >= 1): the upper half positive, the lower half negative. */

/* ---- tables ---- */

/* The canonical codes of a table (C.2), as libjpeg's jpeg_make_d_derived_tbl builds them; libjpeg has
 * already refused a table whose codes overflow, so this only guards its own arrays. */
static void build_table(huff_table *t, const JHUFF_TBL *src, bool is_dc) {
  memset(t->fast, 0, sizeof t->fast);
  memset(t->look, 0, sizeof t->look);
  memcpy(t->huffval, src->huffval, sizeof t->huffval);
  memcpy(t->key_bits, src->bits, sizeof t->key_bits);
  int32_t code = 0;
  int p = 0;
  for (int len = 1; len <= 16; len++) {
    int n = src->bits[len];
    t->valoffset[len] = p - code;
    for (int i = 0; i < n && p < 256; i++, p++, code++) {
      if (len > LOOK_BITS) continue;
      int sym = src->huffval[p], fill_bits = LOOK_BITS - len;
      int run = is_dc ? 0 : sym >> 4, s = is_dc ? sym : sym & 15;
      for (int fill = 0; fill < (1 << fill_bits); fill++) {
        int idx = (code << fill_bits) | fill;
        if (idx >= LOOK_SIZE) break; /* cannot happen with a table libjpeg accepted */
        t->look[idx] = (uint16_t)(len << 8 | sym);
        /* the value's bits follow the code inside the window: one lookup does both (an AC end of
         * block or run of 16 zeros, s = 0, stays with the symbol path) */
        if (s <= 15 && len + s <= LOOK_BITS && (s > 0 || is_dc)) {
          int value = s ? extend(fill >> (fill_bits - s), s) : 0;
          t->fast[idx] = (int32_t)((uint32_t)value << 16) | run << 8 | (len + s);
        }
      }
    }
    t->maxcode[len] = n ? code - 1 : -1;
    code <<= 1;
  }
  t->maxcode[17] = INT32_MAX;
  t->built = true;
}

const huff_table *pb_huff_table_for(pb_jpeg_huff *h, const JHUFF_TBL *src, int slot, bool is_dc) {
  huff_table *t = &h->tables[slot];
  if (!t->built || memcmp(t->key_bits, src->bits, sizeof t->key_bits) ||
      memcmp(t->huffval, src->huffval, sizeof t->huffval))
    build_table(t, src, is_dc);
  return t;
}

/* ---- the bit reader ---- */

/* Byte by byte, as libjpeg's jpeg_fill_bit_buffer: FF 00 is an FF data byte (so is FF FF .. 00), any
 * other FF xx a marker, which ends the data; then zeros. */
void pb_huff_refill_careful(bitreader *b) {
  b->acc &= b->nbits ? ~0ull << (64 - b->nbits) : 0; /* drop what the quick refill put past nbits */
  while (b->nbits <= 56) {
    if (!b->stopped) {
      if (b->p >= b->end) {
        b->stopped = b->at_end = true;
        continue;
      }
      const uint8_t *q = b->p;
      unsigned c = *q++;
      if (c == 0xFF) {
        while (q < b->end && *q == 0xFF) q++;
        if (q >= b->end || *q != 0) { /* a marker: stop before it, as libjpeg leaves it unread */
          b->stopped = true;
          b->at_end = q >= b->end; /* FF as the last byte: libjpeg runs out looking for the marker */
          continue;
        }
        q++;
      }
      b->p = q;
      b->acc |= (uint64_t)c << (56 - b->nbits);
      b->nbits += 8;
    } else {
      b->nfake += 64 - b->nbits;
      b->nbits = 64;
    }
  }
}

/* A symbol whose code is longer than the window, or no code at all (then a warning, which the region
 * decoder's error manager turns into an error; should one return, the symbol is 0 after 17 bits, as in
 * libjpeg's jpeg_huff_decode). */
int pb_huff_slow_symbol(j_decompress_ptr c, const huff_table *t, uint64_t acc, int *len) {
  unsigned code16 = (unsigned)(acc >> 48);
  int l = LOOK_BITS + 1;
  while (l <= 16 && (int32_t)(code16 >> (16 - l)) > t->maxcode[l]) l++;
  if (l > 16) {
    WARNMS(c, JWRN_HUFF_BAD_CODE);
    *len = 17;
    return 0;
  }
  *len = l;
  return t->huffval[(int)((code16 >> (16 - l)) + (unsigned)t->valoffset[l]) & 0xFF];
}

/* ---- one MCU ---- */

/* F.2.2.2: the AC coefficients, zigzag order, into a block libjpeg has zeroed (out).  The bit reader's
 * registers (acc, p, nbits: the names REFILL, PEEK, DROP and SYMBOL use) come in and go back by pointer;
 * always inlined into decode_mcu's block loop, they stay in registers as if the loop were written there. */
static inline __attribute__((always_inline)) void decode_ac(j_decompress_ptr c, const huff_table *act, JCOEF *out,
                                                            bitreader *br, const uint8_t *end, uint64_t *acc_io,
                                                            const uint8_t **p_io, int *nbits_io) {
  uint64_t acc = *acc_io;
  const uint8_t *p = *p_io;
  int nbits = *nbits_io;
  for (int k = 1; k < DCTSIZE2;) {
    REFILL();
    int f = act->fast[PEEK(LOOK_BITS)];
    if (__builtin_expect(f != 0, 1)) {
      k += (f >> 8) & 0xFF;
      out[pb_huff_natural_order[k]] = (JCOEF)(f >> 16);
      DROP(f & 0xFF);
      k++;
      continue;
    }
    int sym;
    SYMBOL(sym, act);
    int run = sym >> 4, s = sym & 15;
    if (s) {
      k += run;
      out[pb_huff_natural_order[k]] = (JCOEF)extend((int)PEEK(s), s);
      DROP(s);
      k++;
    } else if (run == 15) {
      k += 16;
    } else {
      break; /* end of block */
    }
  }
  *acc_io = acc, *p_io = p, *nbits_io = nbits;
}

/* The reader stopped at a marker or the end: libjpeg's warnings (errors to the region decoder) when its
 * reader ran past the buffer's end, or bits past the end of the data were used. */
void pb_huff_warn_past_data(j_decompress_ptr c, pb_jpeg_huff *h) {
  const bitreader *br = &h->br;
  if (br->at_end && !h->warned_eof) {
    h->warned_eof = true;
    WARNMS(c, JWRN_JPEG_EOF);
  }
  if (br->nbits < br->nfake) {
    WARNMS(c, JWRN_HIT_MARKER);
    c->entropy->insufficient_data = TRUE;
  }
}

/* The end of a restart interval: the padding bits dropped, the RSTn marker taken, the predictions reset.
 * Whole bytes of data left before the marker, or another marker, are libjpeg's warnings (an error to the
 * region decoder); should the warning return, the rest of the scan decodes as zeros. */
void pb_huff_restart(j_decompress_ptr c, pb_jpeg_huff *h) {
  bitreader *br = &h->br;
  int64_t real_bits = br->stopped ? br->nbits - br->nfake : br->nbits; /* this reader never loads past a marker */
  const uint8_t *q = br->p;
  while (q < br->end && *q != 0xFF) q++;
  while (q + 1 < br->end && q[1] == 0xFF) q++; /* fill bytes */
  int marker = q + 1 < br->end ? q[1] : 0;
  if (real_bits >= 8 || q != br->p) { /* data left before the marker: libjpeg counts it discarded */
    WARNMS2(c, JWRN_EXTRANEOUS_DATA, (int)(real_bits / 8 + (q - br->p)), marker);
    c->entropy->insufficient_data = TRUE;
    return;
  }
  if (marker != JPEG_RST0 + (int)h->next_restart_num) {
    WARNMS2(c, JWRN_MUST_RESYNC, marker, JPEG_RST0 + (int)h->next_restart_num);
    c->entropy->insufficient_data = TRUE;
    return;
  }
  br->p = q + 2;
  br->acc = 0, br->nbits = 0, br->nfake = 0, br->stopped = br->at_end = false;
  memset(h->last_dc, 0, sizeof h->last_dc);
  h->eobrun = 0;
  h->restarts_to_go = h->restart_interval;
  h->next_restart_num = (h->next_restart_num + 1) & 7;
}

static boolean decode_mcu(j_decompress_ptr c, JBLOCKROW *MCU_data) {
  pb_jpeg_huff *h = (pb_jpeg_huff *)c->client_data;
  if (h->restart_interval) {
    if (h->restarts_to_go == 0 && !c->entropy->insufficient_data) pb_huff_restart(c, h);
    h->restarts_to_go--;
  }
  if (c->entropy->insufficient_data) return TRUE; /* after a warning that returned: zeros, as libjpeg */
  bitreader *br = &h->br;
  uint64_t acc = br->acc;
  const uint8_t *p = br->p, *end = br->end;
  int nbits = br->nbits;
  for (int blkn = 0; blkn < c->blocks_in_MCU; blkn++) {
    const huff_table *dct = h->dc[blkn], *act = h->ac[blkn];
    JCOEF *block = MCU_data ? MCU_data[blkn][0] : NULL;

    /* F.2.2.1: the DC difference, added to the component's last DC (unsigned: corrupt data can run it
     * past INT_MAX, where libjpeg wraps) */
    int diff;
    DC_DIFF(diff, dct);
    if (h->dc_needed[blkn]) {
      int ci = h->comp[blkn];
      h->last_dc[ci] = (int)((unsigned)h->last_dc[ci] + (unsigned)diff);
      if (block) block[0] = (JCOEF)h->last_dc[ci];
    }

    JCOEF *out = block && h->ac_needed[blkn] ? block : h->scratch;
    decode_ac(c, act, out, br, end, &acc, &p, &nbits);
  }
  br->acc = acc, br->p = p, br->nbits = nbits;
  if (__builtin_expect(br->stopped, 0)) pb_huff_warn_past_data(c, h);
  return TRUE;
}

/* ---- plugging in ---- */

bool pb_jpeg_huff_attach(pb_jpeg_huff *h, j_decompress_ptr c, const uint8_t *data, size_t bytes) {
  if (!h || !pb_jpeg_huff_is_allowed()) return false;
  /* the rest of the file, in memory, is all libjpeg's source holds (jpeg_mem_src): the bit reader reads
   * it directly, never through the source's fill_input_buffer */
  if (!data || c->src->next_input_byte < data || c->src->next_input_byte + c->src->bytes_in_buffer != data + bytes)
    return false;
  /* baseline or extended sequential, Huffman, one scan with every component */
  if (c->arith_code || c->progressive_mode || c->data_precision != 8 || c->inputctl->has_multiple_scans ||
      c->buffered_image || c->comps_in_scan != c->num_components || c->Ss != 0 || c->Se != DCTSIZE2 - 1 || c->Ah != 0 ||
      c->Al != 0 || c->output_scanline != 0 || c->unread_marker != 0 || c->entropy->insufficient_data ||
      c->blocks_in_MCU > D_MAX_BLOCKS_IN_MCU)
    return false;
  for (int blkn = 0; blkn < c->blocks_in_MCU; blkn++) {
    int ci = c->MCU_membership[blkn];
    const jpeg_component_info *comp = c->cur_comp_info[ci];
    const JHUFF_TBL *dct = c->dc_huff_tbl_ptrs[comp->dc_tbl_no], *act = c->ac_huff_tbl_ptrs[comp->ac_tbl_no];
    if (!dct || !act) return false;
    h->dc[blkn] = pb_huff_table_for(h, dct, comp->dc_tbl_no, true);
    h->ac[blkn] = pb_huff_table_for(h, act, NUM_HUFF_TBLS + comp->ac_tbl_no, false);
    h->comp[blkn] = ci;
    h->dc_needed[blkn] = comp->component_needed;
#if JPEG_LIB_VERSION >= 70
    h->ac_needed[blkn] = comp->component_needed && comp->DCT_h_scaled_size > 1; /* not at 1/8: DC only */
#else
    h->ac_needed[blkn] = comp->component_needed && comp->DCT_scaled_size > 1; /* not at 1/8: DC only */
#endif
  }
  memset(h->last_dc, 0, sizeof h->last_dc);
  h->restart_interval = h->restarts_to_go = c->restart_interval;
  h->next_restart_num = 0;
  h->warned_eof = false;
  /* the scan's data starts where libjpeg's source stands, right after the SOS header */
  h->br = (bitreader){.p = c->src->next_input_byte, .end = c->src->next_input_byte + c->src->bytes_in_buffer};
  c->client_data = h;
  c->entropy->decode_mcu = decode_mcu;
  return true;
}

/* pipebench's own entropy decoding of progressive JPEGs, put in libjpeg's place scan by scan (jpeg_huff.h).
 *
 * Why: on large progressive photos libjpeg-turbo spends about 80 % of a whole-image decode in its progressive
 * Huffman decoder (jdphuff.c: perf on the Debian wallpapers, docs/PERFORMANCE.md).  That decoder goes
 * through the generic bit-buffer path, a byte at a time with a test for 0xFF on each, and takes every
 * refinement bit with its own buffer check.  This one uses the sequential decoder's tables and bit reader
 * (jpeg_huff_bits.h: 10-bit lookups, 7 bytes a refill), and the AC first scans the one-lookup path for a
 * code and its value bits.
 *
 * What it computes is libjpeg's, coefficient for coefficient (G.1.2: DC first and refinement scans, AC first
 * scans with their end-of-band runs, AC refinement with correction bits): the blocks are those of libjpeg's
 * coefficient buffer, so libjpeg then computes every pixel as it would have.  libjpeg's own errors and
 * warnings on bad data are kept: a DC sum past the int range (JERR_BAD_DCT_COEF), a refinement value of
 * other than one bit (JWRN_HUFF_BAD_CODE), a code of no table, data cut short.
 *
 * How it plugs in: the image is read in buffered-image mode, where jpeg_start_decompress returns with the
 * first scan set up and none of it decoded.  pb_jpeg_huff_attach_progressive takes that scan over, and puts
 * start_pass here for the others: libjpeg's own start_pass runs first at each scan (it checks the scan's
 * parameters, keeps the progression status coef_bits that block smoothing reads, and refuses bad tables),
 * then decode_mcu is pointed at the scan's kind below, the bit reader at the scan's first byte.  After every
 * MCU, libjpeg's source is moved to where this reader stands, so that libjpeg reads the markers between the
 * scans (tables, the next SOS, EOI) itself.
 *
 * At 1/8, a component decoded by the 1x1 IDCT needs its DC coefficient only: its AC scans, most of a
 * progressive file's data, are stepped over to the next marker (skip_scan), not decoded. */
#include <limits.h>
#include <stdatomic.h>

#include "jpeg_huff_bits.h"

#define nat pb_huff_natural_order

/* The bit reader's registers, in locals for the macros of jpeg_huff_bits.h (REFILL, PEEK, DROP, SYMBOL). */
#define READER_LOAD(h)          \
  bitreader *br = &(h)->br;     \
  uint64_t acc = br->acc;       \
  const uint8_t *p = br->p;     \
  const uint8_t *end = br->end; \
  int nbits = br->nbits;        \
  (void)end
#define READER_SAVE() (br->acc = acc, br->p = p, br->nbits = nbits)

/* Before an MCU: a restart when one is due.  Whether there is data to decode (after a warning that
 * returned, libjpeg leaves the rest of the scan as it is). */
static bool mcu_begin(j_decompress_ptr c, pb_jpeg_huff *h) {
  if (h->restart_interval) {
    if (h->restarts_to_go == 0 && !c->entropy->insufficient_data) pb_huff_restart(c, h);
    h->restarts_to_go--;
  }
  return !c->entropy->insufficient_data;
}

/* The scan's last MCU is done: whole bytes of data left in the reader are garbage before the next marker,
 * libjpeg's "extraneous bytes" warning (it counts those it finds past its own bit buffer, which reads
 * fewer bytes ahead: a few such bytes it lets go silently are refused here; tests/unit/test_jpeg_huff.c counts
 * them).  Bytes past the reader are left to libjpeg's marker reader, which counts them itself. */
static void end_of_scan(j_decompress_ptr c, pb_jpeg_huff *h) {
  const bitreader *br = &h->br;
  int64_t real_bits = br->stopped ? br->nbits - br->nfake : br->nbits;
  if (real_bits < 8) return; /* the last byte's padding */
  const uint8_t *q = br->p;
  while (q < br->end && *q != 0xFF) q++;
  WARNMS2(c, JWRN_EXTRANEOUS_DATA, (int)(real_bits / 8 + (q - br->p)), q + 1 < br->end ? q[1] : 0);
}

/* After an MCU: libjpeg's warnings if the reader ran past the data, and libjpeg's source moved to the first
 * byte this reader has not taken whole (at the scan's end, the marker that follows it). */
static boolean mcu_end(j_decompress_ptr c, pb_jpeg_huff *h) {
  if (__builtin_expect(h->br.stopped, 0)) pb_huff_warn_past_data(c, h);
  if (__builtin_expect(--h->mcus_left == 0, 0)) end_of_scan(c, h);
  c->src->next_input_byte = h->br.p;
  c->src->bytes_in_buffer = (size_t)(h->br.end - h->br.p);
  return TRUE;
}

/* libjpeg's LEFT_SHIFT, then its cast to a coefficient: the low 16 bits of the shifted two's complement. */
static inline JCOEF shifted(int v, int al) { return (JCOEF)(int)((unsigned)v << al); }

/* G.1.2.1: the first DC scan (one or more components): a difference to the component's last DC, scaled. */
static boolean dc_first(j_decompress_ptr c, JBLOCKROW *MCU_data) {
  pb_jpeg_huff *h = (pb_jpeg_huff *)c->client_data;
  if (mcu_begin(c, h)) {
    READER_LOAD(h);
    for (int blkn = 0; blkn < c->blocks_in_MCU; blkn++) {
      int diff;
      DC_DIFF(diff, h->dc[blkn]);
      int ci = h->comp[blkn], last = h->last_dc[ci];
      if ((last >= 0 && diff > INT_MAX - last) || (last < 0 && diff < INT_MIN - last)) ERREXIT(c, JERR_BAD_DCT_COEF);
      h->last_dc[ci] = last + diff;
      MCU_data[blkn][0][0] = shifted(last + diff, h->Al);
    }
    READER_SAVE();
  }
  return mcu_end(c, h);
}

/* G.1.2.1: a DC refinement: the next bit of each block's DC (reading zeros past the data changes nothing,
 * so libjpeg does not stop here after a warning either). */
static boolean dc_refine(j_decompress_ptr c, JBLOCKROW *MCU_data) {
  pb_jpeg_huff *h = (pb_jpeg_huff *)c->client_data;
  if (mcu_begin(c, h)) {
    READER_LOAD(h);
    int p1 = 1 << h->Al;
    for (int blkn = 0; blkn < c->blocks_in_MCU; blkn++) {
      REFILL();
      if (PEEK(1)) MCU_data[blkn][0][0] |= (JCOEF)p1;
      DROP(1);
    }
    READER_SAVE();
  }
  return mcu_end(c, h);
}

/* G.1.2.2: the first scan of a band of AC coefficients (one component, a block an MCU): run/size codes as in
 * a sequential scan, scaled by 2^Al, and end-of-band runs that cover the next blocks too. */
static boolean ac_first(j_decompress_ptr c, JBLOCKROW *MCU_data) {
  pb_jpeg_huff *h = (pb_jpeg_huff *)c->client_data;
  if (mcu_begin(c, h)) {
    if (h->eobrun > 0) {
      h->eobrun--; /* a block of the band's zeros */
    } else {
      READER_LOAD(h);
      const huff_table *t = h->band;
      JCOEF *block = MCU_data[0][0];
      int se = h->Se, al = h->Al;
      for (int k = h->Ss; k <= se; k++) {
        REFILL();
        int f = t->fast[PEEK(LOOK_BITS)];
        if (__builtin_expect(f != 0, 1)) { /* a run, a code and its value bits in one lookup */
          k += (f >> 8) & 0xFF;
          block[nat[k]] = shifted(f >> 16, al);
          DROP(f & 0xFF);
          continue;
        }
        int sym;
        SYMBOL(sym, t);
        int r = sym >> 4, s = sym & 15;
        if (s) {
          k += r;
          block[nat[k]] = shifted(extend((int)PEEK(s), s), al);
          DROP(s);
        } else if (r == 15) {
          k += 15; /* sixteen zeros, with the loop's step */
        } else {   /* end of band, for this block and 2^r - 1 + r more bits' worth of the next */
          unsigned run = 1u << r;
          if (r) {
            run += PEEK(r);
            DROP(r);
          }
          h->eobrun = run - 1;
          break;
        }
      }
      READER_SAVE();
    }
  }
  return mcu_end(c, h);
}

/* ---- AC refinement ----
 *
 * G.1.2.3: each code places one newly nonzero coefficient (+-2^Al) after `r` coefficients that are still
 * zero; every coefficient already nonzero on the way takes a correction bit (1: its magnitude grows by 2^Al).
 * An end-of-band run ends this block and the next ones, whose nonzero coefficients still take their
 * correction bits.  Walked a coefficient at a time, as libjpeg does, that is two unpredictable branches per
 * coefficient (zero or not; the bit); here the block's nonzero coefficients are one 64-bit mask in zigzag
 * order, the zero that a code lands on is found in its complement, and the correction bits go to the mask's
 * set bits without a branch.  (libjpeg adds a bit only where it is not already set, a guard against a
 * suspended MCU decoded twice that a source in memory never needs; kept, as it costs nothing here.) */

/* Bit k set when coefficient k (zigzag order) of the block is nonzero. */
static uint64_t nonzero_mask_plain(const JCOEF *blk) {
  uint64_t m = 0;
  for (int k = 0; k < DCTSIZE2; k++) m |= (uint64_t)(blk[nat[k]] != 0) << k;
  return m;
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <tmmintrin.h>
#define HAVE_SSSE3_PATH 1

/* pshufb controls: zigzag bytes 16j..16j+15 gathered from natural chunk q (coefficients 16q..16q+15). */
static uint8_t zigzag_gather[4][4][16];
static pthread_once_t zigzag_once = PTHREAD_ONCE_INIT;
static bool have_ssse3, have_fast_pdep;

/* BMI2's pdep, and not microcoded: Intel's, or AMD's from family 19h (Zen 3) on. */
static bool fast_pdep(void) {
  unsigned a, b, c, d;
  if (!__builtin_cpu_supports("bmi2") || !__get_cpuid(0, &a, &b, &c, &d)) return false;
  bool intel = b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e; /* "GenuineIntel" */
  bool amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;   /* "AuthenticAMD" */
  if (intel) return true;
  if (!amd || !__get_cpuid(1, &a, &b, &c, &d)) return false;
  unsigned family = (a >> 8 & 0xF) + ((a >> 8 & 0xF) == 0xF ? (a >> 20 & 0xFF) : 0);
  return family >= 0x19;
}

static void zigzag_init(void) {
  for (int j = 0; j < 4; j++)
    for (int q = 0; q < 4; q++)
      for (int i = 0; i < 16; i++) {
        int n = nat[16 * j + i];
        zigzag_gather[j][q][i] = (uint8_t)(n / 16 == q ? n % 16 : 0x80);
      }
  have_ssse3 = __builtin_cpu_supports("ssse3");
  have_fast_pdep = have_ssse3 && fast_pdep();
}

/* The same mask: the 64 coefficients compared with zero as bytes, put in zigzag order by byte shuffles. */
__attribute__((target("ssse3"))) static inline uint64_t nonzero_mask_ssse3(const JCOEF *blk) {
  const __m128i zero = _mm_setzero_si128();
  __m128i is_zero[4];
  for (int q = 0; q < 4; q++) {
    __m128i lo = _mm_loadu_si128((const __m128i *)(blk + 16 * q)),
            hi = _mm_loadu_si128((const __m128i *)(blk + 16 * q + 8));
    is_zero[q] = _mm_packs_epi16(_mm_cmpeq_epi16(lo, zero), _mm_cmpeq_epi16(hi, zero));
  }
  uint64_t zeros = 0;
  for (int j = 0; j < 4; j++) {
    __m128i g[4];
    for (int q = 0; q < 4; q++)
      g[q] = _mm_shuffle_epi8(is_zero[q], _mm_loadu_si128((const __m128i *)zigzag_gather[j][q]));
    __m128i o = _mm_or_si128(_mm_or_si128(g[0], g[1]), _mm_or_si128(g[2], g[3]));
    zeros |= (uint64_t)(uint16_t)_mm_movemask_epi8(o) << (16 * j);
  }
  return ~zeros;
}
#endif

/* The position of the set bit of x with r set bits below it (r <= 15); 64 when x has no more than r. */
static inline int select_bit_plain(uint64_t x, int r) {
  for (int i = 0; i < r && x; i++) x &= x - 1;
  return x ? __builtin_ctzll(x) : 64;
}

#ifdef HAVE_SSSE3_PATH
/* The same in one instruction where pdep is fast (Intel since Haswell, AMD since Zen 3: on Zen 1 and 2 it takes
 * hundreds of cycles): 13 % off a whole-image decode of the largest Debian photo (docs/PERFORMANCE.md).  A
 * popcount-halving select without a loop was slower than the loop (its dependent chain). */
__attribute__((target("bmi2,bmi"))) static inline int select_bit_pdep(uint64_t x, int r) {
  uint64_t bit = _pdep_u64(1ull << r, x);
  return bit ? (int)__builtin_ctzll(bit) : 64;
}
#endif

/* Bits k..se (k may be past se, up to 65: none). */
static inline uint64_t band_from(int k, int se) {
  uint64_t upto = se >= 63 ? ~0ull : (2ull << se) - 1;
  return k >= 64 ? 0 : upto & (~0ull << k);
}

/* The correction bits of the coefficients at the set bits of `which`, in zigzag order: +-p1 where the bit is 1
 * (away from zero). */
#define CORRECT_ALL(which)                                       \
  do {                                                           \
    uint64_t w_ = (which);                                       \
    while (w_) {                                                 \
      JCOEF *cf_ = block + nat[__builtin_ctzll(w_)];             \
      w_ &= w_ - 1;                                              \
      REFILL();                                                  \
      int c0_ = *cf_, bit_ = (int)(PEEK(1) & ((c0_ & p1) == 0)); \
      *cf_ = (JCOEF)(c0_ + ((c0_ >= 0 ? p1 : m1) & -bit_));      \
      DROP(1);                                                   \
    }                                                            \
  } while (0)

static inline __attribute__((always_inline)) boolean ac_refine_with(j_decompress_ptr c, JBLOCKROW *MCU_data,
                                                                    uint64_t (*nonzero_mask)(const JCOEF *),
                                                                    int (*select_bit)(uint64_t, int)) {
  pb_jpeg_huff *h = (pb_jpeg_huff *)c->client_data;
  if (mcu_begin(c, h)) {
    READER_LOAD(h);
    const huff_table *t = h->band;
    JCOEF *block = MCU_data[0][0];
    int se = h->Se, p1 = 1 << h->Al, m1 = (int)(~0u << h->Al);
    int k = h->Ss;
    unsigned eobrun = h->eobrun;
    uint64_t nz = nonzero_mask(block); /* positions behind k are never looked at again: no update needed */
    if (eobrun == 0) {
      while (k <= se) {
        REFILL();
        int sym;
        SYMBOL(sym, t);
        int r = sym >> 4, s = sym & 15, v = 0;
        if (s) {
          if (s != 1) WARNMS(c, JWRN_HUFF_BAD_CODE); /* a new coefficient is one bit: libjpeg reads one anyway */
          v = PEEK(1) ? p1 : m1;
          DROP(1);
        } else if (r != 15) { /* end of band */
          eobrun = 1u << r;
          if (r) {
            eobrun += PEEK(r);
            DROP(r);
          }
          break;
        } /* else sixteen zeros to step over (r = 15, no new coefficient) */
        int target = select_bit(~nz & band_from(k, se), r); /* the zero it lands on */
        if (target > se) target = se + 1;                   /* none: libjpeg writes past the band */
        CORRECT_ALL(nz & band_from(k, se) & ~band_from(target, 63));
        if (v) block[nat[target]] = (JCOEF)v;
        k = target + 1;
      }
    }
    if (eobrun > 0) { /* in an end-of-band run: the rest of the band's nonzero coefficients are corrected */
      CORRECT_ALL(nz & band_from(k, se));
      eobrun--;
    }
    h->eobrun = eobrun;
    READER_SAVE();
  }
  return mcu_end(c, h);
}

static boolean ac_refine(j_decompress_ptr c, JBLOCKROW *MCU_data) {
  return ac_refine_with(c, MCU_data, nonzero_mask_plain, select_bit_plain);
}

#ifdef HAVE_SSSE3_PATH
__attribute__((target("ssse3"))) static boolean ac_refine_ssse3(j_decompress_ptr c, JBLOCKROW *MCU_data) {
  return ac_refine_with(c, MCU_data, nonzero_mask_ssse3, select_bit_plain);
}

__attribute__((target("ssse3,bmi2,bmi"))) static boolean ac_refine_pdep(j_decompress_ptr c, JBLOCKROW *MCU_data) {
  return ac_refine_with(c, MCU_data, nonzero_mask_ssse3, select_bit_pdep);
}
#endif

/* The first MCU of a stepped-over scan moves the reader and libjpeg's source to the next marker that is not a
 * restart (FF 00 is data, FF D0-D7 a restart inside the scan); the scan's other MCUs do nothing.  Damage inside
 * such a scan goes unseen, as damage below a region does. */
static boolean skip_scan(j_decompress_ptr c, JBLOCKROW *MCU_data) {
  (void)MCU_data;
  pb_jpeg_huff *h = (pb_jpeg_huff *)c->client_data;
  if (h->skipped) return TRUE;
  h->skipped = true;
  const uint8_t *q = h->br.p, *end = h->br.end;
  while (q + 1 < end && !(q[0] == 0xFF && q[1] != 0x00 && q[1] != 0xFF && (q[1] < 0xD0 || q[1] > 0xD7))) q++;
  if (q + 1 >= end) q = end; /* no marker left: libjpeg's reader then meets the end, as it would have */
  c->src->next_input_byte = q;
  c->src->bytes_in_buffer = (size_t)(end - q);
  return TRUE;
}

/* Whether the component is decoded by the 1x1 IDCT. */
static bool one_by_one(const jpeg_component_info *comp) {
#if JPEG_LIB_VERSION >= 70
  return comp->DCT_h_scaled_size == 1 && comp->DCT_v_scaled_size == 1;
#else
  return comp->DCT_scaled_size == 1;
#endif
}

/* The fastest AC refinement this CPU has, at most (tests): 0 portable C, 1 SSSE3 masks, 2 and pdep. */
static atomic_int refine_path_max = 2;

void pb_jpeg_huff_refine_path(int most) { atomic_store(&refine_path_max, most); }

/* The scan libjpeg has just set up, taken over: tables, state, and the reader at its first byte.  A scan
 * whose data is not where this reader can read it stays libjpeg's. */
static void take_scan(j_decompress_ptr c, pb_jpeg_huff *h) {
  const uint8_t *at = c->src->next_input_byte;
  if (at < h->data || at + c->src->bytes_in_buffer != h->data_end || c->unread_marker != 0 ||
      c->blocks_in_MCU > D_MAX_BLOCKS_IN_MCU || c->comps_in_scan < 1)
    return;
  bool dc = c->Ss == 0;
  h->br = (bitreader){.p = at, .end = h->data_end};
  if (!dc && h->skip_1x1_ac && c->comps_in_scan == 1 && one_by_one(c->cur_comp_info[0])) {
    h->skipped = false;
    c->entropy->decode_mcu = skip_scan;
    return;
  }
  for (int blkn = 0; blkn < c->blocks_in_MCU; blkn++) {
    int ci = c->MCU_membership[blkn];
    const jpeg_component_info *comp = c->cur_comp_info[ci];
    h->comp[blkn] = ci;
    if (dc && c->Ah == 0) { /* libjpeg's start_pass refused a missing table */
      const JHUFF_TBL *t = c->dc_huff_tbl_ptrs[comp->dc_tbl_no];
      if (!t) return;
      h->dc[blkn] = pb_huff_table_for(h, t, comp->dc_tbl_no, true);
    }
  }
  if (!dc) {
    const JHUFF_TBL *t = c->ac_huff_tbl_ptrs[c->cur_comp_info[0]->ac_tbl_no];
    if (!t) return;
    h->band = pb_huff_table_for(h, t, NUM_HUFF_TBLS + c->cur_comp_info[0]->ac_tbl_no, false);
  }
  h->Ss = c->Ss, h->Se = c->Se, h->Al = c->Al;
  /* libjpeg's coefficient controller calls decode_mcu once for each of the scan's MCUs, in order */
  h->mcus_left = (uint64_t)c->MCUs_per_row * c->MCU_rows_in_scan;
  h->eobrun = 0;
  memset(h->last_dc, 0, sizeof h->last_dc);
  h->restart_interval = h->restarts_to_go = c->restart_interval;
  h->next_restart_num = 0;
  h->warned_eof = false;
  boolean (*refine)(j_decompress_ptr, JBLOCKROW *) = ac_refine;
#ifdef HAVE_SSSE3_PATH
  pthread_once(&zigzag_once, zigzag_init);
  int most = atomic_load_explicit(&refine_path_max, memory_order_relaxed);
  if (have_ssse3 && most >= 1) refine = have_fast_pdep && most >= 2 ? ac_refine_pdep : ac_refine_ssse3;
#endif
  c->entropy->decode_mcu = dc ? (c->Ah ? dc_refine : dc_first) : (c->Ah ? refine : ac_first);
}

static void start_pass(j_decompress_ptr c) {
  pb_jpeg_huff *h = (pb_jpeg_huff *)c->client_data;
  h->libjpeg_start_pass(c);
  take_scan(c, h);
}

bool pb_jpeg_huff_attach_progressive(pb_jpeg_huff *h, j_decompress_ptr c, const uint8_t *data, size_t bytes,
                                     bool skip_1x1_ac) {
  if (!h || !pb_jpeg_huff_is_allowed() || !data) return false;
  if (!c->progressive_mode || c->arith_code || c->data_precision != 8 || !c->buffered_image ||
      c->global_state != DSTATE_BUFIMAGE || c->input_scan_number != 1 || c->entropy->insufficient_data)
    return false;
  h->data = data;
  h->data_end = data + bytes;
  h->skip_1x1_ac = skip_1x1_ac;
  h->libjpeg_start_pass = c->entropy->start_pass;
  c->client_data = h;
  c->entropy->start_pass = start_pass;
  take_scan(c, h); /* the first scan: libjpeg set it up inside jpeg_start_decompress */
  return true;
}

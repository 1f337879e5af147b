/* The pieces pipebench's two Huffman decoders share (jpeg_huff.c: sequential scans; jpeg_phuff.c:
 * progressive ones): the decoding tables, the bit reader and its macros, restarts, and the decoder's state.
 * Internal to those two files. */
#ifndef PB_JPEG_HUFF_BITS_H
#define PB_JPEG_HUFF_BITS_H

#include "jpeg_huff.h"

#include <string.h>

#include <jerror.h>
#include <jpegint.h>

/* The lookup window.  10 bits hold most codes of a q75-q95 photo together with their value bits;
 * the tables (6 KB each, two used per component class) stay in L1. */
#define LOOK_BITS 10
#define LOOK_SIZE (1 << LOOK_BITS)
#define NTABLES (2 * NUM_HUFF_TBLS) /* DC 0-3, AC 4-7 */

typedef struct huff_table {
  int32_t fast[LOOK_SIZE];  /* code and value bits within the window: value << 16 | run << 8 | bits; 0 if not */
  uint16_t look[LOOK_SIZE]; /* a code of at most LOOK_BITS: length << 8 | symbol; 0: a longer code (or none) */
  int32_t maxcode[18];      /* the largest code of each length (-1: none); maxcode[17] stops the search */
  int32_t valoffset[18];    /* the symbol of code x of length l is huffval[x + valoffset[l]] */
  uint8_t huffval[256];
  uint8_t key_bits[17]; /* what it was built from: most datasets use one set of tables for every file */
  bool built;
} huff_table;

/* The bit reader: acc holds the next bits, the first in its top bit; nbits of them are valid, and of
 * those the last nfake are zeros added after the data ended (a marker, or the end of the buffer).
 * Using one of those is libjpeg's "premature end of data segment". */
typedef struct bitreader {
  uint64_t acc;
  const uint8_t *p, *end;
  int nbits;
  int64_t nfake; /* grows by up to 64 a refill once stopped: wide, so a long run of zeros cannot wrap it */
  bool stopped;  /* a marker or the end was reached: only zeros from here */
  bool at_end;   /* the end of the buffer was reached (libjpeg: "Premature end of JPEG file") */
} bitreader;

struct pb_jpeg_huff {
  huff_table tables[NTABLES];
  const huff_table *dc[D_MAX_BLOCKS_IN_MCU], *ac[D_MAX_BLOCKS_IN_MCU];
  int comp[D_MAX_BLOCKS_IN_MCU]; /* the block's component, an index into cur_comp_info */
  bool dc_needed[D_MAX_BLOCKS_IN_MCU], ac_needed[D_MAX_BLOCKS_IN_MCU];
  int last_dc[MAX_COMPS_IN_SCAN];
  unsigned restart_interval, restarts_to_go, next_restart_num; /* in MCUs; 0: no restarts */
  bitreader br;
  bool warned_eof;
  JCOEF scratch[DCTSIZE2]; /* where discarded coefficients go (a skipped row, a component not needed) */
  /* progressive scans (jpeg_phuff.c) */
  void (*libjpeg_start_pass)(j_decompress_ptr c); /* libjpeg's own, run first at every scan's start */
  const uint8_t *data, *data_end;                 /* the whole file, in memory */
  const huff_table *band;                         /* an AC scan's table (its one component's) */
  int Ss, Se, Al;                                 /* the scan's band of coefficients and its bit position */
  unsigned eobrun;                                /* blocks left in the current end-of-band run */
  uint64_t mcus_left;                             /* in the scan, this one included */
  bool skip_1x1_ac; /* step over the AC scans of components decoded by the 1x1 IDCT (at 1/8) */
  bool skipped;     /* this scan's data has been stepped over */
};

/* Zigzag to natural order, padded with 16 entries of 63 (corrupt data runs k past 63: libjpeg's own table
 * has the same padding). */
extern const uint8_t pb_huff_natural_order[DCTSIZE2 + 16];

/* F.12: the value of the s bits x (s >= 1): the upper half positive, the lower half negative. */
static inline int extend(int x, int s) { return x < (1 << (s - 1)) ? x - (1 << s) + 1 : x; }

/* The decoding table built from libjpeg's table `src` in slot `slot` (DC 0-3, AC 4-7), rebuilt only when
 * the table changed. */
const huff_table *pb_huff_table_for(pb_jpeg_huff *h, const JHUFF_TBL *src, int slot, bool is_dc);
void pb_huff_refill_careful(bitreader *b);
int pb_huff_slow_symbol(j_decompress_ptr c, const huff_table *t, uint64_t acc, int *len);
/* libjpeg's warnings once the reader has stopped at a marker or the end (see jpeg_huff.c). */
void pb_huff_warn_past_data(j_decompress_ptr c, pb_jpeg_huff *h);
/* A restart interval's end: the RSTn marker taken, the DC predictions and the EOB run reset. */
void pb_huff_restart(j_decompress_ptr c, pb_jpeg_huff *h);

/* At least 32 valid bits (a code of 16 and a value of 15 at most).  Usually one load: 8 bytes, none of
 * them 0xFF, of which all whole bytes that fit go in at once; the byte that does not fit is OR-ed in
 * too, partly, and again whole by the next refill (the same bits in the same place). */
#define REFILL()                                                                 \
  do {                                                                           \
    if (nbits < 32) {                                                            \
      uint64_t v_;                                                               \
      if (__builtin_expect(p + 8 <= end, 1)) {                                   \
        memcpy(&v_, p, 8);                                                       \
        v_ = __builtin_bswap64(v_);                                              \
        uint64_t x_ = ~v_; /* a zero byte in x_ is an FF byte in v_ */           \
        if (((x_ - 0x0101010101010101ull) & ~x_ & 0x8080808080808080ull) == 0) { \
          acc |= v_ >> nbits;                                                    \
          p += (63 - nbits) >> 3;                                                \
          nbits |= 56;                                                           \
          break;                                                                 \
        }                                                                        \
      }                                                                          \
      br->acc = acc, br->p = p, br->nbits = nbits;                               \
      pb_huff_refill_careful(br);                                                \
      acc = br->acc, p = br->p, nbits = br->nbits;                               \
    }                                                                            \
  } while (0)

#define PEEK(n) ((unsigned)(acc >> (64 - (n))))
#define DROP(n) (acc <<= (n), nbits -= (n))

/* The symbol at the front: from the window, else the long way. */
#define SYMBOL(sym, t)                             \
  do {                                             \
    unsigned e_ = (t)->look[PEEK(LOOK_BITS)];      \
    int l_;                                        \
    if (__builtin_expect(e_ != 0, 1)) {            \
      l_ = (int)(e_ >> 8);                         \
      sym = (int)(e_ & 0xFF);                      \
    } else {                                       \
      sym = pb_huff_slow_symbol(c, (t), acc, &l_); \
    }                                              \
    DROP(l_);                                      \
  } while (0)

/* F.2.2.1: a DC difference into `diff` (an int), at least 32 bits loaded first: the code and its value bits in one
 * lookup where they fit the window, else the symbol (the value's size) and then its bits. */
#define DC_DIFF(diff, t)                  \
  do {                                    \
    REFILL();                             \
    int f_ = (t)->fast[PEEK(LOOK_BITS)];  \
    if (__builtin_expect(f_ != 0, 1)) {   \
      diff = f_ >> 16;                    \
      DROP(f_ & 0xFF);                    \
    } else {                              \
      int s_;                             \
      SYMBOL(s_, (t));                    \
      diff = 0;                           \
      if (s_) {                           \
        diff = extend((int)PEEK(s_), s_); \
        DROP(s_);                         \
      }                                   \
    }                                     \
  } while (0)

#endif

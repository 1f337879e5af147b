#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define PB_CRC32C_X86 1
#endif

/* Reflected Castagnoli polynomial. */
#define CRC32C_POLY 0x82F63B78u

/* t[k][b]: the CRC contribution of byte b followed by k zero bytes, so eight table lookups advance the CRC
 * over eight bytes at once (slicing-by-8). */
static uint32_t crc_table[8][256];
static bool have_hw;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
  for (uint32_t b = 0; b < 256; b++) {
    uint32_t c = b;
    for (int i = 0; i < 8; i++) c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1u)));
    crc_table[0][b] = c;
  }
  for (int k = 1; k < 8; k++)
    for (int b = 0; b < 256; b++)
      crc_table[k][b] = (crc_table[k - 1][b] >> 8) ^ crc_table[0][crc_table[k - 1][b] & 0xff];
#ifdef PB_CRC32C_X86
  have_hw = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t crc_bytes_sw(uint32_t c, const uint8_t *p, size_t len) {
  while (len--) c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
  return c;
}

static uint32_t crc_slice8(uint32_t c, const uint8_t *p, size_t len) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const uint32_t(*t)[256] = crc_table;
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t w;
    memcpy(&w, p, 8); /* memcpy: p need not be aligned */
    w ^= c;
    c = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^ t[5][(w >> 16) & 0xff] ^ t[4][(w >> 24) & 0xff] ^
        t[3][(w >> 32) & 0xff] ^ t[2][(w >> 40) & 0xff] ^ t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
  }
#endif
  return crc_bytes_sw(c, p, len);
}

uint32_t pb_crc32c_sw(uint32_t crc, const void *data, size_t len) {
  pthread_once(&crc_once, crc_init);
  return ~crc_slice8(~crc, data, len);
}

#ifdef PB_CRC32C_X86
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p, size_t len) {
  uint64_t c = ~crc;
  for (; len > 0 && ((uintptr_t)p & 7) != 0; len--) c = _mm_crc32_u8((uint32_t)c, *p++);
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
  }
  while (len--) c = _mm_crc32_u8((uint32_t)c, *p++);
  return ~(uint32_t)c;
}
#endif

bool pb_crc32c_hw_available(void) {
  pthread_once(&crc_once, crc_init);
  return have_hw;
}

uint32_t pb_crc32c_hw(uint32_t crc, const void *data, size_t len) {
#ifdef PB_CRC32C_X86
  if (pb_crc32c_hw_available()) return crc_sse42(crc, data, len);
#endif
  return pb_crc32c_sw(crc, data, len);
}

uint32_t pb_crc32c(uint32_t crc, const void *data, size_t len) { return pb_crc32c_hw(crc, data, len); }

uint32_t pb_crc32c_masked(const void *data, size_t len) {
  uint32_t crc = pb_crc32c(0, data, len);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

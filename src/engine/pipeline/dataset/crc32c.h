/* CRC-32C (Castagnoli), the checksum TFRecord framing uses.  SSE4.2's crc32 instruction when the CPU has
 * it (checked once at run time), else a slicing-by-8 table; both give identical results. */
#ifndef PB_CRC32C_H
#define PB_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Extends `crc` (0 to start) over `len` bytes; chainable like zlib's crc32():
 * pb_crc32c(pb_crc32c(0, a, n), b, m) == pb_crc32c(0, a||b, n+m).  pb_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t pb_crc32c(uint32_t crc, const void *data, size_t len);

/* TFRecord's masked CRC of `len` bytes: rotate right by 15, add 0xa282ead8.  The mask keeps a CRC of data
 * that itself contains CRCs from being trivially zero. */
uint32_t pb_crc32c_masked(const void *data, size_t len);

/* The two implementations, exposed so tests can compare them.  pb_crc32c_hw falls back to the table when
 * the CPU lacks SSE4.2 (pb_crc32c_hw_available() says whether it really ran in hardware). */
uint32_t pb_crc32c_sw(uint32_t crc, const void *data, size_t len);
uint32_t pb_crc32c_hw(uint32_t crc, const void *data, size_t len);
bool pb_crc32c_hw_available(void);

#endif

/* IEEE 754 binary16 conversions in portable C.
 *
 * Bit manipulation rather than _Float16: gcc 12 has _Float16 on x86-64, but without -mf16c (which the
 * build does not pass, and not every target has) each conversion is a libgcc call, and other compilers
 * or targets may lack the type.  normalize converts uint8 input through a 256-entry table anyway, so
 * these run per element only for float inputs.  The tests check both directions against _Float16
 * where the compiler has it. */
#include <string.h>

#include "ops.h"

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Round to nearest even, as the hardware converter does (after F. Giesen's float_to_half_fast3_rtne). */
uint16_t pb_float_to_half(float f) {
  uint32_t u = f32_bits(f), sign = (u >> 16) & 0x8000u, mag = u & 0x7fffffffu;
  if (mag >= (127u + 16u) << 23) /* |f| >= 65536, inf or NaN: NaN stays a (quiet) NaN */
    return (uint16_t)(sign | (mag > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (mag < 113u << 23) {
    /* A half subnormal or zero: adding 0.5 aligns the 10 result bits at the bottom of the float's
     * mantissa, and the FPU's own round-to-nearest-even does the rounding. */
    float aligned = f32_from_bits(mag) + 0.5f;
    return (uint16_t)(sign | (f32_bits(aligned) - f32_bits(0.5f)));
  }
  uint32_t mant_odd = (mag >> 13) & 1u;
  mag += ((uint32_t)(15 - 127) << 23) + 0xfffu + mant_odd; /* rebias; round half to even; may carry to inf */
  return (uint16_t)(sign | (mag >> 13));
}

float pb_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (mant << 13)); /* inf, NaN */
  if (exp == 0) /* zero or subnormal: mant * 2^-24, exact in float */
    return sign ? -(float)mant * 0x1p-24f : (float)mant * 0x1p-24f;
  return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

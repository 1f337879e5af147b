/* Float-to-integer conversions that cannot overflow.  C leaves the cast of a double outside the target
 * type's range undefined (x86 gives 2^63 for uint64_t, so a 1e-300 GB/s copy once took 0 ns), and
 * UBSan's float-cast-overflow stops the sanitizer build on it.  The config's ranges keep its values far
 * from these limits; these helpers make a slip elsewhere saturate instead. */
#ifndef PB_SAT_H
#define PB_SAT_H

#include <limits.h>
#include <stdint.h>

#define PB_TWO_POW_64 18446744073709551616.0 /* the first double a uint64_t cannot hold */

/* x truncated toward zero into 0..UINT64_MAX: NaN and negatives give 0, 2^64 and above (and +inf) the max. */
static inline uint64_t pb_sat_u64_from_double(double x) {
  if (!(x > 0)) return 0; /* also NaN */
  if (x >= PB_TWO_POW_64) return UINT64_MAX;
  return (uint64_t)x;
}

/* x truncated toward zero into INT_MIN..INT_MAX; NaN gives 0. */
static inline int pb_sat_int_from_double(double x) {
  if (x != x) return 0;
  if (x >= (double)INT_MAX + 1.0) return INT_MAX;
  if (x <= (double)INT_MIN - 1.0) return INT_MIN;
  return (int)x;
}

/* a + b, or UINT64_MAX where the sum would wrap (a deadline that far off is "never"). */
static inline uint64_t pb_sat_add_u64(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* a * b, or UINT64_MAX where the product would wrap (a plan's bytes for a shape of 10^6 x 10^6 x 10^6). */
static inline uint64_t pb_sat_mul_u64(uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

#endif

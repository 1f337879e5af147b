/* Assertions that print the values they compare, for the unit and e2e suites (via unit_util.h and e2e_util.h).
 *
 * cmocka's assert_true(a < b) reports only the expression when it fails; these report both sides, as libuv's
 * ASSERT_EQ does, so a failure in CI says how far off a number was.  Each operand is evaluated once.  `op` is
 * the C comparison operator itself (assert_double_cmp(x, <, 0.5)), so a check keeps its exact strictness.
 * The *_between forms are inclusive at both ends (lo <= v <= hi); a strict bound is two *_cmp calls. */
#ifndef PB_TESTS_ASSERT_VALUES_H
#define PB_TESTS_ASSERT_VALUES_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* Doubles print with 17 significant digits: enough to show why an exact comparison (==) failed. */
#define assert_double_cmp(a, op, b)                                                                          \
  do {                                                                                                       \
    const double pb_av_ = (double)(a), pb_bv_ = (double)(b);                                                 \
    if (!(pb_av_ op pb_bv_))                                                                                 \
      fail_msg("%s %s %s is false: %.17g %s %.17g", #a, #op, #b, pb_av_, #op, pb_bv_);                       \
  } while (0)

/* Signed integers compare as intmax_t, so a negative value is shown and compared as negative (cmocka's
 * assert_in_range casts to an unsigned type); sizes and other unsigned values use assert_uint_cmp. */
#define assert_int_cmp(a, op, b)                                                                             \
  do {                                                                                                       \
    const intmax_t pb_av_ = (intmax_t)(a), pb_bv_ = (intmax_t)(b);                                           \
    if (!(pb_av_ op pb_bv_))                                                                                 \
      fail_msg("%s %s %s is false: %jd %s %jd", #a, #op, #b, pb_av_, #op, pb_bv_);                           \
  } while (0)

/* Unsigned integers (sizes, counts, nanoseconds) compare as uintmax_t, as C compares them. */
#define assert_uint_cmp(a, op, b)                                                                            \
  do {                                                                                                       \
    const uintmax_t pb_av_ = (uintmax_t)(a), pb_bv_ = (uintmax_t)(b);                                        \
    if (!(pb_av_ op pb_bv_))                                                                                 \
      fail_msg("%s %s %s is false: %ju %s %ju", #a, #op, #b, pb_av_, #op, pb_bv_);                           \
  } while (0)

#define assert_double_between(v, lo, hi)                                                                     \
  do {                                                                                                       \
    const double pb_vv_ = (double)(v), pb_lov_ = (double)(lo), pb_hiv_ = (double)(hi);                       \
    if (!(pb_vv_ >= pb_lov_ && pb_vv_ <= pb_hiv_))                                                           \
      fail_msg("%s is %.17g, outside [%s, %s] = [%.17g, %.17g]", #v, pb_vv_, #lo, #hi, pb_lov_, pb_hiv_);    \
  } while (0)

#define assert_int_between(v, lo, hi)                                                                        \
  do {                                                                                                       \
    const intmax_t pb_vv_ = (intmax_t)(v), pb_lov_ = (intmax_t)(lo), pb_hiv_ = (intmax_t)(hi);               \
    if (!(pb_vv_ >= pb_lov_ && pb_vv_ <= pb_hiv_))                                                           \
      fail_msg("%s is %jd, outside [%s, %s] = [%jd, %jd]", #v, pb_vv_, #lo, #hi, pb_lov_, pb_hiv_);          \
  } while (0)

/* A value that must be NaN (an unmeasured number): the failure shows what was there instead. */
#define assert_nan(x)                                                                                        \
  do {                                                                                                       \
    const double pb_xv_ = (double)(x);                                                                       \
    if (!isnan(pb_xv_)) fail_msg("%s is %.17g (expected NaN)", #x, pb_xv_);                                  \
  } while (0)

#endif

/* Repeats and confidence (`--repeat N` on run, ab, sweep and tune; docs/REPORTS.md "Repeats"): --repeat's
 * value here; the arithmetic is src/analysis/repeat_stats.h, what a repeated measurement writes
 * src/reports/repeat_out.h.
 *
 * A measurement repeated n times is summarized by its median and a distribution-free confidence interval
 * for the median from order statistics: with the n values sorted, the k-th smallest and the k-th largest
 * cover the true median with probability 1 - 2 P(Bin(n, 1/2) <= k - 1), whatever the distribution.  k is
 * the largest rank whose coverage is still at least 95 % (the narrowest such pair); when even (min, max)
 * covers less (n <= 5), the interval is (min, max) with the coverage it has (n = 5: 93.75 %).
 *
 * Two configurations differ measurably only when their intervals do not overlap and both cover at least
 * 90 % (n >= 5): everything that names a winner (ab's verdict, sweep's and tune's best) says "no measurable
 * difference" when they overlap, and "too few repeats to tell" when an interval is missing or covers less.
 *
 * Which repeats count (one rule for run, ab, sweep and tune): a repeat that completed (exit 0) and measured
 * a rate.  A failed or interrupted repeat counts in no median and no interval; a measurement none of whose
 * repeats counts has no figures (null). */
#ifndef PB_REPEAT_H
#define PB_REPEAT_H

#include "common.h"
#include "config.h"
#include "repeat_out.h"
#include "repeat_stats.h"

/* --repeat's value: an integer from 1 to PB_REPEAT_MAX.  0, or -EINVAL with err set to one line. */
int pb_repeat_parse(const char *text, int *n, pb_err *err);

#endif

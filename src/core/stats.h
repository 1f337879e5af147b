/* Latency statistics.
 *
 * pb_hist is a log-linear histogram in the manner of fio's clat buckets: values (nanoseconds) are grouped
 * by their power of two, and each group is split into PB_HIST_SUB linear sub-buckets, so any percentile is
 * returned within 1/PB_HIST_SUB (1.6 %) of the true value while adding a sample costs a few instructions
 * and no allocation.  Each worker thread owns one; they are merged after the run. */
#ifndef PB_STATS_H
#define PB_STATS_H

#include <stddef.h>
#include <stdint.h>

#define PB_HIST_SUB_BITS 6
#define PB_HIST_SUB (1u << PB_HIST_SUB_BITS)
#define PB_HIST_GROUPS 42 /* values up to 2^42 ns (~73 min) are exact-bucketed; larger ones clamp */
#define PB_HIST_BUCKETS (PB_HIST_GROUPS * PB_HIST_SUB)

typedef struct pb_hist {
  uint64_t count;
  uint64_t sum_ns;
  uint64_t min_ns, max_ns;
  uint64_t buckets[PB_HIST_BUCKETS];
} pb_hist;

void pb_hist_reset(pb_hist *h);
void pb_hist_add(pb_hist *h, uint64_t value_ns);
void pb_hist_merge(pb_hist *dst, const pb_hist *src);
/* p in [0,100]; returns the representative value (bucket midpoint, clamped to [min,max]); 0 when empty. */
uint64_t pb_hist_percentile(const pb_hist *h, double p);
double pb_hist_mean(const pb_hist *h); /* exact (sum/count); 0 when empty */

/* Exact percentile of an array of doubles (sorts a copy; linear interpolation between ranks, the same
 * definition as numpy.percentile's default).  Returns NAN when n == 0. */
double pb_percentile(const double *values, size_t n, double p);
double pb_mean(const double *values, size_t n); /* NAN when n == 0 */

#endif

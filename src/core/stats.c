/* Latency statistics: the log-linear histogram (see stats.h) and exact percentiles of small arrays.
 *
 * Bucket layout.  A value v < PB_HIST_SUB lands in group 0, bucket v: exact.  A larger value lands in
 * group g = floor(log2 v) (so groups 1..PB_HIST_SUB_BITS-1 stay empty), sub-bucket = the PB_HIST_SUB_BITS
 * bits just below the top bit.  Group g therefore covers [2^g, 2^(g+1)) in PB_HIST_SUB equal buckets of
 * width 2^(g - PB_HIST_SUB_BITS), i.e. at most 1/PB_HIST_SUB of the values in it; returning the bucket's
 * midpoint keeps the error within half of that.  Values of 2^PB_HIST_GROUPS ns and more all go to the last
 * bucket; count, sum, min and max stay exact regardless (the sum saturates instead of wrapping). */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline unsigned bucket_index(uint64_t v) {
  if (v < PB_HIST_SUB) return (unsigned)v;
  unsigned msb = 63u - (unsigned)__builtin_clzll(v);
  if (msb >= PB_HIST_GROUPS) return PB_HIST_BUCKETS - 1;
  unsigned sub = (unsigned)(v >> (msb - PB_HIST_SUB_BITS)) & (PB_HIST_SUB - 1);
  return msb * PB_HIST_SUB + sub;
}

/* The value a bucket stands for: its midpoint (exact for the width-1 buckets). */
static uint64_t bucket_value(unsigned idx) {
  unsigned g = idx / PB_HIST_SUB, sub = idx % PB_HIST_SUB;
  if (g < PB_HIST_SUB_BITS) return sub; /* group 0 (groups 1..SUB_BITS-1 are never filled) */
  unsigned shift = g - PB_HIST_SUB_BITS;
  uint64_t lo = (uint64_t)(PB_HIST_SUB + sub) << shift;
  return lo + ((1ull << shift) >> 1);
}

static inline uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t s;
  return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

void pb_hist_reset(pb_hist *h) { memset(h, 0, sizeof *h); }

/* Hot path: called once per element per stage.  A zeroed pb_hist is a valid empty one, hence the
 * count test for min instead of a UINT64_MAX sentinel. */
void pb_hist_add(pb_hist *h, uint64_t value_ns) {
  if (h->count == 0 || value_ns < h->min_ns) h->min_ns = value_ns;
  if (value_ns > h->max_ns) h->max_ns = value_ns;
  h->count++;
  h->sum_ns = sat_add(h->sum_ns, value_ns);
  h->buckets[bucket_index(value_ns)]++;
}

void pb_hist_merge(pb_hist *dst, const pb_hist *src) {
  if (src->count == 0) return;
  if (dst->count == 0 || src->min_ns < dst->min_ns) dst->min_ns = src->min_ns;
  if (src->max_ns > dst->max_ns) dst->max_ns = src->max_ns;
  dst->count += src->count;
  dst->sum_ns = sat_add(dst->sum_ns, src->sum_ns);
  for (unsigned i = 0; i < PB_HIST_BUCKETS; i++) dst->buckets[i] += src->buckets[i];
}

uint64_t pb_hist_percentile(const pb_hist *h, double p) {
  if (h->count == 0) return 0;
  if (!(p > 0)) return h->min_ns; /* also catches NAN */
  if (p >= 100) return h->max_ns;
  /* rank = ceil(p/100 * count), at least 1: the smallest value with at least p % of samples <= it. */
  uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->count);
  if (rank < 1) rank = 1;
  if (rank > h->count) rank = h->count;
  uint64_t seen = 0;
  unsigned i = 0;
  for (; i < PB_HIST_BUCKETS - 1; i++) {
    seen += h->buckets[i];
    if (seen >= rank) break;
  }
  uint64_t v = bucket_value(i);
  return v < h->min_ns ? h->min_ns : v > h->max_ns ? h->max_ns : v;
}

double pb_hist_mean(const pb_hist *h) {
  return h->count ? (double)h->sum_ns / (double)h->count : 0.0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* numpy.percentile's default ("linear"): position p/100 x (n-1) in the sorted data, interpolated. */
double pb_percentile(const double *values, size_t n, double p) {
  if (n == 0) return NAN;
  if (!(p > 0)) p = 0; /* NAN p reads as 0 */
  if (p > 100) p = 100;
  double *v = malloc(n * sizeof *v);
  if (!v) return NAN;
  memcpy(v, values, n * sizeof *v);
  qsort(v, n, sizeof *v, cmp_double);
  double pos = p / 100.0 * (double)(n - 1);
  size_t lo = (size_t)pos;
  size_t hi = lo + 1 < n ? lo + 1 : lo;
  double frac = pos - (double)lo;
  double r = v[lo] + (v[hi] - v[lo]) * frac;
  free(v);
  return r;
}

double pb_mean(const double *values, size_t n) {
  if (n == 0) return NAN;
  double s = 0;
  for (size_t i = 0; i < n; i++) s += values[i];
  return s / (double)n;
}

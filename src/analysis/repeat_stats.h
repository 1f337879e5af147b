/* Repeats and confidence (`--repeat N` on run, ab, sweep and tune; docs/REPORTS.md "Repeats"): the arithmetic,
 * with no I/O (what a repeated measurement writes is src/reports/repeat_out.h).
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
#ifndef PB_REPEAT_STATS_H
#define PB_REPEAT_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define PB_REPEAT_MAX 100
#define PB_REPEAT_TARGET_COVERAGE 0.95
/* The least coverage an interval needs to decide a difference: n <= 4 (87.5 % at most) cannot. */
#define PB_REPEAT_MIN_COVERAGE 0.90
/* The fewest values whose (min, max) covers PB_REPEAT_MIN_COVERAGE (n = 5: 93.75 %). */
#define PB_REPEAT_MIN_DECISIVE 5

/* 1 - 2 P(Bin(n, 1/2) <= k - 1): the probability that the k-th smallest and the k-th largest of n values
 * enclose the median of their distribution (1 <= k <= n / 2). */
double pb_repeat_coverage(int n, int k);

/* The rank k of the interval for n values (>= 2): the largest with coverage >= 95 %, else 1. */
int pb_repeat_rank(int n);

typedef struct pb_interval {
  int n;                        /* finite values it is made of */
  double median;                /* NAN when n == 0 */
  double lo, hi;                /* the rank-th smallest and rank-th largest; NAN when n < 2 */
  int rank;                     /* 0 when n < 2 */
  double coverage;              /* 0..1; NAN when n < 2 */
} pb_interval;

/* Median and interval of values[0..n); values that are not finite (a repeat that measured nothing) are
 * left out. */
void pb_interval_of(const double *values, int n, pb_interval *iv);

/* There is an interval (two values or more). */
bool pb_interval_has(const pb_interval *iv);

/* a lies wholly above b: both have intervals and a.lo > b.hi (whatever their coverage: the geometry only;
 * decisions use pb_interval_compare). */
bool pb_interval_above(const pb_interval *a, const pb_interval *b);

/* The two do not overlap: both have intervals and one lies wholly above the other (geometry only). */
bool pb_intervals_differ(const pb_interval *a, const pb_interval *b);

/* An interval that can decide a difference: two values or more, covering at least 90 %. */
bool pb_interval_decisive(const pb_interval *iv);

/* What two intervals allow to claim. */
typedef enum pb_diff {
  PB_DIFF_UNDECIDED = 0,        /* one has no interval, or covers less than 90 %: too few repeats to tell */
  PB_DIFF_OVERLAP,              /* both decisive, and they overlap: no measurable difference */
  PB_DIFF_ABOVE,                /* both decisive, a wholly above b */
  PB_DIFF_BELOW,                /* both decisive, a wholly below b */
} pb_diff;

pb_diff pb_interval_compare(const pb_interval *a, const pb_interval *b);

/* Why an interval cannot decide, for the text: "too few repeats to tell (coverage 75.0 %)", or "too few
 * repeats to tell (1 counted, no interval)"; "" when it is decisive. */
const char *pb_interval_undecided_text(const pb_interval *iv, char *out, size_t len);

/* "1234.5 (1200.1-1250.3, 93.8 % interval)", or just the median (with `decimals`) without an interval,
 * or "n/a". */
const char *pb_interval_text(const pb_interval *iv, int decimals, char *out, size_t len);

/* ---------- repeats of one configuration ---------- */

struct pb_report;

/* What the tables and intervals need of one run (a whole pb_report is ~90 KB: a sweep keeps this per
 * repeat instead). */
typedef struct pb_run_figures {
  int status;                   /* pb_run's exit status; -1: not run */
  bool have;                    /* the run wrote a report */
  bool interrupted;
  double samples_per_s, batches_per_s, device_idle_pct, accelerator_utilization_pct, input_bound_pct;
  const char *classification;   /* a static string, or NULL */
  char bottleneck[PB_NAME_LEN]; /* "" when none */
  double wall_s;
} pb_run_figures;

/* f from a run's report (r may be NULL: nothing was written). */
void pb_run_figures_of(const struct pb_report *r, int status, double wall_s, pb_run_figures *f);

/* A repeat counts when it completed (exit 0) and measured a rate (the rule above). */
bool pb_run_figures_measured(const pb_run_figures *f);

typedef struct pb_repeat_summary {
  int runs;                     /* repeats run */
  int n;                        /* of them, measured (pb_run_figures_measured) */
  int median_repeat;            /* index of the repeat whose samples/s is the median (the lower of the two
                                 * middle ones for an even n); -1 when none measured */
  pb_interval samples_per_s, batches_per_s, device_idle_pct, accelerator_utilization_pct, input_bound_pct;
} pb_repeat_summary;

void pb_repeat_summarize(const pb_run_figures *runs, int nruns, pb_repeat_summary *s);

/* The configuration's figures over its repeats: the medians of the rates and percentages over the repeats
 * that count (NAN when none does), the median repeat's classification and bottleneck (none when none
 * counts); status 130 when a repeat was interrupted, else the first failure's, else 0 (-1: none ran);
 * interrupted whenever a repeat was (so always when status is 130); wall_s the repeats' sum. */
void pb_repeat_figures(const pb_run_figures *runs, int nruns, const pb_repeat_summary *s, pb_run_figures *out);

/* Whether any of the repeats was interrupted (status 130, or a report marked interrupted). */
bool pb_repeat_any_interrupted(const pb_run_figures *runs, int nruns);

/* One figure (at `offset` in pb_run_figures) of every measured repeat, NAN for the others, into v[0..nruns). */
void pb_repeat_column(const pb_run_figures *runs, int nruns, size_t offset, double *v);

#endif

/* ab's numbers and its one-line verdict (docs/AB.md "The verdict"): from the three runs' rates over their
 * repeats (DS-Analyzer's method: synthetic, real with a cold page cache, real with a warm one), the ratios,
 * the stalls split into fetch (storage) and preprocessing (CPU), which differences the intervals allow to
 * claim, and the verdict in words.  No I/O: the command (src/cli/ab.c) runs and measures, src/reports/ab_out.c
 * writes. */
#ifndef PB_AB_VERDICT_H
#define PB_AB_VERDICT_H

#include <stdbool.h>
#include <stddef.h>

#include "common.h"
#include "config.h"
#include "repeat_stats.h"

enum { PB_AB_SYNTHETIC, PB_AB_COLD, PB_AB_WARM, PB_AB_RUNS };

/* One of the three runs as the verdict sees it, over its repeats. */
typedef struct pb_ab_side {
  bool started;                 /* its first repeat started */
  int status;                   /* the worst exit status of its repeats */
  pb_interval rate;             /* samples/s of the repeats that count (completed, exit 0, with a rate):
                                 * median, and with two or more an interval (rate.n == 0: none counts) */
  char bottleneck[PB_NAME_LEN]; /* the median repeat's; "" when none */
  double read_utilization;      /* its read stage's utilization, 0..1 (median over repeats); NAN: none */
} pb_ab_side;

typedef struct pb_ab_stalls {
  double ratio_cold, ratio_warm;  /* real samples/s over synthetic samples/s (medians) */
  double lost_per_s;              /* synthetic - real cold samples/s, at least 0 */
  double t_us[PB_AB_RUNS];        /* time per sample, 1 / samples_per_s, in us */
  double fetch_pct, prep_pct;     /* stalls as % of the cold run's time per sample; the warm run's time is
                                   * taken within [synthetic, cold] (a warm run outside it is noise), so the
                                   * two add up to the time real data loses and neither passes 100 */
  double fetch_share_pct, prep_share_pct; /* shares of the lost time per sample */
  bool fetch_within_noise, prep_within_noise;
  /* With repeats: whether each difference lies outside the intervals.  A difference is decided only where
   * both intervals cover at least 90 % (pb_interval_decisive: 5 or more repeats counted); with fewer the
   * verdict is made from the medians, as with one run each, and says the repeats were too few. */
  bool repeated;                  /* the synthetic and cold runs have intervals (two repeats counted or more) */
  bool decisive;                  /* ... and both cover at least 90 % */
  bool warm_decisive;             /* the warm run's interval covers at least 90 % too */
  bool real_differs;              /* decisive, and the cold and synthetic intervals do not overlap */
  bool fetch_measurable;          /* decisive, and the warm run's interval lies above the cold run's */
  bool prep_measurable;           /* decisive, and the synthetic run's interval lies above the warm run's */
} pb_ab_stalls;

typedef struct pb_ab_numbers {
  int repeats;                    /* --repeat (0 or 1: one run each) */
  pb_ab_side side[PB_AB_RUNS];
  bool cold_effective;            /* every cold run started with <= 10 % of the dataset cached */
  double cold_resident_pct;       /* the most any cold run started with (NAN: not measured) */
  pb_ab_stalls s;                 /* pb_ab_compute */
} pb_ab_numbers;

/* The ratios, stalls and which differences are measurable, from the sides. */
void pb_ab_compute(pb_ab_numbers *x);

/* The one-line verdict (docs/AB.md "The verdict") from computed numbers. */
void pb_ab_verdict(const pb_ab_numbers *x, char *out, size_t len);

/* "synthetic", "real (cold cache)", "real (warm cache)": run k in the table and the verdict. */
const char *pb_ab_label(int k);

/* The side's bottleneck for the verdict and the table: the stage, "device", or "n/a" when none. */
const char *pb_ab_bottleneck(const pb_ab_side *sd);

/* The worse of two exit statuses: interrupted (130), then a config the run refused (2), then a failure (1 or
 * any other), then 0. */
int pb_ab_worse_status(int a, int b);

/* Whether a repeat's rate counts for ab: it started, completed or was interrupted (it measured until the
 * signal), wrote a report and measured a positive rate.  A failed run's figures do not count. */
bool pb_ab_counts(bool started, const pb_run_figures *f);

#endif

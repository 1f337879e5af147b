/* What `pipebench tune` found (docs/TUNING.md), as plain data: the knobs it searched, each trial (its point,
 * its prediction and its measured runs), the re-measure of the best against the base config, and how the
 * search ended; and the judgments of that data that both the search and its outputs use (a trial's
 * measured rate, its prediction error, an "up to" ceiling reached, the re-measure's outcome).  src/cli/tune.c
 * fills it; src/reports/tune_out.c writes tune.json and the summary from it. */
#ifndef PB_TUNE_RESULT_H
#define PB_TUNE_RESULT_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "repeat_stats.h"
#include "report.h"

#define PB_TUNE_MAX_KNOBS (PB_MAX_STAGES + 1)
#define PB_TUNE_MAX_VALUES 64 /* a knob's listed values (a sweep axis' most) */
#define PB_TUNE_RANGE_MAX 256 /* an unlisted knob's values: 1..256 */
/* A prediction within 1 % of the device's rate is that ceiling ("up to"), and is reached within at least 1 %. */
#define PB_TUNE_CEILING_MATCH 0.01

typedef struct pb_tune_knob {
  int stage;                   /* config stage index */
  bool depth;                  /* prefetch depth; else threads */
  char path[PB_NAME_LEN + 32]; /* stages.<name>.threads|depth */
  int nvalues;                 /* > 0: the listed values, ascending; 0: the range 1..PB_TUNE_RANGE_MAX */
  int values[PB_TUNE_MAX_VALUES];
} pb_tune_knob;

/* A point of the space: each knob's value. */
typedef struct pb_tune_point {
  int v[PB_TUNE_MAX_KNOBS];
} pb_tune_point;

typedef struct pb_tune_trial {
  pb_tune_point p;
  char change[160];
  double predicted;      /* samples/s (NAN for the first trial) */
  bool up_to;            /* the prediction is the device's rate: a ceiling, not an estimate */
  int status;            /* pb_run's exit status (the worst of its repeats) */
  double wall_s;         /* all its repeats */
  double longest_run_s;  /* its longest repeat */
  pb_report *rep;        /* its (median repeat's) report: the model and the analysis */
  int nruns;             /* repeats run */
  pb_run_figures *runs;  /* each one's figures (one with --repeat 1) */
  pb_repeat_summary sum; /* the medians and intervals over the repeats that count */
} pb_tune_trial;

/* What the re-measure of the best against the base allows to claim. */
typedef enum pb_tune_outcome {
  PB_TUNE_NOT_NEEDED = 0, /* the base config is the best: nothing to re-measure */
  PB_TUNE_NOT_REMEASURED, /* the budget left did not allow it: the search's gain is not confirmed */
  PB_TUNE_INTERRUPTED,    /* interrupted before or during it: no claim */
  PB_TUNE_TOO_FEW,        /* an interval missing or covering less than 90 % (runs that failed): no claim */
  PB_TUNE_GAIN,           /* the best's interval lies above the base's */
  PB_TUNE_NO_DIFFERENCE,  /* the intervals overlap */
  PB_TUNE_BASE_FASTER,    /* the base's interval lies above the best's: the base config is written */
} pb_tune_outcome;

enum { PB_TUNE_RE_BASE, PB_TUNE_RE_BEST };

/* The base config and the best point run again after the search, interleaved (base, best, base, ...):
 * the gain is claimed only when the best's interval lies above the base's. */
typedef struct pb_tune_remeasure {
  bool needed;       /* the best is not the base config */
  int pairs;         /* asked for when needed */
  double estimate_s; /* its expected length: pairs x (the base's longest run + the best's) */
  bool skipped;      /* not run: it would have ended after --budget-s, or the search failed */
  char why_not[160]; /* why it was not run, when skipped */
  bool started, interrupted;
  int done[2]; /* runs done: [PB_TUNE_RE_BASE], [PB_TUNE_RE_BEST] */
  pb_run_figures runs[2][PB_REPEAT_MAX];
  pb_repeat_summary sum[2];
  double wall_s;
  pb_tune_outcome outcome;
} pb_tune_remeasure;

/* The whole search, as tune.json and the summary show it. */
typedef struct pb_tune_result {
  const char *config_file;
  const char *out_dir; /* the command's: trials are <out_dir>/trial-NNN */
  const pb_tune_knob *knobs;
  int nknobs;
  bool listed;     /* the space was given as lists */
  long space_size; /* combinations, when listed */
  const pb_tune_trial *trials;
  int ntrials, best;             /* best: -1 when none */
  int ncpu, max_trials, repeats; /* repeats: --repeat, runs of each trial */
  double budget_s;
  double elapsed_s, search_s; /* the whole command's so far, and the search's without the re-measure */
  const char *stop_reason;
  const pb_tune_remeasure *re;
} pb_tune_result;

/* The "reached" tolerance of an "up to" prediction, as a fraction: max(1 %, min(the run's noise, 5 %)).
 * noise_pct: the run's throughput.noise_pct (NAN: 0). */
double pb_tune_ceiling_tolerance(double noise_pct);

/* An "up to" prediction (the device's rate, a ceiling) that the run reached: measured within the tolerance
 * below it. */
bool pb_tune_reached_ceiling(bool up_to, double predicted, double measured, double noise_pct);

/* The trial's samples/s: the median of its repeats that count (its one run's with --repeat 1); NAN when a
 * repeat failed or was interrupted (such a trial is never the best). */
double pb_tune_trial_measured(const pb_tune_trial *tr);

/* The run's noise, in %, as its report says (NAN: unknown). */
double pb_tune_trial_noise_pct(const pb_tune_trial *tr);

/* The trial's "up to" prediction was reached (pb_tune_reached_ceiling): it says nothing about the model. */
bool pb_tune_trial_reached_ceiling(const pb_tune_trial *tr);

/* (predicted - measured) / measured x 100, NAN when either is missing or the prediction could not have
 * been wrong (reached its ceiling). */
double pb_tune_trial_error_pct(const pb_tune_trial *tr);

/* Median and max of |prediction error| over the trials that have one; returns how many. */
int pb_tune_error_summary(const pb_tune_trial *trials, int ntrials, double *median, double *max);

/* The median and max of |v[0..n)| (v is sorted in place by magnitude); NAN both when n is 0. */
void pb_tune_abs_median_max(double *v, int n, double *median, double *max);

/* "<path>=<value> ..." for each knob, into out. */
void pb_tune_point_text(const pb_tune_knob *knobs, int nknobs, const pb_tune_point *p, char *out, size_t len);

pb_tune_outcome pb_tune_remeasure_outcome(bool needed, bool skipped, bool interrupted, const pb_interval *base,
                                          const pb_interval *best);

/* The outcome's name in tune.json ("gain", "no_measurable_difference", ...; NULL for PB_TUNE_NOT_NEEDED). */
const char *pb_tune_outcome_name(pb_tune_outcome o);

/* The re-measured gain of the best's median over the base's, in % (NAN without a base median). */
double pb_tune_remeasured_gain_pct(const pb_tune_remeasure *re);

/* The trial whose config tune writes: the best, unless the re-measure found the base measurably faster. */
int pb_tune_written_trial(const pb_tune_result *r);

#endif

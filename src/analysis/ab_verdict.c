/* ab's numbers and verdict (ab_verdict.h, docs/AB.md "The verdict"): pure arithmetic and words, no I/O. */
#include "ab_verdict.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { AB_SYNTHETIC = PB_AB_SYNTHETIC, AB_COLD = PB_AB_COLD, AB_WARM = PB_AB_WARM, AB_RUNS = PB_AB_RUNS };

/* Real data within this fraction of the synthetic rate: not input-bound. */
#define NOT_INPUT_BOUND_RATIO 0.95
/* A stall smaller than this fraction of the cold run's time per sample is within run-to-run noise. */
#define NOISE_FRACTION 0.03
/* A fetch stall is storage's only when the cold run's read stage was busy at least this share of the
 * time: a read stage idle most of the run was not what the pipeline waited on. */
#define READ_BUSY_MIN 0.5

const char *pb_ab_label(int k) {
  static const char *const label[AB_RUNS] = {"synthetic", "real (cold cache)", "real (warm cache)"};
  return k >= 0 && k < AB_RUNS ? label[k] : "?";
}

int pb_ab_worse_status(int a, int b) {
  static const int rank[] = {[PB_EXIT_OK] = 0, [PB_EXIT_RUNTIME] = 1, [PB_EXIT_USAGE] = 2};
  if (a == PB_EXIT_INTERRUPTED || b == PB_EXIT_INTERRUPTED) return PB_EXIT_INTERRUPTED;
  int ra = a >= 0 && a <= 2 ? rank[a] : 1, rb = b >= 0 && b <= 2 ? rank[b] : 1;
  return ra >= rb ? a : b;
}

/* A run that failed (exit 1 or 2) may still have written a report: its figures are not used (AB.md).  An
 * interrupted run's are: it measured until the signal. */
bool pb_ab_counts(bool started, const pb_run_figures *f) {
  return started && (f->status == 0 || f->status == PB_EXIT_INTERRUPTED) && f->have && isfinite(f->samples_per_s) &&
         f->samples_per_s > 0;
}

/* ---------- the numbers ---------- */

/* DS-Analyzer's stalls split the time per sample real data loses, tc - ts: the warm run's time is taken
 * within [ts, tc], so fetch + prep = tc - ts and neither passes it (a warm run slower than the cold one, or
 * faster than the synthetic one, is run-to-run noise); nothing lost (tc <= ts): both 0. */
static void compute_stalls(pb_ab_stalls *s, double syn, double cold, double warm) {
  double ts = 1e6 / syn, tc = 1e6 / cold, tw = 1e6 / warm; /* us per sample; NAN when a rate is missing */
  s->t_us[AB_SYNTHETIC] = ts, s->t_us[AB_COLD] = tc, s->t_us[AB_WARM] = tw;
  s->fetch_within_noise = fabs(tc - tw) < NOISE_FRACTION * tc; /* before the clamping, as measured */
  s->prep_within_noise = fabs(tw - ts) < NOISE_FRACTION * tc;
  double fetch = NAN, prep = NAN; /* DS-Analyzer: fetch stall, prep stall */
  if (!isnan(ts + tc + tw)) {
    double w = tc > ts ? fmin(fmax(tw, ts), tc) : tc;
    fetch = tc > ts ? tc - w : 0;
    prep = tc > ts ? w - ts : 0;
  }
  s->fetch_pct = 100.0 * fetch / tc;
  s->prep_pct = 100.0 * prep / tc;
  double lost = fetch + prep;
  s->fetch_share_pct = lost > 0 ? 100.0 * fetch / lost : (isnan(lost) ? NAN : 0);
  s->prep_share_pct = lost > 0 ? 100.0 * prep / lost : (isnan(lost) ? NAN : 0);
}

/* Which differences lie outside the intervals: only where both intervals cover at least 90 %. */
static void compute_measurable(pb_ab_stalls *s, const pb_ab_side *sd) {
  const pb_interval *syn = &sd[AB_SYNTHETIC].rate, *cold = &sd[AB_COLD].rate, *warm = &sd[AB_WARM].rate;
  s->repeated = pb_interval_has(syn) && pb_interval_has(cold);
  s->decisive = pb_interval_decisive(syn) && pb_interval_decisive(cold);
  s->warm_decisive = pb_interval_decisive(warm);
  s->real_differs = s->decisive && pb_interval_compare(syn, cold) != PB_DIFF_OVERLAP;
  s->fetch_measurable = s->decisive && pb_interval_compare(warm, cold) == PB_DIFF_ABOVE;
  s->prep_measurable = s->decisive && pb_interval_compare(syn, warm) == PB_DIFF_ABOVE;
}

void pb_ab_compute(pb_ab_numbers *x) {
  double syn = x->side[AB_SYNTHETIC].rate.median, cold = x->side[AB_COLD].rate.median;
  double warm = x->side[AB_WARM].rate.median;
  pb_ab_stalls *s = &x->s;
  s->ratio_cold = cold / syn;
  s->ratio_warm = warm / syn;
  s->lost_per_s = isnan(syn - cold) ? NAN : PB_MAX(syn - cold, 0.0);
  compute_stalls(s, syn, cold, warm);
  compute_measurable(s, x->side);
}

/* ---------- the verdict ---------- */

const char *pb_ab_bottleneck(const pb_ab_side *sd) { return sd->bottleneck[0] ? sd->bottleneck : "n/a"; }

/* What limits a run that real data does not slow down: the synthetic run's own bottleneck. */
static void the_limit(const pb_ab_numbers *x, char *out, size_t len) {
  const char *b = pb_ab_bottleneck(&x->side[AB_SYNTHETIC]);
  if (strcmp(b, "device") == 0 || strcmp(b, "n/a") == 0) snprintf(out, len, "the device is the limit");
  else
    snprintf(out, len, "the limit is %s, which runs without real data too (the synthetic run's bottleneck)", b);
}

static void not_input_bound(const pb_ab_numbers *x, char *v, size_t len) {
  char limit[PB_NAME_LEN + 96];
  the_limit(x, limit, sizeof limit);
  snprintf(v, len, "not input-bound: real data reaches %.0f %% of the synthetic rate; %s", 100.0 * x->s.ratio_cold,
           limit);
}

/* With repeats, real and synthetic data whose intervals overlap: no stall to name. */
static void no_difference(const pb_ab_numbers *x, char *v, size_t len) {
  char limit[PB_NAME_LEN + 96], a[160], b[160];
  the_limit(x, limit, sizeof limit);
  snprintf(v, len,
           "no measurable difference: real data (cold cache, %s samples/s) and synthetic data (%s) overlap "
           "within their intervals, so real data costs nothing measurable; %s",
           pb_interval_text(&x->side[AB_COLD].rate, 1, a, sizeof a),
           pb_interval_text(&x->side[AB_SYNTHETIC].rate, 1, b, sizeof b), limit);
}

/* The stage a run's analysis names, in words for the verdict. */
static void named_stage(const pb_ab_side *sd, const char *run, char *out, size_t len) {
  const char *b = pb_ab_bottleneck(sd);
  if (strcmp(b, "device") == 0)
    snprintf(out, len, "the %s run's analysis names no input stage (the stall is spread over several)", run);
  else
    snprintf(out, len, "the %s run's bottleneck is %s", run, b);
}

/* "Mostly fetch" while the cold run's read stage sat idle most of the time: reading was not what the
 * pipeline waited on, so storage is not blamed; the line says what the numbers do show. */
static void not_storage(const pb_ab_numbers *x, char *v, size_t len) {
  char who[PB_NAME_LEN + 128];
  named_stage(&x->side[AB_COLD], "cold", who, sizeof who);
  bool split = x->s.decisive && x->s.warm_decisive; /* the intervals decide the split */
  bool noise = split ? !x->s.fetch_measurable : x->s.fetch_within_noise;
  snprintf(v, len,
           "input-bound, not on storage: the cold run was slower than the warm one (%.1f %% of each sample's "
           "time), but its read stage was busy only %.0f %% of the time, so reading was not what the pipeline "
           "waited on; %s; %s",
           x->s.fetch_pct, 100 * x->side[AB_COLD].read_utilization,
           noise ? "the fetch/prep split is within the run-to-run noise" : "the cold run was slower for another reason",
           who);
}

/* "input-bound, mostly fetch (storage)" or "... preprocessing (CPU)": the stall's share of each sample's time,
 * the stage the given run's analysis names, and what to try. */
static void mostly(const pb_ab_numbers *x, int k, const char *what, double pct, const char *advice, char *v,
                   size_t len) {
  char who[PB_NAME_LEN + 128];
  named_stage(&x->side[k], k == AB_COLD ? "cold" : "warm", who, sizeof who);
  snprintf(v, len, "input-bound, mostly %s: %.1f %% of each sample's time is %s stall; %s: %s", what, pct,
           k == AB_COLD ? "fetch" : "prep", who, advice);
}

static void mostly_fetch(const pb_ab_numbers *x, char *v, size_t len) {
  double busy = x->side[AB_COLD].read_utilization;
  if (!isnan(busy) && busy < READ_BUSY_MIN)
    not_storage(x, v, len);
  else
    mostly(x, AB_COLD, "fetch (storage)", x->s.fetch_pct,
           "faster storage, caching (a cache stage) or more read threads", v, len);
}

static void mostly_prep(const pb_ab_numbers *x, char *v, size_t len) {
  mostly(x, AB_WARM, "preprocessing (CPU)", x->s.prep_pct, "add threads or cores (try `pipebench tune`)", v, len);
}

static void input_bound(const pb_ab_numbers *x, char *v, size_t len) {
  const pb_ab_stalls *s = &x->s;
  double pct = 100.0 * s->ratio_cold;
  bool split = s->decisive && s->warm_decisive; /* the intervals decide the split; else the medians do */
  bool fetch_ok = !split || s->fetch_measurable, prep_ok = !split || s->prep_measurable;
  if (isnan(s->prep_pct) || isnan(s->fetch_pct))
    snprintf(v, len, "input-bound: real data reaches %.0f %% of the synthetic rate (no warm run to split fetch "
             "from preprocessing)", pct);
  else if (!fetch_ok && !prep_ok)
    snprintf(v, len, "input-bound: real data reaches %.0f %% of the synthetic rate; no measurable difference "
             "splits it: the warm run's interval overlaps both the cold run's and the synthetic run's", pct);
  else if (prep_ok && (!fetch_ok || s->prep_pct >= s->fetch_pct))
    mostly_prep(x, v, len);
  else
    mostly_fetch(x, v, len);
}

static void no_verdict(const pb_ab_numbers *x, char *v, size_t len) {
  int k = x->side[AB_SYNTHETIC].rate.n > 0 ? AB_COLD : AB_SYNTHETIC;
  const pb_ab_side *sd = &x->side[k];
  snprintf(v, len, "no verdict: the %s run %s", pb_ab_label(k),
           !sd->started                           ? "did not run (interrupted)"
           : sd->status == PB_EXIT_INTERRUPTED    ? "was interrupted (an interrupted run does not count)"
           : sd->status != 0                      ? "failed"
                                                  : "measured no throughput");
}

/* With repeats too few for 90 % intervals: the verdict above is the medians', and says so. */
static void too_few_note(const pb_ab_numbers *x, char *v, size_t len) {
  const pb_ab_stalls *s = &x->s;
  bool warm_has = x->side[AB_WARM].rate.n > 0;
  if (x->repeats <= 1 || (s->decisive && (s->warm_decisive || !warm_has))) return;
  int worst = -1; /* the side whose interval covers least */
  for (int k = 0; k < AB_RUNS; k++) {
    const pb_interval *iv = &x->side[k].rate;
    if (iv->n == 0 || pb_interval_decisive(iv)) continue;
    double cov = pb_interval_has(iv) ? iv->coverage : 0;
    double worst_cov = worst < 0 ? 2 : pb_interval_has(&x->side[worst].rate) ? x->side[worst].rate.coverage : 0;
    if (cov < worst_cov) worst = k;
  }
  if (worst < 0) return;
  const pb_interval *iv = &x->side[worst].rate;
  char what[96];
  if (pb_interval_has(iv))
    snprintf(what, sizeof what, "coverage %.1f %%, the %s run's interval", 100 * iv->coverage, pb_ab_label(worst));
  else snprintf(what, sizeof what, "the %s run: %d counted, no interval", pb_ab_label(worst), iv->n);
  size_t n = strlen(v);
  if (n + 1 < len)
    snprintf(v + n, len - n, " (from the medians alone: too few repeats to tell (%s; %d or more repeats give at least "
             "%.0f %%))", what, PB_REPEAT_MIN_DECISIVE, 100 * PB_REPEAT_MIN_COVERAGE);
}

void pb_ab_verdict(const pb_ab_numbers *x, char *v, size_t len) {
  if (isnan(x->s.ratio_cold)) {
    no_verdict(x, v, len);
    return;
  }
  if (x->s.decisive && !x->s.real_differs) no_difference(x, v, len);
  else if (x->s.ratio_cold >= NOT_INPUT_BOUND_RATIO) not_input_bound(x, v, len);
  else input_bound(x, v, len);
  too_few_note(x, v, len);
  size_t n = strlen(v);
  if (x->cold_effective || n + 1 >= len) return;
  if (isnan(x->cold_resident_pct))
    snprintf(v + n, len - n, " (the page cache could not be measured: the cold run may not be cold)");
  else
    snprintf(v + n, len - n,
             " (the cold run was not cold: %.1f %% of the dataset stayed cached, so the fetch stall is "
             "understated)",
             x->cold_resident_pct);
}

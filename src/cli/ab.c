/* `pipebench ab`: synthetic, real with a cold page cache, real with a warm one (DS-Analyzer, VLDB 2021).
 * The method, every key of ab.json and the verdict rules are in docs/AB.md. */
#include "ab.h"
#include "json_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "files.h"
#include "pagecache.h"

enum { AB_SYNTHETIC = PB_AB_SYNTHETIC, AB_COLD = PB_AB_COLD, AB_WARM = PB_AB_WARM, AB_RUNS = PB_AB_RUNS };

static const char *const k_dir[AB_RUNS] = {"synthetic", "real-cold", "real-warm"};  /* run directories */
static const char *const k_key[AB_RUNS] = {"synthetic", "real_cold", "real_warm"};  /* ab.json keys */
static const char *const k_label[AB_RUNS] = {"synthetic", "real (cold cache)", "real (warm cache)"};

/* The cold run counts as cold when at most this much of the dataset stayed cached after eviction. */
#define COLD_MAX_RESIDENT_PCT 10.0
/* The warm run counts as warm when at least this much of the dataset is cached after reading it. */
#define WARM_MIN_RESIDENT_PCT 90.0
/* Real data within this fraction of the synthetic rate: not input-bound. */
#define NOT_INPUT_BOUND_RATIO 0.95
/* A stall smaller than this fraction of the cold run's time per sample is within run-to-run noise. */
#define NOISE_FRACTION 0.03
/* A fetch stall is storage's only when the cold run's read stage was busy at least this share of the
 * time: a read stage idle most of the run was not what the pipeline waited on. */
#define READ_BUSY_MIN 0.5

#define WIDTH 99 /* the longest text line, as in the run's summary */
#define LABEL 14

/* One repeat of one of the three runs. */
typedef struct ab_rep {
  bool started;
  double resident_pct_before; /* the dataset's share in the page cache as it started; NAN: synthetic */
  double read_utilization;    /* its read stage's, 0..1; NAN: none */
  pb_run_figures f;
} ab_rep;

typedef struct ab_ctx {
  pb_multi *m;
  pb_config *cfg;
  pb_file_list files;
  uint64_t unreadable_files;      /* skipped by any page-cache pass */
  uint64_t synced;                /* files fdatasync'ed before an eviction would drop them */
  int repeats;
  ab_rep *reps[AB_RUNS];          /* [repeats] each */
  pb_report *scratch;             /* the current run's report */
  pb_repeat_summary sum[AB_RUNS];
  pb_pagecache_tally evicted, warmed;
  bool cold_effective, warm_effective;
  double resident_worst[AB_RUNS]; /* the cold runs' highest, the warm runs' lowest (NAN: not measured) */
  bool interrupted;
  int status;
  pb_ab_numbers x;
  char verdict[1024];
} ab_ctx;

static bool quiet(const ab_ctx *c) { return c->m->run.quiet; }

__attribute__((format(printf, 2, 3))) static void progress(const ab_ctx *c, const char *fmt, ...) {
  if (quiet(c)) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("pipebench: ab: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---------- before the runs ---------- */

/* ab compares real data with synthetic: an in-memory dataset has no real side.  0 also when the config
 * does not load (pb_multi_begin then says why). */
static int refuse_in_memory_dataset(pb_multi *m, pb_config *cfg) {
  pb_err err;
  if (pb_multi_load(m, NULL, 0, cfg, &err) || cfg->dataset.format != PB_FMT_SYNTHETIC) return 0;
  fprintf(stderr,
          "pipebench: %s: dataset.format: \"synthetic\" has no files for ab to read (expected a dataset of "
          "files: jpeg, tfrecord, npy, npz or raw)\n",
          cfg->file);
  return PB_EXIT_USAGE;
}

/* The run would refuse a dataset path that lists nothing in the same words (exit 2). */
static int list_dataset(ab_ctx *c) {
  pb_err err;
  if (pb_files_list(c->cfg->dataset.path, &c->files, &err) == 0) return 0;
  fprintf(stderr, "pipebench: %s: dataset.path: %s\n", c->cfg->file, err.msg);
  return PB_EXIT_USAGE;
}

static void note_skipped(ab_ctx *c, const pb_pagecache_tally *t, const char *what) {
  if (t->skipped == 0) return;
  c->unreadable_files = PB_MAX(c->unreadable_files, t->skipped);
  progress(c, "note: %llu of %zu files skipped while %s (first: %s)", (unsigned long long)t->skipped,
           c->files.count, what, t->first_error.msg);
}

/* The dataset's share in the page cache now, in %; NAN when nothing could be measured. */
static double measure_resident(ab_ctx *c, const char *when) {
  pb_pagecache_tally t;
  pb_pagecache_resident(&c->files, pb_signalled, &t);
  note_skipped(c, &t, when);
  return t.stopped ? NAN : pb_pagecache_resident_pct(&t);
}

/* The worst residency of the repeats so far (the cold runs' highest, the warm runs' lowest); one that could
 * not be measured makes it NAN. */
static void keep_worst(ab_ctx *c, int k, double pct, bool first) {
  double *w = &c->resident_worst[k];
  if (first) *w = pct;
  else if (isnan(*w) || isnan(pct)) *w = NAN;
  else *w = k == AB_COLD ? fmax(*w, pct) : fmin(*w, pct);
}

static void make_cold(ab_ctx *c, ab_rep *r, bool first) {
  pb_pagecache_evict(&c->files, pb_signalled, &c->evicted);
  c->synced += c->evicted.synced;
  note_skipped(c, &c->evicted, "evicting the dataset from the page cache");
  r->resident_pct_before = measure_resident(c, "measuring the page cache after eviction");
  bool cold = r->resident_pct_before <= COLD_MAX_RESIDENT_PCT; /* false for NAN */
  c->cold_effective = (first || c->cold_effective) && cold;
  keep_worst(c, AB_COLD, r->resident_pct_before, first);
  if (cold || isnan(r->resident_pct_before)) return;
  progress(c,
           "note: %.1f %% of the dataset is still in the page cache after eviction (expected at most %.0f %%): "
           "the cold run is partly warm and its fetch stall understated (DONTNEED drops only clean pages that "
           "no process maps; a tmpfs keeps them all; stages.read.direct=true reads around the cache)",
           r->resident_pct_before, COLD_MAX_RESIDENT_PCT);
}

static void make_warm(ab_ctx *c, ab_rep *r, bool first) {
  pb_pagecache_warm(&c->files, pb_signalled, &c->warmed);
  note_skipped(c, &c->warmed, "reading the dataset into the page cache");
  r->resident_pct_before = measure_resident(c, "measuring the page cache after reading the dataset");
  bool warm = r->resident_pct_before >= WARM_MIN_RESIDENT_PCT;
  c->warm_effective = (first || c->warm_effective) && warm;
  keep_worst(c, AB_WARM, r->resident_pct_before, first);
  if (warm || isnan(r->resident_pct_before)) return;
  progress(c,
           "note: only %.1f %% of the dataset (%.1f MB) stayed in the page cache after reading it (expected at "
           "least %.0f %%): it does not fit in the memory free for the cache, so the warm run reads part of it "
           "from storage",
           r->resident_pct_before, (double)c->files.total_bytes / 1e6, WARM_MIN_RESIDENT_PCT);
}

/* ---------- the runs ---------- */

/* A run that failed (exit 1 or 2) may still have written a report: its figures are not used (AB.md).  An
 * interrupted run's are: it measured until the signal. */
static bool have_rate(const ab_rep *r) {
  return r->started && (r->f.status == 0 || r->f.status == PB_EXIT_INTERRUPTED) && r->f.have &&
         isfinite(r->f.samples_per_s) && r->f.samples_per_s > 0;
}

static void prepare_cache(ab_ctx *c, int k, int rep) {
  ab_rep *r = &c->reps[k][rep];
  r->resident_pct_before = NAN;
  if (k == AB_COLD) make_cold(c, r, rep == 0);
  if (k == AB_WARM) make_warm(c, r, rep == 0);
}

/* "run 2/3 real (cold cache)", and " (repeat 2/3)" after it with repeats. */
static void run_title(const ab_ctx *c, int k, int rep, char *out, size_t len) {
  int total = AB_RUNS * c->repeats, nth = rep * AB_RUNS + k + 1;
  if (c->repeats == 1) snprintf(out, len, "run %d/%d %s", nth, total, k_label[k]);
  else snprintf(out, len, "run %d/%d %s (repeat %d/%d)", nth, total, k_label[k], rep + 1, c->repeats);
}

static void start_line(const ab_ctx *c, int k, int rep) {
  const ab_rep *r = &c->reps[k][rep];
  char title[128];
  run_title(c, k, rep, title, sizeof title);
  if (k == AB_SYNTHETIC)
    progress(c, "%s: starting", title);
  else
    progress(c, "%s: starting, %s %% of the dataset (%zu files, %.1f MB) in the page cache", title,
             pb_fmt_double(&(pb_numbuf){0}, "%.1f", r->resident_pct_before), c->files.count,
             (double)c->files.total_bytes / 1e6);
}

static void end_line(const ab_ctx *c, int k, int rep) {
  const ab_rep *r = &c->reps[k][rep];
  char title[128];
  run_title(c, k, rep, title, sizeof title);
  if (have_rate(r))
    progress(c, "%s: %.2f s, %s samples/s", title, r->f.wall_s,
             pb_fmt_double(&(pb_numbuf){0}, "%.1f", r->f.samples_per_s));
  else if (r->f.status == PB_EXIT_INTERRUPTED)
    progress(c, "%s: %.2f s, interrupted (exit 130): it does not count", title, r->f.wall_s);
  else
    progress(c, "%s: %.2f s, failed (exit %d)", title, r->f.wall_s, r->f.status);
}

/* The utilization of the run's read stage (the busiest, if several), 0..1; NAN when it has none.  The
 * stages are found by the config's names: the report's type strings are the run's and gone after it. */
static double read_utilization(const pb_config *cfg, const pb_report *r) {
  double u = NAN;
  for (int k = 0; r->version && k < cfg->nstages; k++) {
    if (cfg->stages[k].type != PB_STAGE_READ) continue;
    for (int i = 0; i < r->nstages; i++)
      if (strcmp(r->stages[i].name, cfg->stages[k].name) == 0 && !r->stages[i].skipped &&
          isfinite(r->stages[i].utilization))
        u = isnan(u) ? r->stages[i].utilization : fmax(u, r->stages[i].utilization);
  }
  return u;
}

/* Prepares the page cache and runs one repeat of one of the three.  Returns the run's exit status. */
static int run_one(ab_ctx *c, int k, int rep) {
  ab_rep *r = &c->reps[k][rep];
  prepare_cache(c, k, rep);
  if (pb_signalled()) return PB_EXIT_INTERRUPTED;
  start_line(c, k, rep);
  char name[64];
  pb_multi_repeat_name(c->m, k_dir[k], rep, name, sizeof name);
  uint64_t t0 = pb_now_ns();
  r->started = true;
  int status = pb_multi_run(c->m, c->cfg, name, k == AB_SYNTHETIC, c->scratch);
  pb_run_figures_of(c->scratch, status, (double)(pb_now_ns() - t0) / 1e9, &r->f);
  r->read_utilization = read_utilization(c->cfg, c->scratch);
  end_line(c, k, rep);
  return status;
}

/* The worst status: interrupted, then a config the run refused (2), then a failure (1). */
static int worse(int a, int b) {
  static const int rank[] = {[PB_EXIT_OK] = 0, [PB_EXIT_RUNTIME] = 1, [PB_EXIT_USAGE] = 2};
  if (a == PB_EXIT_INTERRUPTED || b == PB_EXIT_INTERRUPTED) return PB_EXIT_INTERRUPTED;
  int ra = a >= 0 && a <= 2 ? rank[a] : 1, rb = b >= 0 && b <= 2 ? rank[b] : 1;
  return ra >= rb ? a : b;
}

/* Interleaved: synthetic, cold, warm, synthetic, cold, warm, ...: a machine that drifts (another tenant,
 * thermal limits) moves every run alike instead of one of them. */
static void run_all(ab_ctx *c) {
  for (int rep = 0; rep < c->repeats; rep++)
    for (int k = 0; k < AB_RUNS; k++) {
      c->status = worse(c->status, run_one(c, k, rep));
      if (c->status == PB_EXIT_INTERRUPTED || pb_signalled()) {
        c->interrupted = true;
        c->status = PB_EXIT_INTERRUPTED;
        return; /* stop at once; ab.json holds what was run */
      }
    }
}

/* ---------- the numbers ---------- */

static int reps_run(const ab_ctx *c, int k) {
  int n = 0;
  while (n < c->repeats && c->reps[k][n].started) n++;
  return n;
}

/* One side of the verdict from its repeats: the rates that count (have_rate), the median repeat's
 * bottleneck, the median read utilization of the repeats that count. */
static void make_side(ab_ctx *c, int k) {
  pb_ab_side *sd = &c->x.side[k];
  int n = reps_run(c, k);
  double reads[PB_REPEAT_MAX] = {0};
  pb_run_figures figs[PB_REPEAT_MAX] = {0};
  *sd = (pb_ab_side){.started = n > 0, .read_utilization = NAN};
  for (int r = 0; r < n; r++) {
    const ab_rep *rp = &c->reps[k][r];
    sd->status = r ? worse(sd->status, rp->f.status) : rp->f.status;
    reads[r] = have_rate(rp) ? rp->read_utilization : NAN;
    figs[r] = rp->f;
  }
  pb_repeat_summarize(figs, n, &c->sum[k]);
  sd->rate = c->sum[k].samples_per_s; /* the same repeats as every figure of the run (pb_run_figures_measured) */
  pb_interval reads_iv;
  pb_interval_of(reads, n, &reads_iv);
  sd->read_utilization = reads_iv.median;
  pb_run_figures f;
  pb_repeat_figures(figs, n, &c->sum[k], &f);
  if (n && f.have) snprintf(sd->bottleneck, sizeof sd->bottleneck, "%s", f.bottleneck);
}

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

static void compute(ab_ctx *c) {
  for (int k = 0; k < AB_RUNS; k++) make_side(c, k);
  c->x.repeats = c->repeats;
  c->x.cold_effective = c->cold_effective;
  c->x.cold_resident_pct = c->resident_worst[AB_COLD];
  pb_ab_compute(&c->x);
}

/* ---------- the verdict ---------- */

static const char *bottleneck_of(const pb_ab_side *sd) { return sd->bottleneck[0] ? sd->bottleneck : "n/a"; }

/* What limits a run that real data does not slow down: the synthetic run's own bottleneck. */
static void the_limit(const pb_ab_numbers *x, char *out, size_t len) {
  const char *b = bottleneck_of(&x->side[AB_SYNTHETIC]);
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
  const char *b = bottleneck_of(sd);
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

static void mostly_fetch(const pb_ab_numbers *x, char *v, size_t len) {
  double busy = x->side[AB_COLD].read_utilization;
  if (!isnan(busy) && busy < READ_BUSY_MIN) {
    not_storage(x, v, len);
    return;
  }
  char who[PB_NAME_LEN + 128];
  named_stage(&x->side[AB_COLD], "cold", who, sizeof who);
  snprintf(v, len,
           "input-bound, mostly fetch (storage): %.1f %% of each sample's time is fetch stall; %s: faster "
           "storage, caching (a cache stage) or more read threads",
           x->s.fetch_pct, who);
}

static void mostly_prep(const pb_ab_numbers *x, char *v, size_t len) {
  char who[PB_NAME_LEN + 128];
  named_stage(&x->side[AB_WARM], "warm", who, sizeof who);
  snprintf(v, len,
           "input-bound, mostly preprocessing (CPU): %.1f %% of each sample's time is prep stall; %s: add "
           "threads or cores (try `pipebench tune`)",
           x->s.prep_pct, who);
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
  snprintf(v, len, "no verdict: the %s run %s", k_label[k],
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
    snprintf(what, sizeof what, "coverage %.1f %%, the %s run's interval", 100 * iv->coverage, k_label[worst]);
  else snprintf(what, sizeof what, "the %s run: %d counted, no interval", k_label[worst], iv->n);
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

/* ---------- ab.json ---------- */

/* Decimals in ab.json, as report.json rounds (docs/METRICS.md): the figures are computed unrounded. */
enum { PER_S = 1, PCT = 2, FRAC = 4, US = 3, SEC = 3 };

/* A boolean that only repeats can decide: null with one run of each. */
static void add_repeat_bool(cJSON *o, const char *key, bool repeated, bool v) {
  if (repeated) cJSON_AddBoolToObject(o, key, v);
  else cJSON_AddNullToObject(o, key);
}

static double total_wall_s(const ab_ctx *c, int k) {
  double s = 0;
  for (int r = 0; r < reps_run(c, k); r++) s += c->reps[k][r].f.wall_s;
  return s;
}

/* A run's figures (figs[] receives its repeats'): the medians over the repeats that count (so samples/s is
 * the rate the verdict used) and the median repeat's bottleneck; its status the worst of its repeats',
 * interrupted whenever one was.  Returns the repeats. */
static int side_figures(const ab_ctx *c, int k, pb_run_figures *figs, pb_run_figures *f) {
  int n = reps_run(c, k);
  for (int r = 0; r < n; r++) figs[r] = c->reps[k][r].f;
  pb_repeat_figures(figs, n, &c->sum[k], f);
  if (n) f->status = c->x.side[k].status;
  f->interrupted = f->interrupted || f->status == PB_EXIT_INTERRUPTED;
  return n;
}

/* A run's figures, and with repeats its "repeats" object. */
static cJSON *run_json(const ab_ctx *c, int k) {
  pb_run_figures figs[PB_REPEAT_MAX], f;
  int n = side_figures(c, k, figs, &f);
  if (n == 0) return cJSON_CreateNull();
  char dir[PB_PATH_LEN + 64];
  snprintf(dir, sizeof dir, "%s/%s", c->m->out_dir, k_dir[k]);
  cJSON *o = pb_multi_figures_json(&f, dir);
  if (!o) return NULL;
  pb_multi_add_number(o, "wall_s", total_wall_s(c, k), SEC);
  pb_multi_add_number(o, "time_per_sample_us", c->x.s.t_us[k], US);
  pb_multi_add_number(o, "cache_resident_pct_before", k == AB_SYNTHETIC ? NAN : c->resident_worst[k], PCT);
  pb_multi_add_number(o, "read_utilization", c->x.side[k].read_utilization, FRAC);
  if (c->repeats > 1) cJSON_AddItemToObject(o, "repeats", pb_repeat_json(figs, n, &c->sum[k]));
  else cJSON_AddNullToObject(o, "repeats");
  return o;
}

static cJSON *runs_json(const ab_ctx *c) {
  cJSON *o = cJSON_CreateObject();
  for (int k = 0; o && k < AB_RUNS; k++) cJSON_AddItemToObject(o, k_key[k], run_json(c, k));
  return o;
}

static cJSON *dataset_json(const ab_ctx *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "path", c->cfg->dataset.path);
  cJSON_AddNumberToObject(o, "files", (double)c->files.count);
  cJSON_AddNumberToObject(o, "bytes", (double)c->files.total_bytes);
  cJSON_AddNumberToObject(o, "unreadable_files", (double)c->unreadable_files);
  cJSON_AddNumberToObject(o, "synced_before_eviction", (double)c->synced);
  return o;
}

static cJSON *stalls_json(const pb_ab_stalls *s) {
  cJSON *o = cJSON_CreateObject();
  pb_multi_add_number(o, "fetch_pct", s->fetch_pct, PCT);
  pb_multi_add_number(o, "prep_pct", s->prep_pct, PCT);
  pb_multi_add_number(o, "fetch_share_pct", s->fetch_share_pct, PCT);
  pb_multi_add_number(o, "prep_share_pct", s->prep_share_pct, PCT);
  bool have = !isnan(s->fetch_pct);
  cJSON_AddBoolToObject(o, "within_noise", have && s->fetch_within_noise && s->prep_within_noise);
  cJSON_AddBoolToObject(o, "fetch_within_noise", have && s->fetch_within_noise);
  cJSON_AddBoolToObject(o, "prep_within_noise", have && s->prep_within_noise);
  bool split = s->decisive && s->warm_decisive && have; /* null: one run each, or too few repeats to tell */
  add_repeat_bool(o, "fetch_measurable", split, s->fetch_measurable);
  add_repeat_bool(o, "prep_measurable", split, s->prep_measurable);
  return o;
}

static cJSON *ab_json(const ab_ctx *c) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "command", "ab");
  cJSON_AddStringToObject(o, "version", PB_VERSION);
  cJSON_AddStringToObject(o, "config", c->m->config_file);
  cJSON_AddStringToObject(o, "out_dir", c->m->out_dir);
  cJSON_AddNumberToObject(o, "status", c->status);
  cJSON_AddBoolToObject(o, "interrupted", c->interrupted);
  cJSON_AddNumberToObject(o, "repeat", c->repeats);
  cJSON_AddItemToObject(o, "dataset", dataset_json(c));
  cJSON_AddItemToObject(o, "runs", runs_json(c));
  cJSON *ratios = cJSON_AddObjectToObject(o, "ratios");
  pb_multi_add_number(ratios, "real_cold_over_synthetic", c->x.s.ratio_cold, FRAC);
  pb_multi_add_number(ratios, "real_warm_over_synthetic", c->x.s.ratio_warm, FRAC);
  pb_multi_add_number(o, "lost_samples_per_s", c->x.s.lost_per_s, PER_S);
  cJSON_AddItemToObject(o, "stalls", stalls_json(&c->x.s));
  add_repeat_bool(o, "no_measurable_difference", c->x.s.decisive, !c->x.s.real_differs);
  cJSON_AddStringToObject(o, "verdict", c->verdict);
  cJSON_AddBoolToObject(o, "cold_cache_effective", c->cold_effective);
  cJSON_AddBoolToObject(o, "warm_cache_effective", c->warm_effective);
  return o;
}

/* ---------- text ---------- */

/* Free text after a label, wrapped at spaces to WIDTH columns. */
static void wrapped(FILE *out, const char *label, const char *text) {
  const int room = WIDTH - LABEL;
  for (bool first = true; first || *text; first = false) {
    int n = (int)strlen(text);
    if (n > room) {
      n = room;
      while (n > 0 && text[n] != ' ') n--;
      if (n == 0) n = room;
    }
    fprintf(out, "%-*s%.*s\n", LABEL, first ? label : "", n, text);
    text += n;
    while (*text == ' ') text++;
  }
}

static void print_row(const ab_ctx *c, int k, FILE *out) {
  const pb_ab_side *sd = &c->x.side[k];
  pb_run_figures figs[PB_REPEAT_MAX], f;
  bool have = side_figures(c, k, figs, &f) > 0 && f.have;
  pb_numbuf a, b, d, e;
  fprintf(out, "%-18s %10s %13s %7s  %-20.20s %16s\n", k_label[k],
          pb_fmt_double(&a, "%.1f", have ? f.samples_per_s : NAN),
          pb_fmt_double(&b, "%.1f", have ? f.device_idle_pct : NAN),
          pb_fmt_double(&d, "%.1f", have ? f.accelerator_utilization_pct : NAN), have ? bottleneck_of(sd) : "-",
          pb_fmt_double(&e, "%.1f", k == AB_SYNTHETIC ? NAN : c->resident_worst[k]));
}

static void print_stalls(const ab_ctx *c, FILE *out) {
  const pb_ab_stalls *s = &c->x.s;
  pb_numbuf a, b, d, e;
  char text[512];
  snprintf(text, sizeof text,
           "of each sample's time (real, cold): fetch %s %%, prep %s %%; of the time lost: fetch %s %%, prep %s "
           "%%%s",
           pb_fmt_double(&a, "%.1f", s->fetch_pct), pb_fmt_double(&b, "%.1f", s->prep_pct),
           pb_fmt_double(&d, "%.1f", s->fetch_share_pct), pb_fmt_double(&e, "%.1f", s->prep_share_pct),
           !isnan(s->fetch_pct) && s->fetch_within_noise && s->prep_within_noise ? " (within noise)" : "");
  wrapped(out, "stalls", text);
}

/* With repeats: each run's median samples/s and its interval. */
static void print_intervals(const ab_ctx *c, FILE *out) {
  if (c->repeats == 1) return;
  for (int k = 0; k < AB_RUNS; k++) {
    char iv[160], text[256];
    int n = c->x.side[k].rate.n, runs = reps_run(c, k);
    if (n == runs)
      snprintf(text, sizeof text, "%s: %s samples/s over %d repeats", k_label[k],
               pb_interval_text(&c->x.side[k].rate, 1, iv, sizeof iv), n);
    else
      snprintf(text, sizeof text, "%s: %s samples/s over %d of %d repeats (the others failed or were interrupted)",
               k_label[k], pb_interval_text(&c->x.side[k].rate, 1, iv, sizeof iv), n, runs);
    wrapped(out, k == 0 ? "median" : "", text);
  }
}

static void print_text(const ab_ctx *c, FILE *out) {
  fprintf(out, "%-18s %10s %13s %7s  %-20s %16s\n", "run", "samples/s", "device idle %", "AU %", "bottleneck",
          "cache resident %");
  for (int k = 0; k < AB_RUNS; k++) print_row(c, k, out);
  pb_numbuf a, b, d;
  char text[512];
  snprintf(text, sizeof text, "real cold / synthetic %s, real warm / synthetic %s",
           pb_fmt_double(&a, "%.3f", c->x.s.ratio_cold), pb_fmt_double(&b, "%.3f", c->x.s.ratio_warm));
  fputc('\n', out);
  print_intervals(c, out);
  wrapped(out, "ratios", text);
  snprintf(text, sizeof text, "%s samples/s (synthetic - real cold)", pb_fmt_double(&d, "%.1f", c->x.s.lost_per_s));
  wrapped(out, "lost", text);
  print_stalls(c, out);
  wrapped(out, "verdict", c->verdict);
  char path[PB_PATH_LEN + 16];
  snprintf(path, sizeof path, "%s/ab.json", c->m->out_dir);
  wrapped(out, "report", path);
}

/* With repeats, each run's directory gets the report of its median repeat with the intervals. */
static int write_repeat_reports(const ab_ctx *c) {
  int rc = 0;
  for (int k = 0; k < AB_RUNS && c->repeats > 1; k++) {
    int n = reps_run(c, k);
    pb_run_figures figs[PB_REPEAT_MAX];
    for (int r = 0; r < n; r++) figs[r] = c->reps[k][r].f;
    int wrc = pb_multi_write_repeats(c->m, k_dir[k], figs, n, &c->sum[k]);
    if (!rc) rc = wrc;
  }
  return rc;
}

/* Writes ab.json and prints the summary; the status stays the runs' unless ab.json cannot be written. */
static int finish(ab_ctx *c) {
  int rrc = write_repeat_reports(c);
  cJSON *j = ab_json(c);
  int rc = pb_multi_write_json(c->m, "ab.json", j);
  if (j && c->m->run.json_stdout) {
    char *text = pb_json_print(j, true);
    if (text) printf("%s\n", text);
    free(text);
  } else if (!c->m->run.quiet && (c->m->run.formats & PB_FMT_TEXT)) {
    print_text(c, stdout);
  }
  cJSON_Delete(j);
  return c->status ? c->status : rc ? rc : rrc;
}

static int alloc_runs(ab_ctx *c, pb_multi *m, pb_config *cfg) {
  c->m = m;
  c->cfg = cfg;
  c->repeats = pb_multi_repeats(m);
  c->scratch = calloc(1, sizeof *c->scratch);
  for (int k = 0; k < AB_RUNS; k++) {
    c->reps[k] = calloc((size_t)c->repeats, sizeof *c->reps[k]);
    c->resident_worst[k] = NAN;
    if (!c->reps[k]) return PB_EXIT_RUNTIME;
  }
  return c->scratch ? 0 : PB_EXIT_RUNTIME;
}

static void free_ctx(ab_ctx *c) {
  if (!c) return;
  pb_file_list_free(&c->files);
  for (int k = 0; k < AB_RUNS; k++) free(c->reps[k]);
  free(c->scratch);
  free(c);
}

int pb_ab(pb_multi *m) {
  ab_ctx *c = calloc(1, sizeof *c);
  pb_config *cfg = calloc(1, sizeof *cfg);
  int rc = c && cfg ? alloc_runs(c, m, cfg) : PB_EXIT_RUNTIME;
  if (rc) fprintf(stderr, "pipebench: ab: out of memory\n");
  if (!rc) rc = refuse_in_memory_dataset(m, cfg);
  if (!rc) rc = pb_multi_begin(m, NULL, 0, cfg, true);
  if (!rc) rc = list_dataset(c);
  if (!rc) {
    run_all(c);
    compute(c);
    pb_ab_verdict(&c->x, c->verdict, sizeof c->verdict);
    rc = finish(c);
  }
  free_ctx(c);
  free(cfg);
  return rc;
}

/* `pipebench ab`: synthetic, real with a cold page cache, real with a warm one (DS-Analyzer, VLDB 2021).
 * The method, every key of ab.json and the verdict rules are in docs/AB.md.  Here: the page cache, the runs
 * and their progress lines; the numbers and the verdict are src/analysis/ab_verdict.c, ab.json and the table
 * src/reports/ab_out.c. */
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

/* The cold run counts as cold when at most this much of the dataset stayed cached after eviction. */
#define COLD_MAX_RESIDENT_PCT 10.0
/* The warm run counts as warm when at least this much of the dataset is cached after reading it. */
#define WARM_MIN_RESIDENT_PCT 90.0

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
  pb_run_figures figs[AB_RUNS][PB_REPEAT_MAX]; /* the repeats' figures run by run, for the summaries */
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
  if (pb_dataset_list(&c->cfg->dataset, &c->files, NULL, &err) == 0) return 0;
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

static void prepare_cache(ab_ctx *c, int k, int rep) {
  ab_rep *r = &c->reps[k][rep];
  r->resident_pct_before = NAN;
  if (k == AB_COLD) make_cold(c, r, rep == 0);
  if (k == AB_WARM) make_warm(c, r, rep == 0);
}

/* "run 2/3 real (cold cache)", and " (repeat 2/3)" after it with repeats. */
static void run_title(const ab_ctx *c, int k, int rep, char *out, size_t len) {
  int total = AB_RUNS * c->repeats, nth = rep * AB_RUNS + k + 1;
  if (c->repeats == 1) snprintf(out, len, "run %d/%d %s", nth, total, pb_ab_label(k));
  else snprintf(out, len, "run %d/%d %s (repeat %d/%d)", nth, total, pb_ab_label(k), rep + 1, c->repeats);
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
  if (pb_ab_counts(r->started, &r->f))
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
  pb_multi_repeat_name(c->m, pb_ab_dir(k), rep, name, sizeof name);
  uint64_t t0 = pb_now_ns();
  r->started = true;
  int status = pb_multi_run(c->m, c->cfg, name, k == AB_SYNTHETIC, c->scratch);
  pb_run_figures_of(c->scratch, status, (double)(pb_now_ns() - t0) / 1e9, &r->f);
  r->read_utilization = read_utilization(c->cfg, c->scratch);
  end_line(c, k, rep);
  return status;
}

/* Interleaved: synthetic, cold, warm, synthetic, cold, warm, ...: a machine that drifts (another tenant,
 * thermal limits) moves every run alike instead of one of them. */
static void run_all(ab_ctx *c) {
  for (int rep = 0; rep < c->repeats; rep++)
    for (int k = 0; k < AB_RUNS; k++) {
      c->status = pb_ab_worse_status(c->status, run_one(c, k, rep));
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

/* One side of the verdict from its repeats: the rates that count (pb_ab_counts), the median repeat's
 * bottleneck, the median read utilization of the repeats that count. */
static void make_side(ab_ctx *c, int k) {
  pb_ab_side *sd = &c->x.side[k];
  int n = reps_run(c, k);
  double reads[PB_REPEAT_MAX] = {0};
  pb_run_figures *figs = c->figs[k];
  *sd = (pb_ab_side){.started = n > 0, .read_utilization = NAN};
  for (int r = 0; r < n; r++) {
    const ab_rep *rp = &c->reps[k][r];
    sd->status = r ? pb_ab_worse_status(sd->status, rp->f.status) : rp->f.status;
    reads[r] = pb_ab_counts(rp->started, &rp->f) ? rp->read_utilization : NAN;
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

static void compute(ab_ctx *c) {
  for (int k = 0; k < AB_RUNS; k++) make_side(c, k);
  c->x.repeats = c->repeats;
  c->x.cold_effective = c->cold_effective;
  c->x.cold_resident_pct = c->resident_worst[AB_COLD];
  pb_ab_compute(&c->x);
}

/* With repeats, each run's directory gets the report of its median repeat with the intervals. */
static int write_repeat_reports(const ab_ctx *c) {
  int rc = 0;
  for (int k = 0; k < AB_RUNS && c->repeats > 1; k++) {
    int wrc = pb_multi_write_repeats(c->m, pb_ab_dir(k), c->figs[k], reps_run(c, k), &c->sum[k]);
    if (!rc) rc = wrc;
  }
  return rc;
}

/* The command's result for src/reports/ab_out.c (pointing into c). */
static pb_ab_out result(const ab_ctx *c) {
  pb_ab_out o = {.config_file = c->m->config_file,
                 .out_dir = c->m->out_dir,
                 .status = c->status,
                 .interrupted = c->interrupted,
                 .repeats = c->repeats,
                 .dataset_path = c->cfg->dataset.path,
                 .files = c->files.count,
                 .bytes = c->files.total_bytes,
                 .unreadable_files = c->unreadable_files,
                 .synced = c->synced,
                 .x = &c->x,
                 .verdict = c->verdict,
                 .cold_effective = c->cold_effective,
                 .warm_effective = c->warm_effective};
  for (int k = 0; k < AB_RUNS; k++)
    o.run[k] = (pb_ab_run_out){reps_run(c, k), c->figs[k], &c->sum[k], c->resident_worst[k]};
  return o;
}

/* Writes ab.json and prints the summary; the status stays the runs' unless ab.json cannot be written. */
static int finish(ab_ctx *c) {
  int rrc = write_repeat_reports(c);
  pb_ab_out out = result(c);
  cJSON *j = pb_ab_json(&out);
  int rc = pb_multi_write_json(c->m, "ab.json", j);
  if (j && c->m->run.json_stdout) {
    char *text = pb_json_print(j, true);
    if (text) printf("%s\n", text);
    free(text);
  } else if (!c->m->run.quiet && (c->m->run.formats & PB_FMT_TEXT)) {
    pb_ab_print_text(stdout, &out);
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

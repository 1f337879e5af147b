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

enum { AB_SYNTHETIC, AB_COLD, AB_WARM, AB_RUNS };

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

#define WIDTH 99 /* the longest text line, as in the run's summary */
#define LABEL 14

typedef struct ab_run {
  bool started;
  int status;
  double wall_s;
  double resident_pct_before; /* the dataset's share in the page cache as the run started; NAN: synthetic */
  pb_report report;
} ab_run;

typedef struct ab_stalls {
  double ratio_cold, ratio_warm;  /* real samples/s over synthetic samples/s */
  double lost_per_s;              /* synthetic - real cold samples/s, at least 0 */
  double t_us[AB_RUNS];           /* time per sample, 1 / samples_per_s, in us */
  double fetch_pct, prep_pct;     /* stalls as % of the cold run's time per sample */
  double fetch_share_pct, prep_share_pct; /* shares of the lost time per sample */
  bool fetch_within_noise, prep_within_noise;
} ab_stalls;

typedef struct ab_ctx {
  pb_multi *m;
  pb_config *cfg;
  pb_file_list files;
  uint64_t unreadable_files;      /* skipped by any page-cache pass */
  ab_run runs[AB_RUNS];
  pb_pagecache_tally evicted, warmed;
  bool cold_effective, warm_effective;
  bool interrupted;
  int status;
  ab_stalls s;
  char verdict[1024];
} ab_ctx;

/* printf of one double, or "n/a" when not available. */
typedef struct numbuf {
  char s[32];
} numbuf;

static const char *fmtd(numbuf *b, const char *fmt, double v) {
  if (!isfinite(v)) return "n/a";
  snprintf(b->s, sizeof b->s, fmt, v);
  return b->s;
}

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

static void make_cold(ab_ctx *c, ab_run *r) {
  pb_pagecache_evict(&c->files, pb_signalled, &c->evicted);
  note_skipped(c, &c->evicted, "evicting the dataset from the page cache");
  r->resident_pct_before = measure_resident(c, "measuring the page cache after eviction");
  c->cold_effective = r->resident_pct_before <= COLD_MAX_RESIDENT_PCT; /* false for NAN */
  if (c->cold_effective || isnan(r->resident_pct_before)) return;
  progress(c,
           "note: %.1f %% of the dataset is still in the page cache after eviction (expected at most %.0f %%): "
           "the cold run is partly warm and its fetch stall understated (DONTNEED drops only clean pages that "
           "no process maps; a tmpfs keeps them all; stages.read.direct=true reads around the cache)",
           r->resident_pct_before, COLD_MAX_RESIDENT_PCT);
}

static void make_warm(ab_ctx *c, ab_run *r) {
  pb_pagecache_warm(&c->files, pb_signalled, &c->warmed);
  note_skipped(c, &c->warmed, "reading the dataset into the page cache");
  r->resident_pct_before = measure_resident(c, "measuring the page cache after reading the dataset");
  c->warm_effective = r->resident_pct_before >= WARM_MIN_RESIDENT_PCT;
  if (c->warm_effective || isnan(r->resident_pct_before)) return;
  progress(c,
           "note: only %.1f %% of the dataset (%.1f MB) stayed in the page cache after reading it (expected at "
           "least %.0f %%): it does not fit in the memory free for the cache, so the warm run reads part of it "
           "from storage",
           r->resident_pct_before, (double)c->files.total_bytes / 1e6, WARM_MIN_RESIDENT_PCT);
}

/* ---------- the runs ---------- */

/* A run that failed (exit 1 or 2) may still have written a report: its figures are not used (AB.md). */
static bool have_rate(const ab_run *r) {
  return r->started && (r->status == 0 || r->status == PB_EXIT_INTERRUPTED) && r->report.version &&
         isfinite(r->report.samples_per_s) && r->report.samples_per_s > 0;
}

static double rate(const ab_run *r) { return have_rate(r) ? r->report.samples_per_s : NAN; }

static void prepare_cache(ab_ctx *c, int k) {
  ab_run *r = &c->runs[k];
  r->resident_pct_before = NAN;
  if (k == AB_COLD) make_cold(c, r);
  if (k == AB_WARM) make_warm(c, r);
}

static void start_line(const ab_ctx *c, int k) {
  const ab_run *r = &c->runs[k];
  if (k == AB_SYNTHETIC)
    progress(c, "run 1/3 %s: starting", k_label[k]);
  else
    progress(c, "run %d/3 %s: starting, %s %% of the dataset (%zu files, %.1f MB) in the page cache", k + 1,
             k_label[k], fmtd(&(numbuf){0}, "%.1f", r->resident_pct_before), c->files.count,
             (double)c->files.total_bytes / 1e6);
}

static void end_line(const ab_ctx *c, int k) {
  const ab_run *r = &c->runs[k];
  if (r->status == 0 || (r->status == PB_EXIT_INTERRUPTED && have_rate(r)))
    progress(c, "run %d/3 %s: %.2f s, %s samples/s%s", k + 1, k_label[k], r->wall_s,
             fmtd(&(numbuf){0}, "%.1f", rate(r)), r->status ? " (interrupted)" : "");
  else
    progress(c, "run %d/3 %s: %.2f s, failed (exit %d)", k + 1, k_label[k], r->wall_s, r->status);
}

/* Prepares the page cache and runs one of the three.  Returns the run's exit status. */
static int run_one(ab_ctx *c, int k) {
  ab_run *r = &c->runs[k];
  prepare_cache(c, k);
  if (pb_signalled()) return PB_EXIT_INTERRUPTED;
  start_line(c, k);
  uint64_t t0 = pb_now_ns();
  r->started = true;
  r->status = pb_multi_run(c->m, c->cfg, k_dir[k], k == AB_SYNTHETIC, &r->report);
  r->wall_s = (double)(pb_now_ns() - t0) / 1e9;
  end_line(c, k);
  return r->status;
}

/* The worst status: interrupted, then a config the run refused (2), then a failure (1). */
static int worse(int a, int b) {
  static const int rank[] = {[PB_EXIT_OK] = 0, [PB_EXIT_RUNTIME] = 1, [PB_EXIT_USAGE] = 2};
  if (a == PB_EXIT_INTERRUPTED || b == PB_EXIT_INTERRUPTED) return PB_EXIT_INTERRUPTED;
  int ra = a >= 0 && a <= 2 ? rank[a] : 1, rb = b >= 0 && b <= 2 ? rank[b] : 1;
  return ra >= rb ? a : b;
}

static void run_all(ab_ctx *c) {
  for (int k = 0; k < AB_RUNS; k++) {
    c->status = worse(c->status, run_one(c, k));
    if (c->status == PB_EXIT_INTERRUPTED || pb_signalled()) {
      c->interrupted = true;
      c->status = PB_EXIT_INTERRUPTED;
      return; /* stop at once; ab.json holds what was run */
    }
  }
}

/* ---------- the numbers ---------- */

static void compute_stalls(ab_stalls *s, double syn, double cold, double warm) {
  double ts = 1e6 / syn, tc = 1e6 / cold, tw = 1e6 / warm; /* us per sample; NAN when a rate is missing */
  s->t_us[AB_SYNTHETIC] = ts, s->t_us[AB_COLD] = tc, s->t_us[AB_WARM] = tw;
  double fetch = tc - tw, prep = tw - ts; /* DS-Analyzer: fetch stall, prep stall */
  s->fetch_within_noise = fabs(fetch) < NOISE_FRACTION * tc;
  s->prep_within_noise = fabs(prep) < NOISE_FRACTION * tc;
  fetch = fetch > 0 ? fetch : (isnan(fetch) ? NAN : 0); /* a negative stall is noise */
  prep = prep > 0 ? prep : (isnan(prep) ? NAN : 0);
  s->fetch_pct = 100.0 * fetch / tc;
  s->prep_pct = 100.0 * prep / tc;
  double lost = fetch + prep;
  s->fetch_share_pct = lost > 0 ? 100.0 * fetch / lost : (isnan(lost) ? NAN : 0);
  s->prep_share_pct = lost > 0 ? 100.0 * prep / lost : (isnan(lost) ? NAN : 0);
}

static void compute(ab_ctx *c) {
  double syn = rate(&c->runs[AB_SYNTHETIC]), cold = rate(&c->runs[AB_COLD]), warm = rate(&c->runs[AB_WARM]);
  ab_stalls *s = &c->s;
  s->ratio_cold = cold / syn;
  s->ratio_warm = warm / syn;
  s->lost_per_s = isnan(syn - cold) ? NAN : PB_MAX(syn - cold, 0.0);
  compute_stalls(s, syn, cold, warm);
}

/* ---------- the verdict ---------- */

static const char *bottleneck_of(const ab_run *r) {
  return r->started && r->report.version && r->report.bottleneck_stage[0] ? r->report.bottleneck_stage : "n/a";
}

/* What limits a run that real data does not slow down: the synthetic run's own bottleneck. */
static void not_input_bound(ab_ctx *c, char *v, size_t len) {
  const char *b = bottleneck_of(&c->runs[AB_SYNTHETIC]);
  double pct = 100.0 * c->s.ratio_cold;
  if (strcmp(b, "device") == 0 || strcmp(b, "n/a") == 0)
    snprintf(v, len, "not input-bound: real data reaches %.0f %% of the synthetic rate; the device is the limit",
             pct);
  else
    snprintf(v, len,
             "not input-bound: real data reaches %.0f %% of the synthetic rate; the limit is %s, which runs "
             "without real data too (the synthetic run's bottleneck)",
             pct, b);
}

/* The stage a run's analysis names, in words for the verdict. */
static void named_stage(const ab_run *r, const char *run, char *out, size_t len) {
  const char *b = bottleneck_of(r);
  if (strcmp(b, "device") == 0)
    snprintf(out, len, "the %s run's analysis names no input stage (the stall is spread over several)", run);
  else
    snprintf(out, len, "the %s run's bottleneck is %s", run, b);
}

static void input_bound(ab_ctx *c, char *v, size_t len) {
  const ab_stalls *s = &c->s;
  double pct = 100.0 * c->s.ratio_cold;
  char who[PB_NAME_LEN + 128];
  if (isnan(s->prep_pct) || isnan(s->fetch_pct)) {
    snprintf(v, len, "input-bound: real data reaches %.0f %% of the synthetic rate (no warm run to split fetch "
             "from preprocessing)", pct);
  } else if (s->prep_pct >= s->fetch_pct) {
    named_stage(&c->runs[AB_WARM], "warm", who, sizeof who);
    snprintf(v, len,
             "input-bound, mostly preprocessing (CPU): %.1f %% of each sample's time is prep stall; %s: add "
             "threads or cores (try `pipebench tune`)",
             s->prep_pct, who);
  } else {
    named_stage(&c->runs[AB_COLD], "cold", who, sizeof who);
    snprintf(v, len,
             "input-bound, mostly fetch (storage): %.1f %% of each sample's time is fetch stall; %s: faster "
             "storage, caching (a cache stage) or more read threads",
             s->fetch_pct, who);
  }
}

static void no_verdict(ab_ctx *c, char *v, size_t len) {
  int k = have_rate(&c->runs[AB_SYNTHETIC]) ? AB_COLD : AB_SYNTHETIC;
  const ab_run *r = &c->runs[k];
  snprintf(v, len, "no verdict: the %s run %s", k_label[k],
           !r->started          ? "did not run (interrupted)"
           : r->status != 0     ? "failed"
                                : "measured no throughput");
}

static void make_verdict(ab_ctx *c) {
  size_t len = sizeof c->verdict;
  if (isnan(c->s.ratio_cold)) {
    no_verdict(c, c->verdict, len);
    return;
  }
  if (c->s.ratio_cold >= NOT_INPUT_BOUND_RATIO) not_input_bound(c, c->verdict, len);
  else input_bound(c, c->verdict, len);
  size_t n = strlen(c->verdict);
  double resident = c->runs[AB_COLD].resident_pct_before;
  if (c->cold_effective || n + 1 >= len) return;
  if (isnan(resident))
    snprintf(c->verdict + n, len - n, " (the page cache could not be measured: the cold run may not be cold)");
  else
    snprintf(c->verdict + n, len - n,
             " (the cold run was not cold: %.1f %% of the dataset stayed cached, so the fetch stall is "
             "understated)",
             resident);
}

/* ---------- ab.json ---------- */

/* Decimals in ab.json, as report.json rounds (docs/METRICS.md): the figures are computed unrounded. */
enum { PER_S = 1, PCT = 2, FRAC = 4, US = 3, SEC = 3 };

static cJSON *run_json(const ab_ctx *c, int k) {
  const ab_run *r = &c->runs[k];
  if (!r->started) return cJSON_CreateNull();
  char dir[PB_PATH_LEN + 64];
  snprintf(dir, sizeof dir, "%s/%s", c->m->out_dir, k_dir[k]);
  cJSON *o = pb_multi_run_json(&r->report, r->status, dir);
  if (!o) return NULL;
  pb_multi_add_number(o, "wall_s", r->wall_s, SEC);
  pb_multi_add_number(o, "time_per_sample_us", c->s.t_us[k], US);
  pb_multi_add_number(o, "cache_resident_pct_before", r->resident_pct_before, PCT);
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
  cJSON_AddNumberToObject(o, "synced_before_eviction", (double)c->evicted.synced);
  return o;
}

static cJSON *stalls_json(const ab_stalls *s) {
  cJSON *o = cJSON_CreateObject();
  pb_multi_add_number(o, "fetch_pct", s->fetch_pct, PCT);
  pb_multi_add_number(o, "prep_pct", s->prep_pct, PCT);
  pb_multi_add_number(o, "fetch_share_pct", s->fetch_share_pct, PCT);
  pb_multi_add_number(o, "prep_share_pct", s->prep_share_pct, PCT);
  bool have = !isnan(s->fetch_pct);
  cJSON_AddBoolToObject(o, "within_noise", have && s->fetch_within_noise && s->prep_within_noise);
  cJSON_AddBoolToObject(o, "fetch_within_noise", have && s->fetch_within_noise);
  cJSON_AddBoolToObject(o, "prep_within_noise", have && s->prep_within_noise);
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
  cJSON_AddItemToObject(o, "dataset", dataset_json(c));
  cJSON_AddItemToObject(o, "runs", runs_json(c));
  cJSON *ratios = cJSON_AddObjectToObject(o, "ratios");
  pb_multi_add_number(ratios, "real_cold_over_synthetic", c->s.ratio_cold, FRAC);
  pb_multi_add_number(ratios, "real_warm_over_synthetic", c->s.ratio_warm, FRAC);
  pb_multi_add_number(o, "lost_samples_per_s", c->s.lost_per_s, PER_S);
  cJSON_AddItemToObject(o, "stalls", stalls_json(&c->s));
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
  const ab_run *r = &c->runs[k];
  bool have = r->started && r->report.version;
  numbuf a, b, d, e;
  fprintf(out, "%-18s %10s %13s %7s  %-20.20s %16s\n", k_label[k],
          fmtd(&a, "%.1f", have ? r->report.samples_per_s : NAN),
          fmtd(&b, "%.1f", have ? r->report.device_idle_pct : NAN),
          fmtd(&d, "%.1f", have ? r->report.accelerator_utilization_pct : NAN), have ? bottleneck_of(r) : "-",
          fmtd(&e, "%.1f", r->resident_pct_before));
}

static void print_stalls(const ab_ctx *c, FILE *out) {
  const ab_stalls *s = &c->s;
  numbuf a, b, d, e;
  char text[512];
  snprintf(text, sizeof text,
           "of each sample's time (real, cold): fetch %s %%, prep %s %%; of the time lost: fetch %s %%, prep %s "
           "%%%s",
           fmtd(&a, "%.1f", s->fetch_pct), fmtd(&b, "%.1f", s->prep_pct), fmtd(&d, "%.1f", s->fetch_share_pct),
           fmtd(&e, "%.1f", s->prep_share_pct),
           !isnan(s->fetch_pct) && s->fetch_within_noise && s->prep_within_noise ? " (within noise)" : "");
  wrapped(out, "stalls", text);
}

static void print_text(const ab_ctx *c, FILE *out) {
  fprintf(out, "%-18s %10s %13s %7s  %-20s %16s\n", "run", "samples/s", "device idle %", "AU %", "bottleneck",
          "cache resident %");
  for (int k = 0; k < AB_RUNS; k++) print_row(c, k, out);
  numbuf a, b, d;
  char text[512];
  snprintf(text, sizeof text, "real cold / synthetic %s, real warm / synthetic %s",
           fmtd(&a, "%.3f", c->s.ratio_cold), fmtd(&b, "%.3f", c->s.ratio_warm));
  fputc('\n', out);
  wrapped(out, "ratios", text);
  snprintf(text, sizeof text, "%s samples/s (synthetic - real cold)", fmtd(&d, "%.1f", c->s.lost_per_s));
  wrapped(out, "lost", text);
  print_stalls(c, out);
  wrapped(out, "verdict", c->verdict);
  char path[PB_PATH_LEN + 16];
  snprintf(path, sizeof path, "%s/ab.json", c->m->out_dir);
  wrapped(out, "report", path);
}

/* Writes ab.json and prints the summary; the status stays the runs' unless ab.json cannot be written. */
static int finish(ab_ctx *c) {
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
  return c->status ? c->status : rc;
}

int pb_ab(pb_multi *m) {
  ab_ctx *c = calloc(1, sizeof *c);
  pb_config *cfg = calloc(1, sizeof *cfg);
  int rc = c && cfg ? 0 : PB_EXIT_RUNTIME;
  if (rc) fprintf(stderr, "pipebench: ab: out of memory\n");
  if (!rc) rc = refuse_in_memory_dataset(m, cfg);
  if (!rc) rc = pb_multi_begin(m, NULL, 0, cfg, true);
  if (!rc) {
    c->m = m;
    c->cfg = cfg;
    rc = list_dataset(c);
  }
  if (!rc) {
    for (int k = 0; k < AB_RUNS; k++) c->runs[k].resident_pct_before = NAN;
    run_all(c);
    compute(c);
    make_verdict(c);
    rc = finish(c);
  }
  if (c) pb_file_list_free(&c->files);
  free(c);
  free(cfg);
  return rc;
}

/* ab.json and ab's table (ab_out.h); the method, every key and the verdict rules are in docs/AB.md. */
#include "ab_out.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "config.h"
#include "multirun_out.h"
#include "repeat_out.h"

static const char *const k_key[PB_AB_RUNS] = {"synthetic", "real_cold", "real_warm"}; /* ab.json keys */

#define WIDTH 99 /* the longest text line, as in the run's summary */
#define LABEL 14

const char *pb_ab_dir(int k) {
  static const char *const dir[PB_AB_RUNS] = {"synthetic", "real-cold", "real-warm"};
  return k >= 0 && k < PB_AB_RUNS ? dir[k] : "?";
}

/* ---------- ab.json ---------- */

/* Decimals in ab.json, as report.json rounds (docs/METRICS.md): the figures are computed unrounded. */
enum { PER_S = 1, PCT = 2, FRAC = 4, US = 3, SEC = 3 };

/* A boolean that only repeats can decide: null with one run of each. */
static void add_repeat_bool(cJSON *o, const char *key, bool repeated, bool v) {
  if (repeated) cJSON_AddBoolToObject(o, key, v);
  else cJSON_AddNullToObject(o, key);
}

static double total_wall_s(const pb_ab_out *c, int k) {
  double s = 0;
  for (int r = 0; r < c->run[k].nreps; r++) s += c->run[k].reps[r].wall_s;
  return s;
}

/* A run's figures: the medians over the repeats that count (so samples/s is the rate the verdict used) and
 * the median repeat's bottleneck; its status the worst of its repeats', interrupted whenever one was.
 * Returns the repeats. */
static int side_figures(const pb_ab_out *c, int k, pb_run_figures *f) {
  int n = c->run[k].nreps;
  pb_repeat_figures(c->run[k].reps, n, c->run[k].sum, f);
  if (n) f->status = c->x->side[k].status;
  f->interrupted = f->interrupted || f->status == PB_EXIT_INTERRUPTED;
  return n;
}

/* A run's figures, and with repeats its "repeats" object. */
static cJSON *run_json(const pb_ab_out *c, int k) {
  pb_run_figures f;
  int n = side_figures(c, k, &f);
  if (n == 0) return cJSON_CreateNull();
  char dir[PB_PATH_LEN + 64];
  snprintf(dir, sizeof dir, "%s/%s", c->out_dir, pb_ab_dir(k));
  cJSON *o = pb_multi_figures_json(&f, dir);
  if (!o) return NULL;
  pb_multi_add_number(o, "wall_s", total_wall_s(c, k), SEC);
  pb_multi_add_number(o, "time_per_sample_us", c->x->s.t_us[k], US);
  pb_multi_add_number(o, "cache_resident_pct_before", k == PB_AB_SYNTHETIC ? NAN : c->run[k].resident_pct, PCT);
  pb_multi_add_number(o, "read_utilization", c->x->side[k].read_utilization, FRAC);
  if (c->repeats > 1) cJSON_AddItemToObject(o, "repeats", pb_repeat_json(c->run[k].reps, n, c->run[k].sum));
  else cJSON_AddNullToObject(o, "repeats");
  return o;
}

static cJSON *runs_json(const pb_ab_out *c) {
  cJSON *o = cJSON_CreateObject();
  for (int k = 0; o && k < PB_AB_RUNS; k++) cJSON_AddItemToObject(o, k_key[k], run_json(c, k));
  return o;
}

static cJSON *dataset_json(const pb_ab_out *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "path", c->dataset_path);
  cJSON_AddNumberToObject(o, "files", (double)c->files);
  cJSON_AddNumberToObject(o, "bytes", (double)c->bytes);
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

cJSON *pb_ab_json(const pb_ab_out *c) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "command", "ab");
  cJSON_AddStringToObject(o, "version", PB_VERSION);
  cJSON_AddStringToObject(o, "config", c->config_file);
  cJSON_AddStringToObject(o, "out_dir", c->out_dir);
  cJSON_AddNumberToObject(o, "status", c->status);
  cJSON_AddBoolToObject(o, "interrupted", c->interrupted);
  cJSON_AddNumberToObject(o, "repeat", c->repeats);
  cJSON_AddItemToObject(o, "dataset", dataset_json(c));
  cJSON_AddItemToObject(o, "runs", runs_json(c));
  cJSON *ratios = cJSON_AddObjectToObject(o, "ratios");
  pb_multi_add_number(ratios, "real_cold_over_synthetic", c->x->s.ratio_cold, FRAC);
  pb_multi_add_number(ratios, "real_warm_over_synthetic", c->x->s.ratio_warm, FRAC);
  pb_multi_add_number(o, "lost_samples_per_s", c->x->s.lost_per_s, PER_S);
  cJSON_AddItemToObject(o, "stalls", stalls_json(&c->x->s));
  add_repeat_bool(o, "no_measurable_difference", c->x->s.decisive, !c->x->s.real_differs);
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

static void print_row(const pb_ab_out *c, int k, FILE *out) {
  const pb_ab_side *sd = &c->x->side[k];
  pb_run_figures f;
  bool have = side_figures(c, k, &f) > 0 && f.have;
  pb_numbuf a, b, d, e;
  fprintf(out, "%-18s %10s %13s %7s  %-20.20s %16s\n", pb_ab_label(k),
          pb_fmt_double(&a, "%.1f", have ? f.samples_per_s : NAN),
          pb_fmt_double(&b, "%.1f", have ? f.device_idle_pct : NAN),
          pb_fmt_double(&d, "%.1f", have ? f.accelerator_utilization_pct : NAN), have ? pb_ab_bottleneck(sd) : "-",
          pb_fmt_double(&e, "%.1f", k == PB_AB_SYNTHETIC ? NAN : c->run[k].resident_pct));
}

static void print_stalls(const pb_ab_out *c, FILE *out) {
  const pb_ab_stalls *s = &c->x->s;
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
static void print_intervals(const pb_ab_out *c, FILE *out) {
  if (c->repeats == 1) return;
  for (int k = 0; k < PB_AB_RUNS; k++) {
    char iv[160], text[256];
    int n = c->x->side[k].rate.n, runs = c->run[k].nreps;
    if (n == runs)
      snprintf(text, sizeof text, "%s: %s samples/s over %d repeats", pb_ab_label(k),
               pb_interval_text(&c->x->side[k].rate, 1, iv, sizeof iv), n);
    else
      snprintf(text, sizeof text, "%s: %s samples/s over %d of %d repeats (the others failed or were interrupted)",
               pb_ab_label(k), pb_interval_text(&c->x->side[k].rate, 1, iv, sizeof iv), n, runs);
    wrapped(out, k == 0 ? "median" : "", text);
  }
}

void pb_ab_print_text(FILE *out, const pb_ab_out *c) {
  fprintf(out, "%-18s %10s %13s %7s  %-20s %16s\n", "run", "samples/s", "device idle %", "AU %", "bottleneck",
          "cache resident %");
  for (int k = 0; k < PB_AB_RUNS; k++) print_row(c, k, out);
  pb_numbuf a, b, d;
  char text[512];
  snprintf(text, sizeof text, "real cold / synthetic %s, real warm / synthetic %s",
           pb_fmt_double(&a, "%.3f", c->x->s.ratio_cold), pb_fmt_double(&b, "%.3f", c->x->s.ratio_warm));
  fputc('\n', out);
  print_intervals(c, out);
  wrapped(out, "ratios", text);
  snprintf(text, sizeof text, "%s samples/s (synthetic - real cold)", pb_fmt_double(&d, "%.1f", c->x->s.lost_per_s));
  wrapped(out, "lost", text);
  print_stalls(c, out);
  wrapped(out, "verdict", c->verdict);
  char path[PB_PATH_LEN + 16];
  snprintf(path, sizeof path, "%s/ab.json", c->out_dir);
  wrapped(out, "report", path);
}

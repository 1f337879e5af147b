/* Unit tests for ab's numbers and verdict (src/analysis/ab_verdict.c: the stalls, which differences the
 * intervals allow to claim, the verdict's words) and for what ab writes (src/reports/ab_out.c: ab.json and the
 * table), from results made by hand.
 *
 * The hand-worked case: synthetic 1000 samples/s, real cold 500, real warm 800.  Time per sample 1000, 2000 and
 * 1250 us; the cold run loses 1000 us a sample, of which fetch (cold - warm) 750 us and prep (warm - synthetic)
 * 250 us: 37.5 % and 12.5 % of the cold run's 2000 us, 75 % and 25 % of the loss. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first */
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ab_out.h"
#include "ab_verdict.h"
#include "unit_util.h"

static void assert_close(double got, double want, double tol) {
  if (!(fabs(got - want) <= tol)) fail_msg("got %.12g, expected %.12g (within %.3g)", got, want, tol);
}

/* ---------- ab's verdict ---------- */

/* A side of ab measured at these rates (one value: no interval), named bottleneck and read utilization. */
static pb_ab_side side(const double *rates, int n, const char *bottleneck, double read_utilization) {
  pb_ab_side s = {.started = true, .read_utilization = read_utilization};
  pb_interval_of(rates, n, &s.rate);
  snprintf(s.bottleneck, sizeof s.bottleneck, "%s", bottleneck);
  return s;
}

static void verdict(pb_ab_numbers *x, char *v, size_t len) {
  x->cold_effective = true;
  pb_ab_compute(x);
  pb_ab_verdict(x, v, len);
}

static void expect(const char *v, const char *has, const char *lacks) {
  if (has && !strstr(v, has)) fail_msg("verdict lacks \"%s\": %s", has, v);
  if (lacks && strstr(v, lacks)) fail_msg("verdict has \"%s\": %s", lacks, v);
}

/* The cold run slower than the warm one while its read stage was 2 % busy: storage is not blamed. */
static void test_ab_idle_read_is_not_storage(void **state) {
  char v[1024];
  pb_ab_numbers x = {.side = {side((const double[]){1000}, 1, "device", NAN),
                              side((const double[]){500}, 1, "augment", 0.02),
                              side((const double[]){900}, 1, "augment", 0.02)}};
  verdict(&x, v, sizeof v);
  expect(v, "not on storage", "mostly fetch");
  expect(v, "busy only 2 %", NULL);
  expect(v, "the cold run's bottleneck is augment", NULL);
  expect(v, "for another reason", NULL); /* 44 % of a sample's time: well outside the 3 % noise */
  /* the same numbers with a busy read stage: storage it is */
  x.side[PB_AB_COLD].read_utilization = 0.9;
  verdict(&x, v, sizeof v);
  expect(v, "input-bound, mostly fetch (storage)", "not on storage");
  /* no read stage in the report: the split alone decides, as before */
  x.side[PB_AB_COLD].read_utilization = NAN;
  verdict(&x, v, sizeof v);
  expect(v, "mostly fetch (storage)", NULL);
}

/* Five repeats each: 93.75 % intervals, which decide. */
static void test_ab_repeats(void **state) {
  char v[1024];
  /* real (cold) and synthetic overlap: nothing measurable to name, however the medians lie */
  pb_ab_numbers x = {.repeats = 5,
                     .side = {side((const double[]){1000, 1100, 800, 1050, 950}, 5, "device", NAN),
                              side((const double[]){700, 820, 900, 760, 780}, 5, "read", 0.9),
                              side((const double[]){950, 1000, 1050, 990, 1010}, 5, "device", 0.1)}};
  verdict(&x, v, sizeof v);
  expect(v, "no measurable difference", "input-bound,");
  assert_true(x.s.repeated);
  assert_true(x.s.decisive);
  assert_false(x.s.real_differs);
  /* cold measurably below synthetic, the warm run overlapping both: no split to claim */
  x.side[PB_AB_SYNTHETIC] = side((const double[]){1000, 1010, 1020, 1005, 1015}, 5, "device", NAN);
  x.side[PB_AB_COLD] = side((const double[]){500, 510, 520, 505, 515}, 5, "read", 0.9);
  x.side[PB_AB_WARM] = side((const double[]){515, 800, 1005, 700, 900}, 5, "decode", 0.1);
  verdict(&x, v, sizeof v);
  expect(v, "no measurable difference splits it", "mostly");
  expect(v, NULL, "too few");
  /* warm measurably between them, nearer synthetic: fetch, and storage (read 90 % busy) */
  x.side[PB_AB_WARM] = side((const double[]){900, 910, 920, 905, 915}, 5, "decode", 0.1);
  verdict(&x, v, sizeof v);
  expect(v, "mostly fetch (storage)", NULL);
  assert_true(x.s.fetch_measurable);
  assert_true(x.s.prep_measurable);
  /* warm overlapping cold: only the prep stall is measurable, so preprocessing it is */
  x.side[PB_AB_WARM] = side((const double[]){505, 530, 560, 540, 550}, 5, "decode", 0.1);
  verdict(&x, v, sizeof v);
  expect(v, "mostly preprocessing", NULL);
  expect(v, "the warm run's bottleneck is decode", NULL);
}

/* Three repeats each (75 %): no difference is claimed measurable or not; the verdict is the medians', as
 * with one run each, and says the repeats were too few. */
static void test_ab_too_few_repeats(void **state) {
  char v[1024];
  pb_ab_numbers x = {.repeats = 3,
                     .side = {side((const double[]){1000, 1010, 1020}, 3, "device", NAN),
                              side((const double[]){500, 510, 520}, 3, "read", 0.9),
                              side((const double[]){900, 910, 920}, 3, "decode", 0.1)}};
  verdict(&x, v, sizeof v);
  assert_true(x.s.repeated);
  assert_false(x.s.decisive);
  assert_false(x.s.real_differs);
  assert_false(x.s.fetch_measurable);
  assert_false(x.s.prep_measurable);
  expect(v, "mostly fetch (storage)", "no measurable difference");
  expect(v, "too few repeats to tell (coverage 75.0 %", NULL);
  /* apart by far, yet the intervals cannot say so: no "no measurable difference" either way */
  x.side[PB_AB_COLD] = side((const double[]){990, 1000, 1030}, 3, "device", 0.9);
  verdict(&x, v, sizeof v);
  expect(v, "not input-bound", "no measurable difference");
  expect(v, "too few repeats to tell", NULL);
  /* one run each: no note */
  x = (pb_ab_numbers){
      .repeats = 1,
      .side = {side((const double[]){1000}, 1, "device", NAN), side((const double[]){500}, 1, "read", 0.9),
               side((const double[]){900}, 1, "decode", 0.1)}};
  verdict(&x, v, sizeof v);
  expect(v, "mostly fetch (storage)", "too few");
}

/* The stalls split the time real data loses: a warm run slower than the cold one is noise, and prep_pct
 * never passes 100 (it did: T_W - T_S over T_C with T_W > 2 T_C). */
static void test_ab_stalls_clamped(void **state) {
  char v[1024];
  pb_ab_numbers x = {.side = {side((const double[]){1000}, 1, "device", NAN),
                              side((const double[]){500}, 1, "read", 0.9),
                              side((const double[]){200}, 1, "decode", 0.1)}};
  verdict(&x, v, sizeof v);
  assert_close(x.s.fetch_pct, 0, 1e-9);
  assert_close(x.s.prep_pct, 50, 1e-9); /* (T_C - T_S) / T_C: all of the loss, no more */
  assert_close(x.s.fetch_pct + x.s.prep_pct, 100 * (1 - 500.0 / 1000), 1e-9);
  assert_false(x.s.fetch_within_noise); /* taken before the clamping */
  /* warm faster than synthetic: all of the loss is fetch */
  x.side[PB_AB_WARM] = side((const double[]){1500}, 1, "decode", 0.1);
  verdict(&x, v, sizeof v);
  assert_close(x.s.fetch_pct, 50, 1e-9);
  assert_close(x.s.prep_pct, 0, 1e-9);
  /* nothing lost (cold faster than synthetic): no stall */
  x.side[PB_AB_COLD] = side((const double[]){1200}, 1, "read", 0.9);
  x.side[PB_AB_WARM] = side((const double[]){100}, 1, "decode", 0.1);
  verdict(&x, v, sizeof v);
  assert_close(x.s.fetch_pct, 0, 0);
  assert_close(x.s.prep_pct, 0, 0);
  for (int k = 0; k < 50; k++) { /* any rates: each stall within 0..100 and their sum the loss */
    double syn = 100 + 37 * k % 1000, cold = 50 + 91 * k % 1300, warm = 20 + 53 * k % 1700;
    x.side[PB_AB_SYNTHETIC] = side(&syn, 1, "device", NAN);
    x.side[PB_AB_COLD] = side(&cold, 1, "read", 0.9);
    x.side[PB_AB_WARM] = side(&warm, 1, "decode", 0.1);
    verdict(&x, v, sizeof v);
    assert_double_between(x.s.fetch_pct, 0, 100);
    assert_double_between(x.s.prep_pct, 0, 100);
    assert_close(x.s.fetch_pct + x.s.prep_pct, cold < syn ? 100 * (1 - cold / syn) : 0, 1e-9);
  }
}

/* An interrupted side: no rate counts, and the verdict says it was interrupted. */
static void test_ab_interrupted_side(void **state) {
  char v[1024];
  pb_ab_numbers x = {.side = {side((const double[]){1000}, 1, "device", NAN), side(NULL, 0, "", NAN)}};
  x.side[PB_AB_COLD].status = 130;
  verdict(&x, v, sizeof v);
  expect(v, "no verdict: the real (cold cache) run was interrupted", NULL);
}

/* ---------- the numbers, worked by hand ---------- */

static void test_ab_compute_hand_worked(void **state) {
  char v[1024];
  pb_ab_numbers x = {.side = {side((const double[]){1000}, 1, "device", NAN),
                              side((const double[]){500}, 1, "read", 0.9),
                              side((const double[]){800}, 1, "decode", 0.5)}};
  verdict(&x, v, sizeof v);
  assert_close(x.s.ratio_cold, 0.5, 1e-12);
  assert_close(x.s.ratio_warm, 0.8, 1e-12);
  assert_close(x.s.lost_per_s, 500, 1e-9);
  assert_close(x.s.t_us[PB_AB_SYNTHETIC], 1000, 1e-9);
  assert_close(x.s.t_us[PB_AB_COLD], 2000, 1e-9);
  assert_close(x.s.t_us[PB_AB_WARM], 1250, 1e-9);
  assert_close(x.s.fetch_pct, 37.5, 1e-9);
  assert_close(x.s.prep_pct, 12.5, 1e-9);
  assert_close(x.s.fetch_share_pct, 75, 1e-9);
  assert_close(x.s.prep_share_pct, 25, 1e-9);
  assert_false(x.s.fetch_within_noise); /* 750 us against 3 % of 2000 us = 60 us */
  assert_false(x.s.prep_within_noise);
  assert_false(x.s.repeated); /* one run each: no interval */
  assert_string_equal(v,
                      "input-bound, mostly fetch (storage): 37.5 % of each sample's time is fetch stall; the cold "
                      "run's bottleneck is read: faster storage, caching (a cache stage) or more read threads");
  /* the warm run nearer the cold one: preprocessing, and the warm run's bottleneck named */
  x.side[PB_AB_WARM] = side((const double[]){550}, 1, "decode", 0.5);
  verdict(&x, v, sizeof v);
  assert_close(x.s.prep_pct, 100.0 * (1e6 / 550 - 1000) / 2000, 1e-9);
  assert_string_equal(v,
                      "input-bound, mostly preprocessing (CPU): 40.9 % of each sample's time is prep stall; the warm "
                      "run's bottleneck is decode: add threads or cores (try `pipebench tune`)");
  /* the warm run's analysis naming the device: no input stage to name */
  snprintf(x.side[PB_AB_WARM].bottleneck, sizeof x.side[PB_AB_WARM].bottleneck, "device");
  verdict(&x, v, sizeof v);
  assert_non_null(strstr(v, "the warm run's analysis names no input stage (the stall is spread over several): add"));
}

/* Three equal rates: nothing lost, both stalls 0 and within noise, real data at 100 %. */
static void test_ab_equal_rates(void **state) {
  char v[1024];
  pb_ab_numbers x = {.side = {side((const double[]){700}, 1, "device", NAN),
                              side((const double[]){700}, 1, "read", 0.2),
                              side((const double[]){700}, 1, "decode", 0.2)}};
  verdict(&x, v, sizeof v);
  assert_close(x.s.ratio_cold, 1, 0);
  assert_close(x.s.lost_per_s, 0, 0);
  assert_close(x.s.fetch_pct, 0, 0);
  assert_close(x.s.prep_pct, 0, 0);
  assert_close(x.s.fetch_share_pct, 0, 0); /* no loss: 0, not 0/0 */
  assert_close(x.s.prep_share_pct, 0, 0);
  assert_true(x.s.fetch_within_noise);
  assert_true(x.s.prep_within_noise);
  assert_string_equal(v, "not input-bound: real data reaches 100 % of the synthetic rate; the device is the limit");
  /* the synthetic run limited by a stage: that stage is the limit */
  snprintf(x.side[PB_AB_SYNTHETIC].bottleneck, sizeof x.side[PB_AB_SYNTHETIC].bottleneck, "augment");
  verdict(&x, v, sizeof v);
  assert_string_equal(v,
                      "not input-bound: real data reaches 100 % of the synthetic rate; the limit is augment, which "
                      "runs without real data too (the synthetic run's bottleneck)");
}

/* No rate on a side (n = 0): NAN figures and "no verdict" saying why. */
static void test_ab_no_verdict(void **state) {
  char v[1024];
  pb_ab_numbers x = {.side = {side(NULL, 0, "", NAN), side(NULL, 0, "", NAN), side(NULL, 0, "", NAN)}};
  x.side[PB_AB_SYNTHETIC].started = false;
  verdict(&x, v, sizeof v);
  assert_nan(x.s.ratio_cold);
  assert_nan(x.s.lost_per_s);
  assert_nan(x.s.fetch_pct);
  assert_nan(x.s.fetch_share_pct);
  assert_string_equal(v, "no verdict: the synthetic run did not run (interrupted)");
  x.side[PB_AB_SYNTHETIC].started = true;
  x.side[PB_AB_SYNTHETIC].status = 1;
  verdict(&x, v, sizeof v);
  assert_string_equal(v, "no verdict: the synthetic run failed");
  x.side[PB_AB_SYNTHETIC].status = 0;
  verdict(&x, v, sizeof v);
  assert_string_equal(v, "no verdict: the synthetic run measured no throughput");
  /* synthetic measured: the cold side is the one without a rate */
  x.side[PB_AB_SYNTHETIC] = side((const double[]){1000}, 1, "device", NAN);
  verdict(&x, v, sizeof v);
  assert_string_equal(v, "no verdict: the real (cold cache) run measured no throughput");
  /* no warm rate: input-bound without a split */
  x.side[PB_AB_COLD] = side((const double[]){400}, 1, "read", 0.9);
  verdict(&x, v, sizeof v);
  assert_string_equal(v,
                      "input-bound: real data reaches 40 % of the synthetic rate (no warm run to split fetch from "
                      "preprocessing)");
}

/* A cold run that was not cold says so after the verdict, with the share or that it was not measured. */
static void test_ab_not_cold_note(void **state) {
  char v[1024];
  pb_ab_numbers x = {.side = {side((const double[]){1000}, 1, "device", NAN),
                              side((const double[]){990}, 1, "read", 0.9),
                              side((const double[]){1000}, 1, "decode", 0.1)}};
  pb_ab_compute(&x);
  x.cold_effective = false;
  x.cold_resident_pct = 42.25;
  pb_ab_verdict(&x, v, sizeof v);
  assert_string_equal(v,
                      "not input-bound: real data reaches 99 % of the synthetic rate; the device is the limit (the "
                      "cold run was not cold: 42.2 % of the dataset stayed cached, so the fetch stall is "
                      "understated)");
  x.cold_resident_pct = NAN;
  pb_ab_verdict(&x, v, sizeof v);
  assert_non_null(strstr(v, "limit (the page cache could not be measured: the cold run may not be cold)"));
  /* a buffer too small for the note: cut, never overrun */
  char small[40];
  pb_ab_verdict(&x, small, sizeof small);
  assert_int_equal(strlen(small), sizeof small - 1);
}

static void test_ab_worse_status(void **state) {
  assert_int_equal(pb_ab_worse_status(0, 0), 0);
  assert_int_equal(pb_ab_worse_status(0, 1), 1);
  assert_int_equal(pb_ab_worse_status(2, 1), 2); /* a refused config before a failure */
  assert_int_equal(pb_ab_worse_status(1, 2), 2);
  assert_int_equal(pb_ab_worse_status(130, 2), 130); /* interrupted before everything */
  assert_int_equal(pb_ab_worse_status(0, 130), 130);
  assert_int_equal(pb_ab_worse_status(0, 7), 7); /* another status ranks as a failure */
  assert_int_equal(pb_ab_worse_status(7, 1), 7); /* the first of two failures */
  assert_int_equal(pb_ab_worse_status(2, 7), 2);
}

static void test_ab_counts(void **state) {
  pb_run_figures f = {.status = 0, .have = true, .samples_per_s = 10};
  assert_true(pb_ab_counts(true, &f));
  assert_false(pb_ab_counts(false, &f)); /* never started */
  f.status = 130;
  assert_true(pb_ab_counts(true, &f)); /* measured until the signal */
  f.status = 1;
  assert_false(pb_ab_counts(true, &f)); /* a failed run's report does not count */
  f.status = 0;
  f.samples_per_s = 0;
  assert_false(pb_ab_counts(true, &f));
  f.samples_per_s = NAN;
  assert_false(pb_ab_counts(true, &f));
  f.samples_per_s = 10;
  f.have = false;
  assert_false(pb_ab_counts(true, &f));
  assert_string_equal(pb_ab_label(PB_AB_COLD), "real (cold cache)");
  assert_string_equal(pb_ab_label(3), "?");
}

/* ---------- what ab writes ---------- */

typedef struct ab_case {
  pb_run_figures figs[PB_AB_RUNS];
  pb_repeat_summary sum[PB_AB_RUNS];
  pb_ab_numbers x;
  char verdict[1024];
  pb_ab_out out;
} ab_case;

static pb_run_figures figures(double rate, double idle, const char *bottleneck, double wall_s) {
  pb_run_figures f = {.status = 0,
                      .have = true,
                      .samples_per_s = rate,
                      .batches_per_s = rate / 32,
                      .device_idle_pct = idle,
                      .accelerator_utilization_pct = 100 - idle,
                      .input_bound_pct = idle,
                      .classification = "input-bound",
                      .wall_s = wall_s};
  snprintf(f.bottleneck, sizeof f.bottleneck, "%s", bottleneck);
  return f;
}

/* The hand-worked case, one run each, as the command would hand it over. */
static void make_case(ab_case *c) {
  memset(c, 0, sizeof *c);
  c->figs[PB_AB_SYNTHETIC] = figures(1000, 5, "device", 2);
  c->figs[PB_AB_COLD] = figures(500, 50, "read", 4);
  c->figs[PB_AB_WARM] = figures(800, 20, "decode", 2.5);
  static const double read_utilization[] = {NAN, 0.9, 0.5}, resident[] = {NAN, 3.5, 99.5};
  for (int k = 0; k < PB_AB_RUNS; k++) {
    pb_repeat_summarize(&c->figs[k], 1, &c->sum[k]);
    c->x.side[k] = side(&c->figs[k].samples_per_s, 1, c->figs[k].bottleneck, read_utilization[k]);
    c->out.run[k] = (pb_ab_run_out){1, &c->figs[k], &c->sum[k], resident[k]};
  }
  c->x.repeats = 1;
  verdict(&c->x, c->verdict, sizeof c->verdict);
  c->out.config_file = "ab.json-config";
  c->out.out_dir = "/out/ab";
  c->out.repeats = 1;
  c->out.dataset_path = "/data/x";
  c->out.files = 3;
  c->out.bytes = 3000;
  c->out.x = &c->x;
  c->out.verdict = c->verdict;
  c->out.cold_effective = c->out.warm_effective = true;
}

static void test_ab_text(void **state) {
  ab_case *c = malloc(sizeof *c);
  make_case(c);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  pb_ab_print_text(f, &c->out);
  fclose(f);
  assert_string_equal(
      text,
      "run                 samples/s device idle %    AU %  bottleneck           cache resident %\n"
      "synthetic              1000.0           5.0    95.0  device                            n/a\n"
      "real (cold cache)       500.0          50.0    50.0  read                              3.5\n"
      "real (warm cache)       800.0          20.0    80.0  decode                           99.5\n"
      "\n"
      "ratios        real cold / synthetic 0.500, real warm / synthetic 0.800\n"
      "lost          500.0 samples/s (synthetic - real cold)\n"
      "stalls        of each sample's time (real, cold): fetch 37.5 %, prep 12.5 %; of the time lost:\n"
      "              fetch 75.0 %, prep 25.0 %\n"
      "verdict       input-bound, mostly fetch (storage): 37.5 % of each sample's time is fetch stall; the\n"
      "              cold run's bottleneck is read: faster storage, caching (a cache stage) or more read\n"
      "              threads\n"
      "report        /out/ab/ab.json\n");
  free(text);
  free(c);
}

static double num(const cJSON *o, const char *path) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", path);
  const cJSON *j = o;
  for (char *save = NULL, *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save))
    j = cJSON_GetObjectItemCaseSensitive(j, k);
  if (!cJSON_IsNumber(j)) fail_msg("%s is not a number", path);
  return j->valuedouble;
}

static void test_ab_json(void **state) {
  ab_case *c = malloc(sizeof *c);
  make_case(c);
  cJSON *j = pb_ab_json(&c->out);
  assert_non_null(j);
  static const char *const keys[] = {"command",
                                     "version",
                                     "config",
                                     "out_dir",
                                     "status",
                                     "interrupted",
                                     "repeat",
                                     "dataset",
                                     "runs",
                                     "ratios",
                                     "lost_samples_per_s",
                                     "stalls",
                                     "no_measurable_difference",
                                     "verdict",
                                     "cold_cache_effective",
                                     "warm_cache_effective"};
  const cJSON *item = j->child;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++, item = item->next) {
    assert_non_null(item);
    assert_string_equal(item->string, keys[i]);
  }
  assert_null(item);
  assert_close(num(j, "ratios.real_cold_over_synthetic"), 0.5, 0);
  assert_close(num(j, "ratios.real_warm_over_synthetic"), 0.8, 0);
  assert_close(num(j, "lost_samples_per_s"), 500, 0);
  assert_close(num(j, "stalls.fetch_pct"), 37.5, 0);
  assert_close(num(j, "stalls.prep_share_pct"), 25, 0);
  assert_close(num(j, "runs.real_cold.time_per_sample_us"), 2000, 0);
  assert_close(num(j, "runs.real_cold.cache_resident_pct_before"), 3.5, 0);
  assert_close(num(j, "runs.real_warm.wall_s"), 2.5, 0);
  assert_close(num(j, "runs.real_cold.read_utilization"), 0.9, 0);
  assert_close(num(j, "dataset.bytes"), 3000, 0);
  const cJSON *runs = cJSON_GetObjectItem(j, "runs"), *syn = cJSON_GetObjectItem(runs, "synthetic");
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(syn, "cache_resident_pct_before")));
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(syn, "repeats"))); /* one run each */
  assert_string_equal(cJSON_GetObjectItem(syn, "out_dir")->valuestring, "/out/ab/synthetic");
  const cJSON *stalls = cJSON_GetObjectItem(j, "stalls");
  assert_true(cJSON_IsFalse(cJSON_GetObjectItem(stalls, "within_noise")));
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(stalls, "fetch_measurable"))); /* only repeats decide */
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "no_measurable_difference")));
  assert_string_equal(cJSON_GetObjectItem(j, "verdict")->valuestring, c->verdict);
  cJSON_Delete(j);
  /* a run that never started is null */
  c->out.run[PB_AB_WARM].nreps = 0;
  j = pb_ab_json(&c->out);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "runs"), "real_warm")));
  cJSON_Delete(j);
  free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ab_idle_read_is_not_storage),
      cmocka_unit_test(test_ab_repeats),
      cmocka_unit_test(test_ab_too_few_repeats),
      cmocka_unit_test(test_ab_stalls_clamped),
      cmocka_unit_test(test_ab_interrupted_side),
      cmocka_unit_test(test_ab_compute_hand_worked),
      cmocka_unit_test(test_ab_equal_rates),
      cmocka_unit_test(test_ab_no_verdict),
      cmocka_unit_test(test_ab_not_cold_note),
      cmocka_unit_test(test_ab_worse_status),
      cmocka_unit_test(test_ab_counts),
      cmocka_unit_test(test_ab_text),
      cmocka_unit_test(test_ab_json),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

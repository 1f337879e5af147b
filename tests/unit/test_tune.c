/* Unit tests for tune's search arithmetic (src/cli/tune_search.c): the knobs' values and steps, the --set
 * lists, the base point, the threads a stage needs with the 10 % headroom, the cores rule, the allocation
 * of threads (sizing, then trimming the stage with the most slack), the pick among candidates, the error
 * summary and the trial limit; a trial's judgments (src/analysis/tune_result.c: measured rate, prediction
 * error, "up to" reached) and what tune writes of a search (src/reports/tune_out.c: the summary's exact lines
 * and tune.json's keys) for a search of two trials whose gain was not re-measured.  Worked by hand; the rates use
 * powers of two so that the slack ties are exact (decode at 1/64 s and map at 1/128 s per sample and thread, for 1024
 * samples/s). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "report.h"
#include "tune_out.h"
#include "tune_result.h"
#include "tune_search.h"
#include "unit_util.h"

static pb_tune_knob range_knob(void) { return (pb_tune_knob){.nvalues = 0}; }

static pb_tune_knob listed_knob(const int *values, int n) {
  pb_tune_knob k = {.nvalues = n};
  memcpy(k.values, values, sizeof values[0] * (size_t)n);
  return k;
}

static const int k_powers[] = {1, 2, 4, 8, 16};

static void values_of_a_range(void **state) {
  (void)state;
  pb_tune_knob k = range_knob();
  assert_int_equal(pb_tune_knob_min(&k), 1);
  assert_int_equal(pb_tune_knob_max(&k), 256);
  assert_int_equal(pb_tune_snap_up(&k, 2.3), 3);
  assert_int_equal(pb_tune_snap_up(&k, 3.0000000001), 3); /* within 1e-9: equal */
  assert_int_equal(pb_tune_snap_up(&k, 0.5), 1);
  assert_int_equal(pb_tune_snap_up(&k, 300), 256);
  assert_int_equal(pb_tune_snap_down(&k, 2.7), 2);
  assert_int_equal(pb_tune_snap_down(&k, 2.9999999999), 3);
  assert_int_equal(pb_tune_snap_down(&k, 0), 1);
  assert_int_equal(pb_tune_snap_down(&k, 999), 256);
  assert_int_equal(pb_tune_step_up(&k, 5), 6);
  assert_int_equal(pb_tune_step_up(&k, 256), 256); /* no value above: stays */
  assert_int_equal(pb_tune_step_down(&k, 5), 4);
  assert_int_equal(pb_tune_step_down(&k, 1), 1);
}

static void values_of_a_list(void **state) {
  (void)state;
  pb_tune_knob k = listed_knob(k_powers, 5);
  assert_int_equal(pb_tune_knob_min(&k), 1);
  assert_int_equal(pb_tune_knob_max(&k), 16);
  assert_int_equal(pb_tune_snap_up(&k, 3), 4);
  assert_int_equal(pb_tune_snap_up(&k, 4), 4);
  assert_int_equal(pb_tune_snap_up(&k, 17), 16); /* none is >=: the largest */
  assert_int_equal(pb_tune_snap_up(&k, 0.5), 1);
  assert_int_equal(pb_tune_snap_down(&k, 3), 2);
  assert_int_equal(pb_tune_snap_down(&k, 0.5), 1); /* none is <=: the smallest */
  assert_int_equal(pb_tune_snap_down(&k, 100), 16);
  assert_int_equal(pb_tune_step_up(&k, 4), 8);
  assert_int_equal(pb_tune_step_up(&k, 3), 4); /* off the list: the next value on it */
  assert_int_equal(pb_tune_step_up(&k, 16), 16);
  assert_int_equal(pb_tune_step_down(&k, 4), 2);
  assert_int_equal(pb_tune_step_down(&k, 3), 2);
  assert_int_equal(pb_tune_step_down(&k, 1), 1);
}

static void set_lists(void **state) {
  (void)state;
  pb_tune_knob k = range_knob();
  pb_err err;
  const char texts[][64] = {"8", "2", "4", "2", "16"};
  assert_int_equal(pb_tune_list_values(&k, "stages.decode.threads", texts, 5, &err), 0);
  assert_int_equal(k.nvalues, 4); /* sorted, the repeat dropped */
  const int want[] = {2, 4, 8, 16};
  for (int i = 0; i < 4; i++) assert_int_equal(k.values[i], want[i]);
  const char *const bad[] = {"0", "3x", "1025", "-2", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pb_tune_knob b = range_knob();
    char one[1][64];
    snprintf(one[0], sizeof one[0], "%s", bad[i]);
    assert_int_equal(pb_tune_list_values(&b, "stages.decode.threads", (const char(*)[64])one, 1, &err), -EINVAL);
    char expect[200];
    snprintf(expect, sizeof expect,
             "tune: --set stages.decode.threads: \"%s\" is not a count (expected integers from 1 to 1024)", bad[i]);
    assert_string_equal(err.msg, expect);
  }
}

static void base_values(void **state) {
  (void)state;
  const int v[] = {2, 4, 8};
  pb_tune_knob k = listed_knob(v, 3), r = range_knob();
  assert_int_equal(pb_tune_base_value(&k, 1), 2); /* below the list: its smallest */
  assert_int_equal(pb_tune_base_value(&k, 5), 4); /* between: the value below */
  assert_int_equal(pb_tune_base_value(&k, 8), 8);
  assert_int_equal(pb_tune_base_value(&k, 100), 8);
  assert_int_equal(pb_tune_base_value(&r, 3), 3);
  assert_int_equal(pb_tune_base_value(&r, 300), 256);
}

static void threads_for_a_rate(void **state) {
  (void)state;
  pb_tune_knob r = range_knob(), l = listed_knob(k_powers, 5);
  double ts = 1.0 / 64;                                       /* one thread: 64 samples/s */
  assert_int_equal(pb_tune_threads_needed(&r, ts, 160), 3);   /* needs 2.5; 2.75 with headroom */
  assert_int_equal(pb_tune_threads_needed(&r, ts, 192), 4);   /* needs exactly 3; 3.3 with headroom */
  assert_int_equal(pb_tune_threads_needed(&l, ts, 256), 4);   /* needs 4: listed 4 reaches it, not 8 for 4.4 */
  assert_int_equal(pb_tune_threads_needed(&l, ts, 240), 4);   /* needs 3.75: 4 reaches it */
  assert_int_equal(pb_tune_threads_needed(&l, ts, 288), 8);   /* needs 4.5: 8 */
  assert_int_equal(pb_tune_threads_needed(&l, ts, 2048), 16); /* needs 32: the largest listed */
  assert_int_equal(pb_tune_threads_needed(&l, ts, 6.4), 1);   /* needs 0.1: at least one thread, listed 1 */
  assert_int_equal(pb_tune_threads_needed(&r, ts, 6.4), 2);   /* the range: 1 x 1.1 snaps up to 2 */
  assert_int_equal(pb_tune_threads_needed(&r, 0, 1e6), 2);    /* no per-thread cost known: one, with headroom */
}

/* Knobs: decode threads (CPU-bound), map threads (CPU-bound), read threads (waits on storage), prefetch
 * depth. */
static void pipeline(pb_tune_knob *knobs, pb_tune_rates *r) {
  for (int k = 0; k < 4; k++) knobs[k] = range_knob();
  knobs[3].depth = true;
  memset(r, 0, sizeof *r);
  const double thread_s[] = {1.0 / 64, 1.0 / 128, 1.0 / 1024, 0};
  for (int k = 0; k < 4; k++) {
    r->thread_s[k] = thread_s[k];
    r->bw_cap[k] = INFINITY;
    r->valid[k] = true;
    r->cpu_bound[k] = k < 2;
  }
}

static void cores_rule(void **state) {
  (void)state;
  pb_tune_knob knobs[4];
  pb_tune_rates r;
  pipeline(knobs, &r);
  /* 4 cores, 2 CPU-bound stages: up to 2 x 4 + 2 = 10 of their threads; read's and the depth do not count */
  pb_tune_point p = {.v = {6, 4, 50, 64}};
  assert_true(pb_tune_within_cores(knobs, 4, &r, &p, 4));
  p.v[1] = 5;
  assert_false(pb_tune_within_cores(knobs, 4, &r, &p, 4));
  r.valid[1] = false; /* the model does not know map: only decode counts, 6 <= 8 + 1 */
  assert_true(pb_tune_within_cores(knobs, 4, &r, &p, 4));
  assert_double_cmp(pb_tune_stage_cap(&r, 0, 3), ==, 192.0);
  r.bw_cap[2] = 500; /* read: 10 threads would give 10240/s, the bandwidth 500 */
  assert_double_cmp(pb_tune_stage_cap(&r, 2, 10), ==, 500.0);
  assert_true(isinf(pb_tune_stage_cap(&r, 3, 4))); /* no cost known: no limit */
}

static void allocation(void **state) {
  (void)state;
  pb_tune_knob knobs[4];
  pb_tune_rates r;
  pipeline(knobs, &r);
  pb_tune_point from = {.v = {1, 1, 1, 8}}, out;
  /* 1024/s: decode needs 16 (18 with headroom), map 8 (9), read 1 (2); plenty of cores: as sized */
  pb_tune_allocate(knobs, 4, &r, 64, 1024, &from, &out);
  assert_int_equal(out.v[0], 18);
  assert_int_equal(out.v[1], 9);
  assert_int_equal(out.v[2], 2);
  assert_int_equal(out.v[3], 8); /* a depth is not sized */
  /* 2 cores: 6 CPU-bound threads at most; trimmed one at a time on the most slack (ties: the first knob),
   * which keeps decode's share twice map's */
  pb_tune_allocate(knobs, 4, &r, 2, 1024, &from, &out);
  assert_int_equal(out.v[0], 4);
  assert_int_equal(out.v[1], 2);
  assert_int_equal(out.v[2], 2); /* read waits on storage: not trimmed */
  /* lists that cannot go lower: trimmed as far as they go, and left over the rule */
  const int dec[] = {8, 16}, map[] = {8};
  knobs[0] = listed_knob(dec, 2), knobs[1] = listed_knob(map, 1);
  pb_tune_allocate(knobs, 4, &r, 2, 1024, &from, &out);
  assert_int_equal(out.v[0], 8);
  assert_int_equal(out.v[1], 8);
  assert_false(pb_tune_within_cores(knobs, 4, &r, &out, 2));
}

static void picking(void **state) {
  (void)state;
  pb_tune_candidate c[5] = {{.predicted = 100},
                            {.predicted = NAN},
                            {.predicted = 150, .explore = true},
                            {.predicted = 150},
                            {.predicted = 120}};
  assert_int_equal(pb_tune_pick(c, 5, false), 3); /* a step around is not picked unless exploring */
  assert_int_equal(pb_tune_pick(c, 5, true), 2);  /* exploring: the first of equals */
  assert_int_equal(pb_tune_pick(c, 2, false), 0);
  assert_int_equal(pb_tune_pick(&c[1], 1, true), -1); /* no prediction: never */
  assert_int_equal(pb_tune_pick(c, 0, true), -1);
}

static void error_summary(void **state) {
  (void)state;
  double odd[] = {-10, 5, 3}, even[] = {-4, 2, 8, -6}, median, max;
  pb_tune_abs_median_max(odd, 3, &median, &max);
  assert_double_cmp(median, ==, 5.0);
  assert_double_cmp(max, ==, 10.0);
  pb_tune_abs_median_max(even, 4, &median, &max);
  assert_double_cmp(median, ==, 5.0); /* (4 + 6) / 2 */
  assert_double_cmp(max, ==, 8.0);
  pb_tune_abs_median_max(even, 0, &median, &max);
  assert_nan(median);
  assert_nan(max);
}

static void trial_limit(void **state) {
  (void)state;
  assert_int_equal(pb_tune_max_trials(7, true, 24, 12, 256), 7); /* given */
  assert_int_equal(pb_tune_max_trials(0, true, 24, 12, 256), 6); /* a quarter of the listed space */
  assert_int_equal(pb_tune_max_trials(0, true, 4, 12, 256), 2);  /* at least 2 */
  assert_int_equal(pb_tune_max_trials(0, false, 0, 12, 256), 12);
  assert_int_equal(pb_tune_max_trials(300, false, 0, 12, 256), 256);
  assert_int_equal(pb_tune_max_trials(0, true, 10000, 12, 256), 256);
}

/* ---------- a search's result, and what tune writes of it ---------- */

/* A trial on `threads` threads that ran once and measured `rate` samples/s (NAN: failed, exit 1). */
typedef struct fake_trial {
  pb_tune_trial tr;
  pb_report rep;
  pb_run_figures run;
} fake_trial;

static void fake(fake_trial *f, const char *change, int threads, double predicted, bool up_to, double rate,
                 const char *bottleneck) {
  memset(f, 0, sizeof *f);
  f->rep.version = "test";
  f->rep.samples_per_s = rate;
  f->rep.noise_pct = 2.0;
  snprintf(f->rep.bottleneck_stage, sizeof f->rep.bottleneck_stage, "%s", bottleneck);
  int status = isnan(rate) ? 1 : 0;
  pb_run_figures_of(&f->rep, status, 1.5, &f->run);
  f->tr = (pb_tune_trial){.predicted = predicted, .up_to = up_to, .status = status, .wall_s = 1.5, .nruns = 1};
  f->tr.p.v[0] = threads;
  snprintf(f->tr.change, sizeof f->tr.change, "%s", change);
  f->tr.rep = &f->rep;
  f->tr.runs = &f->run;
  pb_repeat_summarize(&f->run, 1, &f->tr.sum);
}

static void trial_judgments(void **state) {
  (void)state;
  static fake_trial f;
  fake(&f, "allocation", 8, 2000, false, 1900, "device");
  assert_double_cmp(pb_tune_trial_measured(&f.tr), ==, 1900.0);
  assert_double_between(pb_tune_trial_error_pct(&f.tr), 5.263, 5.264); /* 100 / 1900 */
  fake(&f, "up to", 8, 2000, true, 1970, "device");                    /* 1.5 % below, noise 2 %: reached */
  assert_true(pb_tune_trial_reached_ceiling(&f.tr));
  assert_nan(pb_tune_trial_error_pct(&f.tr));       /* an "up to" reached checks nothing */
  fake(&f, "up to", 8, 2000, true, 1950, "device"); /* 2.5 % below: not reached, an error of +2.6 % */
  assert_false(pb_tune_trial_reached_ceiling(&f.tr));
  assert_double_between(pb_tune_trial_error_pct(&f.tr), 2.564, 2.565); /* 50 / 1950 */
  fake(&f, "failed", 4, 2000, false, NAN, "");
  assert_nan(pb_tune_trial_measured(&f.tr));
  assert_nan(pb_tune_trial_error_pct(&f.tr));
  static const pb_tune_knob knobs[2] = {{.path = "stages.decode.threads"}, {.path = "stages.prefetch.depth"}};
  pb_tune_point p = {.v = {6, 4}};
  char text[64];
  pb_tune_point_text(knobs, 2, &p, text, sizeof text);
  assert_string_equal(text, "stages.decode.threads=6 stages.prefetch.depth=4");
}

/* Two trials: the base (2 threads, 1000/s) and an allocation to 8 threads predicted 2000/s, measured
 * 1900/s (+5.3 %), whose re-measure did not fit the budget. */
typedef struct fake_search {
  fake_trial t[2];
  pb_tune_trial trials[2];
  pb_tune_knob knob;
  pb_tune_remeasure re;
  pb_tune_result r;
} fake_search;

static void fake_search_of(fake_search *s) {
  memset(s, 0, sizeof *s);
  fake(&s->t[0], "base config", 2, NAN, false, 1000, "augment");
  fake(&s->t[1], "allocation", 8, 2000, false, 1900, "device");
  s->trials[0] = s->t[0].tr, s->trials[1] = s->t[1].tr;
  snprintf(s->knob.path, sizeof s->knob.path, "stages.augment.threads");
  s->re = (pb_tune_remeasure){.needed = true, .pairs = 5, .estimate_s = 3, .skipped = true};
  snprintf(s->re.why_not, sizeof s->re.why_not, "5 pairs (~3.0 s) would end after --budget-s 10");
  s->re.outcome = pb_tune_remeasure_outcome(true, true, false, NULL, NULL);
  s->r = (pb_tune_result){.config_file = "c.json",
                          .out_dir = "out",
                          .knobs = &s->knob,
                          .nknobs = 1,
                          .trials = s->trials,
                          .ntrials = 2,
                          .best = 1,
                          .ncpu = 4,
                          .max_trials = 2,
                          .repeats = 1,
                          .budget_s = 10,
                          .elapsed_s = 12.5,
                          .search_s = 12.5,
                          .stop_reason = "trial limit (2)",
                          .re = &s->re};
}

static void summary_text(void **state) {
  (void)state;
  static fake_search s;
  fake_search_of(&s);
  assert_int_equal(s.re.outcome, PB_TUNE_NOT_REMEASURED);
  assert_int_equal(pb_tune_written_trial(&s.r), 1);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  pb_tune_out_text(f, &s.r, "out/tuned.json");
  fclose(f);
  const char *want =
      "trial change                                       augment.threads        predicted   measured  error %  "
      "bottleneck\n"
      "1     base config                                                2                -     1000.0        -  "
      "augment\n"
      "2     allocation                                                 8           2000.0     1900.0     +5.3  "
      "device  <- highest\n"
      "\n"
      "tuned: stages.augment.threads=8\n"
      "  searched: 1900.0 samples/s against the base config's 1000.0 (+90.0 %); 2 trials in 12.5 s\n"
      "  stopped: trial limit (2)\n"
      "not re-measured: 5 pairs (~3.0 s) would end after --budget-s 10; the search's +90.0 % is not confirmed\n"
      "prediction error: median |error| 5.3 %, max 5.3 % over 1 trials (target 15 %)\n"
      "tuned config: out/tuned.json\n";
  assert_string_equal(text, want);
  free(text);
}

static void tune_json_keys(void **state) {
  (void)state;
  static fake_search s;
  fake_search_of(&s);
  cJSON *j = pb_tune_out_json(&s.r, "out/tuned.json", false);
  assert_non_null(j);
  assert_string_equal(cJSON_GetObjectItem(j, "command")->valuestring, "tune");
  const cJSON *space = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "space"), 0);
  assert_string_equal(cJSON_GetObjectItem(space, "path")->valuestring, "stages.augment.threads");
  assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(space, "range"), 1)->valueint, 256);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "space_size"))); /* not given as lists */
  const cJSON *t2 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "trials"), 1);
  assert_string_equal(cJSON_GetObjectItem(t2, "out_dir")->valuestring, "out/trial-002");
  assert_double_cmp(cJSON_GetObjectItem(t2, "prediction_error_pct")->valuedouble, ==, 5.26);
  assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(t2, "sets"), "stages.augment.threads")->valueint, 8);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(t2, "best")));
  assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "best"), "trial")->valueint, 2);
  assert_double_cmp(cJSON_GetObjectItem(j, "search_gain_pct")->valuedouble, ==, 90.0);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "gain_pct"))); /* not confirmed: no claim */
  const cJSON *re = cJSON_GetObjectItem(j, "remeasure");
  assert_string_equal(cJSON_GetObjectItem(re, "outcome")->valuestring, "not_remeasured");
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(re, "base")));
  assert_int_equal(cJSON_GetObjectItem(j, "tuned_trial")->valueint, 2);
  assert_string_equal(cJSON_GetObjectItem(j, "tuned_config")->valuestring, "out/tuned.json");
  assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction_error_pct"), "trials")->valueint, 1);
  cJSON_Delete(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(values_of_a_range),  cmocka_unit_test(values_of_a_list),
      cmocka_unit_test(set_lists),          cmocka_unit_test(base_values),
      cmocka_unit_test(threads_for_a_rate), cmocka_unit_test(cores_rule),
      cmocka_unit_test(allocation),         cmocka_unit_test(picking),
      cmocka_unit_test(error_summary),      cmocka_unit_test(trial_limit),
      cmocka_unit_test(trial_judgments),    cmocka_unit_test(summary_text),
      cmocka_unit_test(tune_json_keys),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

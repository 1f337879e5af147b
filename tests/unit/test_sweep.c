/* Unit tests for sweep's grid and its best (src/analysis/sweep_grid.c: the --set lists split into axes, the
 * combinations, a trial's values, the best trial and what repeated trials' intervals allow to claim) and for
 * what sweep writes (src/reports/sweep_out.c: the table, sweep.csv, sweep.json), from results made by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first */
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sweep_grid.h"
#include "sweep_out.h"
#include "unit_util.h"

static pb_interval interval(const double *v, int n) {
  pb_interval iv;
  pb_interval_of(v, n, &iv);
  return iv;
}

/* ---------- sweep's best ---------- */

static void test_sweep_decide(void **state) {
  char why[256];
  pb_interval iv[3];
  bool ran[3] = {true, true, true};
  /* five repeats each, the best (trial 2) above both: measurably the best */
  iv[0] = interval((const double[]){10, 11, 12, 13, 14}, 5);
  iv[1] = interval((const double[]){30, 31, 32, 33, 34}, 5);
  iv[2] = interval((const double[]){20, 21, 22, 23, 24}, 5);
  assert_int_equal(pb_sweep_decide(iv, ran, 3, 1, why, sizeof why), PB_SWEEP_BEST);
  assert_string_equal(why, "");
  /* trial 3 overlapping it: no measurable difference */
  iv[2] = interval((const double[]){20, 21, 22, 23, 30}, 5);
  assert_int_equal(pb_sweep_decide(iv, ran, 3, 1, why, sizeof why), PB_SWEEP_NO_DIFFERENCE);
  /* trial 3 ran and none of its repeats counted (failed, interrupted): nothing to compare it with, so no
   * claim, and no "nan" anywhere */
  iv[2] = interval(NULL, 0);
  assert_int_equal(pb_sweep_decide(iv, ran, 3, 1, why, sizeof why), PB_SWEEP_UNDECIDED);
  assert_string_equal(why, "trial 3: too few repeats to tell (0 counted, no interval)");
  /* ... but one that did not run at all is not compared */
  ran[2] = false;
  assert_int_equal(pb_sweep_decide(iv, ran, 3, 1, why, sizeof why), PB_SWEEP_BEST);
  /* the best alone: "above every other trial's" would be empty */
  ran[0] = false;
  assert_int_equal(pb_sweep_decide(iv, ran, 3, 1, why, sizeof why), PB_SWEEP_UNDECIDED);
  assert_string_equal(why, "no other trial ran to compare it with");
  /* three repeats each (75 %): too few, however far apart */
  ran[0] = ran[2] = true;
  iv[0] = interval((const double[]){10, 11, 12}, 3);
  iv[1] = interval((const double[]){30, 31, 32}, 3);
  iv[2] = interval((const double[]){20, 21, 22}, 3);
  assert_int_equal(pb_sweep_decide(iv, ran, 3, 1, why, sizeof why), PB_SWEEP_UNDECIDED);
  assert_string_equal(why, "too few repeats to tell (coverage 75.0 %)");
  assert_null(strstr(why, "nan"));
  /* a decisive overlap settles it even when another trial cannot decide */
  iv[1] = interval((const double[]){30, 31, 32, 33, 34}, 5);
  iv[0] = interval((const double[]){29, 30, 31, 32, 33}, 5);
  iv[2] = interval((const double[]){20}, 1);
  assert_int_equal(pb_sweep_decide(iv, ran, 3, 1, why, sizeof why), PB_SWEEP_NO_DIFFERENCE);
  assert_int_equal(pb_sweep_decide(iv, ran, 3, -1, why, sizeof why), PB_SWEEP_NO_BEST);
}

/* ---------- the lists ---------- */

typedef struct split {
  pb_axis axes[PB_SWEEP_MAX_AXES];
  const char *fixed[16];
  int naxes, nfixed;
  pb_err err;
} split;

static int split_sets(split *s, const char *const *sets, int n) {
  memset(s, 0, sizeof *s);
  return pb_sweep_split_sets(sets, n, s->axes, &s->naxes, s->fixed, &s->nfixed, &s->err);
}

static void test_split_sets(void **state) {
  split *s = malloc(sizeof *s);
  const char *sets[] = {"stages.decode.threads=1,2,4",
                        "run.steps=50",
                        "dataset.shape=[224,224,3]",
                        "stages.map.ops={\"op\":\"flip\",\"p\":1}",
                        "name=\"a,b\"",
                        "stages.batch.size=32,64"};
  assert_int_equal(split_sets(s, sets, 6), 0);
  assert_int_equal(s->naxes, 2);
  assert_string_equal(s->axes[0].path, "stages.decode.threads");
  assert_int_equal(s->axes[0].nvalues, 3);
  assert_string_equal(s->axes[0].values[2], "4");
  assert_string_equal(s->axes[1].path, "stages.batch.size");
  assert_string_equal(s->axes[1].values[1], "64");
  /* one value, a JSON array or object, a quoted string: fixed overrides, in order */
  assert_int_equal(s->nfixed, 4);
  assert_string_equal(s->fixed[0], "run.steps=50");
  assert_string_equal(s->fixed[1], "dataset.shape=[224,224,3]");
  assert_string_equal(s->fixed[3], "name=\"a,b\"");
  /* no --set at all: nothing either way */
  assert_int_equal(split_sets(s, NULL, 0), 0);
  assert_int_equal(s->naxes + s->nfixed, 0);
  free(s);
}

static void expect_refused(split *s, const char *const *sets, int n, const char *msg) {
  assert_int_equal(split_sets(s, sets, n), -EINVAL);
  assert_string_equal(s->err.msg, msg);
}

static void test_split_sets_refused(void **state) {
  split *s = malloc(sizeof *s);
  expect_refused(s, (const char *[]){"a=1,,2"}, 1, "--set a=1,,2: empty value in the list (expected PATH=V1,V2,..)");
  expect_refused(s, (const char *[]){"a=1,"}, 1, "--set a=1,: empty value in the list (expected PATH=V1,V2,..)");
  expect_refused(s, (const char *[]){"a=1,2", "a=3,4"}, 2,
                 "--set a=3,4: a has a list already (expected one list per path)");
  expect_refused(s, (const char *[]){"a=5", "a=3,4"}, 2,
                 "--set a=5: a is also given a list (expected one value or one list per path)");
  /* 65 values: one past the most a list holds */
  char many[400] = "a=0";
  for (int i = 1; i <= PB_SWEEP_MAX_VALUES; i++) snprintf(many + strlen(many), sizeof many - strlen(many), ",%d", i);
  assert_int_equal(split_sets(s, (const char *[]){many}, 1), -EINVAL);
  assert_non_null(strstr(s->err.msg, ": too many or too long values (expected at most 64 values of 63 characters)"));
  many[strlen(many) - 3] = '\0'; /* ",64" off: 64 values fit */
  assert_int_equal(split_sets(s, (const char *[]){many}, 1), 0);
  assert_int_equal(s->axes[0].nvalues, PB_SWEEP_MAX_VALUES);
  /* a value of 64 characters: one past the longest */
  char longv[100] = "a=1,";
  memset(longv + 4, 'v', 64);
  longv[68] = '\0';
  assert_int_equal(split_sets(s, (const char *[]){longv}, 1), -EINVAL);
  longv[67] = '\0';
  assert_int_equal(split_sets(s, (const char *[]){longv}, 1), 0);
  /* nine lists: one past the most axes */
  const char *nine[] = {"a=1,2", "b=1,2", "c=1,2", "d=1,2", "e=1,2", "f=1,2", "g=1,2", "h=1,2", "i=1,2"};
  expect_refused(s, nine, 9, "--set i=1,2: more than 8 lists (expected fewer swept paths)");
  assert_int_equal(split_sets(s, nine, 8), 0);
  free(s);
}

/* ---------- the grid ---------- */

static pb_axis axis(const char *path, int n) {
  pb_axis a = {.nvalues = n};
  snprintf(a.path, sizeof a.path, "%s", path);
  for (int i = 0; i < n; i++) snprintf(a.values[i], sizeof a.values[i], "%c%d", path[0], i);
  return a;
}

static void test_combinations_and_values(void **state) {
  pb_axis *axes = calloc(PB_SWEEP_MAX_AXES, sizeof *axes);
  axes[0] = axis("a", 2);
  axes[1] = axis("b", 3);
  assert_int_equal(pb_sweep_combinations(axes, 0), 1);
  assert_int_equal(pb_sweep_combinations(axes, 1), 2);
  assert_int_equal(pb_sweep_combinations(axes, 2), 6);
  /* the last axis varies fastest: (0,0) (0,1) (0,2) (1,0) (1,1) (1,2) */
  static const int want[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}};
  for (int t = 0; t < 6; t++) {
    assert_int_equal(pb_sweep_value_index(axes, 2, t, 0), want[t][0]);
    assert_int_equal(pb_sweep_value_index(axes, 2, t, 1), want[t][1]);
  }
  /* one value on an axis: always index 0 */
  axes[2] = axis("c", 1);
  assert_int_equal(pb_sweep_combinations(axes, 3), 6);
  assert_int_equal(pb_sweep_value_index(axes, 3, 5, 2), 0);
  assert_int_equal(pb_sweep_value_index(axes, 3, 5, 1), 2);
  /* 8 lists of 64 values: 2^48 combinations; counting stops once past the limit, long before an overflow */
  for (int a = 0; a < PB_SWEEP_MAX_AXES; a++) axes[a] = axis("z", PB_SWEEP_MAX_VALUES);
  long n = pb_sweep_combinations(axes, PB_SWEEP_MAX_AXES);
  assert_int_cmp(n, >, PB_SWEEP_MAX_TRIALS);
  assert_int_cmp(n, <=, (long)PB_SWEEP_MAX_TRIALS * PB_SWEEP_MAX_VALUES);
  /* exactly the limit is allowed: 64 * 64 = 4096 */
  assert_int_equal(pb_sweep_combinations(axes, 2), PB_SWEEP_MAX_TRIALS);
  free(axes);
}

static pb_run_figures row(int status, bool have, double rate) {
  return (pb_run_figures){.status = status, .have = have, .samples_per_s = rate};
}

static void test_best(void **state) {
  pb_run_figures rows[5] = {row(0, true, 100), row(0, true, 300), row(0, true, 300), row(0, true, 200),
                            row(0, true, 50)};
  int status[5] = {0, 0, 0, 0, 0};
  assert_int_equal(pb_sweep_best(rows, status, 5), 1); /* the first of two equal rates */
  status[1] = 1;                                       /* failed: cannot be the best */
  assert_int_equal(pb_sweep_best(rows, status, 5), 2);
  status[2] = -1; /* not run */
  assert_int_equal(pb_sweep_best(rows, status, 5), 3);
  rows[3].samples_per_s = NAN; /* measured nothing */
  assert_int_equal(pb_sweep_best(rows, status, 5), 0);
  rows[0].have = false; /* wrote no report */
  assert_int_equal(pb_sweep_best(rows, status, 5), 4);
  status[4] = 130;
  assert_int_equal(pb_sweep_best(rows, status, 5), -1);
  assert_int_equal(pb_sweep_best(rows, status, 0), -1); /* no trials */
}

/* ---------- what sweep writes ---------- */

static char *print_table(const pb_sweep_out *o) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  pb_sweep_print_table(f, o);
  fclose(f);
  return text;
}

/* Three trials of one list, one run each: the third failed. */
typedef struct one_run_case {
  pb_axis axes[1];
  pb_run_figures rows[3];
  pb_repeat_summary sums[3];
  int status[3], nruns[3];
  pb_sweep_out out;
} one_run_case;

static void make_one_run_case(one_run_case *c) {
  memset(c, 0, sizeof *c);
  c->axes[0] = (pb_axis){.path = "stages.decode.threads", .nvalues = 3, .values = {"1", "2", "4"}};
  c->rows[0] = (pb_run_figures){0, true, false, 100, 12.5, 50, 50, 10, "input_bound", "decode", 1};
  c->rows[1] = (pb_run_figures){0, true, false, 180.5, 22.5, 10, 90, 0, "device_bound", "", 1};
  c->rows[2] = (pb_run_figures){1, false, false, NAN, NAN, NAN, NAN, NAN, NULL, "", 0.1};
  int status[3] = {0, 0, 1};
  for (int t = 0; t < 3; t++) {
    pb_repeat_summarize(&c->rows[t], 1, &c->sums[t]);
    c->status[t] = status[t];
    c->nruns[t] = 1;
  }
  c->out = (pb_sweep_out){.config_file = "cfg.json",
                          .out_dir = ".",
                          .axes = c->axes,
                          .naxes = 1,
                          .ntrials = 3,
                          .repeats = 1,
                          .status = c->status,
                          .nruns = c->nruns,
                          .runs = c->rows,
                          .sums = c->sums,
                          .rows = c->rows,
                          .best = pb_sweep_best(c->rows, c->status, 3),
                          .undecided = ""};
}

static void test_table_one_run(void **state) {
  one_run_case *c = malloc(sizeof *c);
  make_one_run_case(c);
  assert_int_equal(c->out.best, 1);
  char *text = print_table(&c->out);
  assert_string_equal(text,
                      "trial stages.decode.threads    samples/s   idle %     AU %  bottleneck    \n"
                      "1     1                            100.0     50.0     50.0  decode        \n"
                      "2     2                            180.5     10.0     90.0  -               <- best\n"
                      "3     4                     failed (exit 1)\n");
  free(text);
  free(c);
}

static void test_csv_and_json_one_run(void **state) {
  one_run_case *c = malloc(sizeof *c);
  make_one_run_case(c);
  char dir[] = "/tmp/pb_test_sweep_XXXXXX";
  assert_non_null(mkdtemp(dir));
  c->out.out_dir = dir;
  pb_err err;
  assert_int_equal(pb_sweep_write_csv(&c->out, &err), 0);
  char path[64];
  snprintf(path, sizeof path, "%s/sweep.csv", dir);
  char *csv = slurp(path);
  assert_string_equal(csv,
                      "trial,stages.decode.threads,status,samples_per_s,batches_per_s,device_idle_pct,"
                      "accelerator_utilization_pct,bottleneck,best\n"
                      "1,1,0,100.0,12.5,50.00,50.00,decode,0\n"
                      "2,2,0,180.5,22.5,10.00,90.00,-,1\n"
                      "3,4,1,,,,,,0\n");
  free(csv);
  unlink(path);
  rmdir(dir);
  /* a directory that is not there: the error names the file */
  c->out.out_dir = "/nonexistent-pb-dir";
  assert_int_cmp(pb_sweep_write_csv(&c->out, &err), <, 0);
  assert_non_null(strstr(err.msg, "/nonexistent-pb-dir/sweep.csv: cannot write the table: "));
  cJSON *j = pb_sweep_json(&c->out);
  static const char *const keys[] = {"command",
                                     "config",
                                     "fixed_sets",
                                     "axes",
                                     "combinations",
                                     "repeat",
                                     "trials",
                                     "best",
                                     "decision",
                                     "undecided_reason",
                                     "no_measurable_difference",
                                     "indistinguishable_from_best",
                                     "interrupted"};
  const cJSON *item = j->child;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++, item = item->next) {
    assert_non_null(item);
    assert_string_equal(item->string, keys[i]);
  }
  assert_null(item);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "trials")), 3);
  const cJSON *best = cJSON_GetObjectItem(j, "best");
  assert_int_equal(cJSON_GetObjectItem(best, "trial")->valueint, 2);
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(best, "sets"), "stages.decode.threads")->valuestring,
                      "2");
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "decision"))); /* one run each: nothing to decide */
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(best, "overlaps_best")));
  cJSON_Delete(j);
  free(c);
}

/* Two trials, five repeats each: the second's interval (30-34) above the first's (10-14). */
static void test_table_repeats(void **state) {
  pb_axis axes[1] = {{.path = "x", .nvalues = 2, .values = {"a", "b"}}};
  pb_run_figures runs[10], rows[2];
  pb_repeat_summary sums[2];
  int status[2] = {0, 0}, nruns[2] = {5, 5};
  for (int t = 0; t < 2; t++) {
    for (int r = 0; r < 5; r++) {
      runs[t * 5 + r] = (pb_run_figures){0, true, false, 10 + 20 * t + r, 1, 50, 50, 0, "input_bound", "read", 1};
    }
    pb_repeat_summarize(&runs[t * 5], 5, &sums[t]);
    pb_repeat_figures(&runs[t * 5], 5, &sums[t], &rows[t]);
  }
  int best = pb_sweep_best(rows, status, 2);
  pb_interval rate[2] = {sums[0].samples_per_s, sums[1].samples_per_s};
  char why[256];
  pb_sweep_decision d = pb_sweep_decide(rate, (const bool[]){true, true}, 2, best, why, sizeof why);
  assert_int_equal(d, PB_SWEEP_BEST);
  pb_sweep_out o = {.config_file = "c",
                    .out_dir = "/o",
                    .axes = axes,
                    .naxes = 1,
                    .ntrials = 2,
                    .repeats = 5,
                    .status = status,
                    .nruns = nruns,
                    .runs = runs,
                    .sums = sums,
                    .rows = rows,
                    .best = best,
                    .decision = d,
                    .undecided = why};
  char *text = print_table(&o);
  assert_string_equal(text,
                      "trial x           samples/s          interval   idle %     AU %  bottleneck    \n"
                      "1     a                12.0         10.0-14.0     50.0     50.0  read          \n"
                      "2     b                32.0         30.0-34.0     50.0     50.0  read            <- best\n"
                      "\n"
                      "best: trial 2, its interval (30.0-34.0 samples/s, 93.8 %) above every other trial's\n");
  free(text);
  cJSON *j = pb_sweep_json(&o);
  assert_string_equal(cJSON_GetObjectItem(j, "decision")->valuestring, "best");
  assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "no_measurable_difference")));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "indistinguishable_from_best")), 0);
  const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "trials"), 0);
  assert_true(cJSON_IsFalse(cJSON_GetObjectItem(first, "overlaps_best"))); /* decided, and apart */
  cJSON_Delete(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sweep_decide),
      cmocka_unit_test(test_split_sets),
      cmocka_unit_test(test_split_sets_refused),
      cmocka_unit_test(test_combinations_and_values),
      cmocka_unit_test(test_best),
      cmocka_unit_test(test_table_one_run),
      cmocka_unit_test(test_csv_and_json_one_run),
      cmocka_unit_test(test_table_repeats),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* End-to-end: `--repeat N` (docs/REPORTS.md "Repeats") on run, sweep and tune, and its usage errors.
 *
 * The configs need no files: an in-memory dataset, a map stage sleeping per sample, an emulated device;
 * each run takes a few tenths of a second, so a test of a dozen runs stays well under 20 s.  ab's repeats
 * are tested in test_e2e_ab.c (they need real files for the page cache).  PB_E2E_KEEP=1 keeps the
 * temporary directory. */
#include <math.h>

#include "e2e_util.h"

/* A map sleeping 200 us per sample on 2 threads (~10,000 samples/s) in front of a device taking 16
 * samples every 4 ms (4,000 samples/s): the device is the limit, and every run measures nearly the same. */
static const char *steady_config(const char *name) {
  return write_config(name,
                      "{'name':'%s','seed':1,"
                      "'dataset':{'format':'synthetic','shape':[64],'dtype':'uint8'},"
                      "'stages':[{'name':'aug','type':'map','threads':2,'ops':[{'op':'sleep','us':200}]},"
                      "  {'name':'batch','type':'batch','size':16},"
                      "  {'name':'prefetch','type':'prefetch','depth':2},{'name':'h2d','type':'h2d'}],"
                      "'device':{'kind':'emulated','step_ms':4},"
                      "'run':{'steps':15,'warmup_steps':2}}",
                      name);
}

static const char *file_in(const char *dir, const char *name) {
  static char path[4][600];
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, 600, "%s/%s", dir, name);
  return p;
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* When the file was last written, in seconds (nanosecond resolution). */
static double mtime_s(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) fail_msg("%s: missing", path);
  return (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* An interval object {median, lo, hi, values[]} of n values: for n <= 5 (min, max), the median the middle
 * value (or the mean of the two middle ones), all from the values themselves. */
static void expect_interval(cJSON *iv, int n) {
  double v[16];
  cJSON *values = at(iv, "values"), *x;
  assert_int_equal(cJSON_GetArraySize(values), n);
  int i = 0;
  cJSON_ArrayForEach(x, values) v[i++] = x->valuedouble;
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  if (fabs(num(iv, "median") - median) > 0.051) fail_msg("median %.2f, values give %.2f", num(iv, "median"), median);
  assert_true(num(iv, "lo") == v[0]);
  assert_true(num(iv, "hi") == v[n - 1]);
}

/* ---------- run ---------- */

/* run --repeat 3: three run directories, and a top-level report that is the median repeat's with repeats. */
static void test_run_repeat(void **state) {
  const char *dir = out_dir("run3");
  result *r = run_pb(ARGS("run", "--config", steady_config("run3"), "--out", dir, "--repeat", "3"));
  if (r->status != 0) fail_msg("run --repeat 3: exit %d: %s", r->status, r->err);
  double rates[3];
  for (int i = 0; i < 3; i++) {
    char sub[32];
    snprintf(sub, sizeof sub, "repeat-%d", i + 1);
    cJSON *rep = load_report(file_in(dir, sub));
    rates[i] = num(rep, "throughput.samples_per_s");
    assert_accounting_balances(rep);
    assert_null(at(rep, "repeats"));
  }
  assert_false(exists(file_in(dir, "repeat-4")));
  cJSON *top = load_report(dir);
  assert_int_equal((int)num(top, "repeats.n"), 3);
  assert_int_equal((int)num(top, "repeats.runs"), 3);
  assert_true(fabs(num(top, "repeats.coverage_pct") - 75) < 1e-9);
  cJSON *rate = at(top, "repeats.samples_per_s");
  expect_interval(rate, 3);
  for (int i = 0; i < 3; i++) assert_true(cJSON_GetArrayItem(at(rate, "values"), i)->valuedouble == rates[i]);
  /* the copy is of the median repeat: its throughput is the median, and CONTRACT §3's keys are all there */
  int m = (int)num(top, "repeats.median_repeat");
  assert_true(m >= 1 && m <= 3);
  assert_true(num(top, "throughput.samples_per_s") == rates[m - 1]);
  assert_true(num(top, "throughput.samples_per_s") == num(rate, "median"));
  static const char *const keys[] = {"pipebench_version", "config", "device", "steps", "step_breakdown_ms",
                                     "device_idle_pct", "stages", "bottleneck", "accounting", "critical_path"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (!at(top, keys[i])) fail_msg("report.json lacks %s", keys[i]);
  expect_interval(at(top, "repeats.device_idle_pct"), 3);
  assert_true(cJSON_IsObject(at(top, "repeats.bottleneck")));
  assert_true(exists(file_in(dir, "report.html")));
  /* the text: the median repeat's summary, then the intervals */
  assert_non_null(strstr(r->out, "throughput"));
  assert_non_null(strstr(r->out, "75.0 % interval"));
  assert_non_null(strstr(r->out, "bottlenecks"));
  assert_non_null(strstr(r->err, "repeat 3/3"));
}

/* --repeat 1 is the run of old: no repeat directory, no repeats key; --json prints the top-level report. */
static void test_run_repeat_one_and_json(void **state) {
  const char *dir = out_dir("run1");
  result *r = run_pb(ARGS("run", "--config", steady_config("run1"), "--out", dir, "--repeat", "1", "--quiet"));
  if (r->status != 0) fail_msg("run --repeat 1: exit %d: %s", r->status, r->err);
  assert_false(exists(file_in(dir, "repeat-1")));
  assert_null(at(load_report(dir), "repeats"));
  dir = out_dir("run2json");
  r = run_pb(ARGS("run", "--config", steady_config("run2"), "--out", dir, "--repeat", "2", "--json", "--quiet"));
  if (r->status != 0) fail_msg("run --repeat 2 --json: exit %d: %s", r->status, r->err);
  cJSON *printed = keep_json(cJSON_Parse(r->out));
  if (!printed) fail_msg("stdout is not JSON: %.300s", r->out);
  assert_true(cJSON_Compare(printed, load_report(dir), true));
  assert_int_equal((int)num(printed, "repeats.n"), 2);
  expect_interval(at(printed, "repeats.samples_per_s"), 2);
  assert_string_equal(r->err, "");
}

static void test_repeat_usage(void **state) {
  const char *cfg = steady_config("usage");
  static const char *const bad[] = {"0", "101", "x", "2.5", "-3"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_one_error_line(run_pb(ARGS("run", "--config", cfg, "--repeat", bad[i])), 2, "expected an integer from 1 to 100");
  assert_one_error_line(run_pb(ARGS("sweep", "--config", cfg, "--repeat")), 2, "--repeat");
  static const char *const refused[] = {"validate", "gen", "calibrate"};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
    assert_one_error_line(run_pb(ARGS(refused[i], "--config", cfg, "--repeat", "3")), 2,
                          "option \"--repeat\" does not apply (expected it with run, ab, sweep or tune)");
  assert_one_error_line(run_pb(ARGS("analyze", g_tmp, "--repeat=3")), 2, "--repeat");
}

/* ---------- sweep ---------- */

/* Two combinations that are the same config: every interval overlaps the other's. */
static cJSON *sweep_same(const char *name, const char *repeat, result **out) {
  const char *dir = out_dir(name);
  result *r = run_pb(ARGS("sweep", "--config", steady_config(name), "--set", "stages.prefetch.depth=2,2", "--out",
                          dir, "--repeat", repeat));
  if (r->status != 0) fail_msg("sweep --repeat %s: exit %d: %s", repeat, r->status, r->err);
  *out = r;
  return load_json(file_in(dir, "sweep.json"));
}

/* Whether the two trials' samples/s intervals overlap, from sweep.json. */
static bool trials_overlap(cJSON *sw) {
  cJSON *a = at(cJSON_GetArrayItem(at(sw, "trials"), 0), "repeats.samples_per_s");
  cJSON *b = at(cJSON_GetArrayItem(at(sw, "trials"), 1), "repeats.samples_per_s");
  return num(a, "lo") <= num(b, "hi") && num(b, "lo") <= num(a, "hi");
}

static void test_sweep_repeat_same_config(void **state) {
  result *r;
  /* 6 repeats: 96.9 % intervals, and two draws of one config cannot be told apart */
  cJSON *sw = sweep_same("sweep6", "6", &r);
  assert_int_equal((int)num(sw, "repeat"), 6);
  assert_true(cJSON_IsTrue(at(sw, "no_measurable_difference")));
  assert_int_equal(cJSON_GetArraySize(at(sw, "indistinguishable_from_best")), 1);
  assert_non_null(strstr(r->out, "no measurable difference"));
  assert_non_null(strstr(r->out, "<- highest median"));
  assert_null(strstr(r->out, "<- best"));
  /* round after round: trial 1 and 2 alternate on stderr */
  const char *p = r->err;
  for (int round = 1; round <= 6; round++)
    for (int t = 1; t <= 2; t++) {
      char line[64];
      snprintf(line, sizeof line, "trial %d/2 (repeat %d/6)", t, round);
      if (!(p = strstr(p, line))) fail_msg("stderr lacks \"%s\" in order: %s", line, r->err);
    }
  cJSON *t;
  cJSON_ArrayForEach(t, at(sw, "trials")) {
    assert_int_equal((int)num(t, "repeats.n"), 6);
    expect_interval(at(t, "repeats.samples_per_s"), 6);
    assert_true(exists(file_in(str(t, "out_dir"), "repeat-6/report.json")));
    assert_true(num(load_report(str(t, "out_dir")), "repeats.n") == 6);
  }
  char csv[4096];
  read_text(file_in(out_dir("sweep6"), "sweep.csv"), csv, sizeof csv);
  assert_non_null(strstr(csv, ",best,samples_per_s_lo,samples_per_s_hi,coverage_pct,overlaps_best\n"));
  /* 2 repeats: 50 % intervals, which identical configs miss one time in three; the boolean must agree
   * with the intervals either way */
  sw = sweep_same("sweep2", "2", &r);
  assert_int_equal(cJSON_IsTrue(at(sw, "no_measurable_difference")), trials_overlap(sw));
  assert_true(strstr(r->out, "no measurable difference") ? trials_overlap(sw) : !trials_overlap(sw));
}

/* Without --repeat the new keys are null and the table is the old one. */
static void test_sweep_no_repeat(void **state) {
  const char *dir = out_dir("sweep1");
  result *r = run_pb(ARGS("sweep", "--config", steady_config("sweep1"), "--set", "stages.prefetch.depth=1,2",
                          "--out", dir));
  if (r->status != 0) fail_msg("sweep: exit %d: %s", r->status, r->err);
  cJSON *sw = load_json(file_in(dir, "sweep.json"));
  assert_true(cJSON_IsNull(at(sw, "no_measurable_difference")));
  assert_true(cJSON_IsNull(at(cJSON_GetArrayItem(at(sw, "trials"), 0), "repeats")));
  assert_non_null(strstr(r->out, "<- best"));
  assert_null(strstr(r->out, "interval"));
  assert_false(exists(file_in(dir, "trial-001/repeat-1")));
}

/* ---------- tune ---------- */

/* tune --repeat 3 over a listed space: each trial three runs, the re-measure three pairs. */
static void test_tune_repeat(void **state) {
  const char *dir = out_dir("tune3");
  const char *cfg = write_config("tune3",
                                 "{'name':'tune3','dataset':{'format':'synthetic','shape':[64],'dtype':'uint8'},"
                                 "'stages':[{'name':'aug','type':'map','threads':1,'ops':[{'op':'sleep','us':1000}]},"
                                 "  {'name':'batch','type':'batch','size':8},{'name':'prefetch','type':'prefetch','depth':2},"
                                 "  {'name':'h2d','type':'h2d'}],"
                                 "'device':{'kind':'emulated','step_ms':1},'run':{'steps':15,'warmup_steps':2}}");
  result *r = run_pb(ARGS("tune", "--config", cfg, "--out", dir, "--repeat", "3", "--set", "stages.aug.threads=1,4"));
  if (r->status != 0) fail_msg("tune --repeat 3: exit %d: %s", r->status, r->err);
  cJSON *tj = load_json(file_in(dir, "tune.json"));
  assert_int_equal((int)num(tj, "repeat"), 3);
  cJSON *t;
  cJSON_ArrayForEach(t, at(tj, "trials")) {
    assert_int_equal((int)num(t, "repeats.runs"), 3);
    expect_interval(at(t, "repeats.samples_per_s"), 3);
    assert_true(num(t, "samples_per_s") == num(t, "repeats.samples_per_s.median"));
    assert_true(exists(file_in(str(t, "out_dir"), "repeat-3/report.json")));
  }
  /* 1 thread sleeping 1 ms (1,000 samples/s) against 4 (4,000): the search moves, so the re-measure runs */
  assert_true(cJSON_GetArraySize(at(tj, "trials")) == 2);
  assert_int_equal((int)num(tj, "remeasure.pairs"), 3);
  expect_interval(at(tj, "remeasure.base.samples_per_s"), 3);
  expect_interval(at(tj, "remeasure.tuned.samples_per_s"), 3);
  bool gain = cJSON_IsTrue(at(tj, "remeasure.gain_measurable"));
  assert_int_equal(gain, num(tj, "remeasure.tuned.samples_per_s.lo") > num(tj, "remeasure.base.samples_per_s.hi"));
  assert_int_equal(cJSON_IsTrue(at(tj, "no_measurable_difference")), !gain);
  assert_int_equal(cJSON_IsNumber(at(tj, "gain_pct")), gain);
  assert_true(exists(file_in(dir, "remeasure/base-3/report.json")));
  assert_true(exists(file_in(dir, "remeasure/best-3/report.json")));
  assert_non_null(strstr(r->out, "re-measured, 3 pairs interleaved"));
  /* interleaved: base, best, base, best, ...: each report.json written after the one before */
  double last = 0;
  for (int i = 1; i <= 3; i++)
    for (int side = 0; side < 2; side++) {
      char name[64];
      snprintf(name, sizeof name, "remeasure/%s-%d/report.json", side ? "best" : "base", i);
      double t_s = mtime_s(file_in(dir, name));
      if (!(t_s >= last)) fail_msg("%s written before the run it follows", name);
      last = t_s;
    }
}

static int make_tmp(void **state) { return e2e_make_tmp("pipebench-e2e-repeat"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_run_repeat, free_reports),
      cmocka_unit_test_teardown(test_run_repeat_one_and_json, free_reports),
      cmocka_unit_test_teardown(test_repeat_usage, free_reports),
      cmocka_unit_test_teardown(test_sweep_repeat_same_config, free_reports),
      cmocka_unit_test_teardown(test_sweep_no_repeat, free_reports),
      cmocka_unit_test_teardown(test_tune_repeat, free_reports),
  };
  return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}

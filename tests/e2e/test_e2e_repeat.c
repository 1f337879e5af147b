/* End-to-end: `--repeat N` (docs/REPORTS.md "Repeats") on run, sweep and tune, and its usage errors; run
 * --repeat's config errors before anything is made, its interrupt (SIGINT, as test_e2e_signals.c sends it),
 * analyze on its directory, and sweep's trials that fail or are interrupted.
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
  /* the copy is of the median repeat: its throughput is the median, and docs/CONTRACT.md §3's keys are all there */
  int m = (int)num(top, "repeats.median_repeat");
  assert_int_between(m, 1, 3);
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
  assert_string_equal(str(sw, "decision"), "no_measurable_difference");
  /* 2 repeats: 50 % intervals, which identical configs miss one time in three: too few to tell, whatever
   * the intervals show; no claim either way, and the booleans null */
  sw = sweep_same("sweep2", "2", &r);
  (void)trials_overlap(sw);
  assert_string_equal(str(sw, "decision"), "undecided");
  assert_non_null(strstr(str(sw, "undecided_reason"), "too few repeats to tell (coverage 50.0 %)"));
  assert_true(cJSON_IsNull(at(sw, "no_measurable_difference")));
  assert_true(cJSON_IsNull(at(sw, "indistinguishable_from_best")));
  assert_true(cJSON_IsNull(at(cJSON_GetArrayItem(at(sw, "trials"), 1), "overlaps_best")));
  assert_non_null(strstr(r->out, "undecided: the highest median is trial"));
  assert_null(strstr(r->out, "<- best"));
  assert_null(strstr(r->out, "no measurable difference"));
  assert_null(strstr(r->out, "nan"));
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
  /* 1 thread sleeping 1 ms (1,000 samples/s) against 4 (4,000): the search moves, so the re-measure runs,
   * 5 pairs (the fewest whose intervals cover 90 %) although --repeat is 3 */
  assert_true(cJSON_GetArraySize(at(tj, "trials")) == 2);
  assert_int_equal((int)num(tj, "remeasure.pairs"), 5);
  expect_interval(at(tj, "remeasure.base.samples_per_s"), 5);
  expect_interval(at(tj, "remeasure.tuned.samples_per_s"), 5);
  bool gain = cJSON_IsTrue(at(tj, "remeasure.gain_measurable"));
  assert_int_equal(gain, num(tj, "remeasure.tuned.samples_per_s.lo") > num(tj, "remeasure.base.samples_per_s.hi"));
  bool overlap = num(tj, "remeasure.tuned.samples_per_s.lo") <= num(tj, "remeasure.base.samples_per_s.hi") &&
                 num(tj, "remeasure.base.samples_per_s.lo") <= num(tj, "remeasure.tuned.samples_per_s.hi");
  assert_int_equal(cJSON_IsTrue(at(tj, "no_measurable_difference")), overlap);
  assert_int_equal(cJSON_IsNumber(at(tj, "gain_pct")), gain);
  assert_true(cJSON_IsNumber(at(tj, "search_gain_pct")));
  assert_string_equal(str(tj, "remeasure.outcome"), gain ? "gain" : overlap ? "no_measurable_difference" : "base_faster");
  assert_true(exists(file_in(dir, "remeasure/base-5/report.json")));
  assert_true(exists(file_in(dir, "remeasure/best-5/report.json")));
  assert_non_null(strstr(r->out, "re-measured, 5 pairs interleaved"));
  /* interleaved: base, best, base, best, ...: each report.json written after the one before */
  double last = 0;
  for (int i = 1; i <= 5; i++)
    for (int side = 0; side < 2; side++) {
      char name[64];
      snprintf(name, sizeof name, "remeasure/%s-%d/report.json", side ? "best" : "base", i);
      double t_s = mtime_s(file_in(dir, name));
      if (!(t_s >= last)) fail_msg("%s written before the run it follows", name);
      last = t_s;
    }
}

/* ---------- config errors, interrupts, analyze ---------- */

/* run --repeat refuses what a plain run refuses, once and before it makes anything: a pipeline over
 * limits.max_memory_mb (exit 2, one line, no directory), a GPU that cannot be opened (exit 1, one line). */
static void test_run_repeat_config_errors(void **state) {
  const char *cfg = steady_config("errs");
  const char *dir = out_dir("mem");
  result *r = run_pb(ARGS("run", "--config", cfg, "--out", dir, "--repeat", "3", "--set", "limits.max_memory_mb=1",
                          "--set", "stages.batch.size=4096", "--set", "stages.prefetch.depth=1000"));
  assert_one_error_line(r, 2, "limits.max_memory_mb");
  assert_false(exists(dir));
  dir = out_dir("gpu");
  r = run_pb(ARGS("run", "--config", cfg, "--out", dir, "--repeat", "3", "--device", "gpu", "--quiet"));
  if (r->status == 0) return; /* this machine has a GPU */
  assert_one_error_line(r, 1, "gpu");
  assert_false(exists(dir));
}

/* SIGINT during the second of three repeats: exit 130, the status line on stdout as a plain run prints it,
 * and report.json and report.html agree: the median of the repeat that completed, interrupted true. */
static void test_run_repeat_interrupted(void **state) {
  const char *dir = out_dir("sigint");
  const char *args[] = {"run", "--config", steady_config("sigint"), "--out", dir, "--repeat", "3", "--set",
                        "run.steps=400", "--no-progress", NULL};
  char out[300], err[300], second[400];
  snprintf(out, sizeof out, "%s/sig.out", g_tmp);
  snprintf(err, sizeof err, "%s/sig.err", g_tmp);
  snprintf(second, sizeof second, "%s/repeat-2", dir);
  pid_t pid = spawn_pb(args, out, err);
  double t0 = now_s();
  while (!exists(second) && now_s() - t0 < 30) usleep(2000);
  usleep(200 * 1000); /* into its run (a repeat lasts ~1.7 s) */
  assert_int_equal(kill(pid, SIGINT), 0);
  static result r;
  collect(&r, pid, out, err);
  if (r.status != 130) fail_msg("exit %d, expected 130: %s", r.status, r.err);
  if (!strstr(r.out, "INTERRUPTED: the repeats were stopped, 2 of 3 run")) fail_msg("stdout lacks the status: %s", r.out);
  cJSON *top = load_report(dir);
  assert_true(cJSON_IsTrue(at(top, "interrupted")));
  assert_int_equal((int)num(top, "repeats.runs"), 2);
  assert_int_equal((int)num(top, "repeats.n"), 1); /* the interrupted repeat does not count */
  assert_true(cJSON_IsNull(cJSON_GetArrayItem(at(top, "repeats.samples_per_s.values"), 1)));
  assert_true(num(top, "repeats.samples_per_s.median") == num(top, "throughput.samples_per_s"));
  assert_int_equal((int)num(top, "repeats.median_repeat"), 1);
  static char html[1 << 21];
  read_text(file_in(dir, "report.html"), html, sizeof html);
  const char *data = strstr(html, "id=\"pb-data\"");
  if (!data || !strstr(data, "\"interrupted\":true") || !strstr(data, "\"repeats\":{"))
    fail_msg("report.html does not say what report.json says (interrupted, repeats)");
}

/* --format csv: the intervals as repeats.csv; an even n says which repeat the summary is. */
static void test_run_repeat_csv_and_even(void **state) {
  const char *dir = out_dir("csv");
  result *r = run_pb(ARGS("run", "--config", steady_config("csv"), "--out", dir, "--repeat", "2", "--format",
                          "text,json,csv", "--no-progress"));
  if (r->status != 0) fail_msg("run --repeat 2: exit %d: %s", r->status, r->err);
  char csv[2048];
  read_text(file_in(dir, "repeats.csv"), csv, sizeof csv);
  assert_true(strncmp(csv, "figure,median,lo,hi,coverage_pct,n,runs\nsamples_per_s,", 54) == 0);
  assert_non_null(strstr(csv, "\ninput_bound_pct,"));
  assert_non_null(strstr(csv, ",50.00,2,2\n"));
  assert_non_null(strstr(r->out, "the lower of the two middle"));
}

/* analyze on a run --repeat directory takes its median repeat's trace, and says so; without traces it
 * names the repeats' directories (exit 2, one line). */
static void test_analyze_repeat_dir(void **state) {
  const char *dir = out_dir("an");
  result *r = run_pb(ARGS("run", "--config", steady_config("an"), "--out", dir, "--repeat", "3", "--quiet"));
  if (r->status != 0) fail_msg("run --repeat 3: exit %d: %s", r->status, r->err);
  int k = (int)num(load_report(dir), "repeats.median_repeat");
  r = run_pb(ARGS("analyze", dir, "--json"));
  if (r->status != 0) fail_msg("analyze: exit %d: %s", r->status, r->err);
  char want[400];
  snprintf(want, sizeof want, "analyzing the median one, %s/repeat-%d", dir, k);
  if (!strstr(r->err, want)) fail_msg("stderr lacks \"%s\": %s", want, r->err);
  assert_non_null(keep_json(cJSON_Parse(r->out)));
  dir = out_dir("an-notrace");
  r = run_pb(ARGS("run", "--config", steady_config("an2"), "--out", dir, "--repeat", "2", "--quiet", "--no-trace"));
  if (r->status != 0) fail_msg("run --repeat 2 --no-trace: exit %d: %s", r->status, r->err);
  assert_one_error_line(run_pb(ARGS("analyze", dir)), 2, "repeat-1 .. repeat-2");
}

/* A trial whose config no longer loads when its turn comes (the file changed after the sweep checked it)
 * stays in the table as "failed (exit 2)". */
static void test_sweep_config_fails_at_run_time(void **state) {
  const char *cfg = write_config("changing",
                                 "{'name':'changing','dataset':{'format':'synthetic','shape':[64],'dtype':'uint8'},"
                                 "'stages':[{'name':'batch','type':'batch','size':16},{'name':'prefetch','type':'prefetch',"
                                 "'depth':2},{'name':'h2d','type':'h2d'}],"
                                 "'device':{'kind':'emulated','step_ms':4},'run':{'steps':300,'warmup_steps':2}}");
  const char *dir = out_dir("changing");
  const char *args[] = {"sweep", "--config", cfg, "--set", "stages.prefetch.depth=1,2", "--out", dir, "--no-progress", NULL};
  char out[300], err[300], first[400];
  snprintf(out, sizeof out, "%s/ch.out", g_tmp);
  snprintf(err, sizeof err, "%s/ch.err", g_tmp);
  snprintf(first, sizeof first, "%s/trial-001", dir);
  pid_t pid = spawn_pb(args, out, err);
  double t0 = now_s();
  while (!exists(first) && now_s() - t0 < 30) usleep(1000);
  FILE *f = fopen(cfg, "w"); /* trial 1 runs for ~1.2 s: trial 2 loads this */
  fputs("{\"name\":", f);
  fclose(f);
  static result r;
  collect(&r, pid, out, err);
  if (r.status != 2) fail_msg("exit %d, expected 2: %s", r.status, r.err);
  cJSON *sw = load_json(file_in(dir, "sweep.json"));
  assert_int_equal(cJSON_GetArraySize(at(sw, "trials")), 2);
  cJSON *t2 = cJSON_GetArrayItem(at(sw, "trials"), 1);
  assert_int_equal((int)num(t2, "status"), 2);
  assert_true(cJSON_IsNull(at(t2, "samples_per_s")));
  if (!strstr(r.out, "failed (exit 2)")) fail_msg("the table lacks the failed trial: %s", r.out);
}

/* SIGINT in the second round of a sweep --repeat: every trial whose status is 130 says interrupted, its
 * samples/s is the median of its repeats that completed, and no best is claimed from the cut rounds. */
static void test_sweep_repeat_interrupted(void **state) {
  const char *dir = out_dir("sweep-sigint");
  const char *args[] = {"sweep", "--config", steady_config("sweep-sigint"), "--set", "stages.prefetch.depth=1,2",
                        "--set", "run.steps=300", "--repeat", "3", "--out", dir, "--no-progress", NULL};
  char out[300], err[300], wait_for[400];
  snprintf(out, sizeof out, "%s/ss.out", g_tmp);
  snprintf(err, sizeof err, "%s/ss.err", g_tmp);
  snprintf(wait_for, sizeof wait_for, "%s/trial-002/repeat-2", dir);
  pid_t pid = spawn_pb(args, out, err);
  double t0 = now_s();
  while (!exists(wait_for) && now_s() - t0 < 60) usleep(2000);
  usleep(200 * 1000);
  assert_int_equal(kill(pid, SIGINT), 0);
  static result r;
  collect(&r, pid, out, err);
  if (r.status != 130) fail_msg("exit %d, expected 130: %s", r.status, r.err);
  cJSON *sw = load_json(file_in(dir, "sweep.json"));
  assert_true(cJSON_IsTrue(at(sw, "interrupted")));
  cJSON *t;
  int n130 = 0;
  cJSON_ArrayForEach(t, at(sw, "trials")) {
    if ((int)num(t, "status") == 130) {
      n130++;
      assert_true(cJSON_IsTrue(at(t, "interrupted")));
    }
    cJSON *median = at(t, "repeats.samples_per_s.median");
    if (cJSON_IsNumber(median)) assert_true(num(t, "samples_per_s") == median->valuedouble);
    else assert_true(cJSON_IsNull(at(t, "samples_per_s")));
  }
  assert_int_equal(n130, 1);
  assert_false(cJSON_IsFalse(at(sw, "no_measurable_difference"))); /* never "measurably the best" here */
  assert_null(strstr(r.out, "nan"));
  assert_null(strstr(r.out, "<- best"));
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
      cmocka_unit_test_teardown(test_run_repeat_config_errors, free_reports),
      cmocka_unit_test_teardown(test_run_repeat_interrupted, free_reports),
      cmocka_unit_test_teardown(test_run_repeat_csv_and_even, free_reports),
      cmocka_unit_test_teardown(test_analyze_repeat_dir, free_reports),
      cmocka_unit_test_teardown(test_sweep_config_fails_at_run_time, free_reports),
      cmocka_unit_test_teardown(test_sweep_repeat_interrupted, free_reports),
  };
  return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}

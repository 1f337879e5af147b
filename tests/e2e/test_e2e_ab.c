/* End-to-end tests of `pipebench ab` (docs/AB.md): three runs of one config (synthetic, real with a cold page
 * cache, real with a warm one), ab.json, the ratios and the stall split recomputed here from the three runs'
 * own samples_per_s, and the verdict on planted cases:
 *
 *   - a map stage spinning 2000 us per sample on one thread (500 samples/s) in front of a device that takes
 *     8 samples every 2 ms (4,000 samples/s): synthetic data skips the map, so real / synthetic is about
 *     1/8 and the verdict names preprocessing and the map stage;
 *   - a fast pipeline in front of a device taking 4 samples every 20 ms (200 samples/s): real data keeps up,
 *     "not input-bound".
 *
 * Datasets are small raw or JPEG sets generated into the suite's temporary directory; every ab is three
 * runs of about 20 steps, well under a few seconds each.  PB_E2E_KEEP=1 keeps the directory. */
#include <sys/vfs.h>

#include "e2e_util.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))
#define TMPFS_MAGIC_NUMBER 0x01021994 /* linux/magic.h TMPFS_MAGIC: DONTNEED keeps a tmpfs's pages */

static const char *const k_runs[] = {"synthetic", "real_cold", "real_warm"};
static const char *const k_dirs[] = {"synthetic", "real-cold", "real-warm"};

/* A raw dataset of 64 one-record files of 4 KiB in <tmp>/NAME-data; `map` goes between read and batch
 * ("" or a stage with its trailing comma). */
static const char *raw_config(const char *name, const char *map, int batch, double step_ms) {
  char data[100];
  snprintf(data, sizeof data, "%s-data", name);
  return write_config(name,
                      "{'name':'%s','seed':1,"
                      "'dataset':{'path':'%s','format':'raw','record_bytes':4096,"
                      "  'generate':{'num_files':64,'samples_per_file':1,'record_bytes':4096}},"
                      "'stages':[{'name':'read','type':'read','threads':1},%s"
                      "  {'name':'batch','type':'batch','size':%d},"
                      "  {'name':'prefetch','type':'prefetch','depth':2},{'name':'h2d','type':'h2d'}],"
                      "'device':{'kind':'emulated','step_ms':%g},"
                      "'run':{'steps':20,'warmup_steps':2}}",
                      name, tmp_path(data), map, batch, step_ms);
}

/* A JPEG dataset of 48 small images, decoded, into batches of 8 on a 4 ms device step. */
static const char *jpeg_config(const char *name) {
  char data[100];
  snprintf(data, sizeof data, "%s-data", name);
  return write_config(name,
                      "{'name':'%s','seed':1,"
                      "'dataset':{'path':'%s','format':'jpeg',"
                      "  'generate':{'num_files':48,'samples_per_file':1,"
                      "    'image':{'width':64,'height':48,'quality':90}}},"
                      "'stages':[{'name':'read','type':'read','threads':1},"
                      "  {'name':'decode','type':'decode','threads':1},"
                      "  {'name':'batch','type':'batch','size':8},"
                      "  {'name':'prefetch','type':'prefetch','depth':2},{'name':'h2d','type':'h2d'}],"
                      "'device':{'kind':'emulated','step_ms':4},"
                      "'run':{'steps':20,'warmup_steps':2}}",
                      name, tmp_path(data));
}

/* Parses <dir>/ab.json (fails the test when missing or not JSON). */
static cJSON *load_ab(const char *dir) {
  char path[500];
  snprintf(path, sizeof path, "%s/ab.json", dir);
  return load_json(path);
}

/* `pipebench ab --config cfg --out <tmp>/out-NAME --device emulated`, exit `want`; ab.json.  The table it
 * printed goes to the test's output. */
static cJSON *run_ab(const char *cfg, const char *name, int want) {
  const char *dir = out_dir(name);
  result *r = run_pb(ARGS("ab", "--config", cfg, "--out", dir, "--device", "emulated"));
  if (r->status != want) fail_msg("ab %s: exit %d, expected %d: %s", name, r->status, want, r->err);
  printf("ab %s: %.1f s\n%s", name, r->wall_s, r->out);
  return load_ab(dir);
}

/* The suites link no libm (CMakeLists.txt): these two stand in for fmax and fabs. */
static double dmax(double a, double b) { return a > b ? a : b; }
static double dabs(double a) { return a < 0 ? -a : a; }

static bool is_null_or_number(cJSON *j, const char *key) {
  cJSON *v = at(j, key);
  return cJSON_IsNull(v) || cJSON_IsNumber(v);
}

static void assert_near(double got, double want, double tol, const char *what) {
  if (!(dabs(got - want) <= tol)) fail_msg("%s = %.9g, expected %.9g (within %.3g)", what, got, want, tol);
}

static bool tmp_is_tmpfs(void) {
  struct statfs fs;
  return statfs(g_tmp, &fs) == 0 && (unsigned long)fs.f_type == TMPFS_MAGIC_NUMBER;
}

/* Storage is blamed only when the cold run's read stage was busy at least half the time (AB.md rule 7). */
static void expect_storage_rule(cJSON *ab) {
  const char *v = str(ab, "verdict");
  cJSON *busy = at(ab, "runs.real_cold.read_utilization");
  if (strstr(v, "mostly fetch (storage)") && cJSON_IsNumber(busy) && busy->valuedouble < 0.5)
    fail_msg("verdict blames storage, with the cold run's read stage %.0f %% busy: %s", 100 * busy->valuedouble, v);
  if (strstr(v, "not on storage") && !(cJSON_IsNumber(busy) && busy->valuedouble < 0.5))
    fail_msg("verdict clears storage, with the cold run's read stage busy: %s", v);
}

/* Without --repeat, the keys only repeats can decide are null. */
static void expect_no_repeat_keys(cJSON *ab) {
  assert_int_equal((int)num(ab, "repeat"), 1);
  assert_true(cJSON_IsNull(at(ab, "no_measurable_difference")));
  assert_true(cJSON_IsNull(at(ab, "stalls.fetch_measurable")));
  assert_true(cJSON_IsNull(at(ab, "runs.real_cold.repeats")));
}

/* Every key docs/AB.md lists, of the right type. */
static void expect_keys(cJSON *ab) {
  assert_string_equal(str(ab, "command"), "ab");
  str(ab, "config");
  str(ab, "verdict");
  assert_true(cJSON_IsBool(at(ab, "cold_cache_effective")));
  assert_true(cJSON_IsBool(at(ab, "warm_cache_effective")));
  assert_true(cJSON_IsBool(at(ab, "interrupted")));
  num(ab, "status");
  num(ab, "dataset.files");
  num(ab, "dataset.bytes");
  num(ab, "dataset.unreadable_files");
  static const char *const numbers[] = {"ratios.real_cold_over_synthetic", "ratios.real_warm_over_synthetic",
                                        "lost_samples_per_s", "stalls.fetch_pct", "stalls.prep_pct",
                                        "stalls.fetch_share_pct", "stalls.prep_share_pct"};
  for (size_t i = 0; i < LEN(numbers); i++)
    if (!is_null_or_number(ab, numbers[i])) fail_msg("%s is neither a number nor null", numbers[i]);
  assert_true(cJSON_IsBool(at(ab, "stalls.within_noise")));
  static const char *const run_keys[] = {"status", "out_dir", "samples_per_s", "device_idle_pct",
                                         "accelerator_utilization_pct", "bottleneck", "cache_resident_pct_before",
                                         "time_per_sample_us"};
  for (int k = 0; k < 3; k++)
    for (size_t i = 0; i < LEN(run_keys); i++)
      if (!cJSON_GetObjectItemCaseSensitive(at(at(ab, "runs"), k_runs[k]), run_keys[i]))
        fail_msg("runs.%s.%s missing", k_runs[k], run_keys[i]);
  assert_true(cJSON_IsNull(at(ab, "runs.synthetic.cache_resident_pct_before")));
  assert_true(cJSON_IsNull(at(ab, "runs.synthetic.read_utilization")));
  assert_true(is_null_or_number(ab, "runs.real_cold.read_utilization"));
  expect_storage_rule(ab);
}

static double run_rate(cJSON *ab, int k) {
  char key[100];
  snprintf(key, sizeof key, "runs.%s.samples_per_s", k_runs[k]);
  return num(ab, key);
}

/* The ratios, the lost rate and the stall split, recomputed from the runs' samples_per_s (docs/AB.md).
 * ab.json quotes those rounded to 0.1 samples/s and computes from the unrounded ones, so the recomputed
 * figures agree within what that rounding can move them: a relative error up to e = 0.05 / the lowest rate
 * in each rate, and the outputs' own rounding (4 decimals for ratios, 2 for percentages). */
static void expect_arithmetic(cJSON *ab) {
  double s = run_rate(ab, 0), c = run_rate(ab, 1), w = run_rate(ab, 2);
  double e = 0.05 * dmax(dmax(1 / s, 1 / c), 1 / w); /* 0.05 / the lowest rate */
  assert_near(num(ab, "ratios.real_cold_over_synthetic"), c / s, 3 * e * (c / s) + 1e-4, "real_cold_over_synthetic");
  assert_near(num(ab, "ratios.real_warm_over_synthetic"), w / s, 3 * e * (w / s) + 1e-4, "real_warm_over_synthetic");
  assert_near(num(ab, "lost_samples_per_s"), dmax(s - c, 0), 0.15, "lost_samples_per_s");
  double ts = 1 / s, tc = 1 / c, tw = 1 / w;
  /* the warm run's time taken within [synthetic, cold]: the stalls split the time real data loses */
  double tw_in = tc > ts ? (tw < ts ? ts : tw > tc ? tc : tw) : tc;
  double fetch = tc > ts ? tc - tw_in : 0, prep = tc > ts ? tw_in - ts : 0;
  assert_double_cmp(num(ab, "stalls.prep_pct"), <=, 100);
  assert_double_cmp(num(ab, "stalls.fetch_pct"), <=, 100);
  double tol_pct = 300 * e * dmax(1, dmax(c / w, c / s)) + 0.01;
  assert_near(num(ab, "stalls.fetch_pct"), 100 * fetch / tc, tol_pct, "fetch_pct");
  assert_near(num(ab, "stalls.prep_pct"), 100 * prep / tc, tol_pct, "prep_pct");
  double fs = num(ab, "stalls.fetch_share_pct"), ps = num(ab, "stalls.prep_share_pct");
  if (fs == 0 && ps == 0) {
    assert_double_cmp(num(ab, "stalls.fetch_pct"), ==, 0);
    assert_double_cmp(num(ab, "stalls.prep_pct"), ==, 0);
  } else {
    assert_near(fs + ps, 100, 0.011, "fetch_share_pct + prep_share_pct");
  }
  double lost_pct = 100 * (fetch + prep) / tc;
  if (lost_pct > 5) /* below, rounding moves the shares too much to recompute them */
    assert_near(fs, 100 * fetch / (fetch + prep), 100 * tol_pct / lost_pct + 0.01, "fetch_share_pct");
  /* within_noise: both differences under 3 % of the cold time per sample; not checked near the edge. */
  double df = dabs(tc - tw) / tc * 100, dp = dabs(tw - ts) / tc * 100;
  bool near_edge = dabs(df - 3) < 0.5 || dabs(dp - 3) < 0.5;
  if (!near_edge) assert_int_equal(cJSON_IsTrue(at(ab, "stalls.within_noise")), df < 3 && dp < 3);
}

/* Each run's directory holds its report.json, whose throughput is the one ab.json quotes. */
static void expect_run_dirs(cJSON *ab, const char *name) {
  for (int k = 0; k < 3; k++) {
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s", out_dir(name), k_dirs[k]);
    cJSON *rep = load_report(dir);
    assert_near(run_rate(ab, k), num(rep, "throughput.samples_per_s"), 0, k_runs[k]);
    assert_string_equal(str(rep, "data"), k == 0 ? "synthetic" : "real");
    assert_accounting_balances(rep);
  }
}

/* The cold run starts with (almost) nothing cached, the warm one with (almost) everything; ab.json says
 * whether the eviction worked, consistently with what it measured.  On a tmpfs eviction cannot work: then
 * ab must say so rather than pretend. */
static void expect_cache(cJSON *ab) {
  double cold = num(ab, "runs.real_cold.cache_resident_pct_before");
  double warm = num(ab, "runs.real_warm.cache_resident_pct_before");
  assert_int_equal(cJSON_IsTrue(at(ab, "cold_cache_effective")), cold <= 10);
  assert_true(warm >= 90); /* a 256 KiB dataset fits in any memory */
  assert_true(cJSON_IsTrue(at(ab, "warm_cache_effective")));
  if (tmp_is_tmpfs()) {
    assert_true(cJSON_IsFalse(at(ab, "cold_cache_effective")));
    assert_non_null(strstr(str(ab, "verdict"), "not cold"));
  } else {
    if (cold > 1) fail_msg("%.1f %% of the dataset still cached after eviction", cold);
  }
}

/* (a) three run directories, ab.json with every key, and its arithmetic. */
static void test_ab_writes_everything(void **state) {
  cJSON *ab = run_ab(raw_config("plain", "", 8, 5), "plain", 0);
  expect_keys(ab);
  expect_arithmetic(ab);
  expect_run_dirs(ab, "plain");
  expect_cache(ab);
  expect_no_repeat_keys(ab);
  assert_int_equal((int)num(ab, "dataset.files"), 64);
  assert_int_equal((int)num(ab, "status"), 0);
}

/* JPEG with a decode stage: the same arithmetic holds, and the real runs decode every sample. */
static void test_ab_jpeg(void **state) {
  cJSON *ab = run_ab(jpeg_config("jpeg"), "jpeg", 0);
  expect_keys(ab);
  expect_arithmetic(ab);
  expect_run_dirs(ab, "jpeg");
  cJSON *cold = load_report(tmp_path("out-jpeg/real-cold"));
  assert_true(num(stage(cold, "decode"), "calls") > 0);
  assert_string_equal(str(cold, "data"), "real");
}

/* (b) planted preprocessing: map spin 2000 us on one thread = 500 samples/s against a 4,000 samples/s
 * device; synthetic data skips the map. */
static void test_ab_preprocessing_bound(void **state) {
  const char *map = "{'name':'augment','type':'map','threads':1,'ops':[{'op':'spin','us':2000}]},";
  cJSON *ab = run_ab(raw_config("prep", map, 8, 2), "prep", 0);
  expect_arithmetic(ab);
  double ratio = num(ab, "ratios.real_cold_over_synthetic");
  if (ratio > 0.4) fail_msg("real / synthetic %.3f, expected about 0.125", ratio);
  const char *v = str(ab, "verdict");
  if (!strstr(v, "input-bound, mostly preprocessing") || !strstr(v, "augment")) fail_msg("verdict: %s", v);
  assert_true(num(ab, "stalls.prep_share_pct") > 80);
  assert_true(num(ab, "stalls.prep_pct") > 60);
  assert_string_equal(str(ab, "runs.real_warm.bottleneck"), "augment");
}

/* (c) device-bound: 4 samples per 20 ms step, a pipeline far faster. */
static void test_ab_device_bound(void **state) {
  cJSON *ab = run_ab(raw_config("device", "", 4, 20), "device", 0);
  expect_arithmetic(ab);
  const char *v = str(ab, "verdict");
  if (strncmp(v, "not input-bound", 15) != 0) fail_msg("verdict: %s", v);
  assert_true(num(ab, "ratios.real_cold_over_synthetic") >= 0.95);
}

/* (d) --json: the JSON of ab.json on stdout, parseable, nothing else. */
static void test_ab_json_stdout(void **state) {
  const char *dir = out_dir("json");
  const char *cfg = raw_config("json", "", 8, 5);
  gen_ok(cfg); /* else ab says on stderr that it generates the dataset */
  result *r = run_pb(ARGS("ab", "--config", cfg, "--out", dir, "--json", "--quiet"));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  cJSON *printed = keep_json(cJSON_Parse(r->out));
  if (!printed) fail_msg("stdout is not JSON: %s", r->out);
  assert_true(cJSON_Compare(printed, load_ab(dir), true));
  assert_string_equal(r->err, ""); /* --quiet: no progress lines */
}

/* The default (not --quiet) prints the table and the progress lines. */
static void test_ab_text(void **state) {
  const char *dir = out_dir("text");
  result *r = run_pb(ARGS("ab", "--config", raw_config("text", "", 8, 5), "--out", dir));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  static const char *const want[] = {"synthetic", "real (cold cache)", "real (warm cache)", "ratios", "stalls",
                                     "verdict", "cache resident %"};
  for (size_t i = 0; i < LEN(want); i++)
    if (!strstr(r->out, want[i])) fail_msg("stdout lacks \"%s\": %s", want[i], r->out);
  for (int k = 1; k <= 3; k++) {
    char line[64];
    snprintf(line, sizeof line, "pipebench: ab: run %d/3 ", k);
    if (!strstr(r->err, line)) fail_msg("stderr lacks \"%s\": %s", line, r->err);
  }
}

/* (e) config errors: exit 2, one line. */
static void test_ab_bad_config(void **state) {
  const char *bad = write_config("bad", "{'dataset':{'path':'x','format':'raw','record_bytes':4},"
                                        "'stages':[{'type':'read','thread':1},{'type':'batch','size':2},"
                                        "{'type':'h2d'}]}");
  assert_one_error_line(run_pb(ARGS("ab", "--config", bad, "--out", out_dir("bad"))), 2, "thread");
  const char *mem = write_config("mem", "{'dataset':{'format':'synthetic','shape':[4]},"
                                        "'stages':[{'type':'batch','size':2},{'type':'h2d'}]}");
  assert_one_error_line(run_pb(ARGS("ab", "--config", mem, "--out", out_dir("mem"))), 2, "synthetic");
  assert_one_error_line(run_pb(ARGS("ab", "--config", tmp_path("missing.json"))), 2, "missing.json");
  const char *nodata = write_config("nodata", "{'dataset':{'path':'%s','format':'raw','record_bytes':4},"
                                              "'stages':[{'type':'read'},{'type':'batch','size':2},{'type':'h2d'}],"
                                              "'device':{'kind':'emulated','step_ms':1}}",
                                    tmp_path("no-such-dir"));
  assert_one_error_line(run_pb(ARGS("ab", "--config", nodata, "--out", out_dir("nodata"))), 2, "dataset.path");
}

/* Ctrl-C during the first run: exit 130 at once, ab.json still written with what ran. */
static void test_ab_interrupted(void **state) {
  const char *dir = out_dir("sigint");
  const char *cfg = raw_config("sigint", "", 8, 5);
  const char *args[] = {"ab", "--config", cfg, "--set", "run.steps=100000", "--quiet", "--out", dir, NULL};
  char out[300], err[300];
  snprintf(out, sizeof out, "%s/sig.out", g_tmp);
  snprintf(err, sizeof err, "%s/sig.err", g_tmp);
  pid_t pid = spawn_pb(args, out, err);
  usleep(1500 * 1000);
  kill(pid, SIGINT);
  static result r;
  collect(&r, pid, out, err);
  if (r.status != 130) fail_msg("exit %d: %s", r.status, r.err);
  if (r.wall_s > 5) fail_msg("took %.1f s to stop after SIGINT", r.wall_s);
  cJSON *ab = load_ab(dir);
  assert_true(cJSON_IsTrue(at(ab, "interrupted")));
  assert_int_equal((int)num(ab, "status"), 130);
  assert_true(cJSON_IsTrue(at(ab, "runs.synthetic.interrupted")));
  /* an interrupted run does not count (docs/REPORTS.md "Repeats"): no figures of its own in ab.json */
  assert_true(cJSON_IsNull(at(ab, "runs.synthetic.samples_per_s")));
  assert_non_null(strstr(str(ab, "verdict"), "was interrupted"));
  assert_true(cJSON_IsNull(at(ab, "runs.real_cold")));
  assert_true(cJSON_IsNull(at(ab, "runs.real_warm")));
  assert_true(cJSON_IsNull(at(ab, "ratios.real_cold_over_synthetic")));
  assert_non_null(strstr(str(ab, "verdict"), "no verdict"));
}

/* --repeat 2: six runs, interleaved synthetic, cold, warm, synthetic, cold, warm; each run's directory holds
 * its repeats and the median's report with the intervals; ab.json the medians and the booleans. */
static void test_ab_repeat(void **state) {
  const char *dir = out_dir("repeat");
  result *r = run_pb(ARGS("ab", "--config", raw_config("repeat", "", 8, 5), "--out", dir, "--device", "emulated",
                          "--repeat", "2"));
  if (r->status != 0) fail_msg("ab --repeat 2: exit %d: %s", r->status, r->err);
  printf("ab repeat: %.1f s\n%s", r->wall_s, r->out);
  static const char *const labels[] = {"synthetic", "real (cold cache)", "real (warm cache)"};
  const char *p = r->err;
  for (int n = 0; n < 6; n++) {
    char line[128];
    snprintf(line, sizeof line, "run %d/6 %s (repeat %d/2): starting", n + 1, labels[n % 3], n / 3 + 1);
    if (!(p = strstr(p, line))) fail_msg("stderr lacks \"%s\" in order: %s", line, r->err);
  }
  cJSON *ab = load_ab(dir);
  expect_keys(ab);
  assert_int_equal((int)num(ab, "repeat"), 2);
  /* 2 repeats cover 50 %: too few to tell, so the booleans that only repeats decide stay null */
  assert_true(cJSON_IsNull(at(ab, "no_measurable_difference")));
  assert_true(cJSON_IsNull(at(ab, "stalls.fetch_measurable")));
  assert_true(cJSON_IsNull(at(ab, "stalls.prep_measurable")));
  if (strncmp(str(ab, "verdict"), "no verdict", 10) != 0)
    assert_non_null(strstr(str(ab, "verdict"), "too few repeats to tell (coverage 50.0 %"));
  assert_null(strstr(str(ab, "verdict"), "no measurable difference"));
  for (int k = 0; k < 3; k++) {
    char key[64], sub[300];
    snprintf(key, sizeof key, "runs.%s.repeats", k_runs[k]);
    cJSON *reps = at(ab, key);
    assert_int_equal((int)num(reps, "runs"), 2);
    assert_int_equal(cJSON_GetArraySize(at(reps, "samples_per_s.values")), 2);
    assert_near(run_rate(ab, k), num(reps, "samples_per_s.median"), 0.051, key);
    for (int i = 1; i <= 2; i++) {
      snprintf(sub, sizeof sub, "%s/%s/repeat-%d", dir, k_dirs[k], i);
      assert_accounting_balances(load_report(sub));
    }
    snprintf(sub, sizeof sub, "%s/%s", dir, k_dirs[k]);
    assert_int_equal((int)num(load_report(sub), "repeats.n"), 2);
  }
  assert_non_null(strstr(r->out, "% interval) samples/s over 2 repeats"));
}

static int make_tmp(void **state) { return e2e_make_tmp("pipebench-e2e-ab"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_ab_writes_everything, free_reports),
      cmocka_unit_test_teardown(test_ab_jpeg, free_reports),
      cmocka_unit_test_teardown(test_ab_preprocessing_bound, free_reports),
      cmocka_unit_test_teardown(test_ab_device_bound, free_reports),
      cmocka_unit_test_teardown(test_ab_json_stdout, free_reports),
      cmocka_unit_test_teardown(test_ab_text, free_reports),
      cmocka_unit_test_teardown(test_ab_bad_config, free_reports),
      cmocka_unit_test_teardown(test_ab_interrupted, free_reports),
      cmocka_unit_test_teardown(test_ab_repeat, free_reports),
  };
  return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}

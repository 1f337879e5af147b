/* pipebench analyze CAPTURE (issue 35): a TensorFlow Profiler capture gives the report a run gives (stage graph,
 * critical path, classification, step breakdown, report.json, report.html and the Chrome trace), its stages the
 * twin's, with a `source` block holding the capture's own verdict and advice; the trace it writes analyzes to the
 * same report; a log directory of several hosts reads the most input-bound one and lists them all. */
#include <math.h>

#include "e2e_util.h"

static const char *fixture(const char *name) {
  static char path[400];
  snprintf(path, sizeof path, "%s/tests/fixtures/tfdata/%s.xplane.pb", PB_SOURCE_DIR, name);
  return path;
}

/* The stage with the most self time on the critical path ("device" when the path is the device's). */
static const char *path_stage(cJSON *rep) {
  static char name[64];
  double best = -1;
  snprintf(name, sizeof name, "device");
  cJSON *st;
  cJSON_ArrayForEach(st, at(rep, "stages")) {
    double self = num(st, "critical_path_self_ms");
    if (!isnan(self) && self > best && self > num(rep, "critical_path.total_ms") * 0.05) {
      best = self;
      snprintf(name, sizeof name, "%s", str(st, "name"));
    }
  }
  return name;
}

/* The seven planted captures (tests/fixtures/tfdata/expected.json): the planted stage carries the most self time on
 * the critical path (or the device), the classification follows the waiting share, which is the share the steps'
 * markers give (the capture's own figure) and near what Python measured around next(), and the accounting
 * balances. */
static void test_planted_captures(void **state) {
  char path[600];
  snprintf(path, sizeof path, "%s/tests/fixtures/tfdata/expected.json", PB_SOURCE_DIR);
  cJSON *expected = load_json(path), *p;
  int n = 0;
  cJSON_ArrayForEach(p, at(expected, "pipelines")) {
    const char *dir = out_dir(p->string);
    result *r = run_pb(ARGS("analyze", fixture(p->string), "--out", dir, "--format", "json,html,trace", "-q"));
    if (r->status != 0) fail_msg("analyze %s: exit %d: %s", p->string, r->status, r->err);
    cJSON *rep = load_report(dir);
    assert_string_equal(str(rep, "source.tool"), "tensorflow-profiler");
    assert_string_equal(str(rep, "source.host"), "vm");
    assert_string_equal(str(rep, "source.step_marker"), "train");
    assert_int_equal((int)num(rep, "source.gpu_devices"), 0); /* TensorFlow CPU: no GPU plane */
    assert_true(cJSON_IsNull(at(rep, "source.gpu_kernel_busy_pct")));
    double pct = num(rep, "input_bound_pct"), own = num(rep, "source.hosts.0.input_bound_pct");
    if (fabs(pct - own) > 0.05)
      fail_msg("%s: %.2f %% waiting in the report, %.2f %% from the markers", p->string, pct, own);
    if (fabs(pct - num(p, "python_waiting_pct")) > 5)
      fail_msg("%s: %.2f %% waiting, %.2f %% measured in next()", p->string, pct, num(p, "python_waiting_pct"));
    assert_string_equal(str(rep, "classification"), pct >= 20  ? "highly_input_bound"
                                                    : pct >= 5 ? "moderately_input_bound"
                                                               : "not_input_bound");
    const char *want = str(p, "stage"), *got = path_stage(rep);
    if (strncmp(got, want, strlen(want)) != 0)
      fail_msg("%s: critical path's stage %s, planted %s", p->string, got, want);
    if (strcmp(want, "device") != 0 && strncmp(str(rep, "bottleneck.stage"), want, strlen(want)) != 0)
      fail_msg("%s: bottleneck %s, planted %s", p->string, str(rep, "bottleneck.stage"), want);
    if (strcmp(str(p, "bottleneck"), "overlap") == 0)
      assert_non_null(strstr(str(rep, "source.verdict"), "want of overlap"));
    assert_true(num(rep, "critical_path.total_ms") > 0);
    assert_int_equal((int)num(rep, "steps.count"), (int)num(expected, "steps"));
    assert_accounting_balances(rep);
    char html[700];
    snprintf(html, sizeof html, "%s/report.html", dir);
    assert_int_equal(access(html, R_OK), 0);
    n++;
  }
  assert_int_equal(n, 7);
}

/* dir/trace.json, analyzed again, gives rep (dir's report.json) exactly. */
static void assert_trace_reanalyzes(const char *dir, cJSON *rep) {
  char trace[600];
  snprintf(trace, sizeof trace, "%s/trace.json", dir);
  result *r = run_pb(ARGS("analyze", trace, "--json"));
  if (r->status != 0) fail_msg("analyze %s: exit %d: %s", trace, r->status, r->err);
  cJSON *again = keep_json(cJSON_Parse(r->out));
  assert_non_null(again);
  assert_true(cJSON_Compare(rep, again, true));
}

/* The trace analyze writes of a capture is a record like a run's: analyzed again, the same report. */
static void test_trace_round_trip(void **state) {
  const char *dir = out_dir("roundtrip");
  result *r = run_pb(ARGS("analyze", fixture("cacheable"), "--out", dir, "--format", "json,trace", "-q"));
  if (r->status != 0) fail_msg("analyze: exit %d: %s", r->status, r->err);
  assert_trace_reanalyzes(dir, load_report(dir));
}

/* A capture with a GPU plane (tests/fixtures/tfdata/gpu_device_bound.xplane.pb: kernels and copies planted into
 * device_bound's steps in the format XLA's CUPTI collector writes, bench/tf_gpu_fixture.py): the steps' copies
 * are the breakdown's h2d, the compute starts at the first kernel after the batch was ready, the kernels' busy
 * share is their union (two streams overlap), the D2H copy and the memset are left out, and the waiting being
 * mostly the copy, the bottleneck is the copy and tf.data's advice copies ahead. */
static void test_gpu_plane(void **state) {
  char path[600];
  snprintf(path, sizeof path, "%s/tests/fixtures/tfdata/expected.json", PB_SOURCE_DIR);
  cJSON *gpu = at(load_json(path), "gpu");
  const char *dir = out_dir("gpu");
  result *r = run_pb(ARGS("analyze", fixture("gpu_device_bound"), "--out", dir, "--format", "json,trace", "-q"));
  if (r->status != 0) fail_msg("analyze: exit %d: %s", r->status, r->err);
  cJSON *rep = load_report(dir);
  assert_int_equal((int)num(rep, "source.gpu_devices"), 1);
  if (fabs(num(rep, "source.gpu_kernel_busy_pct") - num(gpu, "kernel_busy_pct")) > 0.05)
    fail_msg("kernels busy %.3f %%, planted %.3f %%", num(rep, "source.gpu_kernel_busy_pct"),
             num(gpu, "kernel_busy_pct"));
  assert_true(fabs(num(rep, "step_breakdown_ms.h2d") - num(gpu, "h2d_ms")) < 0.01);
  assert_true(fabs(num(rep, "step_breakdown_ms.host_late") - num(gpu, "host_before_kernels_ms")) < 0.01);
  /* the waiting is the markers' share and the copy's */
  double copy_pct = num(gpu, "h2d_ms") / num(rep, "steps.mean_ms") * 100;
  assert_true(fabs(num(rep, "input_bound_pct") - num(rep, "source.hosts.0.input_bound_pct") - copy_pct) < 0.1);
  assert_string_equal(str(rep, "bottleneck.stage"), "h2d");
  assert_non_null(strstr(str(rep, "source.advice.0.text"), "prefetch_to_device"));
  assert_accounting_balances(rep);
  assert_trace_reanalyzes(dir, rep);
}

/* A log directory of two hosts: the most input-bound one is read, both are listed, that one first. */
static void test_hosts(void **state) {
  e2e_sh(
      "mkdir -p '%s/logs/plugins/profile/2026_11_27_10_00_00' && cp '%s' '%s/logs/plugins/profile/"
      "2026_11_27_10_00_00/a.xplane.pb'",
      g_tmp, fixture("device_bound"), g_tmp);
  e2e_sh("cp '%s' '%s/logs/plugins/profile/2026_11_27_10_00_00/b.xplane.pb'", fixture("slow_map"), g_tmp);
  const char *dir = out_dir("hosts");
  result *r = run_pb(ARGS("analyze", tmp_path("logs"), "--out", dir));
  if (r->status != 0) fail_msg("analyze: exit %d: %s", r->status, r->err);
  assert_non_null(strstr(r->out, "2 in the capture, the most input-bound read"));
  cJSON *rep = load_report(dir);
  assert_int_equal((int)num(rep, "source.host_count"), 2);
  assert_non_null(strstr(str(rep, "source.capture"), "/b.xplane.pb"));
  assert_non_null(strstr(str(rep, "source.hosts.0.capture"), "/b.xplane.pb"));
  assert_non_null(strstr(str(rep, "source.hosts.1.capture"), "/a.xplane.pb"));
  assert_true(num(rep, "source.hosts.0.input_bound_pct") > num(rep, "source.hosts.1.input_bound_pct"));
  assert_true(cJSON_IsNull(at(rep, "source.hosts.1.bottleneck"))); /* device-bound: no slowest iterator */
}

/* A run's report says it is pipebench's own. */
static void test_run_source(void **state) {
  const char *cfg = write_config("own",
                                 "{\"name\": \"own\", \"dataset\": {\"format\": \"synthetic\", \"shape\": [8]},"
                                 " \"stages\": [{\"type\": \"batch\", \"size\": 4}], \"run\": {\"steps\": 4, "
                                 "\"warmup_steps\": 1}, \"device\": {\"kind\": \"emulated\", \"step_ms\": 1}}");
  cJSON *rep = run_report(cfg, "own", ARGS("--no-trace"));
  assert_string_equal(str(rep, "source.tool"), "pipebench");
  assert_true(cJSON_IsNull(at(rep, "source.capture")));
}

static void test_bad_captures(void **state) {
  e2e_sh("printf 'not a protobuf at all' > '%s/junk.xplane.pb' && mkdir -p '%s/alog/plugins/profile/run'", g_tmp,
         g_tmp);
  assert_one_error_line(run_pb(ARGS("analyze", tmp_path("junk.xplane.pb"))), 2, "not a TensorFlow Profiler XSpace");
  assert_one_error_line(run_pb(ARGS("analyze", tmp_path("alog"))), 2, "no *.xplane.pb in it");
  assert_one_error_line(run_pb(ARGS("analyze", "/nonexistent/vm.xplane.pb")), 2, "/nonexistent/vm.xplane.pb");
  /* a real GPU job's capture that has no tf.data (JAX's profiler on an H100, tests/fixtures/gpu/): the line says
   * what the capture does hold */
  char jax[400];
  snprintf(jax, sizeof jax, "%s/tests/fixtures/gpu/jax_h100_slow_input.xplane.pb", PB_SOURCE_DIR);
  assert_one_error_line(run_pb(ARGS("analyze", jax)), 2,
                        "no tf.data iterator events (it has 60 marked steps and 1 GPU plane(s)");
}

static int setup(void **state) { return e2e_make_tmp("pipebench-e2e-capture"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_planted_captures, free_reports),
      cmocka_unit_test_teardown(test_trace_round_trip, free_reports),
      cmocka_unit_test_teardown(test_gpu_plane, free_reports),
      cmocka_unit_test_teardown(test_hosts, free_reports),
      cmocka_unit_test_teardown(test_run_source, free_reports),
      cmocka_unit_test_teardown(test_bad_captures, free_reports),
  };
  return cmocka_run_group_tests(tests, setup, remove_tmp);
}

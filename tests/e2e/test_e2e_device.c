/* End-to-end: the device side (issue 5) as far as it runs without a GPU — the --device choice and its
 * errors, several devices dealt batches round-robin with per-device timelines, normalize.on_device
 * moving uint8 over H2D, and the device keys of report.json.  tests/gpu/ holds the checks that need a
 * GPU. */
#include <math.h>

#include "e2e_util.h"

/* In-memory 32x32x3 uint8 samples, normalized (on the host or the device) and batched by 16. */
static const char *device_config(const char *name, const char *normalize_on_device, int count) {
  return write_config(
      name,
      "{'name':'%s','dataset':{'format':'synthetic','shape':[32,32,3],'num_samples':100000},"
      "'stages':[{'name':'aug','type':'map','threads':1,'ops':[{'op':'normalize','mean':[123.7,116.3,103.5],"
      "'std':[58.4,57.1,57.4],'dtype':'float32','on_device':%s},{'op':'to_chw'}]},"
      "{'type':'batch','size':16},{'type':'prefetch','depth':2},{'type':'h2d'}],"
      "'device':{'kind':'emulated','count':%d,'step_ms':2},'run':{'steps':40,'warmup_steps':2}}",
      name, normalize_on_device, count);
}

static void test_gpu_without_gpu_exits_1_naming_the_error(void **state) {
  const char *cfg = device_config("gpu", "false", 1);
  result *r = run_pb(ARGS("--config", cfg, "--device", "gpu", "--out", out_dir("gpu")));
  /* The CUDA build names the runtime's error (cudaGetDeviceCount: cudaError...); a build without CUDA
   * says so.  Either way: exit 1, one line. */
  assert_one_error_line(r, 1, "no usable CUDA GPU");
  assert_non_null(strstr(r->err, "--device emulated"));
}

static void test_auto_falls_back_with_one_line(void **state) {
  /* --device overrides the config's device.kind, and the report's config says so (a rerun from it runs
   * the same device).  The fallback is said once, in the report's header, not on stderr (issue 34: a
   * machine without a GPU printed it at every run). */
  const char *cfg = device_config("emulated", "false", 1);
  const char *dir = out_dir("auto");
  result *r = run_pb(ARGS("--config", cfg, "--device", "auto", "--format", "text,json", "--out", dir));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  assert_string_equal(r->err, "");
  assert_non_null(strstr(r->out, "device=emulated (no GPU; "));
  assert_non_null(strstr(r->out, "using the emulated device\n"));
  cJSON *rep = load_report(dir);
  assert_non_null(strstr(str(rep, "device.fallback_reason"), "using the emulated device"));
  assert_string_equal(str(rep, "device.kind"), "emulated");
  assert_string_equal(str(rep, "config.device.kind"), "auto");
  assert_string_equal(str(rep, "device.timing_source"), "emulated");
  assert_true(cJSON_IsNull(at(rep, "device.step_kernel")));
  assert_true(cJSON_IsNull(at(rep, "device.timing_source_reason")));
  assert_true(cJSON_IsNull(at(rep, "device.idle_pct_cuda_events")));
  assert_int_equal(num(rep, "device.gpu_timestamps_dropped"), 0);
}

/* Two devices: batches dealt in turn, one timeline each, the most idle named, and the devices' idle
 * times average to the run's.  Each runs about half the steps: the window closes on the 40th step
 * overall, and a device thread the kernel held off the core for a step or more (as on a loaded 2-vCPU
 * machine) is behind by that many steps for good, its filed batches counted as queued; hence +-4 (10 %),
 * not +-1. */
static void test_two_devices_round_robin(void **state) {
  cJSON *rep = run_report(device_config("two", "false", 2), "two", NULL);
  assert_int_equal(num(rep, "device.count"), 2);
  cJSON *per = at(rep, "device.per_device");
  assert_int_equal(cJSON_GetArraySize(per), 2);
  double s0 = num(cJSON_GetArrayItem(per, 0), "steps"), s1 = num(cJSON_GetArrayItem(per, 1), "steps");
  assert_int_equal(s0 + s1, num(rep, "steps.count"));
  if (s0 - s1 > 4 || s1 - s0 > 4) fail_msg("steps per device %.0f and %.0f: expected round-robin", s0, s1);
  double i0 = num(cJSON_GetArrayItem(per, 0), "idle_pct"), i1 = num(cJSON_GetArrayItem(per, 1), "idle_pct");
  int most = (int)num(rep, "device.most_idle");
  assert_true(most == 0 || most == 1);
  assert_true((most == 0 ? i0 : i1) >= (most == 0 ? i1 : i0));
  if (fabs((i0 + i1) / 2 - num(rep, "device_idle_pct")) > 0.02)
    fail_msg("per-device idle %.2f, %.2f do not average to the run's %.2f", i0, i1, num(rep, "device_idle_pct"));
  assert_int_equal(num(cJSON_GetArrayItem(per, 1), "id"), 1);
  assert_accounting_balances(rep);
}

/* normalize.on_device: the host leaves samples uint8, so H2D moves a quarter of the float32 bytes. */
static void test_normalize_on_device_moves_uint8(void **state) {
  cJSON *host = run_report(device_config("host_norm", "false", 1), "host_norm", ARGS("--set", "device.h2d_gb_per_s=1"));
  cJSON *dev = run_report(device_config("dev_norm", "true", 1), "dev_norm", NULL);
  double host_per_sample = num(host, "throughput.bytes_per_s") / num(host, "throughput.samples_per_s");
  double dev_per_sample = num(dev, "throughput.bytes_per_s") / num(dev, "throughput.samples_per_s");
  assert_true(fabs(host_per_sample - 32 * 32 * 3 * 4) < 1);
  assert_true(fabs(dev_per_sample - 32 * 32 * 3) < 1);
  /* The copy's bandwidth: never above the emulated link's 1 GB/s (197 us per batch), and not far below
   * it; a copy's end is when its sleeping thread woke, which a loaded 2-core machine delays by tens of
   * microseconds, hence the wide lower bound. */
  double gbps = num(cJSON_GetArrayItem(at(host, "device.per_device"), 0), "h2d_gb_per_s");
  if (gbps < 0.5 || gbps > 1.005) fail_msg("h2d_gb_per_s %.3f, expected 0.5..1 (the link's 1 GB/s)", gbps);
}

static int make_tmp(void **state) { return e2e_make_tmp("pipebench-e2e-device"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_gpu_without_gpu_exits_1_naming_the_error, free_reports),
      cmocka_unit_test_teardown(test_auto_falls_back_with_one_line, free_reports),
      cmocka_unit_test_teardown(test_two_devices_round_robin, free_reports),
      cmocka_unit_test_teardown(test_normalize_on_device_moves_uint8, free_reports),
  };
  return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}

/* End-to-end tests of the bottleneck analysis with PLANTED bottlenecks: each config makes one stage (or the
 * device) the limit by construction, with emulation knobs whose rates are known exactly (a map op that
 * sleeps or spins a fixed time per sample, the read stage's latency and bandwidth caps, the emulated
 * device's copy bandwidth and step time).  From those numbers the test computes what the report must say:
 *
 *   - bottleneck.stage is the planted stage;
 *   - device_idle_pct is within IDLE_TOL_PCT points of the value the planted rate implies.  With a single
 *     bottleneck of R samples/s feeding batches of B samples to a device whose step takes S ms, a batch is
 *     ready every 1000 B / R ms and the device computes S ms of it, so it runs one step per
 *     max(1000 B / R, S) ms and
 *
 *         idle % = 100 x (1 - S / max(1000 B / R, S))
 *
 *     R is the planted rate, or the planted stage's measured capacity when that is lower: a timed wait
 *     can end late on a loaded virtual machine (an 800 us sleep was seen taking 900-1000 us), and the
 *     capacity check below bounds how much lower it may be.  When other processes took more than
 *     SHARED_CORES during the run, R is what the stage delivered (the measured samples/s), at most
 *     CAP_MATCH below its capacity: its thread then also waits for a core between samples.
 *
 *   - the planted stage has the largest critical_path_pct of all stages (for the device: the device
 *     segment is the largest of the critical path);
 *   - the accounting balances;
 *   - and, beyond those, the planted stage's capacity_per_s (threads / mean service time) matches the
 *     planted rate, and the trace is complete (nothing dropped).
 *
 * Plus the --no-trace fallback (capacity model only), the stage graph rebuilt from lineage, and a
 * recommendation that is then applied with its --set and measured against its own prediction.
 *
 * The planted waits use `sleep` (no CPU) wherever the case allows, and CPU-burning `spin` on one thread
 * only: the suite must hold on a 2-core machine and under ThreadSanitizer.  Every case prints one line,
 * "planted <case>: bottleneck <stage> ..., idle <measured> % (expected <computed> %)".  Set PB_E2E_KEEP=1
 * to keep the temporary directory with every report.json. */
#include <math.h>

#include "e2e_util.h"

/* How far device_idle_pct may be from the value computed from the planted rates, in percentage points. */
#define IDLE_TOL_PCT 3.0

/* Warm-up and measured steps of every case: enough warm-up to fill the queues, enough steps that the
 * per-step jitter averages out, and each case well under 3 s. */
#define WARMUP 3
#define STEPS 35

/* idle % = 100 x (1 - S / max(1000 B / R, S)) for a bottleneck of R samples/s, batches of B samples and a
 * device step of S ms (see the top of the file). */
static double expected_idle_pct(double rate_per_s, double batch, double step_ms) {
  double period_ms = 1000.0 * batch / rate_per_s;
  if (period_ms < step_ms) period_ms = step_ms;
  return 100.0 * (1.0 - step_ms / period_ms);
}

/* A synthetic-dataset config: stages (the inside of the "stages" array, before batch), batch size,
 * device step in ms; `device_extra` goes inside "device" (",'h2d_gb_per_s':0.1" or ""). */
static const char *synthetic_config(const char *name, const char *shape, const char *stages, int batch,
                                    double step_ms, const char *device_extra) {
  return write_config(name,
                      "{'name':'%s','seed':1,"
                      "'dataset':{'format':'synthetic','shape':%s,'dtype':'uint8'},"
                      "'stages':[%s{'name':'batch','type':'batch','size':%d},"
                      "  {'name':'prefetch','type':'prefetch','depth':2},{'name':'h2d','type':'h2d'}],"
                      "'device':{'kind':'emulated','step_ms':%g%s},"
                      "'run':{'steps':%d,'warmup_steps':%d}}",
                      name, shape, stages, batch, step_ms, device_extra, STEPS, WARMUP);
}

/* A raw dataset of `num_files` one-record files of `record_bytes` in <tmp>/NAME-data, read by a read
 * stage with `read_keys` (",'threads':1,'latency_us':2000"), then batch, prefetch and h2d. */
static const char *raw_config(const char *name, int num_files, int record_bytes, const char *read_keys, int batch,
                              double step_ms, int steps) {
  char data_name[100];
  snprintf(data_name, sizeof data_name, "%s-data", name);
  return write_config(name,
                      "{'name':'%s','seed':1,"
                      "'dataset':{'path':'%s','format':'raw','record_bytes':%d,"
                      "  'generate':{'num_files':%d,'samples_per_file':1,'record_bytes':%d}},"
                      "'stages':[{'name':'read','type':'read'%s},{'name':'batch','type':'batch','size':%d},"
                      "  {'name':'prefetch','type':'prefetch','depth':2},{'name':'h2d','type':'h2d'}],"
                      "'device':{'kind':'emulated','step_ms':%g},"
                      "'run':{'steps':%d,'warmup_steps':%d}}",
                      name, tmp_path(data_name), record_bytes, num_files, record_bytes, read_keys, batch, step_ms,
                      steps, WARMUP);
}

/* ---------- the planted configs ---------- */

/* 1. map sleep: one thread sleeping 2000 us per sample = R 500/s; B 16, S 10 ms: 32 ms per batch,
 *    idle = 1 - 10/32 = 68.75 %. */
static const char *map_sleep_config(void) {
  return synthetic_config("map-sleep", "[64,64,3]",
                          "{'name':'augment','type':'map','threads':1,'ops':[{'op':'sleep','us':2000}]},", 16, 10,
                          "");
}
#define MAP_SLEEP_R 500.0
#define MAP_SLEEP_B 16
#define MAP_SLEEP_S 10.0

/* 2. map spin: one thread burning 1000 us of CPU per sample = R 1000/s; B 16, S 8 ms: 16 ms per batch,
 *    idle = 1 - 8/16 = 50 %. */
static const char *map_spin_config(void) {
  return synthetic_config("map-spin", "[64,64,3]",
                          "{'name':'augment','type':'map','threads':1,'ops':[{'op':'spin','us':1000}]},", 16, 8, "");
}

/* 3. starved threads: "slow_per_call" takes 2000 us per sample but has 8 threads (capacity 4000/s);
 *    "starved" takes only 800 us per sample but has one thread (1250/s): the limit is "starved", not the
 *    stage that is slower per call.  B 16, S 4 ms: 12.8 ms per batch, idle = 1 - 4/12.8 = 68.75 %. */
static const char *starved_config(void) {
  return synthetic_config("starved", "[64,64,3]",
                          "{'name':'slow_per_call','type':'map','threads':8,'ops':[{'op':'sleep','us':2000}]},"
                          "{'name':'starved','type':'map','threads':1,'ops':[{'op':'sleep','us':800}]},",
                          16, 4, "");
}

/* ---------- checks ---------- */

/* The critical path segment of `name`, or NULL. */
static cJSON *segment(cJSON *rep, const char *name) {
  cJSON *s;
  cJSON_ArrayForEach(s, at(rep, "critical_path.segments")) {
    cJSON *n = at(s, "stage");
    if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) return s;
  }
  return NULL;
}

/* The planted stage has the largest critical_path_pct of all stages (strictly: a tie would not tell them
 * apart).  For "device", which is not a stage, its segment has the largest self time on the path. */
static void expect_largest_on_critical_path(cJSON *rep, const char *planted) {
  if (strcmp(planted, "device") == 0) {
    cJSON *dev = segment(rep, "device");
    if (!dev) fail_msg("the critical path has no device segment");
    double dev_ms = num(dev, "self_ms");
    cJSON *s;
    cJSON_ArrayForEach(s, at(rep, "critical_path.segments")) {
      if (s != dev && num(s, "self_ms") >= dev_ms)
        fail_msg("critical path: %s has %.3f ms of self time, the device (planted) only %.3f ms", str(s, "stage"),
                 num(s, "self_ms"), dev_ms);
    }
    return;
  }
  double mine = num(stage(rep, planted), "critical_path_pct");
  cJSON *s;
  cJSON_ArrayForEach(s, at(rep, "stages")) {
    const char *name = str(s, "name");
    cJSON *pct = at(s, "critical_path_pct");
    if (strcmp(name, planted) == 0 || !cJSON_IsNumber(pct)) continue; /* null: skipped in synthetic mode */
    if (pct->valuedouble >= mine)
      fail_msg("critical_path_pct of %s is %.2f, of the planted %s only %.2f", name, pct->valuedouble, planted, mine);
  }
}

/* The checks every planted case makes; prints the case's line.  Beyond the four checks at the top of the
 * file, the planted stage's capacity_per_s (threads / mean service time) must be what the run shows:
 * within CAP_MATCH of the measured samples/s (the planted stage is the bottleneck, so the pipeline runs
 * at its capacity), at most 5 % above the planted rate (emulated waits never end early) and at most
 * CAP_TOL below it.  Below, the tolerance is wide on purpose: timed waits and real reads take longer on
 * a loaded virtual machine, more so under the sanitizers (a 2 ms sleep was seen taking 2.55 ms on the
 * 2-vCPU development VM, and a 2 ms-latency 4 KB read 3.3 ms under TSan), which is the machine's
 * slack, not a measurement error; the match with the measured rate is the tight check. */
#define CAP_TOL 0.50
/* Other processes' load, in cores, above which the machine counts as shared during the run: well above
 * the 0.00-0.02 an idle 2-core VM measures (tick resolution), well below the 0.5 that binds the cores. */
#define SHARED_CORES 0.10
#define CAP_MATCH 0.10
static void expect_planted(cJSON *rep, const char *what, const char *planted, double rate_per_s, double batch,
                           double step_ms) {
  double idle = num(rep, "device_idle_pct");
  const char *blamed = str(rep, "bottleneck.stage");
  bool is_device = strcmp(planted, "device") == 0;
  cJSON *pct = is_device ? NULL : at(stage(rep, planted), "critical_path_pct");
  cJSON *cap = is_device ? NULL : at(stage(rep, planted), "capacity_per_s");
  double delivered = cJSON_IsNumber(cap) && cap->valuedouble < rate_per_s ? cap->valuedouble : rate_per_s;
  /* On a machine other processes share (ctest -j2 runs two tests on the 2-core VM), the planted stage's
   * thread also waits for a core between its samples, outside its service time, so the stage delivers
   * less than its capacity (seen: capacity 961/s, 889 delivered, others' load unmeasured).  The rate
   * that explains the idle time is then the delivered one; the capacity checks below still bound how far
   * it may be from the capacity (CAP_MATCH) and the capacity from the planted rate (CAP_TOL). */
  double others = num(rep, "machine.cores_taken_by_others");
  double measured = num(rep, "throughput.samples_per_s");
  bool shared = others >= SHARED_CORES;
  if (shared && measured < delivered) delivered = measured;
  double want_idle = expected_idle_pct(delivered, batch, step_ms);
  char extra[200];
  if (is_device)
    snprintf(extra, sizeof extra, "device segment %.1f of %.1f ms on the critical path",
             segment(rep, "device") ? num(segment(rep, "device"), "self_ms") : -1.0,
             num(rep, "critical_path.total_ms"));
  else
    snprintf(extra, sizeof extra, "critical_path_pct %.2f, capacity %.1f/s (planted %.1f/s)",
             cJSON_IsNumber(pct) ? pct->valuedouble : -1.0, cJSON_IsNumber(cap) ? cap->valuedouble : -1.0,
             rate_per_s);
  printf(
      "planted %-14s: bottleneck %-8s (planted %-8s) idle %6.2f %% (expected %6.2f %%%s), %s, %s, "
      "measured %.1f samples/s, others %.2f cores\n",
      what, blamed, planted, idle, want_idle, shared ? " from the delivered rate" : "", str(rep, "classification"),
      extra, measured, others);
  fflush(stdout);
  /* A CPU-bound planted stage on a machine whose other processes took the cores it needed: the cores are
   * then what binds, and the report must say so (issue 31) -- the run measured that load itself. */
  if (strcmp(blamed, "cores") == 0 && others >= 0.5) {
    printf("  (%s: other processes took %.2f cores during the run: the cores bind, not %s)\n", what, others, planted);
    assert_accounting_balances(rep);
    return;
  }
  if (strcmp(blamed, planted) != 0)
    fail_msg("%s: bottleneck.stage is \"%s\", planted \"%s\" (reason: %s)", what, blamed, planted,
             str(rep, "bottleneck.reason"));
  if (idle < want_idle - IDLE_TOL_PCT || idle > want_idle + IDLE_TOL_PCT)
    fail_msg("%s: device_idle_pct %.2f, expected %.2f +- %.0f from the planted rates", what, idle, want_idle,
             IDLE_TOL_PCT);
  expect_largest_on_critical_path(rep, planted);
  if (!is_device) {
    /* The run-queue delay is known wherever the kernel has scheduler statistics, and bounded. */
    cJSON *delay = at(stage(rep, planted), "cpu_delay_fraction");
    if (access("/proc/thread-self/schedstat", R_OK) == 0 && !cJSON_IsNumber(delay))
      fail_msg("%s: cpu_delay_fraction of %s is not a number, although the kernel has schedstat", what, planted);
    if (cJSON_IsNumber(delay) &&
        (delay->valuedouble < 0 || delay->valuedouble > 1 - num(stage(rep, planted), "cpu_fraction") + 1e-4))
      fail_msg("%s: cpu_delay_fraction of %s is %.4f, outside [0, 1 - cpu_fraction]", what, planted, delay->valuedouble);
    if (!cJSON_IsNumber(cap)) fail_msg("%s: capacity_per_s of %s is not a number", what, planted);
    if (cap->valuedouble > 1.05 * rate_per_s || cap->valuedouble < (1 - CAP_TOL) * rate_per_s)
      fail_msg("%s: capacity_per_s of %s is %.1f, the planted rate %.1f", what, planted, cap->valuedouble,
               rate_per_s);
    if (fabs(cap->valuedouble - measured) > CAP_MATCH * cap->valuedouble)
      fail_msg("%s: capacity_per_s of %s is %.1f, but the run measured %.1f samples/s", what, planted,
               cap->valuedouble, measured);
  }
  if (!cJSON_IsTrue(at(rep, "trace.complete")) || num(rep, "trace.events_dropped") != 0)
    fail_msg("%s: the trace is incomplete (%.0f events dropped): the critical path would be partial", what,
             num(rep, "trace.events_dropped"));
  assert_accounting_balances(rep);
}

/* ---------- 1-7: the planted cases ---------- */

static void test_map_sleep(void **state) {
  cJSON *rep = run_report(map_sleep_config(), "map-sleep", NULL);
  expect_planted(rep, "map sleep", "augment", MAP_SLEEP_R, MAP_SLEEP_B, MAP_SLEEP_S);
  assert_string_equal(str(rep, "classification"), "highly_input_bound");
}

static void test_map_spin(void **state) {
  cJSON *rep = run_report(map_spin_config(), "map-spin", NULL);
  expect_planted(rep, "map spin", "augment", 1e6 / 1000, 16, 8);
}

static void test_starved_threads(void **state) {
  cJSON *rep = run_report(starved_config(), "starved", NULL);
  expect_planted(rep, "starved", "starved", 1e6 / 800, 16, 4);
  /* the capacity model agrees: 8 threads of 2 ms sustain 4000/s, one of 0.8 ms only 1250/s */
  assert_string_equal(str(rep, "capacity_model.lowest_capacity_stage"), "starved");
  double slow = num(stage(rep, "slow_per_call"), "capacity_per_s");
  double starved = num(stage(rep, "starved"), "capacity_per_s");
  if (!(starved < slow)) fail_msg("capacity_per_s: starved %.1f, slow_per_call %.1f", starved, slow);
}

/* 4. read latency: one read thread adding 2000 us to every read = R 500/s (the real 4 KB read adds a
 *    little; R is computed from the latency only); B 16, S 10 ms: idle = 1 - 10/32 = 68.75 %.  600 files;
 *    38 steps of 16 = 608 samples plus what the queues hold when the run stops: the read goes on into a
 *    second epoch (the same files in a new order), which costs a raw dataset nothing. */
static void test_read_latency(void **state) {
  const char *cfg = raw_config("read-latency", 600, 4096, ",'threads':1,'latency_us':2000", 16, 10, STEPS);
  gen_ok(cfg);
  cJSON *rep = run_report(cfg, "read-latency", NULL);
  expect_planted(rep, "read latency", "read", 1e6 / 2000, 16, 10);
}

/* 5. read bandwidth: records of 100,000 bytes through a read stage capped at 20 MB/s (10^6 bytes, for the
 *    whole stage, whatever its 2 threads do) = R 200/s; B 8, S 10 ms: 40 ms per batch, idle = 75 %.
 *    30 steps + 3 warm-up = 264 samples of the 400 files (40 MB), plus what the queues read ahead;
 *    should the read reach the end of the files, it starts a second epoch at once. */
static void test_read_bandwidth(void **state) {
  const char *cfg = raw_config("read-bandwidth", 400, 100000, ",'threads':2,'bandwidth_mb_per_s':20", 8, 10, 30);
  gen_ok(cfg);
  cJSON *rep = run_report(cfg, "read-bandwidth", NULL);
  expect_planted(rep, "read bandwidth", "read", 20e6 / 100000, 8, 10);
}

/* 6. h2d capped: batches of 8 x [512,512,3] uint8 = 6,291,456 bytes over the emulated device's
 *    0.1 GB/s = 62.9 ms per copy in the h2d stage = R 8 / 62.9 ms = 127.2 samples/s; S 5 ms:
 *    idle = 1 - 5/62.9 = 92.1 %.  No per-sample stage: the synthetic source feeds the batch directly.
 *    The rate is low enough that collating 6 MB batches stays well ahead of it even under TSan (at
 *    0.25 GB/s, 318/s, TSan's instrumented copies made batch the true bottleneck at 273/s). */
static void test_h2d_capped(void **state) {
  const char *cfg = synthetic_config("h2d-capped", "[512,512,3]", "", 8, 5, ",'h2d_gb_per_s':0.1");
  cJSON *rep = run_report(cfg, "h2d-capped", NULL);
  double copy_s = 8.0 * 512 * 512 * 3 / 0.1e9;
  expect_planted(rep, "h2d capped", "h2d", 8 / copy_s, 8, 5);
}

/* 7. device-bound: a map sleeping 10 us per sample (R 100,000/s, in practice a few 10,000/s with the
 *    timer slack) cannot hold back a device of 20 ms per batch of 16: idle = 0, not input-bound. */
static void test_device_bound(void **state) {
  const char *cfg = synthetic_config("device-bound", "[64,64,3]",
                                     "{'name':'augment','type':'map','threads':1,'ops':[{'op':'sleep','us':10}]},",
                                     16, 20, "");
  cJSON *rep = run_report(cfg, "device-bound", NULL);
  expect_planted(rep, "device bound", "device", 1e6 / 10, 16, 20);
  assert_string_equal(str(rep, "classification"), "not_input_bound");
}

/* 12. two slow stages in a row (the review's case): "first" 2000 us per sample, "second" 1200 us, one
 *     thread each.  The second is busy 60 % of the time, so a walk that took an element's emit for its
 *     arrival (outputs go out in chunks) could stay on "second"; the hand-off events keep it honest.
 *     R 500/s, B 16, S 10 ms: idle = 68.75 %. */
static void test_two_slow_stages_in_a_row(void **state) {
  const char *cfg = synthetic_config("two-slow", "[64,64,3]",
                                     "{'name':'first','type':'map','threads':1,'ops':[{'op':'sleep','us':2000}]},"
                                     "{'name':'second','type':'map','threads':1,'ops':[{'op':'sleep','us':1200}]},",
                                     16, 10, "");
  cJSON *rep = run_report(cfg, "two-slow", NULL);
  expect_planted(rep, "two slow in a row", "first", 1e6 / 2000, 16, 10);
}

/* 13. a long run (issue 31): the starved case at batches of 4 and 1 ms steps, 1,100 measured steps.
 *     "fast" 8 threads x 2000 us = 4000/s, "slow" 1 thread x 500 us = R 2000/s; B 4, S 1 ms: 2 ms per
 *     batch, idle = 50 %.  Past ~1,000 steps the old stage graph lost every parent after "slow" (a
 *     strided sample of the events aliased with its period) and blamed h2d with ~0 self time. */
static void test_long_run(void **state) {
  const char *cfg = write_config("long-run",
                                 "{'name':'long-run','seed':1,"
                                 "'dataset':{'format':'synthetic','shape':[64],'dtype':'uint8'},"
                                 "'stages':[{'name':'fast','type':'map','threads':8,'ops':[{'op':'sleep','us':2000}]},"
                                 "  {'name':'slow','type':'map','threads':1,'ops':[{'op':'sleep','us':500}]},"
                                 "  {'name':'batch','type':'batch','size':4},"
                                 "  {'name':'prefetch','type':'prefetch','depth':2},{'name':'h2d','type':'h2d'}],"
                                 "'device':{'kind':'emulated','step_ms':1},"
                                 "'run':{'steps':1100,'warmup_steps':%d}}",
                                 WARMUP);
  cJSON *rep = run_report(cfg, "long-run", NULL);
  expect_planted(rep, "long run", "slow", 1e6 / 500, 4, 1);
  const char *child[] = {"fast", "slow", "batch", "prefetch", "h2d"};
  const char *parent[] = {"source", "fast", "slow", "batch", "prefetch"};
  for (int i = 0; i < 5; i++) {
    cJSON *p = at(stage(rep, child[i]), "graph.parent");
    if (!cJSON_IsString(p) || strcmp(p->valuestring, parent[i]) != 0)
      fail_msg("long run: graph.parent of %s is %s, expected \"%s\"", child[i],
               cJSON_IsString(p) ? p->valuestring : "not a string", parent[i]);
  }
}

/* 14. the machine as it is (issue 31): two threads spinning 1 ms of CPU each under `taskset -c 0` get one
 *     core: 1000 samples/s for a device of 4000 (B 16, S 4 ms): idle = 1 - 4/16 = 75 %.  The report
 *     must see one usable core and name the cores, never recommend threads, and predict what a second
 *     core gives (2 threads x 1 ms = 2000/s). */
static void test_taskset_cores(void **state) {
  if (access("/usr/bin/taskset", X_OK) != 0 || sysconf(_SC_NPROCESSORS_ONLN) < 2) skip();
  const char *cfg = synthetic_config("taskset", "[64]",
                                     "{'name':'augment','type':'map','threads':2,'ops':[{'op':'spin','us':1000}]},",
                                     16, 4, "");
  char out[400];
  snprintf(out, sizeof out, "%s/out-taskset", g_tmp);
  result *r = run_pb_with(ARGS("/usr/bin/taskset", "-c", "0"),
                          ARGS("run", "--config", cfg, "--out", out, "--quiet", "--no-progress"));
  if (r->status != 0) fail_msg("taskset run: exit %d: %s", r->status, r->err);
  cJSON *rep = load_report(out);
  printf("taskset -c 0: usable %.2f (%s), others %.2f, bottleneck %s, idle %.2f %% (expected 75 %%): %s\n",
         num(rep, "machine.cores_usable"), str(rep, "machine.limited_by"), num(rep, "machine.cores_taken_by_others"),
         str(rep, "bottleneck.stage"), num(rep, "device_idle_pct"), str(rep, "bottleneck.reason"));
  assert_true(num(rep, "machine.cores_usable") == 1);
  assert_non_null(strstr(str(rep, "machine.limited_by"), "affinity"));
  assert_string_equal(str(rep, "bottleneck.stage"), "cores");
  double idle = num(rep, "device_idle_pct");
  if (idle < 75 - IDLE_TOL_PCT || idle > 75 + IDLE_TOL_PCT) fail_msg("idle %.2f %%, expected 75 +- 3", idle);
  cJSON *rc;
  bool more_cores = false;
  cJSON_ArrayForEach(rc, at(rep, "recommendations")) {
    if (strstr(str(rc, "action"), "threads")) fail_msg("a threads recommendation at the cores' limit: %s", str(rc, "action"));
    if (strcmp(str(rc, "kind"), "cores") == 0) {
      more_cores = true;
      double pred = num(rc, "predicted_samples_per_s");
      if (pred < 1700 || pred > 2100) fail_msg("more cores predicted %.1f samples/s, expected about 2000", pred);
    }
  }
  assert_true(more_cores);
  assert_accounting_balances(rep);
}

/* 15. variance (issue 31): device steps N(5, 30) ms clamped at 0 (mean ~14.6 ms, 35,000 samples/s needed at
 *     B 512), a map of 12 threads sleeping 0.25 ms (~1.2x that fast with the wake-up latency), prefetch
 *     depth 1: the sample queue holds half a batch.  The device waits after runs of short steps (~8 % with
 *     this seed's steps), not because the map is slow on average: the top advice is a deeper prefetch, and
 *     applied it lowers the idle.  The model is optimistic here (docs/ACCURACY.md; more so under the
 *     sanitizers, whose wake-ups are slower), so this checks the direction only. */
static void test_bursty_device_prefetch(void **state) {
  const char *cfg = write_config("bursty",
                                 "{'name':'bursty','seed':1,"
                                 "'dataset':{'format':'synthetic','shape':[64],'dtype':'uint8'},"
                                 "'stages':[{'name':'augment','type':'map','threads':12,'ops':[{'op':'sleep','us':250}]},"
                                 "  {'name':'batch','type':'batch','size':512},"
                                 "  {'name':'prefetch','type':'prefetch','depth':1},{'name':'h2d','type':'h2d'}],"
                                 "'device':{'kind':'emulated','step_ms':{'dist':'normal','mean':5,'stdev':30}},"
                                 "'run':{'steps':600,'warmup_steps':3}}");
  cJSON *rep = run_report(cfg, "bursty", NULL);
  /* The case is about variance: augment's mean capacity (12 / 250 us, 48,000/s planted) must stay clear of
   * the device's mean rate, or the right advice is threads, not prefetch. A slow build (TSan) or a loaded
   * machine stretches each sleep until the two meet; the test then has nothing to check. */
  double cap = num(rep, "capacity_model.lowest_capacity_per_s"), dev = num(rep, "capacity_model.device_rate_per_s");
  if (cap < 1.1 * dev) {
    printf("bursty: skipped, augment's capacity %.0f/s is within 10 %% of the device's %.0f/s on this build\n", cap, dev);
    skip();
  }
  cJSON *top = cJSON_GetArrayItem(at(rep, "recommendations"), 0);
  printf("bursty: idle %.2f %%, bottleneck %s, top %s\n", num(rep, "device_idle_pct"), str(rep, "bottleneck.stage"),
         top ? str(top, "action") : "none");
  if (!top) fail_msg("no recommendation for a bursty device at prefetch depth 1 (idle %.2f %%)", num(rep, "device_idle_pct"));
  assert_string_equal(str(top, "kind"), "prefetch");
  const char *action = str(top, "action");
  cJSON *after = run_report(cfg, "bursty-applied", ARGS("--set", action + strlen("--set ")));
  double want = num(top, "predicted_idle_pct"), got = num(after, "device_idle_pct");
  printf("bursty: %s -> idle %.2f %% (predicted %.2f %%), %.1f samples/s (predicted %.1f)\n", action, got, want,
         num(after, "throughput.samples_per_s"), num(top, "predicted_samples_per_s"));
  double before = num(rep, "device_idle_pct");
  if (!(got < before - 1)) fail_msg("with %s: idle %.2f %% (before %.2f %%, predicted %.2f %%)", action, got, before, want);
  assert_accounting_balances(after);
}

/* ---------- 8. --no-trace: the capacity model alone ---------- */

static void test_no_trace_capacity_model_only(void **state) {
  cJSON *rep = run_report(map_sleep_config(), "map-sleep-notrace", ARGS("--no-trace"));
  if (!cJSON_IsNull(at(rep, "critical_path"))) fail_msg("critical_path is not null with --no-trace");
  assert_true(cJSON_IsFalse(at(rep, "trace.enabled")));
  const char *reason = str(rep, "bottleneck.reason");
  printf("no-trace: bottleneck %s, idle %.2f %% (expected %.2f %%): %s\n", str(rep, "bottleneck.stage"),
         num(rep, "device_idle_pct"), expected_idle_pct(MAP_SLEEP_R, MAP_SLEEP_B, MAP_SLEEP_S), reason);
  assert_string_equal(str(rep, "bottleneck.stage"), "augment");
  if (!strstr(reason, "capacity model only")) fail_msg("the reason does not say \"capacity model only\": %s", reason);
  double cap = num(stage(rep, "augment"), "capacity_per_s");
  double idle = num(rep, "device_idle_pct"), want = expected_idle_pct(cap < MAP_SLEEP_R ? cap : MAP_SLEEP_R, MAP_SLEEP_B, MAP_SLEEP_S);
  if (cap < (1 - CAP_TOL) * MAP_SLEEP_R) fail_msg("capacity_per_s of augment %.1f, planted %.1f", cap, (double)MAP_SLEEP_R);
  if (idle < want - IDLE_TOL_PCT || idle > want + IDLE_TOL_PCT)
    fail_msg("device_idle_pct %.2f, expected %.2f +- %.0f", idle, want, IDLE_TOL_PCT);
  assert_accounting_balances(rep);
}

/* ---------- 9. the stage graph from lineage ---------- */

/* In case 3 every element's lineage runs source -> slow_per_call -> starved -> batch: each stage's parent
 * is the stage before it. */
static void test_stage_graph_from_lineage(void **state) {
  cJSON *rep = run_report(starved_config(), "starved-graph", NULL);
  const char *child[] = {"slow_per_call", "starved", "batch"};
  const char *parent[] = {"source", "slow_per_call", "starved"};
  for (int i = 0; i < 3; i++) {
    cJSON *p = at(stage(rep, child[i]), "graph.parent");
    if (!cJSON_IsString(p)) fail_msg("graph.parent of %s is not a string", child[i]);
    printf("graph: %s <- %s\n", child[i], p->valuestring);
    if (strcmp(p->valuestring, parent[i]) != 0)
      fail_msg("graph.parent of %s is \"%s\", expected \"%s\"", child[i], p->valuestring, parent[i]);
    if (!(num(stage(rep, child[i]), "graph.calls") > 0)) fail_msg("graph.calls of %s is 0", child[i]);
  }
  cJSON *root = at(stage(rep, "source"), "graph.parent");
  if (!cJSON_IsNull(root)) fail_msg("graph.parent of the source is not null");
}

/* ---------- 10. a recommendation, applied ---------- */

/* Case 1's first recommendation adds augment threads and predicts more than the measured rate; running
 * the config again with that --set measures within 15 % of the prediction. */
static void test_recommendation_applied(void **state) {
  const char *cfg = map_sleep_config();
  cJSON *rep = run_report(cfg, "map-sleep-rec", NULL);
  cJSON *rec = cJSON_GetArrayItem(at(rep, "recommendations"), 0);
  if (!rec) fail_msg("no recommendation for a planted map bottleneck");
  const char *action = str(rec, "action");
  const char *prefix = "--set stages.augment.threads=";
  if (strncmp(action, prefix, strlen(prefix)) != 0)
    fail_msg("first recommendation \"%s\", expected \"%sN\"", action, prefix);
  int threads = atoi(action + strlen(prefix));
  if (threads <= 1) fail_msg("recommended augment threads %d, expected more than 1: %s", threads, action);
  double measured = num(rep, "throughput.samples_per_s"), predicted = num(rec, "predicted_samples_per_s");
  if (!(predicted > measured))
    fail_msg("predicted %.1f samples/s, not more than the measured %.1f", predicted, measured);

  cJSON *after = run_report(cfg, "map-sleep-applied", ARGS("--set", action + strlen("--set ")));
  double got = num(after, "throughput.samples_per_s");
  printf("recommendation \"%s\": measured %.1f samples/s before, predicted %.1f, measured %.1f after (%+.1f %%)\n",
         action, measured, predicted, got, 100.0 * (got - predicted) / predicted);
  if (got < 0.85 * predicted || got > 1.15 * predicted)
    fail_msg("with %s: %.1f samples/s, predicted %.1f (more than 15 %% apart)", action, got, predicted);
  assert_accounting_balances(after);
}

/* ---------- fixture ---------- */

/* ---------- 11. trace.json, and `pipebench analyze` reproducing the report from it alone ---------- */

/* Reads DIR/trace.json whole (small here) and checks the Chrome Trace Event Format shape of docs/CONTRACT.md §5. */
static void expect_chrome_trace(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/trace.json", dir);
  cJSON *t = load_json(path);
  cJSON *events = cJSON_GetObjectItemCaseSensitive(t, "traceEvents");
  assert_true(cJSON_IsArray(events));
  int complete = 0, steps = 0, flow_start = 0, flow_end = 0, device_pid = 0;
  cJSON *e;
  cJSON_ArrayForEach(e, events) {
    const char *ph = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "ph"));
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));
    assert_non_null(ph);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "pid")));
    if (strcmp(ph, "X") == 0) {
      complete++;
      assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "ts")));
      assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "dur")));
      assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "tid")));
      if (name && strncmp(name, "step ", 5) == 0) {
        steps++;
        device_pid = (int)num(e, "pid");
      }
    }
    if (strcmp(ph, "s") == 0) flow_start++;
    if (strcmp(ph, "f") == 0) flow_end++;
  }
  if (complete < 100 || steps < 30) fail_msg("trace.json: %d complete events, %d steps", complete, steps);
  assert_int_equal(flow_start, 1); /* one sample's journey */
  assert_int_equal(flow_end, 1);
  assert_true(device_pid != 1);    /* the device is a process of its own */
  assert_non_null(cJSON_GetObjectItemCaseSensitive(t, "pipebench"));
}

static void test_analyze_reproduces_report(void **state) {
  cJSON *rep = run_report(starved_config(), "analyze-src", NULL);
  char src[400], dst[400];
  snprintf(src, sizeof src, "%s/out-analyze-src", g_tmp);
  snprintf(dst, sizeof dst, "%s/out-analyze-dst", g_tmp);
  expect_chrome_trace(src);
  result *r = run_pb(ARGS("analyze", src, "--out", dst, "--quiet"));
  if (r->status != 0) fail_msg("analyze: exit %d: %s", r->status, r->err);
  cJSON *again = load_report(dst);
  /* The analysis itself, key by key (clearer failures), then the whole report. */
  static const char *const keys[] = {"critical_path", "bottleneck", "capacity_model", "recommendations", "stages",
                                     "step_breakdown_ms", "device_idle_pct", "classification", "trace",
                                     "accounting", "throughput", "steps"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (!cJSON_Compare(at(rep, keys[i]), at(again, keys[i]), true)) fail_msg("analyze: %s differs", keys[i]);
  assert_true(cJSON_Compare(rep, again, true));
  /* A directory without a trace, like a path that is not there or a file that is not a trace, is a usage
   * error (2): the PATH named the wrong thing.  This one holds the suite's runs: analyze names them. */
  r = run_pb(ARGS("analyze", g_tmp));
  assert_one_error_line(r, 2, "with no trace.json of its own (expected one of its runs, e.g. pipebench analyze ");
  r = run_pb(ARGS("analyze", starved_config()));
  assert_one_error_line(r, 2, NULL);
}

static int make_tmp(void **state) { return e2e_make_tmp("pipebench-e2e-bottleneck"); }

/* 15. a batch made on demand (tf.data without prefetch): a map of one thread sleeping 500 us per sample with
 *     1 sample ahead, a batch of 16 `on_demand` straight to the device, 10 ms steps.  The batch starts only
 *     when the device asks, and finds the one sample the map had ahead: the other 15 take 7.5 ms while the
 *     device waits, idle = 7.5 / 17.5 = 42.9 % (more by the hand-offs between the threads).  The same
 *     pipeline batching ahead (no on_demand, no ahead) makes 16 samples in 8 ms, inside a 10 ms step:
 *     idle near 0. */
static const char *on_demand_config(const char *name, const char *map_keys, const char *batch_keys) {
  return write_config(name,
                      "{'name':'%s','seed':1,'dataset':{'format':'synthetic','shape':[16],'dtype':'uint8'},"
                      "'stages':[{'name':'augment','type':'map','threads':1%s,'ops':[{'op':'sleep','us':500}]},"
                      "  {'name':'batch','type':'batch','size':16%s}],"
                      "'device':{'kind':'emulated','step_ms':10},'run':{'steps':%d,'warmup_steps':%d}}",
                      name, map_keys, batch_keys, STEPS, WARMUP);
}

static void test_batch_on_demand(void **state) {
  cJSON *demand = run_report(on_demand_config("on-demand", ",'ahead':1", ",'on_demand':true"), "on-demand", NULL);
  cJSON *ahead = run_report(on_demand_config("batch-ahead", "", ""), "batch-ahead", NULL);
  double idle = num(demand, "device_idle_pct"), idle_ahead = num(ahead, "device_idle_pct");
  printf(
      "planted on demand     : bottleneck %-8s idle %6.2f %% (expected 42.86 %% and the hand-offs), batching "
      "ahead %.2f %% (expected ~0), %.1f vs %.1f samples/s\n",
      str(demand, "bottleneck.stage"), idle, idle_ahead, num(demand, "throughput.samples_per_s"),
      num(ahead, "throughput.samples_per_s"));
  if (idle < 38 || idle > 60) fail_msg("on demand: device_idle_pct %.2f, expected 42.86 and at most 60", idle);
  if (idle_ahead > 10) fail_msg("batching ahead: device_idle_pct %.2f, expected near 0", idle_ahead);
  assert_string_equal(str(demand, "bottleneck.stage"), "augment");
  assert_accounting_balances(demand);
  assert_accounting_balances(ahead);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_map_sleep, free_reports),
      cmocka_unit_test_teardown(test_map_spin, free_reports),
      cmocka_unit_test_teardown(test_starved_threads, free_reports),
      cmocka_unit_test_teardown(test_read_latency, free_reports),
      cmocka_unit_test_teardown(test_read_bandwidth, free_reports),
      cmocka_unit_test_teardown(test_h2d_capped, free_reports),
      cmocka_unit_test_teardown(test_device_bound, free_reports),
      cmocka_unit_test_teardown(test_no_trace_capacity_model_only, free_reports),
      cmocka_unit_test_teardown(test_stage_graph_from_lineage, free_reports),
      cmocka_unit_test_teardown(test_recommendation_applied, free_reports),
      cmocka_unit_test_teardown(test_analyze_reproduces_report, free_reports),
      cmocka_unit_test_teardown(test_two_slow_stages_in_a_row, free_reports),
      cmocka_unit_test_teardown(test_long_run, free_reports),
      cmocka_unit_test_teardown(test_taskset_cores, free_reports),
      cmocka_unit_test_teardown(test_bursty_device_prefetch, free_reports),
      cmocka_unit_test_teardown(test_batch_on_demand, free_reports),
  };
  return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}

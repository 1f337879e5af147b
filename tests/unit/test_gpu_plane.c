/* pb_gpu_read on GPU planes that CUPTI really wrote: tests/fixtures/gpu/jax_h100_*.xplane.pb, two captures of a
 * JAX job on an H100 (tests/fixtures/make_gpu_xplane.py; XLA's profiler, the one TensorFlow's is, so the same
 * collector and format).  Each step copies a 9,633,792-byte batch to the GPU and runs a jitted step; 60 steps
 * are marked "train".  The answers come from outside the reader: the job's own figures (jax_h100_expected.json:
 * the batch's bytes, the steps, the step's kernels timed without the profiler), and the counts and busy share
 * that the protobuf library's own parser gives on the same files (worked out once with Python, below). */
#include <cJSON.h>

#include "gpu_plane.h"
#include "unit_util.h"
#include "xspace.h"

typedef struct capture {
  pb_xspace *x;
  pb_gpu_activity g;
  int64_t steps_from_ps, steps_to_ps; /* the first "train" marker's start, the last one's end */
  int nsteps;
} capture;

static capture load(const char *name) {
  char path[1024];
  fixture_path(path, sizeof path, name);
  capture c = {0};
  pb_err err = {0};
  if (pb_xspace_load(path, &c.x, &err)) fail_msg("%s", err.msg);
  assert_int_equal(pb_gpu_read(c.x, &c.g), 0);
  int host = pb_xspace_find_plane(c.x, "/host:CPU");
  assert_true(host >= 0);
  c.steps_from_ps = INT64_MAX, c.steps_to_ps = INT64_MIN;
  for (int l = 0; l < pb_xspace_nlines(c.x, host); l++) {
    pb_xline li;
    pb_xspace_line(c.x, host, l, &li);
    for (size_t e = 0; e < li.nevents; e++) {
      pb_xevent ev;
      int64_t num;
      pb_xspace_event(c.x, host, l, e, &ev);
      if (strcmp(ev.name, "train") != 0 || !pb_xspace_event_int(c.x, host, l, e, "step_num", &num)) continue;
      c.nsteps++;
      if (ev.start_ps < c.steps_from_ps) c.steps_from_ps = ev.start_ps;
      if (ev.start_ps + ev.duration_ps > c.steps_to_ps) c.steps_to_ps = ev.start_ps + ev.duration_ps;
    }
  }
  return c;
}

static void unload(capture *c) {
  pb_gpu_free(&c->g);
  pb_xspace_free(c->x);
}

static cJSON *expected(void) {
  char path[1024];
  fixture_path(path, sizeof path, "gpu/jax_h100_expected.json");
  char *text = slurp(path);
  cJSON *j = cJSON_Parse(text);
  free(text);
  assert_non_null(j);
  return j;
}

static double num(const cJSON *j, const char *a, const char *b, const char *c) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, a);
  if (b) v = cJSON_GetObjectItemCaseSensitive(v, b);
  if (c) v = cJSON_GetObjectItemCaseSensitive(v, c);
  assert_true(cJSON_IsNumber(v));
  return v->valuedouble;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Every step's kernels (ten: the protobuf parser counts 600 events with kernel_details on the plane's compute
 * stream) and its one copy to the device (XLA stages the batch in pinned memory, then one copy of the whole
 * batch: "kind_src:pinned kind_dst:device size:9633792").  The plane's 240 memsets are neither. */
static void check_ops(const capture *c, const cJSON *job) {
  int steps = (int)num(job, "steps", NULL, NULL);
  assert_int_equal(c->nsteps, steps);
  assert_int_equal(c->g.ndevices, 1);
  assert_int_equal(c->g.nkernels, 10 * (size_t)steps);
  assert_int_equal(c->g.nh2d, (size_t)steps);
  assert_int_equal(c->g.nops, 11 * (size_t)steps); /* nothing else: no D2H, no D2D */
  uint64_t batch_bytes = (uint64_t)num(job, "batch_bytes", NULL, NULL);
  double gb_per_s[64];
  size_t ncopies = 0;
  for (size_t i = 0; i < c->g.nops; i++) {
    const pb_gpu_op *op = &c->g.ops[i];
    assert_int_equal(op->device, 0);
    if (i) assert_true(op->start_ps >= c->g.ops[i - 1].start_ps);
    if (op->kind != PB_GPU_H2D) continue;
    assert_int_equal(op->bytes, batch_bytes);
    assert_true(ncopies < sizeof gb_per_s / sizeof *gb_per_s);
    gb_per_s[ncopies++] = (double)op->bytes / ((double)(op->end_ps - op->start_ps) * 1e-12) / 1e9;
  }
  /* Pinned copies of 9.6 MB: the copy loop of tests/gpu/run.sh, on the same machine in the same lease, measured
   * a median of 52.39 GB/s at 4 MiB and 54.64 at 16 MiB (pinned, 100 copies; its slowest 25.26 at 38 MB). */
  qsort(gb_per_s, ncopies, sizeof *gb_per_s, cmp_double);
  assert_double_between(gb_per_s[ncopies / 2], 45.0, 60.0);
  assert_double_between(gb_per_s[0], 20.0, 60.0);
}

/* The kernels' busy share over the steps (what source.gpu_kernel_busy_pct reports): the protobuf parser's union
 * of the same events gives `reference_pct`; the job's figure (its steps' kernels timed without the profiler,
 * from the launch to block_until_ready, times the steps, over the steps' wall time) is an upper bound that
 * the launch and the wait add 0.2 ms a step to (3.87 ms a call at best against 3.65 ms of kernels). */
static void check_busy(const capture *c, const cJSON *job, const char *name, double reference_pct) {
  int64_t busy_ps = pb_gpu_kernel_busy_ps(&c->g, c->steps_from_ps, c->steps_to_ps);
  double pct = 100.0 * (double)busy_ps / (double)(c->steps_to_ps - c->steps_from_ps);
  assert_double_between(pct, reference_pct - 0.01, reference_pct + 0.01);
  double implied_pct = num(job, "captures", name, "implied_kernel_busy_pct");
  assert_double_between(pct, implied_pct - 4.0, implied_pct);
}

/* One capture of the job (`name`: slow_input, fast_input), its busy share as the protobuf parser gives it. */
static void check_capture(const char *name, double reference_pct) {
  char file[128];
  snprintf(file, sizeof file, "gpu/jax_h100_%s.xplane.pb", name);
  cJSON *job = expected();
  capture c = load(file);
  check_ops(&c, job);
  check_busy(&c, job, name, reference_pct);
  unload(&c);
  cJSON_Delete(job);
}

static void test_slow_input(void **state) {
  (void)state;
  check_capture("slow_input", 34.271); /* the job implies 37.13 */
}

static void test_fast_input(void **state) {
  (void)state;
  check_capture("fast_input", 42.445); /* the job implies 46.00 */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slow_input),
      cmocka_unit_test(test_fast_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* pb_tfdata_*: the tf.data job in tests/fixtures/tfdata.xplane.pb (make_xplane.py, tensorflow-cpu 2.21.0):
 * range -> map(x * 2, num_parallel_calls=2) -> map(py_function sleeping 2 ms) -> batch(8) -> prefetch(2), which
 * tf.data rewrites into Range -> ParallelMapV2 -> MapAndBatch (the sleeping map fused with the batch, one call
 * at a time) -> Prefetch, under the Root; 20 steps "train" of next() and a 10 ms sleep.  The figures checked
 * are those a reading of the events by hand gives (tests/fixtures/make_xplane.py's docstring says how). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tfdata.h"
#include "tfdata_verdict.h"
#include "unit_util.h"
#include "xspace.h"

static pb_xspace *load_fixture(void) {
  char path[1024];
  fixture_path(path, sizeof path, "tfdata.xplane.pb");
  pb_xspace *x = NULL;
  pb_err err = {{0}};
  if (pb_xspace_load(path, &x, &err)) fail_msg("%s", err.msg);
  return x;
}

static pb_tfdata read_fixture(void) {
  pb_xspace *x = load_fixture();
  pb_tfdata t;
  pb_err err = {{0}};
  if (pb_tfdata_read(x, "fixture", &t, &err)) fail_msg("%s", err.msg);
  pb_xspace_free(x); /* the model keeps no pointer into the capture */
  return t;
}

static const pb_tf_iterator *kind(const pb_tfdata *t, const char *k) {
  for (int i = 0; i < t->niterators; i++)
    if (strcmp(t->iterators[i].kind, k) == 0) return &t->iterators[i];
  fail_msg("no iterator of kind %s", k);
  return NULL;
}

/* The tree: five iterators, each with its parent, the stats that say what it is, and which run a runner. */
static void test_iterator_tree(void **state) {
  pb_tfdata t = read_fixture();
  assert_string_equal(t.host, "vm");
  assert_int_equal(t.niterators, 5);
  const pb_tf_iterator *root = kind(&t, "Root"), *prefetch = kind(&t, "Prefetch"), *mab = kind(&t, "MapAndBatch"),
                       *pmap = kind(&t, "ParallelMapV2"), *range = kind(&t, "Range");
  assert_int_equal(root->parent, -1);
  assert_ptr_equal(&t.iterators[prefetch->parent], root);
  assert_ptr_equal(&t.iterators[mab->parent], prefetch);
  assert_ptr_equal(&t.iterators[pmap->parent], mab);
  assert_ptr_equal(&t.iterators[range->parent], pmap);
  assert_string_equal(mab->name, "fused(MapDataset:2,BatchDatasetV2:3)");
  assert_string_equal(pmap->name, "ParallelMapDatasetV2:1");
  assert_int_equal(prefetch->buffer_limit, 2);
  assert_int_equal(mab->batch_size, 8);
  assert_int_equal(mab->parallelism, 1);
  assert_int_equal(pmap->parallelism, 2);
  assert_false(pmap->autotune);
  /* the three with a runner line of their own; the range and the root are called in their consumer's thread */
  assert_true(prefetch->async && mab->async && pmap->async);
  assert_false(range->async || root->async);
  /* the chain, source first */
  int chain[8];
  assert_int_equal(pb_tfdata_chain(&t, chain, 8), 5);
  const pb_tf_iterator *want[] = {range, pmap, mab, prefetch, root};
  for (int i = 0; i < 5; i++) assert_ptr_equal(&t.iterators[chain[i]], want[i]);
  pb_tfdata_free(&t);
}

/* The work: the sleeping map's 163 function runs take 2.3 ms each (2 ms of sleep and the py_function's
 * cost; 163 of the 164 started had finished when the capture stopped), the doubling map's 164 about 11 us;
 * the range's own time a few us a call; map-and-batch's 19 calls, each the prefetch's wait for a batch, its
 * eight 2.3 ms elements. */
static void test_iterator_work(void **state) {
  pb_tfdata t = read_fixture();
  const pb_tf_iterator *mab = kind(&t, "MapAndBatch"), *pmap = kind(&t, "ParallelMapV2"), *range = kind(&t, "Range");
  assert_int_equal(mab->functions.n, 163);
  assert_true(pb_tf_times_mean_ns(&mab->functions) > 2.0e6 && pb_tf_times_mean_ns(&mab->functions) < 2.6e6);
  assert_true(pb_tf_times_stdev_ns(&mab->functions) < 0.1 * pb_tf_times_mean_ns(&mab->functions));
  assert_int_equal(pmap->functions.n, 164);
  assert_true(pb_tf_times_mean_ns(&pmap->functions) > 1e3 && pb_tf_times_mean_ns(&pmap->functions) < 100e3);
  assert_int_equal(range->calls.n, 164);
  assert_int_equal(range->functions.n, 0);
  assert_true(pb_tf_times_mean_ns(&range->calls) > 100 && pb_tf_times_mean_ns(&range->calls) < 50e3);
  assert_int_equal(mab->calls.n, 19);
  double batch_ns = pb_tf_times_mean_ns(&mab->calls);
  assert_true(batch_ns > 7.5 * pb_tf_times_mean_ns(&mab->functions) && batch_ns < 8.5 * pb_tf_times_mean_ns(&mab->functions));
  pb_tfdata_free(&t);
}

/* The steps: 20 "train" markers in order; each waited in IteratorGetNext for what the pipeline had not
 * made during the step's 10 ms sleep (a batch takes ~18.6 ms): ~8-9 ms of ~18.5-19.5 ms, the first (the
 * capture's start) 19 of 29 ms.  The wait is the eager call around the GetNext op, counted once. */
static void test_steps(void **state) {
  pb_tfdata t = read_fixture();
  assert_string_equal(t.step_name, "train");
  assert_int_equal(t.nsteps, 20);
  for (size_t i = 0; i < t.nsteps; i++) {
    const pb_tf_step *s = &t.steps[i];
    assert_int_equal(s->num, (int64_t)i);
    assert_int_equal(s->element_bytes, 64); /* a batch of 8 int64 */
    assert_true(s->wait_ps > 0 && s->wait_ps < s->duration_ps);
    if (i > 0) {
      assert_true(s->start_ps > t.steps[i - 1].start_ps);
      double device_ms = (double)(s->duration_ps - s->wait_ps) / 1e9; /* the 10 ms sleep and python's cost */
      assert_true(device_ms > 10.0 && device_ms < 11.0);
    }
    /* the pipeline's own part (its Iterator::Root call) is inside the wait; the rest, the call's dispatch (the
     * eager op around it, Python's iterator), is a fraction of a millisecond */
    assert_true(s->pipeline_ps > 0 && s->pipeline_ps <= s->wait_ps);
    assert_true(s->wait_ps - s->pipeline_ps < 1000000000); /* 1 ms */
  }
  double pct = pb_tfdata_input_bound_pct(&t);
  assert_true(pct > 44 && pct < 49);
  pb_tfdata_free(&t);
}

/* The capture's own verdict: 47.7 % waiting, so input-bound; the sleeping map-and-batch (one call at a time of
 * ~2.34 ms latency: ~427 samples/s) the slowest; the device takes 8 samples per ~10.4 ms step (~770/s); the
 * advice, in tf.data's terms, two parallel calls (within the root's cpu_budget of 2), predicted at the device's
 * rate; the prefetch at the end and no repeat: nothing else. */
static void test_verdict(void **state) {
  pb_tfdata t = read_fixture();
  pb_tf_verdict v;
  pb_tfdata_verdict(&t, &v);
  const pb_tf_iterator *mab = kind(&t, "MapAndBatch");
  assert_ptr_equal(&t.iterators[v.bottleneck], mab);
  assert_int_equal(v.batch_size, 8);
  double cap = v.capacity_per_s[v.bottleneck];
  assert_true(cap > 380 && cap < 480);
  assert_true(fabs(cap - 1e9 / pb_tf_times_mean_ns(&mab->latency)) < 1e-6 * cap); /* parallelism 1 */
  assert_true(v.device_per_s > 720 && v.device_per_s < 800);
  assert_true(v.actual_per_s > 400 && v.actual_per_s < 450);
  assert_true(isnan(v.capacity_per_s[kind(&t, "Prefetch") - t.iterators]));
  assert_true(isnan(v.capacity_per_s[kind(&t, "Root") - t.iterators]));
  assert_int_equal(v.nadvice, 1);
  assert_string_equal(v.advice[0].text, "num_parallel_calls=2 on fused(MapDataset:2,BatchDatasetV2:3) (now 1)");
  assert_true(fabs(v.advice[0].predicted_per_s - v.device_per_s) < 1e-9); /* 2 x 427 > 770: the device's rate */
  /* not input-bound below 5 %: the device; no advice */
  for (size_t i = 0; i < t.nsteps; i++) t.steps[i].wait_ps /= 20;
  pb_tfdata_verdict(&t, &v);
  assert_int_equal(v.bottleneck, -1);
  assert_int_equal(v.nadvice, 0);
  pb_tfdata_free(&t);
}

/* What is not a tf.data capture: one line. */
/* pb_tfdata_work_drift_pct on a job made by hand: two iterators' function runs spread evenly over 0-90 ms (their
 * thirds: starts before 30 ms, from 60 ms), a third too few in each third to count, and the sums worked out here. */
static void add_runs(pb_tfdata *t, int iterator, int n, int64_t from_ps, int64_t to_ps, int64_t own_ps) {
  for (int i = 0; i < n; i++) {
    pb_tf_work *w = &t->work[t->nwork++];
    *w = (pb_tf_work){.iterator = iterator, .kind = PB_TF_FUNCTION, .own_ps = own_ps};
    w->start_ps = from_ps + (to_ps - from_ps) * i / n;
    w->end_ps = w->start_ps + own_ps;
  }
}

static void test_work_drift(void **state) {
  static pb_tfdata t;
  static pb_tf_work work[200];
  memset(&t, 0, sizeof t);
  t.work = work, t.niterators = 3;
  assert_true(isnan(pb_tfdata_work_drift_pct(&t))); /* no runs */
  const int64_t MS = 1000000000;                    /* ps */
  /* iterator 0: 10 runs of 100 us in the first third, 10 of 200 us in the last: +100 % */
  add_runs(&t, 0, 10, 0, 30 * MS, 100000000), add_runs(&t, 0, 10, 60 * MS, 90 * MS, 200000000);
  add_runs(&t, 0, 1, 90 * MS, 90 * MS + 1, 200000000); /* the span's end: 90 ms */
  assert_float_equal(pb_tfdata_work_drift_pct(&t), 100.0, 1e-9);
  /* iterator 1: 30 runs of 1000 us, 10 in each third, the middle's not counted but weighing its 30 runs:
   * (21 x 200 + 30 x 1000) / (21 x 100 + 30 x 1000) - 1 = 34200 / 32100 - 1 */
  add_runs(&t, 1, 30, 0, 90 * MS, 1000000000);
  assert_float_equal(pb_tfdata_work_drift_pct(&t), 100.0 * (34200.0 / 32100.0 - 1), 1e-9);
  /* iterator 2: 4 runs in each third, under PB_TF_DRIFT_MIN_RUNS: left out, however slow */
  add_runs(&t, 2, 4, 0, 29 * MS, 1000), add_runs(&t, 2, 4, 61 * MS, 89 * MS, 1000000000000);
  assert_float_equal(pb_tfdata_work_drift_pct(&t), 100.0 * (34200.0 / 32100.0 - 1), 1e-9);
  /* a call is not a function run */
  t.work[t.nwork++] = (pb_tf_work){.iterator = 1, .kind = PB_TF_CALL, .start_ps = 89 * MS, .own_ps = 1000000000000};
  assert_float_equal(pb_tfdata_work_drift_pct(&t), 100.0 * (34200.0 / 32100.0 - 1), 1e-9);
}

/* The fixture's two maps ran alike from start to end (a sleep, a doubling): within 10 %. */
static void test_fixture_drift(void **state) {
  pb_tfdata t = read_fixture();
  double drift = pb_tfdata_work_drift_pct(&t);
  if (!(fabs(drift) < 10)) fail_msg("drift %.2f %%", drift);
  pb_tfdata_free(&t);
}

static void test_refused(void **state) {
  static const uint8_t empty_space[] = {0x0a, 0x00}; /* an XSpace with one plane without a name */
  pb_xspace *x = NULL;
  pb_err err = {{0}};
  assert_int_equal(pb_xspace_parse(empty_space, sizeof empty_space, "empty.pb", &x, &err), 0);
  pb_tfdata t;
  assert_int_equal(pb_tfdata_read(x, "empty.pb", &t, &err), -EBADMSG);
  assert_non_null(strstr(err.msg, "empty.pb: no host plane"));
  assert_null(strchr(err.msg, '\n'));
  pb_xspace_free(x);
  /* a host plane without a tf.data iterator (a capture of a job that does not use tf.data) */
  static const uint8_t no_iterators[] = {0x0a, 0x0b, 0x12, 0x09, '/', 'h', 'o', 's', 't', ':', 'C', 'P', 'U'};
  assert_int_equal(pb_xspace_parse(no_iterators, sizeof no_iterators, "cpu.pb", &x, &err), 0);
  assert_int_equal(pb_tfdata_read(x, "cpu.pb", &t, &err), -EBADMSG);
  assert_non_null(strstr(err.msg, "cpu.pb: no tf.data iterator events"));
  pb_xspace_free(x);
}

/* gpu_plane.h: a copy's direction from its memcpy_details as XLA writes it, and the kernels' busy time as a
 * union (overlapping streams counted once, copies not counted). */
static void test_gpu_plane(void **state) {
  (void)state;
  uint64_t bytes = 0;
  assert_int_equal(pb_gpu_memcpy_kind("kind_src:pageable kind_dst:device size:602112 dest:0 async:1", &bytes),
                   PB_GPU_H2D);
  assert_int_equal(bytes, 602112);
  assert_int_equal(pb_gpu_memcpy_kind("kind_src:pinned kind_dst:array size:8 dest:0 async:0", &bytes), PB_GPU_H2D);
  assert_int_equal(pb_gpu_memcpy_kind("kind_src:device kind_dst:pinned size:4 dest:0 async:0", &bytes), PB_GPU_D2H);
  assert_int_equal(pb_gpu_memcpy_kind("kind_src:device kind_dst:device size:4", &bytes), PB_GPU_D2D);
  assert_int_equal(pb_gpu_memcpy_kind("size:4 kind_dst:device", &bytes), 0);             /* no source kind */
  assert_int_equal(pb_gpu_memcpy_kind("xkind_src:pageable kind_dst:device", &bytes), 0); /* a field's whole name */
  pb_gpu_op ops[] = {{0, 10, 0, PB_GPU_KERNEL, 0},
                     {5, 12, 0, PB_GPU_KERNEL, 0}, /* overlaps the first: 2 more */
                     {6, 8, 0, PB_GPU_KERNEL, 1},  /* inside both: nothing more */
                     {13, 20, 0, PB_GPU_H2D, 0},   /* a copy: not the kernels' */
                     {30, 40, 0, PB_GPU_KERNEL, 0}};
  pb_gpu_activity g = {.ndevices = 2, .ops = ops, .nops = 5};
  assert_int_equal(pb_gpu_kernel_busy_ps(&g, 0, 100), 22);
  assert_int_equal(pb_gpu_kernel_busy_ps(&g, 7, 35), 5 + 5); /* clipped at both ends */
  assert_int_equal(pb_gpu_kernel_busy_ps(&g, 12, 30), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_iterator_tree), cmocka_unit_test(test_iterator_work), cmocka_unit_test(test_steps),
      cmocka_unit_test(test_verdict),       cmocka_unit_test(test_work_drift),    cmocka_unit_test(test_fixture_drift),
      cmocka_unit_test(test_refused),       cmocka_unit_test(test_gpu_plane),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

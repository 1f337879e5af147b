/* pb_xspace_*: a TensorFlow Profiler capture made by TensorFlow itself (tests/fixtures/tfdata.xplane.pb:
 * range -> map(x2, 2 parallel calls) -> map(py_function sleeping 2 ms) -> batch 8 -> prefetch 2, 20 steps
 * marked with tf.profiler.experimental.Trace("train", step_num=..); written by make_xplane.py with
 * tensorflow-cpu 2.21.0), and what is not one refused with one line. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

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

/* The line called `name` (or starting with it, when prefix), or -1. */
static int find_line(const pb_xspace *x, int plane, const char *name, bool prefix) {
  for (int l = 0; l < pb_xspace_nlines(x, plane); l++) {
    pb_xline li;
    pb_xspace_line(x, plane, l, &li);
    if (prefix ? strncmp(li.name, name, strlen(name)) == 0 : strcmp(li.name, name) == 0) return l;
  }
  return -1;
}

static void test_planes_lines_and_steps(void **state) {
  pb_xspace *x = load_fixture();
  assert_int_equal(pb_xspace_nhosts(x), 1);
  assert_string_equal(pb_xspace_host(x, 0), "vm");
  int host = pb_xspace_find_plane(x, "/host:CPU");
  assert_int_equal(host, 0);
  assert_int_equal(pb_xspace_find_plane(x, "/device:GPU:0"), -1);
  int iterators = 0;
  for (int l = 0; l < pb_xspace_nlines(x, host); l++) {
    pb_xline li;
    pb_xspace_line(x, host, l, &li);
    iterators += strncmp(li.name, "tf_data_iterator_resource/", 26) == 0;
  }
  assert_int_equal(iterators, 3);
  /* the 20 step markers, in order, each with its step_num */
  int py = find_line(x, host, "python", false);
  assert_true(py >= 0);
  pb_xline li;
  pb_xspace_line(x, host, py, &li);
  int64_t steps = 0, last_start = 0;
  for (size_t e = 0; e < li.nevents; e++) {
    pb_xevent ev;
    pb_xspace_event(x, host, py, e, &ev);
    if (strcmp(ev.name, "train") != 0) continue;
    int64_t n = -1;
    assert_true(pb_xspace_event_int(x, host, py, e, "step_num", &n));
    assert_int_equal(n, steps);
    assert_true(ev.duration_ps > 0 && ev.start_ps > last_start);
    last_start = ev.start_ps, steps++;
  }
  assert_int_equal(steps, 20);
  pb_xspace_free(x);
}

/* The tf.data iterator tree: the parallel map's event names its dataset, its parallelism, and a parent_id
 * that is the id of the fused map-and-batch iterator's event. */
static void test_iterator_stats_and_lineage(void **state) {
  pb_xspace *x = load_fixture();
  int64_t map_parent = 0, batch_id = 0, parallelism = 0, batch_size = 0;
  const char *map_name = NULL, *batch_name = NULL;
  for (int l = 0; l < pb_xspace_nlines(x, 0); l++) {
    pb_xline li;
    pb_xspace_line(x, 0, l, &li);
    for (size_t e = 0; e < li.nevents; e++) {
      pb_xevent ev;
      pb_xspace_event(x, 0, l, e, &ev);
      if (!map_name && strcmp(ev.name, "Iterator::Root::Prefetch::MapAndBatch::ParallelMapV2") == 0) {
        assert_true(pb_xspace_event_str(x, 0, l, e, "name", &map_name));
        assert_true(pb_xspace_event_int(x, 0, l, e, "parallelism", &parallelism));
        assert_true(pb_xspace_event_int(x, 0, l, e, "parent_id", &map_parent));
      }
      if (!batch_name && strcmp(ev.name, "Iterator::Root::Prefetch::MapAndBatch") == 0) {
        assert_true(pb_xspace_event_str(x, 0, l, e, "name", &batch_name));
        assert_true(pb_xspace_event_int(x, 0, l, e, "id", &batch_id));
        assert_true(pb_xspace_event_int(x, 0, l, e, "batch_size", &batch_size));
      }
    }
  }
  assert_non_null(map_name);
  assert_non_null(batch_name);
  assert_string_equal(map_name, "ParallelMapDatasetV2:1");
  assert_string_equal(batch_name, "fused(MapDataset:2,BatchDatasetV2:3)");
  assert_int_equal(parallelism, 2);
  assert_int_equal(batch_size, 8);
  assert_true(map_parent == batch_id); /* 64-bit ids, compared as stored */
  int64_t none;
  assert_false(pb_xspace_event_int(x, 0, 0, 0, "no_such_stat", &none));
  pb_xspace_free(x);
}

static void test_not_an_xspace(void **state) {
  pb_xspace *x = (pb_xspace *)1;
  pb_err err = {{0}};
  const uint8_t garbage[] = {0x0a, 0x05, 0xff, 0xff, 0xff, 0xff, 0xff, 0x08}; /* a plane cut short */
  assert_int_equal(pb_xspace_parse(garbage, sizeof garbage, "x.pb", &x, &err), -EBADMSG);
  assert_null(x);
  assert_non_null(strstr(err.msg, "x.pb: not a TensorFlow Profiler XSpace (8 bytes"));
  assert_int_equal(pb_xspace_parse((const uint8_t *)"", 0, "empty.pb", &x, &err), -EBADMSG);
  assert_non_null(strstr(err.msg, "empty.pb: an XSpace with no planes"));
  assert_int_equal(pb_xspace_load("/nonexistent/host.xplane.pb", &x, &err), -ENOENT);
  assert_non_null(strstr(err.msg, "/nonexistent/host.xplane.pb: cannot read it"));
  pb_xspace_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_planes_lines_and_steps),
      cmocka_unit_test(test_iterator_stats_and_lineage),
      cmocka_unit_test(test_not_an_xspace),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

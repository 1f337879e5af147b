/* pb_twin_config: the twin of the tf.data job in tests/fixtures/tfdata.xplane.pb (see test_tfdata.c): a stage
 * per iterator, source first, with the parallelism, batch size, prefetch depth and times the capture
 * measured, a device of the steps' time less their input wait; and it loads as a pipebench config. */
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

#include "config.h"
#include "tfdata.h"
#include "twin.h"
#include "unit_util.h"
#include "xspace.h"

static pb_tfdata read_fixture(void) {
  char path[1024];
  fixture_path(path, sizeof path, "tfdata.xplane.pb");
  pb_xspace *x = NULL;
  pb_tfdata t;
  pb_err err = {{0}};
  if (pb_xspace_load(path, &x, &err) || pb_tfdata_read(x, path, &t, &err)) fail_msg("%s", err.msg);
  pb_xspace_free(x);
  return t;
}

static const cJSON *stage(const cJSON *cfg, int i) {
  return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cfg, "stages"), i);
}

static const char *str(const cJSON *o, const char *key) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static double num(const cJSON *o, const char *key) {
  return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const cJSON *spin(const cJSON *st) {
  const cJSON *op = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "ops"), 0);
  assert_string_equal(str(op, "op"), "spin");
  return op;
}

static void test_fixture_twin(void **state) {
  pb_tfdata t = read_fixture();
  pb_twin_notes notes;
  cJSON *cfg = NULL;
  pb_err err = {{0}};
  assert_int_equal(pb_twin_config(&t, "/x/vm.xplane.pb", "twin-vm", &notes, &cfg, &err), 0);
  assert_string_equal(str(cfg, "name"), "twin-vm");
  assert_non_null(strstr(str(cfg, "about"), "vm.xplane.pb (host vm, 20 steps, 47.7 %"));
  /* range (its own few us), the doubling map (2 threads, ~11 us varying), the sleeping map (1 thread,
   * ~2.3 ms steady), its batch of 8, the prefetch of 2 */
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cfg, "stages")), 5);
  assert_string_equal(str(stage(cfg, 0), "name"), "Range_0");
  assert_int_equal(num(stage(cfg, 0), "threads"), 1);
  assert_true(num(spin(stage(cfg, 0)), "us") >= 1 && num(spin(stage(cfg, 0)), "us") <= 50);
  assert_string_equal(str(stage(cfg, 1), "name"), "ParallelMapV2_1");
  assert_int_equal(num(stage(cfg, 1), "threads"), 2);
  assert_string_equal(str(spin(stage(cfg, 1)), "dist"), "lognormal"); /* cv well above 0.25 */
  assert_string_equal(str(stage(cfg, 2), "name"), "MapAndBatch_2");
  assert_string_equal(str(stage(cfg, 2), "type"), "map");
  assert_int_equal(num(stage(cfg, 2), "threads"), 1);
  assert_true(num(spin(stage(cfg, 2)), "us") > 2000 && num(spin(stage(cfg, 2)), "us") < 2600);
  assert_null(cJSON_GetObjectItemCaseSensitive(spin(stage(cfg, 2)), "dist")); /* steady: constant */
  assert_string_equal(str(stage(cfg, 3), "type"), "batch");
  assert_int_equal(num(stage(cfg, 3), "size"), 8);
  assert_string_equal(str(stage(cfg, 4), "type"), "prefetch");
  assert_int_equal(num(stage(cfg, 4), "depth"), 2);
  /* samples of 64 / 8 bytes; steps of ~10.4 ms: the 10 ms sleep and python's cost */
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(cfg, "dataset");
  assert_string_equal(str(d, "format"), "synthetic");
  assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(d, "shape"), 0)->valuedouble, 8);
  const cJSON *step = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cfg, "device"), "step_ms");
  assert_true(num(step, "mean") > 10.0 && num(step, "mean") < 11.0);
  assert_true(notes.n >= 7);
  /* it is a config pipebench takes */
  char *text = cJSON_Print(cfg);
  pb_config *c = calloc(1, sizeof *c);
  if (pb_config_parse(c, "twin.json", text, NULL, 0, &err)) fail_msg("%s", err.msg);
  assert_int_equal(c->nstages, 5);
  assert_non_null(strstr(c->about, "twin of the tf.data pipeline"));
  free(c);
  free(text);
  cJSON_Delete(cfg);
  pb_tfdata_free(&t);
}

/* A capture without step markers cannot give the device's step: said in one line. */
static void test_no_steps(void **state) {
  pb_tfdata t = read_fixture();
  size_t n = t.nsteps;
  t.nsteps = 0;
  pb_twin_notes notes;
  cJSON *cfg = NULL;
  pb_err err = {{0}};
  assert_int_equal(pb_twin_config(&t, "a.xplane.pb", "twin-a", &notes, &cfg, &err), -EBADMSG);
  assert_null(cfg);
  assert_non_null(strstr(err.msg, "a.xplane.pb: no training steps (expected events with a step_num stat"));
  t.nsteps = n;
  pb_tfdata_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixture_twin),
      cmocka_unit_test(test_no_steps),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* pb_json_edit_stage_key: one stage's key changed in the user's own text, everything else byte for byte. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "json_edit.h"

static const char k_config[] =
    "{\n"
    "  \"name\": \"resnet50\",   \"note\": \"stages: {\\\"x\\\"}\",\n"
    "  \"stages\": [\n"
    "    { \"name\": \"read\",     \"type\": \"read\",     \"threads\": 2, \"block_bytes\": 1048576 },\n"
    "    { \"name\": \"decode\",   \"type\": \"decode\",   \"threads\": 2 },\n"
    "    { \"type\": \"prefetch\", \"depth\": 4 },\n"
    "    { \"name\": \"augment\", \"type\": \"map\",\n"
    "      \"ops\": [ { \"op\": \"flip\", \"p\": 0.5 } ] }\n"
    "  ],\n"
    "  \"run\": { \"threads\": 9 }\n"
    "}\n";

/* Applies one edit and compares with the text expected. */
static void expect_edit(const char *text, const char *stage, const char *key, long long v, const char *want) {
  char *out = NULL;
  int rc = pb_json_edit_stage_key(text, stage, key, v, &out);
  if (rc) fail_msg("edit %s.%s: %d", stage, key, rc);
  assert_string_equal(out, want);
  free(out);
}

/* Replaces the value and nothing else. */
static void test_replaces_in_place(void **state) {
  char want[sizeof k_config + 16];
  snprintf(want, sizeof want, "%s", k_config);
  char *p = strstr(want, "\"decode\",   \"threads\": 2");
  p[strlen("\"decode\",   \"threads\": ")] = '7';
  expect_edit(k_config, "decode", "threads", 7, want);
}

/* A key the stage lacks is added after its last member; a stage without a name is found by its type; the
 * member named "threads" elsewhere (run) and the string holding braces are left alone. */
static void test_adds_missing_key_and_finds_by_type(void **state) {
  char *out = NULL;
  assert_int_equal(pb_json_edit_stage_key(k_config, "augment", "threads", 12, &out), 0);
  assert_non_null(strstr(out, "\"ops\": [ { \"op\": \"flip\", \"p\": 0.5 } ], \"threads\": 12 }\n  ],"));
  assert_non_null(strstr(out, "\"run\": { \"threads\": 9 }"));
  char *out2 = NULL;
  assert_int_equal(pb_json_edit_stage_key(out, "prefetch", "depth", 16, &out2), 0);
  assert_non_null(strstr(out2, "{ \"type\": \"prefetch\", \"depth\": 16 },"));
  assert_int_equal(strlen(out2), strlen(k_config) + strlen(", \"threads\": 12") + 1);
  free(out);
  free(out2);
}

static void test_errors(void **state) {
  char *out = (char *)1;
  assert_int_equal(pb_json_edit_stage_key(k_config, "nope", "threads", 1, &out), -ENOENT);
  assert_null(out);
  assert_int_equal(pb_json_edit_stage_key("{\"run\": {}}", "read", "threads", 1, &out), -ENOENT);
  assert_int_equal(pb_json_edit_stage_key("[1, 2]", "read", "threads", 1, &out), -EINVAL);
  assert_int_equal(pb_json_edit_stage_key("{\"stages\": [ { \"name\": \"read\", ", "read", "threads", 1, &out),
                   -EINVAL);
  assert_int_equal(pb_json_edit_stage_key("{\"stages\": [ {\"name\": \"re", "read", "threads", 1, &out), -EINVAL);
  assert_int_equal(pb_json_edit_stage_key("{\"stages\": 3}", "read", "threads", 1, &out), -EINVAL);
  /* an empty stage object gets the key alone */
  assert_int_equal(pb_json_edit_stage_key("{\"stages\": [ { \"type\": \"batch\" }, { } ]}", "batch", "size", 8, &out),
                   0);
  assert_string_equal(out, "{\"stages\": [ { \"type\": \"batch\", \"size\": 8 }, { } ]}");
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_replaces_in_place),
      cmocka_unit_test(test_adds_missing_key_and_finds_by_type),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

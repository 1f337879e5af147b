/* json_text: every string written as JSON is well-formed UTF-8, whatever bytes a file name held. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_text.h"

static void test_char_bytes(void **state) {
  (void)state;
  assert_int_equal(pb_utf8_char_bytes((const unsigned char *)"a"), 1);
  assert_int_equal(pb_utf8_char_bytes((const unsigned char *)"\xC3\xA9"), 2);       /* é */
  assert_int_equal(pb_utf8_char_bytes((const unsigned char *)"\xE2\x82\xAC"), 3);   /* € */
  assert_int_equal(pb_utf8_char_bytes((const unsigned char *)"\xF0\x9F\x98\x80"), 4);
  assert_int_equal(pb_utf8_char_bytes((const unsigned char *)"\xE9t"), 0);          /* Latin-1 é */
  assert_int_equal(pb_utf8_char_bytes((const unsigned char *)"\xC3"), 0);           /* cut short */
  assert_int_equal(pb_utf8_char_bytes((const unsigned char *)"\xC0\xAF"), 0);       /* overlong */
  assert_int_equal(pb_utf8_char_bytes((const unsigned char *)"\xED\xA0\x80"), 0);   /* surrogate */
  assert_int_equal(pb_utf8_char_bytes((const unsigned char *)"\xF4\x90\x80\x80"), 0); /* > U+10FFFF */
}

static void test_tree_fixed(void **state) {
  (void)state;
  cJSON *root = cJSON_CreateObject();
  cJSON *errs = cJSON_AddArrayToObject(root, "first_errors");
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "file", "data/img-\xE9t\xE9.jpg");
  cJSON_AddStringToObject(e, "message", "caf\xC3\xA9 ok");
  cJSON_AddItemToArray(errs, e);
  char *text = pb_json_print(root, false);
  assert_non_null(text);
  assert_string_equal(text, "{\"first_errors\":[{\"file\":\"data/img-\xEF\xBF\xBDt\xEF\xBF\xBD.jpg\","
                            "\"message\":\"caf\xC3\xA9 ok\"}]}");
  free(text);
  cJSON_Delete(root);
}

/* Bytes into a fixed field as the UTF-8 JSON will write: invalid bytes as U+FFFD, never a character cut. */
static void test_utf8_copy(void **state) {
  (void)state;
  char buf[8];
  assert_int_equal(pb_utf8_copy(buf, sizeof buf, "abc"), 3);
  assert_string_equal(buf, "abc");
  assert_int_equal(pb_utf8_copy(buf, sizeof buf, "a\xE9z"), 5); /* a Latin-1 byte */
  assert_string_equal(buf, "a\xEF\xBF\xBDz");
  assert_int_equal(pb_utf8_copy(buf, sizeof buf, "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"), 6); /* 4 x e-acute: 3 fit */
  assert_string_equal(buf, "\xC3\xA9\xC3\xA9\xC3\xA9");
  assert_int_equal(pb_utf8_copy(buf, sizeof buf, "abcde\xE9"), 5); /* U+FFFD would need 8 bytes with NUL */
  assert_string_equal(buf, "abcde");
  assert_int_equal(pb_utf8_copy(buf, sizeof buf, "ab\xC3"), 5); /* a character cut short by a byte count */
  assert_null(pb_utf8_first_invalid(buf));
  assert_int_equal(pb_utf8_copy(buf, 1, "abc"), 0);
  assert_string_equal(buf, "");
}

static void test_fput_str(void **state) {
  (void)state;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  pb_json_fput_str(f, "a\"b\\c\n\xE9\xC3\xA9");
  fclose(f);
  assert_string_equal(buf, "\"a\\\"b\\\\c\\u000a\xEF\xBF\xBD\xC3\xA9\"");
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_char_bytes),
      cmocka_unit_test(test_tree_fixed),
      cmocka_unit_test(test_fput_str),
      cmocka_unit_test(test_utf8_copy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

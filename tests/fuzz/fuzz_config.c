/* libFuzzer target: the config loader (src/config*.c) through pb_config_parse, as `pipebench run` and
 * `validate` use it.
 *
 * Input: JSON text, optionally followed by up to 4 --set arguments, each after a NUL byte:
 *     {"stages": [...]} \0 stages.batch.size=64 \0 run.steps=null
 * (pb_config_load refuses a config file with a NUL in it, so the JSON itself never holds one.)
 *
 * Checked besides ASan/UBSan/leaks: the result is 0 or -EINVAL; an error is one non-empty line; and a config
 * that loads survives the round trip test_config.c asserts for its examples: pb_config_to_json, printed and
 * parsed again, gives the same struct and the same JSON. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define MAX_SETS 4

static pb_config cfg, again; /* ~90 KB each: not on the stack */

static void fail(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_config: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

static void check_error(int rc, const pb_err *err) {
  if (rc != -EINVAL) fail("pb_config_parse returned neither 0 nor -EINVAL", NULL);
  if (!err->msg[0]) fail("error without a message", NULL);
  if (strchr(err->msg, '\n')) fail("error message of more than one line", err->msg);
}

static void round_trip(void) {
  cJSON *out = pb_config_to_json(&cfg);
  if (!out) fail("pb_config_to_json returned NULL", NULL);
  char *text = cJSON_Print(out);
  if (!text) fail("cJSON_Print of the resolved config failed", NULL);
  pb_err err;
  if (pb_config_parse(&again, "fuzz.json", text, NULL, 0, &err) != 0) {
    fprintf(stderr, "%s\n", text);
    fail("the resolved config does not load again", err.msg);
  }
  if (memcmp(&cfg, &again, sizeof cfg) != 0) {
    fprintf(stderr, "%s\n", text);
    fail("the resolved config loads as a different config", NULL);
  }
  cJSON *out2 = pb_config_to_json(&again);
  if (!out2 || !cJSON_Compare(out, out2, 1)) {
    fprintf(stderr, "%s\n", text);
    fail("the resolved config resolves differently the second time", NULL);
  }
  cJSON_Delete(out2);
  cJSON_Delete(out);
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* One copy with a NUL after every piece: the JSON text, then the --set arguments. */
  char *buf = malloc(size + 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  const char *sets[MAX_SETS];
  int nsets = 0;
  size_t json_len = strlen(buf);
  for (size_t at = json_len; at < size && nsets < MAX_SETS;) {
    sets[nsets++] = buf + at + 1; /* after the NUL that ends the previous piece */
    at += 1 + strlen(buf + at + 1);
  }

  pb_err err;
  int rc = pb_config_parse(&cfg, "fuzz.json", buf, nsets ? sets : NULL, nsets, &err);
  if (rc) check_error(rc, &err);
  else round_trip();
  free(buf);
  return 0;
}

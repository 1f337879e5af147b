/* Pieces of config error messages: "<file>: <json.path>: <what is wrong> (expected <what>)".
 * Everything taken from the user's input is cut short and stripped of control characters here, so a
 * message always stays one readable line whatever the config holds. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

#define SHOW_CHARS 60 /* characters of a user string a message shows */

int pb_cfg_fail(pb_cfg_ctx *c, const char *path, const char *fmt, ...) {
  char what[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return pb_err_set(c->err, "%s: %s: %s", c->file, path[0] ? path : "(root)", what);
}

int pb_cfg_type_error(pb_cfg_ctx *c, const char *path, const cJSON *item, const char *expect) {
  char desc[128];
  return pb_cfg_fail(c, path, "%s (expected %s)", pb_cfg_describe(item, desc, sizeof desc), expect);
}

/* Copies at most max_chars bytes of s, control bytes as '?', and "..." when cut (not mid UTF-8 char). */
static size_t clean_copy(const char *s, size_t max_chars, char *buf, size_t len) {
  size_t n = 0, i = 0;
  for (; s[i] && i < max_chars && n + 4 < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    buf[n++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
  }
  if (s[i]) {
    while (n > 0 && ((unsigned char)buf[n - 1] & 0xC0) == 0x80) n--;
    if (n > 0 && (unsigned char)buf[n - 1] >= 0xC0) n--;
    for (int d = 0; d < 3 && n + 1 < len; d++) buf[n++] = '.';
  }
  buf[n] = '\0';
  return n;
}

const char *pb_cfg_clean(const char *s, size_t max_chars, char *buf, size_t len) {
  clean_copy(s ? s : "", max_chars, buf, len);
  return buf;
}

const char *pb_cfg_quote(const char *s, char *buf, size_t len) {
  buf[0] = '"';
  size_t n = 1 + clean_copy(s ? s : "", SHOW_CHARS, buf + 1, len - 2);
  buf[n] = '"';
  buf[n + 1] = '\0';
  return buf;
}

/* The shortest text that reads back as the same double, so "0.1" stays "0.1" and 2^53 is exact. */
const char *pb_cfg_num(double v, char *buf, size_t len) {
  if (isnan(v)) {
    snprintf(buf, len, "NaN");
  } else if (isinf(v)) {
    snprintf(buf, len, "%s", v < 0 ? "-infinity" : "infinity");
  } else {
    for (int prec = 15; prec <= 17; prec++) {
      snprintf(buf, len, "%.*g", prec, v);
      if (strtod(buf, NULL) == v) break;
    }
  }
  return buf;
}

const char *pb_cfg_kind(const cJSON *item) {
  if (cJSON_IsString(item)) return "a string";
  if (cJSON_IsNumber(item)) return "a number";
  if (cJSON_IsBool(item)) return "a boolean";
  if (cJSON_IsNull(item)) return "null";
  if (cJSON_IsArray(item)) return "an array";
  if (cJSON_IsObject(item)) return "an object";
  return "not a JSON value";
}

/* `"fast" is a string`, `5 is a number`, `got an array of 3 elements`: the start of a type error. */
const char *pb_cfg_describe(const cJSON *item, char *buf, size_t len) {
  char val[SHOW_CHARS + 8];
  if (cJSON_IsString(item)) {
    snprintf(buf, len, "%s is a string", pb_cfg_quote(item->valuestring, val, sizeof val));
  } else if (cJSON_IsNumber(item)) {
    snprintf(buf, len, "%s is a number", pb_cfg_num(item->valuedouble, val, sizeof val));
  } else if (cJSON_IsBool(item)) {
    snprintf(buf, len, "%s is a boolean", cJSON_IsTrue(item) ? "true" : "false");
  } else if (cJSON_IsArray(item)) {
    int n = cJSON_GetArraySize(item);
    if (n == 0) snprintf(buf, len, "got an empty array");
    else snprintf(buf, len, "got an array of %d element%s", n, n == 1 ? "" : "s");
  } else {
    snprintf(buf, len, "got %s", pb_cfg_kind(item));
  }
  return buf;
}

/* "a, b, c"; a list too long for buf ends in ", ..." rather than being cut mid-word. */
const char *pb_cfg_join(const char *const *words, int n, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n; i++) {
    char word[SHOW_CHARS + 4];
    clean_copy(words[i], SHOW_CHARS, word, sizeof word);
    const char *sep = i ? ", " : "";
    if (used + strlen(sep) + strlen(word) + 6 >= len) {
      snprintf(buf + used, len - used, ", ...");
      break;
    }
    used += (size_t)snprintf(buf + used, len - used, "%s%s", sep, word);
  }
  return buf;
}

/* "; did you mean \"x\"?" for the closest candidate within max(2, len/3) edits, else "". */
const char *pb_cfg_suggest(const char *word, const char *const *cands, int n, char *buf, size_t len) {
  int best = -1, best_dist = 1 << 30;
  for (int i = 0; i < n; i++) {
    int d = pb_edit_distance(word, cands[i]);
    if (d < best_dist) best = i, best_dist = d;
  }
  int limit = PB_MAX(2, (int)(strlen(word) / 3));
  buf[0] = '\0';
  if (best >= 0 && best_dist <= limit) {
    char q[SHOW_CHARS + 8];
    snprintf(buf, len, "; did you mean %s?", pb_cfg_quote(cands[best], q, sizeof q));
  }
  return buf;
}

void pb_cfg_path_key(char *out, const char *parent, const char *key) {
  char k[SHOW_CHARS + 4];
  clean_copy(key ? key : "", SHOW_CHARS, k, sizeof k);
  if (parent[0]) snprintf(out, PB_CFG_PATH_MAX, "%.180s.%s", parent, k);
  else snprintf(out, PB_CFG_PATH_MAX, "%s", k);
}

void pb_cfg_path_index(char *out, const char *parent, int index) {
  snprintf(out, PB_CFG_PATH_MAX, "%.180s[%d]", parent, index);
}

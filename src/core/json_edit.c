/* Editing one stage's key in a config's own JSON text (json_edit.h).  A small scanner finds the byte spans of
 * values, so everything else (spacing, key order, comments-free layout) stays as the user wrote it. */
#include "json_edit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t skip_ws(const char *s, size_t i) {
  while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') i++;
  return i;
}

/* The end of the string starting at s[i] == '"' (one past its closing quote), or 0 when unterminated. */
static size_t skip_string(const char *s, size_t i) {
  for (i++; s[i]; i++) {
    if (s[i] == '\\' && s[i + 1])
      i++;
    else if (s[i] == '"')
      return i + 1;
  }
  return 0;
}

/* The end of the value starting at s[i] (after white space), or 0 when it is not well formed. */
static size_t skip_value(const char *s, size_t i) {
  i = skip_ws(s, i);
  if (s[i] == '"') return skip_string(s, i);
  if (s[i] != '{' && s[i] != '[') {
    size_t j = i;
    while (s[j] && !strchr(",}] \t\r\n", s[j])) j++;
    return j > i ? j : 0;
  }
  char close = s[i] == '{' ? '}' : ']';
  i = skip_ws(s, i + 1);
  if (s[i] == close) return i + 1;
  for (;;) {
    if (close == '}') { /* "key": */
      size_t k = s[i] == '"' ? skip_string(s, i) : 0;
      if (!k || s[(k = skip_ws(s, k))] != ':') return 0;
      i = k + 1;
    }
    if (!(i = skip_value(s, i))) return 0;
    i = skip_ws(s, i);
    if (s[i] == close) return i + 1;
    if (s[i] != ',') return 0;
    i = skip_ws(s, i + 1);
  }
}

/* Whether the string at s[i] is exactly `word` (no escapes in either). */
static bool string_is(const char *s, size_t i, size_t end, const char *word) {
  size_t n = strlen(word);
  return end - i == n + 2 && strncmp(s + i + 1, word, n) == 0;
}

/* One object's members: where `key`'s value is, the name and type strings' spans, and its closing brace. */
typedef struct object_scan {
  size_t key_at, key_end; /* 0: absent */
  size_t name_at, name_end, type_at, type_end;
  size_t close; /* the '}' */
  bool empty;
} object_scan;

static int scan_object(const char *s, size_t i, const char *key, object_scan *o) {
  memset(o, 0, sizeof *o);
  i = skip_ws(s, i);
  if (s[i] != '{') return -EINVAL;
  i = skip_ws(s, i + 1);
  o->empty = s[i] == '}';
  while (s[i] != '}') {
    size_t k = s[i] == '"' ? skip_string(s, i) : 0, v, end;
    if (!k || s[(v = skip_ws(s, k))] != ':' || !(end = skip_value(s, v + 1))) return -EINVAL;
    v = skip_ws(s, v + 1);
    if (string_is(s, i, k, key)) o->key_at = v, o->key_end = end;
    if (string_is(s, i, k, "name") && s[v] == '"') o->name_at = v, o->name_end = end;
    if (string_is(s, i, k, "type") && s[v] == '"') o->type_at = v, o->type_end = end;
    i = skip_ws(s, end);
    if (s[i] == ',')
      i = skip_ws(s, i + 1);
    else if (s[i] != '}')
      return -EINVAL;
  }
  o->close = i;
  return 0;
}

/* The span of top-level member "stages"' array value, from its '['. */
static int find_stages(const char *s, size_t *at) {
  size_t i = skip_ws(s, 0);
  if (s[i] != '{') return -EINVAL;
  i = skip_ws(s, i + 1);
  while (s[i] && s[i] != '}') {
    size_t k = s[i] == '"' ? skip_string(s, i) : 0, v, end;
    if (!k || s[(v = skip_ws(s, k))] != ':' || !(end = skip_value(s, v + 1))) return -EINVAL;
    if (string_is(s, i, k, "stages")) return *at = skip_ws(s, v + 1), s[*at] == '[' ? 0 : -EINVAL;
    i = skip_ws(s, end);
    if (s[i] == ',') i = skip_ws(s, i + 1);
  }
  return -ENOENT;
}

/* Whether the stage is the one called `stage`: by its name, or by its type when it has no name. */
static bool stage_matches(const char *s, const object_scan *o, const char *stage) {
  if (o->name_at) return string_is(s, o->name_at, o->name_end, stage);
  return o->type_at && string_is(s, o->type_at, o->type_end, stage);
}

/* text with [from, to) replaced by `insert`, malloc'd. */
static char *splice(const char *text, size_t from, size_t to, const char *insert) {
  size_t n = strlen(text), k = strlen(insert);
  char *out = malloc(n - (to - from) + k + 1);
  if (!out) return NULL;
  memcpy(out, text, from);
  memcpy(out + from, insert, k);
  memcpy(out + from + k, text + to, n - to + 1);
  return out;
}

int pb_json_edit_stage_key(const char *text, const char *stage, const char *key, long long value, char **out) {
  *out = NULL;
  size_t i;
  int rc = find_stages(text, &i);
  if (rc) return rc;
  i = skip_ws(text, i + 1);
  while (text[i] == '{') {
    object_scan o;
    if ((rc = scan_object(text, i, key, &o))) return rc;
    if (stage_matches(text, &o, stage)) {
      char repl[160];
      if (o.key_at) {
        snprintf(repl, sizeof repl, "%lld", value);
        *out = splice(text, o.key_at, o.key_end, repl);
      } else { /* after the last member, before any white space that precedes the brace */
        size_t at = o.close;
        while (at > 0 && strchr(" \t\r\n", text[at - 1])) at--;
        snprintf(repl, sizeof repl, "%s\"%.100s\": %lld", o.empty ? "" : ", ", key, value);
        *out = splice(text, at, at, repl);
      }
      return *out ? 0 : -ENOMEM;
    }
    i = skip_ws(text, o.close + 1);
    if (text[i] == ',') i = skip_ws(text, i + 1);
  }
  return -ENOENT;
}

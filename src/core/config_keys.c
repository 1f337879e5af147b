/* The engine that walks the key tables of config_schema.c: type and range checks, defaults, unknown and
 * duplicate keys, and the resolved config as JSON.  It knows nothing about any particular key. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

#define TEXT_MAX 512 /* an "expected ..." text */

/* ---- fields: every store goes through memcpy so a row's offset and size are all it needs ---- */

static void *field(void *base, size_t off) { return (char *)base + off; }
static const void *cfield(const void *base, size_t off) { return (const char *)base + off; }

static int64_t load_int(const void *p, size_t size) {
  if (size == 1) {
    bool b;
    memcpy(&b, p, 1);
    return b;
  }
  if (size == 4) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, p, 8);
  return v;
}

static void store_int(void *p, size_t size, int64_t v) {
  if (size == 1) {
    bool b = v != 0;
    memcpy(p, &b, 1);
  } else if (size == 4) {
    int32_t v32 = (int32_t)v;
    memcpy(p, &v32, 4);
  } else {
    memcpy(p, &v, 8);
  }
}

static double load_double(const void *p) {
  double v;
  memcpy(&v, p, sizeof v);
  return v;
}

static void store_double(void *p, double v) { memcpy(p, &v, sizeof v); }

/* The largest integer a field of this size holds (and a double represents exactly). */
static double int_cap(size_t size) { return size == 1 ? 1 : size == 4 ? INT32_MAX : PB_CFG_INT_MAX; }

/* ---- expected texts ---- */

/* "from 1 to 1024", "> 0 and <= 1", ">= 0" or "" (any number). */
static const char *bounds_text(const pb_num_rule *r, char *buf, size_t len) {
  char lo[40], hi[40];
  pb_cfg_num(r->min, lo, sizeof lo);
  pb_cfg_num(r->max, hi, sizeof hi);
  bool has_min = isfinite(r->min), has_max = isfinite(r->max);
  if (has_min && has_max && !r->min_excl) snprintf(buf, len, "from %s to %s", lo, hi);
  else if (has_min && has_max) snprintf(buf, len, "> %s and <= %s", lo, hi);
  else if (has_min) snprintf(buf, len, "%s %s", r->min_excl ? ">" : ">=", lo);
  else if (has_max) snprintf(buf, len, "<= %s", hi);
  else buf[0] = '\0';
  return buf;
}

/* "a number from 0.001 to 1000", or with zero_off "0 (off) or a number from 0.001 to 1000". */
const char *pb_cfg_range_text(const pb_num_rule *r, char *buf, size_t len) {
  char b[128];
  if (r->expect) {
    snprintf(buf, len, "%s", r->expect);
    return buf;
  }
  bounds_text(r, b, sizeof b);
  snprintf(buf, len, "%s%s%s%s", r->zero_off ? "0 (off) or " : "", r->integer ? "an integer" : "a number",
           b[0] ? " " : "", b);
  return buf;
}

static pb_num_rule key_rule(const pb_key *k, bool element) {
  bool integer = k->type == PB_KT_INT || k->type == PB_KT_INTS;
  return (pb_num_rule){.min = k->min,
                       .max = k->max,
                       .min_excl = (k->flags & PB_KF_MIN_EXCL) != 0,
                       .integer = integer,
                       .zero_off = (k->flags & PB_KF_ZERO_OFF) != 0,
                       .cap = integer ? int_cap(k->size) : INFINITY,
                       .expect = element ? NULL : k->expect};
}

static const char *array_text(const pb_key *k, char *buf, size_t len) {
  pb_num_rule r = key_rule(k, true);
  char count[48], b[128];
  if (k->nmin == k->nmax) snprintf(count, sizeof count, "%d", k->nmax);
  else if (k->nmin == 0) snprintf(count, sizeof count, "at most %d", k->nmax);
  else snprintf(count, sizeof count, "%d to %d", k->nmin, k->nmax);
  bounds_text(&r, b, sizeof b);
  snprintf(buf, len, "an array of %s %s%s%s", count, r.integer ? "integers" : "numbers", b[0] ? " " : "", b);
  return buf;
}

static const char *string_text(const pb_key *k, char *buf, size_t len) {
  const char *what = k->flags & PB_KF_IDENT ? "a name" : "a string";
  const char *chars = k->flags & PB_KF_IDENT ? " from A-Z a-z 0-9 _ -"
                      : k->flags & PB_KF_FILENAME ? " without '/' or control characters"
                                                  : "";
  if (k->min > 0) snprintf(buf, len, "%s of %.0f to %.0f characters%s", what, k->min, k->max, chars);
  else snprintf(buf, len, "%s of at most %.0f characters%s", what, k->max, chars);
  return buf;
}

static const char *enum_text(const pb_key *k, char *buf, size_t len) {
  int n = 0;
  while (k->choices[n]) n++;
  char list[TEXT_MAX - 16];
  snprintf(buf, len, "one of %s", pb_cfg_join(k->choices, n, list, sizeof list));
  return buf;
}

/* Always writes buf (callers may use either buf or the return value). */
const char *pb_cfg_key_expect(const pb_key *k, char *buf, size_t len) {
  pb_num_rule r = key_rule(k, false);
  char lo[40], hi[40];
  if (k->expect) {
    snprintf(buf, len, "%s", k->expect);
    return buf;
  }
  switch (k->type) {
  case PB_KT_INT:
  case PB_KT_NUMBER: return pb_cfg_range_text(&r, buf, len);
  case PB_KT_ENUM: return enum_text(k, buf, len);
  case PB_KT_STRING: return string_text(k, buf, len);
  case PB_KT_NUMBERS:
  case PB_KT_INTS: return array_text(k, buf, len);
  case PB_KT_RANGE:
    snprintf(buf, len, "[lo, hi] with %s %s lo <= hi <= %s", pb_cfg_num(k->min, lo, sizeof lo),
             r.min_excl ? "<" : "<=", pb_cfg_num(k->max, hi, sizeof hi));
    return buf;
  case PB_KT_BOOL: snprintf(buf, len, "true or false"); return buf;
  case PB_KT_OBJECT: snprintf(buf, len, "an object"); return buf;
  case PB_KT_CUSTOM: break;
  }
  snprintf(buf, len, "a valid value");
  return buf;
}

/* ---- value checks ---- */

static bool in_range(double v, const pb_num_rule *r) {
  if (r->zero_off && v == 0) return true;
  if (!isfinite(v) || v > r->max) return false;
  return r->min_excl ? v > r->min : v >= r->min;
}

/* cJSON prints a double with 15 significant digits when that reads back within one epsilon of it, so such
 * a value would come back changed from pb_config_to_json and a print.  Keep the printed value instead:
 * it differs by at most an epsilon, and only for inputs written with 16 or 17 digits. */
static double printable(double v) {
  char text[40];
  snprintf(text, sizeof text, "%1.15g", v);
  double back = strtod(text, NULL);
  return fabs(back - v) <= fmax(fabs(back), fabs(v)) * DBL_EPSILON ? back : v;
}

int pb_cfg_check_number(pb_cfg_ctx *c, const cJSON *item, const char *path, const pb_num_rule *r, double *out) {
  char buf[TEXT_MAX], num[40], cap[40];
  const char *expect = pb_cfg_range_text(r, buf, sizeof buf);
  if (!cJSON_IsNumber(item)) return pb_cfg_type_error(c, path, item, expect);
  double v = item->valuedouble;
  pb_cfg_num(v, num, sizeof num);
  if (r->integer && isfinite(v) && v != floor(v))
    return pb_cfg_fail(c, path, "%s is not an integer (expected %s)", num, expect);
  if (!in_range(v, r)) return pb_cfg_fail(c, path, "%s is out of range (expected %s)", num, expect);
  if (r->integer && v > r->cap)
    return pb_cfg_fail(c, path, "%s is too large (expected %s, at most %s)", num, expect,
                       pb_cfg_num(r->cap, cap, sizeof cap));
  *out = r->integer ? v : printable(v);
  return 0;
}

static int parse_int(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base) {
  pb_num_rule r = key_rule(k, false);
  double v;
  int rc = pb_cfg_check_number(c, item, path, &r, &v);
  if (!rc) store_int(field(base, k->off), k->size, (int64_t)v);
  return rc;
}

static int parse_number(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base) {
  pb_num_rule r = key_rule(k, false);
  double v;
  int rc = pb_cfg_check_number(c, item, path, &r, &v);
  if (!rc) store_double(field(base, k->off), v);
  return rc;
}

static int parse_bool(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base) {
  if (!cJSON_IsBool(item)) return pb_cfg_type_error(c, path, item, "true or false");
  store_int(field(base, k->off), 1, cJSON_IsTrue(item));
  return 0;
}

static int find_choice(const pb_key *k, const char *s) {
  for (int i = 0; k->choices[i]; i++)
    if (strcmp(k->choices[i], s) == 0) return i;
  return -1;
}

/* A number is accepted where its text is a choice, so `--set stages.decode.scale=1` (which arrives as the
 * JSON number 1) means the choice "1". */
static int parse_enum(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base) {
  char expect[TEXT_MAX], num[40];
  pb_cfg_key_expect(k, expect, sizeof expect);
  const char *s = cJSON_IsString(item) ? item->valuestring : NULL;
  if (cJSON_IsNumber(item) && find_choice(k, pb_cfg_num(item->valuedouble, num, sizeof num)) >= 0) s = num;
  if (!s) return pb_cfg_type_error(c, path, item, expect);
  int i = find_choice(k, s);
  if (i >= 0) {
    store_int(field(base, k->off), k->size, i);
    return 0;
  }
  int n = 0;
  while (k->choices[n]) n++;
  char q[80], hint[96];
  return pb_cfg_fail(c, path, "unknown value %s (expected %s%s)", pb_cfg_quote(s, q, sizeof q), expect,
                     pb_cfg_suggest(s, k->choices, n, hint, sizeof hint));
}

static const char *bad_char(const pb_key *k, const char *s) {
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    bool ident = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '_' || ch == '-';
    if ((k->flags & PB_KF_IDENT) && !ident) return s;
    if ((k->flags & PB_KF_FILENAME) && (ch < 0x20 || ch == 0x7f || ch == '/')) return s;
  }
  return NULL;
}

static int parse_string(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base) {
  char expect[TEXT_MAX], q[80];
  pb_cfg_key_expect(k, expect, sizeof expect);
  if (!cJSON_IsString(item)) return pb_cfg_type_error(c, path, item, expect);
  const char *s = item->valuestring;
  size_t n = strlen(s);
  pb_cfg_quote(s, q, sizeof q);
  if ((double)n < k->min || (double)n > k->max || n >= k->size)
    return pb_cfg_fail(c, path, "%s is %zu characters long (expected %s)", q, n, expect);
  if (bad_char(k, s))
    return pb_cfg_fail(c, path, "%s has a character that is not allowed (expected %s)", q, expect);
  memcpy(field(base, k->off), s, n + 1);
  return 0;
}

/* Checks an array's type and length; *n gets the length. */
static int check_array(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, int *n) {
  char expect[TEXT_MAX];
  pb_cfg_key_expect(k, expect, sizeof expect);
  *n = cJSON_IsArray(item) ? cJSON_GetArraySize(item) : -1;
  if (*n < k->nmin || *n > k->nmax || *n > k->cap) return pb_cfg_type_error(c, path, item, expect);
  return 0;
}

/* Parses every element of an array of numbers into doubles (the ints follow from them). */
static int parse_elements(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, double *vals) {
  pb_num_rule r = key_rule(k, true);
  int i = 0;
  for (const cJSON *el = item->child; el; el = el->next, i++) {
    char p[PB_CFG_PATH_MAX];
    pb_cfg_path_index(p, path, i);
    int rc = pb_cfg_check_number(c, el, p, &r, &vals[i]);
    if (rc) return rc;
  }
  return 0;
}

static int parse_range(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base) {
  double v[2];
  int n, rc = check_array(c, k, item, path, &n);
  if (!rc) rc = parse_elements(c, k, item, path, v);
  if (rc) return rc;
  if (v[0] > v[1]) {
    char expect[TEXT_MAX], lo[40], hi[40];
    return pb_cfg_fail(c, path, "[%s, %s] has lo > hi (expected %s)", pb_cfg_num(v[0], lo, sizeof lo),
                       pb_cfg_num(v[1], hi, sizeof hi), pb_cfg_key_expect(k, expect, sizeof expect));
  }
  memcpy(field(base, k->off), v, sizeof v);
  return 0;
}

static int parse_array(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base) {
  double v[64];
  int n, rc = check_array(c, k, item, path, &n);
  if (!rc && n > (int)PB_ARRAY_LEN(v)) rc = pb_cfg_fail(c, path, "internal error: array too long");
  if (!rc) rc = parse_elements(c, k, item, path, v);
  if (rc) return rc;
  for (int i = 0; i < n; i++) {
    void *el = field(base, k->off + (size_t)i * k->size);
    if (k->type == PB_KT_INTS) store_int(el, k->size, (int64_t)v[i]);
    else store_double(el, v[i]);
  }
  store_int(field(base, k->count_off), sizeof(int), n);
  return 0;
}

static int parse_object(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base) {
  if (!cJSON_IsObject(item)) return pb_cfg_type_error(c, path, item, "an object");
  int rc = pb_cfg_keys_parse(c, k->sub, item, path, field(base, k->off));
  if (!rc && (k->flags & PB_KF_PRESENCE)) store_int(field(base, k->count_off), 1, 1);
  return rc;
}

int pb_cfg_key_parse(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base) {
  switch (k->type) {
  case PB_KT_INT: return parse_int(c, k, item, path, base);
  case PB_KT_NUMBER: return parse_number(c, k, item, path, base);
  case PB_KT_BOOL: return parse_bool(c, k, item, path, base);
  case PB_KT_ENUM: return parse_enum(c, k, item, path, base);
  case PB_KT_STRING: return parse_string(c, k, item, path, base);
  case PB_KT_RANGE: return parse_range(c, k, item, path, base);
  case PB_KT_NUMBERS:
  case PB_KT_INTS: return parse_array(c, k, item, path, base);
  case PB_KT_OBJECT: return parse_object(c, k, item, path, base);
  case PB_KT_CUSTOM: return k->parse(c, k, item, path, base);
  }
  return pb_cfg_fail(c, path, "internal error: key kind %d", (int)k->type);
}

/* ---- objects ---- */

int pb_cfg_key_missing(pb_cfg_ctx *c, const pb_key *k, const char *path) {
  char expect[TEXT_MAX];
  return pb_cfg_fail(c, path, "missing (expected %s)", pb_cfg_key_expect(k, expect, sizeof expect));
}

static const pb_key *find_key(const pb_key_table *t, const char *name) {
  for (int i = 0; i < t->nkeys; i++)
    if (strcmp(t->keys[i].name, name) == 0) return &t->keys[i];
  return NULL;
}

static int unknown_key(pb_cfg_ctx *c, const pb_key_table *t, const char *key, const char *path) {
  const char *names[64];
  int n = PB_MIN(t->nkeys, (int)PB_ARRAY_LEN(names));
  for (int i = 0; i < n; i++) names[i] = t->keys[i].name;
  char p[PB_CFG_PATH_MAX], list[TEXT_MAX], hint[96];
  pb_cfg_path_key(p, path, key);
  return pb_cfg_fail(c, p, "unknown key (expected one of %s%s)", pb_cfg_join(names, n, list, sizeof list),
                     pb_cfg_suggest(key, names, n, hint, sizeof hint));
}

/* Unknown and duplicate keys, in document order.  Once every earlier key is known and distinct, a
 * duplicate shows up within nkeys comparisons, so even a huge object costs O(nkeys^2). */
static int check_keys(pb_cfg_ctx *c, const pb_key_table *t, const cJSON *obj, const char *path) {
  for (const cJSON *it = obj->child; it; it = it->next) {
    const char *key = it->string ? it->string : "";
    if (!find_key(t, key)) return unknown_key(c, t, key, path);
    for (const cJSON *prev = obj->child; prev != it; prev = prev->next) {
      if (strcmp(prev->string ? prev->string : "", key) != 0) continue;
      char q[80];
      return pb_cfg_fail(c, path, "duplicate key %s (expected each key once)", pb_cfg_quote(key, q, sizeof q));
    }
  }
  return 0;
}

static int parse_default(pb_cfg_ctx *c, const pb_key *k, const char *path, void *base) {
  cJSON *def = cJSON_Parse(k->def);
  if (!def) return pb_cfg_fail(c, path, "internal error: the default %s does not parse", k->def);
  int rc = pb_cfg_key_parse(c, k, def, path, base);
  cJSON_Delete(def);
  return rc;
}

/* An absent object still gets its defaults (so the struct is the same whether or not it was written),
 * but its own required keys are not required. */
static int parse_absent_object(pb_cfg_ctx *c, const pb_key *k, const char *path, void *base) {
  cJSON empty;
  memset(&empty, 0, sizeof empty);
  empty.type = cJSON_Object;
  bool saved = c->defaults_only;
  c->defaults_only = true;
  int rc = pb_cfg_keys_parse(c, k->sub, &empty, path, field(base, k->off));
  c->defaults_only = saved;
  return rc;
}

static int parse_row(pb_cfg_ctx *c, const pb_key *k, const cJSON *obj, const char *path, void *base) {
  char p[PB_CFG_PATH_MAX];
  pb_cfg_path_key(p, path, k->name);
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, k->name);
  if (item) return pb_cfg_key_parse(c, k, item, p, base);
  if (k->type == PB_KT_OBJECT) return parse_absent_object(c, k, p, base);
  if ((k->flags & PB_KF_REQUIRED) && !c->defaults_only) return pb_cfg_key_missing(c, k, p);
  return k->def ? parse_default(c, k, p, base) : 0;
}

int pb_cfg_keys_parse(pb_cfg_ctx *c, const pb_key_table *t, const cJSON *obj, const char *path, void *base) {
  if (!cJSON_IsObject(obj)) return pb_cfg_type_error(c, path, obj, "an object");
  int rc = check_keys(c, t, obj, path);
  for (int i = 0; !rc && i < t->nkeys; i++) rc = parse_row(c, &t->keys[i], obj, path, base);
  if (!rc && t->check) rc = t->check(c, obj, path, base);
  return rc;
}

/* ---- to_json ---- */

static cJSON *emit_array(const pb_key *k, const void *base) {
  int n = (int)load_int(cfield(base, k->count_off), sizeof(int));
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; arr && i < n; i++) {
    const void *el = cfield(base, k->off + (size_t)i * k->size);
    double v = k->type == PB_KT_INTS ? (double)load_int(el, k->size) : load_double(el);
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(v));
  }
  return arr;
}

/* A value outside the choices (a struct filled by hand) comes out as "?" and fails the next parse. */
static const char *choice_name(const pb_key *k, int64_t v) {
  for (int64_t i = 0; k->choices[i]; i++)
    if (i == v) return k->choices[i];
  return "?";
}

static cJSON *emit_value(const pb_key *k, const void *base, const pb_config *cfg) {
  const void *p = cfield(base, k->off);
  switch (k->type) {
  case PB_KT_INT: return cJSON_CreateNumber((double)load_int(p, k->size));
  case PB_KT_NUMBER: return cJSON_CreateNumber(load_double(p));
  case PB_KT_BOOL: return cJSON_CreateBool(load_int(p, 1) != 0);
  case PB_KT_ENUM: return cJSON_CreateString(choice_name(k, load_int(p, k->size)));
  case PB_KT_STRING: return cJSON_CreateString(p);
  case PB_KT_RANGE: return cJSON_CreateDoubleArray(p, 2);
  case PB_KT_NUMBERS:
  case PB_KT_INTS: return emit_array(k, base);
  case PB_KT_OBJECT: return pb_cfg_keys_emit(k->sub, p, cfg);
  case PB_KT_CUSTOM: return k->emit(k, base, cfg);
  }
  return NULL;
}

static bool emit_skips(const pb_key *k, const void *base) {
  if (k->emit_if && !k->emit_if(base)) return true;
  if ((k->flags & PB_KF_OMIT_ZERO) && load_int(cfield(base, k->off), k->size) == 0) return true;
  return (k->flags & PB_KF_PRESENCE) && !load_int(cfield(base, k->count_off), 1);
}

cJSON *pb_cfg_keys_emit(const pb_key_table *t, const void *base, const pb_config *cfg) {
  cJSON *obj = cJSON_CreateObject();
  for (int i = 0; obj && i < t->nkeys; i++) {
    const pb_key *k = &t->keys[i];
    if (!emit_skips(k, base)) cJSON_AddItemToObject(obj, k->name, emit_value(k, base, cfg));
  }
  return obj;
}

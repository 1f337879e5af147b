/* The trace loader's value checks, and the reader that applies a field table (trace_fields.h) to one
 * object of the header.  Every failure is one line: "<path>: line N: <where>: <what> (expected <what>)". */
#include "trace_fields.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int pb_trace_bad(pb_trace_loader *l, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pb_err_set(l->err, "%s: line %ld: %s", l->path, l->line, msg);
  return -EINVAL;
}

const cJSON *pb_trace_member(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

int pb_trace_v_u64(pb_trace_loader *l, const cJSON *v, const char *where, uint64_t *out) {
  *out = 0;
  if (cJSON_IsNumber(v)) {
    double d = v->valuedouble;
    if (d >= 0 && d < 18446744073709551616.0 && d == floor(d)) {
      *out = (uint64_t)d;
      return 0;
    }
  } else if (cJSON_IsString(v) && v->valuestring[0] >= '0' && v->valuestring[0] <= '9') {
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v->valuestring, &end, 10);
    if (!*end && !errno) {
      *out = x;
      return 0;
    }
  }
  if (!v) return pb_trace_bad(l, "%s: missing (expected an unsigned integer)", where);
  return pb_trace_bad(l, "%s: not an unsigned integer (expected an unsigned integer or a decimal string)", where);
}

int pb_trace_v_i64(pb_trace_loader *l, const cJSON *v, const char *where, int64_t *out) {
  *out = 0;
  if (cJSON_IsNumber(v)) {
    double d = v->valuedouble;
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == floor(d)) {
      *out = (int64_t)d;
      return 0;
    }
  } else if (cJSON_IsString(v) && v->valuestring[0]) {
    char *end;
    errno = 0;
    long long x = strtoll(v->valuestring, &end, 10);
    if (!*end && !errno) {
      *out = x;
      return 0;
    }
  }
  if (!v) return pb_trace_bad(l, "%s: missing (expected an integer)", where);
  return pb_trace_bad(l, "%s: not an integer (expected an integer or a decimal string)", where);
}

int pb_trace_v_int(pb_trace_loader *l, const cJSON *v, const char *where, int lo, int hi, int *out) {
  int64_t x = 0;
  *out = 0;
  int rc = pb_trace_v_i64(l, v, where, &x);
  if (rc) return rc;
  if (x < lo || x > hi)
    return pb_trace_bad(l, "%s: %lld is out of range (expected %d..%d)", where, (long long)x, lo, hi);
  *out = (int)x;
  return 0;
}

int pb_trace_v_dbl(pb_trace_loader *l, const cJSON *v, const char *where, double *out) {
  *out = 0;
  if (cJSON_IsNumber(v)) {
    *out = v->valuedouble;
    return 0;
  }
  if (cJSON_IsString(v)) {
    const char *s = v->valuestring;
    if (!strcmp(s, "nan") || !strcmp(s, "inf") || !strcmp(s, "-inf")) {
      *out = strtod(s, NULL);
      return 0;
    }
  }
  if (!v) return pb_trace_bad(l, "%s: missing (expected a number)", where);
  return pb_trace_bad(l, "%s: not a number (expected a number, \"nan\" or \"inf\")", where);
}

int pb_trace_v_bool(pb_trace_loader *l, const cJSON *v, const char *where, bool *out) {
  if (cJSON_IsBool(v)) {
    *out = cJSON_IsTrue(v);
    return 0;
  }
  if (cJSON_IsNumber(v) && (v->valuedouble == 0 || v->valuedouble == 1)) {
    *out = v->valuedouble == 1;
    return 0;
  }
  if (!v) return pb_trace_bad(l, "%s: missing (expected true or false)", where);
  return pb_trace_bad(l, "%s: not a boolean (expected true or false)", where);
}

int pb_trace_v_str(pb_trace_loader *l, const cJSON *v, const char *where, char *buf, size_t len) {
  if (!v) return pb_trace_bad(l, "%s: missing (expected a string)", where);
  if (!cJSON_IsString(v)) return pb_trace_bad(l, "%s: not a string (expected a string)", where);
  if (strlen(v->valuestring) >= len)
    return pb_trace_bad(l, "%s: too long (expected at most %zu bytes)", where, len - 1);
  memcpy(buf, v->valuestring, strlen(v->valuestring) + 1);
  return 0;
}

int pb_trace_v_array(pb_trace_loader *l, const cJSON *v, const char *where, int max, int *n) {
  *n = 0;
  if (!v) return pb_trace_bad(l, "%s: missing (expected an array)", where);
  if (!cJSON_IsArray(v)) return pb_trace_bad(l, "%s: not an array (expected an array)", where);
  *n = cJSON_GetArraySize(v);
  if (max >= 0 && *n > max) return pb_trace_bad(l, "%s: %d entries (expected at most %d)", where, *n, max);
  return 0;
}

int pb_trace_v_object(pb_trace_loader *l, const cJSON *v, const char *where) {
  if (!v) return pb_trace_bad(l, "%s: missing (expected an object)", where);
  if (!cJSON_IsObject(v)) return pb_trace_bad(l, "%s: not an object (expected an object)", where);
  return 0;
}

/* ---- the table reader ---- */

static int load_number(pb_trace_loader *l, const pb_trace_field *f, const cJSON *v, double *out, const char *where) {
  int rc = pb_trace_v_dbl(l, v, where, out);
  if (!rc && (f->flags & PB_TF_FINITE_NONNEG) && !(*out >= 0 && isfinite(*out)))
    return pb_trace_bad(l, "%s: %g (expected a finite number >= 0)", where, *out);
  return rc;
}

/* One field's value v (NULL: absent) into p = base + off. */
static int load_value(pb_trace_loader *l, const pb_trace_field *f, const cJSON *v, char *p, const char *where) {
  int64_t rel = 0;
  int rc;
  switch (f->kind) {
    case PB_TF_U64:
    case PB_TF_U64_STR: return pb_trace_v_u64(l, v, where, (uint64_t *)p);
    case PB_TF_REL:
      if (!(rc = pb_trace_v_i64(l, v, where, &rel))) *(uint64_t *)p = l->rec->start_ns + (uint64_t)rel;
      return rc;
    case PB_TF_DBL:
    case PB_TF_NUM: return load_number(l, f, v, (double *)p, where);
    case PB_TF_BOOL: return pb_trace_v_bool(l, v, where, (bool *)p);
    case PB_TF_INT: return pb_trace_v_int(l, v, where, f->lo, f->hi_of ? f->hi_of(l->rec) : f->hi, (int *)p);
    case PB_TF_STR: return pb_trace_v_str(l, v, where, p, f->size);
    case PB_TF_OBJ:
      if (!v && !(f->flags & PB_TF_OPTIONAL)) return pb_trace_v_object(l, v, where);
      return pb_trace_load_table(l, f->sub, v, p, where);
    case PB_TF_CUSTOM: return f->load ? f->load(l, v, p, where) : 0;
  }
  return 0;
}

/* Whether the field is left at its default: absent and optional, or tied to an absent field before it. */
static bool skipped(const pb_trace_field *f, const cJSON *v, bool prev_present) {
  if (f->kind == PB_TF_CUSTOM && !f->load) return true; /* written only */
  if (f->flags & PB_TF_IF_PREV) return !prev_present;
  return !v && (f->flags & PB_TF_OPTIONAL) && f->kind != PB_TF_OBJ; /* an absent object: its defaults */
}

/* The k-th field to read: the table's order, but a PB_TF_AFTER_NEXT field after its successor. */
static size_t read_index(const pb_trace_table *t, size_t k) {
  if (k + 1 < t->n && (t->fields[k].flags & PB_TF_AFTER_NEXT)) return k + 1;
  if (k > 0 && (t->fields[k - 1].flags & PB_TF_AFTER_NEXT)) return k - 1;
  return k;
}

int pb_trace_load_table(pb_trace_loader *l, const pb_trace_table *t, const cJSON *v, void *base, const char *where) {
  if (t->defaults) t->defaults(l->rec, base);
  if (!v) return 0;
  if (!cJSON_IsObject(v))
    return t->shape ? pb_trace_bad(l, "%s: not an object (expected %s)", where, t->shape)
                    : pb_trace_v_object(l, v, where);
  bool prev_present = true;
  for (size_t k = 0; k < t->n; k++) {
    const pb_trace_field *f = &t->fields[read_index(t, k)];
    const cJSON *m = pb_trace_member(v, f->name);
    bool skip = skipped(f, m, prev_present);
    prev_present = m != NULL;
    if (skip) continue;
    char at[192];
    snprintf(at, sizeof at, "%s.%s", where, f->name);
    int rc = load_value(l, f, m, (char *)base + f->off, at);
    if (!rc && f->check) rc = f->check(l, f, base, at);
    if (rc) return rc;
  }
  return t->finish ? t->finish(l, base, where) : 0;
}

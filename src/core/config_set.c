/* --set PATH=VALUE (docs/CONTRACT.md §1): edits the cJSON tree before validation, so an override is checked
 * exactly like the same value written in the file.
 *
 * PATH is dotted; a segment may carry [N] indices; on the top-level "stages" array a name selects the
 * stage whose "name" is NAME, or, without a "name" key, whose "type" is (names default to the type).
 * Missing objects on the way are created.  VALUE is JSON when it parses as JSON, else a plain string.
 * VALUE null removes the key or element, so its default applies again (null is never a valid value). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

#define MAX_SEGMENTS 16
#define MAX_KEY 255

typedef struct set_tok {
  bool is_index;
  int index;
  char key[MAX_KEY + 1];
  int end; /* PATH[0..end) is the path up to and including this token, for messages */
} set_tok;

typedef struct set_ctx {
  const char *arg; /* the whole PATH=VALUE */
  pb_err *err;
  cJSON *root;
  set_tok tok[MAX_SEGMENTS];
  int ntok;
} set_ctx;

static int set_fail(const set_ctx *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int set_fail(const set_ctx *s, const char *fmt, ...) {
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  char arg[256];
  return pb_err_set(s->err, "--set %s: %s", pb_cfg_clean(s->arg, 200, arg, sizeof arg), what);
}

/* The path up to token i, or "(root)" before the first. */
static const char *node_name(const set_ctx *s, int i, char *buf, size_t len) {
  char prefix[256];
  snprintf(prefix, sizeof prefix, "%.*s", PB_MIN(s->tok[i < 0 ? 0 : i].end, 200), s->arg);
  return pb_cfg_clean(i < 0 ? "(root)" : prefix, 200, buf, len);
}

static int malformed(const set_ctx *s, size_t at) {
  return set_fail(s, "malformed PATH at character %zu (expected PATH like stages.decode.threads or stages[1].threads)",
                  at + 1);
}

/* "[N]" at p[*i]; *i ends after the ']'. */
static int parse_index(set_ctx *s, const char *p, size_t len, size_t *i, set_tok *t) {
  size_t start = *i;
  long n = 0;
  int digits = 0;
  for ((*i)++; *i < len && p[*i] >= '0' && p[*i] <= '9' && digits < 9; (*i)++, digits++) n = n * 10 + (p[*i] - '0');
  if (digits == 0 || *i >= len || p[*i] != ']') return malformed(s, start);
  (*i)++;
  t->is_index = true;
  t->index = (int)n;
  return 0;
}

static int parse_key(set_ctx *s, const char *p, size_t len, size_t *i, set_tok *t) {
  size_t start = *i;
  while (*i < len && p[*i] != '.' && p[*i] != '[' && p[*i] != ']') (*i)++;
  size_t n = *i - start;
  if (n == 0 || n > MAX_KEY) return malformed(s, start);
  memcpy(t->key, p + start, n);
  t->key[n] = '\0';
  return 0;
}

static int tokenize(set_ctx *s, const char *p, size_t len) {
  size_t i = 0;
  while (i < len) {
    if (s->ntok == MAX_SEGMENTS)
      return set_fail(s, "PATH has more than %d parts (expected a shorter PATH)", MAX_SEGMENTS);
    set_tok *t = &s->tok[s->ntok++];
    bool after_dot = i > 0 && p[i - 1] == '.';
    int rc = p[i] == '[' && !after_dot ? parse_index(s, p, len, &i, t) : parse_key(s, p, len, &i, t);
    if (rc) return rc;
    t->end = (int)i;
    if (i < len && p[i] == '.' && i + 1 == len) return malformed(s, i);
    if (i < len && p[i] == '.') i++;
    else if (i < len && p[i] != '[') return malformed(s, i);
  }
  return 0;
}

/* The effective name of a stage in the tree: "name", else "type". */
static const char *stage_name(const cJSON *st) {
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(st, "name");
  if (!name) name = cJSON_GetObjectItemCaseSensitive(st, "type");
  return cJSON_IsString(name) ? name->valuestring : NULL;
}

static int find_stage(const set_ctx *s, const cJSON *stages, const char *want, int *index) {
  const char *names[PB_MAX_STAGES];
  int n = 0, i = 0;
  for (const cJSON *st = stages->child; st; st = st->next, i++) {
    const char *name = stage_name(st);
    if (name && strcmp(name, want) == 0) {
      *index = i;
      return 0;
    }
    if (name && n < PB_MAX_STAGES) names[n++] = name;
  }
  char q[80], list[512], hint[96];
  return set_fail(s, "no stage named %s (expected one of %s%s)", pb_cfg_quote(want, q, sizeof q),
                  pb_cfg_join(names, n, list, sizeof list), pb_cfg_suggest(want, names, n, hint, sizeof hint));
}

/* Resolves token i on an array to an element index: [N] anywhere, a stage name on the root's stages. */
static int array_index(const set_ctx *s, const cJSON *arr, int i, int *index) {
  const set_tok *t = &s->tok[i];
  char name[256];
  node_name(s, i - 1, name, sizeof name);
  if (!t->is_index && arr == cJSON_GetObjectItemCaseSensitive(s->root, "stages"))
    return find_stage(s, arr, t->key, index);
  if (!t->is_index) return set_fail(s, "%s is an array (expected [N] to index it)", name);
  int n = cJSON_GetArraySize(arr);
  if (t->index >= n && n == 0) return set_fail(s, "%s is empty (expected an index into a non-empty array)", name);
  if (t->index >= n)
    return set_fail(s, "index %d is out of range (expected an index from 0 to %d into %s)", t->index, n - 1, name);
  *index = t->index;
  return 0;
}

/* Checks that the node token i applies to can take it: [N] and names on arrays, keys on objects. */
static int check_node(const set_ctx *s, const cJSON *node, int i) {
  const set_tok *t = &s->tok[i];
  char name[256];
  node_name(s, i - 1, name, sizeof name);
  if (cJSON_IsArray(node) || (cJSON_IsObject(node) && !t->is_index)) return 0;
  if (cJSON_IsObject(node)) return set_fail(s, "%s is an object (expected .KEY, not [%d])", name, t->index);
  return set_fail(s, "%s is %s (expected an object or array to descend into)", name, pb_cfg_kind(node));
}

/* Moves *node to the child named by token i, creating a missing object when a key follows. */
static int step(set_ctx *s, cJSON **node, int i) {
  int rc = check_node(s, *node, i);
  if (rc) return rc;
  if (cJSON_IsArray(*node)) {
    int index;
    rc = array_index(s, *node, i, &index);
    if (!rc) *node = cJSON_GetArrayItem(*node, index);
    return rc;
  }
  cJSON *child = cJSON_GetObjectItemCaseSensitive(*node, s->tok[i].key);
  char name[256];
  if (!child && s->tok[i + 1].is_index)
    return set_fail(s, "%s is missing (expected an existing array to index)", node_name(s, i, name, sizeof name));
  if (!child) child = cJSON_AddObjectToObject(*node, s->tok[i].key);
  *node = child;
  return child ? 0 : set_fail(s, "out of memory");
}

/* The assign_* functions own value once they return 0 (a null value is deleted with the target). */
static int assign_element(const set_ctx *s, cJSON *arr, int i, cJSON *value) {
  int index, rc = array_index(s, arr, i, &index);
  if (rc) return rc;
  if (!cJSON_IsNull(value)) return cJSON_ReplaceItemInArray(arr, index, value) ? 0 : set_fail(s, "out of memory");
  cJSON_DeleteItemFromArray(arr, index);
  cJSON_Delete(value);
  return 0;
}

static int assign_key(const set_ctx *s, cJSON *obj, const char *key, cJSON *value) {
  if (cJSON_IsNull(value)) {
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_Delete(value);
    return 0;
  }
  bool ok = cJSON_GetObjectItemCaseSensitive(obj, key) ? cJSON_ReplaceItemInObjectCaseSensitive(obj, key, value)
                                                       : cJSON_AddItemToObject(obj, key, value);
  return ok ? 0 : set_fail(s, "out of memory");
}

/* Puts value at the last token of the path; node is what the tokens before it lead to. */
static int assign(const set_ctx *s, cJSON *node, cJSON *value) {
  int i = s->ntok - 1, rc = check_node(s, node, i);
  if (!rc && cJSON_IsArray(node)) rc = assign_element(s, node, i, value);
  else if (!rc) rc = assign_key(s, node, s->tok[i].key, value);
  if (rc) cJSON_Delete(value);
  return rc;
}

static cJSON *parse_value(const char *text) {
  cJSON *v = cJSON_ParseWithOpts(text, NULL, 1);
  return v ? v : cJSON_CreateString(text);
}

static int apply_set(cJSON *root, const char *arg, pb_err *err) {
  set_ctx s = {.arg = arg, .err = err, .root = root};
  const char *eq = strchr(arg, '=');
  if (!eq) return set_fail(&s, "no \"=\" (expected PATH=VALUE)");
  if (eq == arg) return set_fail(&s, "empty PATH (expected PATH=VALUE)");
  int rc = tokenize(&s, arg, (size_t)(eq - arg));
  cJSON *node = root;
  for (int i = 0; !rc && i + 1 < s.ntok; i++) rc = step(&s, &node, i);
  if (rc) return rc;
  if (pb_cfg_invalid_utf8(eq + 1)) return set_fail(&s, "the value is not UTF-8 text (expected UTF-8)");
  cJSON *value = parse_value(eq + 1);
  return value ? assign(&s, node, value) : set_fail(&s, "out of memory");
}

/* The index of the stage `want` names in the root's stages array, or -1 (find_stage without a message). */
static int stage_index(const cJSON *root, const char *want) {
  const cJSON *stages = cJSON_GetObjectItemCaseSensitive(root, "stages");
  int i = 0;
  for (const cJSON *st = cJSON_IsArray(stages) ? stages->child : NULL; st; st = st->next, i++)
    if (stage_name(st) && strcmp(stage_name(st), want) == 0) return i;
  return -1;
}

void pb_cfg_canonical_path(const cJSON *root, const char *path, char *out, size_t len) {
  pb_err ignored;
  set_ctx s = {.arg = path, .err = &ignored};
  snprintf(out, len, "%s", path);
  if (tokenize(&s, path, strlen(path))) return; /* left as written: loading it names what is wrong */
  size_t n = 0;
  for (int i = 0; i < s.ntok && n < len; i++) {
    const set_tok *t = &s.tok[i];
    int stage = i == 1 && !t->is_index && !s.tok[0].is_index && strcmp(s.tok[0].key, "stages") == 0
                    ? stage_index(root, t->key)
                    : -1;
    if (t->is_index || stage >= 0) n += (size_t)snprintf(out + n, len - n, "[%d]", t->is_index ? t->index : stage);
    else n += (size_t)snprintf(out + n, len - n, "%s%s", i ? "." : "", t->key);
  }
}

/* Which run limit (run.steps, run.epochs, run.duration_s) `arg` sets, or -1. */
static int run_limit_of(const char *arg) {
  static const char *const limits[] = {"run.steps=", "run.epochs=", "run.duration_s="};
  for (int i = 0; i < 3; i++)
    if (strncmp(arg, limits[i], strlen(limits[i])) == 0) return i;
  return -1;
}

/* `--set run.epochs=1` on a config limited by steps means "by epochs instead": the config file's other
 * limits give way to the first limit named on the command line (two limits both named there still clash). */
static void replace_file_run_limit(cJSON *root, int limit) {
  static const char *const keys[] = {"steps", "epochs", "duration_s"};
  cJSON *run = cJSON_GetObjectItemCaseSensitive(root, "run");
  if (!cJSON_IsObject(run)) return;
  for (int i = 0; i < 3; i++)
    if (i != limit) cJSON_DeleteItemFromObjectCaseSensitive(run, keys[i]);
}

int pb_cfg_apply_sets(cJSON *root, const char *const *sets, int nsets, pb_err *err) {
  bool limit_set = false;
  for (int i = 0; i < nsets; i++) {
    int limit = sets[i] ? run_limit_of(sets[i]) : -1;
    if (limit >= 0 && !limit_set) replace_file_run_limit(root, limit);
    limit_set = limit_set || limit >= 0;
    int rc = sets[i] ? apply_set(root, sets[i], err) : 0;
    if (rc) return rc;
  }
  return 0;
}

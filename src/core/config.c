/* Config loading (docs/CONTRACT.md §2): JSON text -> --set overrides on the cJSON tree -> every key validated by
 * the tables of config_schema.c -> pipeline order rules -> per-sample shapes.  The first problem found
 * becomes the one-line error; nothing after it runs. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "json_text.h"

#define MAX_CONFIG_BYTES (16u << 20) /* far beyond any real config; stops a mistaken path at a huge file */

/* ---- names ---- */

static const char *name_of(const char *const *names, int count, int v) {
  return v >= 0 && v < count ? names[v] : "?";
}

const char *pb_stage_type_name(pb_stage_type t) { return name_of(pb_cfg_stage_type_names, PB_STAGE__COUNT, (int)t); }
const char *pb_op_name(pb_op_kind k) { return name_of(pb_cfg_op_names, PB_OP__COUNT, (int)k); }
const char *pb_dtype_name(pb_dtype d) { return name_of(pb_cfg_dtype_names, PB_DTYPE_FLOAT32 + 1, (int)d); }
const char *pb_format_name(pb_format f) { return name_of(pb_cfg_format_names, PB_FMT_SYNTHETIC + 1, (int)f); }
const char *pb_decode_scale_name(pb_decode_scale s) { return name_of(pb_cfg_decode_scale_names, PB_SCALE_1_8 + 1, (int)s); }

const char *pb_allreduce_mode_name(pb_allreduce_mode m) {
  return name_of(pb_cfg_allreduce_names, PB_ALLREDUCE_MPI + 1, (int)m);
}

uint64_t pb_allreduce_bytes(const pb_allreduce_cfg *a) {
  return a->bytes ? (uint64_t)a->bytes : (uint64_t)a->params * 4u;
}

int pb_config_batch_index(const pb_config *cfg) {
  for (int i = 0; i < cfg->nstages; i++)
    if (cfg->stages[i].type == PB_STAGE_BATCH) return i;
  return -1;
}

bool pb_op_makes_new_image(const pb_op_cfg *op) {
  switch (op->kind) {
    case PB_OP_RANDOM_RESIZED_CROP:
    case PB_OP_RESIZE:
    case PB_OP_CENTER_CROP:
    case PB_OP_TO_CHW:
      return true;
    case PB_OP_NORMALIZE:
      return op->dtype != PB_DTYPE_UINT8 && !op->on_device;
    default:
      return false;
  }
}

bool pb_config_batch_in_place(const pb_config *cfg, bool synthetic) {
  int b = pb_config_batch_index(cfg);
  if (synthetic || b <= 0 || !cfg->stages[b].fuse_map) return false;
  const pb_stage_cfg *map = &cfg->stages[b - 1];
  if (map->type != PB_STAGE_MAP || !map->out_shape.known || pb_shape_bytes(&map->out_shape) == 0) return false;
  for (int i = 0; i < map->nops; i++)
    if (pb_op_makes_new_image(&map->ops[i])) return true;
  return false;
}

/* ---- parsing ---- */

/* "configs/resnet.json" -> "resnet"; control characters become '_' so the name is a valid "name". */
static void default_name(pb_config *cfg, const char *file) {
  const char *slash = file ? strrchr(file, '/') : NULL;
  const char *base = slash ? slash + 1 : file ? file : "";
  size_t n = strlen(base);
  if (n >= 5 && strcmp(base + n - 5, ".json") == 0) n -= 5;
  n = PB_MIN(n, sizeof cfg->name - 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)base[i];
    cfg->name[i] = ch < 0x20 || ch == 0x7f ? '_' : (char)ch;
  }
  cfg->name[n] = '\0';
  if (n == 0) snprintf(cfg->name, sizeof cfg->name, "config");
}

/* "<file>: line L, column C: <what>": columns count bytes from 1. */
static int text_error(pb_err *err, const char *file, const char *text, const char *at, const char *what) {
  int line = 1, col = 1;
  for (const char *p = text; at && p < at && *p; p++) {
    if (*p == '\n') line++, col = 1;
    else col++;
  }
  return pb_err_set(err, "%s: line %d, column %d: %s", file, line, col, what);
}

static int json_error(pb_err *err, const char *file, const char *text, const char *at) {
  return text_error(err, file, text, at, "invalid JSON (expected a valid JSON document)");
}

/* The first byte that does not belong to well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, at
 * most U+10FFFF), or NULL.  JSON is UTF-8; a config in Latin-1 would put invalid text in report.json. */
const char *pb_cfg_invalid_utf8(const char *text) { return pb_utf8_first_invalid(text); }

/* A \u0000 escape inside a string, or NULL: cJSON would end the string there and silently keep only
 * what came before ("a\u0000b" read as "a").  An escape is one whose backslash is not itself escaped. */
static const char *escaped_nul(const char *text) {
  bool in_string = false;
  for (const char *p = text; *p; p++) {
    if (*p == '"') in_string = !in_string;
    else if (in_string && *p == '\\') {
      if (p[1] == 'u' && p[2] == '0' && p[3] == '0' && p[4] == '0' && p[5] == '0') return p;
      if (p[1]) p++; /* skip the escaped character (\" or \\ among them) */
    }
  }
  return NULL;
}

/* The bracket that opens a level deeper than cJSON parses (CJSON_NESTING_LIMIT), or NULL: cJSON stops
 * there with the same "invalid JSON" as a syntax error, which would send the user looking for one. */
static const char *too_deep(const char *text) {
  int depth = 0;
  bool in_string = false;
  for (const char *p = text; *p; p++) {
    if (in_string && *p == '\\' && p[1]) p++;
    else if (*p == '"') in_string = !in_string;
    else if (!in_string && (*p == '[' || *p == '{') && ++depth > CJSON_NESTING_LIMIT) return p;
    else if (!in_string && (*p == ']' || *p == '}')) depth--;
  }
  return NULL;
}

static int parse_json(pb_cfg_ctx *c, const char *text, cJSON **out) {
  if (strncmp(text, "\xEF\xBB\xBF", 3) == 0) text += 3; /* a UTF-8 byte order mark, as some editors write */
  const char *bad = pb_cfg_invalid_utf8(text);
  if (bad) return text_error(c->err, c->file, text, bad, "not UTF-8 text (expected a JSON document in UTF-8)");
  if ((bad = escaped_nul(text)))
    return text_error(c->err, c->file, text, bad, "a \\u0000 in a string (expected text without NUL characters)");
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
  const char *deep = root ? NULL : too_deep(text);
  if (deep) {
    char what[128];
    snprintf(what, sizeof what, "nested more than %d levels deep (expected at most %d levels of arrays and objects)",
             CJSON_NESTING_LIMIT, CJSON_NESTING_LIMIT);
    return text_error(c->err, c->file, text, deep, what);
  }
  if (!root) return json_error(c->err, c->file, text, end ? end : cJSON_GetErrorPtr());
  if (!cJSON_IsObject(root)) {
    int rc = pb_cfg_type_error(c, "", root, "a JSON object with a \"stages\" array");
    cJSON_Delete(root);
    return rc;
  }
  *out = root;
  return 0;
}

static int validate(pb_cfg_ctx *c, const cJSON *root, const char *file) {
  int rc = pb_cfg_keys_parse(c, &pb_cfg_top_table, root, "", c->cfg);
  if (!rc && !cJSON_GetObjectItemCaseSensitive(root, "name")) default_name(c->cfg, file);
  if (!rc) rc = pb_cfg_check_pipeline(c);
  if (!rc) rc = pb_cfg_infer_shapes(c);
  return rc;
}

int pb_config_parse(pb_config *cfg, const char *file, const char *json_text, const char *const *sets, int nsets,
                    pb_err *err) {
  memset(cfg, 0, sizeof *cfg);
  if (err) err->msg[0] = '\0';
  snprintf(cfg->file, sizeof cfg->file, "%s", file && file[0] ? file : "(config)");
  pb_cfg_ctx c = {.err = err, .cfg = cfg};
  pb_cfg_clean(cfg->file, 300, c.file, sizeof c.file);
  if (!json_text) return pb_err_set(err, "%s: no config text (expected a JSON document)", c.file);
  cJSON *root = NULL;
  int rc = parse_json(&c, json_text, &root);
  if (!rc) rc = pb_cfg_apply_sets(root, sets, sets ? nsets : 0, err);
  if (!rc) rc = validate(&c, root, file);
  cJSON_Delete(root);
  return rc;
}

/* Reads the whole file; *len excludes the terminating NUL added after it.  `shown` names it in messages. */
static int read_file(const char *file, const char *shown, char **out, size_t *len, pb_err *err) {
  int rc = pb_read_file(file, MAX_CONFIG_BYTES, out, len);
  if (rc == -EFBIG || rc == -ENOMEM)
    return pb_err_set(err, "%s: cannot read: larger than 16 MiB or out of memory (expected a JSON config file)", shown);
  if (rc) return pb_err_set(err, "%s: cannot read: %s (expected a readable JSON config file)", shown, strerror(-rc));
  return 0;
}

/* The file's text, refused when it holds a NUL (cJSON would stop there and miss the rest). */
static int read_text(const char *file, const char *shown, char **text, pb_err *err) {
  size_t len = 0;
  int rc = read_file(file, shown, text, &len, err);
  const char *nul = rc ? NULL : memchr(*text, '\0', len);
  if (nul) {
    rc = json_error(err, shown, *text, nul);
    free(*text);
  }
  return rc;
}

int pb_config_load(pb_config *cfg, const char *file, const char *const *sets, int nsets, pb_err *err) {
  memset(cfg, 0, sizeof *cfg);
  if (!file) return pb_err_set(err, "no config file (expected --config FILE)");
  char *text = NULL, shown[320];
  pb_cfg_clean(file, 300, shown, sizeof shown);
  int rc = read_text(file, shown, &text, err);
  if (rc) return rc;
  rc = pb_config_parse(cfg, file, text, sets, nsets, err);
  free(text);
  return rc;
}

int pb_config_canonical_paths(const char *file, const char *const *sets, int nsets, const char *const *paths,
                              int npaths, char (*out)[PB_CFG_PATH_LEN], pb_err *err) {
  if (!file) return pb_err_set(err, "no config file (expected --config FILE)");
  char *text = NULL, shown[320];
  pb_cfg_clean(file, 300, shown, sizeof shown);
  int rc = read_text(file, shown, &text, err);
  if (rc) return rc;
  pb_cfg_ctx c = {.err = err}; /* parse_json's messages need only the file's name */
  pb_cfg_clean(file, 300, c.file, sizeof c.file);
  cJSON *root = NULL;
  rc = parse_json(&c, text, &root);
  if (!rc) rc = pb_cfg_apply_sets(root, sets, sets ? nsets : 0, err);
  for (int i = 0; !rc && i < npaths; i++) pb_cfg_canonical_path(root, paths[i], out[i], PB_CFG_PATH_LEN);
  cJSON_Delete(root);
  free(text);
  return rc;
}

cJSON *pb_config_to_json(const pb_config *cfg) { return pb_cfg_keys_emit(&pb_cfg_top_table, cfg, cfg); }

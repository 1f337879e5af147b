/* What one table row cannot say: the stage and op lists (whose keys depend on their "type"/"op"),
 * step_ms (a number or an object), and the rules that tie keys of one section together. */
#include <stdio.h>
#include <string.h>

#include <ctype.h>

#include "config_internal.h"

static bool has(const cJSON *obj, const char *key) { return cJSON_GetObjectItemCaseSensitive(obj, key) != NULL; }

/* ---- stages ---- */

/* Parses the discriminating key ("type" or "op") first, since it picks the table for the rest. */
static int parse_kind(pb_cfg_ctx *c, const pb_key *k, const cJSON *obj, const char *path, void *base) {
  char p[PB_CFG_PATH_MAX];
  pb_cfg_path_key(p, path, k->name);
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, k->name);
  return item ? pb_cfg_key_parse(c, k, item, p, base) : pb_cfg_key_missing(c, k, p);
}

static int parse_stage(pb_cfg_ctx *c, const cJSON *obj, const char *path, pb_stage_cfg *st) {
  if (!cJSON_IsObject(obj)) return pb_cfg_type_error(c, path, obj, "a stage object like {\"type\": \"read\"}");
  int rc = parse_kind(c, &pb_cfg_stage_type_key, obj, path, st);
  if (!rc) rc = pb_cfg_keys_parse(c, pb_cfg_stage_table(st->type), obj, path, st);
  if (!rc && !has(obj, "name")) snprintf(st->name, sizeof st->name, "%s", pb_stage_type_name(st->type));
  return rc;
}

static int check_unique_name(pb_cfg_ctx *c, const pb_config *cfg, int i, const char *path) {
  /* the report's own rows: the accelerator, and the in-memory source of synthetic data.  A stage of that
   * name would be taken for them (the bottleneck "device" means not input-bound). */
  static const char *const reserved[] = {"device", "source"};
  for (size_t r = 0; r < PB_ARRAY_LEN(reserved); r++) {
    if (strcmp(cfg->stages[i].name, reserved[r]) != 0) continue;
    char p[PB_CFG_PATH_MAX];
    pb_cfg_path_key(p, path, "name");
    return pb_cfg_fail(c, p, "\"%s\" is the report's name for the %s (expected another stage name)", reserved[r],
                       r == 0 ? "accelerator" : "in-memory source of synthetic data");
  }
  for (int j = 0; j < i; j++) {
    if (strcmp(cfg->stages[j].name, cfg->stages[i].name) != 0) continue;
    char p[PB_CFG_PATH_MAX], q[80];
    pb_cfg_path_key(p, path, "name");
    return pb_cfg_fail(c, p, "%s is already used by stages[%d] (expected a unique name)",
                       pb_cfg_quote(cfg->stages[i].name, q, sizeof q), j);
  }
  return 0;
}

int pb_cfg_parse_stages(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base) {
  pb_config *cfg = base;
  int n = cJSON_IsArray(item) ? cJSON_GetArraySize(item) : -1;
  if (n < 1 || n > PB_MAX_STAGES) return pb_cfg_type_error(c, path, item, k->expect);
  int i = 0;
  for (const cJSON *el = item->child; el; el = el->next, i++) {
    char p[PB_CFG_PATH_MAX];
    pb_cfg_path_index(p, path, i);
    int rc = parse_stage(c, el, p, &cfg->stages[i]);
    if (!rc) rc = check_unique_name(c, cfg, i, p);
    if (rc) return rc;
    cfg->nstages = i + 1;
  }
  return 0;
}

cJSON *pb_cfg_emit_stages(const pb_key *k, const void *base, const pb_config *cfg) {
  (void)k, (void)base; /* base is cfg */
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; arr && i < cfg->nstages; i++) {
    const pb_stage_cfg *st = &cfg->stages[i];
    cJSON_AddItemToArray(arr, pb_cfg_keys_emit(pb_cfg_stage_table(st->type), st, cfg));
  }
  return arr;
}

/* ---- ops ---- */

static int parse_op(pb_cfg_ctx *c, const cJSON *obj, const char *path, pb_op_cfg *op) {
  if (!cJSON_IsObject(obj)) return pb_cfg_type_error(c, path, obj, "an op object like {\"op\": \"flip\"}");
  int rc = parse_kind(c, &pb_cfg_op_kind_key, obj, path, op);
  return rc ? rc : pb_cfg_keys_parse(c, pb_cfg_op_table(op->kind), obj, path, op);
}

int pb_cfg_parse_ops(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base) {
  pb_stage_cfg *st = base;
  int n = cJSON_IsArray(item) ? cJSON_GetArraySize(item) : -1;
  if (n < 0 || n > PB_MAX_OPS) return pb_cfg_type_error(c, path, item, k->expect);
  int i = 0;
  for (const cJSON *el = item->child; el; el = el->next, i++) {
    char p[PB_CFG_PATH_MAX];
    pb_cfg_path_index(p, path, i);
    int rc = parse_op(c, el, p, &st->ops[i]);
    if (rc) return rc;
    st->nops = i + 1;
  }
  return 0;
}

cJSON *pb_cfg_emit_ops(const pb_key *k, const void *base, const pb_config *cfg) {
  (void)k;
  const pb_stage_cfg *st = base;
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; arr && i < st->nops; i++)
    cJSON_AddItemToArray(arr, pb_cfg_keys_emit(pb_cfg_op_table(st->ops[i].kind), &st->ops[i], cfg));
  return arr;
}

int pb_cfg_check_normalize(pb_cfg_ctx *c, const cJSON *obj, const char *path, void *base) {
  (void)obj;
  const pb_op_cfg *op = base;
  if (op->nmean == op->nstd) return 0;
  char p[PB_CFG_PATH_MAX];
  pb_cfg_path_key(p, path, "std");
  return pb_cfg_fail(c, p, "%d values but mean has %d (expected as many std values as mean values)", op->nstd,
                     op->nmean);
}

/* ---- device ---- */

int pb_cfg_parse_step_ms(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base) {
  pb_device_cfg *d = base;
  if (cJSON_IsNumber(item)) {
    pb_num_rule r = {.min = k->min, .max = k->max};
    d->step_normal = false;
    d->step_stdev_ms = 0;
    return pb_cfg_check_number(c, item, path, &r, &d->step_ms);
  }
  if (!cJSON_IsObject(item)) return pb_cfg_type_error(c, path, item, k->expect);
  pb_step_dist dist = {0};
  int rc = pb_cfg_keys_parse(c, &pb_cfg_step_dist_table, item, path, &dist);
  if (rc) return rc;
  d->step_normal = true;
  d->step_ms = dist.mean_ms;
  d->step_stdev_ms = dist.stdev_ms;
  return 0;
}

cJSON *pb_cfg_emit_step_ms(const pb_key *k, const void *base, const pb_config *cfg) {
  (void)k;
  const pb_device_cfg *d = base;
  if (!d->step_normal) return cJSON_CreateNumber(d->step_ms);
  pb_step_dist dist = {.dist = 0, .mean_ms = d->step_ms, .stdev_ms = d->step_stdev_ms};
  return pb_cfg_keys_emit(&pb_cfg_step_dist_table, &dist, cfg);
}

static int check_ids_unique(pb_cfg_ctx *c, const pb_device_cfg *d, const char *path) {
  for (int i = 1; i < d->nids; i++) {
    for (int j = 0; j < i; j++) {
      if (d->ids[i] != d->ids[j]) continue;
      char p[PB_CFG_PATH_MAX];
      snprintf(p, sizeof p, "%.200s.ids[%d]", path, i);
      return pb_cfg_fail(c, p, "%d is already listed as ids[%d] (expected each GPU id once)", d->ids[i], j);
    }
  }
  return 0;
}

/* count defaults to the number of ids; when both are given they must agree. */
int pb_cfg_check_device(pb_cfg_ctx *c, const cJSON *obj, const char *path, void *base) {
  pb_device_cfg *d = base;
  int rc = check_ids_unique(c, d, path);
  if (rc) return rc;
  if (!has(obj, "count")) {
    d->count = d->nids > 0 ? d->nids : 1;
    return 0;
  }
  if (d->nids == 0 || d->count == d->nids) return 0;
  char p[PB_CFG_PATH_MAX];
  pb_cfg_path_key(p, path, "count");
  return pb_cfg_fail(c, p, "%d does not match the %d entries of device.ids (expected count equal to the number of ids)",
                     d->count, d->nids);
}

/* device.allreduce: bytes or params (not both) for model and mpi; gb_per_s for model.  none and barrier
 * leave the sizes unused (so that --set device.allreduce.mode=barrier works on a config made for mpi). */
int pb_cfg_check_allreduce(pb_cfg_ctx *c, const cJSON *obj, const char *path, void *base) {
  const pb_allreduce_cfg *a = base;
  char p[PB_CFG_PATH_MAX];
  const char *mode = pb_allreduce_mode_name(a->mode);
  if (has(obj, "bytes") && has(obj, "params"))
    return pb_cfg_fail(c, path, "bytes and params are both set (expected one: params means bytes = params x 4)");
  bool sized = has(obj, "bytes") || has(obj, "params");
  if ((a->mode == PB_ALLREDUCE_MODEL || a->mode == PB_ALLREDUCE_MPI) && !sized) {
    pb_cfg_path_key(p, path, "bytes");
    return pb_cfg_fail(c, p, "missing (expected bytes or params with mode \"%s\")", mode);
  }
  if (a->mode == PB_ALLREDUCE_MODEL && !has(obj, "gb_per_s")) {
    pb_cfg_path_key(p, path, "gb_per_s");
    return pb_cfg_fail(c, p, "missing (expected the bandwidth the model divides bytes by with mode \"model\")");
  }
  return 0;
}

/* ---- dataset ---- */

/* shape, dtype and num_samples describe the in-memory synthetic dataset and mean nothing for files;
 * the shape is what a synthetic dataset is, so it is required there.  feature and payload say what a
 * tf.train.Example holds and mean nothing for other formats: given there, they were meant for a
 * tfrecord dataset and would be silently ignored. */
static int check_format_keys(pb_cfg_ctx *c, const cJSON *obj, const char *path, const pb_dataset_cfg *d) {
  char p[PB_CFG_PATH_MAX], text[256];
  for (int i = 0; i < pb_cfg_dataset_table.nkeys; i++) {
    const pb_key *k = &pb_cfg_dataset_table.keys[i];
    pb_format only = k->flags & PB_KF_SYNTHETIC ? PB_FMT_SYNTHETIC : PB_FMT_TFRECORD;
    if (!(k->flags & (PB_KF_SYNTHETIC | PB_KF_TFRECORD))) continue;
    pb_cfg_path_key(p, path, k->name);
    if (d->format != only && has(obj, k->name))
      return pb_cfg_fail(c, p, "not used with format %s (expected %s only with dataset.format \"%s\")",
                         pb_cfg_quote(pb_format_name(d->format), text, sizeof text), k->name, pb_format_name(only));
    if (d->format == PB_FMT_SYNTHETIC && only == PB_FMT_SYNTHETIC && !has(obj, k->name) &&
        strcmp(k->name, "shape") == 0)
      return pb_cfg_fail(c, p, "missing (expected %s with dataset.format \"synthetic\")",
                         pb_cfg_key_expect(k, text, sizeof text));
  }
  return 0;
}

int pb_cfg_check_dataset(pb_cfg_ctx *c, const cJSON *obj, const char *path, void *base) {
  pb_dataset_cfg *d = base;
  int rc = check_format_keys(c, obj, path, d);
  if (rc) return rc;
  d->sample.known = d->format == PB_FMT_SYNTHETIC;
  if (!has(obj, "record_bytes")) d->record_bytes = d->generate.record_bytes;
  if (d->format == PB_FMT_RAW && d->record_bytes <= 0) { /* else every file fails, sample by sample */
    char p[PB_CFG_PATH_MAX];
    pb_cfg_path_key(p, path, "record_bytes");
    return pb_cfg_fail(c, p, "missing (expected the bytes of one record with dataset.format \"raw\", here or as "
                             "dataset.generate.record_bytes)");
  }
  return 0;
}

/* One extension: letters and digits (and '_', '-'), up to 15 of them; "" and "*" too. */
static bool extension_ok(const char *e) {
  if (strcmp(e, "*") == 0) return true;
  size_t n = strlen(e);
  if (n >= PB_EXTENSION_LEN) return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)e[i]) && e[i] != '_' && e[i] != '-') return false;
  return true;
}

int pb_cfg_parse_extensions(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base) {
  pb_dataset_cfg *d = base;
  int n = cJSON_GetArraySize(item);
  if (!cJSON_IsArray(item) || n < 1 || n > PB_MAX_EXTENSIONS) return pb_cfg_type_error(c, path, item, k->expect);
  d->nextensions = 0;
  for (const cJSON *e = item->child; e; e = e->next) {
    char p[PB_CFG_PATH_MAX];
    pb_cfg_path_index(p, path, d->nextensions);
    if (!cJSON_IsString(e) || !extension_ok(e->valuestring))
      return pb_cfg_type_error(c, p, e,
                               "an extension without the dot: up to 15 letters, digits, _ or -, \"\" or \"*\"");
    snprintf(d->extensions[d->nextensions++], PB_EXTENSION_LEN, "%s", e->valuestring);
  }
  return 0;
}

cJSON *pb_cfg_emit_extensions(const pb_key *k, const void *base, const pb_config *cfg) {
  (void)k, (void)cfg;
  const pb_dataset_cfg *d = base;
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; arr && i < d->nextensions; i++) cJSON_AddItemToArray(arr, cJSON_CreateString(d->extensions[i]));
  return arr;
}

bool pb_cfg_emit_if_extensions(const void *dataset) { return ((const pb_dataset_cfg *)dataset)->nextensions > 0; }

bool pb_cfg_emit_if_au_target(const void *run) { return ((const pb_run_cfg *)run)->au_target_pct > 0; }

bool pb_cfg_emit_if_synthetic(const void *dataset) {
  return ((const pb_dataset_cfg *)dataset)->format == PB_FMT_SYNTHETIC;
}

bool pb_cfg_emit_if_tfrecord(const void *dataset) {
  return ((const pb_dataset_cfg *)dataset)->format == PB_FMT_TFRECORD;
}

/* ---- run ---- */

static const char *const stop_keys[] = {"steps", "epochs", "duration_s"}; /* by pb_stop_mode */

int pb_cfg_check_run(pb_cfg_ctx *c, const cJSON *obj, const char *path, void *base) {
  pb_run_cfg *run = base;
  int given = -1;
  for (int m = 0; m < (int)PB_ARRAY_LEN(stop_keys); m++) {
    if (!has(obj, stop_keys[m])) continue;
    if (given >= 0)
      return pb_cfg_fail(c, path, "%s and %s are both set (expected only one of steps, epochs, duration_s)",
                         stop_keys[given], stop_keys[m]);
    given = m;
  }
  run->stop = given >= 0 ? (pb_stop_mode)given : PB_STOP_STEPS;
  if (given < 0) run->steps = 100;
  const pb_dataset_cfg *d = &c->cfg->dataset;
  if (run->stop == PB_STOP_EPOCHS && d->format == PB_FMT_SYNTHETIC && d->num_samples == 0) {
    char p[PB_CFG_PATH_MAX];
    pb_cfg_path_key(p, path, "epochs");
    return pb_cfg_fail(c, p, "an endless synthetic dataset has no epochs "
                             "(expected dataset.num_samples > 0 with dataset.format \"synthetic\")");
  }
  return 0;
}

bool pb_cfg_emit_if_steps(const void *run) { return ((const pb_run_cfg *)run)->stop == PB_STOP_STEPS; }
bool pb_cfg_emit_if_epochs(const void *run) { return ((const pb_run_cfg *)run)->stop == PB_STOP_EPOCHS; }
bool pb_cfg_emit_if_duration(const void *run) { return ((const pb_run_cfg *)run)->stop == PB_STOP_DURATION; }

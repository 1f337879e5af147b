#define _GNU_SOURCE /* realpath, sched_getaffinity */
#include "calibration.h"
#include "json_text.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "decode_scale.h"

static const char *k_mode_names[PB_READ_MODES] = {"buffered_sequential", "buffered_random", "direct_sequential",
                                                  "direct_random"};

const char *pb_read_mode_name(pb_read_mode m) { return k_mode_names[m]; }

static void cpu_model(char *out, size_t len) {
  snprintf(out, len, "unknown CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *v = strchr(line, ':');
    if (!v) break;
    v += strspn(v + 1, " \t") + 1;
    snprintf(out, len, "%.*s", (int)strcspn(v, "\n"), v);
    break;
  }
  fclose(f);
}

/* CPUs this process may run on (its affinity mask: taskset, a container's cpuset), or 0 when unknown. */
static int usable_cpus(void) {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

/* Everything the figures depend on besides the dataset: the host, its CPU, the cores online and usable, the
 * kernel and pipebench's version.  A cache copied into another container, or one left by an older binary or
 * under another CPU mask, does not match, so its figures are not taken for this machine's (issue 34). */
void pb_calib_machine_key(char *out, size_t len) {
  char host[128] = "unknown-host", model[160];
  gethostname(host, sizeof host - 1);
  cpu_model(model, sizeof model);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  struct utsname u;
  if (uname(&u) != 0) snprintf(u.release, sizeof u.release, "unknown");
  snprintf(out, len, "%s | %s | %ld cpus, %d usable | Linux %.64s | pipebench %s", host, model, n, usable_cpus(),
           u.release, PB_VERSION);
}

int pb_calib_cache_path(char *out, size_t len) {
  char host[128] = "unknown-host";
  gethostname(host, sizeof host - 1);
  for (char *p = host; *p; p++)
    if (*p == '/') *p = '_';
  const char *dir = getenv("PIPEBENCH_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (dir && *dir) snprintf(out, len, "%s/calibration-%s.json", dir, host);
  else if (xdg && *xdg) snprintf(out, len, "%s/pipebench/calibration-%s.json", xdg, host);
  else if (home && *home) snprintf(out, len, "%s/.cache/pipebench/calibration-%s.json", home, host);
  else return -ENOENT;
  return 0;
}

int pb_calib_cache_mkdir(const char *file) {
  char dir[PB_PATH_LEN];
  snprintf(dir, sizeof dir, "%s", file);
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir) return 0;
  *slash = '\0';
  return pb_mkdir_p(dir);
}

/* ---------- JSON ---------- */

/* A measured rate, or null when it was not measured (NAN). */
static void add_rate(cJSON *o, const char *key, double v) {
  if (isfinite(v)) cJSON_AddNumberToObject(o, key, round(v * 1000.0) / 1000.0);
  else cJSON_AddNullToObject(o, key);
}

static cJSON *dataset_json(const pb_calib_dataset *d) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "path", d->path);
  cJSON_AddStringToObject(o, "format", d->format);
  cJSON_AddNumberToObject(o, "files", (double)d->files);
  cJSON_AddNumberToObject(o, "bytes", (double)d->bytes);
  cJSON *dec = cJSON_AddObjectToObject(o, "decode");
  cJSON_AddStringToObject(dec, "scale", d->scale);
  cJSON_AddNumberToObject(dec, "min_side", d->decode_min_side);
  cJSON_AddBoolToObject(dec, "fused_crop", d->fused_crop);
  cJSON_AddNumberToObject(dec, "files", d->decode_files);
  cJSON_AddNumberToObject(dec, "files_skipped", d->decode_skipped);
  add_rate(dec, "images_per_s_per_core", d->decode_images_per_s);
  add_rate(dec, "mb_per_s_per_core", d->decode_mb_per_s);
  cJSON *rd = cJSON_AddObjectToObject(o, "read");
  cJSON_AddNumberToObject(rd, "block_bytes", d->block_bytes);
  cJSON_AddBoolToObject(rd, "cache_evicted", d->cache_evicted);
  cJSON *mb = cJSON_AddObjectToObject(rd, "mb_per_s_one_thread");
  cJSON *why = cJSON_AddObjectToObject(rd, "not_measured");
  for (int m = 0; m < PB_READ_MODES; m++) {
    add_rate(mb, k_mode_names[m], d->read_mb_per_s[m]);
    if (d->read_why[m][0]) cJSON_AddStringToObject(why, k_mode_names[m], d->read_why[m]);
  }
  return o;
}

cJSON *pb_calib_to_json(const pb_calibration *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "pipebench_version", c->version);
  cJSON_AddStringToObject(o, "machine", c->machine);
  cJSON_AddStringToObject(o, "measured_at", c->measured_at);
  cJSON_AddNumberToObject(o, "cores", c->cores);
  cJSON *mc = cJSON_AddObjectToObject(o, "memcpy");
  add_rate(mc, "gb_per_s_one_core", c->memcpy_gb_per_s);
  add_rate(mc, "gb_per_s_all_cores", c->memcpy_all_gb_per_s);
  cJSON *g = cJSON_AddObjectToObject(o, "gpu");
  if (c->gpu_name[0]) cJSON_AddStringToObject(g, "name", c->gpu_name);
  else cJSON_AddNullToObject(g, "name");
  if (c->gpu_why[0]) cJSON_AddStringToObject(g, "not_measured", c->gpu_why);
  add_rate(g, "h2d_pinned_gb_per_s", c->h2d_pinned_gb_per_s);
  add_rate(g, "h2d_pageable_gb_per_s", c->h2d_pageable_gb_per_s);
  cJSON *k = cJSON_AddObjectToObject(g, "step_kernel");
  add_rate(k, "target_ms", c->step_kernel_target_ms);
  add_rate(k, "measured_ms", c->step_kernel_measured_ms);
  add_rate(k, "error_pct", c->step_kernel_error_pct);
  cJSON *ds = cJSON_AddArrayToObject(o, "datasets");
  for (int i = 0; i < c->ndatasets; i++) cJSON_AddItemToArray(ds, dataset_json(&c->datasets[i]));
  return o;
}

/* Reading is lenient about rates (null, missing, or not a positive finite number: not measured, so a
 * hand-edited zero never becomes a ceiling of 0) and strict about the shape. */
static double get_rate(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble > 0 ? v->valuedouble : NAN;
}

/* A count (files, bytes, block size): 0 when missing or out of range, never a NAN cast to an integer. */
static double get_count(const cJSON *o, const char *key, double max) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= max ? floor(v->valuedouble) : 0;
}

/* Signed figures (the step kernel's error may be negative): any finite number. */
static double get_signed(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : NAN;
}

static void get_str(const cJSON *o, const char *key, char *out, size_t len) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  snprintf(out, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static void dataset_from_json(const cJSON *o, pb_calib_dataset *d) {
  memset(d, 0, sizeof *d);
  get_str(o, "path", d->path, sizeof d->path);
  get_str(o, "format", d->format, sizeof d->format);
  d->files = (uint64_t)get_count(o, "files", 1e18);
  d->bytes = (uint64_t)get_count(o, "bytes", 1e18);
  const cJSON *dec = cJSON_GetObjectItemCaseSensitive(o, "decode");
  get_str(dec, "scale", d->scale, sizeof d->scale);
  d->decode_min_side = (int)get_count(dec, "min_side", 1 << 20);
  d->fused_crop = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dec, "fused_crop"));
  d->decode_files = (int)get_count(dec, "files", 1 << 20);
  d->decode_skipped = (int)get_count(dec, "files_skipped", 1 << 20);
  d->decode_images_per_s = get_rate(dec, "images_per_s_per_core");
  d->decode_mb_per_s = get_rate(dec, "mb_per_s_per_core");
  const cJSON *rd = cJSON_GetObjectItemCaseSensitive(o, "read");
  d->block_bytes = (int)get_count(rd, "block_bytes", 1 << 30);
  d->cache_evicted = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rd, "cache_evicted"));
  const cJSON *mb = cJSON_GetObjectItemCaseSensitive(rd, "mb_per_s_one_thread");
  const cJSON *why = cJSON_GetObjectItemCaseSensitive(rd, "not_measured");
  for (int m = 0; m < PB_READ_MODES; m++) {
    d->read_mb_per_s[m] = get_rate(mb, k_mode_names[m]);
    get_str(why, k_mode_names[m], d->read_why[m], sizeof d->read_why[m]);
  }
}

static void from_json(const cJSON *o, pb_calibration *c) {
  memset(c, 0, sizeof *c);
  get_str(o, "pipebench_version", c->version, sizeof c->version);
  get_str(o, "machine", c->machine, sizeof c->machine);
  get_str(o, "measured_at", c->measured_at, sizeof c->measured_at);
  c->cores = (int)get_count(o, "cores", 1 << 20);
  const cJSON *mc = cJSON_GetObjectItemCaseSensitive(o, "memcpy");
  c->memcpy_gb_per_s = get_rate(mc, "gb_per_s_one_core");
  c->memcpy_all_gb_per_s = get_rate(mc, "gb_per_s_all_cores");
  const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "gpu");
  get_str(g, "name", c->gpu_name, sizeof c->gpu_name);
  get_str(g, "not_measured", c->gpu_why, sizeof c->gpu_why);
  c->h2d_pinned_gb_per_s = get_rate(g, "h2d_pinned_gb_per_s");
  c->h2d_pageable_gb_per_s = get_rate(g, "h2d_pageable_gb_per_s");
  const cJSON *k = cJSON_GetObjectItemCaseSensitive(g, "step_kernel");
  c->step_kernel_target_ms = get_rate(k, "target_ms");
  c->step_kernel_measured_ms = get_rate(k, "measured_ms");
  c->step_kernel_error_pct = get_signed(k, "error_pct");
  const cJSON *ds = cJSON_GetObjectItemCaseSensitive(o, "datasets"), *d;
  cJSON_ArrayForEach(d, ds) {
    if (c->ndatasets == PB_CALIB_MAX_DATASETS) break;
    dataset_from_json(d, &c->datasets[c->ndatasets++]);
  }
}

int pb_calib_load(const char *file, const char *machine, pb_calibration *c, pb_err *err) {
  char *text = NULL;
  size_t len;
  int rc = pb_read_file(file, 16u << 20, &text, &len);
  if (rc == -ENOENT) return rc;
  if (rc) return pb_err_setc(err, -EINVAL, "%s: cannot read: %s", file, strerror(-rc));
  cJSON *j = cJSON_Parse(text);
  free(text);
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "machine");
  const cJSON *cores = cJSON_GetObjectItemCaseSensitive(j, "cores");
  if (!cJSON_IsObject(j) || !cJSON_IsString(m) || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "memcpy")) ||
      !cJSON_IsNumber(cores) || !(cores->valuedouble >= 1 && cores->valuedouble <= (1 << 20))) {
    cJSON_Delete(j);
    return pb_err_setc(err, -EINVAL,
                       "%s: not a calibration (expected the calibration.json `pipebench calibrate` writes)", file);
  }
  if (machine && strcmp(m->valuestring, machine) != 0) {
    pb_err_set(err, "%s: measured on another machine (\"%s\"; expected \"%s\")", file, m->valuestring, machine);
    cJSON_Delete(j);
    return -EINVAL;
  }
  from_json(j, c);
  cJSON_Delete(j);
  return 0;
}

static int write_text(FILE *f, const void *text) {
  return fputs(text, f) < 0 || fputc('\n', f) == EOF ? -(errno ? errno : EIO) : 0;
}

int pb_calib_save(const char *file, const pb_calibration *c, pb_err *err) {
  cJSON *j = pb_calib_to_json(c);
  char *text = j ? pb_json_print(j, true) : NULL;
  cJSON_Delete(j);
  if (!text) return pb_err_setc(err, -ENOMEM, "%s: out of memory", file);
  int rc = pb_write_atomic(file, write_text, text); /* a reader never sees half a file */
  free(text);
  if (rc) return pb_err_set(err, "%s: cannot write: %s", file, strerror(-rc)), rc;
  return 0;
}

/* ---------- the dataset entries ---------- */

void pb_calib_dataset_key(const pb_config *cfg, pb_calib_dataset *d) {
  memset(d, 0, sizeof *d);
  char *abs = realpath(cfg->dataset.path, NULL); /* NULL for a glob or @FILE that is not one file */
  snprintf(d->path, sizeof d->path, "%s", abs && strlen(abs) < sizeof d->path ? abs : cfg->dataset.path);
  free(abs);
  snprintf(d->format, sizeof d->format, "%s", pb_format_name(cfg->dataset.format));
  for (int i = 0; i < cfg->nstages; i++) {
    const pb_stage_cfg *s = &cfg->stages[i];
    if (s->type == PB_STAGE_READ && !d->block_bytes) d->block_bytes = (int)s->block_bytes;
    if (s->type == PB_STAGE_DECODE && !d->scale[0] && cfg->dataset.format == PB_FMT_JPEG) {
      snprintf(d->scale, sizeof d->scale, "%s", pb_decode_scale_name(s->scale));
      /* what `auto` resolves to depends on the next crop or resize: 224 and 64 are different work */
      d->decode_min_side = s->scale == PB_SCALE_AUTO ? pb_decode_min_side(cfg, s) : 0;
      d->fused_crop = s->fused_crop;
    }
  }
  d->decode_images_per_s = d->decode_mb_per_s = NAN;
  for (int m = 0; m < PB_READ_MODES; m++) d->read_mb_per_s[m] = NAN;
}

/* The same dataset read and decoded the same way (files and bytes aside). */
static bool same_settings(const pb_calib_dataset *a, const pb_calib_dataset *b) {
  return strcmp(a->path, b->path) == 0 && strcmp(a->format, b->format) == 0 && a->block_bytes == b->block_bytes &&
         strcmp(a->scale, b->scale) == 0 && a->decode_min_side == b->decode_min_side &&
         a->fused_crop == b->fused_crop;
}

static bool same_key(const pb_calib_dataset *a, const pb_calib_dataset *b) {
  return same_settings(a, b) && a->files == b->files && a->bytes == b->bytes;
}

const pb_calib_dataset *pb_calib_find(const pb_calibration *c, const pb_calib_dataset *key) {
  for (int i = 0; i < c->ndatasets; i++)
    if (same_key(&c->datasets[i], key)) return &c->datasets[i];
  return NULL;
}

/* Newest last: a re-measured entry moves to the end, where a run looks first (find_for_run). */
void pb_calib_put(pb_calibration *c, const pb_calib_dataset *d) {
  for (int i = 0; i < c->ndatasets; i++)
    if (same_key(&c->datasets[i], d)) {
      memmove(&c->datasets[i], &c->datasets[i + 1], (size_t)(c->ndatasets - i - 1) * sizeof *c->datasets);
      c->ndatasets--;
      break;
    }
  if (c->ndatasets == PB_CALIB_MAX_DATASETS) { /* the oldest goes */
    memmove(&c->datasets[0], &c->datasets[1], (PB_CALIB_MAX_DATASETS - 1) * sizeof *c->datasets);
    c->ndatasets--;
  }
  c->datasets[c->ndatasets++] = *d;
}

/* ---------- what a run uses ---------- */

static bool h2d_pinned(const pb_config *cfg) {
  for (int i = 0; i < cfg->nstages; i++)
    if (cfg->stages[i].type == PB_STAGE_H2D) return cfg->stages[i].pinned;
  return true;
}

static bool read_direct(const pb_config *cfg) {
  for (int i = 0; i < cfg->nstages; i++)
    if (cfg->stages[i].type == PB_STAGE_READ) return cfg->stages[i].direct;
  return false;
}

/* The read stage's emulation caps: what it adds to the storage calibrate measured. */
static void read_emulation(const pb_config *cfg, pb_ceilings *out) {
  for (int i = 0; i < cfg->nstages; i++) {
    const pb_stage_cfg *s = &cfg->stages[i];
    if (s->type != PB_STAGE_READ) continue;
    out->read_latency_us = (double)s->latency_us;
    out->read_cap_mb_per_s = s->bandwidth_mb_per_s > 0 ? s->bandwidth_mb_per_s : 0;
    int64_t block = s->direct ? (s->block_bytes + 4095) / 4096 * 4096 : s->block_bytes; /* as stage_read.c */
    out->read_block_bytes = block > 0 && block <= INT32_MAX ? (int)block : 0;
    return;
  }
}

/* The newest entry for the config's dataset (same path, format, block size and decode settings): a
 * dataset that gained files since is still best described by its latest calibration. */
static const pb_calib_dataset *find_for_run(const pb_calibration *c, const pb_config *cfg) {
  pb_calib_dataset key;
  pb_calib_dataset_key(cfg, &key);
  for (int i = c->ndatasets - 1; i >= 0; i--)
    if (same_settings(&c->datasets[i], &key)) return &c->datasets[i];
  return NULL;
}

void pb_ceilings_none(pb_ceilings *c, const char *why) {
  memset(c, 0, sizeof *c);
  c->memcpy_gb_per_s = c->h2d_gb_per_s = c->decode_images_per_s = c->read_mb_per_s = NAN;
  snprintf(c->why, sizeof c->why, "%s", why);
}

void pb_ceilings_lookup(const pb_config *cfg, bool synthetic, bool gpu, pb_ceilings *out) {
  pb_ceilings_none(out, "");
  char machine[256];
  pb_calib_machine_key(machine, sizeof machine);
  if (pb_calib_cache_path(out->source, sizeof out->source)) {
    snprintf(out->why, sizeof out->why, "no cache directory (set PIPEBENCH_CACHE_DIR or HOME)");
    return;
  }
  pb_calibration *c = calloc(1, sizeof *c);
  pb_err err;
  int rc = c ? pb_calib_load(out->source, machine, c, &err) : -ENOMEM;
  if (rc == -ENOENT) snprintf(out->why, sizeof out->why, "no calibration of this machine (run pipebench calibrate)");
  else if (rc) snprintf(out->why, sizeof out->why, "%.250s", rc == -ENOMEM ? "out of memory" : err.msg);
  if (rc) return free(c);
  out->have = true;
  snprintf(out->measured_at, sizeof out->measured_at, "%s", c->measured_at);
  out->cores = c->cores;
  out->memcpy_gb_per_s = c->memcpy_gb_per_s;
  if (gpu) out->h2d_gb_per_s = h2d_pinned(cfg) ? c->h2d_pinned_gb_per_s : c->h2d_pageable_gb_per_s;
  read_emulation(cfg, out);
  const pb_calib_dataset *d = synthetic ? NULL : find_for_run(c, cfg);
  if (d) {
    /* The read stage reads each file whole, in blocks, in a shuffled file order: a file of one block is
     * a random read; files of many blocks are read in order, which the sequential figure measures. */
    bool multi_block = d->block_bytes > 0 && d->bytes > d->files * (uint64_t)d->block_bytes;
    pb_read_mode m = read_direct(cfg) ? (multi_block ? PB_READ_DIRECT_SEQ : PB_READ_DIRECT_RAND)
                                      : (multi_block ? PB_READ_BUFFERED_SEQ : PB_READ_BUFFERED_RAND);
    out->dataset = true;
    out->decode_images_per_s = d->decode_images_per_s;
    out->read_mb_per_s = d->read_mb_per_s[m];
    snprintf(out->read_mode, sizeof out->read_mode, "%s", pb_read_mode_name(m));
  }
  free(c);
}

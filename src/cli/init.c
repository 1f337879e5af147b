/* pipebench init: a config for the user's own data (issue 34).  Probes the directory (src/engine/data_probe.h),
 * says what it found, and writes a config of the preset's pipeline reading that data: no `generate`, so every
 * shape and the memory plan come from the files themselves. */
#include "init.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "config.h"
#include "data_probe.h"
#include "config_write.h"
#include "files.h"
#include "json_text.h"

/* The presets' pipelines (the files in configs/, without their dataset): what `init` starts from. */
static const struct preset {
  const char *name;
  const char *json;
} k_presets[] = {
    {"resnet",
     "{\"stages\":[{\"name\":\"read\",\"type\":\"read\",\"threads\":2,\"block_bytes\":1048576},"
     "{\"name\":\"decode\",\"type\":\"decode\",\"threads\":2},"
     "{\"name\":\"augment\",\"type\":\"map\",\"threads\":2,\"ops\":[{\"op\":\"random_resized_crop\",\"size\":224},"
     "{\"op\":\"flip\",\"p\":0.5},{\"op\":\"normalize\",\"dtype\":\"uint8\"}]},"
     "{\"name\":\"shuffle\",\"type\":\"shuffle\",\"buffer\":1024},"
     "{\"name\":\"batch\",\"type\":\"batch\",\"size\":256,\"drop_remainder\":true},"
     "{\"name\":\"prefetch\",\"type\":\"prefetch\",\"depth\":4},{\"name\":\"h2d\",\"type\":\"h2d\",\"pinned\":true}],"
     "\"device\":{\"kind\":\"auto\",\"count\":1,\"step_ms\":224},"
     "\"run\":{\"steps\":40,\"warmup_steps\":5,\"on_error\":\"skip\",\"au_target_pct\":90},\"limits\":{\"max_memory_"
     "mb\":8192}}"},
    {"unet3d",
     "{\"stages\":[{\"name\":\"read\",\"type\":\"read\",\"threads\":4,\"block_bytes\":4194304},"
     "{\"name\":\"batch\",\"type\":\"batch\",\"size\":7,\"drop_remainder\":true},"
     "{\"name\":\"prefetch\",\"type\":\"prefetch\",\"depth\":2},{\"name\":\"h2d\",\"type\":\"h2d\",\"pinned\":true}],"
     "\"device\":{\"kind\":\"auto\",\"count\":1,\"step_ms\":323},"
     "\"run\":{\"steps\":20,\"warmup_steps\":2,\"on_error\":\"skip\",\"au_target_pct\":90},\"limits\":{\"max_memory_"
     "mb\":8192}}"},
    {"cosmoflow",
     "{\"stages\":[{\"name\":\"read\",\"type\":\"read\",\"threads\":4,\"block_bytes\":1048576},"
     "{\"name\":\"batch\",\"type\":\"batch\",\"size\":1},{\"name\":\"prefetch\",\"type\":\"prefetch\",\"depth\":4},"
     "{\"name\":\"h2d\",\"type\":\"h2d\",\"pinned\":true}],\"device\":{\"kind\":\"auto\",\"count\":1,\"step_ms\":3.5},"
     "\"run\":{\"steps\":1000,\"warmup_steps\":20,\"on_error\":\"skip\",\"au_target_pct\":70},\"limits\":{\"max_memory_"
     "mb\":8192}}"},
    {"bert",
     "{\"stages\":[{\"name\":\"read\",\"type\":\"read\",\"threads\":1,\"block_bytes\":262144},"
     "{\"name\":\"shuffle\",\"type\":\"shuffle\",\"buffer\":4096},{\"name\":\"batch\",\"type\":\"batch\",\"size\":48},"
     "{\"name\":\"prefetch\",\"type\":\"prefetch\",\"depth\":2},{\"name\":\"h2d\",\"type\":\"h2d\",\"pinned\":true}],"
     "\"device\":{\"kind\":\"auto\",\"count\":1,\"step_ms\":968},"
     "\"run\":{\"steps\":20,\"warmup_steps\":2,\"on_error\":\"skip\"},\"limits\":{\"max_memory_mb\":8192}}"},
};

static const struct preset *preset_named(const char *name) {
  for (size_t i = 0; i < PB_ARRAY_LEN(k_presets); i++)
    if (strcmp(k_presets[i].name, name) == 0) return &k_presets[i];
  return NULL;
}

/* The preset for the data when none was asked for: images (JPEG files, or TFRecord with a JPEG feature) get
 * resnet's decode and augment; arrays get unet3d's read-bound pipeline; other TFRecord samples cosmoflow's
 * (large) or bert's (small, shuffled). */
static const struct preset *preset_for(const pb_data_probe *p) {
  if (p->format == PB_PROBE_JPEG || (p->format == PB_PROBE_TFRECORD && p->jpeg_feature >= 0))
    return preset_named("resnet");
  if (p->format == PB_PROBE_NPY || p->format == PB_PROBE_NPZ) return preset_named("unet3d");
  bool large = p->raw_feature >= 0 && p->features[p->raw_feature].value_bytes >= (64u << 10);
  return preset_named(large ? "cosmoflow" : "bert");
}

/* ---------- what was found ---------- */

static const char *mb(char *buf, size_t len, uint64_t bytes) {
  snprintf(buf, len,
           bytes >= 10000000 ? "%.0f MB"
           : bytes >= 10000  ? "%.1f MB"
                             : "%.0f bytes",
           bytes >= 10000 ? (double)bytes / 1e6 : (double)bytes);
  return buf;
}

/* pb_format for a probed format. */
static pb_format format_of(pb_probe_format f) {
  return f == PB_PROBE_TFRECORD ? PB_FMT_TFRECORD
         : f == PB_PROBE_NPY    ? PB_FMT_NPY
         : f == PB_PROBE_NPZ    ? PB_FMT_NPZ
                                : PB_FMT_JPEG;
}

/* Whether `ext` is one the format reads by default. */
static bool default_extension(pb_probe_format f, const char *ext) {
  int n = 0;
  const char *const *own = pb_format_extensions((int)format_of(f), &n);
  for (int i = 0; i < n; i++)
    if (strcasecmp(own[i], ext) == 0) return true;
  return false;
}

/* Whether some of the files of no known format have an extension the main format reads (none, for TFRecord). */
static bool others_read(const pb_data_probe *p) {
  for (int i = 0; i < p->nexts[PB_PROBE_NONE]; i++)
    if (default_extension(p->format, p->exts[PB_PROBE_NONE][i])) return true;
  return false;
}

static void print_files(const pb_data_probe *p, FILE *out) {
  char a[32], b[32], c[32], d[32];
  for (int f = PB_PROBE_JPEG; f < PB_PROBE__COUNT; f++) {
    const pb_probe_files *pf = &p->files[f];
    if (!pf->count) continue;
    fprintf(out, "  %-9s %zu file%s, %s (a file: smallest %s, median %s, largest %s)%s\n", pb_probe_format_name(f),
            pf->count, pf->count == 1 ? "" : "s", mb(a, sizeof a, pf->bytes), mb(b, sizeof b, pf->min_bytes),
            mb(c, sizeof c, pf->median_bytes), mb(d, sizeof d, pf->max_bytes),
            (pb_probe_format)f == p->format ? "" : "  (not the main format: read as it)");
  }
  size_t others = p->files[PB_PROBE_NONE].count;
  if (others) {
    fprintf(out, "  %-9s %zu file%s of no format pipebench reads, e.g.", "other", others, others == 1 ? "" : "s");
    for (int i = 0; i < PB_PROBE_EXAMPLES && p->skipped[i][0]; i++) fprintf(out, "%s %s", i ? "," : "", p->skipped[i]);
    fprintf(out,
            others_read(p) ? " (some have an extension %s reads: each one an error; move them out)\n"
                           : " (left out by their extension)\n",
            pb_probe_format_name(p->format));
  }
}

static void print_images(const pb_data_probe *p, FILE *out) {
  static const char *const subsamp[] = {"4:4:4", "4:2:2", "4:2:0", "gray", "4:4:0", "4:1:1"};
  if (!p->width_max) return;
  fprintf(out, "  images    %dx%d median (smallest %dx%d, largest %dx%d) in %d sampled; subsampling", p->width_median,
          p->height_median, p->width_min, p->height_min, p->width_max, p->height_max, p->sampled);
  for (int i = 0; i < 6; i++)
    if (p->subsamp[i]) fprintf(out, " %s %d", subsamp[i], p->subsamp[i]);
  if (p->other) fprintf(out, " other %d", p->other);
  if (p->cmyk) fprintf(out, "; CMYK %d (converted to RGB)", p->cmyk);
  fputc('\n', out);
}

static void print_records(const pb_data_probe *p, FILE *out) {
  if (p->format == PB_PROBE_TFRECORD) {
    fprintf(out, "  records   %" PRIu64 " in the first file; features of its first record:", p->records_first_file);
    for (int i = 0; i < p->nfeatures; i++)
      fprintf(out, "%s %s (%s%s)", i ? "," : "", p->features[i].name, p->features[i].int64 ? "int64" : "bytes",
              p->features[i].jpeg ? ", JPEG" : "");
    fputc('\n', out);
  }
  if (p->dtype[0]) {
    fprintf(out, "  arrays    dtype %s, shape [", p->dtype);
    for (int d = 0; d < p->ndims; d++) fprintf(out, "%s%" PRId64, d ? "," : "", p->shape[d]);
    fprintf(out, "]%s", p->shapes_vary ? " (shapes vary between files)" : "");
    for (int i = 0; i < p->nmembers; i++) fprintf(out, "%s%s", i ? ", " : "; npz members: ", p->members[i]);
    fputc('\n', out);
  }
}

static void print_bad(const pb_data_probe *p, FILE *out) {
  if (!p->bad) return;
  fprintf(out, "  refused   %d of %d sampled files would be errors:", p->bad, p->sampled);
  for (int i = 0; i < p->bad && i < PB_PROBE_EXAMPLES; i++)
    fprintf(out, "%s %s: %s", i ? ";" : "", p->bad_files[i], p->bad_why[i]);
  fputc('\n', out);
}

static void print_found(const char *dir, const pb_data_probe *p, FILE *out) {
  size_t files = 0;
  uint64_t bytes = 0;
  for (int f = 0; f < PB_PROBE__COUNT; f++) files += p->files[f].count, bytes += p->files[f].bytes;
  char a[32];
  fprintf(out, "pipebench init: %s: %zu files, %s\n", dir, files, mb(a, sizeof a, bytes));
  print_files(p, out);
  print_images(p, out);
  print_records(p, out);
  print_bad(p, out);
}

/* ---------- the config ---------- */

/* The config's name: the directory's own name, as a stage name may be spelled (A-Z a-z 0-9 _ -). */
static void name_from(const char *dir, char *name, size_t len) {
  char copy[PB_PATH_LEN];
  snprintf(copy, sizeof copy, "%s", dir);
  size_t n = strlen(copy);
  while (n > 1 && copy[n - 1] == '/') copy[--n] = '\0';
  const char *base = basename(copy);
  size_t k = 0;
  for (; *base && k + 1 < len && k < 60; base++)
    k += (size_t)snprintf(name + k, len - k, "%c", isalnum((unsigned char)*base) || *base == '-' ? *base : '_');
  if (!k) snprintf(name, len, "mydata");
}

/* dataset.extensions when the main format's files have extensions it does not read by default (JPEGs named
 * .img, say): then exactly the extensions found. */
static void add_extensions(cJSON *d, const pb_data_probe *p) {
  bool other = false;
  for (int i = 0; i < p->nexts[p->format]; i++) other = other || !default_extension(p->format, p->exts[p->format][i]);
  if (!other) return;
  cJSON *arr = cJSON_AddArrayToObject(d, "extensions");
  for (int i = 0; arr && i < p->nexts[p->format]; i++)
    cJSON_AddItemToArray(arr, cJSON_CreateString(p->exts[p->format][i]));
}

/* dataset.path as an absolute path (a relative one would be relative to wherever the run starts), unless it
 * is a glob or an @list, which are kept as given. */
static cJSON *dataset_json(const char *dir, const pb_data_probe *p) {
  cJSON *d = cJSON_CreateObject();
  char *abs = dir[0] != '@' ? realpath(dir, NULL) : NULL;
  cJSON_AddStringToObject(d, "path", abs ? abs : dir);
  free(abs);
  cJSON_AddStringToObject(d, "format", pb_probe_format_name(p->format));
  add_extensions(d, p);
  if (p->format == PB_PROBE_TFRECORD) {
    bool jpeg = p->jpeg_feature >= 0;
    cJSON_AddStringToObject(d, "payload", jpeg ? "jpeg" : "raw");
    int f = jpeg ? p->jpeg_feature : p->raw_feature;
    if (f >= 0) cJSON_AddStringToObject(d, "feature", p->features[f].name);
  }
  return d;
}

static cJSON *build_config(const char *dir, const pb_data_probe *p, const struct preset *pre) {
  cJSON *tpl = cJSON_Parse(pre->json), *cfg = cJSON_CreateObject();
  char name[64];
  name_from(dir, name, sizeof name);
  cJSON_AddStringToObject(cfg, "name", name);
  cJSON_AddNumberToObject(cfg, "seed", 42);
  cJSON_AddItemToObject(cfg, "dataset", dataset_json(dir, p));
  for (cJSON *k = tpl ? tpl->child : NULL; k; k = k->next) cJSON_AddItemToObject(cfg, k->string, cJSON_Duplicate(k, 1));
  cJSON_Delete(tpl);
  return cfg;
}

static void default_file(const char *dir, char *file, size_t len) {
  char name[64];
  name_from(dir, name, sizeof name);
  snprintf(file, len, "%s.json", name);
}

static int check_found(const char *dir, const pb_data_probe *p) {
  if (p->format != PB_PROBE_NONE) return 0;
  fprintf(stderr,
          "pipebench: init: %s: no JPEG, TFRecord, npy or npz files among its %zu files (expected a dataset "
          "pipebench reads: docs/CONFIG.md dataset.format)\n",
          dir, p->files[PB_PROBE_NONE].count);
  return PB_EXIT_USAGE;
}

int pb_init(const pb_init_opts *o) {
  const struct preset *pre = o->preset ? preset_named(o->preset) : NULL;
  if (o->preset && !pre) {
    fprintf(stderr, "pipebench: init: --preset: unknown preset \"%s\" (expected resnet, unet3d, cosmoflow or bert)\n",
            o->preset);
    return PB_EXIT_USAGE;
  }
  pb_data_probe *p = calloc(1, sizeof *p);
  pb_err err;
  if (!p) return PB_EXIT_RUNTIME;
  int rc = pb_data_probe_run(o->data_dir, p, &err);
  if (rc) fprintf(stderr, "pipebench: init: %s\n", err.msg);
  rc = rc ? (rc == -ENOMEM ? PB_EXIT_RUNTIME : PB_EXIT_USAGE) : check_found(o->data_dir, p);
  if (!rc) {
    if (!o->quiet) print_found(o->data_dir, p, stdout);
    if (!pre) pre = preset_for(p);
    char file[PB_PATH_LEN];
    if (o->out_file)
      snprintf(file, sizeof file, "%s", o->out_file);
    else
      default_file(o->data_dir, file, sizeof file);
    cJSON *cfg = build_config(o->data_dir, p, pre);
    rc = cfg ? pb_config_write("init", file, cfg, o->force) : PB_EXIT_RUNTIME;
    cJSON_Delete(cfg);
    if (!rc) rc = pb_config_check_written("init", file);
    if (!rc && !o->quiet)
      printf("wrote %s: the %s preset's pipeline over this data\nnext:  pipebench run %s\n", file, pre->name, file);
  }
  free(p);
  return rc;
}

#include "gen.h"
#include "json_text.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "gen_out.h"
#include "gen_plan.h"
#include "npy.h"
#include "progress.h"
#include "synth_image.h"
#include "tfrecord.h"

#define MANIFEST PB_GEN_MANIFEST

/* ---------- the spec and its manifest ---------- */

/* What the files depend on; the manifest stores it so a second gen with the same spec does nothing. */
static cJSON *spec_json(const pb_config *cfg) {
  const pb_dataset_cfg *d = &cfg->dataset;
  const pb_generate_cfg *g = &d->generate;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "format", pb_format_name(d->format));
  cJSON_AddStringToObject(j, "payload", d->payload == PB_PAYLOAD_JPEG ? "jpeg" : "raw");
  cJSON_AddStringToObject(j, "feature", d->feature);
  cJSON_AddNumberToObject(j, "seed", (double)cfg->seed);
  cJSON_AddNumberToObject(j, "num_files", (double)g->num_files);
  cJSON_AddNumberToObject(j, "samples_per_file", (double)g->samples_per_file);
  cJSON_AddNumberToObject(j, "width", (double)g->width);
  cJSON_AddNumberToObject(j, "height", (double)g->height);
  cJSON_AddNumberToObject(j, "quality", (double)g->quality);
  cJSON_AddNumberToObject(j, "record_bytes", (double)g->record_bytes);
  cJSON_AddNumberToObject(j, "record_bytes_stdev", (double)g->record_bytes_stdev);
  return j;
}

/* The spec an earlier gen recorded (NULL: no manifest), and whether that gen finished. */
/* The whole manifest, parsed, or NULL when there is none. */
static cJSON *load_manifest(const char *dir) {
  char path[PB_PATH_LEN + 64];
  snprintf(path, sizeof path, "%s/%s", dir, MANIFEST);
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  return cJSON_Parse(text);
}

static cJSON *read_manifest(const char *dir, bool *complete) {
  cJSON *m = load_manifest(dir);
  *complete = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "complete"));
  cJSON *spec = cJSON_DetachItemFromObject(m, "spec");
  cJSON_Delete(m);
  return spec;
}

/* Written twice: before the first file ("complete": false) and after the last, so a gen that was
 * interrupted is recognised as unfinished and done again, never used as a dataset. */
static int write_manifest(const char *dir, cJSON *spec, bool complete, uint64_t files, uint64_t samples,
                          uint64_t bytes) {
  char path[PB_PATH_LEN + 64], tmp[PB_PATH_LEN + 80];
  snprintf(path, sizeof path, "%s/%s", dir, MANIFEST);
  snprintf(tmp, sizeof tmp, "%s/.tmp-%s", dir, MANIFEST);
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "written_by", "pipebench " PB_VERSION);
  cJSON_AddBoolToObject(m, "complete", complete);
  cJSON_AddItemReferenceToObject(m, "spec", spec);
  cJSON_AddNumberToObject(m, "files", (double)files);
  cJSON_AddNumberToObject(m, "samples", (double)samples);
  cJSON_AddNumberToObject(m, "bytes", (double)bytes);
  char *text = pb_json_print(m, true);
  cJSON_Delete(m);
  int slot = pb_cleanup_on_exit(tmp);
  FILE *f = fopen(tmp, "w");
  int rc = !f ? -errno : text && fputs(text, f) >= 0 ? 0 : -EIO; /* fopen's own reason: ENOTDIR, EACCES */
  if (f && fclose(f)) rc = -errno;
  if (!rc && rename(tmp, path)) rc = -errno;
  if (rc) unlink(tmp);
  pb_cleanup_forget(slot);
  free(text);
  return rc;
}

/* Entries in dir other than the manifest (0 when it does not exist). */
static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, MANIFEST)) n++;
  closedir(d);
  return n;
}

/* The first key whose value differs between two specs, as "KEY OLD, not NEW" in buf; false when equal. */
static bool spec_difference(const cJSON *old, const cJSON *spec, char *buf, size_t len) {
  const cJSON *v;
  cJSON_ArrayForEach(v, spec) {
    /* the seed also drives shuffling and augmentation: runs with another --seed (repeats, to see the
     * spread) read the same files, statistically the same data, instead of writing them again each time */
    if (strcmp(v->string, "seed") == 0) continue;
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(old, v->string);
    if (o && cJSON_Compare(o, v, true)) continue;
    char *a = o ? cJSON_PrintUnformatted(o) : NULL, *b = cJSON_PrintUnformatted(v);
    snprintf(buf, len, "%s %s, not %s", v->string, a ? a : "unset", b ? b : "?");
    free(a);
    free(b);
    return true;
  }
  if (cJSON_GetArraySize(old) == cJSON_GetArraySize(spec)) return false;
  snprintf(buf, len, "settings of another pipebench version");
  return true;
}

/* Whether run must generate the dataset first, and why (into why): the directory holds no files, a gen
 * was cut short, or the complete dataset there was generated with other settings (the config changed
 * since: reading it would measure other data than the report's config names).  *ours: dataset.path has
 * pipebench's manifest, so what is there may be replaced as `gen --force` would. */
static bool gen_needed(const pb_config *cfg, char *why, size_t len, bool *ours) {
  const pb_dataset_cfg *d = &cfg->dataset;
  *ours = false;
  if (!d->generate.present || d->format == PB_FMT_SYNTHETIC || !d->path[0]) return false;
  if (d->path[0] == '@' || strpbrk(d->path, "*?[{")) return false;
  bool complete;
  cJSON *old = read_manifest(d->path, &complete);
  *ours = old != NULL;
  bool needed = true;
  char diff[200];
  if (old && !complete) snprintf(why, len, "holds an unfinished dataset (a gen was cut short)");
  else if (count_entries(d->path) == 0) snprintf(why, len, "holds no dataset yet");
  else if (!old) needed = false; /* files pipebench did not write: the user's dataset, read as it is */
  else {
    cJSON *spec = spec_json(cfg);
    needed = spec_difference(old, spec, diff, sizeof diff);
    if (needed) snprintf(why, len, "holds a dataset generated with other settings (%s)", diff);
    cJSON_Delete(spec);
  }
  cJSON_Delete(old);
  return needed;
}

/* ---------- one file's payloads ---------- */

typedef struct gen_job {
  const pb_config *cfg;
  _Atomic uint64_t next_file, files_done, bytes_done, samples_done;
  _Atomic uint64_t min_sample, max_sample, payload_bytes;
  uv_mutex_t err_lock;
  _Atomic int failed;
  char error[PB_PATH_LEN + 256];
} gen_job;

typedef struct gen_worker {
  gen_job *job;
  uv_thread_t thread;
  pb_jpeg_encoder *enc;
} gen_worker;

static uint8_t *random_bytes(const pb_config *cfg, uint64_t key, size_t bytes) {
  uint8_t *b = malloc(bytes ? bytes : 1);
  if (!b) return NULL;
  pb_rng rng;
  pb_rng_seed(&rng, pb_gen_bytes_seed(cfg->seed, key));
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t r = pb_rng_next(&rng);
    memcpy(b + i, &r, 8);
  }
  for (; i < bytes; i++) b[i] = (uint8_t)pb_rng_next(&rng);
  return b;
}

/* The payload of sample `index`: a photo-like JPEG, or random bytes.  malloc'd. */
static int make_payload(gen_worker *gw, uint64_t index, uint64_t size_key, uint8_t **out, size_t *bytes,
                        pb_err *err) {
  const pb_config *cfg = gw->job->cfg;
  const pb_dataset_cfg *d = &cfg->dataset;
  if (pb_gen_jpeg_payload(d)) {
    const pb_generate_cfg *g = &d->generate;
    return pb_synth_jpeg_with(gw->enc, (int)g->width, (int)g->height, (int)g->quality, cfg->seed, index, out,
                              bytes, err);
  }
  *bytes = pb_gen_record_bytes(cfg, size_key);
  *out = random_bytes(cfg, index, *bytes);
  return *out ? 0 : pb_err_set(err, "out of memory for a %zu-byte record", *bytes);
}

static void note_sample(gen_job *job, size_t bytes) {
  uint64_t lo = atomic_load(&job->min_sample), hi = atomic_load(&job->max_sample);
  while (bytes < lo && !atomic_compare_exchange_weak(&job->min_sample, &lo, bytes)) {
  }
  while (bytes > hi && !atomic_compare_exchange_weak(&job->max_sample, &hi, bytes)) {
  }
  atomic_fetch_add(&job->samples_done, 1);
  atomic_fetch_add(&job->payload_bytes, bytes);
}

/* ---------- writers, one file each ---------- */

/* stdio's own reason (EFBIG under ulimit -f, ENOSPC on a full disk), not a bare EIO. */
static int write_all(FILE *f, const void *data, size_t bytes) {
  errno = 0;
  return fwrite(data, 1, bytes, f) == bytes ? 0 : errno ? -errno : -EIO;
}

/* What would let a failed write through, for its message. */
static const char *write_expected(int rc) {
  return rc == -EFBIG    ? "a file size limit (ulimit -f) that fits the dataset"
         : rc == -ENOSPC ? "free space for the dataset on its file system"
                         : "a writable dataset directory";
}

static int write_jpeg_file(gen_worker *gw, uint64_t file, FILE *f, pb_err *err) {
  uint8_t *p;
  size_t n;
  if (make_payload(gw, file, file, &p, &n, err)) return -EINVAL;
  int rc = write_all(f, p, n);
  if (!rc) note_sample(gw->job, n);
  free(p);
  return rc;
}

/* TFRecord shard: samples_per_file tf.train.Example records, the payload under dataset.feature and a
 * label, as an ImageNet TFRecord would have. */
static int write_tfrecord_file(gen_worker *gw, uint64_t file, FILE *f, pb_err *err) {
  const pb_config *cfg = gw->job->cfg;
  uint64_t spf = (uint64_t)cfg->dataset.generate.samples_per_file;
  int rc = 0;
  for (uint64_t k = 0; k < spf && !rc; k++) {
    if (pb_signalled()) return -ECANCELED; /* a big shard must not hold up an interrupt */
    uint64_t index = pb_gen_sample_index(file, spf, k);
    uint8_t *p, *rec = NULL;
    size_t n;
    if (make_payload(gw, index, index, &p, &n, err)) return -EINVAL;
    pb_example_feature feats[2] = {
        {.name = cfg->dataset.feature, .kind = PB_FEATURE_BYTES, .data = p, .bytes = n},
        {.name = "image/class/label", .kind = PB_FEATURE_INT64, .int64 = pb_gen_label(index)}};
    size_t rec_bytes = pb_example_encode(feats, 2, &rec);
    rc = rec_bytes ? pb_tfrecord_write_record(f, rec, rec_bytes) : -ENOMEM;
    if (!rc) note_sample(gw->job, n);
    free(rec);
    free(p);
  }
  return rc;
}

/* raw: samples_per_file fixed-size records back to back. */
static int write_raw_file(gen_worker *gw, uint64_t file, FILE *f, pb_err *err) {
  const pb_config *cfg = gw->job->cfg;
  uint64_t spf = (uint64_t)cfg->dataset.generate.samples_per_file;
  int rc = 0;
  for (uint64_t k = 0; k < spf && !rc; k++) {
    if (pb_signalled()) return -ECANCELED;
    size_t n = (size_t)cfg->dataset.generate.record_bytes;
    uint8_t *p = random_bytes(cfg, pb_gen_sample_index(file, spf, k), n);
    rc = p ? write_all(f, p, n) : -ENOMEM;
    if (!rc) note_sample(gw->job, n);
    free(p);
  }
  return rc;
}

/* npy/npz: one uint8 array per file, [samples_per_file, record] (or [record] for one sample). */
static int array_of_file(gen_worker *gw, uint64_t file, uint8_t **data, int64_t shape[2], int *ndims) {
  const pb_config *cfg = gw->job->cfg;
  uint64_t spf = (uint64_t)cfg->dataset.generate.samples_per_file;
  size_t rec = pb_gen_record_bytes(cfg, file);
  *ndims = pb_gen_array_shape(spf, rec, shape);
  *data = random_bytes(cfg, file, rec * spf);
  for (uint64_t k = 0; *data && k < spf; k++) note_sample(gw->job, rec);
  return *data ? 0 : -ENOMEM;
}

static int write_npy_file(gen_worker *gw, uint64_t file, FILE *f, pb_err *err) {
  uint8_t *data;
  int64_t shape[2];
  int ndims;
  if (array_of_file(gw, file, &data, shape, &ndims)) return -ENOMEM;
  size_t bytes = (size_t)shape[0] * (ndims == 2 ? (size_t)shape[1] : 1);
  int rc = pb_npy_write(f, "|u1", shape, ndims, data, bytes);
  free(data);
  return rc;
}

/* libzip, called from several threads at once, now and then refuses to create an archive ("Read-only
 * archive", seen about once in 150 files); archives are written one at a time instead. */
static uv_mutex_t g_zip_lock;
static uv_once_t g_zip_once = UV_ONCE_INIT;
static void init_zip_lock(void) { uv_mutex_init(&g_zip_lock); }

static int write_npz_path(gen_worker *gw, uint64_t file, const char *path, pb_err *err) {
  uint8_t *data;
  int64_t shape[2];
  int ndims;
  if (array_of_file(gw, file, &data, shape, &ndims)) return -ENOMEM;
  size_t bytes = (size_t)shape[0] * (ndims == 2 ? (size_t)shape[1] : 1);
  const char *names[1] = {"x"};
  const void *datas[1] = {data};
  const int64_t *shapes[1] = {shape};
  uv_once(&g_zip_once, init_zip_lock);
  uv_mutex_lock(&g_zip_lock);
  int rc = pb_npz_write(path, names, datas, &bytes, shapes, &ndims, 1, "|u1", err);
  uv_mutex_unlock(&g_zip_lock);
  free(data);
  return rc;
}

static int write_file(gen_worker *gw, uint64_t file, const char *tmp, pb_err *err) {
  pb_format fmt = gw->job->cfg->dataset.format;
  if (fmt == PB_FMT_NPZ) return write_npz_path(gw, file, tmp, err);
  FILE *f = fopen(tmp, "wb");
  if (!f) return -errno;
  int rc = fmt == PB_FMT_JPEG       ? write_jpeg_file(gw, file, f, err)
           : fmt == PB_FMT_TFRECORD ? write_tfrecord_file(gw, file, f, err)
           : fmt == PB_FMT_NPY      ? write_npy_file(gw, file, f, err)
                                    : write_raw_file(gw, file, f, err);
  if (fclose(f) && !rc) rc = -errno;
  return rc;
}

/* ---------- the workers ---------- */

static void fail_job(gen_job *job, const char *path, int rc, const pb_err *err) {
  uv_mutex_lock(&job->err_lock);
  if (!job->failed) {
    job->failed = 1;
    if (err->msg[0]) /* the writer said what went wrong */
      snprintf(job->error, sizeof job->error, "%s", err->msg);
    else
      snprintf(job->error, sizeof job->error, "%s: cannot write: %s (expected %s)", path, strerror(rc < 0 ? -rc : EIO),
               write_expected(rc < 0 ? rc : -EIO));
  }
  uv_mutex_unlock(&job->err_lock);
}

static void gen_worker_main(void *arg) {
  gen_worker *gw = arg;
  gen_job *job = gw->job;
  const pb_dataset_cfg *d = &job->cfg->dataset;
  for (;;) {
    uint64_t file = atomic_fetch_add(&job->next_file, 1);
    if (file >= (uint64_t)d->generate.num_files || job->failed || pb_signalled()) break;
    char name[64], final[PB_PATH_LEN + 80], tmp[PB_PATH_LEN + 96];
    pb_gen_file_name(d->format, file, name, sizeof name);
    snprintf(final, sizeof final, "%s/%s", d->path, name);
    snprintf(tmp, sizeof tmp, "%s/.tmp-%s", d->path, name); /* a reader never sees half a file */
    pb_err err = {{0}};
    int slot = pb_cleanup_on_exit(tmp); /* a second signal's exit removes it too */
    int rc = write_file(gw, file, tmp, &err);
    if (!rc && rename(tmp, final)) rc = -errno;
    struct stat st;
    bool failed = rc || stat(final, &st);
    if (failed) unlink(tmp);
    pb_cleanup_forget(slot);
    if (failed) {
      if (rc == -ECANCELED) break; /* interrupted: pb_gen says so */
      fail_job(job, final, rc, &err);
      break;
    }
    atomic_fetch_add(&job->bytes_done, (uint64_t)st.st_size);
    atomic_fetch_add(&job->files_done, 1);
  }
}

/* ---------- pb_gen ---------- */

/* --force: removes what an earlier gen wrote (only its own file names), so fewer files leave no
 * stale ones behind.  Other files in the directory are left alone. */
static int remove_generated(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? 0 : -errno;
  int rc = 0;
  char path[PB_PATH_LEN + 300];
  for (struct dirent *e; (e = readdir(d));) {
    if (!pb_gen_is_generated(e->d_name)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (unlink(path) && !rc) rc = -errno;
  }
  closedir(d);
  return rc;
}

/* What gen needs from the config beyond validation (pb_gen_refusal); exit 2 with one line when it is
 * missing. */
static int check_generable(const pb_config *cfg) {
  const char *path;
  char buf[200];
  const char *why = pb_gen_refusal(cfg, &path, buf, sizeof buf);
  if (!why) return 0;
  fprintf(stderr, "pipebench: %s: %s: %s\n", cfg->file, path, why);
  return PB_EXIT_USAGE;
}

/* An existing dataset: 1 up to date, 0 go ahead (empty, or --force), or an exit status. */
static int check_existing(const pb_config *cfg, const pb_gen_opts *opts, cJSON *spec, bool *ours) {
  bool complete;
  cJSON *old = read_manifest(cfg->dataset.path, &complete);
  bool same = old && complete && cJSON_Compare(old, spec, true);
  *ours = old != NULL;
  cJSON_Delete(old);
  if (same && !opts->force) return 1;
  if (count_entries(cfg->dataset.path) == 0 || opts->force || (*ours && !complete)) return 0;
  fprintf(stderr, "pipebench: %s: dataset.path: %s already holds %s (expected an empty directory, or --force to "
                  "write over it)\n", cfg->file, cfg->dataset.path,
          *ours ? "a dataset generated with other settings" : "files pipebench did not write");
  return PB_EXIT_USAGE;
}

static void show_progress(const gen_job *job, pb_progress *p, double elapsed_s) {
  uint64_t done = atomic_load(&job->files_done), total = (uint64_t)job->cfg->dataset.generate.num_files;
  double mb = (double)atomic_load(&job->bytes_done) / 1e6;
  char eta[24], text[160];
  pb_progress_eta(eta, sizeof eta, done ? elapsed_s * (double)(total - done) / (double)done : NAN);
  snprintf(text, sizeof text, "files %" PRIu64 "/%" PRIu64 "  %.1f MB  %.1f MB/s  ETA %s", done, total, mb,
           elapsed_s > 0 ? mb / elapsed_s : 0.0, eta);
  pb_progress_draw(p, text);
}

static void run_workers(gen_job *job, const pb_gen_opts *opts) {
  int n = pb_gen_workers(uv_available_parallelism(), job->cfg->dataset.generate.num_files);
  gen_worker *gw = calloc((size_t)n, sizeof *gw);
  pb_progress progress;
  pb_progress_init(&progress, pb_progress_wanted(opts->quiet, opts->no_progress), "gen");
  uint64_t t0 = pb_now_ns();
  for (int i = 0; gw && i < n; i++) {
    gw[i].job = job;
    pb_err err;
    pb_jpeg_encoder_init(&gw[i].enc, &err);
    uv_thread_create(&gw[i].thread, gen_worker_main, &gw[i]);
  }
  while (gw && atomic_load(&job->files_done) < (uint64_t)job->cfg->dataset.generate.num_files && !job->failed &&
         !pb_signalled()) {
    /* the workers stop on their own when done or failed */
    uv_sleep(50);
    uint64_t now = pb_now_ns();
    if (pb_progress_due(&progress, now)) show_progress(job, &progress, (double)(now - t0) / 1e9);
  }
  for (int i = 0; gw && i < n; i++) {
    uv_thread_join(&gw[i].thread);
    pb_jpeg_encoder_free(gw[i].enc);
  }
  pb_progress_end(&progress);
  free(gw);
}

/* The counts the manifest of a complete dataset holds (what an up-to-date gen reports). */
static void manifest_counts(const char *dir, uint64_t *files, uint64_t *samples, uint64_t *bytes) {
  *files = *samples = *bytes = 0;
  cJSON *m = load_manifest(dir);
  const char *keys[] = {"files", "samples", "bytes"};
  uint64_t *out[] = {files, samples, bytes};
  for (int k = 0; k < 3; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, keys[k]);
    if (cJSON_IsNumber(v) && v->valuedouble >= 0) *out[k] = (uint64_t)v->valuedouble;
  }
  cJSON_Delete(m);
}

/* --json and --out: what gen did, as JSON (stdout, and <out_dir>/gen.json).  0 or the exit status. */
static int write_summary(const pb_gen_opts *opts, const pb_gen_result *r) {
  if (!opts->json_stdout && !opts->out_dir) return 0;
  cJSON *o = pb_gen_out_json(r);
  char *text = o ? pb_json_print(o, true) : NULL;
  cJSON_Delete(o);
  if (!text) return PB_EXIT_RUNTIME;
  if (opts->json_stdout) printf("%s\n", text);
  int rc = 0;
  if (opts->out_dir) {
    char path[PB_PATH_LEN + 16];
    snprintf(path, sizeof path, "%s/gen.json", opts->out_dir);
    int mk = pb_mkdir_p(opts->out_dir);
    FILE *f = mk ? NULL : fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fputc('\n', f) == EOF) rc = PB_EXIT_RUNTIME;
    if (f && fclose(f)) rc = PB_EXIT_RUNTIME;
    if (rc) fprintf(stderr, "pipebench: %s: cannot write: %s (expected a writable --out)\n", mk ? opts->out_dir : path,
                    strerror(mk ? -mk : errno ? errno : EIO));
  }
  free(text);
  return rc;
}

int pb_gen_if_missing(const pb_config *cfg, bool quiet, bool no_progress) {
  char why[300];
  bool ours;
  if (!gen_needed(cfg, why, sizeof why, &ours)) return 0;
  fprintf(stderr, "pipebench: %s %s; generating it first (%lld files, `pipebench gen`)\n", cfg->dataset.path,
          why, (long long)cfg->dataset.generate.num_files);
  /* a dataset with pipebench's manifest is its own: replaced as `gen --force` would */
  pb_gen_opts g = {.quiet = quiet, .no_progress = no_progress, .force = ours};
  return pb_gen(cfg, &g);
}

/* Do a and b name one directory (both existing: the same device and inode)?  Spelling differs easily
 * (data/x, ./data/x/, a symlink). */
static bool same_directory(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && S_ISDIR(sa.st_mode) && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

/* --out first: one that cannot be made fails now, not after the whole dataset was written; nor may it be
 * the dataset's own directory.  0 or the exit status. */
static int check_out_dir(const pb_config *cfg, const pb_gen_opts *opts) {
  int rc;
  if (opts->out_dir && (rc = pb_mkdir_p(opts->out_dir))) {
    fprintf(stderr, "pipebench: %s: cannot create the output directory: %s (expected a writable directory)\n",
            opts->out_dir, strerror(-rc));
    return PB_EXIT_RUNTIME;
  }
  if (opts->out_dir && same_directory(opts->out_dir, cfg->dataset.path)) { /* both exist now, if they are one */
    fprintf(stderr, "pipebench: %s: --out is the dataset's own directory (expected another directory: gen.json "
                    "there would be read as a sample)\n", opts->out_dir);
    return PB_EXIT_USAGE;
  }
  return 0;
}

/* The dataset up to date: the summary with the manifest's counts. */
static int report_up_to_date(const pb_config *cfg, const pb_gen_opts *opts) {
  if (!opts->quiet)
    fprintf(stderr, "pipebench: gen: %s is up to date (same settings); nothing to do\n", cfg->dataset.path);
  pb_gen_result r = {.path = cfg->dataset.path, .format = cfg->dataset.format, .generated = false};
  manifest_counts(cfg->dataset.path, &r.files, &r.samples, &r.bytes);
  return write_summary(opts, &r);
}

/* The directory made ready: an earlier gen's files removed (--force, or its own), the directory made and the
 * manifest written as unfinished.  0 or the exit status. */
static int prepare_dir(const pb_config *cfg, const pb_gen_opts *opts, cJSON *spec, bool ours) {
  int rc;
  if ((opts->force || ours) && (rc = remove_generated(cfg->dataset.path))) {
    fprintf(stderr, "pipebench: %s: cannot remove the old dataset: %s (expected a directory pipebench can write "
                    "in)\n", cfg->dataset.path, strerror(-rc));
    return PB_EXIT_RUNTIME;
  }
  if ((rc = pb_mkdir_p(cfg->dataset.path))) {
    fprintf(stderr, "pipebench: %s: cannot create the directory: %s (expected a writable place for the dataset)\n",
            cfg->dataset.path, strerror(-rc));
    return PB_EXIT_RUNTIME;
  }
  if ((rc = write_manifest(cfg->dataset.path, spec, false, 0, 0, 0))) {
    fprintf(stderr, "pipebench: %s: cannot write %s: %s (expected a writable directory for the dataset)\n",
            cfg->dataset.path, MANIFEST, strerror(-rc));
    return PB_EXIT_RUNTIME;
  }
  return 0;
}

/* After the workers: what they wrote, the manifest marked complete, and the summary.  The exit status. */
static int finish_job(const pb_config *cfg, const pb_gen_opts *opts, gen_job *job, cJSON *spec, double secs) {
  pb_gen_result r = {.path = cfg->dataset.path, .format = cfg->dataset.format, .generated = true, .seconds = secs};
  r.files = atomic_load(&job->files_done), r.samples = atomic_load(&job->samples_done);
  r.bytes = atomic_load(&job->bytes_done);
  bool interrupted = pb_signalled() && r.files < (uint64_t)cfg->dataset.generate.num_files;
  if (interrupted && !job->failed) { /* the manifest still says incomplete: the next gen or run starts over */
    fprintf(stderr, "pipebench: gen: interrupted after %" PRIu64 " of %lld files; %s is incomplete (run gen again)\n",
            r.files, (long long)cfg->dataset.generate.num_files, cfg->dataset.path);
    return PB_EXIT_INTERRUPTED;
  }
  int mrc = job->failed ? 0 : write_manifest(cfg->dataset.path, spec, true, r.files, r.samples, r.bytes);
  if (mrc)
    snprintf(job->error, sizeof job->error, "%.*s/%s: cannot write: %s (expected %s)", PB_PATH_LEN, cfg->dataset.path,
             MANIFEST, strerror(-mrc), write_expected(mrc)),
        job->failed = 1;
  r.min_sample_bytes = atomic_load(&job->min_sample), r.max_sample_bytes = atomic_load(&job->max_sample);
  r.payload_bytes = atomic_load(&job->payload_bytes);
  if (job->failed)
    fprintf(stderr, "pipebench: %s\n", job->error);
  else if (!opts->quiet)
    pb_gen_out_text(stderr, &r);
  return job->failed ? PB_EXIT_RUNTIME : write_summary(opts, &r);
}

/* The dataset written: the directory made ready, the workers run, the outcome reported. */
static int generate(const pb_config *cfg, const pb_gen_opts *opts, cJSON *spec, bool ours) {
  int rc = prepare_dir(cfg, opts, spec, ours);
  if (rc) return rc;
  gen_job job = {.cfg = cfg, .min_sample = UINT64_MAX};
  uv_mutex_init(&job.err_lock);
  uint64_t t0 = pb_now_ns();
  run_workers(&job, opts);
  rc = finish_job(cfg, opts, &job, spec, (double)(pb_now_ns() - t0) / 1e9);
  uv_mutex_destroy(&job.err_lock);
  return rc;
}

int pb_gen(const pb_config *cfg, const pb_gen_opts *opts) {
  int rc = check_generable(cfg);
  if (!rc) rc = check_out_dir(cfg, opts);
  if (rc) return rc;
  cJSON *spec = spec_json(cfg);
  bool ours = false;
  int existing = check_existing(cfg, opts, spec, &ours);
  rc = existing == 1 ? report_up_to_date(cfg, opts) : existing ? existing : generate(cfg, opts, spec, ours);
  cJSON_Delete(spec);
  return rc;
}

/* `pipebench calibrate`: each ceiling is a plain loop doing only the one thing, so that a stage's
 * throughput can be put against it (docs/METRICS.md "efficiency", docs/PERFORMANCE.md for the method).
 * Every measurement runs for a fixed time (PB_CALIB_SECONDS, or PIPEBENCH_CALIBRATE_SECONDS) and takes
 * the median of its repetitions where it repeats. */
#define _GNU_SOURCE /* O_DIRECT */
#include "calibrate.h"
#include "json_text.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "calibrate_fit.h"
#include "calibrate_out.h"
#include "calibration.h"
#include "device.h"
#include "files.h"
#include "gen.h"
#include "jpeg.h"
#include "ops.h"
#include "pagecache.h"
#include "decode_scale.h"
#include "stats.h"

#define MEMCPY_BYTES (64u << 20)
#define DECODE_MAX_FILES 64
#define DECODE_MAX_BYTES (64u << 20)
#define DIRECT_ALIGN PB_CALIB_DIRECT_ALIGN

static double budget_s(void) { return pb_calib_budget_s(getenv("PIPEBENCH_CALIBRATE_SECONDS")); }

static double seconds_since(uint64_t t0) { return (double)(pb_now_ns() - t0) / 1e9; }

/* ---------- memcpy ---------- */

/* One core: 64 MiB copies (past every cache) for the budget; the median copy's rate in GB/s. */
static double memcpy_one_core(double seconds) {
  char *src = malloc(MEMCPY_BYTES), *dst = malloc(MEMCPY_BYTES);
  double rate[256], gb = NAN;
  int n = 0;
  if (src && dst) {
    memset(src, 1, MEMCPY_BYTES);
    memset(dst, 0, MEMCPY_BYTES); /* faulted in before timing */
    uint64_t t0 = pb_now_ns();
    while (n < 256 && (n < 3 || seconds_since(t0) < seconds) && !pb_signalled()) {
      uint64_t t = pb_now_ns();
      memcpy(dst, src, MEMCPY_BYTES);
      __asm__ volatile("" : : "r"(dst) : "memory"); /* the copy is used */
      rate[n++] = (double)MEMCPY_BYTES / (double)(pb_now_ns() - t);
    }
    gb = pb_percentile(rate, (size_t)n, 50);
  }
  free(src);
  free(dst);
  return gb;
}

typedef struct copier {
  uv_thread_t thread;
  double seconds;
  uint64_t bytes;
  atomic_bool *go;              /* set once every copier is started (and has faulted its buffers in) */
} copier;

static void copier_main(void *p) {
  copier *c = p;
  size_t bytes = MEMCPY_BYTES / 4;
  char *src = malloc(bytes), *dst = malloc(bytes);
  if (src && dst) {
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
  }
  while (!atomic_load_explicit(c->go, memory_order_acquire)) sched_yield();
  uint64_t t0 = pb_now_ns();
  while (src && dst && seconds_since(t0) < c->seconds && !pb_signalled()) {
    memcpy(dst, src, bytes);
    __asm__ volatile("" : : "r"(dst) : "memory");
    c->bytes += bytes;
  }
  free(src);
  free(dst);
}

/* Every core at once, each copying its own 16 MiB blocks: the sum of their rates, in GB/s (NAN when a
 * thread could not be started). */
static double memcpy_all_cores(int cores, double seconds) {
  copier *c = calloc((size_t)cores, sizeof *c);
  if (!c) return NAN;
  atomic_bool go = false;
  int started = 0;
  for (int i = 0; i < cores; i++) {
    c[i] = (copier){.seconds = seconds, .go = &go};
    if (uv_thread_create(&c[i].thread, copier_main, &c[i])) break;
    started++;
  }
  usleep(100000); /* the copiers fault their buffers in before the clock starts */
  uint64_t t0 = pb_now_ns();
  atomic_store_explicit(&go, true, memory_order_release);
  uint64_t bytes = 0;
  for (int i = 0; i < started; i++) {
    uv_thread_join(&c[i].thread);
    bytes += c[i].bytes;
  }
  double elapsed = (double)(pb_now_ns() - t0);
  free(c);
  return started == cores && elapsed > 0 ? (double)bytes / elapsed : NAN;
}

/* ---------- decode ---------- */

typedef struct loaded {
  uint8_t *data[DECODE_MAX_FILES];
  size_t bytes[DECODE_MAX_FILES];
  const char *path[DECODE_MAX_FILES];
  int n;
} loaded;

static void loaded_free(loaded *l) {
  for (int i = 0; i < l->n; i++) free(l->data[i]);
  l->n = 0;
}

/* Up to 64 files (64 MiB), spread over the dataset, into memory: decode is measured without I/O.  An
 * empty file is kept (it fails to decode, and is counted as such); one that cannot be read is an error. */
static int load_sample(const pb_file_list *files, loaded *l, pb_err *err) {
  size_t total = 0, stride = pb_calib_sample_stride(files->count, DECODE_MAX_FILES);
  for (size_t i = 0; i < files->count && l->n < DECODE_MAX_FILES && total < DECODE_MAX_BYTES; i += stride) {
    struct stat st; /* opened as the read stage does: never blocking on a FIFO, regular files only */
    int fd = pb_data_file_open(files->files[i].path, 0, &st);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (fd >= 0 && !f) close(fd);
    size_t bytes = (size_t)files->files[i].bytes;
    uint8_t *data = malloc(bytes ? bytes : 1);
    bool ok = f && data && fread(data, 1, bytes, f) == bytes;
    if (f) fclose(f);
    if (!ok) {
      free(data);
      return pb_err_setc(err, -EIO, "%s: cannot read it for the decode measurement (expected a readable file)",
                         files->files[i].path);
    }
    l->data[l->n] = data;
    l->bytes[l->n] = bytes;
    l->path[l->n++] = files->files[i].path;
    total += bytes;
  }
  return 0;
}

/* fused_crop: the random_resized_crop the decode stage draws its region for (config_pipeline.c checks
 * that the first map stage after decode opens with one). */
static const pb_op_cfg *fused_crop_op(const pb_config *cfg, const pb_stage_cfg *dec) {
  if (!dec->fused_crop) return NULL;
  for (int i = (int)(dec - cfg->stages) + 1; i < cfg->nstages; i++) {
    const pb_stage_cfg *map = &cfg->stages[i];
    if (map->type != PB_STAGE_MAP) continue;
    return map->nops > 0 && map->ops[0].kind == PB_OP_RANDOM_RESIZED_CROP ? &map->ops[0] : NULL;
  }
  return NULL;
}

/* One core's decoders and output buffer, as the decode stage has them. */
typedef struct decoder {
  pb_jpeg_decoder *whole;
  pb_jpeg_region *region; /* fused_crop only */
  const pb_op_cfg *crop;
  uint8_t *out;
  size_t out_bytes;
  pb_rng rng;
} decoder;

static int out_room(decoder *d, size_t need) {
  if (need <= d->out_bytes) return 0;
  free(d->out);
  d->out = malloc(d->out_bytes = need);
  return d->out ? 0 : -ENOMEM;
}

/* One image as the decode stage would decode it: the whole image at its scale, or (fused_crop) the region
 * of a crop drawn as random_resized_crop draws it. */
static int decode_one(decoder *d, const pb_stage_cfg *dec, int min_side, const uint8_t *data, size_t bytes,
                      pb_err *err) {
  int w, h, ow, oh;
  if (pb_jpeg_header(d->whole, data, bytes, &w, &h, err)) return -EINVAL;
  if (dec->max_pixels > 0 && (int64_t)w * h > dec->max_pixels)
    return pb_err_setc(err, -EFBIG, "image of %dx%d is over max_pixels %lld (expected at most that many pixels)", w, h,
                       (long long)dec->max_pixels);
  int denom = pb_decode_denom(dec, min_side, w, h);
  if (d->crop) {
    int sw = pb_jpeg_scaled_dim(w, denom), sh = pb_jpeg_scaled_dim(h, denom), crop_denom, xywh[4];
    pb_fused_crop_region(&d->rng, sh, sw, d->crop, dec->scale == PB_SCALE_AUTO, &crop_denom, xywh);
    pb_jpeg_rect rect = {.x = xywh[0], .y = xywh[1], .w = xywh[2], .h = xywh[3]}, got;
    if (out_room(d, pb_jpeg_region_capacity(&rect, pb_jpeg_scaled_dim(sw, crop_denom))))
      return pb_err_setc(err, -ENOMEM, "out of memory");
    return pb_jpeg_decode_region(d->region, data, bytes, &rect, denom * crop_denom, dec->max_pixels, d->out,
                                 d->out_bytes, &got, err)
               ? -EINVAL
               : 0;
  }
  if (out_room(d, pb_jpeg_decoded_bytes(w, h, denom))) return pb_err_setc(err, -ENOMEM, "out of memory");
  return pb_jpeg_decode(d->whole, data, bytes, denom, dec->max_pixels, d->out, d->out_bytes, &ow, &oh, err) ? -EINVAL
                                                                                                            : 0;
}

/* Which of the loaded files decode (a corrupt or refused one is an error on that sample in a run, not a
 * reason to measure nothing): marks them in ok[], counts the rest and keeps the first one's message. */
static int usable_files(decoder *d, const pb_stage_cfg *dec, int min_side, const loaded *l, bool *ok,
                        pb_err *first_bad) {
  int good = 0;
  first_bad->msg[0] = '\0';
  for (int i = 0; i < l->n; i++) {
    pb_err e;
    int rc = decode_one(d, dec, min_side, l->data[i], l->bytes[i], &e);
    if (rc == -ENOMEM) return pb_err_setc(first_bad, -ENOMEM, "out of memory");
    ok[i] = rc == 0;
    good += ok[i];
    if (!ok[i] && !first_bad->msg[0]) pb_err_set(first_bad, "%s: %s", l->path[i], e.msg);
  }
  return good;
}

/* One core decoding the loaded files round and round, as the decode stage would (its scale, its pixel
 * limit, its fused crop), for the budget: images/s and compressed MB/s.  Files that do not decode are
 * left out, counted in d->decode_skipped, the first named in *skipped; none decoding is an error. */
static int measure_decode(const pb_config *cfg, const pb_stage_cfg *dec, const loaded *l, double seconds,
                          pb_calib_dataset *d, pb_err *err, pb_err *skipped) {
  decoder dc = {.crop = fused_crop_op(cfg, dec)};
  pb_rng_seed(&dc.rng, cfg->seed);
  bool ok[DECODE_MAX_FILES];
  int min_side = pb_decode_min_side(cfg, dec), rc = 0, good = 0;
  if (pb_jpeg_decoder_init(&dc.whole, err) || (dc.crop && pb_jpeg_region_init(&dc.region, err))) rc = -ENOMEM;
  if (!rc && (good = usable_files(&dc, dec, min_side, l, ok, skipped)) < 0) {
    pb_err_set(err, "%s", skipped->msg);
    rc = -ENOMEM;
  }
  if (!rc && good == 0) {
    pb_err_set(err, "none of the %d sampled files decodes (expected JPEG images); the first: %s", l->n, skipped->msg);
    rc = -EINVAL;
  }
  uint64_t images = 0, in_bytes = 0, t0 = pb_now_ns();
  int timed = good;
  for (int i = 0; !rc && timed > 0 && (images < (uint64_t)good || seconds_since(t0) < seconds) && !pb_signalled();
       i = (i + 1) % l->n) {
    if (!ok[i]) continue;
    pb_err e;
    int r = decode_one(&dc, dec, min_side, l->data[i], l->bytes[i], &e);
    if (r == -ENOMEM) {
      pb_err_set(err, "out of memory");
      rc = -ENOMEM;
    } else if (r) { /* a truncated file can decode one crop and not another: left out from here on */
      ok[i] = false;
      timed--;
      if (!skipped->msg[0]) pb_err_set(skipped, "%s: %s", l->path[i], e.msg);
      continue;
    }
    images++;
    in_bytes += l->bytes[i];
  }
  if (!rc && timed == 0 && good > 0) {
    pb_err_set(err, "none of the %d sampled files decodes (expected JPEG images); the first: %s", l->n, skipped->msg);
    rc = -EINVAL;
  }
  good = timed;
  double elapsed = seconds_since(t0);
  free(dc.out);
  pb_jpeg_decoder_free(dc.whole);
  pb_jpeg_region_free(dc.region);
  if (rc) return rc;
  d->decode_files = good;
  d->decode_skipped = l->n - good;
  d->decode_images_per_s = (double)images / elapsed;
  d->decode_mb_per_s = (double)in_bytes / elapsed / 1e6;
  return 0;
}

/* ---------- read ---------- */

/* Reads one file whole in blocks of `block` bytes, in order or (random) each block once in a scattered
 * order, as fio's randread does: block (start + k * step) mod n with step coprime to n, a permutation
 * that needs no table however large the file.  (Draws with replacement would read a third of the
 * blocks twice, the second time from the page cache.) */
static int read_file_blocks(int fd, uint64_t bytes, uint8_t *buf, size_t block, bool random, pb_rng *r,
                            uint64_t *got) {
  uint64_t nblocks = (bytes + block - 1) / block, start = 0, step = 1;
  if (random && nblocks > 2) { /* the draws only then, in this order: the same blocks as before */
    uint64_t draw_start = pb_rng_next(r), draw_step = pb_rng_next(r);
    pb_calib_block_walk(nblocks, draw_start, draw_step, &start, &step);
  }
  for (uint64_t k = 0, b = start; k < nblocks; k++) {
    ssize_t n = pread(fd, buf, block, (off_t)(b * block));
    if (n < 0) return -errno;
    *got += (uint64_t)n;
    b += step; /* step < nblocks: no overflow */
    if (b >= nblocks) b -= nblocks;
  }
  return 0;
}

/* A buffered mode starts each file from storage, not memory: its cached pages are dropped just before it
 * is read, outside the timed part (clean pages only; dirty ones stay, and *evicted becomes false).  File
 * by file, so a dataset of millions of files costs only the files the budget reaches. */
static void evict_file(const pb_file *f, bool *evicted) {
  bool synced = false;
  pb_err err;
  if (pb_pagecache_evict_file(f->path, &synced, &err)) *evicted = false;
}

/* One thread reading the dataset's files (one pass at most, for the budget of timed reading; eviction is
 * not timed) in one mode: MB/s, or NAN with `why`. */
static double measure_read(const pb_file_list *files, pb_read_mode mode, size_t block, double seconds, bool *evicted,
                           char *why, size_t why_len) {
  bool direct = mode == PB_READ_DIRECT_SEQ || mode == PB_READ_DIRECT_RAND;
  bool random = mode == PB_READ_BUFFERED_RAND || mode == PB_READ_DIRECT_RAND;
  if (direct) block = pb_calib_direct_block(block);
  uint8_t *buf = aligned_alloc(DIRECT_ALIGN, block);
  size_t *order = malloc((files->count ? files->count : 1) * sizeof *order);
  double mb = NAN;
  if (!buf || !order) goto out;
  pb_calib_shuffled_order(order, files->count, 7);
  pb_rng r;
  pb_rng_seed(&r, 11);
  uint64_t got = 0, timed_ns = 0, t_start = pb_now_ns();
  int rc = 0;
  /* the wall-clock bound keeps a file system that evicts slowly from stretching the command */
  for (size_t i = 0; i < files->count && !rc && timed_ns < seconds * 1e9 && seconds_since(t_start) < 4 * seconds &&
                     !pb_signalled();
       i++) {
    const pb_file *f = &files->files[random ? order[i] : i];
    if (!direct) evict_file(f, evicted);
    uint64_t t0 = pb_now_ns();
    struct stat st;
    int fd = pb_data_file_open(f->path, direct ? O_DIRECT : 0, &st); /* never blocking on a FIFO */
    if (fd < 0) {
      rc = fd == PB_ENOTREG ? -EINVAL : fd;
      break;
    }
    rc = read_file_blocks(fd, f->bytes, buf, block, random, &r, &got);
    close(fd);
    timed_ns += pb_now_ns() - t0;
  }
  if (rc == -EINVAL && direct) snprintf(why, why_len, "O_DIRECT is not supported by this file system");
  else if (rc) snprintf(why, why_len, "%s", strerror(-rc));
  else if (got == 0 || timed_ns == 0) snprintf(why, why_len, "no bytes to read");
  else mb = (double)got / ((double)timed_ns / 1e9) / 1e6;
out:
  free(buf);
  free(order);
  return mb;
}

static void measure_reads(const pb_file_list *files, const pb_calib_dataset *key, double seconds, pb_calib_dataset *d) {
  d->cache_evicted = true;
  for (int m = 0; m < PB_READ_MODES && !pb_signalled(); m++)
    d->read_mb_per_s[m] = measure_read(files, (pb_read_mode)m, (size_t)key->block_bytes, 2 * seconds,
                                       &d->cache_evicted, d->read_why[m], sizeof d->read_why[m]);
}

/* ---------- the GPU ---------- */

static void measure_gpu(pb_calibration *c, const pb_config *cfg) {
  c->h2d_pinned_gb_per_s = c->h2d_pageable_gb_per_s = NAN;
  c->step_kernel_target_ms = c->step_kernel_measured_ms = c->step_kernel_error_pct = NAN;
  c->gpu_name[0] = c->gpu_why[0] = '\0';
  int gpus = pb_cuda_device_count(c->gpu_name, sizeof c->gpu_name, c->gpu_why, sizeof c->gpu_why);
  if (gpus <= 0) return;
  size_t bytes = 64u << 20;
  if (pb_cuda_h2d_gb_per_s(bytes, true, 20, &c->h2d_pinned_gb_per_s, c->gpu_why, sizeof c->gpu_why) ||
      pb_cuda_h2d_gb_per_s(bytes, false, 20, &c->h2d_pageable_gb_per_s, c->gpu_why, sizeof c->gpu_why))
    return;
  /* The step kernel: opened as a run would open the device, which times it against CUDA events. */
  pb_config *k = calloc(1, sizeof *k);
  if (!k) return;
  pb_err err;
  static const char *minimal = "{\"name\":\"calibrate\",\"dataset\":{\"format\":\"synthetic\",\"shape\":[16],"
                               "\"dtype\":\"uint8\"},\"stages\":[{\"type\":\"batch\",\"size\":1}],"
                               "\"device\":{\"kind\":\"gpu\",\"step_ms\":20}}";
  if (cfg) *k = *cfg;
  else if (pb_config_parse(k, "calibrate", minimal, NULL, 0, &err)) return free(k);
  if (!(k->device.step_ms > 0)) k->device.step_ms = 20;
  pb_device d;
  char notice[256];
  if (pb_device_open(&d, k, PB_DEVICE_GPU, notice, sizeof notice, &err) == 0) {
    if (d.step_kernel.measured) {
      c->step_kernel_target_ms = d.step_kernel.target_ms;
      c->step_kernel_measured_ms = d.step_kernel.measured_ms;
      c->step_kernel_error_pct = d.step_kernel.error_pct;
    }
    pb_device_close(&d);
  } else {
    snprintf(c->gpu_why, sizeof c->gpu_why, "step kernel: %.200s", err.msg);
  }
  free(k);
}

/* ---------- the command ---------- */

static void utc_now(char *out, size_t len) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void say(const pb_calibrate_opts *o, const char *fmt, const char *what) {
  if (!o->quiet && !o->json_stdout) fprintf(stderr, fmt, what);
}

static void measure_machine(pb_calibration *c, const pb_calibrate_opts *o) {
  double s = budget_s();
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  c->cores = n > 0 ? (int)n : 1;
  say(o, "pipebench: calibrate: %s\n", "memcpy (one core, then every core)");
  c->memcpy_gb_per_s = memcpy_one_core(s / 2);
  c->memcpy_all_gb_per_s = memcpy_all_cores(c->cores, s / 2);
  say(o, "pipebench: calibrate: %s\n", "GPU host-to-device copies and step kernel");
  measure_gpu(c, o->cfg);
}

/* The dataset part: its files listed (generated first, as `run` would), decode and read measured. */
static int measure_dataset(pb_calibration *c, const pb_calibrate_opts *o, bool *measured) {
  const pb_config *cfg = o->cfg;
  *measured = false;
  if (cfg->dataset.format == PB_FMT_SYNTHETIC) { /* nothing on storage to measure */
    say(o, "pipebench: calibrate: %s: a synthetic dataset has no files to read or decode; the machine only\n",
        cfg->file);
    return 0;
  }
  int rc = pb_gen_if_missing(cfg, o->quiet, o->quiet); /* as run would, before measuring its files */
  if (rc) return rc;
  pb_file_list files;
  pb_err err;
  if (pb_dataset_list(&cfg->dataset, &files, NULL, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  pb_calib_dataset key;
  pb_calib_dataset_key(cfg, &key);
  key.files = files.count;
  key.bytes = files.total_bytes;
  rc = 0;
  if (!o->force && pb_calib_find(c, &key)) {
    say(o, "pipebench: calibrate: %s: measured before (the cache); --force measures again\n", cfg->dataset.path);
  } else {
    pb_calib_dataset d = key;
    const pb_stage_cfg *dec = NULL;
    for (int i = 0; i < cfg->nstages; i++)
      if (cfg->stages[i].type == PB_STAGE_DECODE) dec = &cfg->stages[i];
    if (dec && cfg->dataset.format == PB_FMT_JPEG) {
      say(o, "pipebench: calibrate: %s\n", "decode (one core, the dataset's own files)");
      loaded l = {0};
      pb_err skipped = {0};
      rc = load_sample(&files, &l, &err);
      if (!rc && l.n) rc = measure_decode(cfg, dec, &l, budget_s(), &d, &err, &skipped);
      if (!rc && d.decode_skipped && !o->quiet)
        fprintf(stderr,
                "pipebench: calibrate: warning: %d of the %d sampled files do not decode and were left out; "
                "the first: %s\n",
                d.decode_skipped, l.n, skipped.msg);
      loaded_free(&l);
      if (rc) fprintf(stderr, "pipebench: %s: %s\n", cfg->dataset.path, err.msg);
    }
    if (!rc && key.block_bytes) {
      say(o, "pipebench: calibrate: %s\n", "read (one thread; buffered and O_DIRECT, sequential and random)");
      measure_reads(&files, &key, budget_s(), &d);
    }
    if (!rc) pb_calib_put(c, &d), *measured = true;
    rc = rc ? PB_EXIT_RUNTIME : 0;
  }
  pb_file_list_free(&files);
  return rc;
}

/* The summary (calibrate_out.h): the machine, the config's dataset when there is one, the cache's path. */
static void print_text(const pb_calibration *c, const pb_config *cfg, const char *cache) {
  pb_calib_dataset key;
  if (cfg) pb_calib_dataset_key(cfg, &key);
  pb_calibrate_out_text(stdout, c, cfg ? &key : NULL, cache);
}

/* Made before measuring, so that an --out that cannot be made fails at once, not after the measurements
 * (as run makes its directory before it runs). */
static int make_out_dir(const char *out_dir) {
  int rc = out_dir ? pb_mkdir_p(out_dir) : 0;
  if (rc) fprintf(stderr, "pipebench: %s: cannot create the output directory: %s (expected a writable directory)\n",
                  out_dir, strerror(-rc));
  return rc ? PB_EXIT_RUNTIME : 0;
}

static int write_copy(const pb_calibration *c, const char *out_dir) {
  char path[PB_PATH_LEN + 32];
  snprintf(path, sizeof path, "%s/calibration.json", out_dir);
  pb_err err;
  if (pb_calib_save(path, c, &err)) {
    fprintf(stderr, "pipebench: %s (expected a writable --out directory)\n", err.msg);
    return PB_EXIT_RUNTIME;
  }
  return 0;
}

int pb_calibrate(const pb_calibrate_opts *o) {
  if (make_out_dir(o->out_dir)) return PB_EXIT_RUNTIME;
  pb_calibration *c = calloc(1, sizeof *c);
  if (!c) return PB_EXIT_RUNTIME;
  char machine[256], cache[PB_PATH_LEN];
  pb_calib_machine_key(machine, sizeof machine);
  bool have_cache = pb_calib_cache_path(cache, sizeof cache) == 0;
  pb_err err;
  int rc = have_cache ? pb_calib_load(cache, machine, c, &err) : -ENOENT;
  if (rc == -EINVAL) say(o, "pipebench: warning: %s; measuring again\n", err.msg);
  bool fresh = rc != 0 || o->force;
  if (rc) memset(c, 0, sizeof *c);
  snprintf(c->machine, sizeof c->machine, "%s", machine);
  rc = 0;
  if (fresh) measure_machine(c, o);
  else say(o, "pipebench: calibrate: the machine was measured before (%s); --force measures again\n", cache);
  bool dataset_measured = false;
  if (o->cfg && !pb_signalled()) rc = measure_dataset(c, o, &dataset_measured);
  if (pb_signalled()) rc = PB_EXIT_INTERRUPTED;
  if (!rc && (fresh || dataset_measured)) {
    utc_now(c->measured_at, sizeof c->measured_at);
    snprintf(c->version, sizeof c->version, "%s", PB_VERSION);
  }
  if (!rc && have_cache && (fresh || dataset_measured)) {
    int mk = pb_calib_cache_mkdir(cache);
    if (mk || pb_calib_save(cache, c, &err)) {
      if (mk) fprintf(stderr, "pipebench: %s: cannot create its directory: %s (expected a writable cache directory: "
                              "set PIPEBENCH_CACHE_DIR)\n", cache, strerror(-mk));
      else fprintf(stderr, "pipebench: %s\n", err.msg);
      rc = PB_EXIT_RUNTIME;
    }
  }
  if (!rc && o->out_dir) rc = write_copy(c, o->out_dir);
  if (!rc && o->json_stdout) {
    cJSON *j = pb_calib_to_json(c);
    char *text = j ? pb_json_print(j, true) : NULL;
    if (text) printf("%s\n", text);
    free(text);
    cJSON_Delete(j);
  } else if (!rc && !o->quiet && !o->no_text) {
    print_text(c, o->cfg, have_cache ? cache : NULL);
  }
  free(c);
  return rc;
}

/* The machine's ceilings, as `pipebench calibrate` measured them (calibrate.c), kept in calibration.json:
 * one file per machine in the cache directory, so that every later run on the machine can put each
 * stage's throughput next to what the hardware allows (metrics.c, docs/METRICS.md "efficiency").
 *
 * The machine part (cores, memcpy, the GPU's copies) holds for every config; the dataset part (decode
 * rate of its own files at its decode scale, read rate of its storage at its block size) holds for one
 * dataset and is looked up by the dataset's path, its files, decode scale and block size. */
#ifndef PB_CALIBRATION_H
#define PB_CALIBRATION_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "config.h"

#define PB_CALIB_MAX_DATASETS 32

/* The ways calibrate reads the dataset's files, one thread, block_bytes per read. */
typedef enum {
  PB_READ_BUFFERED_SEQ, /* files in listing order, through the page cache (evicted first) */
  PB_READ_BUFFERED_RAND, /* files in shuffled order, blocks of large files in random order */
  PB_READ_DIRECT_SEQ,   /* the same with O_DIRECT */
  PB_READ_DIRECT_RAND,
  PB_READ_MODES
} pb_read_mode;

typedef struct pb_calib_dataset {
  char path[PB_PATH_LEN];
  char format[16];
  uint64_t files, bytes;         /* the listing it was measured on: a changed dataset is measured again */
  int block_bytes;               /* the read stage's block size (0: no read stage) */
  char scale[8];                 /* the decode stage's scale ("" when it does not decode JPEG) */
  int decode_min_side;           /* scale auto: the crop/resize size it resolves against (0 otherwise) */
  bool fused_crop;               /* the decode stage decodes only the crop's region */
  /* decode: one core, the dataset's own files at its scale (the crops' regions with fused_crop); NAN when
   * not measured */
  double decode_images_per_s, decode_mb_per_s;
  int decode_files;              /* files decoded (cycled over) */
  int decode_skipped;            /* sampled files that did not decode (corrupt, refused): left out */
  /* read: one thread; NAN when not measured (read_why says why, e.g. O_DIRECT refused) */
  double read_mb_per_s[PB_READ_MODES];
  char read_why[PB_READ_MODES][128];
  bool cache_evicted;            /* buffered reads started from an evicted page cache (clean pages only) */
} pb_calib_dataset;

typedef struct pb_calibration {
  char machine[256];             /* the key: hostname, CPU model and cores (pb_calib_machine_key) */
  char measured_at[32];          /* UTC, ISO 8601 */
  char version[32];              /* pipebench's */
  int cores;                     /* online CPUs */
  double memcpy_gb_per_s;        /* one core, 64 MiB blocks */
  double memcpy_all_gb_per_s;    /* every core at once, summed */
  /* the GPU: NAN and gpu_why when there is none */
  char gpu_name[128], gpu_why[256];
  double h2d_pinned_gb_per_s, h2d_pageable_gb_per_s;
  double step_kernel_target_ms, step_kernel_measured_ms, step_kernel_error_pct;
  int ndatasets;
  pb_calib_dataset datasets[PB_CALIB_MAX_DATASETS];
} pb_calibration;

/* This machine's key: "<hostname> | <CPU model> | <n> cpus". */
void pb_calib_machine_key(char *out, size_t len);
/* The cache file for this machine: $PIPEBENCH_CACHE_DIR, else $XDG_CACHE_HOME/pipebench, else
 * $HOME/.cache/pipebench, then calibration-<hostname>.json.  0, or -ENOENT when no directory is known. */
int pb_calib_cache_path(char *out, size_t len);
/* Creates the cache directory (and its parents).  0 or -errno. */
int pb_calib_cache_mkdir(const char *file);

/* Loads `file`.  0; -ENOENT when it does not exist; -EINVAL with err set when it is not a calibration
 * (or is another machine's: `machine` must match when given). */
int pb_calib_load(const char *file, const char *machine, pb_calibration *c, pb_err *err);
/* Writes it (atomically: a temporary file renamed).  0 or -errno with err set. */
int pb_calib_save(const char *file, const pb_calibration *c, pb_err *err);
struct cJSON *pb_calib_to_json(const pb_calibration *c);

/* The entry measured for exactly this key, or NULL: same path, files, bytes, block size and decode
 * settings (scale, what `auto` resolves against, fused_crop). */
const pb_calib_dataset *pb_calib_find(const pb_calibration *c, const pb_calib_dataset *key);
/* Adds the entry as the newest, replacing one with the same key (dropping the oldest when full). */
void pb_calib_put(pb_calibration *c, const pb_calib_dataset *d);
/* The key of a config's dataset (files and bytes from the listing, which the caller fills).  The path
 * is made absolute when it names an existing file or directory, so `data/x` and `./data/x` are one. */
void pb_calib_dataset_key(const pb_config *cfg, pb_calib_dataset *d);

const char *pb_read_mode_name(pb_read_mode m);

/* The ceilings a run's report puts its stages against (docs/METRICS.md "efficiency"), looked up in this
 * machine's calibration.json when the run starts its report, and carried in trace.json for `analyze`. */
typedef struct pb_ceilings {
  bool have;                     /* a calibration of this machine was found */
  char why[256];                 /* when not: why ("no calibration of this machine: run pipebench calibrate") */
  char source[PB_PATH_LEN];      /* the calibration.json */
  char measured_at[32];
  int cores;                     /* the machine's online CPUs when calibrated */
  double memcpy_gb_per_s;        /* one core */
  double h2d_gb_per_s;           /* the GPU link, pinned or pageable as the h2d stage copies; NAN: none */
  bool dataset;                  /* the dataset part matched (path, format, block size, scale) */
  double decode_images_per_s;    /* one core; NAN when not measured */
  double read_mb_per_s;          /* one thread, the mode the read stage reads in; NAN when not measured */
  char read_mode[24];            /* buffered or direct as the read stage reads; random when a file is one
                                  * block or less (the stage's shuffled file order is all the pattern
                                  * there is), sequential when files span blocks (read in order) */
  /* the read stage's emulated storage (its config, not the calibration; 0: none): latency_us added per
   * block read, bandwidth_mb_per_s a cap on the whole stage; block_bytes as the stage reads */
  double read_latency_us, read_cap_mb_per_s;
  int read_block_bytes;
} pb_ceilings;

/* No ceilings (every rate NAN), and why. */
void pb_ceilings_none(pb_ceilings *c, const char *why);
/* Fills *out for a run of `cfg` (gpu: the run's device is a GPU; pinned: its h2d copies from pinned
 * memory).  Never fails: out->have says whether a calibration was found, out->why why not. */
void pb_ceilings_lookup(const pb_config *cfg, bool synthetic, bool gpu, pb_ceilings *out);

#endif

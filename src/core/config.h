/* The validated configuration (docs/CONTRACT.md §2): cJSON in, a plain struct out, every value checked.
 *
 * Loading is table driven (config_schema.c): one table row per key with its type, range, default and help;
 * the same tables drive parsing, defaults, unknown-key suggestions and the resolved config that `validate`
 * prints and report.json embeds. */
#ifndef PB_CONFIG_H
#define PB_CONFIG_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "common.h"

/* The largest value of an 8-byte integer key: cJSON prints numbers with 15 significant digits whenever
 * that reads back within one epsilon, so bigger integers would not survive pb_config_to_json and a print. */
#define PB_CFG_INT_MAX 1e15

#define PB_MAX_STAGES 32
#define PB_MAX_OPS 16
#define PB_MAX_DIMS 4
#define PB_MAX_CHANNELS 4
#define PB_MAX_DEVICES 16
#define PB_NAME_LEN 64
#define PB_PATH_LEN 4096

typedef enum { PB_DTYPE_UINT8, PB_DTYPE_FLOAT16, PB_DTYPE_FLOAT32 } pb_dtype;

/* A per-sample tensor shape.  A dim of -1 is unknown (e.g. JPEG height/width without
 * dataset.generate.image); ndims 0 with known=false is "variable-size bytes" (encoded payloads).
 * `known` is true when every dim is known; synthetic mode refuses to run on an unknown shape.
 * Images are [H,W,C] until a to_chw op makes them [C,H,W] (`chw`). */
typedef struct pb_shape {
  bool known;
  bool chw;
  int ndims;
  int64_t dims[PB_MAX_DIMS];
  pb_dtype dtype;
} pb_shape;

typedef enum {
  PB_STAGE_READ,
  PB_STAGE_DECODE,
  PB_STAGE_MAP,
  PB_STAGE_SHUFFLE,
  PB_STAGE_CACHE,
  PB_STAGE_BATCH,
  PB_STAGE_PREFETCH,
  PB_STAGE_H2D,
  PB_STAGE__COUNT
} pb_stage_type;

typedef enum {
  PB_OP_RANDOM_RESIZED_CROP,
  PB_OP_RESIZE,
  PB_OP_CENTER_CROP,
  PB_OP_FLIP,
  PB_OP_NORMALIZE,
  PB_OP_TO_CHW,
  PB_OP_SPIN,
  PB_OP_SLEEP,
  PB_OP__COUNT
} pb_op_kind;

typedef struct pb_op_cfg {
  pb_op_kind kind;
  int64_t size;                 /* random_resized_crop, resize, center_crop: output side in pixels */
  double scale[2];              /* random_resized_crop: area fraction range, default [0.08, 1] */
  double ratio[2];              /* random_resized_crop: aspect range, default [3/4, 4/3] */
  bool antialias;               /* random_resized_crop, resize: Pillow's widened filter when shrinking */
  double p;                     /* flip: probability, default 0.5 */
  int nmean, nstd;              /* normalize: per-channel mean/std in pixel units (0..255) */
  double mean[PB_MAX_CHANNELS], std[PB_MAX_CHANNELS];
  pb_dtype dtype;               /* normalize: output dtype, default float32 */
  bool on_device;               /* normalize: run after H2D on the GPU */
  int64_t us;                   /* spin, sleep: microseconds per sample (the mean, with a dist) */
  int dist;                     /* spin, sleep: PB_OP_DIST_* (how `us` varies from sample to sample) */
  double sigma;                 /* spin, sleep with dist lognormal: the shape (sd of the log) */
} pb_op_cfg;

/* spin/sleep "dist": constant (every sample `us`), exponential (mean `us`), lognormal (mean `us`, shape
 * `sigma`: heavy-tailed).  Emulation only: a stage whose service time varies, with a known mean. */
enum { PB_OP_DIST_CONSTANT, PB_OP_DIST_EXPONENTIAL, PB_OP_DIST_LOGNORMAL };

typedef enum { PB_SCALE_AUTO, PB_SCALE_1, PB_SCALE_1_2, PB_SCALE_1_4, PB_SCALE_1_8 } pb_decode_scale;

typedef struct pb_stage_cfg {
  char name[PB_NAME_LEN];       /* unique; defaults to the type name */
  pb_stage_type type;
  int threads;                  /* 1..PB_MAX_THREADS; shuffle/cache/prefetch must be 1 */
  /* read */
  int64_t block_bytes;          /* default 1 MiB */
  bool direct;                  /* O_DIRECT */
  int64_t latency_us;           /* emulation: added per read, default 0 */
  double bandwidth_mb_per_s;    /* emulation: whole-stage cap, 0 = uncapped */
  /* decode */
  pb_decode_scale scale;        /* default auto */
  int64_t max_pixels;           /* default 100,000,000 */
  bool fused_crop;              /* decode only the next random_resized_crop's region (default false) */
  /* map */
  int nops;
  pb_op_cfg ops[PB_MAX_OPS];
  int64_t ahead; /* samples in work or done and not yet taken, per thread; 0: no bound but the queue's */
  /* shuffle */
  int64_t buffer;
  /* batch */
  int64_t size;
  bool drop_remainder;          /* default true */
  bool fuse_map;                /* the map before writes into the batch (default false; pb_config_batch_in_place) */
  bool on_demand;               /* start a batch only when the next stage or the device asks for one */
  /* prefetch */
  int64_t depth;
  /* h2d */
  bool pinned;                  /* default true */
  int streams;                  /* default 1 */
  /* Inferred: the shape/dtype of ONE SAMPLE leaving this stage (for batch and after: one member). */
  pb_shape out_shape;
} pb_stage_cfg;

#define PB_MAX_THREADS 1024

typedef enum { PB_FMT_JPEG, PB_FMT_TFRECORD, PB_FMT_NPY, PB_FMT_NPZ, PB_FMT_RAW, PB_FMT_SYNTHETIC } pb_format;
typedef enum { PB_PAYLOAD_JPEG, PB_PAYLOAD_RAW } pb_payload;

typedef struct pb_generate_cfg {
  bool present;
  int64_t num_files, samples_per_file;
  bool has_image;
  int64_t width, height, quality;
  int64_t record_bytes, record_bytes_stdev;
} pb_generate_cfg;

#define PB_MAX_EXTENSIONS 16
#define PB_EXTENSION_LEN 16

typedef struct pb_dataset_cfg {
  char path[PB_PATH_LEN];
  pb_format format;             /* default jpeg */
  char feature[128];            /* tfrecord: default "image/encoded" */
  pb_payload payload;           /* tfrecord: default jpeg */
  int64_t record_bytes;         /* raw: bytes per sample */
  /* format "synthetic" (pipebench extension): an in-memory dataset of identical samples, no files. */
  pb_shape sample;              /* dataset.shape + dataset.dtype */
  int64_t num_samples;          /* samples per epoch, 0 = endless */
  pb_generate_cfg generate;
  /* The file extensions read from dataset.path (without the dot; "" a name without one, "*" every file);
   * none given: the format's own (pb_format_extensions). */
  char extensions[PB_MAX_EXTENSIONS][PB_EXTENSION_LEN];
  int nextensions;
} pb_dataset_cfg;

typedef enum { PB_DEVICE_AUTO, PB_DEVICE_GPU, PB_DEVICE_EMULATED } pb_device_kind;

/* device.allreduce: the gradient exchange after every step (src/engine/allreduce.c). */
typedef enum { PB_ALLREDUCE_NONE, PB_ALLREDUCE_BARRIER, PB_ALLREDUCE_MODEL, PB_ALLREDUCE_MPI } pb_allreduce_mode;

typedef struct pb_allreduce_cfg {
  pb_allreduce_mode mode;       /* default none */
  int64_t bytes;                /* gradient bytes per step (0: params x 4, or none) */
  int64_t params;               /* model parameters: bytes = params x 4 (float32 gradients) */
  double gb_per_s;              /* algorithm bandwidth (bytes / time, GB = 1e9 bytes) for the model; 0 = none */
} pb_allreduce_cfg;

typedef struct pb_device_cfg {
  pb_device_kind kind;          /* default auto */
  int count;                    /* default 1, 1..PB_MAX_DEVICES */
  bool step_normal;             /* step_ms given as {"dist":"normal",...} */
  double step_ms;               /* constant step, or the normal mean */
  double step_stdev_ms;
  double h2d_gb_per_s;          /* emulated copy bandwidth (GB = 1e9 bytes), default 25 */
  int nids;
  int ids[PB_MAX_DEVICES];
  pb_allreduce_cfg allreduce;
} pb_device_cfg;

typedef enum { PB_STOP_STEPS, PB_STOP_EPOCHS, PB_STOP_DURATION } pb_stop_mode;

typedef struct pb_run_cfg {
  pb_stop_mode stop;            /* which of steps/epochs/duration_s was given; default steps=100 */
  int64_t steps;
  int64_t epochs;
  double duration_s;
  int64_t warmup_steps;         /* default 5 */
  bool on_error_fail;           /* on_error: "fail" (true) or "skip" (false, default) */
  int64_t max_errors;           /* 0 = no limit */
  double au_target_pct; /* the accelerator utilization a run must reach to pass (MLPerf Storage: 90); 0 = none */
} pb_run_cfg;

typedef struct pb_config {
  char file[PB_PATH_LEN];       /* the config file as given, for error messages */
  char name[128];               /* default: the file's base name without .json */
  char about[512];              /* what the config is and where it came from ("" none): a twin says how it was made */
  uint64_t seed;                /* default 42 */
  pb_dataset_cfg dataset;
  int nstages;
  pb_stage_cfg stages[PB_MAX_STAGES];
  pb_device_cfg device;
  pb_run_cfg run;
  int64_t max_memory_mb;        /* limits.max_memory_mb, default 8192 */
} pb_config;

/* Read FILE, apply each "PATH=VALUE" of `sets` (docs/CONTRACT.md §1 --set), validate, fill defaults and infer
 * shapes.  Returns 0, or -EINVAL with `err` holding one line "<file>: <json.path>: <what> (expected ..)"
 * (or "--set <arg>: ..." for a bad override; "<file>: line L, column C: ..." for bad JSON). */
int pb_config_load(pb_config *cfg, const char *file, const char *const *sets, int nsets, pb_err *err);

/* Same, from JSON text already in memory (`file` is only used in messages).  For tests. */
int pb_config_parse(pb_config *cfg, const char *file, const char *json_text, const char *const *sets,
                    int nsets, pb_err *err);

/* Each of `paths` (the PATH of a --set PATH=VALUE) in one spelling per key of FILE with `sets` applied, so
 * that two spellings of one key compare equal: a stage name on the top-level stages array becomes its index
 * and indices lose leading zeros ("stages.decode.threads" and "stages[01].threads" both become
 * "stages[1].threads" when decode is the second stage).  A path that does not resolve stays as written.
 * 0, or -EINVAL with err set when FILE or `sets` do not load (as pb_config_load would say). */
#define PB_CFG_PATH_LEN 256
int pb_config_canonical_paths(const char *file, const char *const *sets, int nsets, const char *const *paths,
                              int npaths, char (*out)[PB_CFG_PATH_LEN], pb_err *err);

/* The resolved config (every key, defaults filled in) as a new cJSON tree; caller deletes it. */
cJSON *pb_config_to_json(const pb_config *cfg);

/* Names used in messages and reports. */
const char *pb_stage_type_name(pb_stage_type t);
const char *pb_op_name(pb_op_kind k);
const char *pb_dtype_name(pb_dtype d);
size_t pb_dtype_size(pb_dtype d);
const char *pb_format_name(pb_format f);
const char *pb_decode_scale_name(pb_decode_scale s); /* "auto", "1", "1/2", "1/4", "1/8" */
const char *pb_allreduce_mode_name(pb_allreduce_mode m);
/* Gradient bytes exchanged per step: allreduce.bytes, else params x 4 (0 when neither is given). */
uint64_t pb_allreduce_bytes(const pb_allreduce_cfg *a);
/* Bytes of one sample of this shape (0 when unknown). */
size_t pb_shape_bytes(const pb_shape *s);
/* "[224,224,3] uint8" or "unknown"; returns buf. */
char *pb_shape_str(const pb_shape *s, char *buf, size_t len);

/* Index of the batch stage (validation guarantees exactly one). */
int pb_config_batch_index(const pb_config *cfg);
/* Does op write a new image (a pooled result) rather than change one in place or do nothing on the host? */
bool pb_op_makes_new_image(const pb_op_cfg *op);
/* Is the batch collated in place: `fuse_map` set, the stage before it a map that makes a new image, and
 * that image's shape known (so every sample has the same bytes and a fixed place in the batch)?  Never
 * with synthetic data, whose in-memory source replaces the map. */
bool pb_config_batch_in_place(const pb_config *cfg, bool synthetic);

/* The largest value the config accepts for the integer key `key` of a stage of type t (its row in the
 * schema: "threads" is 1 for shuffle, cache, prefetch and h2d), or 0 when that type has no such key.
 * The model (src/analysis/) asks this which knobs a stage has: the schema says it once. */
int64_t pb_config_stage_key_max(pb_stage_type t, const char *key);

/* s with control characters as '?', cut to max_chars (then "..."), in buf: safe to print in one line. */
const char *pb_cfg_clean(const char *s, size_t max_chars, char *buf, size_t len);

#endif

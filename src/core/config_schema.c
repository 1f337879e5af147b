/* Every config key, one row each (docs/CONTRACT.md §2): the same rows drive parsing, defaults, unknown-key
 * suggestions, pb_config_to_json and docs/CONFIG.md (keep that file in step with this one).  A stage type's
 * rows are in its description (src/core/stages/<type>.c), the rest here.
 * Defaults are JSON text parsed by the same code as user values, so a default can never be out of range. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "config_internal.h"
#include "stage_desc.h"

/* Names by enum value (config.h), NULL-terminated. */
const char *const pb_cfg_stage_type_names[] = {"read",  "decode",   "map", "shuffle", "cache",
                                           "batch", "prefetch", "h2d", NULL};
const char *const pb_cfg_op_names[] = {"random_resized_crop", "resize", "center_crop", "flip", "normalize",
                                   "to_chw",              "spin",   "sleep",       NULL};
const char *const pb_cfg_dtype_names[] = {"uint8", "float16", "float32", NULL};
const char *const pb_cfg_format_names[] = {"jpeg", "tfrecord", "npy", "npz", "raw", "synthetic", NULL};
const char *const pb_cfg_payload_names[] = {"jpeg", "raw", NULL};
static const char *const device_kind_names[] = {"auto", "gpu", "emulated", NULL};
const char *const pb_cfg_decode_scale_names[] = {"auto", "1", "1/2", "1/4", "1/8", NULL};
const char *const pb_cfg_allreduce_names[] = {"none", "barrier", "model", "mpi", NULL};
static const char *const op_dist_names[] = {"constant", "exponential", "lognormal", NULL};
static bool emit_if_about(const void *base) { return ((const pb_config *)base)->about[0] != '\0'; }
static bool emit_if_lognormal(const void *base) { return ((const pb_op_cfg *)base)->dist == PB_OP_DIST_LOGNORMAL; }
static const char *const on_error_names[] = {"skip", "fail", NULL}; /* into bool on_error_fail */
static const char *const dist_names[] = {"normal", NULL};

#define MAX_RECORD_BYTES 17179869184.0 /* 16 GiB */

#define MIN_RATE PB_CFG_MIN_RATE /* the floor of every rate (config_internal.h says why) */

/* ---- dataset ---- */

static const pb_key image_keys[] = {
    ROW(pb_generate_cfg, width, "width", PB_KT_INT, .min = 1, .max = 65535, .flags = PB_KF_REQUIRED,
        .help = "Width of each generated JPEG in pixels."),
    ROW(pb_generate_cfg, height, "height", PB_KT_INT, .min = 1, .max = 65535, .flags = PB_KF_REQUIRED,
        .help = "Height of each generated JPEG in pixels."),
    ROW(pb_generate_cfg, quality, "quality", PB_KT_INT, .min = 1, .max = 100, .def = "90",
        .help = "JPEG quality of generated images."),
};
static const pb_key_table image_table = TABLE(image_keys, NULL);

static const pb_key generate_keys[] = {
    ROW(pb_generate_cfg, num_files, "num_files", PB_KT_INT, .min = 1, .max = 1e8, .def = "1024",
        .help = "Files `pipebench gen` writes."),
    ROW(pb_generate_cfg, samples_per_file, "samples_per_file", PB_KT_INT, .min = 1, .max = 1e6, .def = "1",
        .help = "Samples in each generated file (tfrecord, npz; 1 for jpeg)."),
    {.name = "image", .type = PB_KT_OBJECT, .off = 0, .sub = &image_table, .flags = PB_KF_PRESENCE,
     .count_off = offsetof(pb_generate_cfg, has_image),
     .help = "Generated JPEG payloads: {width, height, quality}; also gives decode its output shape."},
    ROW(pb_generate_cfg, record_bytes, "record_bytes", PB_KT_INT, .min = 1, .max = MAX_RECORD_BYTES,
        .flags = PB_KF_OMIT_ZERO, .help = "Mean bytes per generated raw/npy/npz/tfrecord-raw sample."),
    ROW(pb_generate_cfg, record_bytes_stdev, "record_bytes_stdev", PB_KT_INT, .min = 0, .max = MAX_RECORD_BYTES,
        .def = "0", .help = "Standard deviation of generated sample sizes in bytes (0: all equal)."),
};
static const pb_key_table generate_table = TABLE(generate_keys, NULL);

static const pb_key dataset_keys[] = {
    ROW(pb_dataset_cfg, path, "path", PB_KT_STRING, .min = 0, .max = PB_PATH_LEN - 1, .def = "\"\"",
        .help = "A directory (walked recursively, files sorted), a glob, or @FILE listing one path per line."),
    ROW(pb_dataset_cfg, format, "format", PB_KT_ENUM, .choices = pb_cfg_format_names, .def = "\"jpeg\"",
        .help = "File format; \"synthetic\" is an in-memory dataset (pipebench extension)."),
    ROW(pb_dataset_cfg, feature, "feature", PB_KT_STRING, .min = 1, .max = 127, .def = "\"image/encoded\"",
        .flags = PB_KF_TFRECORD, .emit_if = pb_cfg_emit_if_tfrecord,
        .help = "tfrecord: the tf.train.Example bytes feature holding the sample."),
    ROW(pb_dataset_cfg, payload, "payload", PB_KT_ENUM, .choices = pb_cfg_payload_names, .def = "\"jpeg\"",
        .flags = PB_KF_TFRECORD, .emit_if = pb_cfg_emit_if_tfrecord,
        .help = "tfrecord: what the feature holds, a JPEG or raw bytes."),
    ROW(pb_dataset_cfg, record_bytes, "record_bytes", PB_KT_INT, .min = 1, .max = MAX_RECORD_BYTES,
        .flags = PB_KF_OMIT_ZERO,
        .help = "Bytes per sample (raw: required to split files). Default: generate.record_bytes, else unknown."),
    ARR(pb_dataset_cfg, sample.dims, sample.ndims, "shape", PB_KT_INTS, .min = 1, .max = 1e9, .nmin = 1,
        .nmax = PB_MAX_DIMS, .flags = PB_KF_SYNTHETIC, .emit_if = pb_cfg_emit_if_synthetic,
        .help = "synthetic only (required there): the shape of every sample."),
    ROW(pb_dataset_cfg, sample.dtype, "dtype", PB_KT_ENUM, .choices = pb_cfg_dtype_names, .def = "\"uint8\"",
        .flags = PB_KF_SYNTHETIC, .emit_if = pb_cfg_emit_if_synthetic,
        .help = "synthetic only: the element type of every sample."),
    ROW(pb_dataset_cfg, num_samples, "num_samples", PB_KT_INT, .min = 0, .max = INFINITY, .def = "0",
        .flags = PB_KF_SYNTHETIC, .emit_if = pb_cfg_emit_if_synthetic,
        .help = "synthetic only: samples per epoch, 0 = endless."),
    {.name = "extensions",
     .type = PB_KT_CUSTOM,
     .parse = pb_cfg_parse_extensions,
     .emit = pb_cfg_emit_extensions,
     .emit_if = pb_cfg_emit_if_extensions,
     .expect = "an array of up to 16 file extensions without the dot, e.g. [\"jpg\", \"JPEG\"]; \"\" for names "
               "without one, \"*\" for every file",
     .help = "Which files of dataset.path are read, by extension (any case). Default: the format's own."},
    {.name = "generate",
     .type = PB_KT_OBJECT,
     .off = offsetof(pb_dataset_cfg, generate),
     .sub = &generate_table,
     .flags = PB_KF_PRESENCE,
     .count_off = offsetof(pb_dataset_cfg, generate.present),
     .help = "What `pipebench gen` writes."},
};
const pb_key_table pb_cfg_dataset_table = TABLE(dataset_keys, pb_cfg_check_dataset);

/* ---- ops of a map stage ---- */

#define OP_KEY \
  ROW(pb_op_cfg, kind, "op", PB_KT_ENUM, .choices = pb_cfg_op_names, .flags = PB_KF_REQUIRED, .help = "The op.")
const pb_key pb_cfg_op_kind_key = OP_KEY; /* parsed first: it picks the op's table */
#define SIZE_KEY(what)                                                                                    \
  ROW(pb_op_cfg, size, "size", PB_KT_INT, .min = 1, .max = 65535, .flags = PB_KF_REQUIRED,               \
      .help = "Output side in pixels: " what)

#define ANTIALIAS_KEY                                                                                     \
  ROW(pb_op_cfg, antialias, "antialias", PB_KT_BOOL, .def = "false",                                      \
      .help = "Shrink with Pillow's bilinear filter, widened by the shrink factor (torchvision on PIL "      \
              "images, and on tensors with antialias=True); false: 2x2-tap bilinear (torch's "             \
              "interpolate, tf.image.resize).")

static const pb_key rrc_keys[] = {
    OP_KEY,
    SIZE_KEY("a random crop resized to size x size."),
    ROW(pb_op_cfg, scale, "scale", PB_KT_RANGE, .min = 0, .max = 1, .flags = PB_KF_MIN_EXCL, .nmin = 2,
        .nmax = 2, .cap = 2, .def = "[0.08, 1]", .help = "Range of the crop's area as a fraction of the image."),
    /* 1:100 either way: a narrower ratio leaves a crop of no pixels on any image under 50 pixels */
    ROW(pb_op_cfg, ratio, "ratio", PB_KT_RANGE, .min = 0.01, .max = 100, .nmin = 2, .nmax = 2, .cap = 2,
        .def = "[0.75, 1.3333333333333333]", .help = "Range of the crop's aspect ratio (width / height)."),
    ANTIALIAS_KEY,
};
static const pb_key resize_keys[] = {
    OP_KEY, SIZE_KEY("the image resized so that its shorter side is size (torchvision Resize(int))."), ANTIALIAS_KEY};
static const pb_key center_crop_keys[] = {OP_KEY, SIZE_KEY("the central size x size square.")};
static const pb_key flip_keys[] = {
    OP_KEY,
    ROW(pb_op_cfg, p, "p", PB_KT_NUMBER, .min = 0, .max = 1, .def = "0.5",
        .help = "Probability of a horizontal flip."),
};
static const pb_key normalize_keys[] = {
    OP_KEY,
    ARR(pb_op_cfg, mean, nmean, "mean", PB_KT_NUMBERS, .min = -1e6, .max = 1e6, .nmin = 1,
        .nmax = PB_MAX_CHANNELS, .def = "[123.675, 116.28, 103.53]",
        .help = "Per-channel mean in pixel units (0..255), subtracted; 1 value or one per channel."),
    /* a divisor: 1e-300 would make every value infinite */
    ARR(pb_op_cfg, std, nstd, "std", PB_KT_NUMBERS, .min = 1e-6, .max = 1e6, .nmin = 1, .nmax = PB_MAX_CHANNELS, .def = "[58.395, 57.12, 57.375]",
        .help = "Per-channel standard deviation in pixel units, divided by; as many values as mean."),
    ROW(pb_op_cfg, dtype, "dtype", PB_KT_ENUM, .choices = pb_cfg_dtype_names, .def = "\"float32\"",
        .help = "Output element type."),
    ROW(pb_op_cfg, on_device, "on_device", PB_KT_BOOL, .def = "false",
        .help = "Run on the device after H2D, so uint8 crosses the bus; the host map stage emits its input dtype."),
};
static const pb_key to_chw_keys[] = {OP_KEY};
#define US_KEY(what)                                                                                      \
  ROW(pb_op_cfg, us, "us", PB_KT_INT, .min = 0, .max = 1e7, .flags = PB_KF_REQUIRED,                     \
      .help = "Microseconds per sample " what)
#define DIST_KEYS                                                                                         \
  ROW(pb_op_cfg, dist, "dist", PB_KT_ENUM, .choices = op_dist_names, .def = "\"constant\"",                  \
      .help = "How the time varies per sample: constant, exponential (mean us) or lognormal (mean us, shape sigma)."), \
      ROW(pb_op_cfg, sigma, "sigma", PB_KT_NUMBER, .min = 0, .max = 5, .def = "1", .emit_if = emit_if_lognormal, \
          .help = "lognormal: the standard deviation of the time's logarithm (1: p99 ~6x the median).")
static const pb_key spin_keys[] = {OP_KEY, US_KEY("of busy CPU work."), DIST_KEYS};
static const pb_key sleep_keys[] = {OP_KEY, US_KEY("of waiting without CPU."), DIST_KEYS};

static const pb_key_table op_tables[PB_OP__COUNT] = {
    [PB_OP_RANDOM_RESIZED_CROP] = TABLE(rrc_keys, NULL), [PB_OP_RESIZE] = TABLE(resize_keys, NULL),
    [PB_OP_CENTER_CROP] = TABLE(center_crop_keys, NULL), [PB_OP_FLIP] = TABLE(flip_keys, NULL),
    [PB_OP_NORMALIZE] = TABLE(normalize_keys, pb_cfg_check_normalize), [PB_OP_TO_CHW] = TABLE(to_chw_keys, NULL),
    [PB_OP_SPIN] = TABLE(spin_keys, NULL), [PB_OP_SLEEP] = TABLE(sleep_keys, NULL),
};

/* ---- stages ---- */

/* Each type's rows are in its description (src/core/stages/<type>.c); "type" is parsed first, since it
 * picks the rest. */
const pb_key pb_cfg_stage_type_key = PB_CFG_TYPE_KEY;

static const pb_stage_desc *const stage_descs[PB_STAGE__COUNT] = {
    [PB_STAGE_READ] = &pb_stage_desc_read,         [PB_STAGE_DECODE] = &pb_stage_desc_decode,
    [PB_STAGE_MAP] = &pb_stage_desc_map,           [PB_STAGE_SHUFFLE] = &pb_stage_desc_shuffle,
    [PB_STAGE_CACHE] = &pb_stage_desc_cache,       [PB_STAGE_BATCH] = &pb_stage_desc_batch,
    [PB_STAGE_PREFETCH] = &pb_stage_desc_prefetch, [PB_STAGE_H2D] = &pb_stage_desc_h2d,
};

const pb_stage_desc *pb_stage_desc_for(pb_stage_type t) {
  return (int)t >= 0 && t < PB_STAGE__COUNT ? stage_descs[t] : NULL;
}

bool pb_stage_has_knob(pb_stage_type t, const char *key) {
  const pb_stage_desc *d = pb_stage_desc_for(t);
  for (const char *const *k = d ? d->knobs : NULL; k && *k; k++)
    if (strcmp(*k, key) == 0) return true;
  return false;
}

/* ---- device, run, limits ---- */

#define MAX_STEP_MS 3600000.0 /* one hour */

static const pb_key step_dist_keys[] = {
    ROW(pb_step_dist, dist, "dist", PB_KT_ENUM, .choices = dist_names, .flags = PB_KF_REQUIRED,
        .help = "The distribution; only \"normal\"."),
    ROW(pb_step_dist, mean_ms, "mean", PB_KT_NUMBER, .min = 0, .max = MAX_STEP_MS, .flags = PB_KF_REQUIRED,
        .help = "Mean step time in ms."),
    ROW(pb_step_dist, stdev_ms, "stdev", PB_KT_NUMBER, .min = 0, .max = MAX_STEP_MS, .flags = PB_KF_REQUIRED,
        .help = "Standard deviation in ms (draws below 0 count as 0)."),
};
const pb_key_table pb_cfg_step_dist_table = TABLE(step_dist_keys, NULL);

/* 4 x (INT_MAX - 1): an MPI count of float32 elements, one slot kept for the stop flag (allreduce.c). */
#define MAX_GRADIENT_BYTES 8589934584.0

static const pb_key allreduce_keys[] = {
    ROW(pb_allreduce_cfg, mode, "mode", PB_KT_ENUM, .choices = pb_cfg_allreduce_names, .def = "\"none\"",
        .help = "After every step: none; barrier (every rank waits for the others); model (bytes / gb_per_s of "
                "device time, no communication); mpi (a real MPI_Allreduce of `bytes` between the ranks)."),
    ROW(pb_allreduce_cfg, bytes, "bytes", PB_KT_INT, .min = 1, .max = MAX_GRADIENT_BYTES, .flags = PB_KF_OMIT_ZERO,
        .help = "Gradient bytes exchanged per step (model, mpi). Or give params."),
    ROW(pb_allreduce_cfg, params, "params", PB_KT_INT, .min = 1, .max = MAX_GRADIENT_BYTES / 4,
        .flags = PB_KF_OMIT_ZERO, .help = "Model parameters: bytes = params x 4 (float32 gradients)."),
    ROW(pb_allreduce_cfg, gb_per_s, "gb_per_s", PB_KT_NUMBER, .min = MIN_RATE, .max = 1e6, .flags = PB_KF_OMIT_ZERO,
        .help = "Algorithm bandwidth in GB/s (10^9 bytes; nccl-tests' algbw; at least 0.001): the model's time is bytes / gb_per_s. "
                "Required by model; with mpi, the report sets the model beside the measured time."),
};
static const pb_key_table allreduce_table = TABLE(allreduce_keys, pb_cfg_check_allreduce);

static const pb_key device_keys[] = {
    ROW(pb_device_cfg, kind, "kind", PB_KT_ENUM, .choices = device_kind_names, .def = "\"auto\"",
        .help = "auto: a CUDA GPU if one is usable, else the emulated device."),
    ROW(pb_device_cfg, count, "count", PB_KT_INT, .min = 1, .max = PB_MAX_DEVICES,
        .help = "Devices. Default: the number of ids when ids is given, else 1."),
    {.name = "step_ms", .type = PB_KT_CUSTOM, .parse = pb_cfg_parse_step_ms, .emit = pb_cfg_emit_step_ms, .def = "0",
     .min = 0, .max = MAX_STEP_MS,
     .expect = "a number >= 0 or {\"dist\": \"normal\", \"mean\": .., \"stdev\": ..}",
     .help = "Compute time per step in ms (0..3600000), or a normal distribution of it."},
    ROW(pb_device_cfg, h2d_gb_per_s, "h2d_gb_per_s", PB_KT_NUMBER, .min = MIN_RATE, .max = 10000, .def = "25", .help = "Emulated device's copy bandwidth in GB/s (10^9 bytes)."),
    ARR(pb_device_cfg, ids, nids, "ids", PB_KT_INTS, .min = 0, .max = INFINITY, .nmin = 0,
        .nmax = PB_MAX_DEVICES, .def = "[]", .help = "GPU ids to use, each once."),
    ROW(pb_device_cfg, allreduce, "allreduce", PB_KT_OBJECT, .sub = &allreduce_table,
        .help = "Gradient exchange after every step, between the ranks of an mpirun job (or modelled)."),
};
static const pb_key_table device_table = TABLE(device_keys, pb_cfg_check_device);

static const pb_key run_keys[] = {
    ROW(pb_run_cfg, steps, "steps", PB_KT_INT, .min = 1, .max = 1e9, .emit_if = pb_cfg_emit_if_steps,
        .help = "Stop after this many measured steps. Default 100 when none of steps, epochs, duration_s is set."),
    ROW(pb_run_cfg, epochs, "epochs", PB_KT_INT, .min = 1, .max = 1e6, .emit_if = pb_cfg_emit_if_epochs,
        .help = "Stop after this many passes over the dataset."),
    ROW(pb_run_cfg, duration_s, "duration_s", PB_KT_NUMBER, .min = 0, .max = 1e6, .flags = PB_KF_MIN_EXCL,
        .emit_if = pb_cfg_emit_if_duration, .help = "Stop after this many seconds."),
    ROW(pb_run_cfg, warmup_steps, "warmup_steps", PB_KT_INT, .min = 0, .max = 1e6, .def = "5",
        .help = "Steps excluded from every metric."),
    ROW(pb_run_cfg, on_error_fail, "on_error", PB_KT_ENUM, .choices = on_error_names, .def = "\"skip\"",
        .help = "A bad sample: skip it (counted as an error) or fail the run."),
    ROW(pb_run_cfg, max_errors, "max_errors", PB_KT_INT, .min = 0, .max = INFINITY, .def = "0",
        .help = "Fail after this many skipped samples; 0 = no limit."),
    ROW(pb_run_cfg, au_target_pct, "au_target_pct", PB_KT_NUMBER, .min = 0, .max = 100, .def = "0",
        .emit_if = pb_cfg_emit_if_au_target,
        .help = "Pass/fail on accelerator utilization, as MLPerf Storage judges (its presets: 90); 0 = none."),
};
static const pb_key_table run_table = TABLE(run_keys, pb_cfg_check_run);

static const pb_key limits_keys[] = {
    ROW(pb_config, max_memory_mb, "max_memory_mb", PB_KT_INT, .min = 1, .max = 1099511627776.0,
        .def = "8192",
        .help = "Refuse to start when the pipeline's worst-case buffered bytes exceed this many MB (10^6 bytes)."),
};
static const pb_key_table limits_table = TABLE(limits_keys, NULL);

/* ---- top level ---- */

static const pb_key top_keys[] = {
    ROW(pb_config, name, "name", PB_KT_STRING, .min = 1, .max = 127, .flags = PB_KF_FILENAME,
        .help = "Run name, used in the output directory. Default: the config file's base name without .json."),
    ROW(pb_config, about, "about", PB_KT_STRING, .min = 0, .max = 511, .emit_if = emit_if_about,
        .help = "What the config is and where it came from, shown under the report's first line (pipebench twin "
                "writes how the twin was derived)."),
    ROW(pb_config, seed, "seed", PB_KT_INT, .min = 0, .max = INFINITY, .def = "42",
        .help = "Seed of every random choice (at most 10^15, like every unbounded integer)."),
    ROW(pb_config, dataset, "dataset", PB_KT_OBJECT, .sub = &pb_cfg_dataset_table, .help = "The data."),
    {.name = "stages", .type = PB_KT_CUSTOM, .parse = pb_cfg_parse_stages, .emit = pb_cfg_emit_stages,
     .flags = PB_KF_REQUIRED, .expect = "an array of 1 to 32 stage objects",
     .help = "The pipeline in data-flow order."},
    ROW(pb_config, device, "device", PB_KT_OBJECT, .sub = &device_table, .help = "The (real or emulated) accelerator."),
    ROW(pb_config, run, "run", PB_KT_OBJECT, .sub = &run_table, .help = "When to stop, warm-up, errors."),
    {.name = "limits", .type = PB_KT_OBJECT, .off = 0, .sub = &limits_table, .help = "Resource limits."},
};
const pb_key_table pb_cfg_top_table = TABLE(top_keys, NULL);

const pb_key_table *pb_cfg_stage_table(pb_stage_type t) { return stage_descs[t]->options; }

int64_t pb_config_stage_key_max(pb_stage_type t, const char *key) {
  if ((int)t < 0 || t >= PB_STAGE__COUNT) return 0;
  const pb_key_table *tab = stage_descs[t]->options;
  for (int i = 0; i < tab->nkeys; i++)
    if (tab->keys[i].type == PB_KT_INT && strcmp(tab->keys[i].name, key) == 0) return (int64_t)tab->keys[i].max;
  return 0;
}
const pb_key_table *pb_cfg_op_table(pb_op_kind k) { return &op_tables[k]; }

/* Private to the config module.
 *
 * config_schema.c holds one table row per JSON key (name, kind, offsetof into the struct, range, default,
 * help; a stage type's rows are in its description, src/core/stages/<type>.c); config_keys.c is the engine
 * that walks those rows to parse, fill defaults, suggest names for unknown keys and emit the resolved
 * config.  config_sections.c adds what one row cannot say (stage and op lists, step_ms, cross-key rules of
 * a section); config_pipeline.c checks the stage order and config_shape.c infers per-sample shapes, each
 * asking the stage types' descriptions (stage_desc.h) for what is particular to a type; config_set.c
 * applies --set overrides to the cJSON tree; config_msg.c builds the pieces of error messages.  Internal
 * names start with pb_cfg_. */
#ifndef PB_CONFIG_INTERNAL_H
#define PB_CONFIG_INTERNAL_H

#include <stddef.h>

#include "config.h"

/* Longest JSON path a message shows; keys in paths are cut to keep messages on one short line. */
#define PB_CFG_PATH_MAX 256

typedef struct pb_cfg_ctx {
  char file[320]; /* the config file as messages show it: cut short, no control characters */
  pb_err *err;
  pb_config *cfg;
  bool defaults_only; /* filling an absent optional object: its required keys are not required */
} pb_cfg_ctx;

struct pb_key;
typedef int (*pb_key_parse_fn)(pb_cfg_ctx *c, const struct pb_key *k, const cJSON *item, const char *path,
                               void *base);
typedef cJSON *(*pb_key_emit_fn)(const struct pb_key *k, const void *base, const pb_config *cfg);
typedef bool (*pb_key_emit_if_fn)(const void *base);
typedef int (*pb_table_check_fn)(pb_cfg_ctx *c, const cJSON *obj, const char *path, void *base);

typedef enum {
  PB_KT_INT,     /* integer JSON number into a 1-, 4- or 8-byte field */
  PB_KT_NUMBER,  /* double */
  PB_KT_BOOL,    /* true/false */
  PB_KT_ENUM,    /* one of `choices` (a string); stores the index */
  PB_KT_STRING,  /* into a char array; `min`/`max` are lengths */
  PB_KT_RANGE,   /* [lo, hi] into double[2], each in min..max, lo <= hi */
  PB_KT_NUMBERS, /* array of doubles; count into the int at `count_off` */
  PB_KT_INTS,    /* array of integers (element `size` 4 or 8); count into the int at `count_off` */
  PB_KT_OBJECT,  /* a nested object parsed by `sub` at `off` */
  PB_KT_CUSTOM,  /* `parse` and `emit` do it (stage lists, op lists, step_ms) */
} pb_key_type;

enum {
  PB_KF_REQUIRED = 1u << 0,  /* missing is an error */
  PB_KF_MIN_EXCL = 1u << 1,  /* numbers: greater than `min`, not equal */
  PB_KF_IDENT = 1u << 2,     /* strings: only A-Z a-z 0-9 _ - */
  PB_KF_FILENAME = 1u << 3,  /* strings: no '/' or control characters (it names an output directory) */
  PB_KF_OMIT_ZERO = 1u << 4, /* to_json leaves it out when 0 (an optional key without a default) */
  PB_KF_PRESENCE = 1u << 5,  /* objects: set the bool at `count_off` when the object is given */
  PB_KF_SYNTHETIC = 1u << 6, /* dataset: only with format "synthetic" */
  PB_KF_TFRECORD = 1u << 7,  /* dataset: only with format "tfrecord" */
  PB_KF_ZERO_OFF = 1u << 8,  /* numbers: 0 (the feature off) is allowed besides min..max */
};

typedef struct pb_key_table {
  const struct pb_key *keys;
  int nkeys;
  pb_table_check_fn check; /* cross-key rules, run after every row of the object is parsed */
} pb_key_table;

typedef struct pb_key {
  const char *name;
  pb_key_type type;
  size_t off;             /* offsetof the value (objects: of the struct the sub-table describes) */
  size_t size;            /* sizeof the field; arrays: of one element; strings: of the buffer */
  size_t count_off;       /* arrays: offsetof the int count; PB_KF_PRESENCE objects: of the bool */
  int cap;                /* arrays: elements the field holds */
  double min, max;        /* numbers and elements: inclusive range (see PB_KF_MIN_EXCL); strings: length */
  int nmin, nmax;         /* arrays: element count range */
  const char *def;        /* default as JSON text; NULL: required, derived by a check, or left 0 */
  const char *const *choices; /* enums: names by value, NULL-terminated */
  const pb_key_table *sub;    /* objects */
  pb_key_parse_fn parse;      /* custom */
  pb_key_emit_fn emit;        /* custom */
  pb_key_emit_if_fn emit_if;  /* to_json writes the key only when this says so */
  const char *expect;         /* replaces the generated "expected ..." text */
  unsigned flags;
  const char *help;
} pb_key;

/* Row builders for the key tables (config_schema.c, and each stage type's table in src/core/stages/).
 * A scalar row: name, kind, offsetof and sizeof come from the struct field; the rest are designated. */
#define ROW(st, fld, nm, kind, ...) \
  { .name = nm, .type = kind, .off = offsetof(st, fld), .size = sizeof(((st *)0)->fld), __VA_ARGS__ }
/* An array row: elements at `fld`, their count in the int `cnt`. */
#define ARR(st, fld, cnt, nm, kind, ...)                                                                  \
  {                                                                                                      \
    .name = nm, .type = kind, .off = offsetof(st, fld), .size = sizeof(((st *)0)->fld[0]),               \
    .count_off = offsetof(st, cnt), .cap = (int)PB_ARRAY_LEN(((st *)0)->fld), __VA_ARGS__                \
  }
#define TABLE(rows, chk) \
  { rows, (int)PB_ARRAY_LEN(rows), chk }

/* The rows every stage type opens with (name, type) and its "threads" row: any count, or always one. */
#define PB_CFG_TYPE_KEY                                                                                   \
  ROW(pb_stage_cfg, type, "type", PB_KT_ENUM, .choices = pb_cfg_stage_type_names, .flags = PB_KF_REQUIRED,   \
      .help = "The stage type.")
#define PB_CFG_STAGE_COMMON                                                                               \
  ROW(pb_stage_cfg, name, "name", PB_KT_STRING, .min = 1, .max = PB_NAME_LEN - 1, .flags = PB_KF_IDENT,  \
      .help = "Unique stage name, used by --set stages.NAME.KEY. Default: the type."),                   \
      PB_CFG_TYPE_KEY
#define PB_CFG_THREADS_ANY                                                                                \
  ROW(pb_stage_cfg, threads, "threads", PB_KT_INT, .min = 1, .max = PB_MAX_THREADS, .def = "1",          \
      .help = "Worker threads.")
#define PB_CFG_THREADS_ONE(a_type)                                                                        \
  ROW(pb_stage_cfg, threads, "threads", PB_KT_INT, .min = 1, .max = 1, .def = "1",                       \
      .expect = "1: " a_type " stage runs on one thread", .help = "Always 1: " a_type " stage runs on one thread.")

/* Rates are divisors (a time is bytes / rate): every one has a floor a user would still call a rate, so
 * 1e-300 GB/s is refused here instead of overflowing a nanosecond count at run time, and a ceiling past
 * any real hardware.  Times and durations have ceilings likewise (CONFIG.md lists every range); a tiny
 * time is harmless (run.duration_s of 1e-10 is one nanosecond, steps.c). */
#define PB_CFG_MIN_RATE 0.001

/* step_ms given as an object; config_sections.c copies it into pb_device_cfg. */
typedef struct pb_step_dist {
  int dist; /* 0 = normal, the only distribution */
  double mean_ms, stdev_ms;
} pb_step_dist;

/* A number check shared by rows and custom parsers. */
typedef struct pb_num_rule {
  double min, max;
  bool min_excl, integer, zero_off; /* zero_off: 0 is allowed besides min..max (PB_KF_ZERO_OFF) */
  double cap;         /* integers: the largest the field can hold */
  const char *expect; /* NULL: generated from the range */
} pb_num_rule;

/* config_schema.c: the tables and the enum names. */
extern const pb_key_table pb_cfg_top_table, pb_cfg_dataset_table;
extern const pb_key_table pb_cfg_step_dist_table;
extern const pb_key pb_cfg_stage_type_key, pb_cfg_op_kind_key;
extern const char *const pb_cfg_stage_type_names[], *const pb_cfg_op_names[], *const pb_cfg_dtype_names[],
    *const pb_cfg_format_names[], *const pb_cfg_payload_names[], *const pb_cfg_allreduce_names[],
    *const pb_cfg_decode_scale_names[];
const pb_key_table *pb_cfg_stage_table(pb_stage_type t);
const pb_key_table *pb_cfg_op_table(pb_op_kind k);

/* config_keys.c: the engine. */
int pb_cfg_keys_parse(pb_cfg_ctx *c, const pb_key_table *t, const cJSON *obj, const char *path, void *base);
int pb_cfg_key_parse(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base);
int pb_cfg_key_missing(pb_cfg_ctx *c, const pb_key *k, const char *path);
cJSON *pb_cfg_keys_emit(const pb_key_table *t, const void *base, const pb_config *cfg);
const char *pb_cfg_key_expect(const pb_key *k, char *buf, size_t len);
int pb_cfg_check_number(pb_cfg_ctx *c, const cJSON *item, const char *path, const pb_num_rule *r, double *out);
const char *pb_cfg_range_text(const pb_num_rule *r, char *buf, size_t len);

/* config_msg.c: message pieces. */
int pb_cfg_fail(pb_cfg_ctx *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int pb_cfg_type_error(pb_cfg_ctx *c, const char *path, const cJSON *item, const char *expect);
const char *pb_cfg_describe(const cJSON *item, char *buf, size_t len);
const char *pb_cfg_kind(const cJSON *item);
const char *pb_cfg_num(double v, char *buf, size_t len);
const char *pb_cfg_quote(const char *s, char *buf, size_t len);
const char *pb_cfg_join(const char *const *words, int n, char *buf, size_t len);
const char *pb_cfg_suggest(const char *word, const char *const *cands, int n, char *buf, size_t len);
void pb_cfg_path_key(char *out, const char *parent, const char *key);
void pb_cfg_path_index(char *out, const char *parent, int index);

/* config_sections.c: custom parsers and section checks that the tables point at. */
int pb_cfg_parse_stages(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base);
cJSON *pb_cfg_emit_stages(const pb_key *k, const void *base, const pb_config *cfg);
int pb_cfg_parse_ops(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base);
cJSON *pb_cfg_emit_ops(const pb_key *k, const void *base, const pb_config *cfg);
int pb_cfg_parse_step_ms(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base);
cJSON *pb_cfg_emit_step_ms(const pb_key *k, const void *base, const pb_config *cfg);
int pb_cfg_check_dataset(pb_cfg_ctx *c, const cJSON *obj, const char *path, void *base);
int pb_cfg_check_device(pb_cfg_ctx *c, const cJSON *obj, const char *path, void *base);
int pb_cfg_check_allreduce(pb_cfg_ctx *c, const cJSON *obj, const char *path, void *base);
int pb_cfg_check_run(pb_cfg_ctx *c, const cJSON *obj, const char *path, void *base);
int pb_cfg_check_normalize(pb_cfg_ctx *c, const cJSON *obj, const char *path, void *base);
int pb_cfg_parse_extensions(pb_cfg_ctx *c, const pb_key *k, const cJSON *item, const char *path, void *base);
cJSON *pb_cfg_emit_extensions(const pb_key *k, const void *base, const pb_config *cfg);
bool pb_cfg_emit_if_extensions(const void *dataset);
bool pb_cfg_emit_if_synthetic(const void *dataset);
bool pb_cfg_emit_if_tfrecord(const void *dataset);
bool pb_cfg_emit_if_steps(const void *run);
bool pb_cfg_emit_if_au_target(const void *run);
bool pb_cfg_emit_if_epochs(const void *run);
bool pb_cfg_emit_if_duration(const void *run);

/* config_pipeline.c, config_shape.c, config_set.c */
int pb_cfg_check_pipeline(pb_cfg_ctx *c);
/* stages[i]'s placement failed: "<file>: stages[i].type: <what> (expected <expect>)". */
int pb_cfg_stage_fail(pb_cfg_ctx *c, int i, const char *what, const char *expect);
/* A read or decode stage at stages[i] needs files: refused with dataset.format "synthetic". */
int pb_cfg_needs_files(pb_cfg_ctx *c, int i);
int pb_cfg_infer_shapes(pb_cfg_ctx *c);
/* Shapes are built in place with memset, padding included, so two equal configs are equal bytes. */
void pb_cfg_set_shape(pb_shape *s, int ndims, const int64_t *dims, pb_dtype dtype);
/* Variable-size bytes (an encoded payload): no dims, not known. */
void pb_cfg_set_encoded_bytes(pb_shape *s);
int pb_cfg_apply_sets(cJSON *root, const char *const *sets, int nsets, pb_err *err);
/* PATH of a --set in one spelling per key of `root` (see pb_config_canonical_paths); out is always set. */
void pb_cfg_canonical_path(const cJSON *root, const char *path, char *out, size_t len);

/* The first byte of `text` that is not well-formed UTF-8, or NULL (config.c). */
const char *pb_cfg_invalid_utf8(const char *text);

#endif

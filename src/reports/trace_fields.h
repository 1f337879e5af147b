/* The trace.json codec's inside (docs/TRACE.md), shared by its files:
 *
 *   trace_fields.c  the field tables: every key of the "pipebench" header line, once, with its type, its
 *                   place in pb_record and what the loader accepts; the value encoders; the table writer
 *   trace_json.c    the header writer (the tables, and the parts that are not plain fields) and
 *                   pb_trace_write_file
 *   trace_chrome.c  the Chrome Trace Event view: the "traceEvents" lines
 *   trace_values.c  the loader's value checks and the table reader
 *   trace_load.c    the header's parts that are not plain fields, read back
 *   trace_stream.c  the line-by-line reader: header line, events, pb_trace_load_file
 *
 * One table drives both directions, so a key is spelled once and the writer and the loader cannot
 * disagree on its name, type or order. */
#ifndef PB_TRACE_FIELDS_H
#define PB_TRACE_FIELDS_H

#include "record.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define PB_TRACE_FORMAT 1
#define PB_TRACE_EXACT_MAX (1ull << 53) /* integers below this are exact as JSON numbers (doubles) */
#define PB_TRACE_BATCH_BIT (1ull << 63)
#define PB_TRACE_PID_HOST 1
#define PB_TRACE_PID_DEVICE 2
#define PB_TRACE_H2D_TID_BASE (PB_MAX_DEVICES + 1) /* device d's copies: tid H2D_TID_BASE + d (own track) */
#define PB_TRACE_STEP_FIELDS 11                     /* a step's array without the gradient exchange */

/* The fixed lines around the header and the events (the loader compares them whole). */
extern const char pb_trace_line1[], pb_trace_line2[], pb_trace_line3[], pb_trace_end[];

/* --- the loader's state (trace_stream.c owns it; the value checks report through it) --- */

typedef struct pb_trace_loader {
  const char *path;
  long line;
  pb_err *err;
  pb_record *rec;
  /* tid -> worker, and how many events each has received */
  int nworkers;
  pb_worker_trace **by_tid; /* [1..nworkers] */
  uint32_t *filled;
  /* the header's "steps" array, cut out of the line before it is parsed (NULL: parse it as JSON) */
  const char *steps_text;
  size_t steps_len;
  long steps_count; /* its elements (cut_steps counts them); -1: not an array of arrays */
} pb_trace_loader;

/* --- the field tables --- */

typedef enum pb_trace_kind {
  PB_TF_U64,     /* uint64_t: a number below 2^53, else a decimal string */
  PB_TF_U64_STR, /* uint64_t: always a decimal string (clock readings) */
  PB_TF_REL,     /* uint64_t time: written relative to start_ns as a signed integer */
  PB_TF_DBL,     /* double: %.17g, or "nan"/"inf"/"-inf", so that it reads back bit-identical */
  PB_TF_NUM,     /* double: cJSON's own number printing (a config value, not a measurement) */
  PB_TF_BOOL,    /* bool */
  PB_TF_INT,     /* int in lo..hi */
  PB_TF_STR,     /* char[size] */
  PB_TF_OBJ,     /* an object: the fields of sub, at base + off */
  PB_TF_CUSTOM,  /* written and read by the field's own hooks */
} pb_trace_kind;

enum {
  PB_TF_OPTIONAL = 1 << 0, /* may be absent on load (older traces): the value keeps its default */
  PB_TF_IF_PREV = 1 << 1,  /* read only when the field before it was present, and then required */
  PB_TF_FINITE_NONNEG = 1 << 2, /* on load: a finite number >= 0 */
  PB_TF_AFTER_NEXT = 1 << 3, /* read after the field that follows it (its range depends on that one) */
};

struct pb_trace_table;

typedef struct pb_trace_field {
  const char *name;
  pb_trace_kind kind;
  size_t off;                           /* of the value in the struct the table describes */
  size_t size;                          /* STR: the buffer's bytes */
  int lo, hi;                           /* INT: what the loader accepts */
  unsigned flags;                       /* PB_TF_* */
  int (*hi_of)(const pb_record *rec);   /* INT: hi from what was read before (NULL: hi) */
  const struct pb_trace_table *sub;     /* OBJ */
  bool (*omit)(const pb_record *rec, const void *base); /* not written when it says so (NULL: always) */
  /* CUSTOM: the hooks get base + off; v NULL when absent; load NULL: written only */
  cJSON *(*write)(const pb_record *rec, const void *base);
  int (*load)(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
  /* after it was read: its range, or its relation to fields read before it */
  int (*check)(pb_trace_loader *l, const struct pb_trace_field *f, void *base, const char *where);
} pb_trace_field;

typedef struct pb_trace_table {
  const pb_trace_field *fields;
  size_t n;
  const char *shape; /* what a value that is not an object should have been ("{have, why, ...}"); NULL: an object */
  void (*defaults)(pb_record *rec, void *base);                         /* before reading (also when absent) */
  int (*finish)(pb_trace_loader *l, void *base, const char *where);     /* after reading all of them */
} pb_trace_table;

extern const pb_trace_table pb_trace_header_table; /* the "pipebench" line */
extern const pb_trace_table pb_trace_stage_table;  /* one of its stages[] */
extern const pb_trace_table pb_trace_ctr_table;    /* pb_counters, every field */
extern const pb_trace_table pb_trace_import_advice_table; /* one of source.advice[] (pb_import_advice) */
extern const pb_trace_table pb_trace_import_host_table;   /* one of source.hosts[] (pb_import_host) */

/* --- writing (trace_fields.c, trace_json.c) --- */

cJSON *pb_trace_j_u64(uint64_t v);
cJSON *pb_trace_j_rel(uint64_t abs_ns, uint64_t start_ns);
cJSON *pb_trace_j_dbl(double v);
/* The object of a table's fields of base, in the table's order; NULL when out of memory. */
cJSON *pb_trace_write_table(const pb_trace_table *t, const pb_record *rec, const void *base);

/* The header parts that are not plain fields (trace_json.c). */
cJSON *pb_trace_write_config(const pb_record *rec, const void *base);
cJSON *pb_trace_write_steps(const pb_record *rec, const void *base);
cJSON *pb_trace_write_stages(const pb_record *rec, const void *base);
cJSON *pb_trace_write_hist_buckets(const pb_record *rec, const void *base);
cJSON *pb_trace_write_first_errors(const pb_record *rec, const void *base);
cJSON *pb_trace_write_import_advice(const pb_record *rec, const void *base); /* base: the pb_record_source */
cJSON *pb_trace_write_import_hosts(const pb_record *rec, const void *base);
cJSON *pb_trace_write_workers(const pb_record *rec, const void *base);
cJSON *pb_trace_write_queue_fill(const pb_record *rec, const void *base);

/* The "traceEvents" lines (trace_chrome.c): 0, or -ECANCELED when a signal's time budget ran out. */
int pb_trace_write_events(FILE *f, const pb_record *rec);

/* --- reading (trace_values.c, trace_load.c) --- */

/* "<path>: line N: <what> (expected <what>)": fmt carries both parts.  Returns -EINVAL. */
__attribute__((format(printf, 2, 3))) int pb_trace_bad(pb_trace_loader *l, const char *fmt, ...);

const cJSON *pb_trace_member(const cJSON *o, const char *key);
int pb_trace_v_u64(pb_trace_loader *l, const cJSON *v, const char *where, uint64_t *out);
int pb_trace_v_i64(pb_trace_loader *l, const cJSON *v, const char *where, int64_t *out);
int pb_trace_v_int(pb_trace_loader *l, const cJSON *v, const char *where, int lo, int hi, int *out);
int pb_trace_v_dbl(pb_trace_loader *l, const cJSON *v, const char *where, double *out);
int pb_trace_v_bool(pb_trace_loader *l, const cJSON *v, const char *where, bool *out);
int pb_trace_v_str(pb_trace_loader *l, const cJSON *v, const char *where, char *buf, size_t len);
int pb_trace_v_array(pb_trace_loader *l, const cJSON *v, const char *where, int max, int *n);
int pb_trace_v_object(pb_trace_loader *l, const cJSON *v, const char *where);

/* Reads the table's fields of the object v (at `where`) into base.  v NULL: only the defaults, for an
 * optional object.  0 or -errno with l->err set. */
int pb_trace_load_table(pb_trace_loader *l, const pb_trace_table *t, const cJSON *v, void *base,
                        const char *where);

/* The header parts that are not plain fields, and the checks between fields (trace_load.c). */
int pb_trace_load_format(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
int pb_trace_load_config(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
int pb_trace_load_steps(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
int pb_trace_load_stages(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
int pb_trace_load_hist_buckets(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
int pb_trace_load_cpu_delay(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
int pb_trace_load_first_errors(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
int pb_trace_load_import_advice(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
int pb_trace_load_import_hosts(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
int pb_trace_load_queue_fill(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
int pb_trace_load_device_ids(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
int pb_trace_load_device_names(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
int pb_trace_load_workers(pb_trace_loader *l, const cJSON *v, void *base, const char *where);
int pb_trace_check_window(pb_trace_loader *l, const pb_trace_field *f, void *base, const char *where);
int pb_trace_check_cpu_s(pb_trace_loader *l, const pb_trace_field *f, void *base, const char *where);
int pb_trace_check_cores(pb_trace_loader *l, const pb_trace_field *f, void *base, const char *where);
int pb_trace_check_quota(pb_trace_loader *l, const pb_trace_field *f, void *base, const char *where);
int pb_trace_check_stage_type(pb_trace_loader *l, const pb_trace_field *f, void *base, const char *where);
int pb_trace_ceilings_finish(pb_trace_loader *l, void *base, const char *where);

/* The header line's "steps" text cut out before parsing (trace_stream.c calls it; trace_load.c reads it). */
size_t pb_trace_cut_steps(pb_trace_loader *l, char *line, size_t len, char **held);

#endif

/* The trace.json header's fields, each spelled once (trace_fields.h): the tables below drive both
 * pb_trace_write_table (here) and pb_trace_load_table (trace_values.c).  A table lists its object's keys in
 * the order they are written; docs/TRACE.md describes them. */
#include "trace_fields.h"
#include "json_util.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

const char pb_trace_line1[] = "{\"displayTimeUnit\":\"ns\",";
const char pb_trace_line2[] = "\"pipebench\":";
const char pb_trace_line3[] = "\"traceEvents\":[";
const char pb_trace_end[] = "]}";

/* ---- value encoders ---- */

/* A uint64: a number below 2^53, else a decimal string. */
cJSON *pb_trace_j_u64(uint64_t v) {
  if (v < PB_TRACE_EXACT_MAX) return cJSON_CreateNumber((double)v);
  char b[24];
  snprintf(b, sizeof b, "%llu", (unsigned long long)v);
  return cJSON_CreateString(b);
}

static cJSON *j_u64_str(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "%llu", (unsigned long long)v);
  return cJSON_CreateString(b);
}

/* A time relative to start_ns, as a signed integer (wrapping arithmetic, so any value round-trips). */
cJSON *pb_trace_j_rel(uint64_t abs_ns, uint64_t start_ns) {
  int64_t d = (int64_t)(abs_ns - start_ns);
  if (d > -(int64_t)PB_TRACE_EXACT_MAX && d < (int64_t)PB_TRACE_EXACT_MAX) return cJSON_CreateNumber((double)d);
  char b[24];
  snprintf(b, sizeof b, "%lld", (long long)d);
  return cJSON_CreateString(b);
}

/* A double that reads back bit-identical: %.17g, or "nan"/"inf"/"-inf" as strings. */
cJSON *pb_trace_j_dbl(double v) {
  if (!isfinite(v)) return cJSON_CreateString(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
  char b[40];
  snprintf(b, sizeof b, "%.17g", v);
  return cJSON_CreateRaw(b);
}

/* ---- the writer of a table ---- */

static cJSON *write_field(const pb_trace_field *f, const pb_record *rec, const void *base) {
  const char *p = (const char *)base + f->off;
  switch (f->kind) {
    case PB_TF_U64: return pb_trace_j_u64(*(const uint64_t *)p);
    case PB_TF_U64_STR: return j_u64_str(*(const uint64_t *)p);
    case PB_TF_REL: return pb_trace_j_rel(*(const uint64_t *)p, rec->start_ns);
    case PB_TF_DBL: return pb_trace_j_dbl(*(const double *)p);
    case PB_TF_NUM: return cJSON_CreateNumber(*(const double *)p);
    case PB_TF_BOOL: return cJSON_CreateBool(*(const bool *)p);
    case PB_TF_INT: return cJSON_CreateNumber(*(const int *)p);
    case PB_TF_STR: return cJSON_CreateString(p);
    case PB_TF_OBJ: return pb_trace_write_table(f->sub, rec, p);
    case PB_TF_CUSTOM: return f->write(rec, p);
  }
  return NULL;
}

cJSON *pb_trace_write_table(const pb_trace_table *t, const pb_record *rec, const void *base) {
  cJSON *o = cJSON_CreateObject();
  bool ok = true;
  for (size_t i = 0; ok && i < t->n; i++) {
    const pb_trace_field *f = &t->fields[i];
    if (!f->omit || !f->omit(rec, base)) pb_json_put(o, f->name, write_field(f, rec, base), &ok);
  }
  return pb_json_finish(o, ok);
}

/* ---- the small custom parts ---- */

static cJSON *j_format(const pb_record *rec, const void *base) {
  (void)rec, (void)base;
  return cJSON_CreateNumber(PB_TRACE_FORMAT);
}

static cJSON *j_version(const pb_record *rec, const void *base) {
  (void)rec, (void)base;
  return cJSON_CreateString(PB_VERSION);
}

static int device_list_len(const pb_record *rec) {
  return rec->device_count > 0 && rec->device_count <= PB_MAX_DEVICES ? rec->device_count : 0;
}

static cJSON *j_device_ids(const pb_record *rec, const void *base) {
  (void)base;
  return cJSON_CreateIntArray(rec->device_ids, device_list_len(rec));
}

static cJSON *j_device_names(const pb_record *rec, const void *base) {
  (void)base;
  cJSON *names = cJSON_CreateArray();
  bool ok = true;
  for (int k = 0; ok && k < device_list_len(rec); k++)
    pb_json_push(names, cJSON_CreateString(rec->device_names[k]), &ok);
  return pb_json_finish(names, ok);
}

/* -1 (unknown) is null. */
static cJSON *j_cpu_delay(const pb_record *rec, const void *base) {
  (void)rec;
  int64_t v = *(const int64_t *)base;
  return v < 0 ? cJSON_CreateNull() : pb_trace_j_u64((uint64_t)v);
}

static bool single_process(const pb_record *rec, const void *base) {
  (void)base;
  return rec->world_size <= 1;
}

static bool no_timeline(const pb_record *rec, const void *base) {
  (void)base;
  return !rec->timeline;
}

static bool untraced_stage(const pb_record *rec, const void *base) {
  (void)rec;
  return !((const pb_stage_rec *)base)->workers;
}

static int cfg_last_index(const pb_record *rec) { return rec->cfg->nstages - 1; }
static int last_rank(const pb_record *rec) { return rec->world_size - 1; }

/* ---- defaults of what older traces lack ---- */

/* Then: every online CPU, nothing taken by others, no file count (traces before issue 31). */
static void machine_defaults(pb_record *rec, void *base) {
  (void)base;
  rec->cores_usable = rec->cores_affinity = rec->ncpu;
  rec->cores_quota = NAN;
}

static void device_defaults(pb_record *rec, void *base) {
  (void)base;
  rec->idle_pct_cuda_events = NAN;
}

static void job_defaults(pb_record *rec, void *base) {
  (void)base;
  rec->rank = 0;
  rec->world_size = 1;
}

static void ceilings_defaults(pb_record *rec, void *base) {
  (void)rec;
  pb_ceilings_none(base, "a trace written before calibration existed");
}

static void stage_defaults(pb_record *rec, void *base) {
  (void)rec;
  ((pb_stage_rec *)base)->cpu_delay_ns = -1;
}

static void hist_defaults(pb_record *rec, void *base) {
  (void)rec;
  pb_hist_reset(base);
}

/* ---- the tables ---- */

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define F(key, type, ...) {.name = key, .kind = PB_TF_##type, __VA_ARGS__}
#define TABLE(f, ...) {.fields = f, .n = N(f), __VA_ARGS__}

/* Every pb_counters field, by name.  The assertion catches a field added to pb_counters but not here. */
#define CTR(f) {.name = #f, .kind = PB_TF_U64, .off = offsetof(pb_counters, f)}
static const pb_trace_field k_ctr[] = {
    CTR(calls),
    CTR(samples_in),
    CTR(samples_out),
    CTR(busy_ns),
    CTR(wait_in_ns),
    CTR(blocked_out_ns),
    CTR(busy_total_ns),
    CTR(bytes_in),
    CTR(bytes_out),
    CTR(samples_out_total),
    CTR(samples_dropped_total),
    CTR(samples_in_flight),
    CTR(samples_error_total),
    CTR(files_read_total),
    CTR(samples_replayed_total),
    {.name = "read_ops",
     .kind = PB_TF_U64,
     .off = offsetof(pb_counters, read_ops),
     .flags = PB_TF_OPTIONAL}, /* issue 34 */
};
#undef CTR
_Static_assert(N(k_ctr) * sizeof(uint64_t) == sizeof(pb_counters),
               "pb_counters changed: add the new field to k_ctr in src/reports/trace_fields.c");
const pb_trace_table pb_trace_ctr_table = TABLE(k_ctr);

#define HIST(f) {.name = #f, .kind = PB_TF_U64, .off = offsetof(pb_hist, f)}
static const pb_trace_field k_hist[] = {
    HIST(count), HIST(sum_ns), HIST(min_ns), HIST(max_ns),
    F("buckets", CUSTOM, .write = pb_trace_write_hist_buckets, .load = pb_trace_load_hist_buckets),
};
#undef HIST
static const pb_trace_table k_hist_table = TABLE(k_hist, .defaults = hist_defaults);

#define S(f) .off = offsetof(pb_stage_rec, f)
#define SSTR(f) S(f), .size = sizeof(((pb_stage_rec *)0)->f)
static const pb_trace_field k_stage[] = {
    F("name", STR, SSTR(name)),
    F("type", STR, SSTR(type)),
    F("threads", INT, S(threads), .lo = 0, .hi = PB_MAX_THREADS),
    F("cfg_index", INT, S(cfg_index), .lo = -1, .hi_of = cfg_last_index),
    /* a row is its config stage (the analysis reads that stage's settings through cfg_index) */
    F("is_source", BOOL, S(is_source), .check = pb_trace_check_stage_type),
    F("skipped", BOOL, S(skipped)),
    F("batched", BOOL, S(batched)),
    F("ctr", OBJ, S(ctr), .sub = &pb_trace_ctr_table),
    F("hist", OBJ, S(hist), .sub = &k_hist_table),
    F("cpu_ns", U64, S(cpu_ns)),
    F("cpu_delay_ns", CUSTOM, S(cpu_delay_ns), .flags = PB_TF_OPTIONAL, .write = j_cpu_delay,
     .load = pb_trace_load_cpu_delay),
    F("queue_mean_fill", DBL, S(queue_mean_fill)),
    F("queue_capacity", INT, S(queue_capacity), .lo = 0, .hi = INT32_MAX),
    /* traced rows only; null reads as absent */
    F("workers", CUSTOM, .flags = PB_TF_OPTIONAL, .omit = untraced_stage, .write = pb_trace_write_workers,
     .load = pb_trace_load_workers),
};
#undef S
#undef SSTR
const pb_trace_table pb_trace_stage_table = TABLE(k_stage, .defaults = stage_defaults);

#define R(f) .off = offsetof(pb_record, f)
#define RSTR(f) R(f), .size = sizeof(((pb_record *)0)->f)
#define K(f) .off = offsetof(pb_step_kernel_check, f)
static const pb_trace_field k_step_kernel[] = {
    F("measured", BOOL, K(measured)),
    F("target_ms", DBL, K(target_ms)),
    F("measured_ms", DBL, K(measured_ms)),
    F("error_pct", DBL, K(error_pct)),
};
#undef K
static const pb_trace_table k_step_kernel_table = TABLE(k_step_kernel);

/* The GPU side (ids onwards) is optional: traces from before it existed still load. */
static const pb_trace_field k_device[] = {
    F("kind", STR, RSTR(device_kind)),
    F("name", STR, RSTR(device_name)),
    F("count", INT, R(device_count), .lo = 1, .hi = PB_MAX_DEVICES),
    F("timing_source", STR, RSTR(timing_source)),
    F("ids", CUSTOM, .flags = PB_TF_OPTIONAL, .write = j_device_ids, .load = pb_trace_load_device_ids),
    F("names", CUSTOM, .flags = PB_TF_OPTIONAL, .write = j_device_names, .load = pb_trace_load_device_names),
    F("timing_source_reason", STR, RSTR(timing_source_reason), .flags = PB_TF_OPTIONAL),
    F("fallback", STR, RSTR(device_fallback), .flags = PB_TF_OPTIONAL), /* since issue 34 */
    F("step_kernel", OBJ, R(step_kernel), .flags = PB_TF_OPTIONAL, .sub = &k_step_kernel_table),
    F("idle_pct_cuda_events", DBL, R(idle_pct_cuda_events), .flags = PB_TF_OPTIONAL),
    F("gpu_timestamps_dropped", U64, R(gpu_timestamps_dropped), .flags = PB_TF_OPTIONAL),
};
static const pb_trace_table k_device_table = TABLE(k_device, .defaults = device_defaults);

/* One rank of an mpirun job; absent: a single process. */
static const pb_trace_field k_job[] = {
    F("rank", INT, R(rank), .lo = 0, .hi_of = last_rank, .flags = PB_TF_AFTER_NEXT),
    F("world_size", INT, R(world_size), .lo = 1, .hi = INT32_MAX),
    F("peer_stopped", BOOL, R(peer_stopped)),
};
static const pb_trace_table k_job_table = TABLE(k_job, .defaults = job_defaults);

/* Traces before issue 31 lack it; cores_quota was written since the quota was kept apart, with
 * cores_affinity. */
static const pb_trace_field k_machine[] = {
    F("cores_usable", DBL, R(cores_usable), .check = pb_trace_check_cores), /* 0: not probed */
    F("cores_affinity", DBL, R(cores_affinity), .flags = PB_TF_OPTIONAL, .check = pb_trace_check_cores),
    F("cores_quota", DBL, R(cores_quota), .flags = PB_TF_IF_PREV, .check = pb_trace_check_quota),
    F("cores_taken_by_others", DBL, R(cores_taken_by_others), .check = pb_trace_check_cores),
    F("limited_by", STR, RSTR(cores_limited_by)),
    F("dataset_files", U64, R(dataset_files)),
    F("dataset_files_skipped", U64, R(dataset_files_skipped), .flags = PB_TF_OPTIONAL), /* since issue 34 */
};
static const pb_trace_table k_machine_table =
    TABLE(k_machine, .shape = "{cores_usable, ...}", .defaults = machine_defaults);

/* Traces before issue 9 lack it (the report then says peak_rss_bytes null). */
static const pb_trace_field k_memory[] = {
    F("planned_bytes", U64, R(planned_bytes)),
    F("planned_queues_empty_bytes", U64, R(planned_queues_empty_bytes), .flags = PB_TF_OPTIONAL), /* issue 34 */
    F("trace_bytes", U64, R(trace_bytes)),
    F("peak_rss_bytes", U64, R(peak_rss_bytes)),
};
static const pb_trace_table k_memory_table = TABLE(k_memory, .shape = "{planned_bytes, ...}");

/* Traces before issue 10 lack it (the report then has no efficiency). */
#define C(f) .off = offsetof(pb_ceilings, f)
#define CSTR(f) C(f), .size = sizeof(((pb_ceilings *)0)->f)
static const pb_trace_field k_ceilings[] = {
    F("have", BOOL, C(have)),
    F("why", STR, CSTR(why)),
    F("source", STR, CSTR(source)),
    F("measured_at", STR, CSTR(measured_at)),
    F("cores", INT, C(cores), .lo = 0, .hi = 1 << 20),
    F("memcpy_gb_per_s", DBL, C(memcpy_gb_per_s)),
    F("h2d_gb_per_s", DBL, C(h2d_gb_per_s)),
    F("dataset", BOOL, C(dataset)),
    F("decode_images_per_s", DBL, C(decode_images_per_s)),
    F("read_mb_per_s", DBL, C(read_mb_per_s)),
    F("read_mode", STR, CSTR(read_mode)),
    /* the read stage's emulation: optional (older traces), never negative */
    F("read_latency_us", NUM, C(read_latency_us), .flags = PB_TF_OPTIONAL | PB_TF_FINITE_NONNEG),
    F("read_cap_mb_per_s", NUM, C(read_cap_mb_per_s), .flags = PB_TF_OPTIONAL | PB_TF_FINITE_NONNEG),
    F("read_block_bytes", INT, C(read_block_bytes), .lo = 0, .hi = INT32_MAX, .flags = PB_TF_OPTIONAL),
};
#undef C
#undef CSTR
static const pb_trace_table k_ceilings_table = TABLE(k_ceilings, .shape = "{have, why, ...}",
                                                     .defaults = ceilings_defaults,
                                                     .finish = pb_trace_ceilings_finish);

/* An imported capture's origin (issue 35): absent in a run's trace. */
#define SRC(t, f) .off = offsetof(t, f)
#define SRCSTR(t, f) SRC(t, f), .size = sizeof(((t *)0)->f)
static const pb_trace_field k_import_advice[] = {
    F("text", STR, SRCSTR(pb_import_advice, text)),
    F("predicted_per_s", DBL, SRC(pb_import_advice, predicted_per_s)),
};
const pb_trace_table pb_trace_import_advice_table = TABLE(k_import_advice);

static const pb_trace_field k_import_host[] = {
    F("host", STR, SRCSTR(pb_import_host, host)),
    F("capture", STR, SRCSTR(pb_import_host, capture)),
    F("steps", U64, SRC(pb_import_host, steps)),
    F("input_bound_pct", DBL, SRC(pb_import_host, input_bound_pct)),
    F("samples_per_s", DBL, SRC(pb_import_host, samples_per_s)),
    F("bottleneck", STR, SRCSTR(pb_import_host, bottleneck)),
};
const pb_trace_table pb_trace_import_host_table = TABLE(k_import_host);

static const pb_trace_field k_source[] = {
    F("tool", STR, SRCSTR(pb_record_source, tool)),
    F("capture", STR, SRCSTR(pb_record_source, capture)),
    F("host", STR, SRCSTR(pb_record_source, host)),
    F("step_marker", STR, SRCSTR(pb_record_source, step_marker)),
    F("verdict", STR, SRCSTR(pb_record_source, verdict)),
    F("advice", CUSTOM, .write = pb_trace_write_import_advice, .load = pb_trace_load_import_advice),
    F("host_count", INT, SRC(pb_record_source, nhosts), .lo = 0, .hi = INT32_MAX),
    F("gpu_devices", INT, SRC(pb_record_source, gpu_devices), .lo = 0, .hi = INT32_MAX, .flags = PB_TF_OPTIONAL),
    F("gpu_kernel_busy_pct", DBL, SRC(pb_record_source, gpu_kernel_busy_pct), .flags = PB_TF_OPTIONAL),
    F("work_drift_pct", DBL, SRC(pb_record_source, work_drift_pct), .flags = PB_TF_OPTIONAL),
    F("hosts", CUSTOM, .write = pb_trace_write_import_hosts, .load = pb_trace_load_import_hosts),
};
#undef SRC
#undef SRCSTR
/* Then: the drift not measured (traces before it was read). */
static void source_defaults(pb_record *rec, void *base) {
  (void)base;
  rec->source.work_drift_pct = NAN;
}
static const pb_trace_table k_source_table = TABLE(k_source, .defaults = source_defaults);

static bool not_imported(const pb_record *rec, const void *base) {
  (void)base;
  return !rec->source.tool[0];
}

/* The "pipebench" line: the record without its events. */
static const pb_trace_field k_header[] = {
    F("format", CUSTOM, .write = j_format, .load = pb_trace_load_format),
    F("version", CUSTOM, .write = j_version), /* not read: format says what the layout is */
    F("config", CUSTOM, .write = pb_trace_write_config, .load = pb_trace_load_config),
    F("synthetic", BOOL, R(synthetic)),
    F("interrupted", BOOL, R(interrupted)),
    F("device", OBJ, .sub = &k_device_table),
    F("start_ns", U64_STR, R(start_ns)),
    F("start_unix_ns", U64_STR, R(start_unix_ns), .flags = PB_TF_OPTIONAL), /* traces before issue 8 */
    F("window_start_ns", REL, R(window_start_ns)),
    F("window_end_ns", REL, R(window_end_ns), .check = pb_trace_check_window),
    F("measured_count", U64, R(measured_count)),
    F("samples_consumed", U64, R(samples_consumed)),
    F("samples_failed", U64, R(samples_failed)),
    F("steps_failed", BOOL, R(steps_failed)),
    F("steps_failure", STR, RSTR(steps_failure)),
    F("job", OBJ, .flags = PB_TF_OPTIONAL, .sub = &k_job_table, .omit = single_process),
    F("steps", CUSTOM, .write = pb_trace_write_steps, .load = pb_trace_load_steps),
    F("stages", CUSTOM, .write = pb_trace_write_stages, .load = pb_trace_load_stages),
    F("queued_samples", U64, R(queued_samples)),
    F("first_errors", CUSTOM, .write = pb_trace_write_first_errors, .load = pb_trace_load_first_errors),
    F("cpu_s", DBL, R(cpu_s), .check = pb_trace_check_cpu_s),
    F("ncpu", INT, R(ncpu), .lo = 0, .hi = INT32_MAX),
    F("machine", OBJ, .flags = PB_TF_OPTIONAL, .sub = &k_machine_table),
    F("traced", BOOL, R(traced)),
    F("memory", OBJ, .flags = PB_TF_OPTIONAL, .sub = &k_memory_table),
    F("ceilings", OBJ, R(ceilings), .flags = PB_TF_OPTIONAL, .sub = &k_ceilings_table),
    F("queue_fill", CUSTOM, .flags = PB_TF_OPTIONAL, .omit = no_timeline, .write = pb_trace_write_queue_fill,
      .load = pb_trace_load_queue_fill),
    F("source", OBJ, R(source), .flags = PB_TF_OPTIONAL, .sub = &k_source_table, .omit = not_imported), /* issue 35 */
};
#undef R
#undef RSTR
const pb_trace_table pb_trace_header_table = TABLE(k_header);

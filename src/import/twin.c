/* A twin of an imported tf.data pipeline (twin.h). */
#include "twin.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define LOGNORMAL_FROM_CV 0.25 /* a spread this wide is drawn, not constant */
#define MIN_SPIN_NS 1000       /* an iterator's own time under 1 us is left out (the engine's hop costs that) */

typedef struct twin {
  const pb_tfdata *t;
  cJSON *stages;
  pb_twin_notes *notes;
  int64_t batch_size;   /* the first batching iterator's, -1 before it */
  bool after_batch;
} twin;

static void note(twin *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(twin *w, const char *fmt, ...) {
  if (w->notes->n == PB_TWIN_MAX_NOTES) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->notes->line[w->notes->n++], sizeof w->notes->line[0], fmt, ap);
  va_end(ap);
}

/* v within 1 and the config's largest value of that stage key, so that the twin loads whatever the capture says. */
static int64_t in_range(pb_stage_type type, const char *key, int64_t v) {
  int64_t max = pb_config_stage_key_max(type, key);
  return v < 1 ? 1 : max > 0 && v > max ? max : v;
}

/* "ParallelMapV2_1": the kind and the dataset's number from its name ("ParallelMapDatasetV2:1", or the first
 * of a fused one's), so that two maps of one kind get two names; only the characters a stage name allows. */
static void stage_name(const pb_tf_iterator *it, const char *suffix, char *out, size_t len) {
  const char *colon = strchr(it->name, ':');
  long num = colon ? strtol(colon + 1, NULL, 10) : -1;
  char raw[96];
  if (num >= 0)
    snprintf(raw, sizeof raw, "%s_%ld%s", it->kind, num, suffix);
  else
    snprintf(raw, sizeof raw, "%s%s", it->kind, suffix);
  size_t n = 0;
  for (const char *c = raw; *c && n + 1 < len && n < 63; c++)
    out[n++] = (char)((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-'
                          ? *c
                          : '_');
  out[n] = '\0';
}

/* {"op": "spin", "us": mean} with a lognormal draw when the times vary; described into desc. */
static cJSON *spin_op(const pb_tf_times *times, char *desc, size_t len) {
  double mean_ns = pb_tf_times_mean_ns(times), cv = mean_ns > 0 ? pb_tf_times_stdev_ns(times) / mean_ns : 0;
  cJSON *op = cJSON_CreateObject();
  cJSON_AddStringToObject(op, "op", "spin");
  double us = round(mean_ns / 1e3);
  cJSON_AddNumberToObject(op, "us", us < 1 ? 1 : us > 1e7 ? 1e7 : us);
  if (cv >= LOGNORMAL_FROM_CV) {
    double sigma = sqrt(log(1 + cv * cv)); /* a lognormal's cv is sqrt(exp(sigma^2) - 1) */
    sigma = sigma > 5 ? 5 : round(sigma * 100) / 100;
    cJSON_AddStringToObject(op, "dist", "lognormal");
    cJSON_AddNumberToObject(op, "sigma", sigma);
    snprintf(desc, len, "spin %.0f us, lognormal sigma %.2f (cv %.2f)", us, sigma, cv);
  } else {
    snprintf(desc, len, "spin %.0f us, constant (cv %.2f)", us, cv);
  }
  return op;
}

static cJSON *add_stage(twin *w, const char *name, const char *type, const pb_tf_iterator *it, pb_twin_role role) {
  if (w->notes->nstages < PB_MAX_STAGES)
    w->notes->stage[w->notes->nstages++] =
        (pb_twin_stage){.iterator = it ? (int)(it - w->t->iterators) : -1, .role = role};
  cJSON *s = cJSON_CreateObject();
  cJSON_AddStringToObject(s, "name", name);
  cJSON_AddStringToObject(s, "type", type);
  cJSON_AddItemToArray(w->stages, s);
  return s;
}

/* {"op": "sleep", "us": the wait} for a function run's waits between its executions with a core free (an
 * asynchronous op's), when they are 5 % of its execution or more (else NULL); described into desc.  The rest of
 * its latency is left out: the waits for a core the twin's own threads contend for, and the executor's hop to
 * the threadpool and done callback, which the profiler's recording inflates (docs/IMPORT.md). */
static cJSON *wait_op(const pb_tf_iterator *it, char *desc, size_t len) {
  double exec_ns = pb_tf_times_mean_ns(&it->functions), wait_ns = pb_tf_times_mean_ns(&it->waits);
  double wait_us = round(wait_ns / 1e3);
  desc[0] = '\0';
  if (it->waits.n == 0 || wait_us < 1 || wait_ns < 0.05 * exec_ns) return NULL;
  cJSON *op = cJSON_CreateObject();
  cJSON_AddStringToObject(op, "op", "sleep");
  cJSON_AddNumberToObject(op, "us", wait_us > 1e7 ? 1e7 : wait_us);
  snprintf(desc, len, ", then sleep %.0f us (a run's waits between its executions with a core free)", wait_us);
  return op;
}

/* A map of `threads` threads spinning for `times` per element (and, for an iterator's functions, waiting as
 * they waited between their executions); `ahead`: one sample in work or waiting per thread at most, as tf.data's
 * parallel map buffers (else no bound). */
static void add_map(twin *w, const pb_tf_iterator *it, int64_t threads, bool ahead, const pb_tf_times *times,
                    const char *what) {
  char name[64], desc[96], wait[128] = "", buffer[64] = "";
  threads = in_range(PB_STAGE_MAP, "threads", threads);
  stage_name(it, "", name, sizeof name);
  cJSON *s = add_stage(w, name, "map", it, times == &it->functions ? PB_TWIN_FUNCTIONS : PB_TWIN_OWN_TIME);
  cJSON_AddNumberToObject(s, "threads", (double)(threads > 0 ? threads : 1));
  if (ahead) { /* tf.data's parallel map holds as many results, in work or waiting, as its calls */
    cJSON_AddNumberToObject(s, "ahead", 1);
    snprintf(buffer, sizeof buffer, ", 1 ahead per thread (its buffer: as many as its calls)");
  }
  cJSON *ops = cJSON_AddArrayToObject(s, "ops");
  cJSON_AddItemToArray(ops, spin_op(times, desc, sizeof desc));
  cJSON *sleep = times == &it->functions ? wait_op(it, wait, sizeof wait) : NULL;
  if (sleep) cJSON_AddItemToArray(ops, sleep);
  note(w, "%s -> map, %lld thread(s)%s%s; %s%s: %llu %s", name, (long long)(threads > 0 ? threads : 1),
       threads > 1 ? " (its parallelism)" : "", buffer, desc, wait, (unsigned long long)times->n, what);
}

/* A batch of the iterator's batch_size; made on demand when the iterator is synchronous (a Batch, made inside
 * its consumer's GetNext, not map-and-batch's runner). */
static void add_batch(twin *w, const pb_tf_iterator *it, const char *suffix, bool on_demand) {
  char name[64];
  stage_name(it, suffix, name, sizeof name);
  int64_t size = in_range(PB_STAGE_BATCH, "size", it->batch_size);
  cJSON *s = add_stage(w, name, "batch", it, PB_TWIN_BATCH);
  cJSON_AddNumberToObject(s, "size", (double)size);
  if (on_demand) cJSON_AddBoolToObject(s, "on_demand", true);
  if (w->batch_size < 0) w->batch_size = size;
  w->after_batch = true;
  note(w, "%s -> batch of %lld%s%s", name, (long long)size, it->batch_size > 0 ? " (its batch_size)" : " (not said: 1)",
       on_demand ? ", on demand (made when its consumer asks, as tf.data's synchronous batch)" : "");
}

/* A pipeline that does not batch: each element is a step's input (pipebench's device takes batches). */
static void add_batch_of_one(twin *w) {
  cJSON *s = add_stage(w, "batch", "batch", NULL, PB_TWIN_BATCH_OF_ONE);
  cJSON_AddNumberToObject(s, "size", 1);
  w->batch_size = 1;
  w->after_batch = true;
  note(w, "no batching iterator before here: a batch of 1, each element a step's input");
}

static void add_prefetch(twin *w, const pb_tf_iterator *it) {
  if (w->batch_size < 0) add_batch_of_one(w);
  char name[64];
  stage_name(it, "", name, sizeof name);
  int64_t depth = in_range(PB_STAGE_PREFETCH, "depth", it->buffer_limit);
  cJSON *s = add_stage(w, name, "prefetch", it, PB_TWIN_PREFETCH);
  cJSON_AddNumberToObject(s, "depth", (double)depth);
  note(w, "%s -> prefetch, depth %lld%s", name, (long long)depth,
       it->buffer_limit > 0 ? " (its buffer_limit)" : " (buffer_limit not said: 1)");
}

/* One iterator of the chain, source first. */
static void add_iterator(twin *w, const pb_tf_iterator *it, bool source) {
  if (strcmp(it->kind, "Root") == 0) return;
  if (pb_starts_with(it->kind, "Prefetch")) return add_prefetch(w, it);
  if (pb_starts_with(it->kind, "MapAndBatch") || pb_starts_with(it->kind, "ParallelMap")) {
    bool fused = pb_starts_with(it->kind, "MapAndBatch"); /* its buffer is of batches: not bounded here */
    if (it->functions.n) add_map(w, it, it->parallelism, !fused, &it->functions, "function runs");
    if (fused) add_batch(w, it, "_batch", false);
    return;
  }
  if (strstr(it->kind, "Batch")) return add_batch(w, it, "", !it->async);
  double own_ns = pb_tf_times_mean_ns(&it->calls);
  if (it->async && !it->functions.n) { /* its calls are its consumer's waits; its work is its inputs' */
    note(w, "%s: left out (asynchronous, no functions of its own: its %.1f us a call are its consumer's wait)",
         it->kind, own_ns / 1e3);
    return;
  }
  if (w->after_batch) {
    note(w, "%s: left out (after the batch, %.1f us a call: pipebench maps samples, not batches)", it->kind,
         own_ns / 1e3);
    return;
  }
  if (own_ns < MIN_SPIN_NS) {
    note(w, "%s: left out (%.1f us a call, under 1 us)", it->kind, own_ns / 1e3);
    return;
  }
  if (it->functions.n) /* a synchronous map: its function's run, one at a time */
    add_map(w, it, 1, false, &it->functions, "function runs");
  else
    add_map(w, it, 1, false, &it->calls, source ? "calls (the source's own time)" : "calls (its own time)");
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The batches' median bytes (the element_size GetNext returned) over the batch size: a sample's bytes. */
static int64_t sample_bytes(const pb_tfdata *t, int64_t batch_size) {
  int64_t *v = malloc((t->nsteps + 1) * sizeof *v), med = -1;
  size_t n = 0;
  for (size_t i = 0; v && i < t->nsteps; i++)
    if (t->steps[i].element_bytes > 0) v[n++] = t->steps[i].element_bytes;
  if (n) {
    qsort(v, n, sizeof *v, cmp_i64);
    med = v[n / 2];
  }
  free(v);
  int64_t per = med > 0 ? med / (batch_size > 0 ? batch_size : 1) : 1;
  return per < 1 ? 1 : per > 1000000000 ? 1000000000 : per; /* dataset.shape's range */
}

static void add_dataset(twin *w, cJSON *cfg) {
  int64_t bytes = sample_bytes(w->t, w->batch_size);
  cJSON *d = cJSON_AddObjectToObject(cfg, "dataset");
  cJSON_AddStringToObject(d, "format", "synthetic");
  cJSON *shape = cJSON_AddArrayToObject(d, "shape");
  cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)bytes));
  cJSON_AddStringToObject(d, "dtype", "uint8");
  note(w, "the source -> a synthetic dataset of %lld-byte samples (the batches' bytes from IteratorGetNext, over the "
       "batch size)", (long long)bytes);
}

/* The device's step: each step's time less the pipeline's part of its input wait (the GetNext call's own
 * dispatch stays in the step, as it does with a prefetch), the first step left out when there are three or
 * more (it carries the pipeline's start). */
static void add_device(twin *w, cJSON *cfg) {
  size_t n = w->t->nsteps >= 3 ? w->t->nsteps - 1 : w->t->nsteps;
  double step_ms, mean, sd;
  pb_tfdata_step_ms(w->t, &step_ms, &mean, &sd);
  mean = fmin(round(mean * 1000) / 1000, 3600000), sd = fmin(round(sd * 1000) / 1000, 3600000); /* step_ms's range */
  cJSON *d = cJSON_AddObjectToObject(cfg, "device");
  cJSON_AddStringToObject(d, "kind", "emulated");
  cJSON *step = cJSON_AddObjectToObject(d, "step_ms");
  cJSON_AddStringToObject(step, "dist", "normal");
  cJSON_AddNumberToObject(step, "mean", mean);
  cJSON_AddNumberToObject(step, "stdev", sd);
  note(w,
       "the device -> emulated, steps of %.3f ms (sd %.3f): %zu \"%s\" steps less their Iterator::Root calls "
       "(the pipeline's part of their IteratorGetNext wait)",
       mean, sd, n, w->t->step_name);
}

static void add_about(const pb_tfdata *t, const char *capture, cJSON *cfg) {
  char about[512];
  const char *base = strrchr(capture, '/');
  snprintf(about, sizeof about,
           "twin of the tf.data pipeline in %s (host %s, %zu steps, %.1f %% of their time waiting for input), made by "
           "pipebench twin from its TensorFlow Profiler capture",
           base ? base + 1 : capture, t->host[0] ? t->host : "not named", t->nsteps, pb_tfdata_input_bound_pct(t));
  cJSON_AddStringToObject(cfg, "about", about);
}

static void add_run(cJSON *cfg) {
  cJSON *r = cJSON_AddObjectToObject(cfg, "run");
  cJSON_AddNumberToObject(r, "steps", 40);
  cJSON_AddNumberToObject(r, "warmup_steps", 3);
}

int pb_twin_config(const pb_tfdata *t, const char *capture, const char *name, pb_twin_notes *notes, cJSON **out,
                   pb_err *err) {
  memset(notes, 0, sizeof *notes);
  *out = NULL;
  if (t->nsteps == 0) {
    return pb_err_setc(err, -EBADMSG,
                "%s: no training steps (expected events with a step_num stat: tf.profiler.experimental.Trace(\"train\", "
                "step_num=..) around each step, as Keras marks them)",
                capture);
  }
  int chain[PB_TF_MAX_ITERATORS];
  int n = pb_tfdata_chain(t, chain, PB_TF_MAX_ITERATORS);
  cJSON *cfg = cJSON_CreateObject();
  if (!cfg) return pb_err_setc(err, -ENOMEM, "out of memory for the twin");
  cJSON_AddStringToObject(cfg, "name", name);
  add_about(t, capture, cfg);
  twin w = {.t = t, .notes = notes, .batch_size = -1};
  w.stages = cJSON_CreateArray();
  for (int i = 0; i < n; i++) add_iterator(&w, &t->iterators[chain[i]], i == 0);
  if (w.batch_size < 0) add_batch_of_one(&w);
  add_dataset(&w, cfg);
  cJSON_AddItemToObject(cfg, "stages", w.stages);
  add_device(&w, cfg);
  add_run(cfg);
  *out = cfg;
  return 0;
}

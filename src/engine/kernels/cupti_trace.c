/* CUPTI activity tracing (see cupti_trace.h).
 *
 * CUPTI asks for empty buffers and hands back full ones from its own threads, at times of its
 * choosing; each full buffer is walked at once, its kernels, host-to-device copies and external
 * correlations copied into one process-global pb_gpu_timeline under a mutex, and the buffer freed.
 * Joining records to batches is left to pb_gpu_timeline_apply, after the run, so the callbacks stay
 * short and the join logic stays testable without a GPU. */
#include "cupti_trace.h"

#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Large enough that a step's records rarely span buffers, small enough to stay cheap per request. */
#define PB_CUPTI_BUFFER_BYTES ((size_t)8 << 20)
#define PB_CUPTI_BUFFER_ALIGN 8 /* CUPTI's ACTIVITY_RECORD_ALIGNMENT */

/* RUNTIME is needed even though its records are ignored: CUPTI emits an external-correlation record
 * only in front of an API record.  CONCURRENT_KERNEL rather than KERNEL: KERNEL serialises kernels. */
static const CUpti_ActivityKind TRACED_KINDS[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};
static const char *const TRACED_KIND_NAMES[] = {"CONCURRENT_KERNEL", "MEMCPY", "RUNTIME", "EXTERNAL_CORRELATION"};
#define NKINDS (sizeof TRACED_KINDS / sizeof TRACED_KINDS[0])

static struct {
  pthread_mutex_t lock;    /* guards the fields up to `active` */
  pb_gpu_timeline tl;
  bool collecting;         /* buffers completed outside a session are discarded */
  uint64_t lost_records;   /* records that did not fit in memory (add returned -ENOMEM) */
  uint64_t bad_buffers;    /* buffers whose walk stopped on an error */
  bool enabled[NKINDS];    /* start/stop only */
  atomic_bool active;      /* push/pop act only while tracing */
  atomic_uint_fast64_t push_errors;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- CUPTI callbacks ---- */

static uint64_t CUPTIAPI timestamp_ns(void) { return pb_now_ns(); }

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  /* A NULL buffer makes CUPTI drop records; cuptiActivityGetNumDroppedRecords then counts them. */
  *buffer = aligned_alloc(PB_CUPTI_BUFFER_ALIGN, PB_CUPTI_BUFFER_BYTES);
  *size = *buffer ? PB_CUPTI_BUFFER_BYTES : 0;
  *max_records = 0; /* as many as fit */
}

static int ext_kind_from_cupti(CUpti_ExternalCorrelationKind k) {
  if (k == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) return PB_GPU_EXT_COMPUTE;
  if (k == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1) return PB_GPU_EXT_COPY;
  return -1; /* someone else's (OpenACC, a library's own tags) */
}

/* Copies one record into g.tl (lock held).  Returns what the add returned (0 for kinds not kept). */
static int take_record(const CUpti_Activity *rec) {
  switch (rec->kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
    return pb_gpu_timeline_add_kernel(&g.tl, k->correlationId, k->deviceId, k->start, k->end);
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY: {
    const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
    return pb_gpu_timeline_add_memcpy(&g.tl, m->correlationId, m->deviceId, m->start, m->end, m->bytes,
                                      m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  }
  case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
    const CUpti_ActivityExternalCorrelation *e = (const CUpti_ActivityExternalCorrelation *)rec;
    int kind = ext_kind_from_cupti(e->externalKind);
    return kind < 0 ? 0 : pb_gpu_timeline_add_external(&g.tl, e->correlationId, kind, e->externalId);
  }
  default: /* RUNTIME: only there to carry the external correlations */
    return 0;
  }
}

static void walk_buffer(uint8_t *buffer, size_t valid_bytes) {
  CUpti_Activity *rec = NULL;
  for (;;) {
    CUptiResult r = cuptiActivityGetNextRecord(buffer, valid_bytes, &rec);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) return; /* end of the buffer */
    if (r != CUPTI_SUCCESS) {                       /* incomplete or corrupt: the rest is unreadable */
      g.bad_buffers++;
      return;
    }
    if (take_record(rec) != 0) g.lost_records++;
  }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size,
                                      size_t valid_bytes) {
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) != CUPTI_SUCCESS) dropped = 0;
  pthread_mutex_lock(&g.lock);
  if (g.collecting) {
    if (buffer && valid_bytes) walk_buffer(buffer, valid_bytes);
    g.tl.dropped_records += dropped;
  }
  pthread_mutex_unlock(&g.lock);
  free(buffer);
}

/* ---- errors ---- */

static const char *hint_for(CUptiResult r) {
  switch (r) {
  case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
    return "profiling needs admin rights: NVreg_RestrictProfilingToAdminUsers=0 or run as root";
  case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
  case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
  case CUPTI_ERROR_HARDWARE_BUSY:
    return "another profiler (nsys, ncu, DCGM profiling) holds CUPTI";
  case CUPTI_ERROR_NOT_INITIALIZED:
    /* Also what CUPTI says when it cannot load the driver at all. */
    return "no usable CUDA driver, or another profiler (nsys, ncu, DCGM profiling) holds CUPTI";
  case CUPTI_ERROR_NOT_COMPATIBLE:
    return "this CUPTI does not match the installed driver";
  case CUPTI_ERROR_UNKNOWN:
    /* What CUPTI 13 answers when libcuda.so.1 cannot be loaded (seen on a machine without a driver). */
    return "is the NVIDIA driver (libcuda.so.1) installed?";
  default:
    return NULL;
  }
}

/* "<call>: <CUPTI's name for r> (<hint>)" */
static void set_reason(char *reason, size_t reason_len, const char *call, CUptiResult r) {
  const char *text = NULL;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text) text = "unknown CUPTI error";
  const char *hint = hint_for(r);
  if (reason_len)
    snprintf(reason, reason_len, "%s: %s (%d)%s%s%s", call, text, (int)r, hint ? " (" : "", hint ? hint : "",
             hint ? ")" : "");
}

/* Disables every kind start enabled; returns the first failure (CUPTI_SUCCESS when none), and which. */
static CUptiResult disable_enabled(const char **failed_kind) {
  CUptiResult first = CUPTI_SUCCESS;
  for (size_t i = 0; i < NKINDS; i++) {
    if (!g.enabled[i]) continue;
    CUptiResult r = cuptiActivityDisable(TRACED_KINDS[i]);
    g.enabled[i] = false;
    if (r != CUPTI_SUCCESS && first == CUPTI_SUCCESS) {
      first = r;
      if (failed_kind) *failed_kind = TRACED_KIND_NAMES[i];
    }
  }
  return first;
}

/* Ends a session's collection and hands its timeline to *out (or frees it when out is NULL). */
static void end_collection(pb_gpu_timeline *out) {
  pthread_mutex_lock(&g.lock);
  g.collecting = false;
  g.tl.dropped_records += g.lost_records;
  if (out)
    *out = g.tl;
  else
    pb_gpu_timeline_free(&g.tl);
  pb_gpu_timeline_init(&g.tl);
  pthread_mutex_unlock(&g.lock);
}

/* ---- start / stop ---- */

static int start_failed(char *reason, size_t reason_len, const char *call, CUptiResult r) {
  set_reason(reason, reason_len, call, r);
  disable_enabled(NULL);
  end_collection(NULL);
  return -1;
}

int pb_cupti_start(char *reason, size_t reason_len) {
  if (reason_len) reason[0] = '\0';
  if (atomic_load(&g.active)) {
    snprintf(reason, reason_len, "CUPTI tracing is already active");
    return -1;
  }
  pthread_mutex_lock(&g.lock);
  pb_gpu_timeline_free(&g.tl);
  g.collecting = true;
  g.lost_records = g.bad_buffers = 0;
  pthread_mutex_unlock(&g.lock);
  atomic_store(&g.push_errors, 0);

  /* The clock first: records made before it would carry CUPTI's default (CLOCK_REALTIME) times. */
  CUptiResult r = cuptiActivityRegisterTimestampCallback(timestamp_ns);
  if (r != CUPTI_SUCCESS) return start_failed(reason, reason_len, "cuptiActivityRegisterTimestampCallback", r);
  r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) return start_failed(reason, reason_len, "cuptiActivityRegisterCallbacks", r);
  for (size_t i = 0; i < NKINDS; i++) {
    r = cuptiActivityEnable(TRACED_KINDS[i]);
    if (r != CUPTI_SUCCESS) {
      char call[64];
      snprintf(call, sizeof call, "cuptiActivityEnable(%s)", TRACED_KIND_NAMES[i]);
      return start_failed(reason, reason_len, call, r);
    }
    g.enabled[i] = true;
  }
  atomic_store(&g.active, true);
  return 0;
}

static CUpti_ExternalCorrelationKind cupti_ext_kind(int kind) {
  return kind == PB_GPU_EXT_COPY ? CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1 : CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
}

void pb_cupti_push(int kind, uint64_t external_id) {
  if (!atomic_load_explicit(&g.active, memory_order_acquire)) return;
  if ((kind != PB_GPU_EXT_COMPUTE && kind != PB_GPU_EXT_COPY) ||
      cuptiActivityPushExternalCorrelationId(cupti_ext_kind(kind), external_id) != CUPTI_SUCCESS)
    atomic_fetch_add(&g.push_errors, 1);
}

void pb_cupti_pop(int kind) {
  if (!atomic_load_explicit(&g.active, memory_order_acquire)) return;
  uint64_t last_id;
  if ((kind != PB_GPU_EXT_COMPUTE && kind != PB_GPU_EXT_COPY) ||
      cuptiActivityPopExternalCorrelationId(cupti_ext_kind(kind), &last_id) != CUPTI_SUCCESS)
    atomic_fetch_add(&g.push_errors, 1);
}

uint64_t pb_cupti_push_errors(void) { return atomic_load(&g.push_errors); }

/* Notes lost records in reason (empty when none). */
static void note_losses(const pb_gpu_timeline *tl, uint64_t bad_buffers, char *reason, size_t reason_len) {
  if (!reason_len) return;
  reason[0] = '\0';
  if (tl->dropped_records == 0 && bad_buffers == 0) return;
  snprintf(reason, reason_len, "CUPTI lost %llu activity records and %llu unreadable buffers: some steps "
           "keep their host timings", (unsigned long long)tl->dropped_records, (unsigned long long)bad_buffers);
}

int pb_cupti_stop(pb_gpu_timeline *out, char *reason, size_t reason_len) {
  pb_gpu_timeline_init(out);
  if (reason_len) reason[0] = '\0';
  if (!atomic_load(&g.active)) {
    snprintf(reason, reason_len, "CUPTI tracing is not active");
    return -1;
  }
  atomic_store(&g.active, false);
  /* Forced: also hands over buffers that are not full yet; returns once they were delivered. */
  CUptiResult flush = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const char *kind = "?";
  CUptiResult disable = disable_enabled(&kind);
  /* Records made between the flush and the disable (another thread's late call) come with this one. */
  CUptiResult flush2 = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) != CUPTI_SUCCESS) dropped = 0;
  pthread_mutex_lock(&g.lock);
  g.tl.dropped_records += dropped;
  uint64_t bad_buffers = g.bad_buffers;
  pthread_mutex_unlock(&g.lock);
  end_collection(out);

  if (flush != CUPTI_SUCCESS || flush2 != CUPTI_SUCCESS) {
    set_reason(reason, reason_len, "cuptiActivityFlushAll", flush != CUPTI_SUCCESS ? flush : flush2);
    return -1;
  }
  if (disable != CUPTI_SUCCESS) {
    char call[64];
    snprintf(call, sizeof call, "cuptiActivityDisable(%s)", kind);
    set_reason(reason, reason_len, call, disable);
    return -1;
  }
  note_losses(out, bad_buffers, reason, reason_len);
  return 0;
}

/* The CUDA device: feeds real NVIDIA GPUs.  Built only with a CUDA toolkit.
 *
 * Per GPU: one compute stream, `streams` copy streams, and streams + 2 device input buffers ("slots"): a
 * batch is copied into a free slot while earlier slots are being computed, and its slot is freed when its
 * step ends.  A copy waits for a free slot when the device is behind; that wait is reported apart from
 * the copy so the h2d stage counts it as backpressure.
 *
 * Steps queue ahead (launch): the device thread launches the next batch's step, when that batch is
 * already on the GPU, before it waits for the current one, as a training loop's asynchronous launches do.
 * The GPU then runs the steps back to back; without it, each step would wait for the host to notice the
 * previous one's end (a blocking-sync wake-up, 0.2-0.6 ms on an H100 VM) and the report would count that
 * gap, pipebench's own, as device idle.  Hence two slots beyond the copy streams': one step running, one
 * launched behind it.
 *
 * Host batch buffers are pinned (cudaHostAlloc) unless the h2d stage says `pinned: false`; the batch
 * stage allocates its pool through pb_device.host_mem, so it collates straight into pinned memory.
 *
 * Each step runs normalize (when normalize.on_device) and the step kernel, which spins every SM for
 * step_ms worth of clock cycles; the cycle rate is calibrated against CUDA events when the device opens
 * and the step kernel is then checked against them (device.step_kernel in the report).
 *
 * Timing: every copy and step is bracketed by CUDA events, mapped onto the host's monotonic clock through
 * an anchor event recorded at open.  When CUPTI activity tracing is allowed, the GPU's own kernel and
 * memcpy records (timestamped on the same clock) replace those intervals after the run (finish); the
 * event timeline's idle % is kept as a cross-check.  When CUPTI is refused, CUDA events are the source
 * and the report says why.
 *
 * Threads: the h2d stage's workers call h2d; one device thread per GPU calls step.  Every CUDA call sets
 * the thread's current device first (it is per-thread state) and is checked; the first error is kept
 * in d->error. */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_trace.h"
#include "device.h"
#include "engine.h"
#include "gpu_timeline.h"
#include "record.h"
#include "normalize_math.h"
#include "steps.h"
#include "world.h"

/* cuda_kernels.cu */
int pb_cuda_launch_spin(cudaStream_t stream, int blocks, long long cycles);
int pb_cuda_launch_normalize(cudaStream_t stream, const uint8_t *in, void *out, const pb_norm_params *p,
                             int sm_count);

#define MAX_STREAMS 16
#define MAX_SLOTS (MAX_STREAMS + 2)
#define SPLIT_MIN_BYTES ((size_t)1 << 20) /* chunks below 1 MiB gain nothing from another stream */
#define CALIBRATION_MS 20.0
#define CHECK_RUNS 3

/* FREE -> COPYING (h2d) -> READY (copied) -> STEPPING (its step launched) -> FREE (its step waited for). */
typedef enum { SLOT_FREE, SLOT_COPYING, SLOT_READY, SLOT_STEPPING } slot_state;

typedef struct cuda_slot {
  slot_state state;
  uint64_t key;                      /* the batch on it */
  void *dev_in;
  size_t capacity_bytes;
  cudaEvent_t copy_start, copy_end;  /* copy_end: blocking-sync, the copying thread sleeps on it */
  cudaEvent_t chunk_done[MAX_STREAMS];
  cudaEvent_t step_start, step_end;  /* its step's; step_end: blocking-sync, the device thread sleeps on it */
} cuda_slot;

typedef struct cuda_gpu {
  int id, sm_count;
  cudaStream_t compute;
  cudaStream_t copy[MAX_STREAMS];
  int nslots;
  cuda_slot slot[MAX_SLOTS];
  cudaEvent_t step_start, step_end;  /* the calibration's (at open) */
  void *dev_out;                     /* normalize.on_device output */
  size_t out_bytes;
  double cycles_per_ms;
  cudaEvent_t anchor;                /* recorded at anchor_host_ns on the host's clock */
  uint64_t anchor_host_ns;
} cuda_gpu;

typedef struct cuda_state {
  cuda_gpu gpu[PB_MAX_DEVICES];
  int count, nstreams;
  size_t batch_bytes;                /* 0 when the shape is not known before the run */
  bool normalize;                    /* normalize.on_device to float */
  pb_norm_params norm;
  size_t sample_in_bytes;            /* one uint8 sample entering normalize */
  bool cupti;
  uv_mutex_t lock;
  uv_cond_t slot_freed;
  bool cancelled;
} cuda_state;

/* ---- errors ---- */

/* Keeps the first error (several threads may fail at once); returns -EIO. */
static int fail(pb_device *d, const char *call, cudaError_t rc) {
  cuda_state *cs = d->impl;
  if (cs) uv_mutex_lock(&cs->lock);
  if (!d->error[0])
    snprintf(d->error, sizeof d->error, "%s: %s (%s)", call, cudaGetErrorName(rc), cudaGetErrorString(rc));
  if (cs) uv_mutex_unlock(&cs->lock);
  return -EIO;
}

#define CK(d, call)                                  \
  do {                                               \
    cudaError_t ck_rc_ = (call);                     \
    if (ck_rc_ != cudaSuccess) return fail((d), #call, ck_rc_); \
  } while (0)

/* ---- time ---- */

/* An event's time on the host clock.  cudaEventElapsedTime has ~0.5 us resolution; as a float of
 * milliseconds it stays within ~8 us over the first 100 s after the anchor. */
static uint64_t event_host_ns(const cuda_gpu *g, cudaEvent_t ev) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, g->anchor, ev) != cudaSuccess) return 0;
  double ns = (double)g->anchor_host_ns + (double)ms * 1e6;
  return ns > 0 ? (uint64_t)ns : 0;
}

/* The anchor: an event recorded on an idle stream happens between the host times just before the
 * record and just after its (spinning) synchronize; the tightest of a few tries, its midpoint. */
static int set_anchor(pb_device *d, cuda_gpu *g) {
  for (int i = 0; i < 5; i++) { /* the last event recorded is the anchor, with its own bracket */
    uint64_t t0 = pb_now_ns();
    CK(d, cudaEventRecord(g->anchor, g->compute));
    CK(d, cudaEventSynchronize(g->anchor));
    uint64_t t1 = pb_now_ns();
    g->anchor_host_ns = t0 + (t1 - t0) / 2;
    if (i > 0 && t1 - t0 < 20000) break; /* within +-10 us: good enough */
  }
  return 0;
}

/* ---- the step kernel ---- */

/* Runs the spin kernel for `cycles` and returns its length by CUDA events. */
static int time_spin(pb_device *d, cuda_gpu *g, long long cycles, double *ms) {
  float f = 0;
  CK(d, cudaEventRecord(g->step_start, g->compute));
  CK(d, (cudaError_t)pb_cuda_launch_spin(g->compute, g->sm_count, cycles));
  CK(d, cudaEventRecord(g->step_end, g->compute));
  CK(d, cudaEventSynchronize(g->step_end));
  CK(d, cudaEventElapsedTime(&f, g->step_start, g->step_end));
  *ms = f;
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of CHECK_RUNS timed spins. */
static int median_spin(pb_device *d, cuda_gpu *g, long long cycles, double *ms) {
  double v[CHECK_RUNS];
  for (int i = 0; i < CHECK_RUNS; i++) {
    int rc = time_spin(d, g, cycles, &v[i]);
    if (rc) return rc;
  }
  qsort(v, CHECK_RUNS, sizeof *v, cmp_double);
  *ms = v[CHECK_RUNS / 2];
  return 0;
}

/* Cycles per millisecond: start from the nominal clock, spin ~CALIBRATION_MS, correct by the measured
 * length (the clock the SMs really run at, boost included), twice. */
static int calibrate(pb_device *d, cuda_gpu *g) {
  int khz = 0;
  CK(d, cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, g->id));
  g->cycles_per_ms = khz > 0 ? khz : 1.5e6;
  double ms = 0;
  int rc = time_spin(d, g, 1000, &ms); /* first launch: module load, not measured */
  for (int round = 0; !rc && round < 2; round++) {
    rc = median_spin(d, g, (long long)(CALIBRATION_MS * g->cycles_per_ms), &ms);
    if (!rc && ms > 0) g->cycles_per_ms *= CALIBRATION_MS / ms;
  }
  return rc;
}

/* The step kernel at device.step_ms (the mean, when drawn), timed by events: its error is reported. */
static int check_step_kernel(pb_device *d, cuda_gpu *g) {
  if (d->step_ms <= 0) return 0;
  double ms = 0;
  int rc = median_spin(d, g, (long long)(d->step_ms * g->cycles_per_ms), &ms);
  if (rc) return rc;
  double err = (ms - d->step_ms) / d->step_ms * 100;
  /* With several GPUs the report keeps the worst. */
  if (!d->step_kernel.measured || fabs(err) > fabs(d->step_kernel.error_pct))
    d->step_kernel = (pb_step_kernel_check){true, d->step_ms, ms, err};
  return 0;
}

/* ---- slots ---- */

/* A free slot of g, waiting for one; NULL when cancelled. */
static cuda_slot *acquire_slot(cuda_state *cs, cuda_gpu *g) {
  cuda_slot *got = NULL;
  uv_mutex_lock(&cs->lock);
  while (!got && !cs->cancelled) {
    for (int i = 0; i < g->nslots && !got; i++)
      if (g->slot[i].state == SLOT_FREE) got = &g->slot[i];
    if (!got && !cs->cancelled) uv_cond_wait(&cs->slot_freed, &cs->lock);
  }
  if (got) got->state = SLOT_COPYING;
  uv_mutex_unlock(&cs->lock);
  return got;
}

static void release_slot(cuda_state *cs, cuda_slot *s) {
  uv_mutex_lock(&cs->lock);
  s->state = SLOT_FREE;
  uv_cond_broadcast(&cs->slot_freed);
  uv_mutex_unlock(&cs->lock);
}

/* The slot holding batch `key` on g, copied (READY) or, with `launched`, also with its step launched. */
static cuda_slot *find_slot(cuda_state *cs, cuda_gpu *g, uint64_t key, bool launched) {
  cuda_slot *found = NULL;
  uv_mutex_lock(&cs->lock);
  for (int i = 0; i < g->nslots && !found; i++) {
    slot_state st = g->slot[i].state;
    if ((st == SLOT_READY || (launched && st == SLOT_STEPPING)) && g->slot[i].key == key) found = &g->slot[i];
  }
  uv_mutex_unlock(&cs->lock);
  return found;
}

static void set_state(cuda_state *cs, cuda_slot *s, slot_state st) {
  uv_mutex_lock(&cs->lock);
  s->state = st;
  uv_mutex_unlock(&cs->lock);
}

/* Batches whose size is not known before the run get their device buffer on first use. */
static int ensure_capacity(pb_device *d, cuda_slot *s, size_t bytes) {
  if (s->capacity_bytes >= bytes) return 0;
  if (s->dev_in) CK(d, cudaFree(s->dev_in));
  s->dev_in = NULL;
  s->capacity_bytes = 0;
  CK(d, cudaMalloc(&s->dev_in, bytes));
  s->capacity_bytes = bytes;
  return 0;
}

/* ---- copy ---- */

/* Issues the copy of `bytes` on up to nstreams copy streams (chunks of at least SPLIT_MIN_BYTES), all
 * between the slot's copy_start and copy_end events on copy stream 0. */
static int issue_copy(pb_device *d, cuda_state *cs, cuda_gpu *g, cuda_slot *s, const void *src, size_t bytes) {
  size_t chunks = bytes / SPLIT_MIN_BYTES;
  if (chunks < 1) chunks = 1;
  if (chunks > (size_t)cs->nstreams) chunks = (size_t)cs->nstreams;
  size_t per = (bytes + chunks - 1) / chunks;
  CK(d, cudaEventRecord(s->copy_start, g->copy[0]));
  for (size_t k = 0; k < chunks; k++) {
    size_t off = k * per, n = off < bytes ? (bytes - off < per ? bytes - off : per) : 0;
    cudaStream_t st = g->copy[k];
    if (k > 0) CK(d, cudaStreamWaitEvent(st, s->copy_start, 0));
    if (n) CK(d, cudaMemcpyAsync((char *)s->dev_in + off, (const char *)src + off, n, cudaMemcpyHostToDevice, st));
    if (k > 0) {
      CK(d, cudaEventRecord(s->chunk_done[k], st));
      CK(d, cudaStreamWaitEvent(g->copy[0], s->chunk_done[k], 0));
    }
  }
  CK(d, cudaEventRecord(s->copy_end, g->copy[0]));
  return 0;
}

static int copy_into(pb_device *d, cuda_state *cs, cuda_gpu *g, cuda_slot *s, pb_elem *batch, pb_h2d_times *t) {
  CK(d, cudaSetDevice(g->id));
  int rc = ensure_capacity(d, s, batch->bytes);
  if (rc) return rc;
  uint64_t key = pb_elem_key(batch);
  pb_cupti_push(PB_GPU_EXT_COPY, key);
  rc = issue_copy(d, cs, g, s, batch->data, batch->bytes);
  pb_cupti_pop(PB_GPU_EXT_COPY);
  if (rc) return rc;
  CK(d, cudaEventSynchronize(s->copy_end));
  t->start_ns = event_host_ns(g, s->copy_start);
  t->end_ns = event_host_ns(g, s->copy_end);
  s->key = key;
  return 0;
}

static int cuda_h2d(pb_device *d, int index, pb_elem *batch, pb_h2d_times *t) {
  cuda_state *cs = d->impl;
  if (index < 0) index = (int)(atomic_fetch_add(&d->next_device, 1u) % (unsigned)cs->count);
  cuda_gpu *g = &cs->gpu[index];
  batch->device = (uint8_t)index;
  t->wait_start_ns = pb_now_ns();
  cuda_slot *s = acquire_slot(cs, g);
  t->wait_end_ns = pb_now_ns();
  if (!s) return -ECANCELED;
  int rc = copy_into(d, cs, g, s, batch, t);
  if (rc) {
    release_slot(cs, s);
    return rc;
  }
  set_state(cs, s, SLOT_READY);
  return 0;
}

/* ---- step ---- */

static int launch_step(pb_device *d, cuda_state *cs, cuda_gpu *g, cuda_slot *s, const pb_elem *batch, double ms) {
  CK(d, cudaStreamWaitEvent(g->compute, s->copy_end, 0));
  CK(d, cudaEventRecord(s->step_start, g->compute));
  if (cs->normalize) {
    pb_norm_params p = cs->norm;
    p.n = (int)(batch->bytes / cs->sample_in_bytes); /* a short last batch has fewer */
    if (batch->bytes % cs->sample_in_bytes || p.n > cs->norm.n) {
      snprintf(d->error, sizeof d->error, "normalize.on_device: a batch of %zu bytes is not whole %zu-byte uint8 "
               "samples (at most %d)", batch->bytes, cs->sample_in_bytes, cs->norm.n);
      return -EIO;
    }
    CK(d, (cudaError_t)pb_cuda_launch_normalize(g->compute, s->dev_in, g->dev_out, &p, g->sm_count));
  }
  long long cycles = (long long)(ms * g->cycles_per_ms);
  if (cycles > 0) CK(d, (cudaError_t)pb_cuda_launch_spin(g->compute, g->sm_count, cycles));
  CK(d, cudaEventRecord(s->step_end, g->compute));
  return 0;
}

/* Launches the step of the batch on slot s (READY), which becomes STEPPING. */
static int start_step(pb_device *d, cuda_state *cs, cuda_gpu *g, cuda_slot *s, const pb_elem *batch) {
  CK(d, cudaSetDevice(g->id));
  pb_cupti_push(PB_GPU_EXT_COMPUTE, s->key);
  int rc = launch_step(d, cs, g, s, batch, pb_device_draw_step_ms(d, (int)(g - cs->gpu)));
  pb_cupti_pop(PB_GPU_EXT_COMPUTE);
  if (!rc) set_state(cs, s, SLOT_STEPPING);
  return rc;
}

static int missing(pb_device *d, const pb_elem *batch, int gpu) {
  snprintf(d->error, sizeof d->error, "batch %llu is not on GPU %d (expected h2d to copy it there first)",
           (unsigned long long)batch->batch_id, gpu);
  return -EIO;
}

static int cuda_launch(pb_device *d, int index, pb_elem *batch) {
  cuda_state *cs = d->impl;
  cuda_gpu *g = &cs->gpu[index];
  cuda_slot *s = find_slot(cs, g, pb_elem_key(batch), false);
  return s ? start_step(d, cs, g, s, batch) : missing(d, batch, g->id);
}

static int cuda_step(pb_device *d, int index, pb_elem *batch, uint64_t ready_ns, uint64_t *start_ns,
                     uint64_t *end_ns) {
  (void)ready_ns; /* the GPU's own clock says when the step ran */
  cuda_state *cs = d->impl;
  cuda_gpu *g = &cs->gpu[index];
  cuda_slot *s = find_slot(cs, g, pb_elem_key(batch), true);
  if (!s) return missing(d, batch, g->id);
  CK(d, cudaSetDevice(g->id));
  int rc = s->state == SLOT_STEPPING ? 0 : start_step(d, cs, g, s, batch); /* not launched ahead */
  cudaError_t sync_rc = rc ? cudaSuccess : cudaEventSynchronize(s->step_end);
  if (sync_rc != cudaSuccess) rc = fail(d, "cudaEventSynchronize(step_end)", sync_rc);
  if (!rc) {
    *start_ns = event_host_ns(g, s->step_start);
    *end_ns = event_host_ns(g, s->step_end);
  }
  release_slot(cs, s);
  return rc;
}

static void cuda_discard(pb_device *d, pb_elem *batch) {
  cuda_state *cs = d->impl;
  if (!batch->h2d_end_ns || batch->device >= cs->count) return;
  cuda_gpu *g = &cs->gpu[batch->device];
  cuda_slot *s = find_slot(cs, g, pb_elem_key(batch), true);
  if (!s) return;
  /* A step launched ahead still reads the slot: the next copy into it must wait for its end. */
  if (s->state == SLOT_STEPPING && cudaSetDevice(g->id) == cudaSuccess) (void)cudaEventSynchronize(s->step_end);
  release_slot(cs, s);
}

static void cuda_cancel(pb_device *d) {
  cuda_state *cs = d->impl;
  uv_mutex_lock(&cs->lock);
  cs->cancelled = true;
  uv_cond_broadcast(&cs->slot_freed);
  uv_mutex_unlock(&cs->lock);
}

/* ---- after the run: the GPU's own timeline ---- */

/* Steps' prev_end (the previous step's end on the same device: its compute's, or its exchange's) and
 * ready times follow the rewritten compute ends, so the step breakdown stays consistent. */
static void relink_steps(pb_step *v, size_t n, const uint64_t *old_end, uint64_t ws) {
  uint64_t last_old[PB_MAX_DEVICES] = {0}, last_new[PB_MAX_DEVICES] = {0};
  for (size_t i = 0; i < n; i++) {
    pb_step *st = &v[i];
    int k = st->device < PB_MAX_DEVICES ? st->device : 0;
    if (last_old[k] && st->prev_end_ns == last_old[k]) st->prev_end_ns = last_new[k];
    if (st->measured) { /* a measured step that straddled the window's opening starts at it (steps.c) */
      if (st->compute_start_ns < ws) st->compute_start_ns = ws;
      if (st->prev_end_ns < ws) st->prev_end_ns = ws;
      if (st->compute_end_ns < st->compute_start_ns) st->compute_end_ns = st->compute_start_ns;
    }
    if (st->ready_ns < st->prev_end_ns) st->ready_ns = st->prev_end_ns;
    if (st->ready_ns > st->compute_start_ns) st->ready_ns = st->compute_start_ns;
    if (st->prev_end_ns > st->ready_ns) st->prev_end_ns = st->ready_ns;
    if (st->comm_end_ns) { /* the exchange (host clock) starts after the GPU's compute end */
      if (st->comm_start_ns < st->compute_end_ns) st->comm_start_ns = st->compute_end_ns;
      if (st->comm_end_ns < st->comm_start_ns) st->comm_end_ns = st->comm_start_ns;
    }
    last_old[k] = old_end[i];
    last_new[k] = pb_step_end_ns(st);
  }
}

static void apply_cupti(pb_device *d, pb_step *steps, size_t n, uint64_t ws, uint64_t we) {
  pb_gpu_timeline tl;
  char why[256] = "";
  if (pb_cupti_stop(&tl, why, sizeof why) != 0) {
    d->timing_source = "cuda_events";
    snprintf(d->timing_source_reason, sizeof d->timing_source_reason, "CUPTI failed at the end: %s", why);
    pb_gpu_timeline_free(&tl);
    return;
  }
  if (why[0]) /* records lost: those steps keep their CUDA-event times; say so */
    snprintf(d->timing_source_reason, sizeof d->timing_source_reason, "%s", why);
  uint64_t *old_end = malloc((n ? n : 1) * sizeof *old_end);
  for (size_t i = 0; old_end && i < n; i++) old_end[i] = pb_step_end_ns(&steps[i]);
  double events_idle = pb_steps_idle_pct(steps, n, d->count, -1, ws, we);
  pb_gpu_apply_stats stats = {0};
  int rc = old_end ? pb_gpu_timeline_apply(&tl, steps, n, &stats) : -ENOMEM;
  d->gpu_timestamps_dropped = tl.dropped_invalid;
  if (rc == 0 && stats.compute_rewritten > 0) {
    relink_steps(steps, n, old_end, ws);
    d->idle_pct_cuda_events = events_idle;
  } else {
    d->timing_source = "cuda_events";
    snprintf(d->timing_source_reason, sizeof d->timing_source_reason,
             rc ? "CUPTI records could not be merged (out of memory)"
                : "CUPTI delivered no kernel records for the steps");
  }
  free(old_end);
  pb_gpu_timeline_free(&tl);
}

static void cuda_finish(pb_device *d, pb_step *steps, size_t n, uint64_t ws, uint64_t we) {
  cuda_state *cs = d->impl;
  if (cs->cupti) {
    apply_cupti(d, steps, n, ws, we);
    cs->cupti = false;
  }
}

/* ---- open / close ---- */

static void close_gpu(cuda_gpu *g, int nstreams) {
  if (cudaSetDevice(g->id) != cudaSuccess) return;
  cudaDeviceSynchronize();
  for (int i = 0; i < g->nslots; i++) {
    cuda_slot *s = &g->slot[i];
    if (s->dev_in) cudaFree(s->dev_in);
    if (s->copy_start) cudaEventDestroy(s->copy_start);
    if (s->copy_end) cudaEventDestroy(s->copy_end);
    for (int k = 0; k < nstreams; k++)
      if (s->chunk_done[k]) cudaEventDestroy(s->chunk_done[k]);
    if (s->step_start) cudaEventDestroy(s->step_start);
    if (s->step_end) cudaEventDestroy(s->step_end);
  }
  if (g->dev_out) cudaFree(g->dev_out);
  if (g->step_start) cudaEventDestroy(g->step_start);
  if (g->step_end) cudaEventDestroy(g->step_end);
  if (g->anchor) cudaEventDestroy(g->anchor);
  for (int k = 0; k < nstreams; k++)
    if (g->copy[k]) cudaStreamDestroy(g->copy[k]);
  if (g->compute) cudaStreamDestroy(g->compute);
}

static void cuda_close(pb_device *d) {
  cuda_state *cs = d->impl;
  if (!cs) return;
  if (cs->cupti) {
    pb_gpu_timeline tl;
    char why[64];
    pb_cupti_stop(&tl, why, sizeof why);
    pb_gpu_timeline_free(&tl);
  }
  for (int i = 0; i < cs->count; i++) close_gpu(&cs->gpu[i], cs->nstreams);
  uv_cond_destroy(&cs->slot_freed);
  uv_mutex_destroy(&cs->lock);
  free(cs);
  d->impl = NULL;
}

/* Events the host sleeps on are blocking-sync: a spinning wait would take a core from the pipeline it
 * measures.  Events only read for their time stay default (lower overhead). */
static int open_slot(pb_device *d, cuda_state *cs, cuda_slot *s) {
  CK(d, cudaEventCreate(&s->copy_start));
  CK(d, cudaEventCreateWithFlags(&s->copy_end, cudaEventBlockingSync));
  for (int k = 1; k < cs->nstreams; k++) CK(d, cudaEventCreateWithFlags(&s->chunk_done[k], cudaEventDisableTiming));
  CK(d, cudaEventCreate(&s->step_start));
  CK(d, cudaEventCreateWithFlags(&s->step_end, cudaEventBlockingSync));
  return cs->batch_bytes ? ensure_capacity(d, s, cs->batch_bytes) : 0;
}

static int open_streams(pb_device *d, cuda_state *cs, cuda_gpu *g) {
  CK(d, cudaStreamCreateWithFlags(&g->compute, cudaStreamNonBlocking));
  for (int k = 0; k < cs->nstreams; k++) CK(d, cudaStreamCreateWithFlags(&g->copy[k], cudaStreamNonBlocking));
  CK(d, cudaEventCreate(&g->step_start));
  CK(d, cudaEventCreateWithFlags(&g->step_end, cudaEventBlockingSync));
  CK(d, cudaEventCreate(&g->anchor));
  return 0;
}

static int open_gpu(pb_device *d, cuda_state *cs, cuda_gpu *g, int index) {
  struct cudaDeviceProp prop;
  CK(d, cudaSetDevice(g->id));
  CK(d, cudaGetDeviceProperties(&prop, g->id));
  snprintf(d->names[index], sizeof d->names[index], "%.63s", prop.name);
  g->sm_count = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
  int rc = open_streams(d, cs, g);
  g->nslots = cs->nstreams + 2; /* copies in flight, one step running, one launched behind it */
  for (int i = 0; !rc && i < g->nslots; i++) rc = open_slot(d, cs, &g->slot[i]);
  if (!rc && cs->normalize) {
    g->out_bytes = (size_t)cs->norm.n * cs->norm.c * cs->norm.h * cs->norm.w * (cs->norm.out_half ? 2 : 4);
    CK(d, cudaMalloc(&g->dev_out, g->out_bytes));
  }
  if (!rc) rc = calibrate(d, g);
  if (!rc) rc = check_step_kernel(d, g);
  if (!rc) rc = set_anchor(d, g);
  return rc;
}

/* ---- host memory for the batch pool ---- */

static void *pinned_alloc(void *ctx, size_t bytes) {
  pb_device *d = ctx;
  void *p = NULL;
  cudaError_t rc = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
  if (rc == cudaSuccess) return p;
  snprintf(d->error, sizeof d->error, "cudaHostAlloc(%zu bytes): %s (%s)", bytes, cudaGetErrorName(rc),
           cudaGetErrorString(rc));
  return NULL;
}

static void pinned_free(void *ctx, void *p) {
  (void)ctx;
  if (p) cudaFreeHost(p);
}

/* ---- configuration ---- */

/* The normalize op that runs on the device, if any (the last one before batch). */
static const pb_op_cfg *on_device_normalize(const pb_config *cfg, int batch_index) {
  const pb_op_cfg *found = NULL;
  for (int i = 0; i < batch_index; i++)
    for (int j = 0; j < cfg->stages[i].nops; j++)
      if (cfg->stages[i].ops[j].kind == PB_OP_NORMALIZE && cfg->stages[i].ops[j].on_device) found = &cfg->stages[i].ops[j];
  return found;
}

static void plan_normalize(cuda_state *cs, const pb_config *cfg, int bi, const pb_shape *in) {
  const pb_op_cfg *op = on_device_normalize(cfg, bi);
  /* The kernel reads uint8: any other input (a float dataset, a host normalize before) is not its job. */
  if (!op || op->dtype == PB_DTYPE_UINT8 || !in->known || in->ndims != 3 || in->dtype != PB_DTYPE_UINT8) return;
  int c = (int)(in->chw ? in->dims[0] : in->dims[2]);
  if (c < 1 || c > PB_NORM_MAX_CHANNELS) return;
  pb_norm_params *p = &cs->norm;
  *p = (pb_norm_params){.n = (int)cfg->stages[bi].size, .c = c, .in_chw = in->chw,
                        .out_half = op->dtype == PB_DTYPE_FLOAT16};
  p->h = (int)(in->chw ? in->dims[1] : in->dims[0]);
  p->w = (int)(in->chw ? in->dims[2] : in->dims[1]);
  for (int k = 0; k < c; k++) {
    p->mean[k] = (float)op->mean[op->nmean > 1 ? k : 0];
    p->inv_std[k] = (float)(1.0 / op->std[op->nstd > 1 ? k : 0]);
  }
  cs->sample_in_bytes = (size_t)p->c * p->h * p->w;
  cs->normalize = true;
}

static void plan(cuda_state *cs, const pb_config *cfg) {
  int bi = pb_config_batch_index(cfg);
  const pb_stage_cfg *h2d = NULL;
  for (int i = 0; i < cfg->nstages; i++)
    if (cfg->stages[i].type == PB_STAGE_H2D) h2d = &cfg->stages[i];
  cs->nstreams = h2d && h2d->streams > 0 ? (h2d->streams < MAX_STREAMS ? h2d->streams : MAX_STREAMS) : 1;
  if (bi <= 0) return;
  const pb_shape *in = &cfg->stages[bi - 1].out_shape;
  uint64_t sample = pb_shape_bytes(in);
  cs->batch_bytes = sample ? (size_t)(sample * (uint64_t)cfg->stages[bi].size) : 0;
  plan_normalize(cs, cfg, bi, in);
}

static int resolve_ids(pb_device *d, const pb_config *cfg, int gpus_found, pb_err *err) {
  d->count = cfg->device.count;
  /* One rank of several on this host takes the GPUs after its local neighbours': local_rank % gpus with one
   * device per rank (device.ids, when given, are used as they are). */
  int local_rank = pb_world_get()->local_rank;
  for (int i = 0; i < d->count; i++) {
    d->ids[i] = cfg->device.nids ? cfg->device.ids[i] : pb_device_default_id(local_rank, d->count, i, gpus_found);
    if (d->ids[i] < 0 || d->ids[i] >= gpus_found)
      return pb_err_setc(err, -ENODEV, "device.%s: GPU %d does not exist (this machine has %d: ids 0..%d)",
                         cfg->device.nids ? "ids" : "count", d->ids[i], gpus_found, gpus_found - 1);
  }
  return 0;
}

static void init_fields(pb_device *d, const pb_config *cfg) {
  *d = (pb_device){.kind = "gpu", .timing_source = "cuda_events"};
  d->idle_pct_cuda_events = NAN;
  d->step_normal = cfg->device.step_normal;
  d->step_ms = cfg->device.step_ms;
  d->step_stdev_ms = cfg->device.step_stdev_ms;
  for (int i = 0; i < PB_MAX_DEVICES; i++) pb_rng_seed(&d->rng[i], cfg->seed * 1000003u + (uint64_t)i);
  d->assigns_at_h2d = true;
  d->pinned_host = true;
  for (int i = 0; i < cfg->nstages; i++)
    if (cfg->stages[i].type == PB_STAGE_H2D) d->pinned_host = cfg->stages[i].pinned;
  if (d->pinned_host) d->host_mem = (pb_pool_mem){pinned_alloc, pinned_free, d};
}

static const pb_device_ops cuda_ops = {
    .h2d = cuda_h2d,
    .step = cuda_step,
    .launch = cuda_launch,
    .discard = cuda_discard,
    .cancel = cuda_cancel,
    .finish = cuda_finish,
    .close = cuda_close,
};

/* CUPTI after calibration, so only the run's own work is in its records. */
static void start_timing(pb_device *d, cuda_state *cs) {
  char why[200] = "";
  if (getenv("PB_NO_CUPTI")) {
    snprintf(d->timing_source_reason, sizeof d->timing_source_reason, "PB_NO_CUPTI is set");
    return;
  }
  if (pb_cupti_start(why, sizeof why) == 0) {
    cs->cupti = true;
    d->timing_source = "cupti";
    return;
  }
  snprintf(d->timing_source_reason, sizeof d->timing_source_reason, "CUPTI refused: %s", why);
}

int pb_device_cuda_open(pb_device *d, const pb_config *cfg, int gpus_found, pb_err *err) {
  init_fields(d, cfg);
  int rc = resolve_ids(d, cfg, gpus_found, err);
  if (rc) return rc;
  cuda_state *cs = calloc(1, sizeof *cs);
  if (!cs) return pb_err_setc(err, -ENOMEM, "out of memory");
  uv_mutex_init(&cs->lock);
  uv_cond_init(&cs->slot_freed);
  d->impl = cs;
  d->ops = &cuda_ops;
  cs->count = d->count;
  plan(cs, cfg);
  for (int i = 0; !rc && i < cs->count; i++) {
    cs->gpu[i].id = d->ids[i];
    rc = open_gpu(d, cs, &cs->gpu[i], i);
  }
  if (rc) {
    pb_err_set(err, "device: GPU %d could not be set up: %s", cs->gpu[0].id, d->error);
    pb_device_close(d);
    return -ENODEV;
  }
  snprintf(d->name, sizeof d->name, "%s", d->names[0]);
  start_timing(d, cs);
  return 0;
}

/* The plain data a run records, shared by the layer that collects it (the engine, the device, the step
 * loop) and every layer that reads a record (analysis, reports, the trace loader): per-worker counters, data
 * errors, trace events, device steps.  Nothing here knows a thread, a queue or libuv, so a record can come
 * from a live run (record_run.h) or from a file (`pipebench analyze`) alike. */
#ifndef PB_RECORD_TYPES_H
#define PB_RECORD_TYPES_H

#include <stdbool.h>
#include <stdint.h>

/* ---- a stage worker's counters and the run's data errors ---- */

/* Per-worker counters.  Times are clipped to the measured window; *_total counts are for the accounting
 * and cover the whole run. */
typedef struct pb_counters {
  uint64_t calls, samples_in, samples_out;
  uint64_t busy_ns, wait_in_ns, blocked_out_ns;
  uint64_t busy_total_ns;       /* service time over the whole run (not clipped): with cpu_ns, CPU vs wall */
  uint64_t bytes_in, bytes_out;
  uint64_t samples_out_total, samples_dropped_total, samples_in_flight, samples_error_total;
  uint64_t files_read_total;
  uint64_t samples_replayed_total; /* cache: samples handed on again after the first epoch */
  uint64_t read_ops;               /* read: reads of up to block_bytes issued inside the window (IOPS) */
} pb_counters;

#define PB_FIRST_ERRORS 10
typedef struct pb_error_record {
  char file[256];
  char message[256];
} pb_error_record;

/* ---- trace events (src/engine/pipeline/trace.h keeps them in per-worker rings) ---- */

/* A worker's ring holds PB_TRACE_MIN_RING to PB_TRACE_MAX_RING events: a worker's trace in a record never
 * holds more (the trace loader refuses more). */
#define PB_TRACE_MIN_RING (1u << 12)
#define PB_TRACE_MAX_RING (1u << 18)

#define PB_NO_KEY UINT64_MAX
#define PB_BATCH_KEY(batch_id) ((batch_id) | (1ull << 63))
#define PB_KEY_IS_BATCH(key) ((key) != PB_NO_KEY && ((key) >> 63))

enum pb_event_kind { PB_EV_WAIT = 1, PB_EV_PROCESS = 2, PB_EV_BLOCKED = 3, PB_EV_HANDOFF = 4 };

enum pb_event_flags {
  PB_EVF_CALL_START = 1u << 0,   /* first segment of a call to process(): its input just arrived */
  PB_EVF_EMITTED = 1u << 1,      /* handed `out` on at the end of this segment */
  PB_EVF_JOINED = 1u << 2,       /* the input joined batch `out` */
  PB_EVF_PRODUCE = 1u << 3,      /* a source's or flush's work, not a call on an input */
  PB_EVF_BLOCKED_POOL = 1u << 4, /* BLOCKED on a buffer pool, not on a full queue */
};

typedef struct pb_event {
  uint64_t t0_ns, t1_ns;  /* pb_now_ns() clock */
  uint64_t key;           /* input element (PB_NO_KEY: none) */
  uint64_t out;           /* produced or joined element (PB_NO_KEY: none) */
  uint32_t bytes;         /* input bytes (saturated at 4 GB) */
  uint8_t kind, flags;
  uint16_t reserved;
} pb_event;

/* ---- device steps (src/engine/steps.h runs them) ---- */

typedef struct pb_step {
  uint64_t prev_end_ns;    /* end of this device's previous step (or of the start): the step begins */
  uint64_t ready_ns;       /* the batch became available to the device (handed into the last queue) */
  uint64_t h2d_start_ns, h2d_end_ns;
  uint64_t compute_start_ns, compute_end_ns;
  uint64_t bytes;
  uint64_t key;            /* the batch's trace key (PB_BATCH_KEY of its batch id) */
  uint32_t samples;
  uint16_t device;
  bool measured;
  uint64_t comm_start_ns, comm_end_ns; /* the gradient exchange after the compute (device.allreduce); 0: none */
} pb_step;

/* When the step is over: after its gradient exchange, when it has one, else at the end of its compute.
 * The device's next step begins here (its prev_end_ns). */
static inline uint64_t pb_step_end_ns(const pb_step *st) {
  return st->comm_end_ns > st->compute_end_ns ? st->comm_end_ns : st->compute_end_ns;
}

/* The step kernel's accuracy, measured when the device opens (GPU only). */
typedef struct pb_step_kernel_check {
  bool measured;
  double target_ms, measured_ms, error_pct;
} pb_step_kernel_check;

#endif

/* The training loop's side of the run: one thread per device takes a batch from the pipeline's last
 * queue, makes sure it is on the device, runs the step, and records when each of those happened.
 * It also decides when the measured window opens (after run.warmup_steps) and closes (run.steps or
 * run.duration_s reached), and tells the engine so its counters clip to the same window. */
#ifndef PB_STEPS_H
#define PB_STEPS_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "allreduce.h"
#include "device.h"
#include "engine.h"
#include "record_types.h"


/* Batches taken from the pipeline for one device, in arrival order (growable ring). */
typedef struct pb_deal_fifo {
  pb_elem *v;
  size_t head, n, cap;
} pb_deal_fifo;

typedef struct pb_steps pb_steps;
typedef struct pb_device_thread {
  pb_steps *steps;
  int index;
  uv_thread_t thread;
} pb_device_thread;

/* Steps kept in memory before the oldest are written out (PB_DEBUG_STEPS_IN_MEMORY overrides it). */
#define PB_STEPS_IN_MEMORY 8192

struct pb_steps {
  uv_mutex_t lock;
  uv_cond_t changed;
  /* The step record, in completion order.  A long run would grow it by ~90 bytes per step for ever, so
   * past mem_limit records the held ones are appended to an unlinked file in the output directory
   * (spill_fd) and v starts again empty: v[0] is then record number `spilled`.  pb_steps_finish maps the
   * whole file back after the run, when the report needs every step (steps_spill.c). */
  pb_step *v;
  size_t n, cap;           /* n: records made (spilled ones included); cap: v's room */
  size_t spilled;          /* records in the spill file */
  size_t mem_limit;        /* records held in memory before spilling */
  int spill_fd;            /* -1: none yet */
  bool spill_off;          /* no spill directory, or the file could not be written: memory only */
  size_t map_bytes;        /* v is a private mapping of the spill file (after pb_steps_finish), else 0 */
  char spill_dir[4096];
  int64_t warmup, target;  /* target: measured steps wanted (0 = until duration or end of data) */
  uint64_t duration_ns;    /* 0 = none */
  uint64_t start_ns;       /* when the run started */
  bool window_open;
  uint64_t warmup_end_ns;  /* latest end among the warm-up steps */
  uint64_t window_start_ns, window_end_ns;
  uint64_t samples_consumed, measured_count;
  int active_devices;
  bool done;               /* the window closed, or every device ran out of data */
  bool end_of_data;
  bool failed;             /* a device call failed: exit 1 */
  bool peer_stopped;       /* another rank of the job stopped exchanging gradients: this one stopped too */
  pb_exchange *exchange;   /* device.allreduce barrier/mpi between ranks (NULL: none) */
  uint64_t comm_model_ns;  /* device.allreduce model: device time added after every step (0: none) */
  uint64_t samples_failed; /* samples of batches whose device call failed (accounting: errors) */
  char failure[256];
  pb_engine *engine;
  pb_device *device;
  int threads_started;
  pb_device_thread threads[PB_MAX_DEVICES];
  /* Dealing batches to devices round-robin (or to the device a GPU copy chose): one thread at a time
   * pops the pipeline's last queue and files each batch under its device. */
  pb_deal_fifo fifo[PB_MAX_DEVICES];
  bool popping;            /* a device thread is popping for everyone */
  bool no_more;            /* the pipeline's output ended (or was cancelled) */
  uint64_t next_deal;      /* round-robin counter */
  uv_cond_t dealt;
  uint64_t samples_undelivered; /* in batches dealt but never stepped (counted as queued) */
  uint64_t measured_samples, measured_compute_ns; /* running sums over measured steps (live progress) */
};

/* What the run has done so far, for the live progress line (one lock round trip). */
typedef struct pb_steps_live {
  size_t done;                  /* steps completed, warm-up included */
  int64_t warmup, target;       /* target: measured steps wanted (0: until duration or end of data) */
  uint64_t duration_ns;         /* 0 = none */
  bool measuring;               /* the measured window is open */
  uint64_t window_start_ns;
  uint64_t measured, measured_samples, measured_compute_ns;
  int devices;
} pb_steps_live;

/* Call before pb_engine_start: the run's clock (and, without warm-up, the window) starts here.  `x`: the
 * rank's gradient exchange (NULL in a single process); the device thread makes every exchange and, when
 * it stops, the last one (pb_exchange_leave). */
int pb_steps_init(pb_steps *s, const pb_config *cfg, pb_engine *e, pb_device *d, pb_exchange *x);
/* Lets the step record spill to an unlinked file in `dir` (the output directory) once it outgrows
 * PB_STEPS_IN_MEMORY; without a call it stays in memory.  Call before pb_steps_start. */
void pb_steps_spill_to(pb_steps *s, const char *dir);
/* Starts one thread per device; the window opens at once when there are no warm-up steps. */
int pb_steps_start(pb_steps *s, pb_err *err);
/* Waits up to timeout_ms for `done`; returns true once done. */
bool pb_steps_wait(pb_steps *s, int timeout_ms);
/* Marks the run over (interrupt): closes the window at the last measured step. */
void pb_steps_stop(pb_steps *s);
void pb_steps_join(pb_steps *s);
/* After the join: makes v hold every record in order again (maps the spill file back).  0 or -errno,
 * after printing one line. */
int pb_steps_finish(pb_steps *s);
/* Hands the record (v, n) to the caller, with the bytes to munmap (0: free it); v is NULL after. */
pb_step *pb_steps_take(pb_steps *s, size_t *map_bytes);

/* Internal to steps.c and steps_spill.c.  Under the lock: room in v for one more record (spilling the
 * held ones, or growing v).  0 or -ENOMEM. */
int pb_steps_make_room(pb_steps *s);
/* Frees v (or unmaps it) and closes the spill file. */
void pb_steps_free_record(pb_steps *s);
void pb_steps_close(pb_steps *s);
/* Steps completed so far (for progress). */
size_t pb_steps_count(pb_steps *s);
void pb_steps_get_live(pb_steps *s, pb_steps_live *out);

#endif

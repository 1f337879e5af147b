/* The pipeline engine: a chain of stages joined by bounded queues, N worker threads per stage.
 *
 *   source -> q0 -> stage 1 -> q1 -> ... -> stage N -> qN -> device (run.c)
 *
 * Every stage is the same thing to the engine: a pb_stage_ops table (stage_*.c).  A worker pops a chunk of
 * elements, calls ops->process on each (which hands results on with pb_emit), and pushes its outputs in
 * chunks.  End of data flows downstream through the queues; cancellation wakes every waiter at once.
 *
 * Counters are per worker (no sharing on the hot path) and clipped to the measured window, which the
 * device side opens after the warm-up steps and closes after the last measured step. */
#ifndef PB_ENGINE_H
#define PB_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common.h"
#include "config.h"
#include "elem.h"
#include "files.h"
#include "pool.h"
#include "queue.h"
#include "stage_desc.h"
#include "stats.h"
#include "record_types.h"
#include "trace.h"

#define PB_CHUNK 64                     /* elements moved per queue operation at most */
#define PB_SAMPLE_QUEUE_CAPACITY 256     /* queues carrying samples (before batch) */
/* The hand-off bound: no output waits in its worker longer than this for company (a slow stage hands on
 * each output as it makes it), and a worker that shares its input queue takes no more elements at once
 * than it starts on within this time, so a sibling never idles while work sits in another's hands. */
#define PB_FLUSH_AFTER_NS 50000

typedef struct pb_stage pb_stage;
typedef struct pb_worker pb_worker;
typedef struct pb_engine pb_engine;
struct pb_device;

/* Which memory plan: every queue and prefetch slot full (the bound that limits.max_memory_mb checks, reached
 * when the device is the limit and the buffers back up), or every queue empty (only what the workers have in
 * hand, the shuffle buffer, the batches forming and on the device: where the input pipeline is the limit). */
typedef enum pb_queue_fill { PB_QUEUES_FULL, PB_QUEUES_EMPTY } pb_queue_fill;

/* A stage type's runtime and the engine's hooks into it.  Its config facts (keys, placement, shape, knobs) are
 * its description `desc` (src/core/stages/<type>.c); the planning hooks say what the engine cannot know of a
 * type by itself, and a NULL hook is the generic rule. */
typedef struct pb_stage_ops {
  const char *type;
  const pb_stage_desc *desc; /* NULL for the in-memory source, which is no config type */
  /* Bytes of buffers this stage will allocate (planned before anything is allocated, for limits), with every
   * queue full (the bound) or with every queue empty (what is in hand while the device waits). */
  uint64_t (*memory_bytes)(const pb_stage *s, pb_queue_fill fill);
  /* Planned payload bytes of one sample leaving this stage (before the batch), given the stage before's:
   * an estimate where the shape does not say (read's files, decode's images).  NULL: the shape's bytes,
   * else input_bytes. */
  uint64_t (*sample_bytes)(const pb_stage *s, uint64_t input_bytes);
  /* Batches the queue after this stage holds (prefetch's depth, h2d's streams).  NULL: one. */
  int (*out_capacity)(const pb_stage *s);
  /* The ahead limit of the queue after it (pb_queue_set_ahead: a map's `ahead`, 0 for a batch on demand);
   * its workers then reserve room before they take input.  NULL: -1, none. */
  int (*ahead_limit)(const pb_stage *s);
  /* Under an ahead limit, for a stage that makes one output of several inputs (a batch): the inputs this
   * worker still needs for its next output.  NULL: one output per input. */
  int (*inputs_wanted)(const pb_worker *w);
  /* Worker threads a stage of this config runs (h2d: one per copy stream).  NULL: sc->threads. */
  int (*threads)(const pb_stage_cfg *sc);
  /* Samples the stage holds back besides its chunks and queue (a shuffle buffer): they keep upstream pools'
   * buffers, and a good sample can come after that many failures.  NULL: none. */
  uint64_t (*held_samples)(const pb_stage *s);
  /* Does it hand on the very buffers it received (so they stay out of their pool longer)?  NULL: no. */
  bool (*passes_buffers)(const pb_stage *s);
  /* It keeps the first epoch and replays it (cache): the source makes one epoch. */
  bool replays_epoch;
  int (*init)(pb_stage *s, pb_err *err);
  /* Sources only: makes up to max new elements and hands them on with pb_emit; returns how many,
   * 0 at end of data, or -ECANCELED. */
  int (*produce)(pb_worker *w, int max);
  /* Takes ownership of *in: emits it (or what it becomes) with pb_emit, or merges and releases it.
   * Returns 0, or -ECANCELED after giving anything it could not finish to pb_worker_abandon. */
  int (*process)(pb_worker *w, pb_elem *in);
  /* End of data reached this worker: hand on what it still holds (e.g. a partial batch). */
  int (*flush)(pb_worker *w);
  /* The run was cancelled: release what this worker still holds; returns the samples in it. */
  uint64_t (*abandon)(pb_worker *w);
  /* Wake this stage's threads from any wait of its own (e.g. on a buffer pool). */
  void (*cancel)(pb_stage *s);
  void (*close)(pb_stage *s);
} pb_stage_ops;


struct pb_worker {
  pb_stage *stage;
  int index;
  uv_thread_t thread;
  pb_rng rng;
  void *state;                  /* the stage's per-worker state */
  pb_counters ctr;
  pb_hist hist;                 /* service time per call, ns, measured window only */
  pb_elem in[PB_CHUNK], out[PB_CHUNK];
  int nout;
  int reserved;                 /* slots reserved in the output queue under its ahead limit, not yet filled */
  uint64_t out_first_ns;        /* when the oldest unsent output was emitted */
  uint64_t blocked_in_call_ns;  /* blocked time inside the current call, excluded from service time */
  uint64_t blocked_in_call_clipped_ns; /* the part of it inside the measured window */
  uint64_t src_mark_ns;         /* per_element: when the current element's work began */
  uint64_t last_service_ns;     /* per_element: the previous element's own service time (the next one's
                                 * likely wait: outputs that would be held past PB_FLUSH_AFTER_NS go now) */
  uint64_t spread_ns;           /* a source's shared work not yet charged (pb_worker_spread_work) ... */
  uint64_t spread_left;         /* ... and the elements still to share it */
  uint64_t elem_ns;             /* service per input element, smoothed (0: not known yet): how many to
                                 * take at once when siblings share the input queue */
  uint64_t call_t0_ns;          /* when the current call to process() began */
  bool per_element;             /* work counted per element emitted (a source; a flush) */
  bool cancelled;
  uint64_t cpu_ns;              /* this thread's CPU time, start to exit (CLOCK_THREAD_CPUTIME_ID) */
  int64_t cpu_delay_ns;         /* time runnable but waiting for a core, start to exit; -1: unknown */
  /* tracing (trace.h): the ring, and the PROCESS segment being timed */
  pb_trace_ring trace;
  bool in_segment, producing;   /* producing: a source's or flush's work, cut at every emit */
  uint8_t seg_flags;
  uint64_t seg_t0_ns, seg_key, seg_out, seg_bytes;
};

struct pb_stage {
  const pb_stage_ops *ops;
  const pb_stage_cfg *cfg;      /* NULL for the in-memory source */
  char name[PB_NAME_LEN];
  int index;                    /* position in the engine */
  int threads;
  bool is_source;
  bool batched;                 /* elements leaving this stage are batches */
  pb_shape sample_shape;        /* one sample leaving this stage */
  pb_queue *in, *out;
  pb_engine *engine;
  void *state;                  /* the stage's shared state */
  pb_worker *workers;
  int threads_started;          /* workers whose thread runs (what join must wait for) */
  uint64_t sample_bytes;        /* planned payload bytes of one element leaving this stage (estimate) */
  int chunk;                    /* elements a worker takes from its input queue at once */
  int out_chunk;                /* outputs a worker gathers before handing them on */
  /* Samples failed in a row here with no good output between (pb_worker_error counts them, pb_emit clears
   * the count), and when the first of them failed: data that stops working mid-run ends the run
   * (pb_streak_hopeless) instead of failing forever. */
  _Atomic uint64_t fail_streak, fail_streak_since_ns;
};

struct pb_engine {
  const pb_config *cfg;
  bool synthetic;               /* --data synthetic: per-sample stages replaced by the source */
  struct pb_device *device;
  pb_file_list files;           /* real data: the dataset's files (stage 0 reads them) */
  pb_files_skipped files_skipped; /* files of dataset.path left out for their extension */
  int rank, world_size;         /* sharding hook for multi-process runs: this process reads every
                                 * world_size-th file from `rank` (0 and 1 for a single process) */
  bool have_files;
  /* Memory past the plan: what limits.max_memory_mb leaves above the planned buffers, for a sample larger
   * than any the plan saw (pb_pool_plan); a sample the budget cannot cover is an error on that sample. */
  pb_mem_budget mem_budget;
  int nstages;
  pb_stage stages[PB_MAX_STAGES + 1];
  pb_queue queues[PB_MAX_STAGES + 1]; /* queues[i] is stage i's output; the last feeds the device */
  int consumers;                /* threads reading the last queue (the devices) */
  _Atomic uint64_t window_start_ns, window_end_ns; /* UINT64_MAX = not yet */
  _Atomic bool cancelled;
  _Atomic uint64_t next_sample_id, next_batch_id;
  /* Errors on data (run.on_error): the first ones kept for the report; `failed` stops the run. */
  uv_mutex_t errors_lock;
  uint64_t errors_total;
  int nfirst_errors;
  pb_error_record first_errors[PB_FIRST_ERRORS];
  _Atomic bool failed;
  char failure[1024];
  _Atomic uint64_t batches_made; /* any batch at all: with none, a flood of errors is a broken run */
  _Atomic uint64_t files_claimed; /* files the read stage has taken on, every epoch (live progress's ETA) */
  _Atomic uint64_t epoch_samples; /* samples in one epoch of this process's data, as best known: from the
                                   * config at the start, raised by the read stage as it learns how many
                                   * records its files hold (0: unknown); the failure streak's yardstick */
  bool tracing;                 /* per-event rings (off with --no-trace; counters are always on) */
};

/* Lays out the stages for cfg (synthetic: source + batch and after), checks every stage is implemented
 * and that planned memory fits limits.max_memory_mb.  Allocates nothing big.  -EINVAL with err set. */
int pb_engine_plan(pb_engine *e, const pb_config *cfg, bool synthetic, int consumers, pb_err *err);
/* The same for one rank of a multi-process job: this process reads files rank, rank + world_size, ... of
 * the dataset's listing (round-robin, DLIO's rule; each epoch shuffles that shard), so the ranks' shards are
 * disjoint and together cover the dataset once per epoch. */
int pb_engine_plan_shard(pb_engine *e, const pb_config *cfg, bool synthetic, int consumers, int rank,
                         int world_size, pb_err *err);
/* Does this build run every stage cfg needs (synthetic: batch and after)?  -EINVAL with err set. */
int pb_engine_check(const pb_config *cfg, bool synthetic, pb_err *err);
/* Epochs the source must make: 1 when a cache stage replays the rest, else run.epochs (0 = endless). */
uint32_t pb_engine_source_epochs(const pb_engine *e);
/* Planned buffer bytes, and a "stage N MB, ..." description of the largest users. */
uint64_t pb_engine_memory_bytes(const pb_engine *e, pb_queue_fill fill, char *who, size_t who_len);
/* The sample error for `bytes` that the memory budget could not cover in stage s: the sample's size, the
 * plan's size per sample, and what the limit leaves past the plan. */
void pb_engine_over_plan_msg(const pb_stage *s, size_t bytes, char *msg, size_t len);
/* Allocates queues, pools and per-stage state; then starts every worker thread. */
int pb_engine_start(pb_engine *e, pb_err *err);
pb_queue *pb_engine_output(pb_engine *e);
void pb_engine_open_window(pb_engine *e, uint64_t t_ns);
void pb_engine_close_window(pb_engine *e, uint64_t t_ns);
void pb_engine_cancel(pb_engine *e);
/* Waits for every worker to exit (after end of data or cancel). */
void pb_engine_join(pb_engine *e);
/* Samples still queued between stages (drains and releases them). */
uint64_t pb_engine_drain(pb_engine *e);
void pb_engine_close(pb_engine *e);

/* Capacity, in elements, of the queue after stage s: samples before batch; after it one batch, or what the
 * stage's out_capacity says (prefetch's `depth`, h2d's `streams`). */
int pb_stage_out_capacity(const pb_stage *s);
/* Buffers a stage's pool needs: its own workers' outputs, its queue, and every place downstream
 * where they can sit until a stage releases them (a shuffle buffer included). */
int pb_stage_pool_buffers(const pb_stage *s, pb_queue_fill fill);
/* Elements one worker holds of a chunk in a plan: the whole chunk when its queue is full; one when the queues are
 * empty (a worker takes what is there and hands on what it made within PB_FLUSH_AFTER_NS). */
int pb_chunk_in_hand(int chunk, pb_queue_fill fill);
/* Slots of the queue after s that a plan counts: its capacity when full, none when empty. */
int pb_queue_slots(const pb_stage *s, pb_queue_fill fill);
/* Threads that read stage i's output queue (the next stage's, or the devices'). */
int pb_engine_next_consumers(const pb_engine *e, int i);

/* Worker threads of all stages. */
int pb_engine_workers(const pb_engine *e);
/* Sums the counters and histograms of a stage's workers. */
void pb_stage_totals(const pb_stage *s, pb_counters *ctr, pb_hist *hist);

/* --- for stage implementations --- */
/* Hands one output element on (buffered; pushed in chunks).  -ECANCELED when the run was cancelled
 * (the element is then counted in flight and released). */
int pb_emit(pb_worker *w, const pb_elem *e);
/* A sample (or batch) failed in this stage: counted as errors, its buffer released, the first few kept
 * with file and message.  The run stops (exit 1) when run.on_error is "fail", when run.max_errors is
 * exceeded, or when `fatal` (a device failure): the engine is cancelled then and there (pb_engine_fail).
 * The caller must hold no queue or pool lock. */
void pb_worker_error(pb_worker *w, pb_elem *e, const char *file, const char *message, bool fatal);
bool pb_engine_failed(pb_engine *e);
/* The rule that stops a run whose data stopped working (a dataset removed, renamed or truncated mid-run, a
 * mount gone): a stage where `failures` samples failed in a row, the first at since_ns, with no good one
 * between, is hopeless at now_ns when the streak reaches twice an epoch, plus the samples shuffles ahead of
 * it can hold back (`reorder_samples`), plus PB_STREAK_MIN: every file was then tried and failed, whatever
 * the epochs' order and the threads' interleaving.  Or when it has lasted PB_STREAK_MAX_NS with at least
 * PB_STREAK_MIN failures (files that each take long to fail).  epoch_samples 0 (unknown: a user's TFRecord
 * files before one was read through) stands for an epoch of PB_STREAK_UNKNOWN_EPOCH / 2, so 100 corrupt
 * records at the head of the first file do not stop a run whose other records are fine, and data dead from
 * the start still stops within milliseconds. */
#define PB_STREAK_MIN 64
#define PB_STREAK_UNKNOWN_EPOCH 10000
#define PB_STREAK_MAX_NS 30000000000ull
bool pb_streak_hopeless(uint64_t failures, uint64_t since_ns, uint64_t now_ns, uint64_t epoch_samples,
                        uint64_t reorder_samples);
/* Raises the engine's epoch_samples to `samples` (the read stage, as it learns its files' record counts). */
void pb_engine_note_epoch_samples(pb_engine *e, uint64_t samples);
/* Stops the run with exit 1 and this message (first call wins), cancelling the engine at once: every
 * worker's next queue or pool wait returns -ECANCELED.  The caller must hold no queue or pool lock. */
void pb_engine_fail(pb_engine *e, const char *message);
/* The path of file `index` of the run's file list, or NULL (in-memory data). */
const char *pb_engine_file_path(const pb_engine *e, uint32_t index);
/* The key an element is known by in the trace: its sample id, or PB_BATCH_KEY(batch_id) for a batch. */
static inline uint64_t pb_elem_key(const pb_elem *e) {
  return e->batch_id != PB_NO_BATCH ? PB_BATCH_KEY(e->batch_id) : e->id;
}
/* Batch membership for the trace: the input of the current call joined batch `batch_id`. */
void pb_worker_trace_joined(pb_worker *w, uint64_t batch_id);
/* The work this source did since its previous element (reading a file of several samples) is the cost
 * of its next `elements` elements: each one's service time gets an equal share, charged when it is
 * made, so the stage's capacity counts the file per sample however the measured window cuts it. */
void pb_worker_spread_work(pb_worker *w, uint64_t elements);
/* Counts a sample-carrying element as in flight and releases its buffer. */
void pb_worker_abandon(pb_worker *w, pb_elem *e);
/* Time a call spent waiting for room downstream by other means than a queue or pool (a device buffer):
 * counted as blocked-out time, not service. */
void pb_worker_note_blocked(pb_worker *w, uint64_t t0_ns, uint64_t t1_ns);
/* pb_pool_get with its wait counted as blocked-out time. */
pb_buf *pb_worker_get_buf(pb_worker *w, pb_pool *pool);
/* Time in [t0,t1) that falls inside the measured window. */
uint64_t pb_engine_clip(const pb_engine *e, uint64_t t0, uint64_t t1);
bool pb_engine_in_window(const pb_engine *e, uint64_t t);

/* The stage ops table for a type, or NULL when this build does not implement it yet. */
const pb_stage_ops *pb_stage_ops_for(pb_stage_type t);
extern const pb_stage_ops pb_stage_source_ops;

#endif

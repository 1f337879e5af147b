/* A tf.data job as a TensorFlow Profiler capture shows it (issue 35): the input pipeline's iterator tree with
 * each iterator's measured work, and the training steps with the time each waited for its batch.
 *
 * Read from the host plane of an XSpace (xspace.h):
 * - every `Iterator::Root::...::<Kind>` event is one GetNext call of the iterator its `id` stat names (its
 *   parent through `parent_id`; `name`, `parallelism`, `buffer_limit`, `batch_size`, `autotune` stats say
 *   what it is).  An iterator's self time is the call's duration less the Iterator events nested in it on
 *   the same thread;
 * - an asynchronous iterator (prefetch, a parallel map, map-and-batch, a parallel interleave or batch) runs
 *   on a line of its own, where its `<Kind>Produce` events mark its runner; the user functions it starts
 *   there (`InstantiatedCapturedFunction::RunAsync`, stat `id`) execute on the threadpool as
 *   `ExecutorState::Process` events with the same `id`, and their durations are the iterator's per-element
 *   work; from the start to the run's last event (`ExecutorDoneCallback`) is its latency;
 * - a step is an event with a `step_num` stat (tf.profiler.experimental.Trace("train", step_num=..), as
 *   Keras marks its steps); the time it waited for input is that of the outermost events inside it (same
 *   thread) that hold an `IteratorGetNext...` event (the eager call around the op).
 *
 * Plain data: nothing here knows pipebench's record or config. */
#ifndef PB_TFDATA_H
#define PB_TFDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "gpu_plane.h"
#include "xspace.h"

#define PB_TF_MAX_ITERATORS 64

/* Count, sum and sum of squares of durations in picoseconds (double: a capture's sums pass 2^63 ps only
 * after 100 days). */
typedef struct pb_tf_times {
  uint64_t n;
  double sum_ps, sumsq_ps2;
} pb_tf_times;

double pb_tf_times_mean_ns(const pb_tf_times *t);  /* 0 when empty */
double pb_tf_times_stdev_ns(const pb_tf_times *t); /* population; 0 with fewer than two */

typedef struct pb_tf_iterator {
  uint64_t id, parent_id;  /* parent_id 0: none (the root) */
  int parent;              /* index in the iterators, -1: none or not seen */
  char kind[48];           /* the path's last part: "ParallelMapV2", "MapAndBatch", "Prefetch", "Range" */
  char name[128];          /* the `name` stat: "ParallelMapDatasetV2:1", "fused(MapDataset:2,BatchDatasetV2:3)" */
  int64_t parallelism, buffer_limit, batch_size; /* -1: the events do not say */
  int64_t cpu_budget;                            /* the root's: the cores tf.data plans for (-1: not said) */
  bool autotune;           /* its `autotune` stat was "true" */
  bool async;              /* it has a runner of its own (a `<Kind>Produce` event was seen) */
  pb_tf_times calls;       /* GetNext calls: their self time */
  pb_tf_times functions;   /* the user functions it ran (async iterators), each run's execution (the sum of its
                            * ExecutorState::Process events: the threadpool's work on it) */
  pb_tf_times latency;     /* the same runs from their start to their last event (ExecutorDoneCallback): the
                            * execution and the waits between its ops, what one of `parallelism` slots is held */
  pb_tf_times waits;       /* the same runs' gaps between their executions, less the part when cpu_budget or more
                            * executions ran (every core busy): what a run waited for besides a core (an
                            * asynchronous op).  Not its hop to the threadpool before its first execution nor its
                            * done callback after the last: the executor's bookkeeping, which the profiler's own
                            * recording inflates (docs/IMPORT.md) */
} pb_tf_iterator;

typedef struct pb_tf_step {
  int64_t num;             /* its step_num */
  int64_t start_ps, duration_ps;
  int64_t wait_ps;         /* inside it, waiting in IteratorGetNext */
  int64_t pipeline_ps;     /* of that wait, the pipeline's own GetNext (its `Iterator::Root` calls); the rest is
                            * the call's dispatch (Python, the eager op), which a prefetch does not take off
                            * the step.  -1: no Root call seen (all of the wait counts as the pipeline's) */
  int64_t element_bytes;   /* what that GetNext returned (the `element_size` stat), -1: not said */
  int64_t h2d_ps;          /* with GPU planes: the time copies to a device that began in it ran (their union,
                            * to its end); 0 without */
} pb_tf_step;

/* One piece of an iterator's work in the capture, for a record of the job (capture_record.h): a GetNext call
 * (its span on its line, and its self time: the span less the Iterator calls nested in it), or one run of a
 * user function it started (from the start to its last event, and its execution on the threadpool). */
typedef enum pb_tf_work_kind { PB_TF_CALL = 1, PB_TF_FUNCTION = 2 } pb_tf_work_kind;

typedef struct pb_tf_work {
  int iterator;
  int kind; /* pb_tf_work_kind */
  int line; /* the host plane's line it ran on (a call's; a function's start) */
  int64_t start_ps, end_ps;
  int64_t own_ps;  /* a call's self time; a function run's execution */
  int64_t element; /* a function run: the `element_id` of the `<Kind>Produce` event it started in (the
                    * element it makes part of: map-and-batch's batch), 0: none */
} pb_tf_work;

/* An element an asynchronous iterator handed to its consumer: a `<Kind>Consume` event (its `element_id`, the
 * `<Kind>Produce` event's around the run that made it) inside the consumer's GetNext call of that iterator.
 * Which element a GetNext returns: with deterministic=False, not the next one started. */
typedef struct pb_tf_consume {
  int iterator;
  int64_t element;
  int64_t t_ps;
} pb_tf_consume;

/* An iterator instance's id and the iterator it is one of (a slot of pb_tfdata's id table). */
typedef struct pb_tf_id {
  uint64_t id;
  int iterator;            /* -1: an empty slot */
} pb_tf_id;

#define PB_TF_MAX_IDS (1u << 20) /* iterator instances: a repeat makes its input's iterators anew each epoch */

typedef struct pb_tfdata {
  char host[128];          /* the capture's host name ("" when it names none) */
  char step_name[64];      /* the step markers' event name ("train") */
  int niterators;
  pb_tf_iterator iterators[PB_TF_MAX_ITERATORS];
  size_t nsteps;
  pb_tf_step *steps;       /* in start order (owned) */
  /* every instance id seen, to its iterator: the instances of one dataset (same kind and `name`, e.g. each
   * epoch's under a repeat) are one iterator.  Open addressing, ids_cap a power of two (owned). */
  pb_tf_id *ids;
  size_t nids, ids_cap;
  pb_tf_work *work; /* every call and function run of every iterator, in start order (owned) */
  size_t nwork, work_cap;
  pb_tf_consume *consumes; /* every element handed on with an element_id, in time order (owned) */
  size_t nconsumes, consumes_cap;
  pb_gpu_activity gpu; /* the GPU planes' kernels and copies (ndevices 0: a CPU-only capture; owned) */
} pb_tfdata;

/* Reads the host plane of x into *out (pb_tfdata_free it).  0, or a negative errno with err set to one line
 * naming `what`: -EBADMSG when there is no host plane, no tf.data iterator, or more than
 * PB_TF_MAX_ITERATORS of them or more than PB_TF_MAX_IDS instances; -ENOMEM. */
int pb_tfdata_read(const pb_xspace *x, const char *what, pb_tfdata *out, pb_err *err);
void pb_tfdata_free(pb_tfdata *t);

/* The input pipeline as a chain, source first: from the root (the iterator without a parent) down through
 * the child that did the most work, into idx (at most max).  Returns its length. */
int pb_tfdata_chain(const pb_tfdata *t, int *idx, int max);

/* Over the steps after the first when there are three or more (the first carries the pipeline's start): the
 * mean step, and the mean and population stdev of the step less the pipeline's part of its input wait
 * (`pipeline_ps`: the device's time, with the GetNext call's own dispatch, which no prefetch takes off the
 * step), in ms; NAN means without steps.  device_sd_ms may be NULL. */
void pb_tfdata_step_ms(const pb_tfdata *t, double *step_ms, double *device_ms, double *device_sd_ms);

/* tf.data's cpu_budget as an iterator's `cpu_budget` stat says it (the root's; at most 10^6), -1: not said. */
int pb_tfdata_cpu_budget(const pb_tfdata *t);

/* Over the same steps, the mean time a step copied to the device (pb_tf_step.h2d_ps), in ms; 0 without GPU
 * planes, NAN without steps. */
double pb_tfdata_h2d_ms(const pb_tfdata *t);

/* How much slower the pipeline's functions ran at the end of the capture than at its start, in %: over the
 * function runs of every iterator with PB_TF_DRIFT_MIN_RUNS or more in each third of the runs' span, the runs'
 * execution in the last third against the first, iterator by iterator, weighted by each one's runs:
 * 100 x (sum n_i last_i / sum n_i first_i - 1) with last_i, first_i the mean execution of iterator i's runs that
 * started in that third.  Negative: they sped up.  NAN: no iterator has enough runs.  The work a twin spins is
 * the whole capture's mean; a large drift says the profiler or the machine changed the job while it was
 * captured (TensorFlow's oneDNN ops slow down the longer a capture runs: docs/IMPORT.md). */
#define PB_TF_DRIFT_MIN_RUNS 5
double pb_tfdata_work_drift_pct(const pb_tfdata *t);

/* Share of the steps' time spent waiting for input, in % (NAN without steps). */
double pb_tfdata_input_bound_pct(const pb_tfdata *t);

#endif

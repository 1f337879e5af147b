/* What a run recorded, as plain data: the step timeline, each stage's counters and histogram, each
 * worker's trace events, the accounting.  The analysis (metrics.c, analysis/) reads only this, so that
 * a live run (pb_record_from_run) and `pipebench analyze` (pb_record_load, from trace.json) take the
 * same code path and give the same report. */
#ifndef PB_RECORD_H
#define PB_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "calibration.h"
#include "config.h"
#include "record_types.h"
#include "stats.h"

typedef struct pb_worker_trace {
  pb_event *ev;                 /* kept events, oldest first (owned) */
  uint32_t n;
  uint64_t dropped;             /* older events the ring overwrote */
} pb_worker_trace;

typedef struct pb_stage_rec {
  char name[PB_NAME_LEN];
  char type[16];                /* "read", "map", ... or "source" for the in-memory source */
  int threads;
  int cfg_index;                /* index in cfg->stages; -1 for the in-memory source */
  bool is_source;               /* makes elements (no input queue) */
  bool skipped;                 /* in the config but not run (synthetic mode) */
  bool batched;                 /* elements leaving it are batches */
  pb_counters ctr;              /* summed over workers */
  pb_hist hist;                 /* service time per call, measured window */
  uint64_t cpu_ns;              /* CPU time of its threads, whole run */
  int64_t cpu_delay_ns;         /* time its threads were runnable but waiting for a core, whole run; -1:
                                 * unknown (no /proc/thread-self/schedstat, or a trace from before it) */
  double queue_mean_fill;       /* output queue, 0..1 */
  int queue_capacity;
  pb_worker_trace *workers;     /* `threads` entries when traced, else NULL (owned) */
} pb_stage_rec;

/* Where a record came from when another tool made it: `pipebench analyze` of a TensorFlow Profiler capture
 * (src/import/capture_record.h).  tool "" for a run of pipebench. */
#define PB_MAX_IMPORT_HOSTS 16
#define PB_MAX_IMPORT_ADVICE 4
typedef struct pb_import_host {
  char host[128], capture[256];
  uint64_t steps;
  double input_bound_pct; /* the share of its steps' time spent waiting for input */
  double samples_per_s;   /* its steps' rate: batch size over the mean step */
  char bottleneck[128];   /* the capture's verdict: the slowest iterator's dataset name, "" none */
} pb_import_host;

typedef struct pb_import_advice {
  char text[320];         /* in the other tool's terms: "num_parallel_calls=4 on ParallelMapDatasetV2:1" */
  double predicted_per_s; /* samples/s its model predicts; NAN: not predicted */
} pb_import_advice;

/* A capture whose functions' execution drifted this much (either way) from its first third to its last gets a
 * warning: well beyond the captures of the bench's pipelines without such a disturbance (docs/IMPORT.md). */
#define PB_WORK_DRIFT_WARN_PCT 40.0

typedef struct pb_record_source {
  char tool[32];     /* "tensorflow-profiler"; "" for pipebench's own run */
  char capture[256]; /* the file read */
  char host[128];
  char step_marker[64]; /* the steps' event name ("train") */
  char verdict[320];    /* the capture's own verdict, in its tool's terms */
  int nadvice;
  pb_import_advice advice[PB_MAX_IMPORT_ADVICE];
  int gpu_devices;            /* GPU planes in the capture (0: none, a CPU-only capture) */
  double gpu_kernel_busy_pct; /* of the steps' window, the time some kernel ran, in % (NAN: no GPU plane) */
  double work_drift_pct;      /* the functions' slowdown from the capture's first third to its last, in %
                               * (pb_tfdata_work_drift_pct; NAN: too few runs) */
  int nhosts; /* every host the capture held, the one read first (the most input-bound) */
  pb_import_host hosts[PB_MAX_IMPORT_HOSTS];
} pb_record_source;

typedef struct pb_record {
  const pb_config *cfg;
  pb_config *owned_cfg;         /* set when the record owns its config (loaded from a trace) */
  bool synthetic, interrupted;
  /* device */
  char device_kind[16], timing_source[16], device_name[128];
  char device_fallback[256]; /* device.kind auto without a usable GPU: why the emulated device ran ("" none) */
  int device_count;
  char timing_source_reason[256];  /* why CUPTI is not the source on a GPU ("" otherwise) */
  int device_ids[PB_MAX_DEVICES];
  char device_names[PB_MAX_DEVICES][64];
  pb_step_kernel_check step_kernel;
  double idle_pct_cuda_events;     /* the CUDA-event timeline's idle % when CUPTI's replaced it, else NAN */
  uint64_t gpu_timestamps_dropped;
  /* steps (the device timeline) */
  pb_step *steps;               /* owned, in completion order */
  size_t nsteps;
  size_t steps_map_bytes;       /* steps is a mapping of the run's spill file (munmap), else 0 (free) */
  uint64_t start_ns;            /* when the run started (trace timestamps are relative to it) */
  uint64_t start_unix_ns;       /* the same moment on the wall clock (lines up the ranks of a job's trace) */
  uint64_t window_start_ns, window_end_ns;
  uint64_t measured_count, samples_consumed, samples_failed;
  bool steps_failed;
  char steps_failure[256];
  bool peer_stopped;            /* the run ended because another rank stopped exchanging (allreduce.h) */
  /* the job: this process's rank among world_size (1 without mpirun) */
  int rank, world_size;
  /* stages: report rows in order (the in-memory source first when there is one, then the config's) */
  int nstages;
  pb_stage_rec stages[PB_MAX_STAGES + 1];
  /* accounting that is not per stage */
  uint64_t queued_samples;      /* drained from the queues after the run: in flight */
  int nfirst_errors;
  pb_error_record first_errors[PB_FIRST_ERRORS];
  /* the machine and the engine's cost */
  double cpu_s;                 /* process CPU during the run */
  int ncpu;                     /* online CPUs */
  /* the machine as it was (machine.h): cores this process could use, and what other processes and the
   * hypervisor took of them while it ran (0 when unknown: an older trace) */
  double cores_usable;
  double cores_affinity;        /* CPUs in the affinity mask (0: unknown, an older trace) */
  double cores_quota;           /* the cgroup CPU quota in cores; NAN: none */
  double cores_taken_by_others; /* measured over the affinity CPUs */
  char cores_limited_by[128];   /* what set cores_usable, in words */
  uint64_t dataset_files;       /* files this process's data listed (its shard); 0: in-memory data */
  uint64_t dataset_files_skipped; /* files of dataset.path left out for their extension (dataset.extensions) */
  bool traced;                  /* per-event tracing was on */
  /* memory: the plan checked against limits.max_memory_mb, the trace rings, and what the process used */
  uint64_t planned_bytes;       /* worst-case bytes the stages may buffer (pb_engine_memory_bytes) */
  uint64_t planned_queues_empty_bytes; /* the same with every queue empty; 0 in traces before issue 34 */
  uint64_t trace_bytes;         /* the per-worker event rings (fixed at start) */
  uint64_t peak_rss_bytes;      /* getrusage ru_maxrss at the end of the run (0: unknown, an older trace) */
  struct pb_timeline *timeline; /* queue fill over time (owned); NULL when not sampled (an older trace) */
  pb_ceilings ceilings;         /* the machine's calibration, when there is one (calibration.h) */
  pb_record_source source;      /* an imported capture's origin (tool "" for a run) */
} pb_record;

void pb_record_free(pb_record *rec);

/* Device idle % over [ws, we): 100 - compute time inside it / (devices x its length) x 100, over every
 * step of `device` (-1: all devices, then `devices` of them).  NAN for an empty window.  Here, with the
 * steps it reads, because the GPU device computes it too (its CUDA-event timeline beside CUPTI's). */
double pb_steps_idle_pct(const pb_step *v, size_t n, int devices, int device, uint64_t ws, uint64_t we);

/* The stage row that feeds the device (the last one that ran), or -1. */
int pb_record_last_stage(const pb_record *rec);

#endif

/* The report of one run: every number printed by the text summary and written to report.json.
 * metrics.c fills it from what the run recorded; src/reports/text.c and src/reports/json.c only format it.
 * Convention: a double that is NAN is "not available" and is written as JSON null / "n/a" in text. */
#ifndef PB_REPORT_H
#define PB_REPORT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "model.h"
#include "record.h"

#define PB_MAX_FIRST_ERRORS 10

/* One device's own timeline (several GPUs are dealt batches round-robin). */
typedef struct pb_device_report {
  int index, id;
  char name[64];
  uint64_t steps;               /* measured steps it ran */
  double idle_pct;              /* 100 - its compute time in the window / window x 100 */
  double input_wait_ms;         /* mean input wait per measured step */
  double h2d_gb_per_s;          /* bytes copied / copy time, measured steps (NAN when none copied) */
} pb_device_report;

typedef struct pb_stage_report {
  char name[PB_NAME_LEN];
  const char *type;             /* "map", "batch", ... or "source" for the in-memory source */
  int threads;
  bool skipped;                 /* not run (synthetic mode skips per-sample stages) */
  bool in_place;                /* batch: collated in place by the map before it (fuse_map), no copy */
  uint64_t calls;               /* elements processed in the measured window */
  double total_ms, self_ms;     /* self = busy processing; total = self + wait_in */
  double mean_us, p50_us, p99_us;
  double wait_in_ms, blocked_out_ms;
  double utilization;           /* self / (threads x measured wall), 0..1 */
  double capacity_per_s;        /* samples/s the stage could sustain: threads x samples / self seconds */
  double pipeline_capacity_per_s; /* the same in the pipeline's samples: capacity / the share of the
                                     delivered samples it handled (< 1 upstream of a cache that replays) */
  uint64_t bytes_in, bytes_out;
  uint64_t read_ops;            /* read: reads of up to block_bytes in the window (0: not counted, an older trace) */
  double queue_mean_fill;       /* mean occupancy of the stage's output queue, 0..1 of its capacity */
  int queue_capacity;           /* elements */
  double critical_path_ms, critical_path_pct; /* time on the critical path (NAN without a trace) */
  double critical_path_self_ms; /* the part of critical_path_ms spent processing (the rest: hand-offs) */
  double cpu_fraction;          /* CPU time / busy time of its threads, 0..1: ~1 CPU-bound, ~0 waiting */
  double cpu_delay_fraction;    /* run-queue delay / busy time, 0..1 - cpu_fraction: waiting for a core
                                 * (NAN when the kernel does not say) */
  /* stage graph node, rebuilt from the trace's lineage (NAN / "" without a trace) */
  char parent[PB_NAME_LEN];     /* the node its inputs came from ("" for a source) */
  double graph_start_ms;        /* first event in the analysed window, ms after the window opened */
  double graph_total_ms, graph_self_ms; /* from the events: self + wait-in, and processing */
  uint64_t graph_calls;
  uint64_t samples;             /* samples it took in (made, for a source) in the measured window */
  /* against the machine's calibration (efficiency.c; NAN / NULL without one, or for stages without a
   * ceiling) */
  double ceiling_per_thread_per_s, ceiling_per_s, efficiency_pct;
  const char *ceiling_source;   /* the calibrated figure it comes from */
} pb_stage_report;

typedef struct pb_efficiency {
  bool have;                    /* a calibration of this machine was found */
  char why[256];                /* when not */
  char source[PB_PATH_LEN];     /* the calibration.json */
  char measured_at[32];
  int cores;                    /* cores available to the run */
  double best_samples_per_s;    /* min over stages of ceiling x cores (x 1 for the GPU link), and the device */
  char limited_by[PB_NAME_LEN]; /* the stage (or "device") that sets it */
  double pipeline_pct;          /* throughput / best x 100 */
} pb_efficiency;

#define PB_MAX_RECOMMENDATIONS 8
typedef struct pb_recommendation {
  char action[768];             /* a --set expression when one fits, else a change in words */
  char reason[1536];
  const char *kind;             /* "threads", "prefetch", "cache", "scale", "cores", "pinned" */
  double predicted_samples_per_s;
  double predicted_idle_pct;    /* the device's idle % the model predicts after the change (NAN: none) */
  bool up_to;                   /* the prediction is the device's own rate: a ceiling, not an estimate */
} pb_recommendation;

typedef struct pb_path_segment {
  char stage[PB_NAME_LEN];      /* a stage name or "device" */
  double ms, self_ms;
} pb_path_segment;

typedef struct pb_first_error {
  char file[256];
  char message[256];
} pb_first_error;

/* device.allreduce: the gradient exchange after every step (src/engine/allreduce.h). */
typedef struct pb_allreduce_report {
  pb_allreduce_mode mode;
  uint64_t bytes;               /* exchanged per step (model, mpi); 0 for barrier */
  int world_size;               /* ranks in the job (1 without mpirun) */
  double gb_per_s;              /* the configured bandwidth (NAN: none) */
  double model_ms;              /* bytes / gb_per_s (NAN without gb_per_s) */
  double measured_mean_ms, measured_p50_ms, measured_p99_ms; /* per measured step */
  double algbw_gb_per_s, busbw_gb_per_s; /* mpi between ranks: bytes / measured time, and x 2(n-1)/n */
  bool peer_stopped;            /* this rank stopped because another one did */
} pb_allreduce_report;

typedef struct pb_report {
  const char *version;
  cJSON *config;                /* resolved config; owned by the report */
  bool synthetic;
  bool interrupted;
  char out_dir[PB_PATH_LEN];
  char config_name[128];
  char config_about[512]; /* the config's `about` ("" none) */
  pb_record_source source; /* another tool's capture this report reads (tool "" for a run of pipebench) */

  /* device */
  const char *device_kind;      /* "gpu" | "emulated" */
  char device_name[128];
  char device_fallback[256]; /* why device.kind auto ran the emulated device ("" when it did not fall back) */
  int device_count;
  const char *timing_source;    /* "cupti" | "cuda_events" | "emulated" */
  const char *timing_source_reason; /* why not CUPTI on a GPU; "" otherwise */
  int device_ids[PB_MAX_DEVICES];
  bool step_kernel_measured;    /* GPU: the step kernel's check at start-up */
  double step_kernel_target_ms, step_kernel_measured_ms, step_kernel_error_pct;
  double idle_pct_cuda_events;  /* NAN unless CUPTI's timeline replaced the CUDA events' */
  uint64_t gpu_timestamps_dropped;
  pb_device_report per_device[PB_MAX_DEVICES]; /* device_count entries */
  int most_idle_device;         /* index into per_device */

  /* measured window */
  double measured_s;            /* wall time of the measured window (after warm-up) */
  int64_t warmup_steps;

  double samples_per_s, batches_per_s, bytes_per_s;
  double storage_bytes_per_s, read_ops_per_s; /* the read stage's bytes and reads a second; NAN: no read stage */

  uint64_t step_count;          /* measured steps */
  double step_mean_ms, step_p50_ms, step_p90_ms, step_p99_ms;
  double input_wait_ms, h2d_ms, compute_ms, comm_ms, other_ms; /* means per measured step */
  double host_late_ms;          /* mean per measured step: ready to start, but launched late by the host */
  double host_late_pct;         /* host_late / step time x 100 */
  double device_idle_pct, accelerator_utilization_pct, input_bound_pct;
  /* run.au_target_pct's verdict (DLIO / MLPerf Storage): the target (0: none) and whether AU, as shown (2
   * decimals), reached it; -1 when there is no AU to judge (no measured step) */
  double au_target_pct;
  int au_passed;
  const char *classification;   /* "highly_input_bound" | "moderately_input_bound" | "not_input_bound" | NULL */
  pb_allreduce_report allreduce;

  int nstages;
  pb_stage_report stages[PB_MAX_STAGES + 1]; /* + the in-memory source */

  /* critical path (trace analysis; available = false without a trace) */
  bool critical_path_available;
  double critical_path_total_ms;
  int npath_segments;
  pb_path_segment path_segments[PB_MAX_STAGES + 2];
  uint64_t critical_path_hops;  /* events walked */
  char critical_path_stop[128]; /* why the walk ended: "window start", "trace window start", ... */

  /* the trace behind it */
  bool traced;
  uint64_t trace_events, trace_events_dropped;
  bool trace_complete;          /* the rings held the whole measured window */
  double trace_window_ms;       /* the part of the measured window the analysis covers */

  /* capacity model (Plumber-style) */
  char model_stage[PB_NAME_LEN];/* lowest-capacity stage */
  double model_capacity_per_s;
  double cpu_limit_per_s;       /* samples/s the machine's cores allow for the CPU-bound stages */
  int ncpu;
  double cores_used;            /* cores the stages kept busy in the window: sum of utilization x threads x cpu_fraction */
  double device_rate_per_s;     /* samples/s the device(s) could take: batch x devices / compute time */

  int nrecommendations;
  pb_recommendation recommendations[PB_MAX_RECOMMENDATIONS];

  /* the machine (machine.h) and the run's own noise */
  double cores_usable;          /* the process's CPU affinity and cgroup quota */
  double cores_affinity;        /* CPUs in its affinity mask */
  double cores_quota;           /* the cgroup CPU quota, cores (NAN: none) */
  double cores_taken_by_others; /* by other processes and the hypervisor, during the run */
  char cores_limited_by[128];
  double noise_pct;             /* half-width of the 95 % interval of samples/s over 8 slices of the window */

  /* the model of the pipeline (model.h): every prediction comes from it */
  pb_model model;

  /* bottleneck */
  char bottleneck_stage[PB_NAME_LEN]; /* "" = not available; a stage, "device" or "cores" */
  int nco_stages;               /* stages named beside it: capacities within the run's noise of its own */
  char co_stages[3][PB_NAME_LEN];
  char transient[400];          /* a transient inside the window that cost the device time, in words ("") */
  char bottleneck_reason[1024];
  double bottleneck_capacity_per_s, bottleneck_required_per_s;

  /* accounting (every sample, warm-up included) */
  uint64_t files_read, samples_read, samples_decoded, samples_batched, samples_consumed;
  uint64_t files_skipped; /* files of dataset.path left out for their extension */
  uint64_t samples_dropped, errors, samples_in_flight;
  bool balanced;
  int nfirst_errors;
  pb_first_error first_errors[PB_MAX_FIRST_ERRORS];

  /* the engine's own cost */
  double cpu_s;                 /* user + system CPU of the whole process during the run */
  double cpu_ns_per_sample;     /* cpu_s / samples_read */
  /* memory (METRICS.md "memory"): the plan checked before the run, the trace rings, the process's peak */
  uint64_t memory_planned_bytes, memory_planned_queues_empty_bytes, memory_limit_bytes, memory_trace_bytes,
      memory_peak_rss_bytes;
  /* efficiency against the machine's ceilings (METRICS.md "efficiency") */
  pb_efficiency efficiency;
} pb_report;

/* src/reports/json.c: the report as a cJSON tree with every docs/CONTRACT.md §3 key (null where not available). */
cJSON *pb_report_to_json(const pb_report *r);
/* Writes pb_report_to_json() to PATH (pretty printed).  0 or -errno. */
int pb_report_write_json(const pb_report *r, const char *path);
/* src/reports/text.c: the human summary. */
void pb_report_print_text(const pb_report *r, FILE *out);
/* The result in one line (run and analyze under --quiet, or without the text format): the config's name,
 * samples/s, device idle, the bottleneck, errors when there were any, and the output directory. */
void pb_report_print_line(const pb_report *r, FILE *out);

#endif

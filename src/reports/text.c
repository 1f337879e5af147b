/* The human summary printed after a run: one labelled line per topic, then the per-stage table.
 *
 * Layout rules: labels take 14 columns, every line stays under 100 columns (free text such as names,
 * reasons and error messages is wrapped or clipped to fit; the table's columns are sized for it), and
 * NAN prints as "n/a" (report.h's "not available"). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

#define WIDTH 99  /* the longest line, in columns */
#define LABEL 14  /* "accounting    " */

/* A table cell of at most 7 characters with about 4 significant digits, whatever the magnitude. */
static const char *cell(pb_numbuf *b, double v) {
  double a = fabs(v);
  const char *fmt = a < 100 ? "%.2f" : a < 1e4 ? "%.1f" : a < 1e6 ? "%.0f" : "%.1e";
  return pb_fmt_double(b, fmt, v);
}

/* One free-text line, clipped to WIDTH columns: a long config or device name must not break the layout. */
__attribute__((format(printf, 2, 3))) static void line(FILE *out, const char *fmt, ...) {
  char buf[WIDTH + 1];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(out, "%s\n", buf);
}

/* Prints `text` after a label, wrapped at spaces to WIDTH columns, continuation lines indented. */
static void wrapped(FILE *out, const char *label, const char *text) {
  const int room = WIDTH - LABEL;
  bool first = true;
  while (first || *text) {
    int n = (int)strlen(text);
    if (n > room) {
      n = room;
      while (n > 0 && text[n] != ' ') n--;
      if (n == 0) n = room; /* one word longer than the line: cut it */
    }
    fprintf(out, "%-*s%.*s\n", LABEL, first ? label : "", n, text);
    text += n;
    while (*text == ' ') text++;
    first = false;
  }
}

/* One error whole, wrapped at spaces (a message is never cut mid-word); the file name's control characters
 * show as '?', so each error stays on its own lines. */
static void print_error(FILE *out, const char *label, const pb_first_error *e) {
  char file[PB_PATH_LEN], text[PB_PATH_LEN + sizeof e->message + 4];
  const char *name = pb_cfg_clean(e->file, sizeof file - 4, file, sizeof file);
  snprintf(text, sizeof text, "%s%s%s", name, name[0] ? ": " : "", e->message);
  wrapped(out, label, text);
}

/* Failed samples belong near the top, not only in the accounting at the end. */
static void print_errors_first(const pb_report *r, FILE *out) {
  if (!r->errors) return;
  pb_numbuf a;
  double pct = r->samples_read ? 100.0 * (double)r->errors / (double)r->samples_read : NAN;
  fprintf(out, "%-*s%" PRIu64 " samples failed (%s %% of those read)\n", LABEL, "errors", r->errors,
          pb_fmt_double(&a, "%.1f", pct));
  if (r->nfirst_errors) print_error(out, "", &r->first_errors[0]);
}

/* A capture's hosts, the most input-bound first (the one this report reads). */
static void print_hosts(const pb_record_source *s, FILE *out) {
  if (s->nhosts < 2) return;
  fprintf(out, "%-*s%d in the capture, the most input-bound read (as the profiler picks)\n", LABEL, "hosts", s->nhosts);
  fprintf(out, "%-*s%-24s %6s %9s %10s  %s\n", LABEL, "", "host", "steps", "waiting%", "samples/s", "slowest iterator");
  for (int i = 0; i < s->nhosts && i < PB_MAX_IMPORT_HOSTS; i++) {
    const pb_import_host *h = &s->hosts[i];
    pb_numbuf a, b;
    fprintf(out, "%-*s%-24.24s %6" PRIu64 " %9s %10s  %s\n", LABEL, "", h->host, h->steps,
            pb_fmt_double(&a, "%.1f", h->input_bound_pct), pb_fmt_double(&b, "%.0f", h->samples_per_s),
            h->bottleneck[0] ? h->bottleneck : "-");
  }
  if (s->nhosts > PB_MAX_IMPORT_HOSTS)
    fprintf(out, "%-*s... and %d more\n", LABEL, "", s->nhosts - PB_MAX_IMPORT_HOSTS);
}

/* Another tool's capture: where it came from, and what it says by itself, in that tool's terms. */
static void print_source(const pb_report *r, FILE *out) {
  const pb_record_source *s = &r->source;
  if (!s->tool[0]) return;
  char text[600];
  snprintf(text, sizeof text,
           "%s capture %s (host %s, \"%s\" steps); the stages are its iterators, as the twin "
           "that pipebench twin writes has them",
           s->tool, s->capture, s->host[0] ? s->host : "not named", s->step_marker);
  wrapped(out, "source", text);
  wrapped(out, "tf.data", s->verdict);
  for (int i = 0; i < s->nadvice; i++) {
    pb_numbuf a;
    snprintf(text, sizeof text, "advice: %s%s%s", s->advice[i].text, isnan(s->advice[i].predicted_per_s) ? "" : "  -> ",
             isnan(s->advice[i].predicted_per_s)
                 ? ""
                 : pb_fmt_double(&a, "%.0f samples/s predicted", s->advice[i].predicted_per_s));
    wrapped(out, "", text);
  }
  if (fabs(s->work_drift_pct) >= PB_WORK_DRIFT_WARN_PCT) { /* false for NAN */
    snprintf(text, sizeof text,
             "warning: the pipeline's functions ran %.0f %% %s at the capture's end than at its start: the profiler or "
             "the machine changed the job while it was captured, and what it shows is an average of both (docs/"
             "IMPORT.md, \"Capturing\")",
             fabs(s->work_drift_pct), s->work_drift_pct > 0 ? "slower" : "faster");
    wrapped(out, "", text);
  }
  if (s->gpu_devices > 0) {
    pb_numbuf a;
    snprintf(text, sizeof text,
             "%d device plane%s; some kernel ran %s %% of the steps' time (the breakdown's h2d is the steps' "
             "copies to the device, its compute from the first kernel after the batch was ready)",
             s->gpu_devices, s->gpu_devices > 1 ? "s" : "", pb_fmt_double(&a, "%.1f", s->gpu_kernel_busy_pct));
    wrapped(out, "gpu", text);
  }
  print_hosts(s, out);
}

static void print_header(const pb_report *r, FILE *out) {
  char devs[16] = "";
  if (r->device_count > 1) snprintf(devs, sizeof devs, " x%d", r->device_count);
  line(out, "pipebench %s  %s  data=%s  device=%s%s (%s%s)", r->version ? r->version : "?", r->config_name,
       r->synthetic ? "synthetic" : "real", r->device_kind ? r->device_kind : "n/a", devs,
       r->device_fallback[0] ? "no GPU; " : "", r->device_name[0] ? r->device_name : "n/a");
  if (r->device_fallback[0]) /* device.kind auto said once, here, rather than on stderr at every run */
    wrapped(out, "", r->device_fallback);
  if (r->config_about[0]) wrapped(out, "about", r->config_about); /* a twin: what it emulates */
  print_source(r, out);
  /* A line of its own, so that clipping a long name above can never hide it. */
  if (r->interrupted)
    fprintf(out, "%-*sINTERRUPTED: partial report, the run was stopped before its end\n", LABEL, "status");
  pb_numbuf a;
  fprintf(out, "%-*s%" PRIu64 " steps in %s s (%" PRId64 " warm-up steps excluded)\n", LABEL, "measured",
          r->step_count, pb_fmt_double(&a, "%.3f", r->measured_s), r->warmup_steps);
  print_errors_first(r, out);
}

/* The breakdown with the gradient exchange, and the exchange modelled against measured. */
static void print_breakdown_with_comm(const pb_report *r, FILE *out) {
  pb_numbuf a, b, c, d, e;
  const pb_allreduce_report *x = &r->allreduce;
  fprintf(out, "%-*sinput_wait %s ms  h2d %s ms  compute %s ms  allreduce %s ms  other %s ms  (per step)\n", LABEL,
          "breakdown", pb_fmt_double(&a, "%.2f", r->input_wait_ms), pb_fmt_double(&b, "%.2f", r->h2d_ms),
          pb_fmt_double(&c, "%.2f", r->compute_ms), pb_fmt_double(&d, "%.2f", r->comm_ms),
          pb_fmt_double(&e, "%.2f", r->other_ms));
  fprintf(out, "%-*s%s, %.1f MB, %d rank(s): measured mean %s ms  p99 %s  model %s ms", LABEL, "allreduce",
          pb_allreduce_mode_name(x->mode), (double)x->bytes / 1e6, x->world_size,
          pb_fmt_double(&a, "%.3f", x->measured_mean_ms), pb_fmt_double(&b, "%.3f", x->measured_p99_ms),
          pb_fmt_double(&c, "%.3f", x->model_ms));
  if (!isnan(x->algbw_gb_per_s))
    fprintf(out, "  algbw %s GB/s  busbw %s GB/s", pb_fmt_double(&a, "%.3f", x->algbw_gb_per_s),
            pb_fmt_double(&b, "%.3f", x->busbw_gb_per_s));
  fputc('\n', out);
  if (x->peer_stopped) fprintf(out, "%-*sanother rank stopped first; this one stopped with it\n", LABEL, "");
}

static void print_rates(const pb_report *r, FILE *out) {
  pb_numbuf a, b, c, d;
  fprintf(out, "%-*s%s samples/s   %s batches/s   %s MB/s of batches", LABEL, "throughput",
          pb_fmt_double(&a, "%.1f", r->samples_per_s), pb_fmt_double(&b, "%.2f", r->batches_per_s),
          pb_fmt_double(&c, "%.1f", r->bytes_per_s / 1e6));
  fputc('\n', out);
  if (isfinite(r->storage_bytes_per_s)) /* fio's figures, where a read stage reads storage */
    fprintf(out, "%-*s%s MB/s, %s IOPS: what the read stage read from dataset.path\n", LABEL, "storage",
            pb_fmt_double(&a, "%.1f", r->storage_bytes_per_s / 1e6), pb_fmt_double(&b, "%.0f", r->read_ops_per_s));
  fprintf(out, "%-*smean %s ms   p50 %s   p90 %s   p99 %s\n", LABEL, "step time",
          pb_fmt_double(&a, "%.2f", r->step_mean_ms), pb_fmt_double(&b, "%.2f", r->step_p50_ms),
          pb_fmt_double(&c, "%.2f", r->step_p90_ms), pb_fmt_double(&d, "%.2f", r->step_p99_ms));
  if (r->allreduce.mode == PB_ALLREDUCE_NONE)
    fprintf(out, "%-*sinput_wait %s ms  h2d %s ms  compute %s ms  other %s ms  (per step)\n", LABEL,
            "breakdown", pb_fmt_double(&a, "%.2f", r->input_wait_ms), pb_fmt_double(&b, "%.2f", r->h2d_ms),
            pb_fmt_double(&c, "%.2f", r->compute_ms), pb_fmt_double(&d, "%.2f", r->other_ms));
  else
    print_breakdown_with_comm(r, out);
  if (r->host_late_ms >= 0.005) /* a line of its own: the device waited, but not for input */
    fprintf(out, "%-*shost late %s ms a step (%s %% of step time): launched late by a busy host, not input\n", LABEL,
            "", pb_fmt_double(&a, "%.2f", r->host_late_ms), pb_fmt_double(&b, "%.1f", r->host_late_pct));
  fprintf(out, "%-*sidle %s %%   AU %s %%   input-bound %s %%  -> %s\n", LABEL, "device",
          pb_fmt_double(&a, "%.2f", r->device_idle_pct), pb_fmt_double(&b, "%.2f", r->accelerator_utilization_pct),
          pb_fmt_double(&c, "%.2f", r->input_bound_pct), r->classification ? r->classification : "n/a");
  if (r->au_target_pct > 0) /* DLIO / MLPerf Storage's verdict */
    fprintf(out, "%-*sAU %s %% %s %s %%: %s\n", LABEL, "AU target",
            pb_fmt_double(&a, "%.2f", r->accelerator_utilization_pct),
            r->au_passed == 1   ? ">="
            : r->au_passed == 0 ? "<"
                                : "vs",
            pb_fmt_double(&b, "%g", r->au_target_pct),
            r->au_passed == 1   ? "PASS"
            : r->au_passed == 0 ? "FAIL"
                                : "n/a (no measured step)");
}

/* GPU timing (where the timeline came from, and its cross-checks) and, with several devices, each one's
 * idle time with the most idle named. */
static void print_devices(const pb_report *r, FILE *out) {
  pb_numbuf a, b;
  if (r->device_kind && strcmp(r->device_kind, "gpu") == 0) {
    char text[512];
    int n = snprintf(text, sizeof text, "%s", r->timing_source ? r->timing_source : "n/a");
    if (r->timing_source_reason && r->timing_source_reason[0])
      n += snprintf(text + n, sizeof text - (size_t)n, " (%s)", r->timing_source_reason);
    if (!isnan(r->idle_pct_cuda_events) && n < (int)sizeof text)
      n += snprintf(text + n, sizeof text - (size_t)n, "; idle by CUDA events %s %%",
                    pb_fmt_double(&a, "%.2f", r->idle_pct_cuda_events));
    if (r->step_kernel_measured && n < (int)sizeof text)
      snprintf(text + n, sizeof text - (size_t)n, "; step kernel %s ms for %s ms",
               pb_fmt_double(&a, "%.3f", r->step_kernel_measured_ms),
               pb_fmt_double(&b, "%.3f", r->step_kernel_target_ms));
    wrapped(out, "timing", text);
  }
  if (r->device_count < 2) return;
  char text[1024];
  int n = 0;
  for (int k = 0; k < r->device_count && k < PB_MAX_DEVICES && n < (int)sizeof text; k++)
    n += snprintf(text + n, sizeof text - (size_t)n, "%s%d: idle %s %%%s", k ? ", " : "", k,
                  pb_fmt_double(&a, "%.2f", r->per_device[k].idle_pct), k == r->most_idle_device ? " (most idle)" : "");
  wrapped(out, "per device", text);
}

static void print_bottleneck(const pb_report *r, FILE *out) {
  if (!r->bottleneck_stage[0]) {
    fprintf(out, "%-*sn/a\n", LABEL, "bottleneck");
    return;
  }
  char text[PB_NAME_LEN + sizeof r->bottleneck_reason + 2];
  snprintf(text, sizeof text, "%s: %s", r->bottleneck_stage, r->bottleneck_reason);
  wrapped(out, "bottleneck", text);
  if (isfinite(r->bottleneck_capacity_per_s) || isfinite(r->bottleneck_required_per_s)) {
    pb_numbuf a, b;
    fprintf(out, "%-*scapacity %s samples/s   required %s samples/s\n", LABEL, "",
            pb_fmt_double(&a, "%.1f", r->bottleneck_capacity_per_s),
            pb_fmt_double(&b, "%.1f", r->bottleneck_required_per_s));
  }
}

/* "critical path  812.3 ms: augment 98.7 % (self 98.5 %), device 1.0 %" */
static void print_critical_path(const pb_report *r, FILE *out) {
  if (!r->critical_path_available) {
    fprintf(out, "%-*s%s\n", LABEL, "critical path", r->traced ? "n/a (no measured step)" : "n/a (--no-trace)");
    return;
  }
  char text[1024];
  size_t n = 0;
  pb_numbuf a;
  n += (size_t)snprintf(text, sizeof text, "%s ms:", pb_fmt_double(&a, "%.1f", r->critical_path_total_ms));
  int shown = 0, minor = 0;
  for (int i = 0; i < r->npath_segments && n < sizeof text; i++) {
    const pb_path_segment *p = &r->path_segments[i];
    double pct = r->critical_path_total_ms > 0 ? p->ms / r->critical_path_total_ms * 100 : 0;
    double self = r->critical_path_total_ms > 0 ? p->self_ms / r->critical_path_total_ms * 100 : 0;
    if (pct < 1.0 && self < 1.0) { /* the stages that matter: a run's dozen stages at 0.0 % say nothing */
      minor++;
      continue;
    }
    n += (size_t)snprintf(text + n, sizeof text - n, "%s %s %.1f %% (self %.1f %%)", shown++ ? "," : "", p->stage, pct,
                          self);
  }
  if (minor && n < sizeof text)
    n += (size_t)snprintf(text + n, sizeof text - n, "%s%d more under 1 %% each", shown ? "; " : " ", minor);
  if (!r->trace_complete && n < sizeof text)
    snprintf(text + n, sizeof text - n, "; last %.0f ms of the run only (trace buffers full)", r->trace_window_ms);
  wrapped(out, "critical path", text);
}

static void print_recommendations(const pb_report *r, FILE *out) {
  for (int i = 0; i < r->nrecommendations; i++) {
    const pb_recommendation *rc = &r->recommendations[i];
    char text[sizeof rc->action + sizeof rc->reason + 96];
    pb_numbuf a, b;
    snprintf(text, sizeof text, "%s  -> %s%s samples/s, idle %s %% predicted (%s)", rc->action,
             rc->up_to ? "up to " : "", pb_fmt_double(&a, "%.0f", rc->predicted_samples_per_s),
             pb_fmt_double(&b, "%.1f", rc->predicted_idle_pct), rc->reason);
    wrapped(out, i == 0 ? "recommend" : "", text);
  }
}

/* The machine as the run found it, the run's noise, and how well the model replays it. */
static void print_machine_and_model(const pb_report *r, FILE *out) {
  pb_numbuf a, b, c, d, e;
  char text[400];
  snprintf(text, sizeof text, "%s of %d cores usable (%s), %s taken by other processes; run noise +-%s %%",
           pb_fmt_double(&a, "%.2f", r->cores_usable), r->ncpu,
           r->cores_limited_by[0] ? r->cores_limited_by : "online CPUs",
           pb_fmt_double(&b, "%.2f", r->cores_taken_by_others), pb_fmt_double(&c, "%.1f", r->noise_pct));
  wrapped(out, "machine", text);
  const pb_model *m = &r->model;
  if (!m->valid) {
    line(out, "%-*sn/a (%s)", LABEL, "model", m->why);
    return;
  }
  line(out, "%-*sreplays the run at %s samples/s (%s %% off%s), idle %s %%", LABEL, "model",
       pb_fmt_double(&a, "%.1f", m->replay_samples_per_s), pb_fmt_double(&b, "%+.1f", m->fit_error_pct),
       m->calibrated ? pb_fmt_double(&d, "; calibrated x%.3f", m->service_scale) : "",
       pb_fmt_double(&e, "%.1f", m->replay_idle_pct));
}

/* Column widths: name, type, thr, calls, mean/p50/p99, util, capacity, wait, blocked, fill, critical-path
 * share.  With the 12-column name the row is 99 columns. */
#define NAME_W 12
#define ROW_FMT "%-*.*s %-8.8s %3s %9s %7s %7s %7s %4s %8s %8s %7s %4s %3s\n"

static void print_stage(const pb_stage_report *s, FILE *out) {
  char thr[16];
  snprintf(thr, sizeof thr, "%d", s->threads);
  if (s->skipped) {
    fprintf(out, "%-*.*s %-8.8s %3s  skipped (synthetic data)\n", NAME_W, NAME_W, s->name,
            s->type ? s->type : "?", thr);
    return;
  }
  /* Exact up to 9 digits; beyond (over 1e9 elements in the window) 4 digits keep the row in width. */
  char calls[24];
  if (s->calls < 1000000000u)
    snprintf(calls, sizeof calls, "%" PRIu64, s->calls);
  else
    snprintf(calls, sizeof calls, "%.3e", (double)s->calls);
  pb_numbuf b[9];
  fprintf(out, ROW_FMT, NAME_W, NAME_W, s->name, s->type ? s->type : "?", thr, calls,
          cell(&b[0], s->mean_us), cell(&b[1], s->p50_us), cell(&b[2], s->p99_us),
          pb_fmt_double(&b[3], "%.2f", s->utilization), cell(&b[4], s->capacity_per_s), cell(&b[5], s->wait_in_ms),
          cell(&b[6], s->blocked_out_ms), pb_fmt_double(&b[7], "%.2f", s->queue_mean_fill),
          pb_fmt_double(&b[8], "%.0f", s->critical_path_pct));
}

static void print_stages(const pb_report *r, FILE *out) {
  fprintf(out, ROW_FMT, NAME_W, NAME_W, "stage", "type", "thr", "calls", "mean_us", "p50_us", "p99_us",
          "util", "cap/s", "wait_ms", "blk_ms", "fill", "cp%");
  for (int i = 0; i < r->nstages; i++) print_stage(&r->stages[i], out);
}

/* How close to the hardware: the pipeline against the machine's best, then each stage with a ceiling. */
static void print_efficiency(const pb_report *r, FILE *out) {
  const pb_efficiency *e = &r->efficiency;
  pb_numbuf a, b;
  if (!e->have) {
    line(out, "%-*sn/a: %s", LABEL, "efficiency", e->why);
    return;
  }
  if (isfinite(e->pipeline_pct))
    fprintf(out, "%-*s%s%% of the machine's best, %s samples/s (%s%s; calibrated %s)\n", LABEL, "efficiency",
            pb_fmt_double(&a, "%.0f", e->pipeline_pct), pb_fmt_double(&b, "%.1f", e->best_samples_per_s), e->limited_by,
            strcmp(e->limited_by, "device") ? " on every core" : "", e->measured_at);
  else if (isfinite(e->best_samples_per_s))
    fprintf(out, "%-*sn/a (no measured window); the machine's best %s samples/s (%s; calibrated %s)\n", LABEL,
            "efficiency", pb_fmt_double(&b, "%.1f", e->best_samples_per_s), e->limited_by, e->measured_at);
  else
    line(out, "%-*sno stage with a calibrated ceiling (calibrated %s)", LABEL, "efficiency", e->measured_at);
  if (e->source[0]) { /* which machine's figures: a cache copied from elsewhere is named, not trusted silently */
    char text[sizeof e->source + 32], clean[sizeof e->source];
    snprintf(text, sizeof text, "figures from %s", pb_cfg_clean(e->source, sizeof clean - 4, clean, sizeof clean));
    wrapped(out, "", text);
  }
  for (int i = 0; i < r->nstages; i++) {
    const pb_stage_report *s = &r->stages[i];
    if (!isfinite(s->ceiling_per_s)) continue;
    pb_numbuf c, d;
    /* a stage that does not bind runs below its ceiling because it waits, not because it is slow */
    if (strcmp(s->name, r->bottleneck_stage) != 0)
      fprintf(out, "%-*s%s: not limiting (its ceiling %s samples/s: %s per thread x %d)\n", LABEL, "", s->name,
              pb_fmt_double(&d, "%.1f", s->ceiling_per_s), pb_fmt_double(&a, "%.1f", s->ceiling_per_thread_per_s),
              strcmp(s->type, "h2d") ? s->threads : 1);
    else
      fprintf(out, "%-*s%s: %s%% of %s samples/s (%s per thread x %d)\n", LABEL, "", s->name,
              pb_fmt_double(&c, "%.0f", s->efficiency_pct), pb_fmt_double(&d, "%.1f", s->ceiling_per_s),
              pb_fmt_double(&a, "%.1f", s->ceiling_per_thread_per_s), strcmp(s->type, "h2d") ? s->threads : 1);
  }
}

static void print_accounting(const pb_report *r, FILE *out) {
  fprintf(out,
          "%-*sread %" PRIu64 " = consumed %" PRIu64 " + dropped %" PRIu64 " + errors %" PRIu64
          " + in flight %" PRIu64 "%s\n",
          LABEL, "accounting", r->samples_read, r->samples_consumed, r->samples_dropped, r->errors,
          r->samples_in_flight, r->balanced ? "  (balanced)" : "");
  /* Unbalanced means samples were lost or counted twice: a bug, so it gets a line nobody can miss. */
  if (!r->balanced) {
    uint64_t ends = r->samples_consumed + r->samples_dropped + r->errors + r->samples_in_flight;
    fprintf(out, "%-*s*** NOT BALANCED: read - (consumed + dropped + errors + in flight) = %" PRId64
            " ***\n", LABEL, "", (int64_t)(r->samples_read - ends));
  }
  char skipped[64] = "";
  if (r->files_skipped) snprintf(skipped, sizeof skipped, " (%" PRIu64 " skipped: not the format's)", r->files_skipped);
  fprintf(out, "%-*sfiles %" PRIu64 "%s   decoded %" PRIu64 "   batched %" PRIu64 "\n", LABEL, "", r->files_read,
          skipped, r->samples_decoded, r->samples_batched);
  int n = r->nfirst_errors < PB_MAX_FIRST_ERRORS ? r->nfirst_errors : PB_MAX_FIRST_ERRORS;
  for (int i = 0; i < n; i++) print_error(out, i == 0 ? "first errors" : "", &r->first_errors[i]);
}

static void print_engine(const pb_report *r, FILE *out) {
  pb_numbuf a, b;
  /* the whole process's CPU: the stages' work (decode, ops) with the engine's, not the engine's own cost */
  fprintf(out, "%-*scpu %s s (%s ns per sample, %s)\n", LABEL, "process", pb_fmt_double(&a, "%.3f", r->cpu_s),
          pb_fmt_double(&b, "%.1f", r->cpu_ns_per_sample),
          r->source.tool[0] ? "the capture's: its functions' execution and its iterators' own time"
                            : "every thread: the stages' work and the engine's");
  if (r->memory_planned_bytes || r->memory_peak_rss_bytes) { /* an unknown RSS is n/a, not the whole line */
    char rss[32] = "n/a";
    if (r->memory_peak_rss_bytes) snprintf(rss, sizeof rss, "%.0f MB", (double)r->memory_peak_rss_bytes / 1e6);
    /* the two ends of the plan: a run whose device waits stays near the first, one whose buffers back up
     * reaches the second (a trace before issue 34 has only the second) */
    char empty[64] = "";
    if (r->memory_planned_queues_empty_bytes)
      snprintf(empty, sizeof empty, "%.0f MB with the queues empty, ",
               (double)r->memory_planned_queues_empty_bytes / 1e6);
    fprintf(out, "%-*splanned %s%.0f MB %s(of the %.0f MB limit) + trace %.0f MB, peak RSS %s\n", LABEL, "memory",
            empty, (double)r->memory_planned_bytes / 1e6, empty[0] ? "full " : "", (double)r->memory_limit_bytes / 1e6,
            (double)r->memory_trace_bytes / 1e6, rss);
    if (r->memory_limit_bytes && r->memory_peak_rss_bytes > r->memory_limit_bytes)
      fprintf(out, "%-*speak RSS over the limit: the plan bounds the buffers, not the whole process\n", LABEL, "");
  }
  char dir[PB_PATH_LEN]; /* control characters in --out shown as '?' */
  if (r->out_dir[0]) line(out, "%-*s%s", LABEL, "output", pb_cfg_clean(r->out_dir, sizeof dir - 4, dir, sizeof dir));
}

void pb_report_print_line(const pb_report *r, FILE *out) {
  pb_numbuf a, b;
  char dir[PB_PATH_LEN], errors[96] = "";
  if (r->errors) snprintf(errors, sizeof errors, "  errors %" PRIu64, r->errors);
  if (r->au_passed >= 0 && r->au_target_pct > 0) /* MLPerf Storage's verdict, where the config asks for it */
    snprintf(errors + strlen(errors), sizeof errors - strlen(errors), "  AU target %g %%: %s", r->au_target_pct,
             r->au_passed ? "PASS" : "FAIL");
  fprintf(out, "%s%s: %s samples/s  device idle %s %%  bottleneck %s%s%s%s\n", r->interrupted ? "INTERRUPTED " : "",
          r->config_name, pb_fmt_double(&a, "%.1f", r->samples_per_s), pb_fmt_double(&b, "%.2f", r->device_idle_pct),
          r->bottleneck_stage[0] ? r->bottleneck_stage : "n/a", errors, r->out_dir[0] ? "  -> " : "",
          r->out_dir[0] ? pb_cfg_clean(r->out_dir, sizeof dir - 4, dir, sizeof dir) : "");
}

void pb_report_print_text(const pb_report *r, FILE *out) {
  print_header(r, out);
  print_rates(r, out);
  print_devices(r, out);
  print_critical_path(r, out);
  print_bottleneck(r, out);
  print_recommendations(r, out);
  print_machine_and_model(r, out);
  print_stages(r, out);
  print_efficiency(r, out);
  print_accounting(r, out);
  print_engine(r, out);
}

#include "run.h"
#include "json_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "csv.h"
#include "device.h"
#include "html.h"
#include "machine.h"
#include "engine.h"
#include "metrics.h"
#include "record.h"
#include "trace_json.h"
#include "report.h"
#include "progress.h"
#include "steps.h"
#include "timeline.h"

/* ---------- formats and output directory ---------- */

int pb_parse_formats(const char *list, unsigned *formats, pb_err *err) {
  static const char *names[] = {"text", "json", "csv", "html", "trace"};
  *formats = 0;
  char buf[256], clean[96];
  if (strlen(list) >= sizeof buf)
    return pb_err_set(err, "--format: a list of %zu characters (expected at most %zu: text, json, csv, html, trace)",
                      strlen(list), sizeof buf - 1);
  snprintf(buf, sizeof buf, "%s", list);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    size_t i = 0;
    while (i < PB_ARRAY_LEN(names) && strcmp(tok, names[i]) != 0) i++;
    if (i == PB_ARRAY_LEN(names))
      return pb_err_set(err, "--format: unknown format \"%s\" (expected a comma list of text, json, csv, "
                             "html, trace)", pb_cfg_clean(tok, 60, clean, sizeof clean));
    *formats |= 1u << i;
  }
  if (!*formats) return pb_err_set(err, "--format: empty list (expected a comma list of text, json, csv, html, trace)");
  return 0;
}

/* pipebench-out/<name>-<UTC yyyymmdd-HHMMSS>, made here; -2, -3.. when a run in the same second already
 * took the name (mkdir fails with EEXIST, so two runs can never share a directory). */
static int make_default_out_dir(const pb_config *cfg, const char *kind, char *out, size_t len) {
  char stamp[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  int rc = pb_mkdir_p("pipebench-out");
  for (int k = 1; !rc && k < 1000; k++) {
    char name[160];
    snprintf(name, sizeof name, "%s%s%s", cfg->name, kind ? "-" : "", kind ? kind : "");
    if (k == 1)
      snprintf(out, len, "pipebench-out/%s-%s", name, stamp);
    else
      snprintf(out, len, "pipebench-out/%s-%s-%d", name, stamp, k);
    if (mkdir(out, 0777) == 0) return 0;
    if (errno != EEXIST) rc = -errno;
  }
  return rc ? rc : -EEXIST;
}

/* --out DIR: made if missing; it must end up a directory we can write in. */
static int make_given_out_dir(const char *dir) {
  int rc = pb_mkdir_p(dir);
  struct stat st;
  if (!rc && stat(dir, &st) != 0) rc = -errno;
  if (!rc && !S_ISDIR(st.st_mode)) rc = -ENOTDIR;
  if (!rc && access(dir, W_OK) != 0) rc = -errno;
  return rc;
}

/* ---------- the run ---------- */

typedef struct run_ctx {
  const pb_config *cfg;
  const pb_run_opts *opts;
  pb_engine engine;
  pb_device device;
  pb_steps steps;
  bool device_open, steps_ready, interrupted;
  uint64_t queued_samples;
  char out_dir[PB_PATH_LEN];
  pb_timeline timeline;         /* queue fill over time, sampled while waiting for the end */
  pb_timeline_sampler sampler;
  pb_progress progress;
  pb_cores cores;               /* the cores this process may use */
  pb_cpu_sample cpu_at_start;   /* the machine's CPU counters as the run started (others' load) */
} run_ctx;

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

int pb_run_check_memory(const pb_config *cfg, const pb_engine *e) {
  char who[512];
  uint64_t bytes = pb_engine_memory_bytes(e, who, sizeof who);
  if (bytes <= (uint64_t)cfg->max_memory_mb * 1000000u) return 0;
  /* as many decimals as it takes to differ from the limit: "1 MB, more than the limit of 1 MB" says nothing */
  double mb = (double)bytes / 1e6;
  int decimals = 0;
  for (uint64_t unit = 1000000, limit = (uint64_t)cfg->max_memory_mb; decimals < 6 && bytes / unit <= limit;
       unit /= 10, limit *= 10)
    decimals++;
  fprintf(stderr,
          "pipebench: %s: limits.max_memory_mb: the pipeline may buffer %.*f MB, more than the limit of "
          "%lld MB (expected a larger limit or smaller buffers; %s)\n",
          cfg->file, decimals, mb, (long long)cfg->max_memory_mb, who[0] ? who : "-");
  return PB_EXIT_USAGE;
}

int pb_run_plan_memory(const pb_config *cfg, bool synthetic, bool unplannable_ok) {
  pb_engine *e = calloc(1, sizeof *e);
  if (!e) return PB_EXIT_RUNTIME;
  pb_err err;
  int rc = 0;
  if (pb_engine_plan(e, cfg, synthetic, cfg->device.count, &err)) {
    if (!unplannable_ok) fprintf(stderr, "pipebench: %s\n", err.msg);
    rc = unplannable_ok ? 0 : PB_EXIT_USAGE;
  } else {
    rc = pb_run_check_memory(cfg, e);
  }
  pb_engine_close(e);
  free(e);
  return rc;
}

/* Plans the pipeline and checks its memory against limits.max_memory_mb: exit 2 on refusal. */
static int plan(run_ctx *c) {
  pb_err err;
  int world = c->opts->world_size > 1 ? c->opts->world_size : 1, rank = world > 1 ? c->opts->rank : 0;
  if (pb_engine_plan_shard(&c->engine, c->cfg, c->opts->synthetic, c->cfg->device.count, rank, world, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  c->engine.tracing = !c->opts->no_trace;
  return pb_run_check_memory(c->cfg, &c->engine);
}

static int open_device(run_ctx *c) {
  pb_err err;
  char notice[256];
  if (pb_device_open(&c->device, c->cfg, c->opts->device, notice, sizeof notice, &err)) {
    fprintf(stderr, "pipebench: %s: %s\n", c->cfg->file, err.msg);
    return PB_EXIT_RUNTIME;
  }
  c->device_open = true;
  c->engine.device = &c->device;
  if (notice[0] && !c->opts->quiet && !c->opts->quiet_notices) fprintf(stderr, "pipebench: %s\n", notice);
  return 0;
}

/* How much of an epochs-limited run the read stage has taken on, 0..1; -1 when that says nothing (not
 * limited by epochs, no files, or a cache stage replaying the later epochs). */
static double files_fraction(const run_ctx *c) {
  const pb_run_cfg *run = &c->cfg->run;
  if (run->stop != PB_STOP_EPOCHS || c->engine.synthetic || !c->engine.files.count) return -1;
  uint32_t passes = pb_engine_source_epochs(&c->engine);
  if (passes != (uint32_t)run->epochs) return -1;
  double total = (double)c->engine.files.count * passes;
  return (double)atomic_load_explicit(&c->engine.files_claimed, memory_order_relaxed) / total;
}

static void show_progress(run_ctx *c, uint64_t now_ns) {
  pb_steps_live live;
  pb_steps_get_live(&c->steps, &live);
  char text[256];
  pb_progress_run_text(text, sizeof text, &live, now_ns, c->steps.start_ns, files_fraction(c));
  pb_progress_draw(&c->progress, text);
}

/* Waits for the steps to finish, a signal, or nothing more to come; samples the queues' fill over time
 * and shows progress on a terminal meanwhile. */
static void wait_for_end(run_ctx *c) {
  pb_progress_init(&c->progress, pb_progress_wanted(c->opts->quiet, c->opts->no_progress), c->opts->progress_label);
  pb_timeline_sampler_init(&c->sampler, &c->timeline, &c->engine, pb_now_ns());
  while (!pb_steps_wait(&c->steps, 50)) {
    if (pb_engine_failed(&c->engine)) { /* run.on_error fail, max_errors, or a device failure */
      pb_steps_stop(&c->steps);
      break;
    }
    if (pb_signalled()) {
      c->interrupted = true;
      pb_steps_stop(&c->steps);
      break;
    }
    uint64_t now = pb_now_ns();
    pb_timeline_sample(&c->sampler, now);
    if (pb_progress_due(&c->progress, now)) show_progress(c, now);
  }
  pb_timeline_sample_final(&c->sampler, pb_now_ns());
  pb_progress_end(&c->progress);
}

static int execute(run_ctx *c) {
  pb_err err;
  if (pb_steps_init(&c->steps, c->cfg, &c->engine, &c->device, c->opts->exchange)) {
    fprintf(stderr, "pipebench: out of memory for the step records\n");
    return PB_EXIT_RUNTIME;
  }
  c->steps_ready = true;
  pb_steps_spill_to(&c->steps, c->out_dir);
  pb_cores_probe(&c->cores, "");
  pb_cpu_sample_take(&c->cpu_at_start, "");
  int rc = pb_engine_start(&c->engine, &err);
  if (!rc) rc = pb_steps_start(&c->steps, &err);
  if (rc) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    pb_steps_stop(&c->steps);
  } else {
    wait_for_end(c);
  }
  pb_engine_cancel(&c->engine); /* wakes every worker and device thread */
  pb_device_cancel(&c->device); /* and copies waiting for a device buffer */
  pb_steps_join(&c->steps);
  pb_engine_join(&c->engine);
  c->queued_samples = pb_engine_drain(&c->engine);
  if (pb_steps_finish(&c->steps)) return PB_EXIT_RUNTIME; /* the step record, whole again (steps_spill.c) */
  /* A GPU's own timeline (CUPTI) replaces the step intervals now that every step is in. */
  pb_device_finish(&c->device, c->steps.v, c->steps.n, c->steps.window_start_ns, c->steps.window_end_ns);
  return rc ? PB_EXIT_RUNTIME : 0;
}

int pb_run_make_out_dir(const pb_config *cfg, const char *given, const char *kind, char *out, size_t len) {
  int rc;
  if (given) {
    snprintf(out, len, "%s", given);
    rc = make_given_out_dir(out);
  } else {
    rc = make_default_out_dir(cfg, kind, out, len);
  }
  if (rc) {
    fprintf(stderr, "pipebench: %s: cannot create the output directory: %s (expected a writable directory)\n",
            out, strerror(-rc));
    return PB_EXIT_RUNTIME;
  }
  return 0;
}

/* Made before the run, so that a bad --out fails in a second, not after a long run. */
static int make_out_dir(run_ctx *c) {
  return pb_run_make_out_dir(c->cfg, c->opts->out_dir, NULL, c->out_dir, sizeof c->out_dir);
}

/* trace.json (CONTRACT §5): written when asked for and the run was traced.  A signal while it is being
 * written (a long run's trace takes seconds) abandons it: the run must end within a second. */
static int write_trace(run_ctx *c, const pb_record *rec, bool *done) {
  char path[PB_PATH_LEN + 32];
  snprintf(path, sizeof path, "%s/trace.json", c->out_dir);
  int rc = pb_trace_write_file(rec, path);
  *done = rc == 0;
  if (rc == -ECANCELED) return 0; /* the signal's budget ran out: write_outputs says so */
  if (rc) {
    fprintf(stderr, "pipebench: %s: cannot write the trace: %s\n", path, strerror(-rc));
    return PB_EXIT_RUNTIME;
  }
  return 0;
}

int pb_run_write_views(unsigned formats, const char *out_dir, const pb_report *r, const pb_record *rec) {
  static const struct {
    unsigned format;
    const char *file, *what;
  } views[] = {{PB_FMT_HTML, "report.html", "the HTML report"},
               {PB_FMT_CSV, "stages.csv", "the stage table"},
               {PB_FMT_CSV, "steps.csv", "the step table"}};
  for (size_t i = 0; i < PB_ARRAY_LEN(views); i++) {
    if (!(formats & views[i].format)) continue;
    char path[PB_PATH_LEN + 32];
    snprintf(path, sizeof path, "%s/%s", out_dir, views[i].file);
    int rc = i == 0 ? pb_report_write_html(r, rec, path)
           : i == 1 ? pb_csv_write_stages(r, path)
                    : pb_csv_write_steps(rec, path);
    if (rc) {
      fprintf(stderr, "pipebench: %s: cannot write %s: %s\n", path, views[i].what, strerror(-rc));
      return PB_EXIT_RUNTIME;
    }
  }
  return 0;
}

static int write_json(run_ctx *c, const pb_report *r) {
  if (!(c->opts->formats & PB_FMT_JSON)) return 0;
  char path[PB_PATH_LEN + 32];
  snprintf(path, sizeof path, "%s/report.json", c->out_dir);
  int rc = pb_report_write_json(r, path);
  if (rc) {
    fprintf(stderr, "pipebench: %s: cannot write the report: %s\n", path, strerror(-rc));
    return PB_EXIT_RUNTIME;
  }
  return 0;
}

/* PB_DEBUG_HOLD_OUTPUTS_MS=N: sleep N ms after report.json, deaf to signals, standing in for a slow disk
 * so the end-to-end tests can signal the report-writing phase deterministically (test_e2e_signals.c). */
static void debug_hold_outputs(void) {
  const char *ms = getenv("PB_DEBUG_HOLD_OUTPUTS_MS");
  uint64_t end = ms && atoi(ms) > 0 ? pb_now_ns() + (uint64_t)atoi(ms) * 1000000u : 0;
  while (pb_now_ns() < end) /* in slices: TSan delivers a signal only at its next intercepted call */
    pb_sleep_until_ns(PB_MIN(end, pb_now_ns() + 10000000u));
}

/* report.json first (small, and what scripts read), then the trace and the views.  After a signal they are
 * written only within its time budget (pb_signal_overdue), and stderr names what was left out.  The
 * measurement itself is not changed by a signal that came after it (the record and every file agree on
 * "interrupted"); the exit status says 130. */
static int write_outputs(run_ctx *c, pb_report *r, const pb_record *rec) {
  const pb_run_opts *o = c->opts;
  snprintf(r->out_dir, sizeof r->out_dir, "%s", c->out_dir);
  int rc = write_json(c, r);
  debug_hold_outputs();
  bool want_trace = (o->formats & PB_FMT_TRACE) && rec->traced, want_views = o->formats & (PB_FMT_HTML | PB_FMT_CSV);
  bool trace_done = false, views_done = false;
  if (!rc && want_trace && !pb_signal_overdue()) rc = write_trace(c, rec, &trace_done);
  if (!rc && want_views && !pb_signal_overdue()) {
    rc = pb_run_write_views(o->formats, c->out_dir, r, rec);
    views_done = !rc;
  }
  if (rc) return rc;
  if ((want_trace && !trace_done) || (want_views && !views_done))
    fprintf(stderr, "pipebench: %s: left out to exit promptly after the signal (report.json is written):%s%s\n",
            c->out_dir,
            want_trace && !trace_done ? " trace.json" : "", want_views && !views_done ? " report.html/CSV tables" : "");
  if (o->json_stdout) {
    cJSON *json = pb_report_to_json(r);
    char *text = json ? pb_json_print(json, true) : NULL;
    if (text) printf("%s\n", text);
    free(text);
    cJSON_Delete(json);
  } else if (o->text_out) {
    pb_report_print_text(r, o->text_out);
  } else if ((o->formats & PB_FMT_TEXT) && !o->quiet) {
    pb_report_print_text(r, stdout);
  }
  return 0;
}

/* A run that read samples and saw every one of them fail measured nothing: with on_error skip it may still
 * have gone through all its epochs (fewer than the 10,000 errors that stop it early), and that is a
 * failure of the data, not a result (exit 1, like the stops of METRICS.md "accounting"). */
static bool note_all_failed(run_ctx *c, const pb_report *r) {
  if (c->interrupted || r->samples_read == 0 || r->errors < r->samples_read) return false;
  const pb_first_error *f = r->nfirst_errors ? &r->first_errors[0] : NULL;
  char why[600];
  snprintf(why, sizeof why, "%s%s%s; every sample failed (%llu of %llu), nothing was measured",
           f && f->file[0] ? f->file : "", f && f->file[0] ? ": " : "", f ? f->message : "no error recorded",
           (unsigned long long)r->errors, (unsigned long long)r->samples_read);
  pb_engine_fail(&c->engine, why); /* pb_run says it and exits 1, as for the engine's own stops */
  return true;
}

static int report(run_ctx *c, double cpu0) {
  pb_report *r = calloc(1, sizeof *r);
  pb_record *rec = calloc(1, sizeof *rec);
  int rc = PB_EXIT_RUNTIME;
  c->interrupted = c->interrupted || pb_signalled(); /* a signal during the join or drain counts too */
  if (!r || !rec ||
      pb_record_from_run(rec, c->cfg, &c->engine, &c->steps, &c->device, c->opts->synthetic, c->interrupted,
                         c->queued_samples, cpu_seconds() - cpu0)) {
    fprintf(stderr, "pipebench: out of memory for the run's record\n");
    goto out;
  }
  /* The machine as it was: usable cores, and what others took of them while the run ran. */
  pb_cpu_sample end;
  pb_cpu_sample_take(&end, "");
  pb_cpu_others others = pb_cpu_taken_by_others(&c->cpu_at_start, &end);
  rec->cores_usable = c->cores.usable_cores > 0 ? c->cores.usable_cores : rec->ncpu;
  rec->cores_affinity = c->cores.affinity > 0 ? c->cores.affinity : rec->ncpu;
  rec->cores_quota = c->cores.quota_cores;
  rec->cores_taken_by_others = others.ok ? others.total_cores : 0;
  snprintf(rec->cores_limited_by, sizeof rec->cores_limited_by, "%s", c->cores.limited_by);
  /* The machine's ceilings, for the report's efficiency figures (calibration.h). */
  pb_ceilings_lookup(c->cfg, c->opts->synthetic, strcmp(c->device.kind, "gpu") == 0, &rec->ceilings);
  if (c->opts->world_size > 1) {
    rec->rank = c->opts->rank;
    rec->world_size = c->opts->world_size;
  }
  rec->timeline = malloc(sizeof *rec->timeline);
  if (rec->timeline) *rec->timeline = c->timeline; /* without it the report just has no fill-over-time chart */
  pb_metrics_compute(r, rec);
  r->config = pb_config_to_json(c->cfg);
  if (!r->balanced)
    fprintf(stderr, "pipebench: internal error: the sample accounting does not balance (see report)\n");
  bool all_failed = note_all_failed(c, r);
  /* not when the run stopped on an error: that error is the one line to say (pb_run prints it) */
  bool stopped = all_failed || pb_engine_failed(&c->engine) || c->steps.failed;
  if (c->steps.measured_count == 0 && !c->opts->quiet && !stopped)
    fprintf(stderr, "pipebench: warning: the run ended before any measured step (%zu steps, %lld warm-up)\n",
            c->steps.n, (long long)c->cfg->run.warmup_steps);
  rc = write_outputs(c, r, rec);
  cJSON_Delete(r->config);
  r->config = NULL;
  if (c->opts->result) *c->opts->result = *r;
  if (c->opts->result_json) { /* while the record lives: the report's strings point into it */
    cJSON *j = pb_report_to_json(r);
    *c->opts->result_json = j ? pb_json_print(j, false) : NULL;
    cJSON_Delete(j);
  }
out:
  if (rec) pb_record_free(rec);
  free(rec);
  free(r);
  return rc;
}

int pb_run(const pb_config *cfg, const pb_run_opts *opts) {
  run_ctx *c = calloc(1, sizeof *c);
  if (!c) return PB_EXIT_RUNTIME;
  c->cfg = cfg;
  c->opts = opts;
  double cpu0 = cpu_seconds();
  int rc = plan(c);
  if (!rc) rc = make_out_dir(c);
  if (!rc) rc = open_device(c);
  if (!rc) rc = execute(c);
  if (!rc) rc = report(c, cpu0);
  if (!rc && pb_engine_failed(&c->engine)) {
    fprintf(stderr, "pipebench: %s (the report was written)\n", c->engine.failure);
    rc = PB_EXIT_RUNTIME;
  }
  if (!rc && c->steps_ready && c->steps.failed) {
    fprintf(stderr, "pipebench: %s: %s (the report was written)\n", cfg->file, c->steps.failure);
    rc = PB_EXIT_RUNTIME;
  }
  if (!rc && (c->interrupted || pb_signalled())) rc = PB_EXIT_INTERRUPTED;
  if (c->steps_ready) pb_steps_close(&c->steps);
  pb_engine_close(&c->engine);
  if (c->device_open) pb_device_close(&c->device);
  free(c);
  return rc;
}

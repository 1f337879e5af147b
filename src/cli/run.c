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
#include "outdir.h"
#include "record_run.h"
#include "trace_json.h"
#include "report.h"
#include "progress.h"
#include "steps.h"
#include "timeline_sampler.h"

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
 * took the name (mkdir fails with EEXIST, so two runs can never share a directory).  On failure `out`
 * names the directory that could not be made. */
static int make_default_out_dir(const pb_config *cfg, const char *kind, char *out, size_t len) {
  char stamp[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  snprintf(out, len, "pipebench-out");
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

/* The directory as the error names it: the default one under the current directory, in full (a relative
 * "pipebench-out" says nothing about where the run was started). */
static const char *dir_for_message(const char *dir, bool given, char *buf, size_t len) {
  char cwd[PB_PATH_LEN];
  if (given || dir[0] == '/' || !getcwd(cwd, sizeof cwd)) return dir;
  snprintf(buf, len, "%s/%s", cwd, dir);
  return buf;
}

/* Made (--out DIR, or the default name) and locked for this process: 0, or the exit status after one line
 * (1 when it cannot be made or locked, 2 when another run holds it). */
static int make_and_lock(const pb_config *cfg, const char *given, const char *kind, char *out, size_t len) {
  int rc;
  if (given) {
    snprintf(out, len, "%s", given);
    rc = make_given_out_dir(out);
  } else {
    rc = make_default_out_dir(cfg, kind, out, len);
  }
  if (rc) {
    char full[PB_PATH_LEN * 2], clean[PB_PATH_LEN * 2];
    fprintf(stderr, "pipebench: %s: cannot create the output directory: %s (expected a writable directory%s)\n",
            pb_cfg_clean(dir_for_message(out, given, full, sizeof full), sizeof clean - 4, clean, sizeof clean),
            strerror(-rc), given ? "" : ": run from one, or give --out DIR");
    return PB_EXIT_RUNTIME;
  }
  pb_err err;
  rc = pb_outdir_lock(out, &err);
  if (rc) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return rc == -EBUSY ? PB_EXIT_USAGE : PB_EXIT_RUNTIME;
  }
  return 0;
}

/* ---------- the run ---------- */

typedef struct run_ctx {
  const pb_config *cfg;
  const pb_run_opts *opts;
  pb_engine engine;
  pb_device device;
  pb_steps steps;
  bool device_open, steps_ready, interrupted;
  char device_fallback[256];    /* device.kind auto without a usable GPU: why (for the report's header) */
  bool locked;                  /* out_dir's lock is this run's (pb_outdir_lock) */
  char nothing_measured[PB_PATH_LEN + 512]; /* why, when the run ended without a measured step (exit 1) */
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

/* A plan's byte count as the refusal prints it.  A shape whose bytes overflow 64 bits saturates at
 * UINT64_MAX (pb_shape_bytes): that is no figure to print ("18446744073710 MB"). */
static const char *mb_text(uint64_t bytes, int decimals, char *buf, size_t len) {
  if (bytes == UINT64_MAX) snprintf(buf, len, "more than 2^64 bytes");
  else snprintf(buf, len, "%.*f MB", decimals, (double)bytes / 1e6);
  return buf;
}

/* One element of the stage (a sample, or a batch after `batch`) is 2^64 bytes or more: its buffers' byte
 * count, a product of 64-bit integers, has saturated or wrapped around and says nothing. */
static bool element_overflows(const pb_engine *e, const pb_stage *s) {
  size_t sample = pb_shape_bytes(&s->sample_shape);
  if (sample == SIZE_MAX) return true; /* saturated */
  double batch = s->batched ? (double)e->cfg->stages[pb_config_batch_index(e->cfg)].size : 1.0;
  return (double)sample * batch >= 18446744073709551616.0;
}

/* The stages' buffers summed without wrapping around (a stage that overflows counts as UINT64_MAX and
 * keeps the sum there), and the stages of 1 MB or more named in who.  pb_engine_memory_bytes sums with
 * plain additions: fine for a plan that runs, not for the refusal of one that overflows. */
static uint64_t planned_bytes(const pb_engine *e, char *who, size_t who_len) {
  uint64_t total = 0;
  size_t used = 0;
  who[0] = '\0';
  for (int i = 0; i < e->nstages; i++) {
    const pb_stage *s = &e->stages[i];
    uint64_t bytes = s->ops->memory_bytes ? s->ops->memory_bytes(s, PB_QUEUES_FULL) : 0;
    if (bytes && element_overflows(e, s)) bytes = UINT64_MAX;
    total = total > UINT64_MAX - bytes ? UINT64_MAX : total + bytes;
    char figure[32];
    if (bytes >= 1000000 && used < who_len)
      used += (size_t)snprintf(who + used, who_len - used, "%s%s %s", used ? ", " : "", s->name,
                               mb_text(bytes, 0, figure, sizeof figure));
  }
  return total;
}

int pb_run_check_memory(const pb_config *cfg, const pb_engine *e) {
  char who[512], figure[32];
  uint64_t bytes = planned_bytes(e, who, sizeof who);
  if (bytes <= (uint64_t)cfg->max_memory_mb * 1000000u) return 0;
  /* as many decimals as it takes to differ from the limit: "1 MB, more than the limit of 1 MB" says nothing */
  int decimals = 0;
  for (uint64_t unit = 1000000, limit = (uint64_t)cfg->max_memory_mb; decimals < 6 && bytes / unit <= limit;
       unit /= 10, limit *= 10)
    decimals++;
  fprintf(stderr,
          "pipebench: %s: limits.max_memory_mb: the pipeline may buffer %s, more than the limit of "
          "%lld MB (expected a larger limit or smaller buffers; %s)\n",
          cfg->file, mb_text(bytes, decimals, figure, sizeof figure), (long long)cfg->max_memory_mb, who[0] ? who : "-");
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
/* Files of dataset.path that are not the format's (a README, a .png among JPEGs) are left out: said once,
 * with an example and how to read them anyway. */
static void note_skipped_files(const run_ctx *c) {
  const pb_files_skipped *s = &c->engine.files_skipped;
  if (!s->count || c->opts->quiet || c->opts->quiet_notices) return;
  char name[300];
  fprintf(stderr,
          "pipebench: %s: %zu file%s skipped, not %s files by extension (e.g. %s; dataset.extensions to "
          "read them)\n",
          pb_cfg_clean(c->cfg->dataset.path, 200, name, sizeof name), s->count, s->count == 1 ? "" : "s",
          pb_format_name(c->cfg->dataset.format), s->first[0]);
}

static int plan(run_ctx *c) {
  pb_err err;
  int world = c->opts->world_size > 1 ? c->opts->world_size : 1, rank = world > 1 ? c->opts->rank : 0;
  if (pb_engine_plan_shard(&c->engine, c->cfg, c->opts->synthetic, c->cfg->device.count, rank, world, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return PB_EXIT_USAGE;
  }
  c->engine.tracing = !c->opts->no_trace;
  note_skipped_files(c);
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
  snprintf(c->device_fallback, sizeof c->device_fallback, "%s", notice);
  /* a run's report says it in its header; the multi-run commands, whose own output has no header, say it once */
  if (notice[0] && c->opts->notices_on_stderr && !c->opts->quiet && !c->opts->quiet_notices)
    fprintf(stderr, "pipebench: %s\n", notice);
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
  int rc = make_and_lock(cfg, given, kind, out, len);
  if (rc) return rc;
  pb_err err; /* its runs write below it, one by one: what an earlier command left goes now */
  int cleared = pb_outdir_clear(out, &err);
  if (cleared) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    return cleared == -EBUSY ? PB_EXIT_USAGE : PB_EXIT_RUNTIME; /* a sub-run's directory another run holds */
  }
  return 0;
}

/* Made before the run, so that a bad --out fails in a second, not after a long run.  An earlier run's files
 * stay until this run's replace them: then the ones it did not rewrite go (write_outputs). */
static int make_out_dir(run_ctx *c) {
  int rc = make_and_lock(c->cfg, c->opts->out_dir, NULL, c->out_dir, sizeof c->out_dir);
  c->locked = rc == 0;
  return rc;
}

/* One line for a file that could not be written, with what would let it be. */
static int write_failed(const char *path, const char *what, int rc) {
  const char *expected = rc == -EFBIG ? "a file size limit (ulimit -f) that fits it"
                       : rc == -ENOSPC || rc == -EDQUOT ? "free space (and quota) on its file system"
                                                        : "a writable output directory";
  fprintf(stderr, "pipebench: %s: cannot write %s: %s (expected %s)\n", path, what, strerror(-rc), expected);
  return PB_EXIT_RUNTIME;
}

/* trace.json (docs/CONTRACT.md §5): written when asked for and the run was traced.  A signal while it is being
 * written (a long run's trace takes seconds) abandons it: the run must end within a second. */
static int write_trace(run_ctx *c, const pb_record *rec, bool *done) {
  char path[PB_PATH_LEN + 32];
  snprintf(path, sizeof path, "%s/trace.json", c->out_dir);
  int rc = pb_trace_write_file(rec, path);
  *done = rc == 0;
  if (rc == -ECANCELED) return 0; /* the signal's budget ran out: write_outputs says so */
  return rc ? write_failed(path, "the trace", rc) : 0;
}

/* The views of `formats`, in order; the first that fails ends them. */
int pb_run_write_views(unsigned formats, const char *out_dir, const pb_report *r, const pb_record *rec) {
  static const struct {
    unsigned format;
    const char *file, *what;
  } views[] = {{PB_FMT_HTML, "report.html", "the HTML report"},
               {PB_FMT_CSV, "stages.csv", "the stage table"},
               {PB_FMT_CSV, "steps.csv", "the step table"}};
  int rc = 0;
  for (size_t i = 0; !rc && i < PB_ARRAY_LEN(views); i++) {
    if (!(formats & views[i].format)) continue;
    char path[PB_PATH_LEN + 32];
    snprintf(path, sizeof path, "%s/%s", out_dir, views[i].file);
    rc = i == 0 ? pb_report_write_html(r, rec, path)
       : i == 1 ? pb_csv_write_stages(r, path)
                : pb_csv_write_steps(rec, path);
    if (rc) rc = write_failed(path, views[i].what, rc);
  }
  return rc;
}

static int write_json(run_ctx *c, const pb_report *r) {
  if (!(c->opts->formats & PB_FMT_JSON)) return 0;
  char path[PB_PATH_LEN + 32];
  snprintf(path, sizeof path, "%s/report.json", c->out_dir);
  int rc = pb_report_write_json(r, path);
  return rc ? write_failed(path, "the report", rc) : 0;
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
static int write_files(run_ctx *c, const pb_report *r, const pb_record *rec) {
  const pb_run_opts *o = c->opts;
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
  return 0;
}

/* What an earlier run wrote here goes before this run writes anything (so that nothing in the directory
 * is of another run, even after a second signal mid-write: `analyze DIR` reproduces this one). */
static int remove_earlier_files(run_ctx *c) {
  pb_err err;
  int rc = pb_outdir_clear(c->out_dir, &err);
  if (!rc) return 0;
  fprintf(stderr, "pipebench: %s\n", err.msg);
  return rc == -EBUSY ? PB_EXIT_USAGE : PB_EXIT_RUNTIME; /* a sub-directory another run holds, as the lock */
}

static void print_summary(const pb_run_opts *o, const pb_report *r) {
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
  } else if (o->result_line) {
    pb_report_print_line(r, stdout);
  }
}

static int write_outputs(run_ctx *c, pb_report *r, const pb_record *rec) {
  snprintf(r->out_dir, sizeof r->out_dir, "%s", c->out_dir);
  int rc = remove_earlier_files(c);
  int wrote = write_files(c, r, rec);
  if (!rc) rc = wrote;
  if (!rc) print_summary(c->opts, r);
  return rc;
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

/* A run that ended by itself (its epochs done, its time up) before one step past the warm-up measured
 * nothing: every figure would be n/a, and a script reading exit 0 would take it for a result.  It exits 1
 * as a run whose every sample failed does (note_all_failed); the report is still written. */
static void note_nothing_measured(run_ctx *c, const pb_report *r) {
  if (c->interrupted || c->steps.measured_count > 0) return;
  size_t n = c->steps.n;
  char ended[96];
  if (n == 0) snprintf(ended, sizeof ended, "before its first step");
  else snprintf(ended, sizeof ended, "after %zu step%s warm-up", n, n == 1 ? ", a" : "s, all");
  snprintf(c->nothing_measured, sizeof c->nothing_measured,
           "%s: nothing was measured: the run ended %s (run.warmup_steps %lld; %llu samples read, %llu dropped as "
           "a short batch) (expected at least one step after the warm-up: more data or time, a smaller batch or "
           "fewer warm-up steps; the report was written)",
           c->cfg->file, ended, (long long)c->cfg->run.warmup_steps, (unsigned long long)r->samples_read,
           (unsigned long long)r->samples_dropped);
}

/* The plan bounds the pooled buffers; what it leaves out (decoder state, thread stacks, the trace rings,
 * the binary) is small, but a user who set limits.max_memory_mb should hear when the process went past it.
 * Not for a run inside ab/sweep/tune/--repeat (opts->result set): the peak is the process's so far, the
 * earlier runs' included. */
static void warn_over_memory_limit(const run_ctx *c, const pb_report *r) {
  if (c->opts->result || !r->memory_peak_rss_bytes || r->memory_peak_rss_bytes <= r->memory_limit_bytes) return;
  fprintf(stderr,
          "pipebench: %s: warning: peak RSS %.0f MB was over limits.max_memory_mb (%.0f MB; planned buffers %.0f MB, "
          "trace %.0f MB) (expected the process within the limit: a smaller plan or a larger limit)\n",
          c->cfg->file, (double)r->memory_peak_rss_bytes / 1e6, (double)r->memory_limit_bytes / 1e6,
          (double)r->memory_planned_bytes / 1e6, (double)r->memory_trace_bytes / 1e6);
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
  snprintf(rec->device_fallback, sizeof rec->device_fallback, "%s", c->device_fallback);
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
  warn_over_memory_limit(c, r);
  r->config = pb_config_to_json(c->cfg);
  if (!r->balanced)
    fprintf(stderr, "pipebench: internal error: the sample accounting does not balance (see report)\n");
  bool all_failed = note_all_failed(c, r);
  /* not when the run stopped on an error: that error is the one line to say (pb_run prints it) */
  bool stopped = all_failed || pb_engine_failed(&c->engine) || c->steps.failed;
  if (!stopped) note_nothing_measured(c, r);
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
  if (!rc && c->nothing_measured[0]) {
    fprintf(stderr, "pipebench: %s\n", c->nothing_measured);
    rc = PB_EXIT_RUNTIME;
  }
  if (c->locked) pb_outdir_unlock(c->out_dir);
  if (c->steps_ready) pb_steps_close(&c->steps);
  pb_engine_close(&c->engine);
  if (c->device_open) pb_device_close(&c->device);
  free(c);
  return rc;
}

#include "ranks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allreduce.h"
#include "files.h"
#include "html.h"
#include "json_text.h"
#include "outdir.h"
#include "ranks_out.h"
#include "trace_merge.h"
#include "world.h"

/* ---------- one rank ---------- */

/* This rank's report with who and where it is, as JSON text (or only rank and status without a report). */
static char *rank_text(const char *report_json, int status, const char *dir, const pb_config *cfg) {
  const pb_world *w = pb_world_get();
  cJSON *o = report_json ? cJSON_Parse(report_json) : NULL;
  if (!o) o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, "rank", w->rank);
  cJSON_AddStringToObject(o, "host", w->host);
  cJSON_AddNumberToObject(o, "status", status);
  cJSON_AddStringToObject(o, "out_dir", dir);
  /* this rank's shard of the files (listing again is cheap next to a run, and needs no plumbing) */
  if (cfg->dataset.format != PB_FMT_SYNTHETIC) {
    pb_file_list files;
    pb_err err;
    if (pb_dataset_list(&cfg->dataset, &files, NULL, &err) == 0) {
      pb_file_list_shard(&files, w->rank, w->size);
      cJSON *shard = cJSON_CreateObject();
      cJSON_AddNumberToObject(shard, "files", (double)files.count);
      cJSON_AddNumberToObject(shard, "bytes", (double)files.total_bytes);
      cJSON_AddItemToObject(o, "shard", shard);
      pb_file_list_free(&files);
    }
  }
  char *text = pb_json_print(o, false);
  cJSON_Delete(o);
  return text;
}

/* Says which ranks failed (each printed its own error line). */
static void say_failed_ranks(cJSON *const *reports, int n, const char *dir) {
  for (int i = 0; i < n; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(reports[i], "status");
    double st = cJSON_IsNumber(v) ? v->valuedouble : PB_EXIT_RUNTIME;
    if (st == PB_EXIT_INTERRUPTED)
      fprintf(stderr, "pipebench: rank %d was interrupted (exit %d; its partial report in %s/rank-%d)\n", i,
              PB_EXIT_INTERRUPTED, dir, i);
    else if (st != 0)
      fprintf(stderr,
              "pipebench: rank %d ended with exit %.0f (its error is above; its report, if any, in %s/rank-%d)\n", i,
              st, dir, i);
  }
}

/* Rank 0: the job's report.json (src/reports/ranks_out.h), its page, and the summary. */
static int write_outputs(cJSON *job, const pb_config *cfg, const pb_run_opts *opts, const char *dir) {
  cJSON_DeleteItemFromObjectCaseSensitive(job, "config");
  cJSON_AddItemToObject(job, "config", pb_config_to_json(cfg));
  char path[PB_PATH_LEN + 32], *text;
  pb_err err;
  int rc = 0;
  if (pb_ranks_write_json(job, dir, &text, &err)) {
    fprintf(stderr, "pipebench: %s\n", err.msg);
    rc = PB_EXIT_RUNTIME;
  }
  if (!rc && (opts->formats & PB_FMT_HTML)) { /* the ranks side by side, linking each rank's own page */
    snprintf(path, sizeof path, "%s/report.html", dir);
    if (pb_html_write_command("job", cfg->name, cfg->file, dir, true, job, path) != 0) {
      fprintf(stderr, "pipebench: %s: cannot write the job's page\n", path);
      rc = PB_EXIT_RUNTIME;
    }
  }
  if (opts->json_stdout && text)
    printf("%s\n", text);
  else if (!opts->quiet && (opts->formats & PB_FMT_TEXT))
    pb_ranks_print_text(stdout, job, dir, cfg->name);
  free(text);
  return rc;
}

static int write_job(char **texts, int n, const pb_config *cfg, const pb_run_opts *opts, const char *dir) {
  cJSON **reports = calloc((size_t)n, sizeof *reports);
  int rc = reports ? 0 : PB_EXIT_RUNTIME;
  for (int i = 0; !rc && i < n; i++) {
    reports[i] = texts[i] ? cJSON_Parse(texts[i]) : NULL;
    if (!reports[i]) reports[i] = cJSON_CreateObject();
  }
  if (!rc) say_failed_ranks(reports, n, dir);
  cJSON *job = rc ? NULL : pb_ranks_aggregate(reports, n);
  if (job) {
    rc = write_outputs(job, cfg, opts, dir);
  } else {
    fprintf(stderr, "pipebench: out of memory for the job's report\n");
    rc = PB_EXIT_RUNTIME;
  }
  cJSON_Delete(job);
  for (int i = 0; reports && i < n; i++) cJSON_Delete(reports[i]);
  free(reports);
  return rc;
}

/* ---------- the job's trace ---------- */

/* This rank's trace.json as text for rank 0: "" when it wrote none, "!reason" when it cannot be sent. */
static char *trace_text(const char *dir, int world_size) {
  char path[PB_PATH_LEN + 48], why[160];
  snprintf(path, sizeof path, "%s/trace.json", dir);
  /* MPI counts are ints, and rank 0 receives every rank's trace in one buffer */
  size_t most = (size_t)(INT32_MAX / world_size) - 1, len = 0;
  char *text = NULL;
  int rc = pb_read_file(path, most, &text, &len);
  if (rc == -ENOENT) return strdup("");
  if (rc == -EFBIG)
    snprintf(why, sizeof why, "!its trace is too large to send (more than %zu bytes with %d ranks)", most, world_size);
  else if (rc)
    snprintf(why, sizeof why, "!its trace could not be read back: %s", strerror(-rc));
  else if (strlen(text) != len)
    snprintf(why, sizeof why, "!its trace holds a NUL byte");
  else
    return text;
  free(text);
  return strdup(why);
}

/* Every rank sends its trace to rank 0, which writes <top>/trace.json with one process per rank and role
 * (src/reports/trace_merge.h).  Returns 0, or on rank 0 PB_EXIT_RUNTIME after printing one line. */
static int merge_traces(const char *top, const char *dir, const char *host) {
  const pb_world *w = pb_world_get();
  char *mine = trace_text(dir, w->size);
  char **texts = pb_world_gather_text(mine ? mine : "!out of memory for its trace");
  char **hosts = pb_world_gather_text(host);
  free(mine);
  int rc = 0, any = 0;
  pb_trace_part *parts = texts && hosts ? calloc((size_t)w->size, sizeof *parts) : NULL;
  for (int r = 0; parts && r < w->size; r++) {
    const char *t = texts[r] ? texts[r] : "";
    bool reason = t[0] == '!';
    parts[r] = (pb_trace_part){.rank = r, .host = hosts[r], .text = reason ? "" : t, .len = reason ? 0 : strlen(t),
                               .why_missing = reason ? t + 1 : "it wrote no trace"};
    any += parts[r].len > 0;
  }
  if (w->rank == 0 && any) {
    char path[PB_PATH_LEN + 32];
    snprintf(path, sizeof path, "%s/trace.json", top);
    pb_err err;
    if (pb_trace_merge(path, parts, w->size, &err) < 0) {
      fprintf(stderr, "pipebench: %s\n", err.msg);
      rc = PB_EXIT_RUNTIME;
    }
  }
  for (int r = 0; w->rank == 0 && r < w->size; r++) {
    free(texts ? texts[r] : NULL);
    free(hosts ? hosts[r] : NULL);
  }
  free(parts);
  free(texts);
  free(hosts);
  return rc;
}

/* Rank 0 names and makes the job's directory (a default name holds the time: one clock decides) and tells
 * the others; top (zeroed by the caller: all of it is sent) stays "" on every rank when it could not. */
static void job_dir(const pb_config *cfg, const pb_run_opts *opts, char *top, size_t size) {
  const pb_world *w = pb_world_get();
  if (w->rank == 0 && pb_run_make_out_dir(cfg, opts->out_dir, NULL, top, size)) top[0] = '\0';
  for (int r = 0; top[0] && w->rank == 0 && r < w->size; r++) { /* the ranks' directories are the job's */
    char name[32];
    snprintf(name, sizeof name, "rank-%d", r);
    pb_outdir_record(top, name);
  }
  pb_world_bcast_str(top, size);
}

/* A reused --out: no trace of an earlier job may be taken for this one's. */
static void remove_stale_traces(const char *top, const char *dir) {
  char stale[PB_PATH_LEN + 48];
  snprintf(stale, sizeof stale, "%s/trace.json", dir);
  unlink(stale);
  if (pb_world_get()->rank == 0) {
    snprintf(stale, sizeof stale, "%s/trace.json", top);
    unlink(stale);
  }
}

/* The gradient exchange: every rank sets it up, and all agree it works before any exchange is made.
 * Returns the job's setup status (0 on every rank, or the worst rank's). */
static int exchange_setup(pb_exchange *x, const pb_config *cfg) {
  const pb_world *w = pb_world_get();
  pb_err err;
  int xrc = pb_exchange_init(x, cfg, w->size, &err);
  if (xrc) fprintf(stderr, "pipebench: rank %d: %s: %s\n", w->rank, cfg->file, err.msg);
  int setup = pb_world_max_status(xrc == -EINVAL ? PB_EXIT_USAGE : xrc ? PB_EXIT_RUNTIME : 0);
  if (setup) pb_exchange_close(x);
  return setup;
}

int pb_ranks_run(const pb_config *cfg, const pb_run_opts *opts) {
  const pb_world *w = pb_world_get();
  char top[PB_PATH_LEN] = "";
  job_dir(cfg, opts, top, sizeof top);
  if (!top[0]) return pb_world_max_status(PB_EXIT_RUNTIME); /* rank 0 said why */

  char dir[PB_PATH_LEN + 32];
  snprintf(dir, sizeof dir, "%s/rank-%d", top, w->rank);
  remove_stale_traces(top, dir);
  char *report_json = NULL;
  pb_run_opts o = *opts;
  o.out_dir = dir;
  o.rank = w->rank;
  o.world_size = w->size;
  o.result = NULL;
  o.result_json = &report_json;
  o.json_stdout = false;
  o.formats &= ~(unsigned)PB_FMT_TEXT; /* rank 0 prints the job's summary */
  if (w->rank != 0) o.no_progress = o.quiet_notices = true;
  pb_exchange x;
  int setup = exchange_setup(&x, cfg);
  if (setup) return setup;
  o.exchange = &x;
  int rc = pb_run(cfg, &o);
  pb_exchange_leave(&x); /* a run that failed before its device thread made it (no-op otherwise) */
  pb_exchange_close(&x);

  /* every rank reaches both collectives, whatever its run did */
  char *text = rank_text(report_json, rc, dir, cfg);
  char **texts = pb_world_gather_text(text ? text : "{}");
  int status = pb_world_max_status(rc);
  int mrc = merge_traces(top, dir, w->host);
  if (w->rank == 0) {
    int wrc = texts ? write_job(texts, w->size, cfg, opts, top) : PB_EXIT_RUNTIME;
    if (!status) status = wrc ? wrc : mrc;
  }
  for (int i = 0; texts && i < w->size; i++) free(texts[i]);
  free(texts);
  free(text);
  free(report_json);
  return status;
}

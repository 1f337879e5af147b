#include "ranks.h"
#include "json_text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allreduce.h"
#include "files.h"
#include "outdir.h"
#include "html.h"
#include "trace_merge.h"
#include "multirun.h"
#include "report.h"
#include "world.h"

/* ---------- the job's report (rank 0) ---------- */

static double number(const cJSON *o, const char *key, double fallback) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : fallback;
}

static const cJSON *obj(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsObject(v) ? v : NULL;
}

/* A rank that wrote a report (it has figures to compare). */
static bool has_report(const cJSON *r) { return obj(r, "throughput") != NULL; }

static void copy_item(cJSON *to, const char *key, const cJSON *from, const char *from_key) {
  const cJSON *v = from ? cJSON_GetObjectItemCaseSensitive(from, from_key) : NULL;
  cJSON_AddItemToObject(to, key, v ? cJSON_Duplicate(v, true) : cJSON_CreateNull());
}

/* One row of ranks[]. */
static cJSON *rank_summary(const cJSON *r) {
  cJSON *o = cJSON_CreateObject();
  copy_item(o, "rank", r, "rank");
  copy_item(o, "host", r, "host");
  copy_item(o, "status", r, "status");
  copy_item(o, "out_dir", r, "out_dir");
  const cJSON *tp = obj(r, "throughput"), *st = obj(r, "steps"), *bn = obj(r, "bottleneck");
  copy_item(o, "samples_per_s", tp, "samples_per_s");
  copy_item(o, "batches_per_s", tp, "batches_per_s");
  copy_item(o, "steps", st, "count");
  copy_item(o, "measured_s", r, "measured_s");
  copy_item(o, "device_idle_pct", r, "device_idle_pct");
  copy_item(o, "accelerator_utilization_pct", r, "accelerator_utilization_pct");
  copy_item(o, "input_bound_pct", r, "input_bound_pct");
  copy_item(o, "classification", r, "classification");
  copy_item(o, "bottleneck", bn, "stage");
  const cJSON *bd = obj(r, "step_breakdown_ms");
  copy_item(o, "input_wait_ms", bd, "input_wait");
  copy_item(o, "comm_ms", bd, "comm");
  copy_item(o, "interrupted", r, "interrupted");
  copy_item(o, "shard", r, "shard");
  copy_item(o, "accounting", r, "accounting");
  return o;
}

/* The rank that holds a synchronous job back: the largest input_bound_pct, ties to the slower; -1 when no
 * rank wrote a report. */
static int most_input_bound(cJSON *const *reports, int n) {
  int best = -1;
  for (int i = 0; i < n; i++) {
    if (!has_report(reports[i])) continue;
    double ib = number(reports[i], "input_bound_pct", -1);
    double sps = number(obj(reports[i], "throughput"), "samples_per_s", INFINITY);
    if (best < 0) {
      best = i;
      continue;
    }
    double bib = number(reports[best], "input_bound_pct", -1);
    double bsps = number(obj(reports[best], "throughput"), "samples_per_s", INFINITY);
    if (ib > bib || (ib == bib && sps < bsps)) best = i;
  }
  return best;
}

/* throughput summed over the ranks that wrote a report. */
static void sum_throughput(cJSON *job, cJSON *const *reports, int n) {
  static const char *const keys[] = {"samples_per_s", "batches_per_s", "bytes_per_s"};
  static const int decimals[] = {1, 3, 1};
  cJSON *tp = cJSON_CreateObject();
  for (size_t k = 0; k < 3; k++) {
    double sum = 0;
    int have = 0;
    for (int i = 0; i < n; i++) {
      double v = number(obj(reports[i], "throughput"), keys[k], NAN);
      if (isfinite(v)) sum += v, have++;
    }
    pb_multi_add_number(tp, keys[k], have ? sum : NAN, decimals[k]);
  }
  cJSON_ReplaceItemInObjectCaseSensitive(job, "throughput", tp);
}

/* accounting summed over every rank; balanced when every rank's is; first errors with their rank. */
static void sum_accounting(cJSON *job, cJSON *const *reports, int n) {
  static const char *const keys[] = {"files_read", "samples_read", "samples_decoded", "samples_batched",
                                     "samples_consumed", "samples_dropped", "errors", "samples_in_flight"};
  cJSON *acc = cJSON_CreateObject();
  bool balanced = true;
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += number(obj(reports[i], "accounting"), keys[k], 0);
    cJSON_AddNumberToObject(acc, keys[k], sum);
  }
  cJSON *errors = cJSON_CreateArray(), *unaccounted = cJSON_CreateArray();
  for (int i = 0; i < n; i++) {
    const cJSON *a = obj(reports[i], "accounting");
    if (!a) { /* a rank that sent no accounting: what it read is unknown, so the job cannot say balanced */
      balanced = false;
      cJSON_AddItemToArray(unaccounted, cJSON_CreateNumber(number(reports[i], "rank", i)));
      continue;
    }
    balanced = balanced && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "balanced"));
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(a, "first_errors")) {
      if (cJSON_GetArraySize(errors) >= PB_MAX_FIRST_ERRORS) break;
      cJSON *c = cJSON_Duplicate(e, true);
      cJSON_AddNumberToObject(c, "rank", number(reports[i], "rank", i));
      cJSON_AddItemToArray(errors, c);
    }
  }
  cJSON_AddBoolToObject(acc, "balanced", balanced);
  cJSON_AddItemToObject(acc, "first_errors", errors);
  if (cJSON_GetArraySize(unaccounted) > 0) cJSON_AddItemToObject(acc, "unaccounted_ranks", unaccounted);
  else cJSON_Delete(unaccounted);
  cJSON_ReplaceItemInObjectCaseSensitive(job, "accounting", acc);
}

/* How far apart the ranks' samples/s are. */
static cJSON *skew(cJSON *const *reports, int n) {
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int have = 0;
  for (int i = 0; i < n; i++) {
    double v = number(obj(reports[i], "throughput"), "samples_per_s", NAN);
    if (!isfinite(v)) continue;
    lo = fmin(lo, v), hi = fmax(hi, v), sum += v, have++;
  }
  cJSON *o = cJSON_CreateObject();
  pb_multi_add_number(o, "samples_per_s_min", have ? lo : NAN, 1);
  pb_multi_add_number(o, "samples_per_s_max", have ? hi : NAN, 1);
  pb_multi_add_number(o, "max_over_min", have && lo > 0 ? hi / lo : NAN, 3);
  pb_multi_add_number(o, "spread_pct", have && sum > 0 ? (hi - lo) / (sum / have) * 100 : NAN, 2);
  return o;
}

cJSON *pb_ranks_aggregate(cJSON *const *reports, int n) {
  int from = most_input_bound(reports, n);
  cJSON *job = from >= 0 ? cJSON_Duplicate(reports[from], true) : cJSON_CreateObject();
  if (!job) return NULL;
  static const char *const per_rank[] = {"rank", "host", "status", "out_dir", "shard"};
  for (size_t k = 0; k < sizeof per_rank / sizeof per_rank[0]; k++) cJSON_DeleteItemFromObjectCaseSensitive(job, per_rank[k]);
  sum_throughput(job, reports, n);
  sum_accounting(job, reports, n);
  bool interrupted = false;
  cJSON *ranks = cJSON_CreateArray();
  for (int i = 0; i < n; i++) {
    interrupted = interrupted || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reports[i], "interrupted"));
    cJSON_AddItemToArray(ranks, rank_summary(reports[i]));
  }
  cJSON_DeleteItemFromObjectCaseSensitive(job, "interrupted");
  cJSON_AddBoolToObject(job, "interrupted", interrupted);
  cJSON_DeleteItemFromObjectCaseSensitive(job, "ranks");
  cJSON_AddItemToObject(job, "ranks", ranks);
  cJSON_DeleteItemFromObjectCaseSensitive(job, "most_input_bound_rank");
  if (from >= 0) cJSON_AddNumberToObject(job, "most_input_bound_rank", number(reports[from], "rank", from));
  else cJSON_AddNullToObject(job, "most_input_bound_rank");
  cJSON_AddNumberToObject(job, "world_size", n);
  if (from >= 0) cJSON_AddNumberToObject(job, "figures_from_rank", number(reports[from], "rank", from));
  else cJSON_AddNullToObject(job, "figures_from_rank");
  cJSON_AddItemToObject(job, "rank_skew", skew(reports, n));
  return job;
}

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
    if (pb_files_list(cfg->dataset.path, &files, &err) == 0) {
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

static void print_job(const cJSON *job, const char *dir, const char *name, FILE *out) {
  const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(job, "ranks"), *r;
  fprintf(out, "pipebench %s  %s  %d ranks\n", PB_VERSION, name, cJSON_GetArraySize(ranks));
  fprintf(out, "throughput    %.1f samples/s over all ranks\n", number(obj(job, "throughput"), "samples_per_s", NAN));
  fprintf(out, "%-5s %-16s %12s %8s %8s %9s %-24s %-12s %7s\n", "rank", "host", "samples/s", "idle %", "inp %",
          "comm ms", "classification", "bottleneck", "files");
  cJSON_ArrayForEach(r, ranks) {
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(r, "classification");
    const cJSON *bn = cJSON_GetObjectItemCaseSensitive(r, "bottleneck");
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(r, "host");
    fprintf(out, "%-5.0f %-16.16s %12.1f %8.2f %8.2f %9.3f %-24s %-12s %7.0f\n", number(r, "rank", -1),
            cJSON_IsString(host) ? host->valuestring : "?", number(r, "samples_per_s", NAN),
            number(r, "device_idle_pct", NAN), number(r, "input_bound_pct", NAN), number(r, "comm_ms", NAN),
            cJSON_IsString(cls) ? cls->valuestring : "-", cJSON_IsString(bn) ? bn->valuestring : "-",
            number(obj(r, "shard"), "files", NAN));
  }
  const cJSON *bn = obj(job, "bottleneck"), *sk = obj(job, "rank_skew"), *acc = obj(job, "accounting");
  const cJSON *stage = bn ? cJSON_GetObjectItemCaseSensitive(bn, "stage") : NULL;
  fprintf(out, "most input-bound rank %.0f: bottleneck %s\n", number(job, "most_input_bound_rank", NAN),
          cJSON_IsString(stage) ? stage->valuestring : "n/a");
  fprintf(out, "skew          samples/s min %.1f max %.1f (max/min %.3f)\n", number(sk, "samples_per_s_min", NAN),
          number(sk, "samples_per_s_max", NAN), number(sk, "max_over_min", NAN));
  fprintf(out, "accounting    read %.0f = consumed %.0f + dropped %.0f + errors %.0f + in flight %.0f  (%s)\n",
          number(acc, "samples_read", 0), number(acc, "samples_consumed", 0), number(acc, "samples_dropped", 0),
          number(acc, "errors", 0), number(acc, "samples_in_flight", 0),
          cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(acc, "balanced")) ? "balanced" : "NOT balanced");
  fprintf(out, "output        %s (each rank's own report in rank-N/)\n", dir);
  char trace[PB_PATH_LEN + 32];
  snprintf(trace, sizeof trace, "%s/trace.json", dir);
  if (access(trace, F_OK) == 0)
    fprintf(out, "trace         %s (every rank, one process per rank: open in https://ui.perfetto.dev)\n", trace);
}

/* Rank 0: the job's report.json, and the summary. */
static int write_text_line(FILE *f, const void *text) { return fprintf(f, "%s\n", (const char *)text) < 0 ? -EIO : 0; }

static int write_job(char **texts, int n, const pb_config *cfg, const pb_run_opts *opts, const char *dir) {
  cJSON **reports = calloc((size_t)n, sizeof *reports);
  int rc = reports ? 0 : PB_EXIT_RUNTIME;
  for (int i = 0; !rc && i < n; i++) {
    reports[i] = texts[i] ? cJSON_Parse(texts[i]) : NULL;
    if (!reports[i]) reports[i] = cJSON_CreateObject();
  }
  for (int i = 0; !rc && i < n; i++) { /* each failed rank printed its error; say which rank it was */
    double st = number(reports[i], "status", PB_EXIT_RUNTIME);
    if (st == PB_EXIT_INTERRUPTED)
      fprintf(stderr, "pipebench: rank %d was interrupted (exit %d; its partial report in %s/rank-%d)\n", i,
              PB_EXIT_INTERRUPTED, dir, i);
    else if (st != 0)
      fprintf(stderr, "pipebench: rank %d ended with exit %.0f (its error is above; its report, if any, in %s/rank-%d)\n",
              i, st, dir, i);
  }
  cJSON *job = rc ? NULL : pb_ranks_aggregate(reports, n);
  if (job) {
    cJSON_DeleteItemFromObjectCaseSensitive(job, "config");
    cJSON_AddItemToObject(job, "config", pb_config_to_json(cfg));
    char path[PB_PATH_LEN + 32], *text = pb_json_print(job, true);
    snprintf(path, sizeof path, "%s/report.json", dir);
    /* whole or not at all, as a run's own report.json (a reader never sees half of it) */
    int wrc = text ? pb_write_atomic(path, write_text_line, text) : -ENOMEM;
    if (wrc) {
      fprintf(stderr, "pipebench: %s: cannot write the job's report: %s (expected a writable directory)\n", path,
              strerror(-wrc));
      rc = PB_EXIT_RUNTIME;
    }
    if (!rc && (opts->formats & PB_FMT_HTML)) { /* the ranks side by side, linking each rank's own page */
      snprintf(path, sizeof path, "%s/report.html", dir);
      if (pb_html_write_command("job", cfg->name, cfg->file, dir, true, job, path) != 0) {
        fprintf(stderr, "pipebench: %s: cannot write the job's page\n", path);
        rc = PB_EXIT_RUNTIME;
      }
    }
    if (opts->json_stdout && text) printf("%s\n", text);
    else if (!opts->quiet && (opts->formats & PB_FMT_TEXT)) print_job(job, dir, cfg->name, stdout);
    free(text);
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
 * (reports/trace_merge.h).  Returns 0, or on rank 0 PB_EXIT_RUNTIME after printing one line. */
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

int pb_ranks_run(const pb_config *cfg, const pb_run_opts *opts) {
  const pb_world *w = pb_world_get();
  /* rank 0 names and makes the job's directory (a default name holds the time: one clock decides) */
  char top[PB_PATH_LEN] = "";
  if (w->rank == 0 && pb_run_make_out_dir(cfg, opts->out_dir, NULL, top, sizeof top)) top[0] = '\0';
  for (int r = 0; top[0] && w->rank == 0 && r < w->size; r++) { /* the ranks' directories are the job's */
    char name[32];
    snprintf(name, sizeof name, "rank-%d", r);
    pb_outdir_record(top, name);
  }
  pb_world_bcast_str(top, sizeof top);
  if (!top[0]) return pb_world_max_status(PB_EXIT_RUNTIME); /* rank 0 said why */

  char dir[PB_PATH_LEN + 32], stale[PB_PATH_LEN + 48];
  snprintf(dir, sizeof dir, "%s/rank-%d", top, w->rank);
  /* a reused --out: no trace of an earlier job may be taken for this one's */
  snprintf(stale, sizeof stale, "%s/trace.json", dir);
  unlink(stale);
  if (w->rank == 0) {
    snprintf(stale, sizeof stale, "%s/trace.json", top);
    unlink(stale);
  }
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
  /* The gradient exchange: every rank sets it up, and all agree it works before any exchange is made. */
  pb_exchange x;
  pb_err err;
  int xrc = pb_exchange_init(&x, cfg, w->size, &err);
  if (xrc) fprintf(stderr, "pipebench: rank %d: %s: %s\n", w->rank, cfg->file, err.msg);
  int setup = pb_world_max_status(xrc == -EINVAL ? PB_EXIT_USAGE : xrc ? PB_EXIT_RUNTIME : 0);
  if (setup) {
    pb_exchange_close(&x);
    return setup;
  }
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

/* The MPI job's report.json and summary on rank 0 (ranks_out.h). */
#include "ranks_out.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "json_text.h"
#include "multirun_out.h"
#include "report.h"

/* ---------- the job's report ---------- */

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
  static const char *const keys[] = {"files_read",       "samples_read",    "samples_decoded", "samples_batched",
                                     "samples_consumed", "samples_dropped", "errors",          "samples_in_flight"};
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
  if (cJSON_GetArraySize(unaccounted) > 0)
    cJSON_AddItemToObject(acc, "unaccounted_ranks", unaccounted);
  else
    cJSON_Delete(unaccounted);
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
  for (size_t k = 0; k < sizeof per_rank / sizeof per_rank[0]; k++)
    cJSON_DeleteItemFromObjectCaseSensitive(job, per_rank[k]);
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
  if (from >= 0)
    cJSON_AddNumberToObject(job, "most_input_bound_rank", number(reports[from], "rank", from));
  else
    cJSON_AddNullToObject(job, "most_input_bound_rank");
  cJSON_AddNumberToObject(job, "world_size", n);
  if (from >= 0)
    cJSON_AddNumberToObject(job, "figures_from_rank", number(reports[from], "rank", from));
  else
    cJSON_AddNullToObject(job, "figures_from_rank");
  cJSON_AddItemToObject(job, "rank_skew", skew(reports, n));
  return job;
}

static int write_text_line(FILE *f, const void *text) { return fprintf(f, "%s\n", (const char *)text) < 0 ? -EIO : 0; }

int pb_ranks_write_json(cJSON *job, const char *dir, char **text, pb_err *err) {
  char path[PB_PATH_LEN + 32];
  snprintf(path, sizeof path, "%s/report.json", dir);
  *text = pb_json_print(job, true);
  int rc = *text ? pb_write_atomic(path, write_text_line, *text) : -ENOMEM;
  if (rc)
    return pb_err_setc(err, rc, "%s: cannot write the job's report: %s (expected a writable directory)", path,
                       strerror(-rc));
  return 0;
}

/* ---------- the job's summary ---------- */

void pb_ranks_print_text(FILE *out, const cJSON *job, const char *dir, const char *name) {
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

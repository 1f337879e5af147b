#include "csv.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

void pb_csv_put_field(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (const char *p = s; *p; p++) {
    if (*p == '"') fputc('"', f);
    fputc(*p, f);
  }
  fputc('"', f);
}

/* A JSON scalar as a cell: numbers as report.json prints them, null as empty, booleans as 1/0. */
static void put_value(FILE *f, const cJSON *v) {
  if (cJSON_IsString(v)) pb_csv_put_field(f, v->valuestring);
  else if (cJSON_IsBool(v)) fputs(cJSON_IsTrue(v) ? "1" : "0", f);
  else if (cJSON_IsNumber(v)) {
    char *text = cJSON_PrintUnformatted(v);
    if (text) fputs(text, f);
    free(text);
  }
}

/* stages.csv's columns: report.json's stage keys, in its order (a fixed list: every row has every column,
 * whatever the stage, trace or data mode), then the stage graph's parent. */
static const char *const k_stage_cols[] = {
    "name", "type", "threads", "skipped", "calls", "total_ms", "self_ms", "mean_us", "p50_us", "p99_us",
    "wait_in_ms", "blocked_out_ms", "utilization", "capacity_per_s", "bytes_in", "bytes_out",
    "queue_mean_fill", "queue_capacity", "critical_path_ms", "critical_path_pct", "critical_path_self_ms",
    "cpu_fraction", "cpu_delay_fraction", "ceiling_per_thread_per_s", "ceiling_per_s", "efficiency_pct",
    "ceiling_source",
};

static int stages_body(FILE *f, const void *arg) {
  cJSON *rep = pb_report_to_json(arg);
  const cJSON *stages = rep ? cJSON_GetObjectItemCaseSensitive(rep, "stages") : NULL;
  if (!stages) {
    cJSON_Delete(rep);
    return -ENOMEM;
  }
  for (size_t c = 0; c < PB_ARRAY_LEN(k_stage_cols); c++) fprintf(f, "%s,", k_stage_cols[c]);
  fputs("parent\n", f);
  const cJSON *s;
  cJSON_ArrayForEach(s, stages) {
    for (size_t c = 0; c < PB_ARRAY_LEN(k_stage_cols); c++) {
      put_value(f, cJSON_GetObjectItemCaseSensitive(s, k_stage_cols[c])); /* null or absent: empty */
      fputc(',', f);
    }
    const cJSON *graph = cJSON_GetObjectItemCaseSensitive(s, "graph");
    put_value(f, cJSON_IsObject(graph) ? cJSON_GetObjectItemCaseSensitive(graph, "parent") : NULL);
    fputc('\n', f);
  }
  cJSON_Delete(rep);
  return 0;
}

int pb_csv_write_stages(const pb_report *r, const char *path) { return pb_write_atomic(path, stages_body, r); }

/* ms since the run started, to the ns; empty when the time is 0 ("did not happen": no copy). */
static void put_ms(FILE *f, uint64_t t_ns, uint64_t start_ns) {
  /* the difference in integers first: after 2^53 ns (104 days) of uptime a double loses nanoseconds */
  if (t_ns) fprintf(f, ",%.6f", (double)(int64_t)(t_ns - start_ns) / 1e6);
  else fputc(',', f);
}

static int steps_body(FILE *f, const void *arg) {
  const pb_record *rec = arg;
  fputs("step,device,measured,samples,bytes,prev_end_ms,ready_ms,h2d_start_ms,h2d_end_ms,compute_start_ms,"
        "compute_end_ms,comm_start_ms,comm_end_ms,step_ms,input_wait_ms,h2d_ms,compute_ms,comm_ms,other_ms,host_late_ms\n", f);
  for (size_t i = 0; i < rec->nsteps; i++) {
    const pb_step *st = &rec->steps[i];
    pb_step_parts p = pb_step_breakdown(st);
    fprintf(f, "%zu,%u,%d,%u,%llu", i + 1, (unsigned)st->device, st->measured ? 1 : 0, (unsigned)st->samples,
            (unsigned long long)st->bytes);
    put_ms(f, st->prev_end_ns, rec->start_ns);
    put_ms(f, st->ready_ns, rec->start_ns);
    put_ms(f, st->h2d_start_ns, rec->start_ns);
    put_ms(f, st->h2d_end_ns, rec->start_ns);
    put_ms(f, st->compute_start_ns, rec->start_ns);
    put_ms(f, st->compute_end_ns, rec->start_ns);
    put_ms(f, st->comm_start_ns, rec->start_ns);
    put_ms(f, st->comm_end_ns, rec->start_ns);
    fprintf(f, ",%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n", (double)p.step_ns / 1e6, (double)p.input_wait_ns / 1e6,
            (double)p.h2d_ns / 1e6, (double)p.compute_ns / 1e6, (double)p.comm_ns / 1e6, (double)p.other_ns / 1e6,
            (double)p.host_late_ns / 1e6);
  }
  return 0;
}

int pb_csv_write_steps(const pb_record *rec, const char *path) { return pb_write_atomic(path, steps_body, rec); }

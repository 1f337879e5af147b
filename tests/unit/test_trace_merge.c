/* src/reports/trace_merge.c: a job's ranks in one trace. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "unit_util.h"

#include "trace_merge.h"

/* A run's trace as trace_json.c lays it out: line 1, the header, the events, the end. */
static char *trace(const char *start_unix_ns, const char *events) {
  static const char head[] = "{\"displayTimeUnit\":\"ns\",\n\"pipebench\":{\"format\":1,\"start_unix_ns\":\"%s\"},\n"
                             "\"traceEvents\":[\n%s\n]}\n";
  size_t len = strlen(head) + strlen(start_unix_ns) + strlen(events) + 1;
  char *t = malloc(len);
  snprintf(t, len, head, start_unix_ns, events);
  return t;
}

static void test_merge(void **state) {
  (void)state;
  /* rank 1 started 1.5 ms and 7 ns after rank 0 on the wall clock */
  char *t0 = trace("1000000000000000000",
                   "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"pipeline (host)\"}},\n"
                   "{\"ph\":\"X\",\"pid\":2,\"tid\":1,\"ts\":10.000,\"dur\":2.000,\"cat\":\"allreduce\",\"name\":\"allreduce\","
                   "\"args\":{\"step\":0,\"id\":\"7\"}},\n"
                   "{\"ph\":\"s\",\"id\":3,\"pid\":1,\"tid\":1,\"ts\":1.000,\"cat\":\"flow\",\"name\":\"sample 1\"}");
  char *t1 = trace("1000000000001500007",
                   "{\"ph\":\"C\",\"pid\":1,\"name\":\"queue fill batch\",\"ts\":100.000,\"args\":{\"pct\":50.00}},\n"
                   "{\"ph\":\"X\",\"pid\":2,\"tid\":1,\"ts\":-0.250,\"dur\":1.000,\"cat\":\"compute\",\"name\":\"step 0\"},\n"
                   "{\"ph\":\"f\",\"bp\":\"e\",\"id\":3,\"pid\":2,\"tid\":1,\"ts\":5.5,\"cat\":\"flow\",\"name\":\"sample 1\"}");
  char *t3 = trace("999999999999999999", ""); /* a rank with no event at all (and the earliest start) */
  pb_trace_part parts[4] = {
      {.rank = 0, .host = "a", .text = t0, .len = strlen(t0)},
      {.rank = 1, .host = "b", .text = t1, .len = strlen(t1)},
      {.rank = 2, .host = "c", .text = "hello", .len = 5},
      {.rank = 3, .host = "d", .text = t3, .len = strlen(t3)},
  };
  char dir[] = "/tmp/pb-merge-XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/trace.json", dir);
  pb_err err;
  assert_int_equal(pb_trace_merge(path, parts, 4, &err), 3); /* rank 2's is not a trace */
  char *text = slurp(path);
  cJSON *j = cJSON_Parse(text);
  assert_non_null(j);
  /* the header lists every rank; the broken one with why */
  cJSON *ranks = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "pipebench_job"), "ranks");
  assert_int_equal(cJSON_GetArraySize(ranks), 4);
  /* rank 3 started 1 ns before rank 0: every offset is from it */
  assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, 1), "start_offset_ns")->valuedouble, 1500008);
  assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, 3), "events")->valuedouble, 0);
  assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, 2), "merged")));
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, 2), "why_not")->valuestring, "not a pipebench trace");
  /* events rewritten: pids by rank, rank 1's times shifted exactly, flow ids apart, names prefixed; the
   * args' "id" (an element id) untouched */
  assert_non_null(strstr(text, "{\"ph\":\"M\",\"pid\":101,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"rank 0 "
                               "pipeline (host)\"}}"));
  assert_non_null(strstr(text, "{\"ph\":\"X\",\"pid\":102,\"tid\":1,\"ts\":10.001,\"dur\":2.000,\"cat\":\"allreduce\""
                               ",\"name\":\"allreduce\",\"args\":{\"step\":0,\"id\":\"7\"}}"));
  assert_non_null(strstr(text, "{\"ph\":\"s\",\"id\":12,\"pid\":101,\"tid\":1,\"ts\":1.001,"));
  assert_non_null(strstr(text, "{\"ph\":\"X\",\"pid\":202,\"tid\":1,\"ts\":1499.758,\"dur\":1.000,"));
  assert_non_null(strstr(text, "{\"ph\":\"f\",\"bp\":\"e\",\"id\":13,\"pid\":202,\"tid\":1,\"ts\":1505.508,"));
  assert_non_null(strstr(text, "{\"ph\":\"C\",\"pid\":201,\"name\":\"queue fill batch\",\"ts\":1600.008,"));
  /* 6 events and a sort index per merged process (3 ranks x 2) */
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "traceEvents")), 6 + 6);
  cJSON_Delete(j);
  free(text);
  unlink(path);
  rmdir(dir);
  /* a directory that is not there: one error, nothing written */
  assert_true(pb_trace_merge("/nonexistent/dir/trace.json", parts, 1, &err) < 0);
  assert_non_null(strstr(err.msg, "cannot write the job's trace"));
  free(t0);
  free(t1);
  free(t3);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_merge)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

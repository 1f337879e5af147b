/* End-to-end tests of the views a person looks at (docs/REPORTS.md): report.html (self-contained, its
 * inlined figures the same as report.json's), the CSV tables (--format csv), the live progress line (on a
 * terminal only, and never with --no-progress), report.html from `analyze` and from `sweep`.
 * The browser check (headless Chromium, no console errors) is tests/browser/check_report.sh. */
#include <dirent.h>
#include <pty.h>
#include <sys/select.h>

#include "e2e_util.h"

/* A synthetic pipeline: 8-sample batches from a 50 us/sample map on 2 threads, a 20 ms device step; 60
 * measured steps (about 1.3 s), so that a progress line (first drawn after 0.5 s) shows up. */
static const char *config(const char *name, int steps) {
  return write_config(name,
                      "{'name':'%s','seed':1,'dataset':{'format':'synthetic','shape':[256],'dtype':'uint8'},"
                      "'stages':[{'name':'aug','type':'map','threads':2,'ops':[{'op':'spin','us':50}]},"
                      "  {'name':'batch','type':'batch','size':8},{'name':'prefetch','type':'prefetch','depth':2},"
                      "  {'name':'h2d','type':'h2d'}],"
                      "'device':{'kind':'emulated','step_ms':20},'run':{'steps':%d,'warmup_steps':3}}",
                      name, steps);
}

static bool exists(const char *dir, const char *file) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  struct stat st;
  return stat(path, &st) == 0 && st.st_size > 0;
}

/* The JSON inlined in <dir>/report.html (fails when missing). */
static cJSON *html_data(const char *dir) {
  static char page[1 << 21];
  char path[600];
  snprintf(path, sizeof path, "%s/report.html", dir);
  read_text(path, page, sizeof page);
  if (!page[0]) fail_msg("%s: missing", path);
  assert_null(strstr(page, "@PB_"));
  assert_non_null(strstr(page, "default-src 'none'")); /* the CSP that forbids every fetch */
  const char *open = strstr(page, "id=\"pb-data\" type=\"application/json\">");
  if (!open) fail_msg("%s: no data element", path);
  open = strchr(open, '>') + 1;
  const char *close = strstr(open, "</script>");
  assert_non_null(close);
  cJSON *d = cJSON_ParseWithLength(open, (size_t)(close - open));
  if (!d) fail_msg("%s: the inlined data is not JSON", path);
  return keep_json(d);
}

static void test_html_by_default(void **state) {
  const char *cfg = config("html", 20);
  cJSON *rep = run_report(cfg, "html", ARGS("--data", "synthetic"));
  const char *dir = out_dir("html");
  assert_true(exists(dir, "report.html"));
  assert_true(exists(dir, "trace.json"));
  assert_false(exists(dir, "stages.csv")); /* csv only when asked for */
  cJSON *d = html_data(dir);
  assert_string_equal(str(d, "kind"), "run");
  assert_float_equal(num(d, "report.throughput.samples_per_s"), num(rep, "throughput.samples_per_s"), 0);
  assert_float_equal(num(d, "report.device_idle_pct"), num(rep, "device_idle_pct"), 0);
  assert_float_equal(num(d, "steps.count"), num(rep, "steps.count"), 0);
  assert_int_equal(cJSON_GetArraySize(at(d, "steps.input_wait_ms")), (int)num(rep, "steps.count"));
  /* one fill series per stage that ran (the in-memory source, batch, prefetch, h2d), values 0..1 */
  cJSON *series = at(d, "queues.series"), *s;
  assert_int_equal(cJSON_GetArraySize(series), 4);
  cJSON_ArrayForEach(s, series) {
    cJSON *v;
    cJSON_ArrayForEach(v, at(s, "fill")) assert_double_between(v->valuedouble, 0, 1);
  }
  assert_true(cJSON_GetArraySize(at(d, "throughput.samples_per_s")) > 0);
}

static int count_lines(const char *text, const char *prefix) {
  int n = 0;
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (!prefix || strncmp(p, prefix, strlen(prefix)) == 0) n++;
  return n;
}

static void test_csv_tables(void **state) {
  const char *cfg = config("csv", 20);
  cJSON *rep = run_report(cfg, "csv", ARGS("--format", "json,csv"));
  const char *dir = out_dir("csv");
  assert_false(exists(dir, "report.html"));
  assert_false(exists(dir, "trace.json"));
  static char text[1 << 20];
  char path[600];
  snprintf(path, sizeof path, "%s/stages.csv", dir);
  read_text(path, text, sizeof text);
  assert_int_equal(strncmp(text, "name,type,threads,skipped,calls,total_ms,self_ms,", 49), 0);
  assert_int_equal(count_lines(text, NULL), 1 + cJSON_GetArraySize(at(rep, "stages")));
  assert_non_null(strstr(text, "\naug,map,2,0,"));
  snprintf(path, sizeof path, "%s/steps.csv", dir);
  read_text(path, text, sizeof text);
  assert_int_equal(strncmp(text, "step,device,measured,samples,", 29), 0);
  /* every step, warm-up included; the measured ones are the report's steps */
  int measured = 0;
  for (const char *p = strchr(text, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
    int step, device, m;
    assert_int_equal(sscanf(p + 1, "%d,%d,%d,", &step, &device, &m), 3);
    measured += m;
  }
  assert_int_equal(measured, (int)num(rep, "steps.count"));
  assert_true(count_lines(text, NULL) - 1 >= measured + 3);
}

/* Runs pipebench on a pseudo-terminal (stdout and stderr both the terminal); returns what it printed. */
static const char *run_on_terminal(const char **args) {
  static char out[1 << 16];
  const char *argv[32] = {PB_BIN};
  int n = 1;
  while (args[n - 1] && n < 31) argv[n] = args[n - 1], n++;
  argv[n] = NULL;
  int master;
  pid_t pid = forkpty(&master, NULL, NULL, NULL);
  assert_true(pid >= 0);
  if (pid == 0) {
    execv(PB_BIN, (char *const *)argv);
    _exit(127);
  }
  size_t len = 0;
  double t0 = now_s();
  for (;;) { /* read until the child closes the terminal (EIO on Linux) */
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(master, &fds);
    struct timeval tv = {.tv_sec = 1};
    if (select(master + 1, &fds, NULL, NULL, &tv) > 0) {
      ssize_t k = read(master, out + len, sizeof out - 1 - len);
      if (k <= 0) break;
      len += (size_t)k;
    }
    if (now_s() - t0 > PB_CHILD_TIMEOUT_S) {
      kill(pid, SIGKILL);
      break;
    }
  }
  out[len] = '\0';
  close(master);
  int st = wait_status_timeout(pid, 5, "on a terminal");
  if (st != 0) fail_msg("exit %d on a terminal: %s", st, out);
  return out;
}

static void test_progress_only_on_a_terminal(void **state) {
  const char *cfg = config("progress", 60);
  const char *tty = run_on_terminal(ARGS("--config", cfg, "--out", out_dir("progress-tty"), "--format", "json,text"));
  if (!strstr(tty, "measuring  step ") || !strstr(tty, "samples/s  device idle ") || !strstr(tty, "ETA "))
    fail_msg("no progress line on a terminal: %s", tty);
  assert_non_null(strstr(tty, "\r\033[K")); /* cleared before the summary */
  assert_non_null(strstr(tty, "throughput")); /* the text summary still follows */
  const char *quiet = run_on_terminal(
      ARGS("--config", cfg, "--out", out_dir("progress-off"), "--format", "json", "--no-progress"));
  assert_null(strstr(quiet, "measuring"));
  assert_null(strstr(quiet, "warm-up  step"));
  /* not a terminal: nothing but the summary */
  result *r = run_pb(ARGS("--config", cfg, "--out", out_dir("progress-pipe"), "--format", "json,text"));
  assert_int_equal(r->status, 0);
  assert_null(strchr(r->err, '\r'));
  assert_null(strstr(r->err, "measuring"));
}

static void test_analyze_writes_html(void **state) {
  const char *cfg = config("analyze", 20);
  cJSON *rep = run_report(cfg, "analyze-run", NULL);
  const char *again = out_dir("analyze-again");
  result *r = run_pb(ARGS("analyze", out_dir("analyze-run"), "--out", again, "--quiet"));
  if (r->status != 0) fail_msg("analyze: exit %d: %s", r->status, r->err);
  cJSON *d = html_data(again);
  assert_float_equal(num(d, "report.throughput.samples_per_s"), num(rep, "throughput.samples_per_s"), 0);
  assert_int_equal(cJSON_GetArraySize(at(d, "queues.series")), cJSON_GetArraySize(at(html_data(out_dir("analyze-run")), "queues.series")));
}

/* A run longer than the in-memory step record (PB_DEBUG_STEPS_IN_MEMORY=100 in place of 65536): the
 * oldest records go to an unlinked file in the output directory and come back whole for the report, the
 * step table and the trace, and nothing is left behind. */
static void test_long_run_spills_step_record(void **state) {
  const char *cfg = write_config("spill",
                                 "{'name':'spill','seed':1,'dataset':{'format':'synthetic','shape':[64],'dtype':'uint8'},"
                                 "'stages':[{'name':'batch','type':'batch','size':2},{'name':'h2d','type':'h2d'}],"
                                 "'device':{'kind':'emulated','step_ms':0},'run':{'steps':3000,'warmup_steps':3}}");
  const char *dir = out_dir("spill");
  result *r = run_pb_with(ARGS("/usr/bin/env", "PB_DEBUG_STEPS_IN_MEMORY=100"),
                          ARGS("run", "--config", cfg, "--quiet", "--out", dir, "--format", "json,csv,trace"));
  if (r->status != 0) fail_msg("run: exit %d: %s", r->status, r->err);
  assert_string_equal(r->err, "");
  cJSON *rep = load_report(dir);
  assert_float_equal(num(rep, "steps.count"), 3000, 0);
  assert_accounting_balances(rep);
  char path[600];
  snprintf(path, sizeof path, "%s/steps.csv", dir);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[1024];
  assert_non_null(fgets(line, sizeof line, f)); /* header */
  long want = 1;
  while (fgets(line, sizeof line, f)) {
    if (strtol(line, NULL, 10) != want) fail_msg("steps.csv: row %ld is step %ld", want, strtol(line, NULL, 10));
    want++;
  }
  fclose(f);
  assert_int_equal(want - 1, 3003); /* every step, warm-up included, in order */
  DIR *d = opendir(dir);
  assert_non_null(d);
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
        strcmp(e->d_name, ".pipebench-files")) /* the record of what the run wrote stays, by design */
      fail_msg("left behind: %s", e->d_name);
  closedir(d);
  const char *again = out_dir("spill-again");
  r = run_pb(ARGS("analyze", dir, "--out", again, "--quiet", "--format", "json"));
  if (r->status != 0) fail_msg("analyze: exit %d: %s", r->status, r->err);
  cJSON *re = load_report(again);
  assert_float_equal(num(re, "steps.count"), 3000, 0);
  assert_float_equal(num(re, "throughput.samples_per_s"), num(rep, "throughput.samples_per_s"), 0);
  assert_float_equal(num(re, "device_idle_pct"), num(rep, "device_idle_pct"), 0);
  assert_float_equal(num(re, "steps.p99_ms"), num(rep, "steps.p99_ms"), 0);
}

static void test_sweep_writes_html(void **state) {
  const char *cfg = config("sweep", 10);
  const char *dir = out_dir("sweep");
  result *r = run_pb(ARGS("sweep", "--config", cfg, "--out", dir, "--quiet", "--data", "synthetic", "--set",
                          "stages.aug.threads=1,2"));
  if (r->status != 0) fail_msg("sweep: exit %d: %s", r->status, r->err);
  cJSON *d = html_data(dir);
  assert_string_equal(str(d, "kind"), "sweep");
  assert_int_equal(cJSON_GetArraySize(at(d, "result.trials")), 2);
  assert_true(cJSON_IsTrue(at(d, "run_reports")));
  char trial[600];
  snprintf(trial, sizeof trial, "%s/trial-002", dir);
  assert_string_equal(str(html_data(trial), "kind"), "run");
  /* --format without text: the files, and no table on stdout */
  dir = out_dir("sweep-json-only");
  r = run_pb(ARGS("sweep", "--config", cfg, "--out", dir, "--format", "json", "--data", "synthetic", "--set",
                  "stages.aug.threads=1,2"));
  if (r->status != 0) fail_msg("sweep --format json: exit %d: %s", r->status, r->err);
  assert_string_equal(r->out, "");
}

static int setup(void **state) { return e2e_make_tmp("pb-e2e-reports"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_html_by_default, free_reports),
      cmocka_unit_test_teardown(test_csv_tables, free_reports),
      cmocka_unit_test_teardown(test_progress_only_on_a_terminal, free_reports),
      cmocka_unit_test_teardown(test_analyze_writes_html, free_reports),
      cmocka_unit_test_teardown(test_sweep_writes_html, free_reports),
      cmocka_unit_test_teardown(test_long_run_spills_step_record, free_reports),
  };
  return cmocka_run_group_tests(tests, setup, remove_tmp);
}

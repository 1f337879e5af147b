/* Helpers shared by the end-to-end suites (tests/e2e/test_*.c): a temporary directory per suite, running the
 * built pipebench binary (PB_BIN) with a timeout, writing configs, loading report.json and reading it.
 *
 * Everything here is static (one copy per suite, which is one executable); E2E_UNUSED keeps -Wunused-function
 * quiet for the helpers a suite does not call.  Include it after <cmocka.h>'s prerequisites, i.e. as the
 * suites do: it includes everything it needs itself. */
#ifndef PB_E2E_UTIL_H
#define PB_E2E_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "../assert_values.h" /* assert_double_cmp and friends: failures print the values */

#ifndef PB_BIN
#error "PB_BIN (the pipebench binary under test) must be defined by the build"
#endif

#define E2E_UNUSED __attribute__((unused))

/* A child pipebench still running after this many seconds is killed and the test fails: a hang is a bug and
 * must never block the suite.  A suite may define its own value before including this header. */
#ifndef PB_CHILD_TIMEOUT_S
#define PB_CHILD_TIMEOUT_S 60
#endif

/* Returns NULL-terminated argument arrays: ARGS("--set", "run.epochs=1"). */
#define ARGS(...) ((const char *[]){__VA_ARGS__, NULL})

extern char **environ;

/* The suite's temporary directory (made by e2e_make_tmp, removed by remove_tmp). */
static char g_tmp[256];

typedef struct result {
  int status;          /* exit status, or 128 + signal */
  double wall_s;       /* how long the child ran */
  char out[1 << 16];   /* stdout */
  char err[1 << 14];   /* stderr */
} result;

/* ---------- files and time ---------- */

static E2E_UNUSED double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The start of a text file into buf (always NUL-terminated; empty when the file cannot be read). */
static E2E_UNUSED void read_text(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, len - 1, f) : 0;
  buf[n] = '\0';
  if (f) fclose(f);
}

/* A path inside the suite's temporary directory. */
static E2E_UNUSED const char *tmp_path(const char *name) {
  static char path[8][400];
  static int next;
  char *p = path[next++ % 8];
  snprintf(p, 400, "%s/%s", g_tmp, name);
  return p;
}

/* The output directory <tmp>/out-NAME. */
static E2E_UNUSED const char *out_dir(const char *name) {
  static char dir[4][300];
  static int next;
  char *d = dir[next++ % 4];
  snprintf(d, 300, "%s/out-%s", g_tmp, name);
  return d;
}

/* system() of a printf-formatted shell command; a failure fails the test, naming the command. */
static E2E_UNUSED __attribute__((format(printf, 1, 2))) void e2e_sh(const char *fmt, ...) {
  char cmd[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  if (system(cmd) != 0) fail_msg("command failed: %s", cmd);
}

/* ---------- the temporary directory (group setup and teardown) ---------- */

/* Makes /tmp/<prefix>-XXXXXX; call it from the suite's group setup. */
static E2E_UNUSED int e2e_make_tmp(const char *prefix) {
  snprintf(g_tmp, sizeof g_tmp, "/tmp/%s-XXXXXX", prefix);
  return mkdtemp(g_tmp) ? 0 : -1;
}

/* Group teardown: removes the temporary directory, unless PB_E2E_KEEP is set (then it names it). */
static E2E_UNUSED int remove_tmp(void **state) {
  if (getenv("PB_E2E_KEEP")) return fprintf(stderr, "kept %s\n", g_tmp), 0;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  return system(cmd) == 0 ? 0 : -1;
}

/* ---------- running pipebench ---------- */

/* Starts argv[0] (a path) with argv (NULL-terminated); stdin is /dev/null, stdout and stderr go to the two
 * files. */
static E2E_UNUSED pid_t spawn_argv(const char *const *argv, const char *out_path, const char *err_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  assert_int_equal(rc, 0);
  return pid;
}

/* argv = prefix (NULL-terminated, may be empty), then PB_BIN, then args (NULL-terminated). */
static E2E_UNUSED void pb_argv(const char **argv, int cap, const char *const *prefix, const char **args) {
  int n = 0;
  while (prefix && *prefix && n < cap - 2) argv[n++] = *prefix++;
  argv[n++] = PB_BIN;
  while (*args && n < cap - 1) argv[n++] = *args++;
  argv[n] = NULL;
}

/* Starts pipebench with args (NULL-terminated, without the program name); stdin is /dev/null, stdout and
 * stderr go to the two files. */
static E2E_UNUSED pid_t spawn_pb(const char **args, const char *out_path, const char *err_path) {
  const char *argv[64];
  pb_argv(argv, 64, NULL, args);
  return spawn_argv(argv, out_path, err_path);
}

/* Waits for the child; past the timeout it is killed and the test fails (a hang is a bug). */
static E2E_UNUSED int wait_status_timeout(pid_t pid, double timeout_s, const char *what) {
  double t0 = now_s();
  int st;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) fail_msg("waitpid: %s", strerror(errno));
    if (now_s() - t0 > timeout_s) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      fail_msg("pipebench %s did not finish within %.0f s (killed)", what ? what : "", timeout_s);
    }
    usleep(2000);
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Waits for a child started with spawn_pb (with the timeout) and reads what it wrote into r; r->wall_s is
 * the time waited here, not since the spawn. */
static E2E_UNUSED void collect(result *r, pid_t pid, const char *out_path, const char *err_path) {
  double t0 = now_s();
  r->status = wait_status_timeout(pid, PB_CHILD_TIMEOUT_S, "(spawned)");
  r->wall_s = now_s() - t0;
  read_text(out_path, r->out, sizeof r->out);
  read_text(err_path, r->err, sizeof r->err);
}

/* Runs argv to completion (killed past timeout_s; `what` names it then).  The result is static: the next
 * call overwrites it. */
static E2E_UNUSED result *run_argv(const char *const *argv, double timeout_s, const char *what) {
  static result r;
  char out[300], err[300];
  snprintf(out, sizeof out, "%s/stdout", g_tmp);
  snprintf(err, sizeof err, "%s/stderr", g_tmp);
  double t0 = now_s();
  pid_t pid = spawn_argv(argv, out, err);
  r.status = wait_status_timeout(pid, timeout_s, what);
  r.wall_s = now_s() - t0;
  read_text(out, r.out, sizeof r.out);
  read_text(err, r.err, sizeof r.err);
  return &r;
}

/* Runs `prefix` (NULL-terminated, may be NULL: e.g. setpriv ...) then pipebench with args, to completion
 * (killed past PB_CHILD_TIMEOUT_S).  The result is static: the next call overwrites it. */
static E2E_UNUSED result *run_pb_with(const char *const *prefix, const char **args) {
  const char *argv[64];
  pb_argv(argv, 64, prefix, args);
  return run_argv(argv, PB_CHILD_TIMEOUT_S, args[0]);
}

static E2E_UNUSED result *run_pb(const char **args) { return run_pb_with(NULL, args); }

/* One line on stderr, "pipebench: ...", containing `what` (NULL: anything). */
static E2E_UNUSED void assert_one_error_line(const result *r, int status, const char *what) {
  if (r->status != status) fail_msg("exit %d, expected %d; stderr: %s", r->status, status, r->err);
  assert_int_equal(strncmp(r->err, "pipebench: ", 11), 0);
  const char *nl = strchr(r->err, '\n');
  if (!nl || nl[1] != '\0') fail_msg("expected exactly one line on stderr: %s", r->err);
  if (what && !strstr(r->err, what)) fail_msg("stderr lacks \"%s\": %s", what, r->err);
}

/* ---------- configs ---------- */

/* Writes <tmp>/NAME.json holding exactly `json`; returns its path (one of 4 rotating buffers). */
static E2E_UNUSED const char *write_config_text(const char *name, const char *json) {
  static char path[4][400];
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, 400, "%s/%s.json", g_tmp, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(json, f);
  fclose(f);
  return p;
}

/* Writes a config formatted as printf does; single quotes in the result become double quotes, so the JSON
 * in the suites stays readable (paths and names passed through %s hold no quotes). */
static E2E_UNUSED __attribute__((format(printf, 2, 3))) const char *write_config(const char *name,
                                                                                 const char *fmt, ...) {
  static char json[1 << 14];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(json, sizeof json, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof json) fail_msg("config %s: longer than %zu bytes", name, sizeof json);
  for (char *c = json; *c; c++)
    if (*c == '\'') *c = '"';
  return write_config_text(name, json);
}

/* ---------- report.json ---------- */

/* Reports loaded by the running test; free_reports (a test teardown) frees them, also when an assertion
 * jumped out of the test.  Tests never cJSON_Delete a loaded report themselves. */
static cJSON *g_reports[64];
static int g_nreports;

/* Keeps j until the test's teardown. */
static E2E_UNUSED cJSON *keep_json(cJSON *j) {
  if (g_nreports == 64) cJSON_Delete(g_reports[--g_nreports]);
  g_reports[g_nreports++] = j;
  return j;
}

/* Parses a whole JSON file, kept until the teardown (fails the test when it is missing or not JSON). */
static E2E_UNUSED cJSON *load_json(const char *path) {
  FILE *f = fopen(path, "rb");
  char *text = NULL;
  long n = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1)) && fread(text, 1, (size_t)n, f) == (size_t)n)
    text[n] = '\0';
  if (f) fclose(f);
  cJSON *j = n >= 0 && text ? cJSON_Parse(text) : NULL;
  free(text);
  if (!j) fail_msg("%s: missing or not JSON", path);
  return keep_json(j);
}

/* Parses <dir>/report.json. */
static E2E_UNUSED cJSON *load_report(const char *dir) {
  char path[1024];
  snprintf(path, sizeof path, "%s/report.json", dir);
  return load_json(path);
}

static E2E_UNUSED int free_reports(void **state) {
  while (g_nreports > 0) cJSON_Delete(g_reports[--g_nreports]);
  return 0;
}

/* The value at a dotted path of object keys and array indices ("accounting.samples_read", "stages.1.type"),
 * or NULL. */
static E2E_UNUSED cJSON *at(cJSON *j, const char *dotted) {
  char buf[200];
  snprintf(buf, sizeof buf, "%s", dotted);
  for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && j; k = strtok_r(NULL, ".", &save))
    j = cJSON_IsArray(j) && strspn(k, "0123456789") == strlen(k) ? cJSON_GetArrayItem(j, atoi(k))
                                                                 : cJSON_GetObjectItemCaseSensitive(j, k);
  return j;
}

static E2E_UNUSED double num(cJSON *j, const char *dotted) {
  cJSON *v = at(j, dotted);
  if (!cJSON_IsNumber(v)) fail_msg("%s is not a number", dotted);
  return v->valuedouble;
}

static E2E_UNUSED const char *str(cJSON *j, const char *dotted) {
  cJSON *v = at(j, dotted);
  if (!cJSON_IsString(v)) fail_msg("%s is not a string", dotted);
  return v->valuestring;
}

/* The stage named `name` in report.stages. */
static E2E_UNUSED cJSON *stage(cJSON *rep, const char *name) {
  cJSON *s;
  cJSON_ArrayForEach(s, at(rep, "stages")) {
    cJSON *n = at(s, "name");
    if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) return s;
  }
  fail_msg("no stage named %s in the report", name);
  return NULL;
}

/* An accounting field equals an exact count. */
static E2E_UNUSED void expect_count(cJSON *rep, const char *field, double want) {
  char path[100];
  snprintf(path, sizeof path, "accounting.%s", field);
  double got = num(rep, path);
  if (got != want) fail_msg("%s = %.0f, expected %.0f", path, got, want);
}

/* Every sample the source yielded is consumed, dropped, an error or in flight, and the report says so. */
static E2E_UNUSED void assert_accounting_balances(cJSON *rep) {
  double read = num(rep, "accounting.samples_read"), consumed = num(rep, "accounting.samples_consumed");
  double dropped = num(rep, "accounting.samples_dropped"), errors = num(rep, "accounting.errors");
  double in_flight = num(rep, "accounting.samples_in_flight");
  assert_true(read > 0);
  if (read != consumed + dropped + errors + in_flight)
    fail_msg("read %.0f != consumed %.0f + dropped %.0f + errors %.0f + in flight %.0f", read, consumed, dropped,
             errors, in_flight);
  assert_true(cJSON_IsTrue(at(rep, "accounting.balanced")));
}

/* `pipebench run --config cfg --quiet --out <tmp>/out-NAME [extra...]`: exit 0 expected; the report. */
static E2E_UNUSED result *run_named(const char *cfg, const char *name, const char **extra, char dir[400]) {
  snprintf(dir, 400, "%s/out-%s", g_tmp, name);
  const char *args[40] = {"run", "--config", cfg, "--quiet", "--out", dir};
  int n = 6;
  for (int i = 0; extra && extra[i] && n < 39; i++) args[n++] = extra[i];
  args[n] = NULL;
  return run_pb(args);
}

static E2E_UNUSED cJSON *run_report(const char *cfg, const char *name, const char **extra) {
  char dir[400];
  result *r = run_named(cfg, name, extra, dir);
  if (r->status != 0) fail_msg("run %s: exit %d: %s", name, r->status, r->err);
  return load_report(dir);
}

/* The same run, expected to fail with exit 1 and one error line holding `what`, its report still written;
 * *out (when not NULL) receives the result, for more checks of stderr. */
static E2E_UNUSED cJSON *run_report_failing(const char *cfg, const char *name, const char **extra, const char *what,
                                            result **out) {
  char dir[400];
  result *r = run_named(cfg, name, extra, dir);
  assert_one_error_line(r, 1, what);
  if (out) *out = r;
  return load_report(dir);
}

/* `pipebench gen --config cfg --quiet`: exit 0 expected. */
static E2E_UNUSED void gen_ok(const char *cfg) {
  result *r = run_pb(ARGS("gen", "--config", cfg, "--quiet"));
  if (r->status != 0) fail_msg("gen --config %s: exit %d: %s", cfg, r->status, r->err);
}

#endif /* PB_E2E_UTIL_H */

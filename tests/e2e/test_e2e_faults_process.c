/* A hostile process environment (issue 32): the outputs and signals of a run under limits and mishaps.
 *
 *   - `ulimit -f` below the trace's size: the write fails (SIGXFSZ ignored), exit 1 naming trace.json,
 *     no NAME.tmp left
 *   - SIGHUP (a closed terminal) stops a run as SIGTERM does: report written, exit 130
 *   - `--json` into a closed pipe: no death by SIGPIPE, exit 1 with one line
 *   - a second SIGINT while a file is being written: exit 130 at once, no NAME.tmp and no lock file left
 *   - a re-run into the same --out with fewer formats: the earlier run's files are gone (a user's stay)
 *   - a second run into an --out that a run is writing: exit 2 naming the holder's pid
 *   - run --repeat and sweep into a plain run's --out: their parent and run directories lock without a
 *     deadlock, and no file of the earlier run is left for `analyze` to take
 *   - a one-epoch dataset smaller than one batch (drop_remainder): nothing measured, exit 1
 *   - the default output directory in a directory that cannot be written: the error names its full path
 *   - a plan whose buffers overflow 64 bits: "more than 2^64 bytes", not a wrapped figure
 * Every child is killed past PB_CHILD_TIMEOUT_S: a hang fails the test instead of blocking the suite. */
#define PB_CHILD_TIMEOUT_S 30
#include "e2e_util.h"

#include <dirent.h>
#include <sys/resource.h>

/* 32 steps of 1 ms, traced: report.json ~8 KB, trace.json ~0.5 MB. */
static const char *k_short =
    "{'name':'faults','dataset':{'format':'synthetic','shape':[32,32,3],'num_samples':100000},"
    "'stages':[{'name':'aug','type':'map','threads':2,'ops':[{'op':'spin','us':5}]},"
    "{'type':'batch','size':16},{'type':'prefetch','depth':2},{'type':'h2d'}],"
    "'device':{'kind':'emulated','step_ms':1},'run':{'steps':%d,'warmup_steps':2}}";

static const char *short_config(const char *name, int steps) { return write_config(name, k_short, steps); }

/* ---------- helpers ---------- */

/* How a child is started beyond spawn_pb's defaults. */
typedef struct child_opts {
  rlim_t fsize_bytes;    /* RLIMIT_FSIZE, 0: unchanged */
  const char *cwd;       /* NULL: the test's */
  int stdout_fd;         /* -1: <tmp>/child.out */
  bool unprivileged;     /* as root: without the capability to write where permissions forbid */
} child_opts;

/* The child's side of fork: limits, directory, stdio, then exec.  The signals this suite is about start
 * at their defaults whatever the test runner set: the fix must not depend on an inherited SIG_IGN. */
static void exec_child(const char *const *argv, const child_opts *o, const char *out, const char *err) {
  if (o->fsize_bytes) {
    struct rlimit rl = {o->fsize_bytes, o->fsize_bytes};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(120);
  }
  if (o->cwd && chdir(o->cwd) != 0) _exit(121);
  signal(SIGPIPE, SIG_DFL);
  signal(SIGXFSZ, SIG_DFL);
  signal(SIGHUP, SIG_DFL);
  int in = open("/dev/null", O_RDONLY), fo = o->stdout_fd >= 0 ? o->stdout_fd : open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || fo < 0 || fe < 0 || dup2(in, 0) < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0) _exit(122);
  execv(argv[0], (char *const *)argv);
  _exit(127);
}

/* Starts pipebench with args; stdout and stderr go to <tmp>/child.out and child.err (see collect). */
static pid_t start_with(const char **args, const child_opts *o, char out[300], char err[300]) {
  static const char *const as_root[] = {"/usr/bin/setpriv", "--bounding-set=-dac_override,-dac_read_search", NULL};
  const char *argv[64];
  pb_argv(argv, 64, o->unprivileged && geteuid() == 0 ? as_root : NULL, args);
  snprintf(out, 300, "%s/child.out", g_tmp);
  snprintf(err, 300, "%s/child.err", g_tmp);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) exec_child(argv, o, out, err);
  return pid;
}

static result *run_with(const char **args, const child_opts *o) {
  static result r;
  char out[300], err[300];
  pid_t pid = start_with(args, o, out, err);
  collect(&r, pid, out, err);
  return &r;
}

static const child_opts k_plain = {.stdout_fd = -1};

/* Names in dir ending with `suffix` (".tmp"), or equal to it, joined by spaces into found (empty: none). */
static void find_names(const char *dir, const char *suffix, char *found, size_t len) {
  found[0] = '\0';
  DIR *d = opendir(dir);
  assert_non_null(d);
  size_t sl = strlen(suffix), used = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t nl = strlen(e->d_name);
    if (nl >= sl && strcmp(e->d_name + nl - sl, suffix) == 0 && used < len)
      used += (size_t)snprintf(found + used, len - used, "%s ", e->d_name);
  }
  closedir(d);
}

static void expect_no_name(const char *dir, const char *suffix) {
  char found[1000];
  find_names(dir, suffix, found, sizeof found);
  if (found[0]) fail_msg("%s holds %s (expected none)", dir, found);
}

static bool exists(const char *dir, const char *name) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  struct stat st;
  return stat(path, &st) == 0;
}

/* Waits until the child has made dir/name (a phase reached), failing if it ends first or after 20 s. */
static void wait_for(pid_t pid, const char *dir, const char *name, const char *err_path) {
  double t0 = now_s();
  while (!exists(dir, name)) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      char err[2000];
      read_text(err_path, err, sizeof err);
      fail_msg("pipebench ended before %s/%s appeared: %s", dir, name, err);
    }
    if (now_s() - t0 > 20) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      fail_msg("%s/%s did not appear within 20 s", dir, name);
    }
    usleep(2000);
  }
}

/* ---------- signals and limits ---------- */

static void test_file_size_limit(void **state) {
  const char *out = out_dir("fsize");
  child_opts o = k_plain;
  o.fsize_bytes = 64 * 1024; /* report.json fits, the trace does not */
  result *r = run_with(ARGS("run", "--config", short_config("fsize", 30), "--quiet", "--out", out), &o);
  assert_one_error_line(r, 1, "trace.json: cannot write the trace: File too large");
  expect_no_name(out, ".tmp");
  load_report(out); /* written first, and whole */
  assert_false(exists(out, "trace.json"));
}

/* A run that would take minutes, signalled after a second of measuring. */
static const char *endless_config(const char *name) { return short_config(name, 1000000); }

static void test_sighup(void **state) {
  const char *out = out_dir("hup");
  char o[300], e[300];
  pid_t pid = start_with(ARGS("run", "--config", endless_config("hup"), "--quiet", "--out", out), &k_plain, o, e);
  wait_for(pid, out, ".", e); /* its directory made: planned, the device open or opening */
  usleep(1000 * 1000);
  assert_int_equal(kill(pid, SIGHUP), 0);
  result r;
  collect(&r, pid, o, e);
  if (r.status != 130) fail_msg("exit %d after SIGHUP, expected 130: %s", r.status, r.err);
  cJSON *rep = load_report(out);
  assert_true(cJSON_IsTrue(at(rep, "interrupted")));
  assert_accounting_balances(rep);
}

static void test_json_into_closed_pipe(void **state) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  close(fds[0]); /* nobody will read: the first write gets EPIPE, or SIGPIPE by default */
  child_opts o = k_plain;
  o.stdout_fd = fds[1];
  result *r = run_with(ARGS("run", "--config", short_config("pipe", 10), "--json", "--out", out_dir("pipe")), &o);
  close(fds[1]);
  assert_one_error_line(r, 1, "stdout: write error: Broken pipe");
}

/* The second signal ends the process from its handler while report.json.tmp is open (held there by
 * PB_DEBUG_HOLD_TMP_MS): it must be removed on the way out, and so must the directory's lock file. */
static void test_double_sigint_leaves_no_tmp(void **state) {
  const char *out = out_dir("double");
  char o[300], e[300];
  setenv("PB_DEBUG_HOLD_TMP_MS", "30000", 1);
  pid_t pid = start_with(ARGS("run", "--config", short_config("double", 10), "--quiet", "--out", out), &k_plain, o, e);
  unsetenv("PB_DEBUG_HOLD_TMP_MS");
  wait_for(pid, out, "report.json.tmp", e);
  assert_int_equal(kill(pid, SIGINT), 0);
  usleep(300 * 1000); /* past PB_SIGNAL_REPEAT_NS: a second signal, not the first delivered twice */
  assert_int_equal(kill(pid, SIGINT), 0);
  result r;
  collect(&r, pid, o, e);
  if (r.status != 130) fail_msg("exit %d, expected 130: %s", r.status, r.err);
  assert_non_null(strstr(r.err, "second signal"));
  expect_no_name(out, ".tmp");
  expect_no_name(out, ".pipebench.lock");
}

/* ---------- the output directory ---------- */

static void test_rerun_with_fewer_formats(void **state) {
  const char *out = out_dir("rerun");
  const char *cfg = short_config("rerun", 10);
  result *r = run_pb(ARGS("run", "--config", cfg, "--quiet", "--out", out, "--format", "json,html,trace,csv"));
  if (r->status != 0) fail_msg("first run: exit %d: %s", r->status, r->err);
  assert_true(exists(out, "trace.json"));
  assert_true(exists(out, "report.html"));
  assert_true(exists(out, "steps.csv"));
  char mine[600];
  snprintf(mine, sizeof mine, "%s/notes.txt", out);
  FILE *f = fopen(mine, "w");
  assert_non_null(f);
  fclose(f);
  r = run_pb(ARGS("run", "--config", cfg, "--quiet", "--out", out, "--format", "json"));
  if (r->status != 0) fail_msg("second run: exit %d: %s", r->status, r->err);
  static const char *gone[] = {"trace.json", "report.html", "stages.csv", "steps.csv"};
  for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
    if (exists(out, gone[i])) fail_msg("%s of the first run is still in %s", gone[i], out);
  assert_true(exists(out, "report.json"));
  assert_true(exists(out, "notes.txt"));
  /* analyze finds no trace of this run, and none of the earlier one to take for it */
  r = run_pb(ARGS("analyze", out, "--quiet"));
  assert_one_error_line(r, 2, "no trace.json");
}

static void write_mine(const char *dir, const char *name) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("mine\n", f);
  fclose(f);
}

/* Only what pipebench wrote goes: a user's own files named as ours (a steps.csv, a report.html), and a
 * directory of theirs named as a sub-run's, stay.  Regression: the names alone decided, and a plain run
 * deleted the user's steps.csv, stages.csv, report.html, sweep.csv, tune.json and synthetic/report.json. */
static void test_users_files_with_our_names_stay(void **state) {
  const char *out = out_dir("users-names");
  char sub[600];
  snprintf(sub, sizeof sub, "%s/synthetic", out);
  assert_int_equal(mkdir(out, 0755), 0);
  assert_int_equal(mkdir(sub, 0755), 0);
  static const char *names[] = {"steps.csv", "stages.csv", "report.html", "sweep.csv", "tune.json", "trace.json"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) write_mine(out, names[i]);
  write_mine(sub, "report.json");
  const char *cfg = short_config("users-names", 10);
  result *r = run_pb(ARGS("run", "--config", cfg, "--quiet", "--out", out, "--format", "json"));
  if (r->status != 0) fail_msg("run: exit %d: %s", r->status, r->err);
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!exists(out, names[i])) fail_msg("the user's %s was removed from %s", names[i], out);
  assert_true(exists(out, "synthetic/report.json"));
  assert_true(exists(out, "report.json"));
  /* and what this run wrote is what the next run removes: report.json, not the user's files */
  r = run_pb(ARGS("run", "--config", cfg, "--quiet", "--out", out, "--format", "csv"));
  if (r->status != 0) fail_msg("second run: exit %d: %s", r->status, r->err);
  assert_false(exists(out, "report.json"));
  assert_true(exists(out, "tune.json"));
  assert_true(exists(out, "synthetic/report.json"));
}

/* Reads a pid from dir/.pipebench.lock once the holder has written it. */
static long lock_holder(pid_t pid, const char *dir, const char *err_path) {
  char path[600], text[64];
  snprintf(path, sizeof path, "%s/.pipebench.lock", dir);
  double t0 = now_s();
  for (;;) {
    wait_for(pid, dir, ".pipebench.lock", err_path);
    read_text(path, text, sizeof text);
    if (atol(text) > 0) return atol(text);
    if (now_s() - t0 > 20) fail_msg("%s holds no pid", path);
    usleep(2000);
  }
}

static void test_locked_out_dir(void **state) {
  const char *out = out_dir("locked");
  char o[300], e[300], want[64];
  pid_t pid = start_with(ARGS("run", "--config", endless_config("locked"), "--quiet", "--out", out), &k_plain, o, e);
  assert_int_equal(lock_holder(pid, out, e), pid);
  result *r = run_pb(ARGS("run", "--config", short_config("second", 10), "--quiet", "--out", out));
  snprintf(want, sizeof want, "in use by another run (pid %d)", (int)pid);
  assert_one_error_line(r, 2, want);
  assert_int_equal(kill(pid, SIGINT), 0);
  result first;
  collect(&first, pid, o, e);
  if (first.status != 130) fail_msg("the first run: exit %d, expected 130: %s", first.status, first.err);
  /* let go at its end: the next run takes the directory */
  r = run_pb(ARGS("run", "--config", short_config("third", 10), "--quiet", "--out", out));
  if (r->status != 0) fail_msg("a run after the holder ended: exit %d: %s", r->status, r->err);
  expect_no_name(out, ".pipebench.lock");
}

/* The multi-run commands lock their directory and each run's below it (no deadlock), and clear what a
 * plain run left there first: its trace.json would otherwise be what `analyze DIR` takes. */
static void test_multirun_into_a_runs_dir(void **state) {
  const char *out = out_dir("multi");
  const char *cfg = short_config("multi", 10);
  result *r = run_pb(ARGS("run", "--config", cfg, "--quiet", "--out", out, "--format", "json,trace,csv"));
  if (r->status != 0) fail_msg("run: exit %d: %s", r->status, r->err);
  r = run_pb(ARGS("run", "--config", cfg, "--quiet", "--out", out, "--repeat", "2", "--format", "json"));
  if (r->status != 0) fail_msg("run --repeat 2: exit %d: %s", r->status, r->err);
  assert_false(exists(out, "trace.json"));
  assert_false(exists(out, "steps.csv"));
  assert_true(exists(out, "repeat-1/report.json"));
  assert_true(exists(out, "repeat-2/report.json"));
  r = run_pb(ARGS("sweep", "--config", cfg, "--quiet", "--out", out, "--format", "json", "--set",
                  "stages.batch.size=8,16"));
  if (r->status != 0) fail_msg("sweep: exit %d: %s", r->status, r->err);
  assert_false(exists(out, "repeat-1"));
  assert_false(exists(out, "report.json"));
  assert_true(exists(out, "sweep.json"));
  assert_true(exists(out, "trial-001/report.json"));
  assert_true(exists(out, "trial-002/report.json"));
  expect_no_name(out, ".pipebench.lock");
}

/* ---------- nothing measured, and the messages ---------- */

static void test_smaller_than_one_batch(void **state) {
  const char *cfg = write_config("tiny", "{'name':'tiny','dataset':{'format':'synthetic','shape':[8],'num_samples':5},"
                                         "'stages':[{'type':'batch','size':16},{'type':'prefetch','depth':2}],"
                                         "'device':{'kind':'emulated','step_ms':1},'run':{'epochs':1}}");
  cJSON *rep = run_report_failing(cfg, "tiny", NULL, "nothing was measured", NULL);
  assert_int_equal(num(rep, "steps.count"), 0);
  expect_count(rep, "samples_dropped", 5);
}

static void test_default_out_dir_unwritable(void **state) {
  const char *ro = tmp_path("read-only-cwd");
  assert_int_equal(mkdir(ro, 0555), 0);
  child_opts o = k_plain;
  o.cwd = ro;
  o.unprivileged = true;
  result *r = run_with(ARGS("run", "--config", short_config("cwd", 10), "--quiet"), &o);
  char want[600];
  snprintf(want, sizeof want, "pipebench: %s/pipebench-out: cannot create the output directory", ro);
  assert_one_error_line(r, 1, want);
}

static void test_memory_overflow_figure(void **state) {
  const char *cfg = write_config("huge", "{'name':'huge','dataset':{'format':'synthetic','shape':[100000000,100000000,"
                                         "100000000],'num_samples':10},'stages':[{'type':'batch','size':16}],"
                                         "'device':{'kind':'emulated','step_ms':1},'run':{'steps':3}}");
  result *r = run_pb(ARGS("run", "--config", cfg, "--quiet", "--out", out_dir("huge")));
  assert_one_error_line(r, 2, "may buffer more than 2^64 bytes");
  assert_null(strstr(r->err, "18446744073710"));
}

static int make_tmp(void **state) { return e2e_make_tmp("pipebench-e2e-faults-process"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_file_size_limit, free_reports),
      cmocka_unit_test_teardown(test_sighup, free_reports),
      cmocka_unit_test_teardown(test_json_into_closed_pipe, free_reports),
      cmocka_unit_test_teardown(test_double_sigint_leaves_no_tmp, free_reports),
      cmocka_unit_test_teardown(test_rerun_with_fewer_formats, free_reports),
      cmocka_unit_test_teardown(test_users_files_with_our_names_stay, free_reports),
      cmocka_unit_test_teardown(test_locked_out_dir, free_reports),
      cmocka_unit_test_teardown(test_multirun_into_a_runs_dir, free_reports),
      cmocka_unit_test_teardown(test_smaller_than_one_batch, free_reports),
      cmocka_unit_test_teardown(test_default_out_dir_unwritable, free_reports),
      cmocka_unit_test_teardown(test_memory_overflow_figure, free_reports),
  };
  return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}

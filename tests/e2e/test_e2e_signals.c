/* SIGINT and SIGTERM at every phase (issue 9): generating a dataset (gen, and the dataset a run generates
 * before it starts), warm-up, measuring and writing the report.  Each ends within a second with exit 130;
 * a run that started writes report.json marked interrupted, with balanced accounting; a second signal ends
 * the process at once.
 *
 * "Within a second" is measured from the kill to the exit seen by waitpid (polled every 2 ms).  Sanitizer
 * builds run several times slower: tests/run.sh widens the budget with PB_E2E_SIGNAL_BUDGET_S. */
#include "e2e_util.h"

static double budget_s(void) {
  const char *v = getenv("PB_E2E_SIGNAL_BUDGET_S");
  return v && atof(v) > 0 ? atof(v) : 1.0;
}

typedef struct child {
  pid_t pid;
  char out[300], err[300];
} child;

static void start(child *c, const char **args) {
  snprintf(c->out, sizeof c->out, "%s/child.out", g_tmp);
  snprintf(c->err, sizeof c->err, "%s/child.err", g_tmp);
  c->pid = spawn_pb(args, c->out, c->err);
}

/* The child is still running (it must not have ended before the signal). */
static bool running(const child *c) {
  int st;
  if (waitpid(c->pid, &st, WNOHANG) == 0) return true;
  char err[2000];
  read_text(c->err, err, sizeof err);
  fail_msg("pipebench ended before the signal: exit %d: %s", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), err);
  return false;
}

/* Sends sig, waits for the exit; the result says how long it took (r->wall_s). */
static result *signal_and_wait(child *c, int sig) {
  static result r;
  assert_true(running(c));
  assert_int_equal(kill(c->pid, sig), 0);
  collect(&r, c->pid, c->out, c->err);
  return &r;
}

static void expect_quick_130(const result *r, const char *phase) {
  if (r->status != 130) fail_msg("%s: exit %d, expected 130: %s", phase, r->status, r->err);
  print_message("%s: ended %.3f s after the signal\n", phase, r->wall_s);
  if (r->wall_s > budget_s()) fail_msg("%s: ended %.3f s after the signal (budget %.1f s)", phase, r->wall_s, budget_s());
}

/* Waits until `path` exists (the child reached a phase), failing after timeout_s. */
static void wait_for_file(const child *c, const char *path, double timeout_s) {
  double t0 = now_s();
  struct stat st;
  while (stat(path, &st) != 0) {
    assert_true(running(c));
    if (now_s() - t0 > timeout_s) fail_msg("%s did not appear within %.0f s", path, timeout_s);
    usleep(2000);
  }
}

/* ---------- generating ---------- */

/* A dataset that takes several seconds to write: 4000 500x375 JPEGs. */
static const char *big_gen_config(const char *name) {
  return write_config(name,
                      "{'name':'%s','dataset':{'path':'%s/data-%s','format':'jpeg',"
                      "  'generate':{'num_files':4000,'image':{'width':500,'height':375,'quality':90}}},"
                      "'stages':[{'type':'read'},{'type':'decode'},{'type':'batch','size':4}],"
                      "'device':{'kind':'emulated','step_ms':1},'run':{'steps':5,'warmup_steps':0}}",
                      name, g_tmp, name);
}

/* Until big_gen_config(name)'s first image is written: gen is under way, whatever the machine's speed. */
static void wait_for_first_image(const child *c, const char *name) {
  char first[400];
  snprintf(first, sizeof first, "%s/data-%s/img-00000000.jpg", g_tmp, name);
  wait_for_file(c, first, 30);
}

static void expect_incomplete_dataset(const char *name) {
  char path[400];
  snprintf(path, sizeof path, "%s/data-%s/.pipebench-dataset.json", g_tmp, name);
  cJSON *m = load_json(path);
  assert_true(cJSON_IsFalse(at(m, "complete")));
}

static void test_gen(void **state) {
  child c;
  start(&c, ARGS("gen", "--config", big_gen_config("gen"), "--quiet"));
  wait_for_first_image(&c, "gen");
  result *r = signal_and_wait(&c, SIGINT);
  expect_quick_130(r, "gen");
  assert_one_error_line(r, 130, "interrupted after");
  expect_incomplete_dataset("gen");
}

/* `run` on a missing dataset generates it first: a SIGTERM then stops the generation; there is no run to
 * report on (no report.json), the dataset stays marked incomplete. */
static void test_run_generating_first(void **state) {
  child c;
  const char *out = out_dir("gen-first");
  start(&c, ARGS("run", "--config", big_gen_config("genfirst"), "--quiet", "--out", out));
  wait_for_first_image(&c, "genfirst");
  result *r = signal_and_wait(&c, SIGTERM);
  expect_quick_130(r, "run, generating its dataset");
  assert_non_null(strstr(r->err, "interrupted after"));
  expect_incomplete_dataset("genfirst");
}

/* ---------- warm-up and measuring ---------- */

static const char *k_steady =
    "{'name':'steady','dataset':{'format':'synthetic','shape':[32,32,3],'num_samples':100000},"
    "'stages':[{'name':'aug','type':'map','threads':2,'ops':[{'op':'spin','us':5}]},"
    "{'type':'batch','size':16},{'type':'prefetch','depth':2},{'type':'h2d'}],"
    "'device':{'kind':'emulated','step_ms':5},'run':{'steps':100000,'warmup_steps':%d}}";

static cJSON *interrupted_report(const char *out) {
  cJSON *rep = load_report(out);
  assert_true(cJSON_IsTrue(at(rep, "interrupted")));
  assert_accounting_balances(rep);
  return rep;
}

static void test_warmup(void **state) {
  child c;
  const char *out = out_dir("warmup");
  start(&c, ARGS("run", "--config", write_config("warmup", k_steady, 100000), "--quiet", "--out", out));
  usleep(800 * 1000);
  expect_quick_130(signal_and_wait(&c, SIGINT), "warm-up");
  cJSON *rep = interrupted_report(out);
  assert_int_equal(num(rep, "steps.count"), 0); /* nothing measured yet */
  /* warmup_steps counts the warm-up steps that ran (and were excluded), not the configured 100000 */
  double warm = num(rep, "warmup_steps");
  if (!(warm > 0 && warm < 100000)) fail_msg("warmup_steps %.0f after 0.8 s of 5 ms steps", warm);
}

static void measuring(int sig, const char *name) {
  child c;
  const char *out = out_dir(name);
  start(&c, ARGS("run", "--config", write_config(name, k_steady, 2), "--quiet", "--out", out));
  usleep(1200 * 1000);
  expect_quick_130(signal_and_wait(&c, sig), name);
  cJSON *rep = interrupted_report(out);
  assert_true(num(rep, "steps.count") > 0);
  char trace[400];
  snprintf(trace, sizeof trace, "%s/trace.json", out); /* a short run's outputs are all written */
  load_json(trace);
}

static void test_measuring_sigint(void **state) { measuring(SIGINT, "measuring-int"); }

/* An emulated step of 30 s must not hold the signal up for its length: the step in progress is cut short,
 * its batch counted in flight, and the partial report written within the budget. */
static void test_long_step(void **state) {
  child c;
  const char *out = out_dir("longstep");
  start(&c, ARGS("run", "--config", write_config("longstep", k_steady, 0), "--quiet", "--out", out, "--set",
                 "device.step_ms=30000"));
  usleep(1500 * 1000);
  expect_quick_130(signal_and_wait(&c, SIGTERM), "long step");
  interrupted_report(out);
}

/* A map op of seconds (sleep or spin, up to 10 s each) does not hold a signal up either: it runs in
 * slices and ends at one, its sample in flight. */
static void test_long_map_ops(void **state) {
  static const char *ops[] = {"sleep", "spin"};
  for (int i = 0; i < 2; i++) {
    child c;
    char name[32], set[64];
    snprintf(name, sizeof name, "longop-%s", ops[i]);
    snprintf(set, sizeof set, "stages.aug.ops=[{\"op\":\"%s\",\"us\":8000000}]", ops[i]);
    const char *out = out_dir(name);
    start(&c, ARGS("run", "--config", write_config(name, k_steady, 0), "--quiet", "--out", out, "--set", set));
    usleep(700 * 1000);
    expect_quick_130(signal_and_wait(&c, SIGTERM), ops[i]);
    interrupted_report(out);
  }
}

/* `timeout -s INT` sends the signal to the process and then to its process group: two deliveries a few
 * microseconds apart are one event, and the partial report must still be written. */
static void test_double_delivery(void **state) {
  child c;
  const char *out = out_dir("double");
  start(&c, ARGS("run", "--config", write_config("double", k_steady, 2), "--quiet", "--out", out));
  usleep(1200 * 1000);
  assert_true(running(&c));
  assert_int_equal(kill(c.pid, SIGINT), 0);
  result *r = signal_and_wait(&c, SIGINT);
  expect_quick_130(r, "double delivery");
  assert_null(strstr(r->err, "second signal"));
  cJSON *rep = interrupted_report(out);
  assert_true(num(rep, "steps.count") > 0);
}
static void test_measuring_sigterm(void **state) { measuring(SIGTERM, "measuring-term"); }

/* ---------- writing the report ---------- */

/* A traced run as fast as it goes (a long trace to write); PB_DEBUG_HOLD_OUTPUTS_MS holds the writer after
 * report.json so that the signal lands in the writing phase every time.  Returns once report.json exists. */
static void start_writer(child *c, const char *name, int hold_ms) {
  char hold[32];
  snprintf(hold, sizeof hold, "%d", hold_ms);
  setenv("PB_DEBUG_HOLD_OUTPUTS_MS", hold, 1);
  start(c, ARGS("run", "--config",
                write_config(name,
                             "{'name':'%s','dataset':{'format':'synthetic','shape':[8],'num_samples':1000000},"
                             "'stages':[{'type':'batch','size':1},{'type':'prefetch','depth':2}],"
                             "'device':{'kind':'emulated','step_ms':0},'run':{'duration_s':2,'warmup_steps':0}}",
                             name),
                "--quiet", "--out", out_dir(name)));
  unsetenv("PB_DEBUG_HOLD_OUTPUTS_MS");
  char report[400];
  snprintf(report, sizeof report, "%s/report.json", out_dir(name));
  wait_for_file(c, report, 30);
}

static void test_report_writing(void **state) {
  child c;
  start_writer(&c, "writing", 300);
  result *r = signal_and_wait(&c, SIGINT);
  expect_quick_130(r, "report writing");
  /* the run was over: its report stands as measured (not marked interrupted), only the exit says 130 */
  cJSON *rep = load_report(out_dir("writing"));
  assert_accounting_balances(rep);
  assert_true(num(rep, "steps.count") > 0);
}

/* The first signal is being handled (here: a writer stuck for 30 s); the second, 300 ms later (past
 * PB_SIGNAL_REPEAT_NS), ends the process at once and says so. */
static void test_second_signal_is_immediate(void **state) {
  child c;
  start_writer(&c, "second", 30000);
  assert_int_equal(kill(c.pid, SIGINT), 0);
  usleep(300 * 1000);
  assert_true(running(&c)); /* the first signal alone waits for the writer */
  result *r = signal_and_wait(&c, SIGINT);
  if (r->status != 130) fail_msg("exit %d, expected 130", r->status);
  print_message("second signal: ended %.3f s after it\n", r->wall_s);
  assert_non_null(strstr(r->err, "second signal"));
  assert_true(r->wall_s < budget_s() / 2);
}

static int make_tmp(void **state) { return e2e_make_tmp("pipebench-e2e-signals"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_gen, free_reports),
      cmocka_unit_test_teardown(test_run_generating_first, free_reports),
      cmocka_unit_test_teardown(test_warmup, free_reports),
      cmocka_unit_test_teardown(test_measuring_sigint, free_reports),
      cmocka_unit_test_teardown(test_measuring_sigterm, free_reports),
      cmocka_unit_test_teardown(test_double_delivery, free_reports),
      cmocka_unit_test_teardown(test_long_step, free_reports),
      cmocka_unit_test_teardown(test_long_map_ops, free_reports),
      cmocka_unit_test_teardown(test_report_writing, free_reports),
      cmocka_unit_test_teardown(test_second_signal_is_immediate, free_reports),
  };
  return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}

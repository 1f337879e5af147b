/* End-to-end tests of multi-process runs (issue 8, src/ranks.h): `mpirun -np 2 pipebench run` on one
 * machine (oversubscribed; --allow-run-as-root for CI containers).
 *
 *   - the two ranks' shards are disjoint and cover the dataset: each rank lists half the files, their bytes
 *     add up to the dataset's (JPEGs of varied sizes: an overlap would change the sum), and the job's
 *     accounting, summed over the ranks, reads every file exactly once per epoch;
 *   - rank 0 writes the job's report (ranks[], most_input_bound_rank, summed throughput), every rank its own;
 *   - a rank that fails (a corrupt JPEG in rank 1's shard, run.on_error fail) fails the job with its error,
 *     and the job does not hang.
 * Built without MPI (no PB_MPIEXEC), the tests are skipped. */
#include <dirent.h>

#include "e2e_util.h"

#define NFILES 64

static const char *config(const char *name, const char *data) {
  return write_config(name,
                      "{'name':'%s','seed':5,'dataset':{'path':'%s','format':'jpeg',"
                      "  'generate':{'num_files':%d,'samples_per_file':1,'image':{'width':96,'height':72}}},"
                      "'stages':[{'name':'read','type':'read','threads':1},{'name':'decode','type':'decode','threads':1},"
                      "  {'name':'batch','type':'batch','size':8,'drop_remainder':false},"
                      "  {'name':'prefetch','type':'prefetch','depth':2},{'name':'h2d','type':'h2d'}],"
                      "'device':{'kind':'emulated','step_ms':2},'run':{'epochs':2,'warmup_steps':1}}",
                      name, tmp_path(data), NFILES);
}

#ifdef PB_MPIEXEC
/* mpirun -np 2 ... pipebench ARGS: as run_pb, with mpirun in front. */
static result *run_mpi(const char **args) {
  /* one host: shared memory between the ranks (OpenMPI's TCP transport also takes two of its own locks in
   * both orders, which TSan reports from inside libmpi) */
  static const char *const mpirun[] = {PB_MPIEXEC, "--allow-run-as-root", "--oversubscribe", "--mca", "btl",
                                       "self,vader", "-np", "2", NULL};
  const char *argv[64];
  pb_argv(argv, 64, mpirun, args);
  /* OpenMPI's own allocations are not ours to report (LeakSanitizer in the ASan build) */
  setenv("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1", 1);
  return run_argv(argv, 120, "under mpirun");
}

/* Bytes of the dataset's files (the JPEGs, not gen's hidden manifest). */
static double dataset_bytes(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  double sum = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) sum += (double)st.st_size;
  }
  closedir(d);
  return sum;
}

static void test_shards_cover_the_dataset_once(void **state) {
  const char *cfg = config("shards", "shards-data");
  gen_ok(cfg);
  const char *dir = out_dir("shards");
  result *r = run_mpi(ARGS("--config", cfg, "--out", dir, "--quiet"));
  if (r->status != 0) fail_msg("mpirun: exit %d: %s", r->status, r->err);
  cJSON *job = load_report(dir);
  assert_int_equal((int)num(job, "world_size"), 2);
  cJSON *ranks = at(job, "ranks");
  assert_int_equal(cJSON_GetArraySize(ranks), 2);
  double shard_bytes = 0, sum_sps = 0;
  for (int i = 0; i < 2; i++) {
    cJSON *rk = cJSON_GetArrayItem(ranks, i);
    assert_int_equal((int)num(rk, "rank"), i);
    assert_int_equal((int)num(rk, "status"), 0);
    assert_int_equal((int)num(rk, "shard.files"), NFILES / 2);
    shard_bytes += num(rk, "shard.bytes");
    sum_sps += num(rk, "samples_per_s");
    /* each rank read its half once per epoch, and its own report says so too */
    assert_int_equal((int)num(rk, "accounting.files_read"), NFILES); /* 2 epochs x 32 */
    char rdir[600];
    snprintf(rdir, sizeof rdir, "%s/rank-%d", dir, i);
    cJSON *own = load_report(rdir);
    assert_int_equal((int)num(own, "accounting.samples_read"), NFILES);
    assert_accounting_balances(own);
  }
  assert_float_equal(shard_bytes, dataset_bytes(tmp_path("shards-data")), 0);
  /* the job: every file exactly once per epoch, summed over the ranks */
  expect_count(job, "files_read", 2 * NFILES);
  expect_count(job, "samples_read", 2 * NFILES);
  expect_count(job, "samples_consumed", 2 * NFILES);
  assert_accounting_balances(job);
  assert_float_equal(num(job, "throughput.samples_per_s"), sum_sps, 0.11);
  double mib = num(job, "most_input_bound_rank");
  assert_true(mib == 0 || mib == 1);
  assert_float_equal(num(job, "figures_from_rank"), mib, 0);
  assert_true(num(job, "rank_skew.max_over_min") >= 1.0);
}

static void test_a_failing_rank_fails_the_job(void **state) {
  const char *cfg = config("fail", "fail-data");
  gen_ok(cfg);
  /* files are dealt round-robin in name order: the second one is rank 1's */
  char bad[600];
  snprintf(bad, sizeof bad, "%s/img-00000001.jpg", tmp_path("fail-data"));
  FILE *f = fopen(bad, "w");
  assert_non_null(f);
  fputs("not a jpeg", f);
  fclose(f);
  const char *dir = out_dir("fail");
  result *r = run_mpi(ARGS("--config", cfg, "--out", dir, "--quiet", "--set", "run.on_error=fail"));
  assert_int_equal(r->status, 1);
  assert_true(r->wall_s < 60);
  if (!strstr(r->err, "img-00000001.jpg: not a JPEG")) fail_msg("the failing rank's error is missing: %s", r->err);
  assert_non_null(strstr(r->err, "rank 1 ended with exit 1"));
  cJSON *job = load_report(dir);
  assert_int_equal((int)num(cJSON_GetArrayItem(at(job, "ranks"), 0), "status"), 0);
  assert_int_equal((int)num(cJSON_GetArrayItem(at(job, "ranks"), 1), "status"), 1);
}

/* Commands other than run refuse mpirun with one line each, at once. */
static void test_only_run_under_mpirun(void **state) {
  const char *cfg = config("only-run", "shards-data");
  result *r = run_mpi(ARGS("sweep", "--config", cfg, "--set", "stages.read.threads=1,2"));
  assert_int_equal(r->status, 2);
  assert_non_null(strstr(r->err, "sweep: runs in one process"));
}
#else
static void test_shards_cover_the_dataset_once(void **state) { skip(); }
static void test_a_failing_rank_fails_the_job(void **state) { skip(); }
static void test_only_run_under_mpirun(void **state) { skip(); }
#endif

static int setup(void **state) { return e2e_make_tmp("pb-e2e-mpi"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_shards_cover_the_dataset_once, free_reports),
      cmocka_unit_test_teardown(test_a_failing_rank_fails_the_job, free_reports),
      cmocka_unit_test_teardown(test_only_run_under_mpirun, free_reports),
  };
  return cmocka_run_group_tests(tests, setup, remove_tmp);
}

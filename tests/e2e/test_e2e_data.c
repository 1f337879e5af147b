/* End-to-end tests of the real-data path (docs/CONTRACT.md §1-§3): `pipebench gen` writes small datasets into a
 * temporary directory, and runs read them back (jpeg, tfrecord, npy, npz, raw), with corrupt files mixed
 * in, the error policies (run.on_error, run.max_errors), O_DIRECT and the read stage's emulation caps.
 * The runs check their exit status, exact counts in report.json's accounting, and that the accounting
 * balances.  Every child is killed after PB_CHILD_TIMEOUT_S seconds (a hang fails the test, it never
 * blocks the suite).  Set PB_E2E_KEEP=1 to keep the temporary directory.
 *
 * Tests marked "Regression" guard bugs these tests found (their comment says what used to happen). */
#include <dirent.h>

#include "e2e_util.h"

/* Bytes of one sample entering `batch`.  The batch stage is called once per sample and counts calls and
 * bytes_in together, so their ratio is exact.  Should no batch call fall in the measured window, the
 * device side gives the same figure: bytes per second over samples per second of the measured steps. */
static double batch_sample_bytes(cJSON *rep) {
  cJSON *b = stage(rep, "batch");
  double calls = num(b, "calls");
  if (calls > 0) return num(b, "bytes_in") / calls;
  double sps = num(rep, "throughput.samples_per_s"), bps = num(rep, "throughput.bytes_per_s");
  if (sps <= 0) fail_msg("no batch calls and no measured samples: cannot tell the sample size");
  return (double)(long long)(bps / sps + 0.5);
}

/* Regular, non-hidden files in dir whose name ends with suffix ("" counts all). */
static int count_files(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  size_t sl = strlen(suffix);
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (e->d_name[0] == '.' || l < sl || strcmp(e->d_name + l - sl, suffix)) continue;
    n++;
  }
  closedir(d);
  return n;
}

/* Names, sizes and modification times of everything in dir, sorted: equal snapshots = untouched. */
static void dir_snapshot(const char *dir, char *buf, size_t len) {
  struct dirent **names;
  int n = scandir(dir, &names, NULL, alphasort);
  assert_true(n >= 0);
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n; i++) {
    char path[600];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    if (stat(path, &st) == 0 && used < len)
      used += (size_t)snprintf(buf + used, len - used, "%s %lld %lld.%09ld\n", names[i]->d_name,
                               (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    free(names[i]);
  }
  free(names);
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void write_bytes(const char *path, const void *data, size_t n, bool append) {
  FILE *f = fopen(path, append ? "ab" : "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
}

static size_t slurp(const char *path, uint8_t **data) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  *data = malloc((size_t)n + 1);
  assert_non_null(*data);
  assert_int_equal(fread(*data, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  return (size_t)n;
}

/* ---------- configs ---------- */

/* JPEG: 10 images 64x48; read(2) -> decode(2) -> augment -> batch 4 -> prefetch -> h2d, 2 epochs. */
static const char *jpeg_config(const char *name, const char *data_dir) {
  return write_config(
      name,
      "{'name':'%s','seed':7,"
      "'dataset':{'path':'%s','format':'jpeg',"
      "  'generate':{'num_files':10,'samples_per_file':1,'image':{'width':64,'height':48,'quality':90}}},"
      "'stages':[{'type':'read','threads':2},{'type':'decode','threads':2},"
      "  {'name':'augment','type':'map','ops':[{'op':'random_resized_crop','size':32},{'op':'flip','p':0.5},"
      "    {'op':'normalize','dtype':'float32'},{'op':'to_chw'}]},"
      "  {'type':'batch','size':4,'drop_remainder':true},{'type':'prefetch','depth':2},{'type':'h2d'}],"
      "'device':{'kind':'emulated','step_ms':1},'run':{'epochs':2,'warmup_steps':0}}",
      name, data_dir);
}

/* A multi-sample format read without decode: read -> batch -> h2d.  `dataset` is the inside of the
 * dataset object after path. */
static const char *plain_config(const char *name, const char *data_dir, const char *dataset, const char *read,
                                int batch, int epochs) {
  return write_config(name,
                      "{'name':'%s','seed':7,'dataset':{'path':'%s',%s},"
                      "'stages':[{'type':'read'%s},{'type':'batch','size':%d,'drop_remainder':true},"
                      "  {'type':'h2d'}],"
                      "'device':{'kind':'emulated','step_ms':0.2},'run':{'epochs':%d,'warmup_steps':0}}",
                      name, data_dir, dataset, read, batch, epochs);
}

/* ---------- 1. jpeg ---------- */

static void test_jpeg_two_epochs(void **state) {
  const char *data = tmp_path("jpeg-data");
  const char *cfg = jpeg_config("jpeg", data);
  gen_ok(cfg);
  assert_int_equal(count_files(data, ".jpg"), 10);
  cJSON *rep = run_report(cfg, "jpeg", NULL);
  assert_string_equal(str(rep, "data"), "real");
  expect_count(rep, "files_read", 20);
  expect_count(rep, "samples_read", 20);
  expect_count(rep, "samples_decoded", 20);
  expect_count(rep, "samples_batched", 20);
  expect_count(rep, "samples_consumed", 20);
  expect_count(rep, "samples_dropped", 0); /* 20 = 5 x 4 */
  expect_count(rep, "errors", 0);
  expect_count(rep, "samples_in_flight", 0);
  assert_int_equal(cJSON_GetArraySize(at(rep, "accounting.first_errors")), 0);
  assert_int_equal(num(rep, "steps.count"), 5);
  assert_true(cJSON_IsFalse(at(rep, "interrupted")));
  assert_int_equal(batch_sample_bytes(rep), 32 * 32 * 3 * 4); /* [3,32,32] float32 */
  assert_accounting_balances(rep);
}

/* decode's fused_crop: the decode draws the crop the augment stage would and decodes only that region (under
 * scale "auto" at the crop's own DCT scale); the augment's own draw must find exactly that crop (a mismatch is a
 * sample error), over 40 images at
 * 200x150 and 3 epochs, 2 decode and 2 augment threads.  Pixel equality is tests/unit/test_jpeg.c's. */
static void test_fused_crop(void **state) {
  const char *data = tmp_path("fused-data");
  const char *cfg = write_config(
      "fused",
      "{'name':'fused','seed':7,"
      "'dataset':{'path':'%s','format':'jpeg',"
      "  'generate':{'num_files':40,'samples_per_file':1,'image':{'width':200,'height':150,'quality':90}}},"
      "'stages':[{'type':'read'},{'type':'decode','threads':2,'fused_crop':true},{'type':'shuffle','buffer':8},"
      "  {'name':'augment','type':'map','threads':2,'ops':[{'op':'random_resized_crop','size':32},"
      "    {'op':'flip','p':0.5},{'op':'normalize','dtype':'float32'},{'op':'to_chw'}]},"
      "  {'type':'batch','size':4,'drop_remainder':true},{'type':'h2d'}],"
      "'device':{'kind':'emulated','step_ms':0.2},'run':{'epochs':3,'warmup_steps':0}}",
      data);
  gen_ok(cfg);
  cJSON *rep = run_report(cfg, "fused", NULL);
  expect_count(rep, "samples_decoded", 120);
  expect_count(rep, "samples_consumed", 120);
  expect_count(rep, "errors", 0);
  assert_int_equal(batch_sample_bytes(rep), 32 * 32 * 3 * 4);
  assert_accounting_balances(rep);
  /* the decoded crops are smaller than the whole images (random_resized_crop keeps 8-100 % of the area) */
  assert_true(num(stage(rep, "decode"), "bytes_out") < 120.0 * 200 * 150 * 3);
  /* scale "auto" (the default) decodes each crop at its own DCT scale; "1" is the exact path: both find
   * their crops (no sample error), and the exact one decodes more pixels */
  const char *exact[] = {"--set", "stages.decode.scale=1", NULL};
  cJSON *rep_exact = run_report(cfg, "fused-exact", exact);
  expect_count(rep_exact, "samples_consumed", 120);
  expect_count(rep_exact, "errors", 0);
  assert_accounting_balances(rep_exact);
  assert_true(num(stage(rep, "decode"), "bytes_out") < num(stage(rep_exact, "decode"), "bytes_out"));
  /* Pillow's antialiased filter on the pre-cut crops: the same accounting */
  const char *aa[] = {"--set", "stages.augment.ops[0].antialias=true", NULL};
  cJSON *rep_aa = run_report(cfg, "fused-aa", aa);
  expect_count(rep_aa, "samples_consumed", 120);
  expect_count(rep_aa, "errors", 0);
  assert_int_equal(batch_sample_bytes(rep_aa), 32 * 32 * 3 * 4);
  assert_accounting_balances(rep_aa);
  /* refused without a crop right after, or with a cache in between */
  result *r = run_pb(ARGS("validate", "--config", cfg, "--set", "stages.augment.ops[0].op=center_crop"));
  assert_one_error_line(r, 2, "fused_crop");
  const char *cached = write_config(
      "fused-cache",
      "{'name':'fused','dataset':{'path':'%s','format':'jpeg'},"
      "'stages':[{'type':'read'},{'type':'decode','fused_crop':true},{'type':'cache'},"
      "  {'type':'map','ops':[{'op':'random_resized_crop','size':32}]},{'type':'batch','size':4}]}",
      data);
  r = run_pb(ARGS("validate", "--config", cached));
  assert_one_error_line(r, 2, "cache");
}

/* ---------- 2. gen: idempotent, refuses to overwrite, --force ---------- */

static void test_gen_idempotent_and_refuses_other_data(void **state) {
  const char *data = tmp_path("idem-data");
  const char *cfg = jpeg_config("idem", data);
  result *r = run_pb(ARGS("gen", "--config", cfg));
  if (r->status != 0) fail_msg("gen: exit %d: %s", r->status, r->err);
  assert_int_equal(count_files(data, ".jpg"), 10);
  static char before[1 << 14], after[1 << 14];
  dir_snapshot(data, before, sizeof before);

  r = run_pb(ARGS("gen", "--config", cfg)); /* same settings: nothing to do */
  if (r->status != 0) fail_msg("second gen: exit %d: %s", r->status, r->err);
  if (!strstr(r->err, "up to date")) fail_msg("second gen does not say up to date: %s", r->err);
  dir_snapshot(data, after, sizeof after);
  assert_string_equal(before, after);

  /* other settings over an existing dataset: exit 2, one line naming dataset.path, files untouched */
  r = run_pb(ARGS("gen", "--config", cfg, "--set", "dataset.generate.num_files=6"));
  assert_one_error_line(r, 2, "dataset.path");
  assert_non_null(strstr(r->err, "--force"));
  dir_snapshot(data, after, sizeof after);
  assert_string_equal(before, after);

  /* a directory holding files pipebench did not write is refused too */
  const char *foreign = tmp_path("idem-foreign");
  assert_int_equal(mkdir(foreign, 0777), 0);
  char note[500];
  snprintf(note, sizeof note, "%s/notes.txt", foreign);
  write_bytes(note, "mine\n", 5, false);
  char set[500];
  snprintf(set, sizeof set, "dataset.path=%s", foreign);
  r = run_pb(ARGS("gen", "--config", cfg, "--set", set));
  assert_one_error_line(r, 2, "dataset.path");
  assert_int_equal(count_files(foreign, ""), 1);
}

static void test_gen_force_rewrites(void **state) {
  const char *data = tmp_path("force-data");
  const char *cfg = jpeg_config("force", data);
  gen_ok(cfg);
  assert_int_equal(count_files(data, ".jpg"), 10);
  result *r = run_pb(ARGS("gen", "--config", cfg, "--set", "dataset.generate.num_files=12", "--force"));
  if (r->status != 0) fail_msg("gen --force: exit %d: %s", r->status, r->err);
  assert_int_equal(count_files(data, ".jpg"), 12);
  cJSON *rep = run_report(cfg, "force", ARGS("--set", "dataset.generate.num_files=12", "--set", "run.epochs=1"));
  expect_count(rep, "files_read", 12);
  expect_count(rep, "samples_read", 12);
  assert_accounting_balances(rep);
}

/* Regression: gen --force with fewer files used to leave the stale img-00000006..9.jpg in place (the
 * manifest said 6 files, a run read 10); --force now removes what an earlier gen wrote. */
static void test_gen_force_fewer_files_leaves_no_stale_files(void **state) {
  const char *data = tmp_path("shrink-data");
  const char *cfg = jpeg_config("shrink", data);
  gen_ok(cfg);
  assert_int_equal(count_files(data, ".jpg"), 10);
  /* the user's own files that merely share a prefix with gen's names are not gen's to remove */
  char mine[2][500];
  snprintf(mine[0], sizeof mine[0], "%s/img-holiday.png", data);
  snprintf(mine[1], sizeof mine[1], "%s/sample-notes.txt", data);
  for (int i = 0; i < 2; i++) write_bytes(mine[i], "mine\n", 5, false);
  result *r = run_pb(ARGS("gen", "--config", cfg, "--set", "dataset.generate.num_files=6", "--force"));
  if (r->status != 0) fail_msg("gen --force: exit %d: %s", r->status, r->err);
  int n = count_files(data, ".jpg");
  if (n != 6) fail_msg("after gen --force with num_files 6 the directory holds %d images (expected 6)", n);
  for (int i = 0; i < 2; i++) {
    if (access(mine[i], F_OK) != 0) fail_msg("gen --force removed %s, a file it did not write", mine[i]);
    unlink(mine[i]);
  }
  cJSON *rep = run_report(cfg, "shrink", ARGS("--set", "dataset.generate.num_files=6", "--set", "run.epochs=1"));
  expect_count(rep, "files_read", 6);
}

/* ---------- 3. a run generates a missing dataset first ---------- */

static void test_run_generates_missing_dataset(void **state) {
  const char *data = tmp_path("auto/nested/data"); /* neither the directory nor its parents exist */
  const char *cfg = jpeg_config("auto", data);
  char dir[400];
  snprintf(dir, sizeof dir, "%s/out-auto", g_tmp);
  result *r = run_pb(ARGS("--config", cfg, "--quiet", "--out", dir));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  if (!strstr(r->err, "generating")) fail_msg("stderr does not mention generating: %s", r->err);
  assert_non_null(strstr(r->err, data));
  assert_int_equal(count_files(data, ".jpg"), 10);
  cJSON *rep = load_report(dir);
  expect_count(rep, "files_read", 20);
  expect_count(rep, "samples_consumed", 20);
  assert_accounting_balances(rep);

  /* the second run finds the data and does not generate again */
  r = run_pb(ARGS("--config", cfg, "--quiet", "--out", dir));
  if (r->status != 0) fail_msg("second run: exit %d: %s", r->status, r->err);
  if (strstr(r->err, "generating")) fail_msg("second run generated again: %s", r->err);

  /* other generate settings than the dataset there was made with: generated again (reading the old files
   * would measure other data than the report's config names), saying which setting changed */
  r = run_pb(ARGS("--config", cfg, "--quiet", "--out", dir, "--set", "dataset.generate.num_files=12"));
  if (r->status != 0) fail_msg("run with num_files 12: exit %d: %s", r->status, r->err);
  if (!strstr(r->err, "other settings (num_files 10, not 12)")) fail_msg("stderr: %s", r->err);
  assert_int_equal(count_files(data, ".jpg"), 12);
  expect_count(load_report(dir), "files_read", 24);
  /* another --seed reads the same files (the seed also drives shuffling and augmentation) */
  r = run_pb(ARGS("--config", cfg, "--quiet", "--out", dir, "--set", "dataset.generate.num_files=12", "--seed", "5"));
  if (r->status != 0) fail_msg("run with --seed 5: exit %d: %s", r->status, r->err);
  if (strstr(r->err, "generating")) fail_msg("--seed 5 generated again: %s", r->err);

  /* an existing, empty directory counts as missing data */
  const char *empty = tmp_path("auto-empty");
  assert_int_equal(mkdir(empty, 0777), 0);
  cfg = jpeg_config("auto-empty", empty);
  rep = run_report(cfg, "auto-empty", NULL);
  assert_int_equal(count_files(empty, ".jpg"), 10);
  expect_count(rep, "samples_read", 20);
  assert_accounting_balances(rep);
}

/* ---------- 4. tfrecord ---------- */

static void test_tfrecord_jpeg_payload(void **state) {
  const char *data = tmp_path("tfj-data");
  const char *cfg = write_config(
      "tfj",
      "{'name':'tfj','seed':7,'dataset':{'path':'%s','format':'tfrecord','payload':'jpeg',"
      "  'generate':{'num_files':3,'samples_per_file':4,'image':{'width':64,'height':48}}},"
      "'stages':[{'type':'read','threads':2},{'type':'decode','threads':2},"
      "  {'type':'batch','size':4},{'type':'prefetch'},{'type':'h2d'}],"
      "'device':{'kind':'emulated','step_ms':0.5},'run':{'epochs':2,'warmup_steps':0}}",
      data);
  gen_ok(cfg);
  assert_int_equal(count_files(data, ".tfrecord"), 3);
  cJSON *rep = run_report(cfg, "tfj", NULL);
  expect_count(rep, "files_read", 6);
  expect_count(rep, "samples_read", 24);
  expect_count(rep, "samples_decoded", 24);
  expect_count(rep, "samples_consumed", 24);
  expect_count(rep, "samples_dropped", 0);
  expect_count(rep, "errors", 0);
  assert_int_equal(num(rep, "steps.count"), 6);
  assert_int_equal(batch_sample_bytes(rep), 48 * 64 * 3); /* the decoded image */
  assert_accounting_balances(rep);
}

static const char *tfr_raw_config(const char *name, const char *data, int epochs) {
  return plain_config(name, data,
                      "'format':'tfrecord','payload':'raw',"
                      "'generate':{'num_files':3,'samples_per_file':8,'record_bytes':256}",
                      ",'threads':2", 4, epochs);
}

static void test_tfrecord_raw_payload(void **state) {
  const char *data = tmp_path("tfr-data");
  const char *cfg = tfr_raw_config("tfr", data, 2);
  gen_ok(cfg);
  assert_int_equal(count_files(data, ".tfrecord"), 3);
  cJSON *rep = run_report(cfg, "tfr", NULL);
  expect_count(rep, "files_read", 6);
  expect_count(rep, "samples_read", 48);
  expect_count(rep, "samples_decoded", 0);
  expect_count(rep, "samples_consumed", 48);
  expect_count(rep, "samples_dropped", 0);
  expect_count(rep, "errors", 0);
  assert_int_equal(num(rep, "steps.count"), 12);
  assert_int_equal(batch_sample_bytes(rep), 256);
  assert_accounting_balances(rep);

  /* dataset.feature naming a feature the Examples lack: every record is an error naming its file.  (A
   * config without generate: with it, another feature is another dataset, generated again.) */
  const char *other = plain_config("tfr-other", data, "'format':'tfrecord','payload':'raw','feature':'image/other'",
                                   ",'threads':2", 4, 1);
  /* nothing measured: a failed run */
  rep = run_report_failing(other, "tfr-feature", NULL, "every sample failed (24 of 24)", NULL);
  expect_count(rep, "samples_read", 24);
  expect_count(rep, "errors", 24);
  expect_count(rep, "samples_consumed", 0);
  cJSON *e0 = cJSON_GetArrayItem(at(rep, "accounting.first_errors"), 0);
  assert_non_null(e0);
  assert_non_null(strstr(str(e0, "file"), ".tfrecord"));
  assert_non_null(strstr(str(e0, "message"), "image/other"));
  assert_accounting_balances(rep);
}

/* A cache over real TFRecords (no generate section): the plan counts one sample per file, a floor, so the
 * cache itself stops at what limits.max_memory_mb leaves it: exit 1 naming the limit, never an
 * unbounded first epoch.  The same data with a larger limit runs and replays. */
static void test_cache_over_limit_fails(void **state) {
  const char *data = tmp_path("tfcache-data");
  gen_ok(plain_config("tfcache-gen", data,
                      "'format':'tfrecord','payload':'raw','generate':{'num_files':2,'samples_per_file':1000,"
                      "'record_bytes':8192}",
                      "", 4, 1));
  const char *cfg = write_config(
      "tfcache", "{'name':'tfcache','dataset':{'path':'%s','format':'tfrecord','payload':'raw','record_bytes':8192},"
      "'stages':[{'type':'read'},{'type':'cache'},{'type':'batch','size':4},{'type':'h2d'}],"
      "'device':{'kind':'emulated','step_ms':0},'run':{'epochs':2,'warmup_steps':0},"
      "'limits':{'max_memory_mb':16}}", data);
  result *r = run_pb(ARGS("--config", cfg, "--quiet", "--format", "json", "--out", out_dir("tfcache-small")));
  if (r->status != 1) fail_msg("expected exit 1, got %d: %s", r->status, r->err);
  assert_non_null(strstr(r->err, "does not fit the cache"));
  assert_non_null(strstr(r->err, "limits.max_memory_mb"));
  /* and nothing of a part-epoch replayed: every sample read is from the first epoch's 2,000, the error is
   * counted once, and the run ends on it */
  cJSON *small = load_report(out_dir("tfcache-small"));
  if (num(small, "accounting.samples_read") > 2000)
    fail_msg("%.0f samples read: part of the epoch was replayed", num(small, "accounting.samples_read"));
  expect_count(small, "errors", 1);
  assert_accounting_balances(small);
  cJSON *rep = run_report(cfg, "tfcache-big", ARGS("--set", "limits.max_memory_mb=64"));
  expect_count(rep, "samples_consumed", 4000);
  expect_count(rep, "errors", 0);
  assert_accounting_balances(rep);
}

/* A generated dataset's cache is planned from its generate settings, not from the files on disk: validate
 * (and sweep's check before its first run) plan before run regenerates a dataset of other settings, and
 * must refuse what run will refuse (and pass what it will pass). */
static void test_cache_planned_from_generate(void **state) {
  const char *data = tmp_path("vcache-data");
  const char *cfg = plain_config("vcache", data,
                                 "'format':'raw','generate':{'num_files':2,'samples_per_file':10,"
                                 "'record_bytes':100000}",
                                 "", 1, 1);
  gen_ok(cfg);
  /* read's buffers ~78 MB, the cache 2 MB: under 90; with 100 samples a file the cache is 20 MB: over */
  const char *cached = write_config(
      "vcache-c", "{'name':'vc','dataset':{'path':'%s','format':'raw','generate':{'num_files':2,"
      "'samples_per_file':10,'record_bytes':100000}},'stages':[{'type':'read'},{'type':'cache'},"
      "{'type':'batch','size':1},{'type':'h2d'}],'device':{'kind':'emulated','step_ms':0},"
      "'run':{'epochs':1,'warmup_steps':0},'limits':{'max_memory_mb':90}}", data);
  result *r = run_pb(ARGS("validate", "--config", cached));
  if (r->status != 0) fail_msg("validate as generated: exit %d: %s", r->status, r->err);
  r = run_pb(ARGS("validate", "--config", cached, "--set", "dataset.generate.samples_per_file=100"));
  assert_one_error_line(r, 2, "cache 20 MB");
}

/* ---------- 5. npy, npz ---------- */

/* A message in accounting.first_errors containing `part`? */
static bool first_error_has(cJSON *rep, const char *part) {
  cJSON *e;
  cJSON_ArrayForEach(e, at(rep, "accounting.first_errors")) {
    if (strstr(str(e, "message"), part)) return true;
  }
  return false;
}

/* Beside the generated files: one that is not an array (npz: not a zip) is read through, so it counts in
 * files_read as a corrupt file of any format does, and fails as a sample; an npy whose axis 0 is not
 * generate.samples_per_file long is a sample error, not one sample of another size. */
static void npy_like_bad_files(const char *format, const char *cfg, const char *data) {
  char path[500];
  snprintf(path, sizeof path, "%s/zz-garbage.%s", data, format);
  write_bytes(path, "not an array at all", 19, false);
  int nbad = 1;
  if (strcmp(format, "npy") == 0) {
    static const char dict[] = "{'descr': '|u1', 'fortran_order': False, 'shape': (3, 128), }";
    char header[128]; /* magic, version, length, the dict padded with spaces to a multiple of 64 */
    memset(header, ' ', sizeof header);
    memcpy(header, "\x93NUMPY\x01\x00", 8);
    header[8] = (char)(sizeof header - 10); /* the header length, little-endian u16 */
    header[9] = 0;
    memcpy(header + 10, dict, sizeof dict - 1);
    header[sizeof header - 1] = '\n';
    uint8_t rows[3 * 128] = {0};
    snprintf(path, sizeof path, "%s/zz-three-rows.npy", data);
    write_bytes(path, header, sizeof header, false);
    write_bytes(path, rows, sizeof rows, true);
    nbad++;
  }
  cJSON *rep = run_report(cfg, format, NULL);
  expect_count(rep, "files_read", 2 * (3 + nbad));
  expect_count(rep, "errors", 2 * nbad);
  expect_count(rep, "samples_consumed", 24);
  if (nbad > 1 && !first_error_has(rep, "3 rows along axis 0 (expected 4 rows"))
    fail_msg("no error names the npy of 3 rows");
  assert_accounting_balances(rep);
}

static void npy_like(const char *format) {
  char name[32], dataset[300];
  snprintf(name, sizeof name, "%s", format);
  const char *data = tmp_path(format);
  snprintf(dataset, sizeof dataset,
           "'format':'%s','generate':{'num_files':3,'samples_per_file':4,'record_bytes':128}", format);
  const char *cfg = plain_config(name, data, dataset, "", 4, 2);
  gen_ok(cfg);
  char suffix[8];
  snprintf(suffix, sizeof suffix, ".%s", format);
  assert_int_equal(count_files(data, suffix), 3);
  cJSON *rep = run_report(cfg, name, NULL);
  expect_count(rep, "files_read", 6);
  expect_count(rep, "samples_read", 24); /* 12 per epoch */
  expect_count(rep, "samples_consumed", 24);
  expect_count(rep, "samples_dropped", 0);
  expect_count(rep, "errors", 0);
  assert_int_equal(num(rep, "steps.count"), 6);
  assert_int_equal(batch_sample_bytes(rep), 128); /* one row of the [4,128] array */
  cJSON *read = stage(rep, "read");                 /* warmup 0: the window covers the whole run */
  assert_int_equal(num(read, "calls"), 24);
  assert_int_equal(num(read, "bytes_out") / num(read, "calls"), 128);
  assert_accounting_balances(rep);
  npy_like_bad_files(format, cfg, data);
}

static void test_npy(void **state) { npy_like("npy"); }

/* Regression (was intermittent, about 1 gen in 100-200; gen now writes archives one at a time):
 * `pipebench gen` of an npz dataset exited 1 with
 * "pipebench: <dir>/sample-0000000N.npz: cannot write: Bad message".  Only with several gen workers
 * (never with num_files 1): libzip's zip_open(<dir>/.tmp-sample-0000000N.npz, ZIP_CREATE | ZIP_TRUNCATE)
 * fails with ZIP_ER_RDONLY (25, "Read-only archive"), which npz.c's open_error maps to EBADMSG, and gen
 * prints strerror of that instead of libzip's message. */
static void test_npz(void **state) { npy_like("npz"); }

/* With warmup_steps 0 the measured window opens at the start of the run (METRICS.md), before the
 * pipeline's threads start, so the per-stage counters cover the whole run.  Regression test: before
 * commit 12d8294 the window opened when the device thread started, and on this tiny dataset the read
 * stage often reported "calls": 0 and "bytes_out": 0 (or calls 24 with bytes_out 0) although it read all
 * 24 samples.  It was a race, so the run is repeated. */
static void test_warmup0_read_stage_counts_whole_run(void **state) {
  const char *data = tmp_path("npy0-data");
  const char *cfg = plain_config("npy0", data,
                                 "'format':'npy','generate':{'num_files':3,'samples_per_file':4,'record_bytes':128}",
                                 "", 4, 2);
  gen_ok(cfg);
  for (int i = 0; i < 10; i++) {
    cJSON *rep = run_report(cfg, "npy0", NULL);
    expect_count(rep, "samples_read", 24);
    cJSON *read = stage(rep, "read");
    double calls = num(read, "calls"), bytes_out = num(read, "bytes_out");
    if (calls != 24 || bytes_out != 24 * 128)
      fail_msg("run %d: read stage calls %.0f, bytes_out %.0f (expected 24 calls and %d bytes: the whole run)",
               i + 1, calls, bytes_out, 24 * 128);
  }
}

/* ---------- 6. raw ---------- */

static void test_raw_and_trailing_partial_record(void **state) {
  const char *data = tmp_path("raw-data");
  const char *cfg = plain_config("raw", data, "'format':'raw','generate':{'num_files':3,'samples_per_file':5,"
                                              "'record_bytes':100}",
                                 ",'threads':2", 5, 2);
  gen_ok(cfg);
  assert_int_equal(count_files(data, ".bin"), 3);
  cJSON *rep = run_report(cfg, "raw", NULL);
  expect_count(rep, "files_read", 6);
  expect_count(rep, "samples_read", 30);
  expect_count(rep, "samples_consumed", 30);
  expect_count(rep, "samples_dropped", 0);
  expect_count(rep, "errors", 0);
  assert_int_equal(num(rep, "steps.count"), 6);
  assert_int_equal(batch_sample_bytes(rep), 100);
  assert_accounting_balances(rep);

  /* 7 bytes more in one file: its 5 records still count, the partial one is an error (per epoch) */
  char bad[500];
  snprintf(bad, sizeof bad, "%s/records-00001.bin", data);
  write_bytes(bad, "ABCDEFG", 7, true);
  rep = run_report(cfg, "raw-trailing", NULL);
  expect_count(rep, "files_read", 6);
  expect_count(rep, "samples_read", 32);
  expect_count(rep, "errors", 2);
  assert_int_equal(num(rep, "accounting.samples_consumed") + num(rep, "accounting.samples_dropped"), 30);
  cJSON *errs = at(rep, "accounting.first_errors");
  assert_int_equal(cJSON_GetArraySize(errs), 1); /* the same file's error every epoch: listed once */
  cJSON *e;
  cJSON_ArrayForEach(e, errs) {
    assert_string_equal(str(e, "file"), bad);
    assert_non_null(strstr(str(e, "message"), "offset 500"));
    assert_non_null(strstr(str(e, "message"), "7 trailing bytes"));
  }
  assert_accounting_balances(rep);
}

/* ---------- 7. bad JPEGs ---------- */

static const char *bad_jpeg_dir(char paths[3][400]) {
  const char *data = tmp_path("badjpeg-data");
  const char *cfg = jpeg_config("badjpeg", data);
  gen_ok(cfg);
  snprintf(paths[0], 400, "%s/img-bad-empty.jpg", data);
  snprintf(paths[1], 400, "%s/img-bad-truncated.jpg", data);
  snprintf(paths[2], 400, "%s/img-bad-random.jpg", data);
  write_bytes(paths[0], "", 0, false);
  char good[500];
  snprintf(good, sizeof good, "%s/img-00000000.jpg", data);
  uint8_t *jpeg;
  size_t n = slurp(good, &jpeg);
  write_bytes(paths[1], jpeg, n / 3, false); /* header intact, the scan cut short */
  free(jpeg);
  uint8_t noise[3000];
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < sizeof noise; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    noise[i] = (uint8_t)(x >> 24);
  }
  noise[0] = 0x00; /* certainly not FF D8 */
  write_bytes(paths[2], noise, sizeof noise, false);
  return cfg;
}

static bool names_one_of(const char *text, char paths[3][400]) {
  for (int i = 0; i < 3; i++)
    if (strstr(text, paths[i])) return true;
  return false;
}

static void test_bad_jpegs_skip_fail_and_max_errors(void **state) {
  char paths[3][400];
  const char *cfg = bad_jpeg_dir(paths);

  /* skip (the default): 3 errors per epoch, the 10 good images go through */
  cJSON *rep = run_report(cfg, "badjpeg-skip", NULL);
  expect_count(rep, "files_read", 26);
  expect_count(rep, "samples_read", 26);
  expect_count(rep, "errors", 6);
  expect_count(rep, "samples_decoded", 20);
  expect_count(rep, "samples_consumed", 20);
  expect_count(rep, "samples_dropped", 0);
  cJSON *errs = at(rep, "accounting.first_errors");
  assert_int_equal(cJSON_GetArraySize(errs), 3); /* each bad file once, though each failed in both epochs */
  int seen[3] = {0};
  cJSON *e;
  cJSON_ArrayForEach(e, errs) {
    const char *file = str(e, "file");
    int which = -1;
    for (int i = 0; i < 3; i++)
      if (strcmp(file, paths[i]) == 0) which = i;
    if (which < 0) fail_msg("first_errors names %s, not one of the bad files", file);
    seen[which]++;
    assert_true(strlen(str(e, "message")) > 0);
  }
  assert_int_equal(seen[0], 1);
  assert_int_equal(seen[1], 1);
  assert_int_equal(seen[2], 1);
  assert_accounting_balances(rep);

  /* fail: exit 1, one line naming a bad file; the report is still written and balances */
  char dir[400];
  snprintf(dir, sizeof dir, "%s/out-badjpeg-fail", g_tmp);
  result *r = run_pb(ARGS("--config", cfg, "--quiet", "--out", dir, "--set", "run.on_error=fail"));
  assert_one_error_line(r, 1, NULL);
  if (!names_one_of(r->err, paths)) fail_msg("the error line names none of the bad files: %s", r->err);
  rep = load_report(dir);
  assert_true(num(rep, "accounting.errors") >= 1);
  assert_accounting_balances(rep);

  /* max_errors 1: the second error stops the run with exit 1 */
  snprintf(dir, sizeof dir, "%s/out-badjpeg-max1", g_tmp);
  r = run_pb(ARGS("--config", cfg, "--quiet", "--out", dir, "--set", "run.max_errors=1"));
  assert_one_error_line(r, 1, NULL);
  if (!names_one_of(r->err, paths)) fail_msg("the error line names none of the bad files: %s", r->err);
  rep = load_report(dir);
  assert_true(num(rep, "accounting.errors") >= 2);
  assert_accounting_balances(rep);

  if (!strstr(r->err, "run.max_errors")) fail_msg("the error line does not say max_errors stopped the run: %s", r->err);

  /* max_errors 6 = exactly the errors of the run: not more than N, so it succeeds */
  rep = run_report(cfg, "badjpeg-max6", ARGS("--set", "run.max_errors=6"));
  expect_count(rep, "errors", 6);

  /* only the bad files, 20 epochs (60 errors, far from the 10,000 that stop a run early): every sample
   * failed and nothing was measured, which is exit 1 with the first error, not a quiet success */
  char only_bad[500];
  snprintf(only_bad, sizeof only_bad, "dataset.path=%s/img-bad-*.jpg", tmp_path("badjpeg-data"));
  rep = run_report_failing(cfg, "badjpeg-allbad", ARGS("--set", only_bad, "--set", "run.epochs=20"),
                           "every sample failed (60 of 60)", &r);
  if (!names_one_of(r->err, paths)) fail_msg("the error line names none of the bad files: %s", r->err);
  expect_count(rep, "errors", 60);
  assert_accounting_balances(rep);
}

/* on_error fail stops a long run early instead of running it to the end. */
static void test_on_error_fail_stops_early(void **state) {
  char paths[3][400];
  const char *cfg = bad_jpeg_dir(paths);
  char dir[400];
  snprintf(dir, sizeof dir, "%s/out-badjpeg-long", g_tmp);
  /* 200 epochs of 26 files, 6 steps of 2 ms each per epoch: 2.4 s of device time if it ran to the end */
  result *r = run_pb(ARGS("--config", cfg, "--quiet", "--out", dir, "--set", "run.on_error=fail", "--set",
                          "run.epochs=200", "--set", "device.step_ms=2"));
  assert_one_error_line(r, 1, NULL);
  if (!names_one_of(r->err, paths)) fail_msg("the error line names none of the bad files: %s", r->err);
  cJSON *rep = load_report(dir);
  double read = num(rep, "accounting.samples_read");
  if (read >= 200 * 26) fail_msg("the run read all %.0f samples although the first error should stop it", read);
  /* and at once: the first error cancels the engine, so at most the other decode thread's sample fails
   * too (the main thread's 50 ms poll used to let several epochs' errors through) */
  double errors = num(rep, "accounting.errors");
  if (errors > 2) fail_msg("%.0f errors: the run went on after the first", errors);
  assert_accounting_balances(rep);
  /* stopped before any measured step (1,000 warm-up steps), without --quiet: the error is the one line,
   * not also the warning that the run ended before any measured step */
  r = run_pb(ARGS("--config", cfg, "--out", dir, "--format", "json", "--set", "run.on_error=fail", "--set",
                  "run.epochs=200", "--set", "run.warmup_steps=1000"));
  assert_one_error_line(r, 1, NULL);
}

/* Files that fail to open need no buffer and no push: the read stage must see the stop itself, or it
 * goes on claiming files to the end of the epoch (300 errors here, where the first stops the run). */
static void test_on_error_fail_stops_unopenable_files(void **state) {
  const char *data = tmp_path("dangling-only");
  mkdir(data, 0777);
  for (int i = 100; i < 400; i++) {
    char link[500];
    snprintf(link, sizeof link, "%s/img-%d.jpg", data, i);
    assert_int_equal(symlink("/nonexistent/pb", link), 0);
  }
  const char *cfg = write_config("dangling", "{'dataset':{'path':'%s','format':'jpeg'},'stages':[{'type':'read',"
                                             "'threads':2},{'type':'decode'},{'type':'batch','size':2}],"
                                             "'device':{'kind':'emulated','step_ms':1},"
                                             "'run':{'epochs':1,'on_error':'fail'}}", data);
  const char *dir = tmp_path("dangling-out");
  result *r = run_pb(ARGS("run", "--config", cfg, "--quiet", "--format", "json", "--out", dir));
  assert_one_error_line(r, 1, "No such file");
  cJSON *rep = load_report(dir);
  double errors = num(rep, "accounting.errors");
  if (errors > 2) fail_msg("%.0f errors: the read stage went on after the first (one per read thread at most)", errors);
  assert_accounting_balances(rep);
}

/* A fused map (the map writes into the batch's slots) stopped while it holds a result it has not handed
 * on: that sample is in flight, not lost.  The duration stop lands anywhere, so the run is repeated. */
static void test_fused_map_stop_balances(void **state) {
  const char *cfg = write_config(
      "fusestop", "{'dataset':{'format':'synthetic','shape':[48,64,3],'dtype':'uint8'},"
      "'stages':[{'type':'map','threads':8,'ops':[{'op':'spin','us':30},{'op':'resize','size':24}]},"
      "{'type':'batch','size':16,'fuse_map':true}],'device':{'kind':'emulated','step_ms':0},"
      "'run':{'duration_s':0.02,'warmup_steps':0}}");
  for (int i = 0; i < 10; i++) {
    cJSON *rep = run_report(cfg, "fusestop", NULL);
    assert_accounting_balances(rep);
  }
}

/* ---------- 8. corrupt TFRecord ---------- */

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* Regression: after a record whose data CRC is wrong (its length and length CRC are fine, so the framing
 * is intact) the reader used to abandon the rest of the shard: records 3..8 of that shard are neither read nor
 * counted as errors (samples_read 18 instead of 24, with "balanced": true). */
static void test_corrupt_tfrecord_crc(void **state) {
  const char *data = tmp_path("tfc-data");
  const char *cfg = tfr_raw_config("tfc", data, 1);
  gen_ok(cfg);
  char shard[500];
  snprintf(shard, sizeof shard, "%s/shard-00001.tfrecord", data);
  uint8_t *b;
  size_t n = slurp(shard, &b);
  size_t len1 = (size_t)le64(b), second = 8 + 4 + len1 + 4; /* length, its crc, data, data crc */
  assert_true(second + 12 < n);
  size_t len2 = (size_t)le64(b + second), crc2 = second + 12 + len2;
  assert_true(crc2 + 4 <= n);
  b[crc2] ^= 0x5A;
  write_bytes(shard, b, n, false);
  free(b);

  cJSON *rep = run_report(cfg, "tfc", NULL);
  expect_count(rep, "errors", 1);
  cJSON *e0 = cJSON_GetArrayItem(at(rep, "accounting.first_errors"), 0);
  assert_non_null(e0);
  assert_string_equal(str(e0, "file"), shard);
  char offset[64];
  snprintf(offset, sizeof offset, "offset %zu", second);
  if (!strstr(str(e0, "message"), offset)) fail_msg("message lacks \"%s\": %s", offset, str(e0, "message"));
  assert_accounting_balances(rep);
  /* the other 23 records of the epoch still count */
  expect_count(rep, "files_read", 3);
  expect_count(rep, "samples_read", 24);
  assert_int_equal(num(rep, "accounting.samples_consumed") + num(rep, "accounting.samples_dropped"), 23);
}

/* ---------- 9. a dataset path that does not exist ---------- */

/* decode.max_pixels refuses images from their header, before decoding: each is an error that gives both
 * numbers, and nothing reaches the batch. */
static void test_max_pixels_refuses_oversized(void **state) {
  const char *data = tmp_path("mp-data");
  const char *cfg = jpeg_config("mp", data);
  gen_ok(cfg);
  /* nothing measured: a failed run */
  cJSON *rep = run_report_failing(cfg, "mp", ARGS("--set", "stages.decode.max_pixels=1000", "--set", "run.epochs=1"),
                                  "every sample failed (10 of 10)", NULL);
  expect_count(rep, "errors", 10);
  expect_count(rep, "samples_decoded", 0);
  expect_count(rep, "samples_consumed", 0);
  const char *msg = str(cJSON_GetArrayItem(at(rep, "accounting.first_errors"), 0), "message");
  if (!strstr(msg, "3072") || !strstr(msg, "1000")) fail_msg("max_pixels message lacks the numbers: %s", msg);
  assert_accounting_balances(rep);
}

/* A resize whose result would be wider than a sample can be (a 4000x8 image to a shorter side of 224 is
 * 112000x224): each such image is a sample error naming the sizes, found before anything is allocated
 * (a 65000x1 image once took 10 GB of scratch), and a run where every image fails exits 1. */
static void test_resize_too_wide_is_a_sample_error(void **state) {
  const char *data = tmp_path("thin-data");
  gen_ok(write_config("thin-gen",
                      "{'name':'thin','dataset':{'path':'%s','format':'jpeg',"
                      "  'generate':{'num_files':3,'samples_per_file':1,'image':{'width':4000,'height':8}}},"
                      "'stages':[{'type':'read'},{'type':'decode'},{'type':'batch','size':1}],"
                      "'device':{'kind':'emulated','step_ms':1}}",
                      data));
  /* no generate section: the images' size is not known to the config check */
  const char *cfg = write_config(
      "thin",
      "{'name':'thin','dataset':{'path':'%s','format':'jpeg'},'stages':[{'type':'read'},{'type':'decode'},"
      "  {'name':'augment','type':'map','ops':[{'op':'resize','size':224},{'op':'center_crop','size':32}]},"
      "  {'type':'batch','size':1},{'type':'h2d'}],"
      "'device':{'kind':'emulated','step_ms':1},'run':{'epochs':1,'warmup_steps':0}}",
      data);
  cJSON *rep = run_report_failing(cfg, "thin", NULL, "every sample failed (3 of 3)", NULL);
  expect_count(rep, "errors", 3);
  const char *msg = str(cJSON_GetArrayItem(at(rep, "accounting.first_errors"), 0), "message");
  if (!strstr(msg, "112000x224") || !strstr(msg, "4000x8")) fail_msg("the message lacks the sizes: %s", msg);
  assert_true(num(rep, "memory.peak_rss_bytes") < 1e9);
  assert_accounting_balances(rep);
}

/* A file that vanishes while the run goes on (listed at the start, deleted later): every later attempt to
 * read it is one error naming it; nothing crashes and the accounting balances. */
static void test_file_vanishes_mid_run(void **state) {
  const char *data = tmp_path("vanish-data");
  const char *cfg = jpeg_config("vanish", data);
  gen_ok(cfg);
  char out_dir[400], out[400], err[400], victim[500];
  snprintf(out_dir, sizeof out_dir, "%s/out-vanish", g_tmp);
  snprintf(out, sizeof out, "%s/vanish.out", g_tmp);
  snprintf(err, sizeof err, "%s/vanish.err", g_tmp);
  snprintf(victim, sizeof victim, "%s/img-00000003.jpg", data);
  pid_t pid = spawn_pb(ARGS("run", "--config", cfg, "--quiet", "--out", out_dir, "--set",
                            "run={\"epochs\":400,\"warmup_steps\":0}"), out, err);
  usleep(300 * 1000);
  assert_int_equal(unlink(victim), 0);
  int status = wait_status_timeout(pid, PB_CHILD_TIMEOUT_S, "vanish");
  if (status != 0) fail_msg("exit %d", status);
  cJSON *rep = load_report(out_dir);
  assert_true(num(rep, "accounting.errors") >= 1);
  const char *file = str(cJSON_GetArrayItem(at(rep, "accounting.first_errors"), 0), "file");
  if (strcmp(file, victim) != 0) fail_msg("first error names %s, expected %s", file, victim);
  assert_accounting_balances(rep);
}

/* Data that cannot work at all (every file garbage) must not spin forever under on_error skip with a
 * steps target: the run stops with exit 1 and says no sample worked. */
static void test_all_samples_fail_stops(void **state) {
  const char *data = tmp_path("allbad-data");
  mkdir(data, 0777);
  for (int i = 0; i < 3; i++) {
    char path[500];
    snprintf(path, sizeof path, "%s/x%d.jpg", data, i);
    write_bytes(path, "not a jpeg at all", 17, false);
  }
  const char *cfg = write_config("allbad", "{'dataset':{'path':'%s','format':'jpeg'},'stages':[{'type':'read'},"
                                           "{'type':'decode'},{'type':'batch','size':2}],"
                                           "'device':{'kind':'emulated','step_ms':1},'run':{'steps':10}}", data);
  result *r = run_pb(ARGS("run", "--config", cfg, "--quiet", "--out", tmp_path("allbad-out")));
  assert_one_error_line(r, 1, "no sample");
}

static void test_missing_dataset_path(void **state) {
  const char *missing = tmp_path("no/such/dir");
  const char *cfg = write_config(
      "missing",
      "{'name':'missing','dataset':{'path':'%s','format':'jpeg'},"
      "'stages':[{'type':'read'},{'type':'decode'},{'type':'map','ops':[{'op':'center_crop','size':32}]},"
      "  {'type':'batch','size':4},{'type':'h2d'}],"
      "'device':{'kind':'emulated','step_ms':1},'run':{'steps':3,'warmup_steps':0}}",
      missing);
  char dir[400];
  snprintf(dir, sizeof dir, "%s/out-missing", g_tmp);
  result *r = run_pb(ARGS("--config", cfg, "--quiet", "--out", dir));
  /* exit 2 (the binary treats it as a config error; 1 would be defensible too, as an I/O failure) */
  assert_one_error_line(r, 2, "dataset.path");
  assert_non_null(strstr(r->err, missing));
  assert_non_null(strstr(r->err, cfg));
  assert_false(exists(missing)); /* nothing generated, nothing created */
}

/* ---------- 10. --data synthetic never touches the dataset ---------- */

static void test_synthetic_skips_dataset(void **state) {
  const char *missing = tmp_path("synthetic-never-made");
  const char *cfg = jpeg_config("synth", missing);
  cJSON *rep = run_report(cfg, "synth", ARGS("--data", "synthetic"));
  assert_false(exists(missing)); /* not read, not generated */
  assert_string_equal(str(rep, "data"), "synthetic");
  const char *skipped[] = {"read", "decode", "augment"};
  for (int i = 0; i < 3; i++) {
    cJSON *s = stage(rep, skipped[i]);
    if (!cJSON_IsTrue(at(s, "skipped"))) fail_msg("stage %s is not reported skipped", skipped[i]);
    assert_true(cJSON_IsNull(at(s, "calls")));
  }
  assert_false(cJSON_IsTrue(at(stage(rep, "batch"), "skipped")));
  expect_count(rep, "files_read", 0);
  expect_count(rep, "samples_read", 20); /* the epoch size comes from dataset.generate */
  expect_count(rep, "samples_consumed", 20);
  expect_count(rep, "errors", 0);
  assert_int_equal(batch_sample_bytes(rep), 32 * 32 * 3 * 4); /* what augment would emit */
  assert_accounting_balances(rep);
}

/* ---------- 11. O_DIRECT ---------- */

/* Either the file system takes O_DIRECT and the counts are exact, or every file is an error whose
 * message mentions O_DIRECT; never a crash. */
static void expect_direct(cJSON *rep, double samples, double files) {
  double errors = num(rep, "accounting.errors");
  if (errors == 0) {
    expect_count(rep, "files_read", files);
    expect_count(rep, "samples_read", samples);
    expect_count(rep, "samples_consumed", samples);
  } else {
    cJSON *e;
    cJSON_ArrayForEach(e, at(rep, "accounting.first_errors")) {
      if (!strstr(str(e, "message"), "O_DIRECT"))
        fail_msg("a direct-I/O error that does not mention O_DIRECT: %s: %s", str(e, "file"), str(e, "message"));
    }
    assert_true(cJSON_GetArraySize(at(rep, "accounting.first_errors")) > 0);
  }
  assert_accounting_balances(rep);
}

static void test_direct_io(void **state) {
  const char *data = tmp_path("direct-jpeg");
  const char *cfg = jpeg_config("direct-jpeg", data);
  gen_ok(cfg);
  cJSON *rep = run_report(cfg, "direct-jpeg", ARGS("--set", "stages.read.direct=true"));
  expect_direct(rep, 20, 20);

  /* multi-sample files read in several blocks: block_bytes 1000 is rounded up to the 4096 alignment */
  data = tmp_path("direct-raw");
  cfg = plain_config("direct-raw", data,
                     "'format':'raw','generate':{'num_files':3,'samples_per_file':5,'record_bytes':3000}",
                     ",'threads':2,'direct':true,'block_bytes':1000", 5, 2);
  gen_ok(cfg);
  rep = run_report(cfg, "direct-raw", NULL);
  expect_direct(rep, 30, 6);
  if (num(rep, "accounting.errors") == 0) assert_int_equal(batch_sample_bytes(rep), 3000);
}

/* ---------- 12. the read stage's emulation caps ---------- */

static void test_read_latency_cap(void **state) {
  const char *data = tmp_path("latency-data");
  const char *cfg = plain_config("latency", data,
                                 "'format':'raw','generate':{'num_files':20,'samples_per_file':1,'record_bytes':64}",
                                 ",'threads':1,'latency_us':2000", 4, 1);
  gen_ok(cfg);
  char dir[400];
  snprintf(dir, sizeof dir, "%s/out-latency", g_tmp);
  result *r = run_pb(ARGS("--config", cfg, "--quiet", "--out", dir));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  cJSON *rep = load_report(dir);
  expect_count(rep, "samples_read", 20);
  expect_count(rep, "samples_consumed", 20);
  cJSON *read = stage(rep, "read");
  assert_true(num(read, "calls") > 0);
  double mean = num(read, "mean_us");
  if (mean < 2000) fail_msg("read mean_us %.1f < latency_us 2000", mean);
  if (mean > 200000) fail_msg("read mean_us %.1f: far more than the 2000 us asked for", mean);
  if (r->wall_s < 20 * 0.002) fail_msg("20 reads of 2 ms on one thread took %.3f s", r->wall_s);
  assert_accounting_balances(rep);
}

static void test_read_bandwidth_cap(void **state) {
  const char *data = tmp_path("bandwidth-data");
  /* 20 files of 10,000 bytes = 0.2 MB at 1 MB/s for the whole stage (2 threads): about 0.2 s */
  const char *cfg = plain_config("bandwidth", data,
                                 "'format':'raw','generate':{'num_files':20,'samples_per_file':1,"
                                 "'record_bytes':10000}",
                                 ",'threads':2,'bandwidth_mb_per_s':1", 4, 1);
  gen_ok(cfg);
  char dir[400];
  snprintf(dir, sizeof dir, "%s/out-bandwidth", g_tmp);
  result *r = run_pb(ARGS("--config", cfg, "--quiet", "--out", dir));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  cJSON *rep = load_report(dir);
  expect_count(rep, "samples_read", 20);
  expect_count(rep, "samples_consumed", 20);
  if (r->wall_s < 0.15) fail_msg("0.2 MB at 1 MB/s took only %.3f s", r->wall_s);
  double measured = num(rep, "measured_s");
  if (measured < 0.12) fail_msg("measured_s %.3f for 0.2 MB at 1 MB/s", measured);
  if (r->wall_s > 30) fail_msg("0.2 MB at 1 MB/s took %.1f s", r->wall_s);
  assert_accounting_balances(rep);
}

/* ---------- fixture ---------- */

static int make_tmp(void **state) { return e2e_make_tmp("pipebench-e2e-data"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_jpeg_two_epochs, free_reports),
      cmocka_unit_test_teardown(test_fused_crop, free_reports),
      cmocka_unit_test_teardown(test_gen_idempotent_and_refuses_other_data, free_reports),
      cmocka_unit_test_teardown(test_gen_force_rewrites, free_reports),
      cmocka_unit_test_teardown(test_gen_force_fewer_files_leaves_no_stale_files, free_reports),
      cmocka_unit_test_teardown(test_run_generates_missing_dataset, free_reports),
      cmocka_unit_test_teardown(test_tfrecord_jpeg_payload, free_reports),
      cmocka_unit_test_teardown(test_tfrecord_raw_payload, free_reports),
      cmocka_unit_test_teardown(test_cache_over_limit_fails, free_reports),
      cmocka_unit_test_teardown(test_cache_planned_from_generate, free_reports),
      cmocka_unit_test_teardown(test_npy, free_reports),
      cmocka_unit_test_teardown(test_npz, free_reports),
      cmocka_unit_test_teardown(test_warmup0_read_stage_counts_whole_run, free_reports),
      cmocka_unit_test_teardown(test_raw_and_trailing_partial_record, free_reports),
      cmocka_unit_test_teardown(test_bad_jpegs_skip_fail_and_max_errors, free_reports),
      cmocka_unit_test_teardown(test_on_error_fail_stops_early, free_reports),
      cmocka_unit_test_teardown(test_on_error_fail_stops_unopenable_files, free_reports),
      cmocka_unit_test_teardown(test_fused_map_stop_balances, free_reports),
      cmocka_unit_test_teardown(test_corrupt_tfrecord_crc, free_reports),
      cmocka_unit_test_teardown(test_max_pixels_refuses_oversized, free_reports),
      cmocka_unit_test_teardown(test_resize_too_wide_is_a_sample_error, free_reports),
      cmocka_unit_test_teardown(test_file_vanishes_mid_run, free_reports),
      cmocka_unit_test_teardown(test_all_samples_fail_stops, free_reports),
      cmocka_unit_test_teardown(test_missing_dataset_path, free_reports),
      cmocka_unit_test_teardown(test_synthetic_skips_dataset, free_reports),
      cmocka_unit_test_teardown(test_direct_io, free_reports),
      cmocka_unit_test_teardown(test_read_latency_cap, free_reports),
      cmocka_unit_test_teardown(test_read_bandwidth_cap, free_reports),
  };
  return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}

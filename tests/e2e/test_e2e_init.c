/* pipebench init (issue 34): a directory of the user's own data (JPEG files with a README and a PNG among
 * them; TFRecord with JPEG and raw payloads; npy arrays) gives a config whose dataset and preset come from
 * the data, which loads and runs; what init found is said; bad uses get one line and exit 2. */
#include "e2e_util.h"

/* Generates a dataset with `pipebench gen` from a config of this dataset object (no pipeline needed beyond
 * what the format allows), into <tmp>/NAME. */
static const char *gen_dataset(const char *name, const char *dataset_json, const char *stages_json) {
  static char dir[400];
  snprintf(dir, sizeof dir, "%s/%s", g_tmp, name);
  const char *cfg = write_config(name,
                                 "{'name':'%s','dataset':{'path':'%s',%s},'stages':%s,"
                                 "'device':{'kind':'emulated'}}",
                                 name, dir, dataset_json, stages_json);
  gen_ok(cfg);
  return dir;
}

static const char *k_jpeg_stages = "[{'type':'read'},{'type':'decode'},{'type':'batch','size':2}]";
static const char *k_raw_stages = "[{'type':'read'},{'type':'batch','size':2}]";

/* init DIR --out FILE: exit 0 and the written config's text. */
static cJSON *init_ok(const char *dir, const char *name, const char *preset, result **out) {
  static char file[400];
  snprintf(file, sizeof file, "%s/%s-init.json", g_tmp, name);
  result *r = preset ? run_pb(ARGS("init", "--data", dir, "--out", file, "--preset", preset))
                     : run_pb(ARGS("init", dir, "-o", file));
  if (r->status != 0) fail_msg("init %s: exit %d: %s", dir, r->status, r->err);
  if (out) *out = r;
  assert_non_null(strstr(r->out, "next:  pipebench run "));
  return load_json(file);
}

/* The written config runs (two short steps of a small batch) with exit 0. */
static void runs(const char *name) {
  char file[400], dir[400];
  snprintf(file, sizeof file, "%s/%s-init.json", g_tmp, name);
  snprintf(dir, sizeof dir, "%s/run-%s", g_tmp, name);
  result *r = run_pb(ARGS("run", file, "-q", "-o", dir, "--device", "emulated", "-s", "run.steps=2", "-s",
                          "run.warmup_steps=1", "-s", "stages.batch.size=2", "-s", "device.step_ms=1"));
  if (r->status != 0) fail_msg("run %s: exit %d: %s", file, r->status, r->err);
}

static void test_jpeg_folder_with_strangers(void **state) {
  const char *dir = gen_dataset(
      "photos", "'format':'jpeg','generate':{'num_files':12,'image':{'width':64,'height':48}}", k_jpeg_stages);
  e2e_sh("printf 'read me' > '%s/README.txt' && printf '\\211PNG\\r\\n\\032\\nxxxxxxxx' > '%s/n01.JPEG'", dir, dir);
  e2e_sh("cp '%s/tests/fixtures/cmyk.jpg' '%s/cmyk.jpg'", PB_SOURCE_DIR, dir); /* Pillow's CMYK JPEG */
  result *r;
  cJSON *cfg = init_ok(dir, "photos", NULL, &r);
  assert_string_equal(str(cfg, "dataset.format"), "jpeg");
  assert_null(at(cfg, "dataset.generate")); /* shapes and plan from the files, not a leftover generate */
  assert_string_equal(str(cfg, "stages.1.type"), "decode");
  assert_non_null(strstr(r->out, "jpeg      14 files"));
  assert_non_null(strstr(r->out, "; CMYK 1 (converted to RGB)"));
  assert_non_null(strstr(r->out, "other     1 file of no format pipebench reads, e.g. "));
  assert_non_null(strstr(r->out, "README.txt"));
  assert_non_null(strstr(r->out, "images    64x48 median"));
  assert_non_null(strstr(r->out, "n01.JPEG: a PNG"));
  assert_non_null(strstr(r->out, "(left out by their extension)"));
  assert_null(at(cfg, "dataset.extensions")); /* every JPEG has a JPEG extension */
  runs("photos");
  /* the run leaves the README out (counted, said once), and reads the PNG named .JPEG as an error */
  char file[400], dir2[400];
  snprintf(file, sizeof file, "%s/photos-init.json", g_tmp);
  snprintf(dir2, sizeof dir2, "%s/run-photos-loud", g_tmp);
  r = run_pb(ARGS("run", file, "-o", dir2, "--device", "emulated", "-s", "run.steps=2", "-s", "run.warmup_steps=1",
                  "-s", "stages.batch.size=2", "-s", "device.step_ms=1", "--no-progress", "--format", "json"));
  if (r->status != 0) fail_msg("run: exit %d: %s", r->status, r->err);
  assert_non_null(strstr(r->err, ": 1 file skipped, not jpeg files by extension (e.g. "));
  assert_non_null(strstr(r->err, "README.txt; dataset.extensions to read them)"));
  cJSON *rep = load_report(dir2);
  assert_int_equal((int)num(rep, "accounting.files_skipped"), 1);
  /* fio's figures for the read stage (0 when the window read nothing: 12 files fit the shuffle buffer) */
  double mbps = num(rep, "throughput.storage_bytes_per_s"), iops = num(rep, "throughput.read_ops_per_s");
  assert_double_cmp(mbps, >=, 0);
  assert_double_cmp(iops, >=, 0);
  if (iops > 0) assert_double_cmp(mbps / iops, <, 100e3); /* these JPEGs are a few KB: one read each */
  /* the PNG fails every epoch, and is one of the first errors once (it filled the list); the CMYK file is none */
  assert_int_cmp((int64_t)num(rep, "accounting.errors"), >=, 2);
  assert_int_equal(cJSON_GetArraySize(at(rep, "accounting.first_errors")), 1);
  assert_accounting_balances(rep);
}

/* JPEGs without an extension get dataset.extensions naming what the folder holds; the run reads them all. */
static void test_jpegs_without_extension(void **state) {
  const char *dir =
      gen_dataset("bare", "'format':'jpeg','generate':{'num_files':6,'image':{'width':32,'height':32}}", k_jpeg_stages);
  e2e_sh("cd '%s' && mv img-00000000.jpg photo0 && mv img-00000001.jpg photo1", dir);
  cJSON *cfg = init_ok(dir, "bare", NULL, NULL);
  cJSON *exts = at(cfg, "dataset.extensions");
  assert_int_equal(cJSON_GetArraySize(exts), 2);
  assert_string_equal(cJSON_GetArrayItem(exts, 0)->valuestring, "jpg"); /* in listing order: img-*.jpg first */
  assert_string_equal(cJSON_GetArrayItem(exts, 1)->valuestring, "");
  runs("bare");
  /* with the format's own extensions, the two are left out; with none left, the run is refused */
  const char *only = write_config("only-readme",
                                  "{'dataset':{'path':'%s/notes2','format':'jpeg'},'stages':[{'type':'read'},"
                                  "{'type':'decode'},{'type':'batch','size':2}],'device':{'kind':'emulated'}}",
                                  g_tmp);
  e2e_sh("mkdir -p '%s/notes2' && printf x > '%s/notes2/README.txt'", g_tmp, g_tmp);
  assert_one_error_line(run_pb(ARGS("run", only, "-q")), 2,
                        "none of its 1 files has the extension of dataset.format jpeg (.jpg, .jpeg or .jpe), e.g. ");
  const char *bad = write_config("bad-ext",
                                 "{'dataset':{'path':'%s','format':'jpeg','extensions':['.jpg']},"
                                 "'stages':[{'type':'read'},{'type':'decode'},{'type':'batch','size':2}]}",
                                 dir);
  assert_one_error_line(run_pb(ARGS("validate", bad)), 2, "dataset.extensions[0]");
}

static void test_tfrecord_with_jpeg_payload(void **state) {
  const char *dir = gen_dataset("shards",
                                "'format':'tfrecord','payload':'jpeg','feature':'image/encoded',"
                                "'generate':{'num_files':2,'samples_per_file':6,'image':{'width':40,'height':30}}",
                                k_jpeg_stages);
  result *r;
  cJSON *cfg = init_ok(dir, "shards", NULL, &r);
  assert_string_equal(str(cfg, "dataset.format"), "tfrecord");
  assert_string_equal(str(cfg, "dataset.payload"), "jpeg");
  assert_string_equal(str(cfg, "dataset.feature"), "image/encoded");
  assert_string_equal(str(cfg, "stages.1.type"), "decode"); /* resnet's pipeline */
  assert_non_null(strstr(r->out, "records   6 in the first file"));
  assert_non_null(strstr(r->out, "image/encoded (bytes, JPEG)"));
  runs("shards");
}

static void test_tfrecord_raw_and_npy(void **state) {
  const char *dir = gen_dataset("tokens",
                                "'format':'tfrecord','payload':'raw','feature':'input_ids',"
                                "'generate':{'num_files':2,'samples_per_file':20,'record_bytes':512}",
                                k_raw_stages);
  cJSON *cfg = init_ok(dir, "tokens", NULL, NULL);
  assert_string_equal(str(cfg, "dataset.payload"), "raw");
  assert_string_equal(str(cfg, "dataset.feature"), "input_ids");
  assert_string_equal(str(cfg, "stages.1.type"), "shuffle"); /* bert's: small samples */
  runs("tokens");
  dir = gen_dataset("arrays", "'format':'npy','generate':{'num_files':6,'record_bytes':4096}", k_raw_stages);
  result *r;
  cfg = init_ok(dir, "arrays", NULL, &r);
  assert_string_equal(str(cfg, "dataset.format"), "npy");
  assert_string_equal(str(cfg, "stages.1.type"), "batch"); /* unet3d's: read-bound */
  assert_non_null(strstr(r->out, "arrays    dtype "));
  runs("arrays");
  cfg = init_ok(dir, "arrays-bert", "bert", NULL); /* --preset wins over the guess */
  assert_string_equal(str(cfg, "stages.1.type"), "shuffle");
}

static void test_bad_uses(void **state) {
  assert_one_error_line(run_pb(ARGS("init")), 2, "no data (expected pipebench init --data DIR)");
  assert_one_error_line(run_pb(ARGS("init", "--data", "/nonexistent/data")), 2, "/nonexistent/data");
  e2e_sh("mkdir -p '%s/notes' && printf x > '%s/notes/a.txt'", g_tmp, g_tmp);
  static char notes[400];
  snprintf(notes, sizeof notes, "%s/notes", g_tmp);
  assert_one_error_line(run_pb(ARGS("init", notes)), 2, "no JPEG, TFRecord, npy or npz files among its 1 files");
  assert_one_error_line(run_pb(ARGS("init", notes, "--preset", "resnt")), 2, "unknown preset \"resnt\"");
  assert_one_error_line(run_pb(ARGS("init", notes, "--device", "gpu")), 2, "init: option \"--device\" does not apply");
  const char *dir = gen_dataset("again", "'format':'npy','generate':{'num_files':2,'record_bytes':64}", k_raw_stages);
  init_ok(dir, "again", NULL, NULL);
  static char file[400];
  snprintf(file, sizeof file, "%s/again-init.json", g_tmp);
  assert_one_error_line(run_pb(ARGS("init", dir, "-o", file)), 2, "exists (expected a new file, or --force");
  result *r = run_pb(ARGS("init", dir, "-o", file, "--force", "-q"));
  if (r->status != 0) fail_msg("init --force: exit %d: %s", r->status, r->err);
  assert_string_equal(r->out, "");
}

static int setup(void **state) { return e2e_make_tmp("pipebench-e2e-init"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_jpeg_folder_with_strangers, free_reports),
      cmocka_unit_test_teardown(test_jpegs_without_extension, free_reports),
      cmocka_unit_test_teardown(test_tfrecord_with_jpeg_payload, free_reports),
      cmocka_unit_test_teardown(test_tfrecord_raw_and_npy, free_reports),
      cmocka_unit_test_teardown(test_bad_uses, free_reports),
  };
  return cmocka_run_group_tests(tests, setup, remove_tmp);
}

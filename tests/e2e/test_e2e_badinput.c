/* The bad-input suite (issue 9): every kind of wrong input a user can hand pipebench gets the contract's
 * exit code and one line on stderr naming the file (and JSON path or offset) and what was wrong; with
 * run.on_error skip, bad samples are counted and listed and the run completes with balanced accounting.
 *
 *   1. config: malformed JSON, text that is not UTF-8, every key of a maximal config with a wrong type,
 *      every number out of range, an unknown key in every object, rates of 1e-300 and a crop ratio
 *      that leaves no pixels (both once passed and then misbehaved at run time)         exit 2
 *   2. dataset.path: missing, empty, no files, glob without match, @list problems,
 *      a symlink cycle                                                                exit 2
 *   3. bad samples, each under on_error fail (exit 1, one line naming the file) and skip (exit 0, counted
 *      and listed): zero-length, unreadable, dangling/looping links, truncated and corrupt JPEGs, a header
 *      claiming 65500x65500, TFRecords with bad CRCs and lengths past the end, npy headers that lie about
 *      their size, broken npz archives
 *   4. outputs: --out that is not a directory (/dev/full), a read-only directory, a full file system,
 *      stdout on /dev/full                                                            exit 1
 * Files deleted during a run: test_e2e_data.c (test_file_vanishes_mid_run). */
#define _GNU_SOURCE /* memmem */
#include "e2e_util.h"

#include <sys/mount.h>

static int make_tmp(void **state);

/* ---------- helpers ---------- */

/* <dir>/<name> (one static buffer: the next call overwrites it). */
static const char *in_dir(const char *dir, const char *name) {
  static char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void write_bytes_at(const char *path, long offset, const void *bytes, size_t n) {
  int fd = open(path, O_WRONLY);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, bytes, n, offset), (ssize_t)n);
  close(fd);
}

static void read_bytes_at(const char *path, long offset, void *bytes, size_t n) {
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  assert_int_equal(pread(fd, bytes, n, offset), (ssize_t)n);
  close(fd);
}

/* Masked CRC32C as TFRecord frames it (the test makes a length that passes its CRC but points past the
 * end of the file). */
static uint32_t crc32c(const uint8_t *p, size_t n) {
  uint32_t c = ~0u;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
  }
  return ~c;
}
static uint32_t masked_crc(const uint8_t *p, size_t n) {
  uint32_t c = crc32c(p, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

/* argv prefix that drops the capability to read what permissions forbid, when the suite runs as root (as
 * CI may): util-linux setpriv, always on Debian. */
static const char *const *unprivileged(void) {
  static const char *const as_root[] = {"/usr/bin/setpriv", "--bounding-set=-dac_override,-dac_read_search", NULL};
  static const char *const as_user[] = {NULL};
  return geteuid() == 0 ? as_root : as_user;
}

/* ---------- the datasets: generated once, copied per case ---------- */

static const char *k_jpeg_cfg, *k_tfr_cfg, *k_npy_cfg, *k_npz_cfg;

static const char *dataset_config(const char *name, const char *fmt, const char *extra_stages) {
  return write_config(name,
                      "{'name':'%s','seed':3,'dataset':{'path':'%s/data-%s','format':'%s'%s,"
                      "  'generate':{'num_files':6,'samples_per_file':%d%s}},"
                      "'stages':[{'type':'read','threads':2}%s,{'type':'batch','size':2,'drop_remainder':false}],"
                      "'device':{'kind':'emulated','step_ms':0},'run':{'epochs':1,'warmup_steps':0,'on_error':'skip'}}",
                      name, g_tmp, name, fmt, strcmp(fmt, "tfrecord") == 0 ? ",'payload':'raw'" : "",
                      strcmp(fmt, "jpeg") == 0 ? 1 : 4,
                      strcmp(fmt, "jpeg") == 0 ? ",'image':{'width':64,'height':48,'quality':90}" : ",'record_bytes':600",
                      extra_stages);
}

static int setup(void **state) {
  if (make_tmp(state)) return -1;
  k_jpeg_cfg = strdup(dataset_config("jpeg", "jpeg", ",{'type':'decode'},{'type':'map','ops':[{'op':'resize','size':32},{'op':'center_crop','size':32}]}"));
  k_tfr_cfg = strdup(dataset_config("tfr", "tfrecord", ""));
  k_npy_cfg = strdup(dataset_config("npy", "npy", ""));
  k_npz_cfg = strdup(dataset_config("npz", "npz", ""));
  const char *cfgs[] = {k_jpeg_cfg, k_tfr_cfg, k_npy_cfg, k_npz_cfg};
  for (int i = 0; i < 4; i++) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' gen --config '%s' --quiet", PB_BIN, cfgs[i]);
    if (system(cmd) != 0) return -1;
  }
  return 0;
}

static int teardown(void **state) {
  umount2(tmp_path("tiny-fs"), MNT_DETACH); /* when a failed test left it mounted (else: nothing, EINVAL) */
  free((void *)k_jpeg_cfg);
  free((void *)k_tfr_cfg);
  free((void *)k_npy_cfg);
  free((void *)k_npz_cfg);
  return remove_tmp(state);
}

/* A fresh copy of dataset `name` (jpeg, tfr, npy, npz) at <tmp>/case-<tag>; returns its path. */
static const char *copy_dataset(const char *name, const char *tag) {
  static char dir[400];
  snprintf(dir, sizeof dir, "%s/case-%s", g_tmp, tag);
  e2e_sh("rm -rf '%s' && cp -r '%s/data-%s' '%s'", dir, g_tmp, name, dir);
  return dir;
}

/* ---------- 1. config ---------- */

/* A config that uses every key of the schema (every stage type, every op, every device and run key; a
 * tfrecord dataset, the one format that takes feature and payload). */
static const char *maximal_config(void) {
  return write_config(
      "maximal",
      "{'name':'max','seed':7,'dataset':{'path':'%s/data-tfrecord','format':'tfrecord','feature':'image/encoded','payload':'jpeg',"
      "  'generate':{'num_files':16,'samples_per_file':1,'image':{'width':64,'height':48,'quality':90},"
      "              'record_bytes':100,'record_bytes_stdev':10}},"
      "'stages':[{'name':'read','type':'read','threads':2,'block_bytes':65536,'direct':false,'latency_us':10,"
      "           'bandwidth_mb_per_s':1000},"
      "  {'name':'decode','type':'decode','threads':2,'scale':'auto','max_pixels':1000000,'fused_crop':false},"
      "  {'name':'aug','type':'map','threads':2,'ops':["
      "     {'op':'random_resized_crop','size':32,'scale':[0.08,1],'ratio':[0.75,1.3333]},{'op':'resize','size':32},"
      "     {'op':'center_crop','size':24},{'op':'flip','p':0.5},{'op':'spin','us':1},{'op':'sleep','us':1},"
      "     {'op':'normalize','mean':[0.4,0.4,0.4],'std':[0.2,0.2,0.2],'dtype':'float32','on_device':false},"
      "     {'op':'to_chw'}]},"
      "  {'name':'cache','type':'cache'},{'name':'shuffle','type':'shuffle','buffer':16},"
      "  {'name':'batch','type':'batch','size':4,'drop_remainder':true},{'name':'prefetch','type':'prefetch','depth':2},"
      "  {'name':'h2d','type':'h2d','pinned':true,'streams':2}],"
      "'device':{'kind':'emulated','count':1,'step_ms':{'dist':'normal','mean':2,'stdev':0.5},'h2d_gb_per_s':10,"
      "  'ids':[0],'allreduce':{'mode':'model','bytes':1000000,'gb_per_s':10}},"
      "'run':{'steps':10,'warmup_steps':2,'on_error':'skip','max_errors':5},'limits':{'max_memory_mb':4096}}",
      g_tmp);
}

/* `pipebench validate` on a config text: exit 2 and one line naming `path` expected, or (when ok_allowed)
 * exit 0.  Returns the exit status. */
static int validate_text(const char *json, const char *path, bool ok_allowed, const char *what) {
  const char *cfg = write_config_text("case", json);
  result *r = run_pb(ARGS("validate", "--config", cfg));
  if (r->status == 0 && ok_allowed) return 0;
  if (r->status != 2) fail_msg("%s at %s: exit %d, expected 2; stderr: %s", what, path, r->status, r->err);
  assert_one_error_line(r, 2, NULL);
  if (!strstr(r->err, cfg)) fail_msg("%s at %s: the line does not name the file: %s", what, path, r->err);
  char named[300]; /* an element of a [lo, hi] pair may be named by its array */
  snprintf(named, sizeof named, "%s", path);
  if (path[0] && !strstr(r->err, named) && named[strlen(named) - 1] == ']') *strrchr(named, '[') = '\0';
  if (path[0] && !strstr(r->err, named)) fail_msg("%s at %s: the line does not name the path: %s", what, path, r->err);
  if (!strstr(r->err, "expected")) fail_msg("%s at %s: the line does not say what was expected: %s", what, path, r->err);
  return 2;
}

typedef enum { SWEEP_TYPE, SWEEP_RANGE, SWEEP_UNKNOWN } sweep_kind;

typedef struct sweep {
  cJSON *root;
  sweep_kind kind;
  int cases, rejected;
} sweep;

/* Replaces the node's value in place with `bad` (a parsed value), runs validate on the whole document, puts
 * the original back.  The swap keeps the node's place (next/prev/key) in the tree. */
static int try_value(sweep *s, cJSON *node, const char *bad_json, const char *path, bool ok_allowed, const char *what) {
  cJSON *bad = cJSON_Parse(bad_json);
  assert_non_null(bad);
  cJSON saved = *node;
  node->type = bad->type;
  node->valuestring = bad->valuestring;
  node->valuedouble = bad->valuedouble;
  node->valueint = bad->valueint;
  node->child = bad->child;
  char *text = cJSON_PrintUnformatted(s->root);
  *node = saved;
  cJSON_Delete(bad);
  assert_non_null(text);
  int rc = validate_text(text, path, ok_allowed, what);
  free(text);
  s->cases++;
  if (rc) s->rejected++;
  return rc;
}

static void sweep_node(sweep *s, cJSON *node, const char *path) {
  char sub[300];
  if (cJSON_IsObject(node)) {
    if (s->kind == SWEEP_UNKNOWN) { /* an unknown key in this object */
      cJSON *extra = cJSON_CreateNumber(1);
      cJSON_AddItemToObject(node, "bogus_key", extra);
      char *text = cJSON_PrintUnformatted(s->root);
      cJSON_DetachItemViaPointer(node, extra);
      cJSON_Delete(extra);
      snprintf(sub, sizeof sub, "%s%sbogus_key", path, path[0] ? "." : "");
      validate_text(text, sub, false, "unknown key");
      free(text);
      s->cases++, s->rejected++;
    }
    if (s->kind == SWEEP_TYPE && path[0]) try_value(s, node, "\"x\"", path, false, "an object replaced by a string");
    cJSON *c;
    cJSON_ArrayForEach(c, node) {
      snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", c->string);
      sweep_node(s, c, sub);
    }
    return;
  }
  if (cJSON_IsArray(node)) {
    if (s->kind == SWEEP_TYPE) try_value(s, node, "\"x\"", path, false, "an array replaced by a string");
    int i = 0;
    cJSON *c;
    cJSON_ArrayForEach(c, node) {
      snprintf(sub, sizeof sub, "%s[%d]", path, i++);
      sweep_node(s, c, sub);
    }
    return;
  }
  if (s->kind == SWEEP_TYPE) {
    const char *bad = cJSON_IsString(node) ? "7" : cJSON_IsBool(node) ? "\"yes\"" : "\"x\"";
    try_value(s, node, bad, path, false, "wrong type");
    if (cJSON_IsString(node) && strcmp(path, "name") != 0 && !strstr(path, ".name") && !strstr(path, "path") &&
        !strstr(path, "feature")) /* free-form strings aside, every string is one of a list */
      try_value(s, node, "\"bogus\"", path, false, "a value not in the list");
  }
  if (s->kind == SWEEP_RANGE && cJSON_IsNumber(node)) {
    /* Every number in the schema but normalize's mean has a lower bound of 0 or more; huge and fractional
     * values are either accepted or refused with the same one line; infinity never passes. */
    bool signed_ok = strstr(path, ".mean[") != NULL; /* normalize's mean may be negative */
    try_value(s, node, "-1e12", path, signed_ok, "a negative number");
    try_value(s, node, "1e15", path, true, "a huge number");
    try_value(s, node, "0.5", path, true, "a fraction");
    try_value(s, node, "1e400", path, false, "infinity");
  }
}

static cJSON *resolved_maximal(void) {
  result *r = run_pb(ARGS("validate", "--config", maximal_config()));
  if (r->status != 0) fail_msg("the maximal config is not valid: %s", r->err);
  return keep_json(cJSON_Parse(r->out));
}

static void run_sweep(sweep_kind kind, int min_cases) {
  sweep s = {.root = resolved_maximal(), .kind = kind};
  assert_non_null(s.root);
  sweep_node(&s, s.root, "");
  print_message("%d cases, %d refused\n", s.cases, s.rejected);
  assert_true(s.cases >= min_cases);
}

static void test_every_key_wrong_type(void **state) { run_sweep(SWEEP_TYPE, 100); }
static void test_every_number_out_of_range(void **state) { run_sweep(SWEEP_RANGE, 150); }
static void test_unknown_key_in_every_object(void **state) { run_sweep(SWEEP_UNKNOWN, 20); }

/* Issue 32: a rate of 1e-300 passed validation and overflowed a float-to-integer cast at run time
 * (undefined behaviour: the copy took 0 ms, a capped read slept for centuries), and a crop ratio of 1e-9
 * passed validation and then failed every sample.  `run` now refuses each before starting: exit 2, one
 * line naming the key and the range. */
static void test_tiny_rates_and_ratio_refused(void **state) {
  static const struct {
    const char *set, *what;
  } cases[] = {
      {"device.h2d_gb_per_s=1e-300",
       "device.h2d_gb_per_s: 1e-300 is out of range (expected a number from 0.001 to 10000)"},
      {"stages.read.bandwidth_mb_per_s=1e-300",
       "stages[0].bandwidth_mb_per_s: 1e-300 is out of range (expected 0 (off) or a number from 0.001 to 1000000000)"},
      {"stages.map.ops=[{\"op\": \"random_resized_crop\", \"size\": 16, \"ratio\": [1e-9, 1e-9]}]",
       "stages[2].ops[0].ratio[0]: 1e-09 is out of range (expected a number from 0.01 to 100)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    result *r = run_pb(ARGS("run", "--config", k_jpeg_cfg, "--quiet", "--out", out_dir("tiny"), "--set", cases[i].set));
    assert_one_error_line(r, 2, cases[i].what);
    assert_non_null(strstr(r->err, k_jpeg_cfg));
  }
}

static void test_malformed_json(void **state) {
  static const struct {
    const char *text, *what;
  } cases[] = {
      {"", "line 1, column 1: invalid JSON"},
      {"   \n  ", "line 2, column 3: invalid JSON"},
      {"{\"name\":\"x\",", "line 1, column 13: invalid JSON"},
      {"{\"name\":\"x\",}", "invalid JSON"},
      {"{\"name\":\"x\"\n// a comment\n}", "line 2, column 1: invalid JSON"},
      {"{'name':'x'}", "invalid JSON"},
      {"[1,2]", "(root)"},
      {"42", "(root)"},
      {"{\"name\":\"x\",\"name\":\"y\"}", "duplicate key"},
      {"{\"name\":\"caf\xe9\"}", "not UTF-8"},
      {"{\"name\":\"x\"} trailing", "invalid JSON"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *cfg = write_config_text("malformed", cases[i].text);
    result *r = run_pb(ARGS("run", "--config", cfg, "--quiet"));
    assert_one_error_line(r, 2, cases[i].what);
    assert_non_null(strstr(r->err, cfg));
  }
  /* nesting deeper than the parser allows: refused, not a stack overflow */
  static char deep[20002];
  memset(deep, '[', 20000);
  deep[20000] = '\0';
  result *r = run_pb(ARGS("validate", "--config", write_config_text("deep", deep)));
  assert_one_error_line(r, 2, "column 1001: nested more than 1000 levels deep");
  /* a NUL byte inside the file */
  const char *nul = tmp_path("nul.json");
  FILE *f = fopen(nul, "wb");
  fwrite("{\"name\":\"a\0b\"}", 1, 14, f);
  fclose(f);
  assert_one_error_line(run_pb(ARGS("validate", "--config", nul)), 2, "line 1, column 11");
  /* the config file itself: missing, a directory */
  assert_one_error_line(run_pb(ARGS("validate", "--config", tmp_path("no-such.json"))), 2, "cannot read");
  assert_one_error_line(run_pb(ARGS("validate", "--config", g_tmp)), 2, "cannot read");
}

/* ---------- 2. dataset.path ---------- */

/* A run of the jpeg pipeline on `path` (no generate section: nothing is made for a missing path). */
static result *run_on_path(const char *path) {
  const char *cfg = write_config(
      "onpath",
      "{'name':'onpath','dataset':{'path':'%s','format':'jpeg'},"
      "'stages':[{'type':'read'},{'type':'decode'},{'type':'batch','size':2}],"
      "'device':{'kind':'emulated','step_ms':0},'run':{'epochs':1,'warmup_steps':0}}",
      path);
  return run_pb(ARGS("run", "--config", cfg, "--quiet", "--out", out_dir("onpath")));
}

static void test_dataset_path_problems(void **state) {
  assert_one_error_line(run_on_path(tmp_path("no/such/dir")), 2, "dataset.path: ");
  assert_one_error_line(run_on_path(""), 2, "dataset.path");
  e2e_sh("mkdir -p '%s/empty-dir/.hidden-only' && touch '%s/empty-dir/.hidden'", g_tmp, g_tmp);
  assert_one_error_line(run_on_path(tmp_path("empty-dir")), 2, "no files found");
  assert_one_error_line(run_on_path(tmp_path("empty-dir/*.jpg")), 2, "no files match");
  const char *list = tmp_path("list.txt");
  FILE *f = fopen(list, "w");
  fprintf(f, "# a comment\n%s/data-jpeg/img-00000000.jpg\n%s/gone.jpg\n", g_tmp, g_tmp);
  fclose(f);
  char at[500];
  snprintf(at, sizeof at, "@%s", list);
  result *r = run_on_path(at);
  assert_one_error_line(r, 2, "line 3");
  assert_non_null(strstr(r->err, "gone.jpg"));
  f = fopen(list, "w");
  fclose(f);
  assert_one_error_line(run_on_path(at), 2, "no files found");
  snprintf(at, sizeof at, "@%s", tmp_path("no-list.txt"));
  assert_one_error_line(run_on_path(at), 2, "cannot read the file list");
  /* a symlink cycle: refused, naming the link and where it leads */
  const char *dir = copy_dataset("jpeg", "cycle");
  e2e_sh("mkdir '%s/sub' && ln -s .. '%s/sub/up'", dir, dir);
  r = run_on_path(dir);
  assert_one_error_line(r, 2, "symlink loop");
  assert_non_null(strstr(r->err, "sub/up"));
}

/* ---------- 3. bad samples: on_error fail and skip ---------- */

/* Runs `cfg` on `dir` twice.  on_error fail: exit 1 and one line naming `bad_file` and `what`.  skip: exit 0,
 * accounting.errors == errors, first_errors lists bad_file with `what`, the accounting balances. */
static void expect_bad_sample(const char *cfg, const char *dir, const char *bad_file, const char *what, int errors,
                              const char *const *prefix) {
  char set_path[500];
  snprintf(set_path, sizeof set_path, "dataset.path=%s", dir);
  const char *out = out_dir("bad");
  result *r = run_pb_with(prefix, ARGS("run", "--config", cfg, "--quiet", "--out", out, "--set", set_path, "--set",
                                           "run.on_error=fail"));
  assert_one_error_line(r, 1, what);
  char head[700];
  snprintf(head, sizeof head, "pipebench: %s: ", bad_file);
  if (strncmp(r->err, head, strlen(head)) != 0) fail_msg("the line does not start with the file: %s", r->err);
  if (strstr(r->err + strlen(head), bad_file)) fail_msg("the file is named twice: %s", r->err);
  r = run_pb_with(prefix, ARGS("run", "--config", cfg, "--quiet", "--out", out, "--set", set_path));
  if (r->status != 0) fail_msg("on_error skip: exit %d: %s", r->status, r->err);
  cJSON *rep = load_report(out);
  assert_accounting_balances(rep);
  expect_count(rep, "errors", errors);
  cJSON *e = cJSON_GetArrayItem(at(rep, "accounting.first_errors"), 0);
  assert_non_null(e);
  assert_string_equal(str(e, "file"), bad_file);
  if (!strstr(str(e, "message"), what)) fail_msg("first_errors[0].message lacks \"%s\": %s", what, str(e, "message"));
}

static const char *k_no_prefix[] = {NULL};

static void test_bad_jpegs(void **state) {
  static const char *const kinds[] = {"empty", "header", "trunc70", "garbage", "text", "huge"};
  static const char *const what[] = {"empty file", "reading the JPEG header", "Premature end of JPEG file",
                                     "corrupt", "not a JPEG", "65500x65500"};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    const char *dir = copy_dataset("jpeg", kinds[k]);
    const char *f = in_dir(dir, "img-00000000.jpg");
    long n = file_size(f);
    if (k == 0) assert_int_equal(truncate(f, 0), 0);
    if (k == 1) assert_int_equal(truncate(f, 300), 0);
    if (k == 2) assert_int_equal(truncate(f, n * 7 / 10), 0);
    if (k == 3) { /* garbage over the middle of the entropy-coded data */
      uint8_t junk[256];
      for (int i = 0; i < 256; i++) junk[i] = (uint8_t)(i % 7 == 0 ? 0xFF : i * 37);
      write_bytes_at(f, n / 2, junk, sizeof junk);
    }
    if (k == 4) e2e_sh("echo 'not an image' > '%s'", f);
    if (k == 5) { /* the frame header (SOF0..2) claims 65500x65500 */
      uint8_t b[4096];
      long len = n < 4096 ? n : 4096, i = 2;
      read_bytes_at(f, 0, b, (size_t)len);
      while (i + 9 < len && !(b[i] == 0xFF && b[i + 1] >= 0xC0 && b[i + 1] <= 0xC2)) i++;
      assert_true(i + 9 < len);
      uint8_t dims[4] = {0xFF, 0xDC, 0xFF, 0xDC};
      write_bytes_at(f, i + 5, dims, 4);
    }
    expect_bad_sample(k_jpeg_cfg, dir, f, what[k], 1, k_no_prefix);
  }
  /* a file name that is not UTF-8 (Latin-1 \xE9): report.json and trace.json stay valid JSON (UTF-8),
   * the name's invalid bytes written as U+FFFD.  A long one (each of 100 bytes becomes 3) is kept as
   * whole characters within the report's 255 bytes, so analyze reads the trace back */
  const char *dir = copy_dataset("jpeg", "latin1");
  e2e_sh("rm -f '%s'/img-00000000.jpg && : > '%s'/$(printf 'img-\\351t\\351.jpg') && "
     ": > '%s'/$(printf 'img-%%0100d.jpg' 0 | tr 0 '\\351')", dir, dir, dir);
  char set_path[500];
  snprintf(set_path, sizeof set_path, "dataset.path=%s", dir);
  const char *out = out_dir("latin1");
  result *r = run_pb(ARGS("run", "--config", k_jpeg_cfg, "--quiet", "--out", out, "--set", set_path, "--format",
                          "json,trace,html"));
  if (r->status != 0) fail_msg("exit %d: %s", r->status, r->err);
  e2e_sh("iconv -f UTF-8 -t UTF-8 '%s/report.json' > /dev/null && iconv -f UTF-8 -t UTF-8 '%s/trace.json' > /dev/null",
     out, out);
  cJSON *errs = at(load_report(out), "accounting.first_errors");
  bool short_name = false;
  cJSON *e;
  cJSON_ArrayForEach(e, errs) short_name = short_name || strstr(str(e, "file"), "img-\xEF\xBF\xBDt\xEF\xBF\xBD.jpg");
  if (!short_name) fail_msg("no first error names img-?t?.jpg");
  const char *again = out_dir("latin1-analyze");
  r = run_pb(ARGS("analyze", out, "--out", again, "--format", "json", "--quiet"));
  if (r->status != 0) fail_msg("analyze: exit %d: %s", r->status, r->err);
  char *a = cJSON_PrintUnformatted(errs), *b = cJSON_PrintUnformatted(at(load_report(again), "accounting.first_errors"));
  assert_string_equal(a, b);
  free(a);
  free(b);
}

static void test_unreadable_and_broken_links(void **state) {
  const char *dir = copy_dataset("jpeg", "perm");
  const char *f = in_dir(dir, "img-00000000.jpg");
  assert_int_equal(chmod(f, 0), 0);
  expect_bad_sample(k_jpeg_cfg, dir, f, "Permission denied", 1, unprivileged());
  dir = copy_dataset("jpeg", "dangling");
  e2e_sh("ln -s /nonexistent/pb '%s/img-zz-dangling.jpg'", dir);
  expect_bad_sample(k_jpeg_cfg, dir, in_dir(dir, "img-zz-dangling.jpg"), "No such file", 1, k_no_prefix);
  dir = copy_dataset("jpeg", "selflink");
  e2e_sh("ln -s img-zz-self.jpg '%s/img-zz-self.jpg'", dir);
  expect_bad_sample(k_jpeg_cfg, dir, in_dir(dir, "img-zz-self.jpg"), "symbolic links", 1, k_no_prefix);
}

/* Offset of record k in a TFRecord file (8-byte length, 4-byte crc, data, 4-byte crc). */
static long tfrecord_offset(const char *f, int k) {
  long off = 0;
  for (int i = 0; i < k; i++) {
    uint64_t len;
    read_bytes_at(f, off, &len, 8);
    off += 12 + (long)len + 4;
  }
  return off;
}

static void test_bad_tfrecords(void **state) {
  /* 4 records per file.  A bad data CRC loses that record; a bad length CRC, a length past the end or a
   * truncated file loses the rest of the file (one error each: the framing cannot be trusted after it). */
  const char *dir = copy_dataset("tfr", "datacrc");
  const char *f = in_dir(dir, "shard-00000.tfrecord");
  long off = tfrecord_offset(f, 1);
  uint8_t x = 0x5A;
  write_bytes_at(f, off + 12 + 20, &x, 1);
  expect_bad_sample(k_tfr_cfg, dir, f, "data crc mismatch", 1, k_no_prefix);

  dir = copy_dataset("tfr", "lencrc");
  f = in_dir(dir, "shard-00000.tfrecord");
  uint64_t big = 1ull << 40;
  write_bytes_at(f, tfrecord_offset(f, 2), &big, 8);
  expect_bad_sample(k_tfr_cfg, dir, f, "length crc mismatch", 1, k_no_prefix);

  dir = copy_dataset("tfr", "pastend"); /* a length with a valid CRC that points past the end */
  f = in_dir(dir, "shard-00000.tfrecord");
  off = tfrecord_offset(f, 2);
  uint8_t hdr[12];
  uint64_t len = (uint64_t)file_size(f) * 4;
  memcpy(hdr, &len, 8);
  uint32_t crc = masked_crc(hdr, 8);
  memcpy(hdr + 8, &crc, 4);
  write_bytes_at(f, off, hdr, 12);
  expect_bad_sample(k_tfr_cfg, dir, f, "rest of the file", 1, k_no_prefix);

  dir = copy_dataset("tfr", "truncated");
  f = in_dir(dir, "shard-00000.tfrecord");
  assert_int_equal(truncate(f, file_size(f) - 100), 0);
  expect_bad_sample(k_tfr_cfg, dir, f, "truncated record", 1, k_no_prefix);
}

/* Replaces the shape in a .npy header (same length, padded with spaces, as numpy pads). */
static void npy_set_shape(const char *f, const char *from, const char *to) {
  char hdr[129];
  read_bytes_at(f, 0, hdr, 128);
  hdr[128] = '\0';
  char *p = memmem(hdr, 128, from, strlen(from));
  assert_non_null(p);
  char repl[64];
  snprintf(repl, sizeof repl, "%-*s", (int)strlen(from), to);
  assert_int_equal(strlen(repl), strlen(from));
  write_bytes_at(f, p - hdr, repl, strlen(repl));
}

static void test_npy_headers_that_lie(void **state) {
  /* 4 samples of 600 bytes per file: shape (4, 600) */
  const char *dir = copy_dataset("npy", "bigger");
  const char *f = in_dir(dir, "sample-00000000.npy");
  npy_set_shape(f, "(4, 600)", "(4, 900)");
  expect_bad_sample(k_npy_cfg, dir, f, "expected 3600", 1, k_no_prefix);
  dir = copy_dataset("npy", "smaller");
  f = in_dir(dir, "sample-00000000.npy");
  npy_set_shape(f, "(4, 600)", "(4, 60)");
  expect_bad_sample(k_npy_cfg, dir, f, "expected 240", 1, k_no_prefix);
  dir = copy_dataset("npy", "magic");
  f = in_dir(dir, "sample-00000000.npy");
  write_bytes_at(f, 1, "JUNK", 4);
  expect_bad_sample(k_npy_cfg, dir, f, "magic", 1, k_no_prefix);
  dir = copy_dataset("npy", "hdrlen"); /* the header length points past the end of the file */
  f = in_dir(dir, "sample-00000000.npy");
  uint16_t hl = 0xFFF0;
  write_bytes_at(f, 8, &hl, 2);
  expect_bad_sample(k_npy_cfg, dir, f, ".npy", 1, k_no_prefix);
}

/* A Fortran-order array of samples_per_file rows: its samples are not contiguous, so it is an error on
 * that file, never one big sample passed on as if it were one. */
static void test_npy_fortran_order(void **state) {
  const char *dir = copy_dataset("npy", "fortran");
  const char *f = in_dir(dir, "sample-00000000.npy");
  npy_set_shape(f, "'fortran_order': False", "'fortran_order': True");
  expect_bad_sample(k_npy_cfg, dir, f, "Fortran-order", 1, k_no_prefix);
}

/* An empty file of a multi-record format is an error naming it, as an empty JPEG is: before, it yielded
 * nothing and no error, and a dataset of only such files failed with an empty first_errors. */
static void test_empty_record_file(void **state) {
  const char *dir = copy_dataset("tfr", "empty");
  const char *f = in_dir(dir, "shard-00000.tfrecord");
  assert_int_equal(truncate(f, 0), 0);
  expect_bad_sample(k_tfr_cfg, dir, f, "empty file", 1, k_no_prefix);
}

static void test_broken_npz(void **state) {
  const char *dir = copy_dataset("npz", "trunc");
  const char *f = in_dir(dir, "records-00000000.npz");
  if (file_size(f) < 0) f = in_dir(dir, "sample-00000000.npz");
  assert_true(file_size(f) > 0);
  assert_int_equal(truncate(f, file_size(f) / 2), 0);
  expect_bad_sample(k_npz_cfg, dir, f, "npz", 1, k_no_prefix);
}

/* ---------- 4. outputs ---------- */

static void test_outputs_that_cannot_be_written(void **state) {
  const char *cfg = k_npy_cfg;
  assert_one_error_line(run_pb(ARGS("run", "--config", cfg, "--quiet", "--out", "/dev/full")), 1,
                        "/dev/full: cannot create the output directory");
  const char *ro = tmp_path("read-only");
  assert_int_equal(mkdir(ro, 0555), 0);
  result *r = run_pb_with(unprivileged(), ARGS("run", "--config", cfg, "--quiet", "--out", ro));
  assert_one_error_line(r, 1, "Permission denied");
  assert_non_null(strstr(r->err, ro));
  char sub[400];
  snprintf(sub, sizeof sub, "%s/sub", ro);
  assert_one_error_line(run_pb_with(unprivileged(), ARGS("run", "--config", cfg, "--quiet", "--out", sub)), 1,
                        "cannot create the output directory");
  /* stdout that cannot take the report */
  const char *argv[] = {"/bin/sh", "-c", NULL, NULL};
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "'%s' run --config '%s' --quiet --json --out '%s' > /dev/full", PB_BIN, cfg, out_dir("full"));
  argv[2] = cmd;
  r = run_argv(argv, PB_CHILD_TIMEOUT_S, "stdout on /dev/full");
  assert_one_error_line(r, 1, "stdout: write error: No space left on device");
  snprintf(cmd, sizeof cmd, "'%s' validate --config '%s' > /dev/full", PB_BIN, cfg);
  r = run_argv(argv, PB_CHILD_TIMEOUT_S, "validate on /dev/full");
  assert_int_equal(r->status, 1);
  assert_non_null(strstr(r->err, "stdout: write error"));
}

/* A file system that fills up while the outputs are written (a 16 KB tmpfs; needs root to mount). */
static void test_full_file_system(void **state) {
  const char *mnt = tmp_path("tiny-fs");
  assert_int_equal(mkdir(mnt, 0755), 0);
  if (geteuid() != 0 || mount("tmpfs", mnt, "tmpfs", 0, "size=16k") != 0) {
    print_message("skipped: cannot mount a small tmpfs here (not root)\n");
    skip();
  }
  result *r = run_pb(ARGS("run", "--config", k_jpeg_cfg, "--quiet", "--out", mnt));
  int status = r->status;
  char err[sizeof r->err];
  snprintf(err, sizeof err, "%s", r->err);
  umount(mnt);
  if (status != 1) fail_msg("exit %d, expected 1: %s", status, err);
  assert_non_null(strstr(err, "No space left on device"));
  assert_non_null(strstr(err, mnt));
  const char *nl = strchr(err, '\n');
  if (!nl || nl[1] != '\0') fail_msg("expected exactly one line on stderr: %s", err);
}

static int make_tmp(void **state) { return e2e_make_tmp("pipebench-e2e-badinput"); }

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_malformed_json, free_reports),
      cmocka_unit_test_teardown(test_every_key_wrong_type, free_reports),
      cmocka_unit_test_teardown(test_every_number_out_of_range, free_reports),
      cmocka_unit_test_teardown(test_unknown_key_in_every_object, free_reports),
      cmocka_unit_test_teardown(test_tiny_rates_and_ratio_refused, free_reports),
      cmocka_unit_test_teardown(test_dataset_path_problems, free_reports),
      cmocka_unit_test_teardown(test_bad_jpegs, free_reports),
      cmocka_unit_test_teardown(test_unreadable_and_broken_links, free_reports),
      cmocka_unit_test_teardown(test_bad_tfrecords, free_reports),
      cmocka_unit_test_teardown(test_npy_headers_that_lie, free_reports),
      cmocka_unit_test_teardown(test_npy_fortran_order, free_reports),
      cmocka_unit_test_teardown(test_empty_record_file, free_reports),
      cmocka_unit_test_teardown(test_broken_npz, free_reports),
      cmocka_unit_test_teardown(test_outputs_that_cannot_be_written, free_reports),
      cmocka_unit_test_teardown(test_full_file_system, free_reports),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}

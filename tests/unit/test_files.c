/* The dataset file list: directory walk order, hidden entries, symlinks, globs, @lists, errors, and the
 * shuffle (deterministic per seed and epoch, a true permutation) and shard (a partition across ranks). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "files.h"
#include "unit_util.h"

/* ---- a scratch tree ---------------------------------------------------------------------------------- */

static char root[64];

static void make_file(const char *rel, size_t bytes) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  for (size_t i = 0; i < bytes; i++) fputc('x', f);
  fclose(f);
}

static void make_dir(const char *rel) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  assert_int_equal(mkdir(path, 0755), 0);
}

/*  root/b.bin(2) a/10.bin(10) a/2.bin(3) c/d/e.bin(5) .hidden(1) .hdir/x.bin(1) empty/ alink->a
 *  flink->b.bin  lists/   (the cycles and dangling links get their own trees: test_symlink_*) */
static int setup_tree(void **state) {
  snprintf(root, sizeof root, "/tmp/pb_files_XXXXXX");
  if (!mkdtemp(root)) return -1;
  make_dir("a");
  make_dir("c");
  make_dir("c/d");
  make_dir(".hdir");
  make_dir("empty");
  make_dir("lists");
  make_file("b.bin", 2);
  make_file("a/10.bin", 10);
  make_file("a/2.bin", 3);
  make_file("c/d/e.bin", 5);
  make_file(".hidden", 1);
  make_file(".hdir/x.bin", 1);
  char path[512];
  snprintf(path, sizeof path, "%s/alink", root);
  if (symlink("a", path) != 0) return -1;
  snprintf(path, sizeof path, "%s/flink", root);
  if (symlink("b.bin", path) != 0) return -1;
  return 0;
}

static int teardown_tree(void **state) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  return system(cmd) == 0 ? 0 : -1;
}

/* Asserts the list holds exactly `want` (paths relative to root, or absolute when starting with '/'). */
static void expect_files(const pb_file_list *l, const char *const *want, size_t n) {
  char path[512];
  if (l->count != n) {
    for (size_t i = 0; i < l->count; i++) print_message("  got %s\n", l->files[i].path);
    fail_msg("%zu files, expected %zu", l->count, n);
  }
  for (size_t i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s", root, want[i]);
    assert_string_equal(l->files[i].path, want[i][0] == '/' ? want[i] : path);
  }
}

static void write_list(const char *rel, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
}

/* ---- listing ---------------------------------------------------------------------------------------------- */

static void test_walk_sorted_recursive(void **state) {
  pb_file_list l;
  pb_err err;
  assert_int_equal(pb_files_list(root, &l, &err), 0);
  /* strcmp order; hidden skipped; alink/ (a link to a/, walked already) adds nothing; flink (a file
   * symlink) kept */
  static const char *const want[] = {"a/10.bin", "a/2.bin", "b.bin", "c/d/e.bin", "flink"};
  expect_files(&l, want, PB_ARRAY_LEN(want));
  assert_int_equal(l.files[0].bytes, 10);
  assert_int_equal(l.files[1].bytes, 3);
  assert_int_equal(l.files[4].bytes, 2);
  assert_int_equal(l.total_bytes, 10 + 3 + 2 + 5 + 2);
  for (size_t i = 0; i < l.count; i++) assert_int_equal(l.files[i].index, i);
  pb_file_list_free(&l);
  assert_int_equal(l.count, 0);
}

/* A directory symlink back to an ancestor is a cycle: refused, naming the link and where it leads. */
static void test_symlink_cycle_refused(void **state) {
  make_dir("cyc");
  make_dir("cyc/sub");
  make_file("cyc/sub/x.bin", 1);
  char path[512], dir[512];
  snprintf(path, sizeof path, "%s/cyc/sub/up", root);
  assert_int_equal(symlink("..", path), 0);
  snprintf(dir, sizeof dir, "%s/cyc", root);
  pb_file_list l;
  pb_err err;
  assert_true(pb_files_list(dir, &l, &err) < 0);
  assert_non_null(strstr(err.msg, "cyc/sub/up: symlink loop"));
  assert_non_null(strstr(err.msg, "leads back to"));
  snprintf(path, sizeof path, "%s/cyc/self", root); /* a link to the directory itself */
  assert_int_equal(unlink(strcat(strcpy(dir, root), "/cyc/sub/up")), 0);
  assert_int_equal(symlink(".", path), 0);
  snprintf(dir, sizeof dir, "%s/cyc", root);
  assert_true(pb_files_list(dir, &l, &err) < 0);
  assert_non_null(strstr(err.msg, "cyc/self: symlink loop"));
}

/* A symlinked directory outside the walked tree is followed (datasets made of links to shards). */
static void test_symlink_to_outside_followed(void **state) {
  make_dir("outer");
  make_dir("outer/in");
  make_file("c/d/e2.bin", 7);
  char path[512], dir[512];
  snprintf(path, sizeof path, "%s/outer/in/shard", root);
  snprintf(dir, sizeof dir, "%s/c/d", root);
  assert_int_equal(symlink(dir, path), 0);
  snprintf(path, sizeof path, "%s/outer/in/shard-again", root); /* a second link to it: walked once */
  assert_int_equal(symlink(dir, path), 0);
  snprintf(dir, sizeof dir, "%s/outer", root);
  pb_file_list l;
  pb_err err;
  assert_int_equal(pb_files_list(dir, &l, &err), 0);
  static const char *const want[] = {"outer/in/shard/e.bin", "outer/in/shard/e2.bin"};
  expect_files(&l, want, PB_ARRAY_LEN(want));
  pb_file_list_free(&l);
  snprintf(path, sizeof path, "%s/c/d/e2.bin", root);
  assert_int_equal(unlink(path), 0);
}

/* Dangling links and links that loop on themselves are listed (0 bytes): the read stage reports them as
 * errors on their own path, nothing disappears silently. */
static void test_symlink_dangling_listed(void **state) {
  make_dir("dang");
  make_file("dang/a.bin", 4);
  char path[512], dir[512];
  snprintf(path, sizeof path, "%s/dang/gone.bin", root);
  assert_int_equal(symlink("/nonexistent/pb-test", path), 0);
  snprintf(path, sizeof path, "%s/dang/me.bin", root);
  assert_int_equal(symlink("me.bin", path), 0);
  snprintf(dir, sizeof dir, "%s/dang", root);
  pb_file_list l;
  pb_err err;
  assert_int_equal(pb_files_list(dir, &l, &err), 0);
  static const char *const want[] = {"dang/a.bin", "dang/gone.bin", "dang/me.bin"};
  expect_files(&l, want, PB_ARRAY_LEN(want));
  assert_int_equal(l.files[1].bytes, 0);
  pb_file_list_free(&l);
}

/* A path longer than PATH_MAX cannot be stat'ed (ENAMETOOLONG): it is listed (0 bytes) for the read stage
 * to report, not dropped as if it had been deleted since readdir. */
static void test_path_too_long_listed(void **state) {
  make_dir("deep");
  make_file("deep/a.bin", 4);
  char dir[512], name[201];
  snprintf(dir, sizeof dir, "%s/deep", root);
  memset(name, 'd', 200);
  name[200] = '\0';
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  assert_true(fd >= 0);
  for (int depth = 0; depth < 22; depth++) { /* 22 x 201 bytes: past PATH_MAX (4096) */
    assert_int_equal(mkdirat(fd, name, 0755), 0);
    int next = openat(fd, name, O_RDONLY | O_DIRECTORY);
    close(fd);
    assert_true(next >= 0);
    fd = next;
  }
  int f = openat(fd, "b.bin", O_WRONLY | O_CREAT, 0644);
  assert_true(f >= 0);
  close(f);
  close(fd);
  pb_file_list l;
  pb_err err;
  assert_int_equal(pb_files_list(dir, &l, &err), 0);
  assert_int_equal(l.count, 2);
  assert_non_null(strstr(l.files[0].path, "deep/a.bin"));
  assert_true(strlen(l.files[1].path) >= PATH_MAX); /* the entry stat could not reach */
  assert_int_equal(l.files[1].bytes, 0);
  pb_file_list_free(&l);
}

static void test_trailing_slash_and_relative_path(void **state) {
  pb_file_list l;
  pb_err err;
  char dir[600], cwd[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/c/", root);
  assert_int_equal(pb_files_list(dir, &l, &err), 0);
  assert_int_equal(l.count, 1);
  assert_string_equal(strrchr(l.files[0].path, 'c'), "c/d/e.bin"); /* no doubled slash */
  assert_null(strstr(l.files[0].path, "//"));
  pb_file_list_free(&l);
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(root), 0); /* a relative dataset.path is relative to the current directory */
  int rc = pb_files_list("a", &l, &err);
  assert_int_equal(chdir(cwd), 0);
  assert_int_equal(rc, 0);
  assert_int_equal(l.count, 2);
  assert_string_equal(l.files[0].path, "a/10.bin");
  assert_string_equal(l.files[1].path, "a/2.bin");
  pb_file_list_free(&l);
}

static void test_glob(void **state) {
  pb_file_list l;
  pb_err err;
  char pattern[600];
  snprintf(pattern, sizeof pattern, "%s/a/*.bin", root);
  assert_int_equal(pb_files_list(pattern, &l, &err), 0);
  expect_files(&l, (const char *const[]){"a/10.bin", "a/2.bin"}, 2);
  pb_file_list_free(&l);
  snprintf(pattern, sizeof pattern, "%s/{c,a}", root); /* brace: matched directories are walked */
  assert_int_equal(pb_files_list(pattern, &l, &err), 0);
  expect_files(&l, (const char *const[]){"a/10.bin", "a/2.bin", "c/d/e.bin"}, 3);
  pb_file_list_free(&l);
  snprintf(pattern, sizeof pattern, "%s/*.none", root);
  assert_int_equal(pb_files_list(pattern, &l, &err), -ENOENT);
  assert_non_null(strstr(err.msg, "*.none: no files match this pattern (expected at least one)"));
  assert_null(l.files);
}

/* Appends a file to a list built by hand (the listing's own push is static). */
static int list_push_for_test(pb_file_list *l, const char *path, uint64_t bytes) {
  pb_file *f = realloc(l->files, (l->count + 1) * sizeof *f);
  if (!f) return -ENOMEM;
  l->files = f;
  l->files[l->count] = (pb_file){.path = strdup(path), .bytes = bytes, .index = l->count};
  l->count++, l->total_bytes += bytes;
  return 0;
}

/* The format's extensions keep its files (any case) and drop the rest, counted and named; "" keeps names
 * without an extension, "*" everything (issue 34: a README.txt and a .png were read as JPEGs). */
static void test_keep_extensions(void **state) {
  pb_file_list l = {0};
  const char *names[] = {"d/a.JPEG", "d/README.txt", "d/b.jpg", "d/c.png", "d/train-00000-of-01024", "d/.e.jpg/x"};
  for (int i = 0; i < 6; i++) {
    assert_int_equal(list_push_for_test(&l, names[i], 10u * (unsigned)(i + 1)), 0);
  }
  int n = 0;
  const char *const *jpeg = pb_format_extensions(PB_FMT_JPEG, &n);
  pb_files_skipped skipped = {0};
  pb_file_list_keep_extensions(&l, jpeg, n, &skipped);
  assert_int_equal(l.count, 2);
  assert_string_equal(l.files[0].path, "d/a.JPEG");
  assert_string_equal(l.files[1].path, "d/b.jpg");
  assert_int_equal(l.files[1].index, 1);
  assert_int_equal(l.total_bytes, 10 + 30);
  assert_int_equal(skipped.count, 4);
  assert_string_equal(skipped.first[0], "d/README.txt");
  assert_string_equal(skipped.first[2], "d/train-00000-of-01024");
  pb_file_list_free(&l);
  for (int i = 0; i < 6; i++) assert_int_equal(list_push_for_test(&l, names[i], 1), 0);
  const char *const *tfr = pb_format_extensions(PB_FMT_TFRECORD, &n);
  pb_file_list_keep_extensions(&l, tfr, n, NULL); /* no extension: kept ("x" under a dotted directory too) */
  assert_int_equal(l.count, 2);
  assert_string_equal(l.files[0].path, "d/train-00000-of-01024");
  assert_string_equal(l.files[1].path, "d/.e.jpg/x");
  const char *const all[] = {"*"};
  pb_file_list_keep_extensions(&l, all, 1, NULL);
  assert_int_equal(l.count, 2);
  pb_file_list_free(&l);
  assert_null(pb_format_extensions(PB_FMT_SYNTHETIC, &n));
  assert_int_equal(n, 0);
}

static void test_list_file(void **state) {
  pb_file_list l;
  pb_err err;
  char arg[600], abs_entry[600], text[2048];
  snprintf(abs_entry, sizeof abs_entry, "%s/c/d/e.bin", root);
  snprintf(text, sizeof text, "# training files\n\n../b.bin\n  ../a/2.bin  \r\n%s\n   # indented comment\n../a\n",
           abs_entry);
  write_list("lists/train.txt", text);
  snprintf(arg, sizeof arg, "@%s/lists/train.txt", root);
  assert_int_equal(pb_files_list(arg, &l, &err), 0);
  /* listed order kept; relative entries resolved against the list's directory */
  static const char *const want[] = {"lists/../b.bin", "lists/../a/2.bin", "c/d/e.bin", "lists/../a/10.bin",
                                     "lists/../a/2.bin"};
  assert_int_equal(l.count, 5);
  for (size_t i = 0; i < 5; i++) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", root, want[i]);
    assert_string_equal(l.files[i].path, path);
    assert_int_equal(l.files[i].index, i);
  }
  pb_file_list_free(&l);
}

static void test_list_file_errors(void **state) {
  pb_file_list l;
  pb_err err;
  char arg[600];
  write_list("lists/bad.txt", "../b.bin\n\n../missing.bin\n");
  snprintf(arg, sizeof arg, "@%s/lists/bad.txt", root);
  assert_int_equal(pb_files_list(arg, &l, &err), -ENOENT);
  assert_non_null(strstr(err.msg, "lists/bad.txt: line 3: "));
  assert_non_null(strstr(err.msg, "missing.bin: No such file or directory (expected an existing file or directory)"));
  assert_null(l.files);
  snprintf(arg, sizeof arg, "@%s/lists/none.txt", root);
  assert_int_equal(pb_files_list(arg, &l, &err), -ENOENT);
  assert_non_null(strstr(err.msg, "none.txt: cannot read the file list"));
  write_list("lists/empty.txt", "# nothing\n\n");
  snprintf(arg, sizeof arg, "@%s/lists/empty.txt", root);
  assert_int_equal(pb_files_list(arg, &l, &err), -ENOENT);
  assert_non_null(strstr(err.msg, "no files found"));
}

static void test_missing_and_empty(void **state) {
  pb_file_list l;
  pb_err err;
  char path[600];
  snprintf(path, sizeof path, "%s/nope", root);
  assert_int_equal(pb_files_list(path, &l, &err), -ENOENT);
  assert_non_null(strstr(err.msg, "nope: No such file or directory (expected an existing file or directory)"));
  snprintf(path, sizeof path, "%s/empty", root);
  assert_int_equal(pb_files_list(path, &l, &err), -ENOENT);
  assert_non_null(strstr(err.msg, "empty: no files found (expected at least one non-hidden data file)"));
  snprintf(path, sizeof path, "%s/b.bin", root); /* a single file is a one-file dataset */
  assert_int_equal(pb_files_list(path, &l, &err), 0);
  assert_int_equal(l.count, 1);
  pb_file_list_free(&l);
}

/* ---- shuffle and shard ---------------------------------------------------------------------------------- */

static pb_file_list fake_list(size_t n) {
  pb_file_list l = {.files = calloc(n, sizeof(pb_file)), .count = n, .cap = n};
  for (size_t i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "f%04zu", i);
    l.files[i] = (pb_file){.path = strdup(name), .bytes = i, .index = i};
    l.total_bytes += i;
  }
  return l;
}

static bool same_order(const pb_file_list *a, const pb_file_list *b) {
  if (a->count != b->count) return false;
  for (size_t i = 0; i < a->count; i++)
    if (a->files[i].index != b->files[i].index) return false;
  return true;
}

static void test_shuffle_is_a_deterministic_permutation(void **state) {
  pb_file_list a = fake_list(200), b = fake_list(200);
  pb_file_list_shuffle(&a, 42, 0);
  pb_file_list_shuffle(&b, 42, 3);  /* an earlier shuffle must not change the result: */
  pb_file_list_shuffle(&b, 42, 0);
  assert_true(same_order(&a, &b));
  bool seen[200] = {false};
  size_t moved = 0;
  for (size_t i = 0; i < a.count; i++) {
    assert_false(seen[a.files[i].index]);
    seen[a.files[i].index] = true;
    assert_int_equal(a.files[i].bytes, a.files[i].index); /* each file keeps its own size */
    moved += a.files[i].index != i;
  }
  assert_true(moved > 150);
  pb_file_list_shuffle(&b, 42, 1);
  assert_false(same_order(&a, &b)); /* another epoch, another order */
  pb_file_list_shuffle(&b, 43, 0);
  assert_false(same_order(&a, &b)); /* another seed, another order */
  pb_file_list_free(&a);
  pb_file_list_free(&b);
}

/* Position counts over many epochs: a uniform shuffle puts each file in each slot about equally often. */
static void test_shuffle_is_uniform(void **state) {
  enum { N = 5, EPOCHS = 20000 };
  int counts[N][N] = {{0}};
  pb_file_list l = fake_list(N);
  for (uint32_t e = 0; e < EPOCHS; e++) {
    pb_file_list_shuffle(&l, 9, e);
    for (size_t i = 0; i < N; i++) counts[l.files[i].index][i]++;
  }
  for (int f = 0; f < N; f++)
    for (int p = 0; p < N; p++) { /* 4000 +- ~7 sd */
      assert_int_cmp(counts[f][p], >, 3700);
      assert_int_cmp(counts[f][p], <, 4300);
    }
  pb_file_list_free(&l);
}

static void test_shard_partitions(void **state) {
  pb_file_list full = fake_list(10);
  bool seen[10] = {false};
  size_t sizes[3] = {4, 3, 3};
  for (int rank = 0; rank < 3; rank++) {
    pb_file_list part;
    assert_int_equal(pb_file_list_clone(&full, &part), 0);
    pb_file_list_shard(&part, rank, 3);
    assert_int_equal(part.count, sizes[rank]);
    uint64_t total = 0;
    for (size_t i = 0; i < part.count; i++) {
      assert_int_equal(part.files[i].index, (size_t)rank + 3 * i);
      assert_false(seen[part.files[i].index]);
      seen[part.files[i].index] = true;
      total += part.files[i].bytes;
    }
    assert_int_equal(part.total_bytes, total);
    pb_file_list_free(&part);
  }
  for (int i = 0; i < 10; i++) assert_true(seen[i]);
  pb_file_list_shard(&full, 3, 3); /* bad rank: unchanged */
  pb_file_list_shard(&full, 0, 0);
  assert_int_equal(full.count, 10);
  pb_file_list_shard(&full, 0, 1); /* one rank keeps everything */
  assert_int_equal(full.count, 10);
  pb_file_list_free(&full);
}

/* The usual multi-rank epoch: same shuffle everywhere, then each rank its shard; and a shard can still be
 * reshuffled (the order restarts from the listing order of what it holds). */
static void test_shuffle_then_shard(void **state) {
  pb_file_list full = fake_list(12), r0, r1;
  pb_file_list_shuffle(&full, 5, 2);
  assert_int_equal(pb_file_list_clone(&full, &r0), 0);
  assert_int_equal(pb_file_list_clone(&full, &r1), 0);
  pb_file_list_shard(&r0, 0, 2);
  pb_file_list_shard(&r1, 1, 2);
  for (size_t i = 0; i < 6; i++) {
    assert_int_equal(r0.files[i].index, full.files[2 * i].index);
    assert_int_equal(r1.files[i].index, full.files[2 * i + 1].index);
  }
  pb_file_list again;
  assert_int_equal(pb_file_list_clone(&r0, &again), 0);
  pb_file_list_shuffle(&r0, 7, 0);
  pb_file_list_shuffle(&again, 1, 1);
  pb_file_list_shuffle(&again, 7, 0);
  assert_true(same_order(&r0, &again));
  pb_file_list_free(&full);
  pb_file_list_free(&r0);
  pb_file_list_free(&r1);
  pb_file_list_free(&again);
}

/* ---- opening a data file, and names in messages (issue 32) -------------------------------------------- */

/* A FIFO, a directory, a missing file: refused at once (open() on a FIFO with no writer would wait for ever
 * without O_NONBLOCK), naming what was found; a regular file opens for blocking reads. */
static void test_data_file_open_refuses_what_is_not_a_file(void **state) {
  char path[512];
  struct stat st;
  snprintf(path, sizeof path, "%s/b.bin", root);
  int fd = pb_data_file_open(path, 0, &st);
  assert_true(fd >= 0);
  assert_int_equal(st.st_size, 2);
  assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0); /* reads block as usual: cleared after the check */
  close(fd);
  snprintf(path, sizeof path, "%s/fifo", root);
  assert_int_equal(mkfifo(path, 0600), 0);
  assert_int_equal(pb_data_file_open(path, 0, &st), PB_ENOTREG);
  assert_string_equal(pb_file_kind(st.st_mode), "a FIFO");
  unlink(path);
  snprintf(path, sizeof path, "%s/a", root);
  assert_int_equal(pb_data_file_open(path, 0, &st), PB_ENOTREG);
  assert_string_equal(pb_file_kind(st.st_mode), "a directory");
  snprintf(path, sizeof path, "%s/no-such-file", root);
  assert_int_equal(pb_data_file_open(path, 0, &st), -ENOENT);
}

/* A path with a newline and a terminal escape in it shows them as '?' in the error: one line, nothing the
 * terminal would act on. */
static void test_listing_errors_show_control_bytes_as_marks(void **state) {
  char path[512];
  pb_file_list l;
  pb_err err;
  snprintf(path, sizeof path, "%s/no\nsuch\033[31m", root);
  assert_int_equal(pb_files_list(path, &l, &err), -ENOENT);
  for (const char *c = err.msg; *c; c++)
    if ((unsigned char)*c < 0x20) fail_msg("control byte 0x%02x in: %s", (unsigned char)*c, err.msg);
  assert_non_null(strstr(err.msg, "/no?such?[31m: "));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_data_file_open_refuses_what_is_not_a_file),
      cmocka_unit_test(test_listing_errors_show_control_bytes_as_marks),
      cmocka_unit_test(test_walk_sorted_recursive),
      cmocka_unit_test(test_symlink_cycle_refused),
      cmocka_unit_test(test_symlink_dangling_listed),
      cmocka_unit_test(test_path_too_long_listed),
      cmocka_unit_test(test_symlink_to_outside_followed),
      cmocka_unit_test(test_trailing_slash_and_relative_path),
      cmocka_unit_test(test_glob),
      cmocka_unit_test(test_keep_extensions),
      cmocka_unit_test(test_list_file),
      cmocka_unit_test(test_list_file_errors),
      cmocka_unit_test(test_missing_and_empty),
      cmocka_unit_test(test_shuffle_is_a_deterministic_permutation),
      cmocka_unit_test(test_shuffle_is_uniform),
      cmocka_unit_test(test_shard_partitions),
      cmocka_unit_test(test_shuffle_then_shard),
  };
  return cmocka_run_group_tests(tests, setup_tree, teardown_tree);
}

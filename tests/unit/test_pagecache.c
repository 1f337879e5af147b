/* pagecache.c: eviction, warming and the resident fraction on files written here.  The files live in a
 * directory on a disk file system ($TMPDIR or /var/tmp): on a tmpfs the pages are the storage and cannot
 * be evicted, so the eviction tests are skipped there. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <cmocka.h>

#include "pagecache.h"

#define TMPFS_MAGIC_NUMBER 0x01021994 /* linux/magic.h TMPFS_MAGIC */
#define MIB (1u << 20)

static char g_dir[256];

static int make_dir(void **state) {
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/pipebench-pagecache-XXXXXX", base);
  return mkdtemp(g_dir) ? 0 : -1;
}

static int remove_dir(void **state) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static bool on_tmpfs(void) {
  struct statfs fs;
  return statfs(g_dir, &fs) == 0 && (unsigned long)fs.f_type == TMPFS_MAGIC_NUMBER;
}

/* Writes `bytes` of a pattern to <dir>/NAME; fdatasync'ed when `sync`.  Returns the path (static). */
static const char *write_file(const char *name, size_t bytes, bool sync) {
  static char path[4][400];
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, 400, "%s/%s", g_dir, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  char *buf = malloc(bytes ? bytes : 1);
  for (size_t i = 0; i < bytes; i++) buf[i] = (char)(i * 7);
  assert_int_equal(write(fd, buf, bytes), (ssize_t)bytes);
  if (sync) assert_int_equal(fdatasync(fd), 0);
  close(fd);
  free(buf);
  return p;
}

static double resident_pct(const char *path, uint64_t want_bytes) {
  uint64_t resident, bytes;
  pb_err err;
  assert_int_equal(pb_pagecache_resident_file(path, &resident, &bytes, &err), 0);
  assert_int_equal(bytes, want_bytes);
  assert_true(resident <= bytes);
  return 100.0 * (double)resident / (double)bytes;
}

/* Written and synced: eviction leaves (almost) nothing cached, reading it caches all of it. */
static void test_evict_then_warm(void **state) {
  if (on_tmpfs()) skip();
  const char *path = write_file("synced", 4 * MIB, true);
  pb_err err;
  bool synced;
  assert_int_equal(pb_pagecache_evict_file(path, &synced, &err), 0);
  double after_evict = resident_pct(path, 4 * MIB);
  if (after_evict > 1) fail_msg("%.1f %% still cached after eviction", after_evict);
  uint64_t read_bytes;
  assert_int_equal(pb_pagecache_warm_file(path, &read_bytes, &err), 0);
  assert_int_equal(read_bytes, 4 * MIB);
  double after_warm = resident_pct(path, 4 * MIB);
  if (after_warm < 99) fail_msg("%.1f %% cached after reading the file", after_warm);
}

/* Freshly written (dirty) pages: DONTNEED alone would keep them; eviction syncs and drops them. */
static void test_evict_dirty_file(void **state) {
  if (on_tmpfs()) skip();
  const char *path = write_file("dirty", 2 * MIB, false);
  pb_err err;
  bool synced;
  assert_int_equal(pb_pagecache_evict_file(path, &synced, &err), 0);
  double after = resident_pct(path, 2 * MIB);
  if (after > 1) fail_msg("%.1f %% still cached after evicting a dirty file (synced %d)", after, synced);
}

/* A partial last page counts only the file's bytes. */
static void test_partial_page(void **state) {
  const char *path = write_file("small", 5000, true);
  pb_err err;
  uint64_t read_bytes, resident, bytes;
  assert_int_equal(pb_pagecache_warm_file(path, &read_bytes, &err), 0);
  assert_int_equal(pb_pagecache_resident_file(path, &resident, &bytes, &err), 0);
  assert_int_equal(bytes, 5000);
  assert_int_equal(resident, 5000);
}

/* Lists: a missing file is skipped and counted with its error, the others are handled; empty files measure
 * nothing. */
static void test_list_skips_bad_files(void **state) {
  const char *good = write_file("good", 64 * 1024, true);
  char missing[400];
  snprintf(missing, sizeof missing, "%s/no-such-file", g_dir);
  pb_file files[] = {{.path = (char *)good, .bytes = 64 * 1024}, {.path = missing, .bytes = 10}};
  pb_file_list l = {.files = files, .count = 2, .total_bytes = 64 * 1024 + 10};
  pb_pagecache_tally t;
  assert_int_equal(pb_pagecache_warm(&l, NULL, &t), 1);
  assert_int_equal(t.files, 1);
  assert_int_equal(t.bytes, 64 * 1024);
  assert_non_null(strstr(t.first_error.msg, "no-such-file"));
  assert_int_equal(pb_pagecache_resident(&l, NULL, &t), 1);
  assert_true(pb_pagecache_resident_pct(&t) > 99);
  assert_int_equal(pb_pagecache_evict(&l, NULL, &t), 1);
  assert_int_equal(t.files, 1);
  if (!on_tmpfs()) {
    pb_pagecache_resident(&l, NULL, &t);
    assert_true(pb_pagecache_resident_pct(&t) < 1);
  }
  const char *empty = write_file("empty", 0, true);
  pb_file only_empty[] = {{.path = (char *)empty, .bytes = 0}};
  pb_file_list e = {.files = only_empty, .count = 1};
  assert_int_equal(pb_pagecache_resident(&e, NULL, &t), 0);
  assert_true(isnan(pb_pagecache_resident_pct(&t)));
}

static bool always_stop(void) { return true; }

/* The stop callback ends a pass before the next file. */
static void test_stop(void **state) {
  const char *good = write_file("stop", 4096, true);
  pb_file files[] = {{.path = (char *)good, .bytes = 4096}};
  pb_file_list l = {.files = files, .count = 1, .total_bytes = 4096};
  pb_pagecache_tally t;
  pb_pagecache_warm(&l, always_stop, &t);
  assert_true(t.stopped);
  assert_int_equal(t.files, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_evict_then_warm),      cmocka_unit_test(test_evict_dirty_file),
      cmocka_unit_test(test_partial_page),         cmocka_unit_test(test_list_skips_bad_files),
      cmocka_unit_test(test_stop),
  };
  return cmocka_run_group_tests(tests, make_dir, remove_dir);
}

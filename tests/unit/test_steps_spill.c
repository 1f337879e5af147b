/* The step record's spill file (src/engine/steps_spill.c): past mem_limit records the held ones go to an
 * unlinked file and memory stays bounded; pb_steps_finish gives back every record in order (mapped), and
 * a directory that cannot take the file leaves the record in memory, complete. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first */
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "steps.h"

/* A step record with no device or engine: just the store (what pb_steps_init sets up for it). */
static void store_init(pb_steps *s, size_t mem_limit, const char *dir) {
  memset(s, 0, sizeof *s);
  s->cap = 4;
  s->v = malloc(s->cap * sizeof *s->v);
  assert_non_null(s->v);
  s->spill_fd = -1;
  s->spill_off = true;
  s->mem_limit = mem_limit;
  pb_steps_spill_to(s, dir);
}

/* What record() in steps.c does, minus the window: room, then the next slot. */
static void append(pb_steps *s, uint64_t i) {
  assert_int_equal(pb_steps_make_room(s), 0);
  pb_step *slot = &s->v[s->n++ - s->spilled];
  *slot = (pb_step){.prev_end_ns = i * 10, .compute_end_ns = i * 10 + 7, .key = i, .samples = (uint32_t)i};
}

static void assert_in_order(const pb_steps *s, size_t n) {
  assert_int_equal(s->n, n);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(s->v[i].key, i);
    assert_int_equal(s->v[i].compute_end_ns, i * 10 + 7);
  }
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static void test_spills_and_maps_back(void **state) {
  (void)state;
  char dir[] = "/tmp/pb-spill-XXXXXX";
  assert_non_null(mkdtemp(dir));
  pb_steps s;
  store_init(&s, 8, dir);
  for (uint64_t i = 0; i < 1003; i++) {
    append(&s, i);
    assert_true(s.cap <= 8); /* bounded: never more than mem_limit records in memory */
  }
  assert_true(s.spilled >= 992);
  assert_int_equal(count_entries(dir), 0); /* the file is unlinked: nothing to clean up, even after a crash */
  assert_int_equal(pb_steps_finish(&s), 0);
  assert_int_equal(s.map_bytes, 1003 * sizeof(pb_step));
  assert_in_order(&s, 1003);
  s.v[5].compute_end_ns = 1; /* the GPU timeline rewrites records: a private, writable mapping */
  size_t map_bytes;
  pb_step *v = pb_steps_take(&s, &map_bytes);
  assert_null(s.v);
  s.v = v;
  s.map_bytes = map_bytes;
  pb_steps_free_record(&s);
  rmdir(dir);
}

/* A spill that fails half-way (a full disk): the records already in the file are read back in front of
 * the ones held in memory since, and the record is whole and in order. */
static void test_failed_spill_reads_back(void **state) {
  (void)state;
  char dir[] = "/tmp/pb-spill-XXXXXX";
  assert_non_null(mkdtemp(dir));
  pb_steps s;
  store_init(&s, 8, dir);
  for (uint64_t i = 0; i < 40; i++) append(&s, i);
  assert_true(s.spilled >= 32);
  s.spill_off = true; /* what give_up_spilling leaves after a failed write */
  for (uint64_t i = 40; i < 100; i++) append(&s, i);
  assert_int_equal(pb_steps_finish(&s), 0);
  assert_int_equal(s.map_bytes, 0); /* in memory, not mapped */
  assert_int_equal(s.spill_fd, -1);
  assert_in_order(&s, 100);
  pb_steps_free_record(&s);
  rmdir(dir);
}

static void test_short_record_never_spills(void **state) {
  (void)state;
  char dir[] = "/tmp/pb-spill-XXXXXX";
  assert_non_null(mkdtemp(dir));
  pb_steps s;
  store_init(&s, 64, dir);
  for (uint64_t i = 0; i < 40; i++) append(&s, i);
  assert_int_equal(s.spilled, 0);
  assert_int_equal(s.spill_fd, -1);
  assert_int_equal(pb_steps_finish(&s), 0);
  assert_int_equal(s.map_bytes, 0);
  assert_in_order(&s, 40);
  pb_steps_free_record(&s);
  rmdir(dir);
}

static void test_unwritable_dir_keeps_it_in_memory(void **state) {
  (void)state;
  pb_steps s;
  store_init(&s, 8, "/nonexistent/pipebench-spill");
  for (uint64_t i = 0; i < 100; i++) append(&s, i);
  assert_true(s.spill_off);
  assert_int_equal(s.spilled, 0);
  assert_int_equal(pb_steps_finish(&s), 0);
  assert_in_order(&s, 100);
  pb_steps_free_record(&s);
}

static void test_no_dir_means_memory(void **state) {
  (void)state;
  pb_steps s;
  store_init(&s, 8, NULL);
  for (uint64_t i = 0; i < 100; i++) append(&s, i);
  assert_int_equal(s.spill_fd, -1);
  assert_int_equal(pb_steps_finish(&s), 0);
  assert_in_order(&s, 100);
  pb_steps_free_record(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spills_and_maps_back),
      cmocka_unit_test(test_failed_spill_reads_back),
      cmocka_unit_test(test_short_record_never_spills),
      cmocka_unit_test(test_unwritable_dir_keeps_it_in_memory),
      cmocka_unit_test(test_no_dir_means_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

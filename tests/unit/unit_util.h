/* Helpers shared by the unit tests (each test is its own executable: these are static). */
#ifndef PB_UNIT_UTIL_H
#define PB_UNIT_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../assert_values.h" /* assert_double_cmp and friends: failures print the values */

/* Fixtures live in tests/fixtures, found from this header's path (tests/unit/) (CMake compiles it by absolute path);
 * PB_FIXTURES_DIR overrides. */
static inline void fixture_path(char *out, size_t cap, const char *name) {
  const char *env = getenv("PB_FIXTURES_DIR");
  const char *slash = strrchr(__FILE__, '/');
  if (env)
    snprintf(out, cap, "%s/%s", env, name);
  else
    snprintf(out, cap, "%.*s../fixtures/%s", slash ? (int)(slash - __FILE__ + 1) : 0, __FILE__, name);
}

/* A whole file as a new NUL-terminated string (fails the test when it cannot be read). */
static inline char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = '\0';
  fclose(f);
  return s;
}

#endif

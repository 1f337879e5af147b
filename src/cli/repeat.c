/* --repeat's value (repeat.h); the arithmetic of repeats is src/analysis/repeat_stats.c, what they write
 * src/reports/repeat_out.c. */
#include "repeat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---------- --repeat ---------- */

int pb_repeat_parse(const char *text, int *n, pb_err *err) {
  char clean[96];
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  /* digits only: strtol would also take " 3", "+3" and "-0" */
  bool digits = *text && strspn(text, "0123456789") == strlen(text);
  if (!digits || *end || errno || v < 1 || v > PB_REPEAT_MAX)
    return pb_err_set(err, "--repeat: \"%s\" is not a count of repeats (expected an integer from 1 to %d)",
                      pb_cfg_clean(text, 60, clean, sizeof clean), PB_REPEAT_MAX);
  *n = (int)v;
  return 0;
}

/* Why an op refused its input: each refusal records one line here (per thread, as errno is) before it
 * returns -EINVAL, so the map stage can say which op failed on a sample and why, not just that one did. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "ops_internal.h"

static _Thread_local char why[200];

int pb_ops_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return -EINVAL;
}

const char *pb_ops_why(void) { return why[0] ? why : "it refused this image (no reason recorded)"; }

void pb_op_failure_text(char *buf, size_t len, int index, pb_op_kind kind, int rc) {
  const char *reason = rc == -ENOMEM ? "out of memory" : pb_ops_why();
  snprintf(buf, len, "op %d (%s) failed: %s", index, pb_op_name(kind), reason);
  why[0] = '\0'; /* consumed: a later failure without a reason must not show this one */
}

int pb_ops_check_in(const pb_image *in) {
  if (!in || !in->data) return pb_ops_fail("no input image");
  if (in->height <= 0 || in->width <= 0 || in->channels <= 0)
    return pb_ops_fail("the input is %dx%d with %d channels (expected at least 1x1 and 1 channel)",
                       in->width, in->height, in->channels);
  if ((unsigned)in->dtype > PB_DTYPE_FLOAT32)
    return pb_ops_fail("the input's element type %d is unknown (expected uint8, float16 or float32)", (int)in->dtype);
  return 0;
}

int pb_ops_check_io(const pb_image *in, const pb_image *out) {
  int rc = pb_ops_check_in(in);
  if (!rc && (!out || !out->data)) rc = pb_ops_fail("no output buffer");
  return rc;
}

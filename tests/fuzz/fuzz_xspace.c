/* libFuzzer target: a TensorFlow Profiler capture (src/import/xspace.c), as `analyze` of a <host>.xplane.pb
 * will read it (issue 35).
 *
 * Input: one file's bytes, decoded with pb_xspace_parse; when it decodes, every plane, line and event is
 * walked, each event's name looked up and its "id", "parent_id" (integers) and "name" (text, a ref's
 * metadata name) stats read, as the importer's iterator tree does.
 *
 * Checked besides ASan/UBSan/leaks: a refusal is one line naming the input; an event's name is never NULL. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xspace.h"

static void walk(const pb_xspace *x) {
  for (int p = 0; p < pb_xspace_nplanes(x); p++) {
    if (!pb_xspace_plane_name(x, p)) abort();
    for (int l = 0; l < pb_xspace_nlines(x, p); l++) {
      pb_xline li;
      pb_xspace_line(x, p, l, &li);
      for (size_t e = 0; e < li.nevents; e++) {
        pb_xevent ev;
        pb_xspace_event(x, p, l, e, &ev);
        if (!ev.name) abort();
        int64_t v;
        const char *s;
        (void)pb_xspace_event_int(x, p, l, e, "id", &v);
        (void)pb_xspace_event_int(x, p, l, e, "parent_id", &v);
        if (pb_xspace_event_str(x, p, l, e, "name", &s) && !s) abort();
      }
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pb_xspace *x = NULL;
  pb_err err;
  if (pb_xspace_parse(data, size, "fuzz.xplane.pb", &x, &err) == 0) {
    walk(x);
    pb_xspace_free(x);
  } else if (x || strncmp(err.msg, "fuzz.xplane.pb: ", 16) != 0 || strchr(err.msg, '\n')) {
    abort(); /* a refusal leaves nothing, and says so in one line naming the input */
  }
  return 0;
}

/* libFuzzer target: a TensorFlow Profiler capture (src/import/xspace.c), as `analyze` of a <host>.xplane.pb
 * will read it (issue 35).
 *
 * Input: one file's bytes, decoded with pb_xspace_parse; when it decodes, every plane, line and event is
 * walked, each event's name looked up and its "id", "parent_id" (integers) and "name" (text, a ref's
 * metadata name) stats read, as the importer's iterator tree does.
 *
 * Then the tf.data reader (tfdata.c: iterator tree, self times, function runs, steps), its verdict and advice
 * (tfdata_verdict.c) and the twin's config (twin.c) are made from it, as `pipebench twin` does.
 *
 * Checked besides ASan/UBSan/leaks: a refusal is one line naming the input; an event's name is never NULL;
 * the chain never has more iterators than were read, each once; a twin is a JSON object with stages. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tfdata.h"
#include "tfdata_verdict.h"
#include "twin.h"
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

static void tf_data(const pb_xspace *x) {
  pb_tfdata t;
  pb_err err;
  if (pb_tfdata_read(x, "fuzz.xplane.pb", &t, &err)) {
    if (strncmp(err.msg, "fuzz.xplane.pb: ", 16) != 0 || strchr(err.msg, '\n')) abort();
    return;
  }
  int chain[PB_TF_MAX_ITERATORS];
  bool seen[PB_TF_MAX_ITERATORS] = {false};
  int n = pb_tfdata_chain(&t, chain, PB_TF_MAX_ITERATORS);
  if (n > t.niterators) abort();
  for (int i = 0; i < n; i++) {
    if (chain[i] < 0 || chain[i] >= t.niterators || seen[chain[i]]) abort();
    seen[chain[i]] = true;
  }
  (void)pb_tfdata_input_bound_pct(&t);
  pb_tf_verdict v;
  pb_tfdata_verdict(&t, &v);
  if (v.bottleneck >= t.niterators || v.nadvice > PB_TF_MAX_ADVICE) abort();
  for (int i = 0; i < v.nadvice; i++)
    if (!memchr(v.advice[i].text, '\0', sizeof v.advice[i].text) || v.advice[i].iterator >= t.niterators) abort();
  pb_twin_notes *notes = malloc(sizeof *notes);
  cJSON *cfg = NULL;
  if (notes && pb_twin_config(&t, "fuzz.xplane.pb", "twin-fuzz", notes, &cfg, &err) == 0 &&
      !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(cfg, "stages")))
    abort();
  cJSON_Delete(cfg);
  free(notes);
  pb_tfdata_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pb_xspace *x = NULL;
  pb_err err;
  if (pb_xspace_parse(data, size, "fuzz.xplane.pb", &x, &err) == 0) {
    walk(x);
    tf_data(x);
    pb_xspace_free(x);
  } else if (x || strncmp(err.msg, "fuzz.xplane.pb: ", 16) != 0 || strchr(err.msg, '\n')) {
    abort(); /* a refusal leaves nothing, and says so in one line naming the input */
  }
  return 0;
}

/* libFuzzer target: a TensorFlow Profiler capture (src/import/xspace.c), as `analyze` of a <host>.xplane.pb
 * will read it (issue 35).
 *
 * Input: one file's bytes, decoded with pb_xspace_parse; when it decodes, every plane, line and event is
 * walked, each event's name looked up and its "id", "parent_id" (integers) and "name" (text, a ref's
 * metadata name) stats read, as the importer's iterator tree does.
 *
 * Then the tf.data reader (tfdata.c: iterator tree, self times, function runs, steps), its verdict and advice
 * (tfdata_verdict.c) and the twin's config (twin.c) are made from it, as `pipebench twin` does, and the record of
 * the job (capture_record.c), as `pipebench analyze` does.
 *
 * Checked besides ASan/UBSan/leaks: a refusal is one line naming the input; an event's name is never NULL;
 * the chain never has more iterators than were read, each once; a twin is a JSON object with stages; a record's
 * workers' events are in time order, never overlap and fit a ring, and its samples balance. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture_record.h"
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

/* Every sample the source made is consumed, dropped or in flight (metrics.c's accounting, from the record). */
static void check_balance(const pb_record *rec) {
  uint64_t read = 0, dropped = 0, in_flight = rec->queued_samples;
  for (int i = 0; i < rec->nstages; i++) {
    const pb_counters *c = &rec->stages[i].ctr;
    if (rec->stages[i].is_source) read += c->samples_out_total;
    dropped += c->samples_dropped_total, in_flight += c->samples_in_flight;
  }
  if (read != rec->samples_consumed + dropped + in_flight) {
    for (int i = 0; i < rec->nstages; i++)
      fprintf(stderr, "DBG %s %s out %lu drop %lu fl %lu\n", rec->stages[i].name, rec->stages[i].type,
              rec->stages[i].ctr.samples_out_total, rec->stages[i].ctr.samples_dropped_total,
              rec->stages[i].ctr.samples_in_flight);
    fprintf(stderr, "DBG consumed %lu queued %lu steps %zu\n", rec->samples_consumed, rec->queued_samples, rec->nsteps);
    abort();
  }
}

static void record(const pb_tfdata *t) {
  pb_record *rec = calloc(1, sizeof *rec);
  pb_err err;
  if (!rec) return;
  if (pb_capture_record(t, "fuzz.xplane.pb", "twin-fuzz", rec, &err) == 0) {
    for (int i = 0; i < rec->nstages; i++)
      for (int k = 0; rec->stages[i].workers && k < rec->stages[i].threads; k++) {
        const pb_worker_trace *w = &rec->stages[i].workers[k];
        if (w->n > PB_TRACE_MAX_RING) abort();
        for (uint32_t e = 0; e < w->n; e++)
          if (w->ev[e].t1_ns < w->ev[e].t0_ns || (e && w->ev[e].t0_ns < w->ev[e - 1].t1_ns)) abort();
      }
    check_balance(rec);
  } else if (strncmp(err.msg, "fuzz.xplane.pb: ", 16) != 0 || strchr(err.msg, '\n')) {
    abort();
  }
  pb_record_free(rec);
  free(rec);
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
  record(&t);
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

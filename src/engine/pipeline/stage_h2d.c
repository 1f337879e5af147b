/* `h2d`: copies each batch to the device ahead of its step, on `streams` concurrent copies, so the copy
 * overlaps the previous step's compute.  Without this stage the device copies synchronously before each
 * step (then the whole copy is non-overlapped H2D time).  The copy is the device's (device.h): on a GPU
 * it also picks the batch's device (round-robin) and waits for a free device buffer when the device is
 * behind; that wait is counted as blocked (backpressure), not as copy time. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "engine.h"

static int h2d_process(pb_worker *w, pb_elem *in) {
  pb_device *dev = w->stage->engine->device;
  pb_h2d_times t = {0};
  int rc = pb_device_h2d(dev, -1, in, &t);
  if (t.wait_end_ns > t.wait_start_ns) pb_worker_note_blocked(w, t.wait_start_ns, t.wait_end_ns);
  if (rc == -ECANCELED) { /* the run is over: the batch is in flight, not an error */
    pb_worker_abandon(w, in);
    return 0;
  }
  if (rc < 0) {
    char msg[320];
    const char *why = pb_device_error(dev);
    snprintf(msg, sizeof msg, "host-to-device copy failed: %s", why[0] ? why : strerror(-rc));
    pb_worker_error(w, in, NULL, msg, true);
    return 0;
  }
  in->h2d_start_ns = t.start_ns;
  in->h2d_end_ns = t.end_ns;
  return pb_emit(w, in);
}

/* One thread per copy stream, and a queue of one batch per stream after it: `streams` copies in flight. */
static int h2d_threads(const pb_stage_cfg *sc) { return sc->streams; }
static int h2d_out_capacity(const pb_stage *s) { return s->cfg->streams; }

const pb_stage_ops pb_stage_h2d_ops = {
    .type = "h2d",
    .desc = &pb_stage_desc_h2d,
    .threads = h2d_threads,
    .out_capacity = h2d_out_capacity,
    .process = h2d_process,
};

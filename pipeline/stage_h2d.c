/* `h2d`: copies each batch to the device ahead of its step, on `streams` concurrent copies, so the copy
 * overlaps the previous step's compute.  Without this stage the device copies synchronously before each
 * step (then the whole copy is non-overlapped H2D time).  The copy is the device's (device.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "engine.h"

static int h2d_process(pb_worker *w, pb_elem *in) {
  pb_device *dev = w->stage->engine->device;
  int rc = pb_device_h2d(dev, in, &in->h2d_start_ns, &in->h2d_end_ns);
  if (rc < 0) {
    char msg[128];
    snprintf(msg, sizeof msg, "host-to-device copy failed: %s", strerror(-rc));
    pb_worker_error(w, in, NULL, msg, true);
    return 0;
  }
  return pb_emit(w, in);
}

const pb_stage_ops pb_stage_h2d_ops = {
    .type = "h2d",
    .process = h2d_process,
};

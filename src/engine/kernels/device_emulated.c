/* The emulated device: a single copy engine moving bytes at device.h2d_gb_per_s, and a step that lasts
 * device.step_ms (constant, or drawn from a normal distribution with the seed).  Both wait with absolute
 * sleeps on the monotonic clock, so they cost no host CPU and do not drift.
 *
 * Their intervals are in device time, as a GPU's are: a copy starts when the copy engine is free, a step
 * when its batch is on the device and the previous step is over (ready_ns), and each lasts exactly its
 * modelled time.  The host thread that sleeps for them may wake late on a busy machine (hundreds of
 * microseconds on 2 loaded cores); a GPU does not slow down when the host is busy, because a training
 * loop queues its launches ahead of the GPU.  So the late wake-up is not added to the device's time:
 * otherwise a 1 ms step would measure 1.4 ms when the pipeline saturates the cores, and the device's
 * rate, idle time and AU would all depend on the host's load.
 *
 * Device memory is not modelled: a batch is "on the device" once its copy time has passed, and
 * normalize.on_device costs nothing here. */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "device.h"
#include "sat.h"

static int emulated_h2d(pb_device *d, int index, pb_elem *batch, pb_h2d_times *t) {
  /* bytes / (GB/s x 1e9) seconds = bytes / GB/s nanoseconds; saturated, as the config's range (at least
   * 0.001 GB/s) already keeps it in days, not in overflow */
  uint64_t copy_ns = pb_sat_u64_from_double((double)batch->bytes / d->h2d_gb_per_s);
  uv_mutex_lock(&d->copy_lock);
  uint64_t now = pb_now_ns();
  uint64_t start = d->copy_free_at_ns > now ? d->copy_free_at_ns : now; /* queue behind earlier copies */
  uint64_t end = pb_sat_add_u64(start, copy_ns);
  d->copy_free_at_ns = end;
  uv_mutex_unlock(&d->copy_lock);
  pb_sleep_until_ns(end);
  /* The copy runs from when the shared copy engine is free (earlier copies queue ahead of it) for its
   * modelled time: its end is in device time, however late this thread wakes. */
  *t = (pb_h2d_times){.start_ns = start, .end_ns = end, .wait_start_ns = now, .wait_end_ns = now};
  if (index >= 0) batch->device = (uint8_t)index;
  return 0;
}

/* The step's sleep, in slices: a long emulated step (step_ms in seconds) must not hold a SIGINT/SIGTERM
 * up for its whole length (docs/CONTRACT.md: exit 130 promptly, the partial report written), nor a run stopped
 * by an error (pb_device_cancel).  True when one of them cut it short. */
#define STEP_SLICE_NS 20000000ull
static bool sleep_unless_signalled(pb_device *d, uint64_t until_ns) {
  for (uint64_t now = pb_now_ns(); now < until_ns; now = pb_now_ns()) {
    if (pb_signalled() || atomic_load(&d->cancelled)) return true;
    pb_sleep_until_ns(until_ns - now > STEP_SLICE_NS ? now + STEP_SLICE_NS : until_ns);
  }
  return false;
}

static int emulated_step(pb_device *d, int index, pb_elem *batch, uint64_t ready_ns, uint64_t *start_ns,
                         uint64_t *end_ns) {
  (void)batch;
  uint64_t now = pb_now_ns();
  uint64_t step_ns = pb_sat_u64_from_double(pb_device_draw_step_ms(d, index) * 1e6);
  /* The launch was queued when the batch was ready, unless this thread is a whole step late: then the
   * host could not have queued it (it was busy elsewhere), and the late start is the host's, as on a
   * GPU whose launch queue ran dry.  Without this, device time would fall ever further behind. */
  uint64_t t0 = ready_ns && ready_ns < now && now - ready_ns < step_ns ? ready_ns : now;
  uint64_t end = pb_sat_add_u64(t0, step_ns);
  if (step_ns && sleep_unless_signalled(d, end)) return -ECANCELED; /* the batch counts as in flight */
  *start_ns = t0;
  *end_ns = end;
  return 0;
}

static void emulated_close(pb_device *d) { uv_mutex_destroy(&d->copy_lock); }

static void emulated_cancel(pb_device *d) { atomic_store(&d->cancelled, true); }

static const pb_device_ops emulated_ops = {
    .h2d = emulated_h2d,
    .step = emulated_step,
    .cancel = emulated_cancel,
    .close = emulated_close,
};

void pb_device_emulated_init(pb_device *d, const pb_config *cfg) {
  *d = (pb_device){.ops = &emulated_ops, .kind = "emulated", .timing_source = "emulated"};
  d->count = cfg->device.count;
  d->idle_pct_cuda_events = NAN;
  d->h2d_gb_per_s = cfg->device.h2d_gb_per_s;
  d->step_normal = cfg->device.step_normal;
  d->step_ms = cfg->device.step_ms;
  d->step_stdev_ms = cfg->device.step_stdev_ms;
  snprintf(d->name, sizeof d->name, "H2D %g GB/s, step %s", d->h2d_gb_per_s, d->step_normal ? "normal" : "constant");
  for (int i = 0; i < d->count && i < PB_MAX_DEVICES; i++) {
    d->ids[i] = i;
    snprintf(d->names[i], sizeof d->names[i], "emulated %d", i);
  }
  uv_mutex_init(&d->copy_lock);
  for (int i = 0; i < PB_MAX_DEVICES; i++) pb_rng_seed(&d->rng[i], cfg->seed * 1000003u + (uint64_t)i);
}

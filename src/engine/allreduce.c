#include "allreduce.h"

#include <errno.h>
#include <stdlib.h>

#include "world.h"

uint64_t pb_allreduce_model_ns(const pb_allreduce_cfg *a) {
  if (!(a->gb_per_s > 0)) return 0;
  return (uint64_t)((double)pb_allreduce_bytes(a) / a->gb_per_s); /* bytes / (GB/s) = ns */
}

int pb_exchange_init(pb_exchange *x, const pb_config *cfg, int world_size, pb_err *err) {
  *x = (pb_exchange){0};
  const pb_allreduce_cfg *a = &cfg->device.allreduce;
  if (world_size < 2 || (a->mode != PB_ALLREDUCE_BARRIER && a->mode != PB_ALLREDUCE_MPI)) return 0;
  /* One exchange per step per rank: with several device threads a rank's exchanges would interleave with
   * no order the other ranks could match (and MPI is initialised for one calling thread at a time). */
  if (cfg->device.count > 1)
    return pb_err_setc(err, -EINVAL,
                       "device.allreduce.mode %s: device.count is %d (expected 1 device per rank in a job "
                       "of %d ranks: run one rank per GPU, as data-parallel training does)",
                       pb_allreduce_mode_name(a->mode), cfg->device.count, world_size);
  if (!pb_world_get()->threads_ok)
    return pb_err_setc(err, -EINVAL,
                       "device.allreduce.mode %s: this MPI library does not allow calls from the device "
                       "thread (expected MPI_THREAD_SERIALIZED support; OpenMPI has it)",
                       pb_allreduce_mode_name(a->mode));
  /* barrier: only the flag; mpi: the gradient as float32 (rounded up) and the flag */
  uint64_t grad = a->mode == PB_ALLREDUCE_MPI ? (pb_allreduce_bytes(a) + 3) / 4 : 0;
  x->nfloats = (size_t)grad + 1;
  x->buf = calloc(x->nfloats, sizeof *x->buf);
  if (!x->buf)
    return pb_err_setc(err, -ENOMEM, "device.allreduce: out of memory for %llu gradient bytes",
                       (unsigned long long)pb_allreduce_bytes(a));
  x->active = true;
  return 0;
}

/* One exchange; returns the sum of every rank's stop flag. */
static float exchange(pb_exchange *x, bool stopping) {
  x->buf[x->nfloats - 1] = stopping ? 1.0f : 0.0f;
  pb_world_allreduce_sum(x->buf, x->nfloats);
  x->calls++;
  return x->buf[x->nfloats - 1];
}

bool pb_exchange_step(pb_exchange *x, uint64_t *start_ns, uint64_t *end_ns) {
  *start_ns = *end_ns = 0;
  if (!x->active || x->left) return false;
  *start_ns = pb_now_ns();
  bool others_left = exchange(x, false) > 0.5f;
  *end_ns = pb_now_ns();
  if (others_left) x->left = true; /* every rank saw the flag: no one exchanges again */
  return others_left;
}

void pb_exchange_leave(pb_exchange *x) {
  if (!x->active || x->left) return;
  exchange(x, true);
  x->left = true;
}

void pb_exchange_close(pb_exchange *x) {
  free(x->buf);
  *x = (pb_exchange){0};
}

/* device.allreduce: the gradient exchange data-parallel training does after every step (issue 8).
 *
 *   none     nothing (the default).
 *   model    bytes / gb_per_s of device time after each step, communicating with no one: what a known
 *            interconnect would add, in one process or many.
 *   barrier  every rank waits for every other after each step (a 4-byte allreduce): ranks run in lockstep,
 *            so the slowest rank's input pipeline holds back the job, as in synchronous training.
 *   mpi      a real MPI_Allreduce of `bytes` (float32, sum) between the ranks after each step.
 *
 * barrier and mpi talk to the other ranks of an mpirun job (in a world of one there is no one to talk to,
 * and they cost nothing).  Ranks may run out of steps at different times (uneven shards, duration runs,
 * a failure, a signal), and a rank that stops exchanging would leave the others waiting forever.  So every
 * exchange carries one more float, the stop flag: a rank that stops makes one last exchange with the flag
 * set (pb_exchange_leave), and a rank that sees the flag set stops after that step, as it would in training
 * with uneven inputs.  Every rank therefore makes the same number of exchanges, and the job ends within one
 * step of the first rank to stop. */
#ifndef PB_ALLREDUCE_H
#define PB_ALLREDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "config.h"

typedef struct pb_exchange {
  bool active;          /* barrier or mpi with more than one rank */
  bool left;            /* this rank's last exchange is made (it left, or learnt that another rank did) */
  float *buf;           /* the gradient (zeros) and, in the last slot, the stop flag */
  size_t nfloats;
  uint64_t calls;       /* exchanges made, the last one included */
} pb_exchange;

/* Sets up this rank's side of the exchange for cfg in a job of world_size ranks.  0, or -EINVAL / -ENOMEM
 * with err set (several devices per rank, no memory for the gradient).  Every rank must call it and agree
 * on its outcome (pb_world_max_status) before any exchange. */
int pb_exchange_init(pb_exchange *x, const pb_config *cfg, int world_size, pb_err *err);
/* After a step: the exchange, timed on the monotonic clock.  Returns true when another rank has left: this
 * rank must stop after this step (and must not call leave). */
bool pb_exchange_step(pb_exchange *x, uint64_t *start_ns, uint64_t *end_ns);
/* This rank stops: its last exchange, with the stop flag (nothing when inactive or already left). */
void pb_exchange_leave(pb_exchange *x);
void pb_exchange_close(pb_exchange *x);

/* model: the device time one step's exchange takes, bytes / gb_per_s (0 without gb_per_s). */
uint64_t pb_allreduce_model_ns(const pb_allreduce_cfg *a);

#endif

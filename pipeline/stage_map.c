/* `map`: applies its ops to each sample in order.  This version runs the emulation ops: `spin` burns
 * CPU for `us` microseconds (a CPU-bound transformation), `sleep` waits without CPU (I/O-like).  An
 * empty ops list is a no-op map, which is how the engine's own per-hop cost is measured. */
#include "engine.h"

static void apply_op(const pb_op_cfg *op) {
  switch (op->kind) {
    case PB_OP_SPIN:
      pb_spin_until_ns(pb_now_ns() + (uint64_t)op->us * 1000u);
      break;
    case PB_OP_SLEEP:
      pb_sleep_until_ns(pb_now_ns() + (uint64_t)op->us * 1000u);
      break;
    default: /* refused at plan time (engine.c check_implemented) */
      break;
  }
}

static int map_process(pb_worker *w, pb_elem *in) {
  const pb_stage_cfg *sc = w->stage->cfg;
  for (int i = 0; i < sc->nops; i++) apply_op(&sc->ops[i]);
  return pb_emit(w, in);
}

const pb_stage_ops pb_stage_map_ops = {
    .type = "map",
    .process = map_process,
};

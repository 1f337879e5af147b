/* Which stage types this build runs.  A type without ops here is refused at plan time with a clear
 * message (engine.c), never silently skipped. */
#include "engine.h"

extern const pb_stage_ops pb_stage_read_ops, pb_stage_decode_ops, pb_stage_map_ops, pb_stage_shuffle_ops,
    pb_stage_cache_ops, pb_stage_batch_ops, pb_stage_prefetch_ops, pb_stage_h2d_ops;

const pb_stage_ops *pb_stage_ops_for(pb_stage_type t) {
  switch (t) {
    case PB_STAGE_READ: return &pb_stage_read_ops;
    case PB_STAGE_DECODE: return &pb_stage_decode_ops;
    case PB_STAGE_MAP: return &pb_stage_map_ops;
    case PB_STAGE_SHUFFLE: return &pb_stage_shuffle_ops;
    case PB_STAGE_CACHE: return &pb_stage_cache_ops;
    case PB_STAGE_BATCH: return &pb_stage_batch_ops;
    case PB_STAGE_PREFETCH: return &pb_stage_prefetch_ops;
    case PB_STAGE_H2D: return &pb_stage_h2d_ops;
    default: return NULL;
  }
}

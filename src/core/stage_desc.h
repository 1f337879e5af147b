/* What the config knows about one stage type, in one place: src/core/stages/<type>.c holds its option table
 * (the rows of its JSON keys), its placement and consistency rules, the per-sample shape it emits and the
 * knobs `pipebench tune` searches.  config_schema.c, config_pipeline.c and config_shape.c keep the generic
 * machinery and ask the description for the rest; the engine's pb_stage_ops (src/engine/pipeline/engine.h) points at
 * it, so a stage's runtime and its config facts are two files, not eight.
 *
 * The core layer: nothing here knows the engine, so `validate`, the analysis and the commands read these
 * facts without one. */
#ifndef PB_STAGE_DESC_H
#define PB_STAGE_DESC_H

#include "config.h"

struct pb_cfg_ctx;   /* config_internal.h: the loader's context (file, error, the config being filled) */
struct pb_key_table; /* config_internal.h: the rows of one JSON object's keys */

/* Where a stage may stand relative to the one batch stage (config_pipeline.c checks it for every type). */
typedef enum {
  PB_PLACE_BEFORE_BATCH, /* per-sample: read, decode, map, shuffle, cache */
  PB_PLACE_BATCH,        /* the batch stage itself (exactly one) */
  PB_PLACE_AFTER_BATCH,  /* batches: prefetch, h2d */
} pb_stage_place;

typedef struct pb_stage_desc {
  pb_stage_type type;
  const char *name; /* the "type" value in the config; pb_stage_type_name(type) */
  /* Every key of a stage of this type, one row each: parsing, defaults, suggestions, to_json, CONFIG.md. */
  const struct pb_key_table *options;
  pb_stage_place place;
  /* stages[i] is of this type and stands where `place` allows: the type's own rules (how many, what
   * must come first, what the dataset must be).  0, or fails through the context.  NULL: none. */
  int (*check)(struct pb_cfg_ctx *c, int i);
  /* After every stage passed `check` and there is a batch: rules that look at the stages after this one
   * (decode's fused_crop) or at the dataset as a whole (a cache of an endless source).  NULL: none. */
  int (*check_pipeline)(struct pb_cfg_ctx *c, int i);
  /* The per-sample shape leaving stages[i], from the one entering it (*cur, changed in place); fails
   * through the context when the input cannot take the stage's work.  NULL: the shape passes unchanged. */
  int (*shape)(struct pb_cfg_ctx *c, int i, pb_shape *cur);
  /* The integer keys `pipebench tune` searches for a stage of this type (NULL-terminated; NULL: none):
   * "threads" where a stage may run several, "depth" for prefetch. */
  const char *const *knobs;
} pb_stage_desc;

/* Each type's, one per file of src/core/stages/ (the engine's stage ops point at them). */
extern const pb_stage_desc pb_stage_desc_read, pb_stage_desc_decode, pb_stage_desc_map, pb_stage_desc_shuffle,
    pb_stage_desc_cache, pb_stage_desc_batch, pb_stage_desc_prefetch, pb_stage_desc_h2d;

/* The description of type t (never NULL for a valid type; NULL past PB_STAGE__COUNT). */
const pb_stage_desc *pb_stage_desc_for(pb_stage_type t);
/* Is `key` one of the knobs of type t that the tuner searches? */
bool pb_stage_has_knob(pb_stage_type t, const char *key);

#endif

/* A uint64 -> uint64 hash map (open addressing, linear probing) for the trace analysis: element key ->
 * the event that emitted it.  Built once after the run; never shrinks. */
#ifndef PB_KEYMAP_H
#define PB_KEYMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pb_keymap {
  uint64_t *keys, *vals;
  size_t mask, count;
} pb_keymap;

/* Room for `expected` keys (at most half full).  0 or -ENOMEM. */
int pb_keymap_init(pb_keymap *m, size_t expected);
void pb_keymap_free(pb_keymap *m);
/* Inserts or replaces.  The key UINT64_MAX is reserved (ignored). */
void pb_keymap_put(pb_keymap *m, uint64_t key, uint64_t val);
bool pb_keymap_get(const pb_keymap *m, uint64_t key, uint64_t *val);

#endif

#include "keymap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EMPTY UINT64_MAX

static size_t slot(const pb_keymap *m, uint64_t key) {
  key ^= key >> 33; /* murmur3's finaliser: ids are sequential, spread them */
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return (size_t)key & m->mask;
}

int pb_keymap_init(pb_keymap *m, size_t expected) {
  memset(m, 0, sizeof *m);
  size_t cap = 16;
  while (cap < expected * 2) cap *= 2;
  m->keys = malloc(cap * sizeof *m->keys);
  m->vals = malloc(cap * sizeof *m->vals);
  if (!m->keys || !m->vals) {
    pb_keymap_free(m);
    return -ENOMEM;
  }
  memset(m->keys, 0xff, cap * sizeof *m->keys);
  m->mask = cap - 1;
  return 0;
}

void pb_keymap_free(pb_keymap *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

void pb_keymap_put(pb_keymap *m, uint64_t key, uint64_t val) {
  if (key == EMPTY || !m->keys || m->count * 2 >= m->mask + 1) return; /* sized by init: never full */
  size_t i = slot(m, key);
  while (m->keys[i] != EMPTY && m->keys[i] != key) i = (i + 1) & m->mask;
  if (m->keys[i] == EMPTY) m->count++;
  m->keys[i] = key;
  m->vals[i] = val;
}

bool pb_keymap_get(const pb_keymap *m, uint64_t key, uint64_t *val) {
  if (key == EMPTY || !m->keys) return false;
  size_t i = slot(m, key);
  while (m->keys[i] != EMPTY) {
    if (m->keys[i] == key) {
      *val = m->vals[i];
      return true;
    }
    i = (i + 1) & m->mask;
  }
  return false;
}

#include "tf_example.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_err.h"
#include "example.pb-c.h"

/* ---- per-thread arena for protobuf-c's unpack --------------------------------------------------------- */

/* An allocation that did not fit the arena's block during this parse; freed at the next reset. */
typedef union overflow_chunk {
  union overflow_chunk *next;
  max_align_t align; /* keeps the bytes after the header aligned for any type */
} overflow_chunk;

typedef struct arena {
  uint8_t *base;
  size_t cap_bytes, used_bytes;
  overflow_chunk *overflow;
  size_t overflow_bytes;
  bool out_of_memory, registered;
} arena;

static __thread arena tl_arena;
static pthread_key_t arena_key;
static pthread_once_t arena_key_once = PTHREAD_ONCE_INIT;

static size_t align_up(size_t n) {
  const size_t a = alignof(max_align_t);
  return (n + a - 1) / a * a;
}

static void *overflow_alloc(arena *a, size_t size) {
  overflow_chunk *c = malloc(sizeof *c + size);
  if (!c) {
    a->out_of_memory = true;
    return NULL;
  }
  c->next = a->overflow;
  a->overflow = c;
  a->overflow_bytes += size;
  return c + 1;
}

static void *arena_alloc(void *data, size_t size) {
  arena *a = data;
  size = align_up(size ? size : 1);
  if (a->cap_bytes - a->used_bytes < size) return overflow_alloc(a, size);
  void *p = a->base + a->used_bytes;
  a->used_bytes += size;
  return p;
}

/* protobuf-c frees what it unpacked (or half-unpacked) piece by piece; the arena frees it all at reset. */
static void arena_free(void *data, void *pointer) {}

static void free_overflow(arena *a) {
  while (a->overflow) {
    overflow_chunk *next = a->overflow->next;
    free(a->overflow);
    a->overflow = next;
  }
  a->overflow_bytes = 0;
}

/* Starts a parse.  When the last parse spilled over, the block is regrown (with headroom) to hold it, so
 * only records bigger than any seen before cost a malloc. */
static void arena_reset(arena *a) {
  if (a->overflow_bytes > 0) {
    size_t want = 2 * (a->used_bytes + a->overflow_bytes);
    uint8_t *grown = malloc(want);
    if (grown) {
      free(a->base);
      a->base = grown;
      a->cap_bytes = want;
    }
  }
  free_overflow(a);
  a->used_bytes = 0;
  a->out_of_memory = false;
}

static void arena_destroy(void *p) {
  arena *a = p;
  free_overflow(a);
  free(a->base);
  *a = (arena){0};
}

static void arena_key_init(void) { pthread_key_create(&arena_key, arena_destroy); }

/* The calling thread's arena; registering it with a pthread key makes thread exit free it. */
static arena *thread_arena(void) {
  arena *a = &tl_arena;
  if (!a->registered) {
    pthread_once(&arena_key_once, arena_key_init);
    pthread_setspecific(arena_key, a);
    a->registered = true;
  }
  return a;
}

void pb_example_release_arena(void) {
  if (!tl_arena.registered) return;
  pthread_setspecific(arena_key, NULL);
  arena_destroy(&tl_arena);
}

/* ---- parse --------------------------------------------------------------------------------------------- */

static const char *kind_name(Tensorflow__Feature__KindCase kind) {
  switch (kind) {
    case TENSORFLOW__FEATURE__KIND_BYTES_LIST: return "bytes_list";
    case TENSORFLOW__FEATURE__KIND_FLOAT_LIST: return "float_list";
    case TENSORFLOW__FEATURE__KIND_INT64_LIST: return "int64_list";
    default: return "feature with no value";
  }
}

/* The entry named `name`, or NULL.  A later duplicate key wins, as protobuf map semantics say. */
static const Tensorflow__Features__FeatureEntry *find_entry(const Tensorflow__Example *ex, const char *name) {
  const Tensorflow__Features__FeatureEntry *found = NULL;
  for (size_t i = 0; ex->features && i < ex->features->n_feature; i++) {
    const Tensorflow__Features__FeatureEntry *e = ex->features->feature[i];
    if (e && e->key && strcmp(e->key, name) == 0) found = e;
  }
  return found;
}

/* "'a', 'b', ..." into out (cut short with "..." when it does not fit, so the error stays one line).  The keys
 * come from the file: bytes that are not printable ASCII (a newline, say) show as '?', as in npy.c's errors. */
static void list_features(const Tensorflow__Example *ex, char *out, size_t cap) {
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; ex->features && i < ex->features->n_feature; i++) {
    const char *key = ex->features->feature[i]->key;
    int n = snprintf(out + used, cap - used, "%s'%s'", i ? ", " : "", key ? key : "");
    if (n < 0 || (size_t)n >= cap - used) {
      strcpy(out + PB_MIN(used, cap - sizeof ", ..."), ", ...");
      return;
    }
    for (size_t k = used; k < used + (size_t)n; k++)
      if (!isprint((unsigned char)out[k])) out[k] = '?';
    used += (size_t)n;
  }
}

static int missing_feature(const Tensorflow__Example *ex, const char *feature, const char *file,
                           uint64_t offset, pb_err *err) {
  char present[512];
  list_features(ex, present, sizeof present);
  if (!present[0])
    return PB_BAD_DATA(err, "%s: offset %" PRIu64 ": feature '%s' not in the Example, which has no features "
                       "(expected an Example with feature '%s')", pb_ds_name(file), offset, feature, feature);
  return PB_BAD_DATA(err, "%s: offset %" PRIu64 ": feature '%s' not in the Example (expected one of: %s)",
                     pb_ds_name(file), offset, feature, present);
}

/* Unpacks `rec` into the thread's arena and finds `feature`, which must be of kind `want`. */
static int lookup(const uint8_t *rec, size_t rec_bytes, const char *feature, Tensorflow__Feature__KindCase want,
                  const Tensorflow__Feature **out, const char *file, uint64_t offset, pb_err *err) {
  arena *a = thread_arena();
  arena_reset(a);
  ProtobufCAllocator alloc = {.alloc = arena_alloc, .free = arena_free, .allocator_data = a};
  Tensorflow__Example *ex = tensorflow__example__unpack(&alloc, rec_bytes, rec);
  if (!ex && a->out_of_memory) {
    pb_err_set(err, "%s: offset %" PRIu64 ": out of memory parsing a %zu-byte Example (expected %zu free bytes)",
               pb_ds_name(file), offset, rec_bytes, 2 * rec_bytes);
    return -ENOMEM;
  }
  if (!ex)
    return PB_BAD_DATA(err, "%s: offset %" PRIu64 ": record of %zu bytes is not a tf.train.Example (expected a "
                       "serialized tf.train.Example protobuf)", pb_ds_name(file), offset, rec_bytes);
  const Tensorflow__Features__FeatureEntry *e = find_entry(ex, feature);
  if (!e) return missing_feature(ex, feature, file, offset, err);
  Tensorflow__Feature__KindCase kind = e->value ? e->value->kind_case : TENSORFLOW__FEATURE__KIND__NOT_SET;
  if (kind != want)
    return PB_BAD_DATA(err, "%s: offset %" PRIu64 ": feature '%s' is a %s (expected a %s)", pb_ds_name(file),
                       offset, feature, kind_name(kind), kind_name(want));
  *out = e->value;
  return 0;
}

static int one_value(size_t n_value, const char *feature, const char *file, uint64_t offset, pb_err *err) {
  if (n_value == 1) return 0;
  return PB_BAD_DATA(err, "%s: offset %" PRIu64 ": feature '%s' holds %zu values (expected exactly 1)",
                     pb_ds_name(file), offset, feature, n_value);
}

int pb_example_get_bytes(const uint8_t *rec, size_t rec_bytes, const char *feature, const uint8_t **value,
                         size_t *value_bytes, const char *file, uint64_t offset, pb_err *err) {
  static const uint8_t empty[1];
  const Tensorflow__Feature *f;
  int rc = lookup(rec, rec_bytes, feature, TENSORFLOW__FEATURE__KIND_BYTES_LIST, &f, file, offset, err);
  if (rc == 0) rc = one_value(f->bytes_list->n_value, feature, file, offset, err);
  if (rc < 0) return rc;
  const ProtobufCBinaryData *v = &f->bytes_list->value[0];
  *value = v->data ? v->data : empty; /* protobuf-c leaves an empty value's data NULL */
  *value_bytes = v->len;
  return 0;
}

int pb_example_get_int64(const uint8_t *rec, size_t rec_bytes, const char *feature, int64_t *value,
                         const char *file, uint64_t offset, pb_err *err) {
  const Tensorflow__Feature *f;
  int rc = lookup(rec, rec_bytes, feature, TENSORFLOW__FEATURE__KIND_INT64_LIST, &f, file, offset, err);
  if (rc == 0) rc = one_value(f->int64_list->n_value, feature, file, offset, err);
  if (rc < 0) return rc;
  *value = f->int64_list->value[0];
  return 0;
}

/* ---- encode -------------------------------------------------------------------------------------------- */

/* Everything one feature's message tree needs, kept together so encoding allocates once. */
typedef struct enc_feature {
  Tensorflow__Features__FeatureEntry entry;
  Tensorflow__Feature feature;
  Tensorflow__BytesList bytes_list;
  Tensorflow__Int64List int64_list;
  ProtobufCBinaryData bin;
  int64_t int64;
} enc_feature;

static bool fill_feature(enc_feature *e, const pb_example_feature *src) {
  if (!src->name || (src->kind == PB_FEATURE_BYTES && !src->data && src->bytes)) return false;
  e->entry = (Tensorflow__Features__FeatureEntry)TENSORFLOW__FEATURES__FEATURE_ENTRY__INIT;
  e->feature = (Tensorflow__Feature)TENSORFLOW__FEATURE__INIT;
  e->entry.key = (char *)src->name; /* pack only reads it */
  e->entry.value = &e->feature;
  if (src->kind == PB_FEATURE_BYTES) {
    e->bytes_list = (Tensorflow__BytesList)TENSORFLOW__BYTES_LIST__INIT;
    e->bin = (ProtobufCBinaryData){.len = src->bytes, .data = (uint8_t *)src->data};
    e->bytes_list.n_value = 1;
    e->bytes_list.value = &e->bin;
    e->feature.kind_case = TENSORFLOW__FEATURE__KIND_BYTES_LIST;
    e->feature.bytes_list = &e->bytes_list;
    return true;
  }
  e->int64_list = (Tensorflow__Int64List)TENSORFLOW__INT64_LIST__INIT;
  e->int64 = src->int64;
  e->int64_list.n_value = 1;
  e->int64_list.value = &e->int64;
  e->feature.kind_case = TENSORFLOW__FEATURE__KIND_INT64_LIST;
  e->feature.int64_list = &e->int64_list;
  return src->kind == PB_FEATURE_INT64;
}

static size_t pack_example(Tensorflow__Features__FeatureEntry **entries, int n, uint8_t **out) {
  Tensorflow__Features features = TENSORFLOW__FEATURES__INIT;
  Tensorflow__Example ex = TENSORFLOW__EXAMPLE__INIT;
  features.n_feature = (size_t)n;
  features.feature = entries;
  ex.features = &features;
  size_t size = tensorflow__example__get_packed_size(&ex);
  *out = malloc(size);
  if (!*out) return 0;
  return tensorflow__example__pack(&ex, *out);
}

size_t pb_example_encode(const pb_example_feature *features, int n, uint8_t **out) {
  *out = NULL;
  if (n < 0 || (n > 0 && !features)) return 0;
  enc_feature *enc = calloc((size_t)n + 1, sizeof *enc); /* +1: calloc(0) may give NULL */
  Tensorflow__Features__FeatureEntry **entries = calloc((size_t)n + 1, sizeof *entries);
  size_t size = 0;
  bool ok = enc && entries;
  for (int i = 0; ok && i < n; i++) {
    ok = fill_feature(&enc[i], &features[i]);
    entries[i] = &enc[i].entry;
  }
  if (ok) size = pack_example(entries, n, out);
  free(enc);
  free(entries);
  return size;
}

size_t pb_example_encode_bytes(const char *feature, const void *data, size_t len, uint8_t **out) {
  pb_example_feature f = {.name = feature, .kind = PB_FEATURE_BYTES, .data = data, .bytes = len};
  return pb_example_encode(&f, 1, out);
}

static void feature_info(const Tensorflow__Features__FeatureEntry *e, pb_example_feature_info *info) {
  const Tensorflow__Feature *f = e->value;
  *info = (pb_example_feature_info){.name = e->key ? e->key : "", .kind = -1};
  if (!f) return;
  if (f->kind_case == TENSORFLOW__FEATURE__KIND_BYTES_LIST && f->bytes_list) {
    info->kind = 0, info->nvalues = f->bytes_list->n_value;
    if (info->nvalues) info->first = f->bytes_list->value[0].data, info->first_bytes = f->bytes_list->value[0].len;
  } else if (f->kind_case == TENSORFLOW__FEATURE__KIND_INT64_LIST && f->int64_list) {
    info->kind = 1, info->nvalues = f->int64_list->n_value;
  } else if (f->kind_case == TENSORFLOW__FEATURE__KIND_FLOAT_LIST && f->float_list) {
    info->kind = 2, info->nvalues = f->float_list->n_value;
  }
}

int pb_example_features(const uint8_t *rec, size_t rec_bytes, pb_example_feature_info *out, int max, const char *file,
                        pb_err *err) {
  arena *a = thread_arena();
  arena_reset(a);
  ProtobufCAllocator alloc = {.alloc = arena_alloc, .free = arena_free, .allocator_data = a};
  Tensorflow__Example *ex = tensorflow__example__unpack(&alloc, rec_bytes, rec);
  if (!ex)
    return PB_BAD_DATA(err,
                       "%s: record of %zu bytes is not a tf.train.Example (expected a serialized "
                       "tf.train.Example protobuf)",
                       pb_ds_name(file), rec_bytes);
  int n = ex->features ? (int)ex->features->n_feature : 0;
  for (int i = 0; i < n && i < max; i++) feature_info(ex->features->feature[i], &out[i]);
  return n;
}

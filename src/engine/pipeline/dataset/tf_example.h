/* tf.train.Example records (the payload of TFRecord files), parsed and built with protobuf-c.
 *
 * Memory: a parse unpacks the record into a per-thread arena that is reset by the next parse on the same
 * thread, grows to the largest record seen and is freed when the thread exits.  So after warm-up a parse
 * does no malloc and nothing can leak, at the price of this rule:
 *
 *   the value a pb_example_get_* call returns stays valid only until the calling thread's next
 *   pb_example_get_* call (copy it out, or finish with it, first).
 *
 * (protobuf-c copies bytes fields out of the record, so the value never points into `rec` itself.) */
#ifndef PB_TF_EXAMPLE_H
#define PB_TF_EXAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* The single value of bytes feature `feature` of the Example `rec`.  0 with *value / *value_bytes set (an
 * empty value gives a non-NULL *value and 0 bytes); else a negative errno with `err` naming `file` and the
 * record's `offset` for: not an Example, feature missing (the message lists the features present), feature
 * not a bytes_list, bytes_list without exactly one value. */
int pb_example_get_bytes(const uint8_t *rec, size_t rec_bytes, const char *feature, const uint8_t **value,
                         size_t *value_bytes, const char *file, uint64_t offset, pb_err *err);

/* The same for an int64 feature with exactly one value (e.g. "image/class/label"). */
int pb_example_get_int64(const uint8_t *rec, size_t rec_bytes, const char *feature, int64_t *value,
                         const char *file, uint64_t offset, pb_err *err);

/* What one feature of an Example holds (pb_example_features). */
typedef struct pb_example_feature_info {
  const char *name;     /* valid until the thread's next pb_example_* parse */
  int kind;             /* 0 bytes_list, 1 int64_list, 2 float_list, -1 no value */
  size_t nvalues;       /* values in the list */
  const uint8_t *first; /* bytes_list: the first value, and its size */
  size_t first_bytes;
} pb_example_feature_info;

/* The features of the Example `rec`, in record order, into out[0..max): how many there are (may exceed
 * max), or a negative errno with err set when `rec` is not an Example.  What `out` points to stays valid
 * until the calling thread's next pb_example_* parse. */
int pb_example_features(const uint8_t *rec, size_t rec_bytes, pb_example_feature_info *out, int max, const char *file,
                        pb_err *err);

/* Frees the calling thread's parse arena now instead of at thread exit (values from it become invalid). */
void pb_example_release_arena(void);

typedef enum pb_feature_kind { PB_FEATURE_BYTES, PB_FEATURE_INT64 } pb_feature_kind;

/* One feature to encode: a single bytes value (`data`, `bytes`) or a single int64 (`int64`). */
typedef struct pb_example_feature {
  const char *name;
  pb_feature_kind kind;
  const void *data;
  size_t bytes;
  int64_t int64;
} pb_example_feature;

/* Serializes an Example holding `n` features, in the given order, into a malloc'd *out the caller frees.
 * Returns the size in bytes (always > 0 on success), or 0 on failure (out of memory, bad argument). */
size_t pb_example_encode(const pb_example_feature *features, int n, uint8_t **out);

/* An Example with one bytes feature. */
size_t pb_example_encode_bytes(const char *feature, const void *data, size_t len, uint8_t **out);

#endif

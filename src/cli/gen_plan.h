/* `pipebench gen`'s plan, as pure functions of the config: which files it writes and under which names, how
 * the samples split over them, each record's size and the seed of its bytes, and what it refuses to
 * generate.  gen.c does the writing; these are the decisions, here so the unit tests reach them
 * (tests/unit/test_gen.c). */
#ifndef PB_GEN_PLAN_H
#define PB_GEN_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* The manifest gen keeps in dataset.path (the spec it wrote and whether it finished). */
#define PB_GEN_MANIFEST ".pipebench-dataset.json"

/* File `index`'s name in `format` ("img-00000007.jpg", "shard-00003.tfrecord", "sample-00000001.npy",
 * "sample-00000001.npz", else "records-00002.bin"), into out. */
void pb_gen_file_name(pb_format format, uint64_t index, char *out, size_t len);

/* Is `name` one of the files gen writes (any format), its manifest, or a temporary ".tmp-" one of those?
 * Exact patterns: a user's img-holiday.png is not gen's. */
bool pb_gen_is_generated(const char *name);

/* The payloads are JPEG images: a jpeg dataset, or a tfrecord one with payload jpeg. */
bool pb_gen_jpeg_payload(const pb_dataset_cfg *d);

/* Sample `index`'s record: its index in the dataset (file x samples_per_file + k), and its TFRecord label. */
uint64_t pb_gen_sample_index(uint64_t file, uint64_t samples_per_file, uint64_t k);
int64_t pb_gen_label(uint64_t sample_index);

/* The seed of the size draw for record `key`, and the seed of the random bytes of record `key`. */
uint64_t pb_gen_size_seed(uint64_t seed, uint64_t key);
uint64_t pb_gen_bytes_seed(uint64_t seed, uint64_t key);

/* Record `key`'s bytes: dataset.generate.record_bytes, varied by a normal of record_bytes_stdev seeded with
 * pb_gen_size_seed (at least 1). */
size_t pb_gen_record_bytes(const pb_config *cfg, uint64_t key);

/* An npy/npz file's one uint8 array: [samples_per_file, record_bytes], or [record_bytes] for one sample;
 * returns its dimensions (1 or 2). */
int pb_gen_array_shape(uint64_t samples_per_file, size_t record_bytes, int64_t shape[2]);

/* Writer threads: the cores available (at least 1, at most 16), no more than there are files. */
int pb_gen_workers(unsigned available, int64_t num_files);

/* What gen needs of the config beyond validation: NULL when it can generate, else why not (a static
 * string or why_buf), with *path the config key at fault. */
const char *pb_gen_refusal(const pb_config *cfg, const char **path, char *why_buf, size_t len);

#endif

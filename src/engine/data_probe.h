/* What a directory of the user's data holds, read from a sample of it (`pipebench init`, issue 34): its
 * files by format (by extension, checked against their first bytes), and per format what a config needs to
 * know: JPEG sizes, subsampling and colour spaces from a sample of headers; a TFRecord file's features (the
 * JPEG one, if any) and records per file; an npy array's dtype and shape; an npz archive's members.  Reads
 * at most a few hundred headers and first records, whatever the dataset's size. */
#ifndef PB_DATA_PROBE_H
#define PB_DATA_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define PB_PROBE_SAMPLE 64   /* headers (JPEG) or first records (TFRecord, npy) read */
#define PB_PROBE_FEATURES 16 /* TFRecord features listed */
#define PB_PROBE_EXAMPLES 3  /* skipped or refused files named */

typedef enum pb_probe_format {
  PB_PROBE_NONE,
  PB_PROBE_JPEG,
  PB_PROBE_TFRECORD,
  PB_PROBE_NPY,
  PB_PROBE_NPZ,
  PB_PROBE__COUNT
} pb_probe_format;

/* Files of one format: how many, their bytes, and the smallest, median and largest file. */
typedef struct pb_probe_files {
  size_t count;
  uint64_t bytes, min_bytes, median_bytes, max_bytes;
} pb_probe_files;

typedef struct pb_probe_feature {
  char name[64];
  bool int64;           /* an int64_list (else bytes) */
  uint64_t value_bytes; /* bytes of its (first) value; 0 for int64 */
  bool jpeg;            /* a bytes value starting FF D8 FF: a JPEG payload */
} pb_probe_feature;

typedef struct pb_data_probe {
  pb_probe_files files[PB_PROBE__COUNT]; /* [PB_PROBE_NONE]: files of no format we read (skipped) */
  char skipped[PB_PROBE_EXAMPLES][256];  /* the first few skipped files */
  pb_probe_format format;                /* the dominant format (most files), PB_PROBE_NONE if none */
  char exts[PB_PROBE__COUNT][16][16];    /* the extensions of each format's files (without the dot; "" none) */
  int nexts[PB_PROBE__COUNT];
  int sampled;                           /* headers or first records read */
  /* JPEG (also a TFRecord's JPEG payload) */
  int width_min, width_median, width_max, height_min, height_median, height_max;
  int subsamp[6];  /* TurboJPEG's TJSAMP_444, 422, 420, GRAY, 440, 411 */
  int cmyk, other; /* CMYK/YCCK files; files whose subsampling TurboJPEG does not name */
  int bad;         /* sampled files of the format that do not parse (e.g. a PNG named .JPEG) */
  char bad_files[PB_PROBE_EXAMPLES][256];
  char bad_why[PB_PROBE_EXAMPLES][160];
  /* TFRecord: the first record's features, the records in the first file */
  pb_probe_feature features[PB_PROBE_FEATURES];
  int nfeatures;
  int jpeg_feature;            /* index of the JPEG feature, -1 if none */
  int raw_feature;             /* the largest bytes feature, -1 if none */
  uint64_t records_first_file; /* 0 when it could not be counted */
  /* npy (and an npz's first member) */
  char dtype[24];
  int ndims;
  int64_t shape[8];
  bool shapes_vary;
  char members[4][64]; /* npz: the first members' names */
  int nmembers;
} pb_data_probe;

/* Probes `path` (a directory, glob or @list, as dataset.path takes).  0, or a negative errno with err set
 * (nothing listed, an unreadable directory). */
int pb_data_probe_run(const char *path, pb_data_probe *out, pb_err *err);

/* "jpeg", "tfrecord", "npy", "npz", or "other" for PB_PROBE_NONE. */
const char *pb_probe_format_name(pb_probe_format f);

#endif

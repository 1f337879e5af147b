/* The read stage's config facts: its keys, that it stands first and only with files, and what a sample
 * looks like leaving it.  Its runtime is src/engine/pipeline/stage_read.c. */
#include <stddef.h>

#include "config_internal.h"
#include "stage_desc.h"

#define MAX_READ_MB_PER_S 1e9 /* 1 PB/s */

static const pb_key read_keys[] = {
    PB_CFG_STAGE_COMMON,
    PB_CFG_THREADS_ANY,
    ROW(pb_stage_cfg, block_bytes, "block_bytes", PB_KT_INT, .min = 512, .max = 1073741824, .def = "1048576",
        .help = "Bytes per read() call."),
    ROW(pb_stage_cfg, direct, "direct", PB_KT_BOOL, .def = "false", .help = "Open files with O_DIRECT."),
    ROW(pb_stage_cfg, latency_us, "latency_us", PB_KT_INT, .min = 0, .max = 1e7, .def = "0",
        .help = "Emulation: microseconds added to every read."),
    ROW(pb_stage_cfg, bandwidth_mb_per_s, "bandwidth_mb_per_s", PB_KT_NUMBER, .min = PB_CFG_MIN_RATE,
        .max = MAX_READ_MB_PER_S, .flags = PB_KF_ZERO_OFF, .def = "0",
        .help = "Emulation: cap for the whole stage in MB/s (10^6 bytes); 0 = uncapped."),
};
static const pb_key_table read_table = TABLE(read_keys, NULL);

/* read only exists for files, and opens them: stages[0] and nowhere else. */
static int read_check(pb_cfg_ctx *c, int i) {
  int rc = pb_cfg_needs_files(c, i);
  if (rc || i == 0) return rc;
  return pb_cfg_stage_fail(c, i, "a read stage after other stages", "at most one read stage, as stages[0]");
}

/* JPEG payloads leave read still encoded; everything else is fixed-size records of bytes. */
static int read_shape(pb_cfg_ctx *c, int i, pb_shape *out) {
  (void)i;
  const pb_dataset_cfg *d = &c->cfg->dataset;
  int64_t bytes = d->record_bytes > 0 ? d->record_bytes : -1;
  if (d->format == PB_FMT_JPEG || (d->format == PB_FMT_TFRECORD && d->payload == PB_PAYLOAD_JPEG))
    pb_cfg_set_encoded_bytes(out);
  else
    pb_cfg_set_shape(out, 1, &bytes, PB_DTYPE_UINT8);
  return 0;
}

static const char *const read_knobs[] = {"threads", NULL};

const pb_stage_desc pb_stage_desc_read = {
    .type = PB_STAGE_READ,
    .name = "read",
    .options = &read_table,
    .place = PB_PLACE_BEFORE_BATCH,
    .check = read_check,
    .shape = read_shape,
    .knobs = read_knobs,
};

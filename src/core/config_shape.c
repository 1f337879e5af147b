/* Per-sample shape inference: what one sample looks like leaving each stage, so synthetic mode can make
 * look-alike samples and the memory check can size buffers before anything runs.  What a stage does to
 * the shape is its description's (src/core/stages/<type>.c: read, decode, map's ops); this is the walk. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config_internal.h"
#include "stage_desc.h"

size_t pb_dtype_size(pb_dtype d) {
  switch (d) {
  case PB_DTYPE_UINT8: return 1;
  case PB_DTYPE_FLOAT16: return 2;
  case PB_DTYPE_FLOAT32: return 4;
  }
  return 0;
}

/* Saturates at SIZE_MAX, which no memory limit admits. */
size_t pb_shape_bytes(const pb_shape *s) {
  if (!s->known || s->ndims <= 0) return 0;
  size_t bytes = pb_dtype_size(s->dtype);
  for (int i = 0; i < s->ndims && i < PB_MAX_DIMS; i++) {
    if (s->dims[i] <= 0) return 0;
    if (bytes > SIZE_MAX / (uint64_t)s->dims[i]) return SIZE_MAX;
    bytes *= (size_t)s->dims[i];
  }
  return bytes;
}

char *pb_shape_str(const pb_shape *s, char *buf, size_t len) {
  if (s->ndims <= 0) {
    if (s->known) snprintf(buf, len, "[] %s", pb_dtype_name(s->dtype));
    else snprintf(buf, len, "encoded bytes");
    return buf;
  }
  size_t used = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < s->ndims && i < PB_MAX_DIMS && used < len; i++) {
    const char *sep = i ? "," : "";
    if (s->dims[i] < 0) used += (size_t)snprintf(buf + used, len - used, "%s?", sep);
    else used += (size_t)snprintf(buf + used, len - used, "%s%lld", sep, (long long)s->dims[i]);
  }
  if (used < len) snprintf(buf + used, len - used, "] %s", pb_dtype_name(s->dtype));
  return buf;
}

void pb_cfg_set_shape(pb_shape *s, int ndims, const int64_t *dims, pb_dtype dtype) {
  memset(s, 0, sizeof *s);
  s->ndims = ndims;
  s->dtype = dtype;
  s->known = true;
  for (int i = 0; i < ndims; i++) {
    s->dims[i] = dims[i];
    if (dims[i] < 0) s->known = false;
  }
}

void pb_cfg_set_encoded_bytes(pb_shape *s) {
  pb_cfg_set_shape(s, 0, NULL, PB_DTYPE_UINT8);
  s->known = false;
}

int pb_cfg_infer_shapes(pb_cfg_ctx *c) {
  pb_config *cfg = c->cfg;
  const pb_shape *sample = &cfg->dataset.sample;
  pb_shape cur;
  if (cfg->dataset.format == PB_FMT_SYNTHETIC)
    pb_cfg_set_shape(&cur, sample->ndims, sample->dims, sample->dtype);
  else
    pb_cfg_set_encoded_bytes(&cur); /* unused: file formats start with a read stage */
  for (int i = 0; i < cfg->nstages; i++) {
    const pb_stage_desc *d = pb_stage_desc_for(cfg->stages[i].type);
    int rc = d->shape ? d->shape(c, i, &cur) : 0; /* shuffle, cache, batch, prefetch, h2d keep the shape */
    if (rc) return rc;
    memcpy(&cfg->stages[i].out_shape, &cur, sizeof cur);
  }
  return 0;
}

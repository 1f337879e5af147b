/* gen's summary (gen_out.h). */
#include "gen_out.h"

#include <inttypes.h>
#include <math.h>

#include "common.h"

cJSON *pb_gen_out_json(const pb_gen_result *r) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "pipebench_version", PB_VERSION);
  cJSON_AddStringToObject(o, "path", r->path);
  cJSON_AddStringToObject(o, "format", pb_format_name(r->format));
  cJSON_AddBoolToObject(o, "generated", r->generated); /* false: it was up to date */
  cJSON_AddNumberToObject(o, "files", (double)r->files);
  cJSON_AddNumberToObject(o, "samples", (double)r->samples);
  cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
  cJSON_AddNumberToObject(o, "seconds", r->generated ? round(r->seconds * 1e3) / 1e3 : 0);
  return o;
}

void pb_gen_out_text(FILE *out, const pb_gen_result *r) {
  fprintf(out,
          "pipebench: gen: wrote %" PRIu64 " files, %" PRIu64
          " samples, %.1f MB to %s in %.1f s "
          "(sample bytes min %" PRIu64 ", mean %.0f, max %" PRIu64 ")\n",
          r->files, r->samples, (double)r->bytes / 1e6, r->path, r->seconds, r->min_sample_bytes,
          r->samples ? (double)r->payload_bytes / (double)r->samples : 0.0, r->max_sample_bytes);
}

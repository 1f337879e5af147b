/* A record's own memory (record.h); building one from a live run is record_run.c. */
#include "record.h"

#include <math.h>
#include <stdlib.h>
#include <sys/mman.h>


void pb_record_free(pb_record *rec) {
  for (int i = 0; i < rec->nstages; i++) {
    pb_stage_rec *sr = &rec->stages[i];
    for (int k = 0; sr->workers && k < sr->threads; k++) free(sr->workers[k].ev);
    free(sr->workers);
    sr->workers = NULL;
  }
  if (rec->steps_map_bytes) munmap(rec->steps, rec->steps_map_bytes);
  else free(rec->steps);
  rec->steps = NULL;
  rec->steps_map_bytes = 0;
  free(rec->timeline);
  rec->timeline = NULL;
  free(rec->owned_cfg);
  rec->owned_cfg = NULL;
}

int pb_record_last_stage(const pb_record *rec) {
  for (int i = rec->nstages - 1; i >= 0; i--)
    if (!rec->stages[i].skipped) return i;
  return -1;
}

double pb_steps_idle_pct(const pb_step *v, size_t n, int devices, int device, uint64_t ws, uint64_t we) {
  if (we <= ws || devices < 1) return NAN;
  uint64_t busy = 0;
  for (size_t i = 0; i < n; i++)
    if (device < 0 || v[i].device == device) busy += pb_overlap_ns(v[i].compute_start_ns, v[i].compute_end_ns, ws, we);
  double span = (double)(we - ws) * (device < 0 ? devices : 1);
  return 100.0 - (double)busy / span * 100.0;
}

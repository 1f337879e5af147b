#include "timeline.h"

#include <stdio.h>
#include <string.h>


void pb_timeline_init(pb_timeline *tl, uint64_t t0_ns) {
  memset(tl, 0, sizeof *tl);
  tl->t0_ns = t0_ns;
  tl->interval_ns = PB_TIMELINE_FIRST_INTERVAL_NS;
}

void pb_timeline_halve(pb_timeline *tl) {
  size_t m = 0;
  for (size_t i = 0; i + 1 < tl->n; i += 2, m++) {
    uint64_t begin = i ? tl->t_ns[i - 1] : tl->t0_ns;
    double d0 = (double)(tl->t_ns[i] - begin), d1 = (double)(tl->t_ns[i + 1] - tl->t_ns[i]);
    double d = d0 + d1 > 0 ? d0 + d1 : 1;
    for (int k = 0; k < tl->nseries; k++)
      tl->fill[k][m] = pb_timeline_fill_from_e4(pb_timeline_fill_e4((float)((tl->fill[k][i] * d0 + tl->fill[k][i + 1] * d1) / d)));
    tl->t_ns[m] = tl->t_ns[i + 1];
  }
  if (tl->n % 2) { /* an odd last point stays as it is */
    for (int k = 0; k < tl->nseries; k++) tl->fill[k][m] = tl->fill[k][tl->n - 1];
    tl->t_ns[m] = tl->t_ns[tl->n - 1];
    m++;
  }
  tl->n = m;
  tl->interval_ns *= 2;
}

void pb_timeline_add(pb_timeline *tl, uint64_t t_ns, const float *fill) {
  if (tl->n == PB_TIMELINE_POINTS) pb_timeline_halve(tl);
  for (int k = 0; k < tl->nseries; k++) tl->fill[k][tl->n] = fill[k];
  tl->t_ns[tl->n++] = t_ns;
}

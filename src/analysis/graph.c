/* The stage graph, rebuilt from lineage (analysis.c found each row's parent from which row last handed
 * its inputs on); here each node gets the TF Profiler's node figures, from the events alone. */
#include <math.h>
#include <stdio.h>

#include "analysis.h"

static void fill_node(pb_stage_report *sr, const pb_stage_rec *s, const pb_analysis *a) {
  uint64_t first = UINT64_MAX, self = 0, wait = 0, calls = 0;
  for (int k = 0; k < s->threads; k++) {
    const pb_worker_trace *t = &s->workers[k];
    for (uint32_t i = 0; i < t->n; i++) {
      const pb_event *e = &t->ev[i];
      uint64_t in = pb_overlap_ns(e->t0_ns, e->t1_ns, a->t_stop, a->t_end);
      if (!in && (e->t1_ns <= a->t_stop || e->t0_ns >= a->t_end)) continue;
      if (e->t0_ns < first) first = e->t0_ns < a->t_stop ? a->t_stop : e->t0_ns;
      if (e->kind == PB_EV_WAIT) wait += in;
      if (e->kind != PB_EV_PROCESS) continue;
      self += in;
      bool call = (e->flags & PB_EVF_CALL_START) || ((e->flags & PB_EVF_PRODUCE) && (e->flags & PB_EVF_EMITTED));
      if (call && e->t1_ns > a->t_stop && e->t1_ns <= a->t_end) calls++;
    }
  }
  sr->graph_start_ms = first == UINT64_MAX ? NAN : (double)(first - a->t_stop) / 1e6;
  sr->graph_self_ms = (double)self / 1e6;
  sr->graph_total_ms = (double)(self + wait) / 1e6;
  sr->graph_calls = calls;
}

void pb_graph_fill(pb_report *r, const pb_analysis *a) {
  const pb_record *rec = a->rec;
  for (int i = 0; i < rec->nstages && i < r->nstages; i++) {
    const pb_stage_rec *s = &rec->stages[i];
    if (s->skipped || !s->workers) continue;
    pb_stage_report *sr = &r->stages[i];
    snprintf(sr->parent, sizeof sr->parent, "%s", a->parent[i] >= 0 ? rec->stages[a->parent[i]].name : "");
    fill_node(sr, s, a);
  }
}

/* Collects GPU activity records and merges them into the steps (see gpu_timeline.h).
 *
 * The join is two sorts and binary searches, not a scan per record: a run of a few thousand steps
 * has tens of thousands of kernels, and CUPTI emits one external record per runtime API call. */
#include "gpu_timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "steps.h"

#define PB_GPU_INITIAL_CAP 1024

/* A kernel or copy once its external id is known: what a step is looked up by. */
typedef struct resolved {
  uint64_t key;  /* the external id: a step's key */
  uint64_t start_ns, end_ns, bytes;
  uint8_t kind;  /* PB_GPU_EXT_* */
  bool used;     /* some step had this key */
} resolved;

/* The GPU interval of one kind of work of one step, while it is being gathered. */
typedef struct span {
  uint64_t start_ns, end_ns, bytes;
  bool found;
} span;

void pb_gpu_timeline_init(pb_gpu_timeline *tl) { memset(tl, 0, sizeof *tl); }

void pb_gpu_timeline_free(pb_gpu_timeline *tl) {
  free(tl->act);
  free(tl->ext);
  memset(tl, 0, sizeof *tl);
}

/* Makes room for one more element of `size` bytes; doubles so n adds cost O(n) copies in all. */
static int grow(void **v, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return 0;
  size_t ncap = *cap ? *cap * 2 : PB_GPU_INITIAL_CAP;
  if (ncap < *cap || ncap > SIZE_MAX / size) return -ENOMEM;
  void *p = realloc(*v, ncap * size);
  if (!p) return -ENOMEM;
  *v = p;
  *cap = ncap;
  return 0;
}

static bool valid_interval(uint64_t start_ns, uint64_t end_ns) {
  /* CUPTI reports 0/0 when it could not time the work (no device memory for the timestamps). */
  return start_ns != 0 && end_ns != 0 && end_ns >= start_ns;
}

static int add_activity(pb_gpu_timeline *tl, pb_gpu_activity a) {
  if (!valid_interval(a.start_ns, a.end_ns)) {
    tl->dropped_invalid++;
    return 0;
  }
  int rc = grow((void **)&tl->act, &tl->act_cap, tl->nact, sizeof *tl->act);
  if (rc) return rc;
  tl->act[tl->nact++] = a;
  return 0;
}

int pb_gpu_timeline_add_kernel(pb_gpu_timeline *tl, uint32_t correlation_id, uint32_t device_id,
                               uint64_t start_ns, uint64_t end_ns) {
  return add_activity(tl, (pb_gpu_activity){.start_ns = start_ns, .end_ns = end_ns,
                                            .correlation_id = correlation_id, .device_id = device_id,
                                            .ext_kind = PB_GPU_EXT_COMPUTE});
}

int pb_gpu_timeline_add_memcpy(pb_gpu_timeline *tl, uint32_t correlation_id, uint32_t device_id,
                               uint64_t start_ns, uint64_t end_ns, uint64_t bytes, bool host_to_device) {
  if (!host_to_device) {
    tl->ignored_memcpy++;
    return 0;
  }
  return add_activity(tl, (pb_gpu_activity){.start_ns = start_ns, .end_ns = end_ns, .bytes = bytes,
                                            .correlation_id = correlation_id, .device_id = device_id,
                                            .ext_kind = PB_GPU_EXT_COPY});
}

int pb_gpu_timeline_add_external(pb_gpu_timeline *tl, uint32_t correlation_id, int kind, uint64_t external_id) {
  if (kind != PB_GPU_EXT_COMPUTE && kind != PB_GPU_EXT_COPY) return -EINVAL;
  int rc = grow((void **)&tl->ext, &tl->ext_cap, tl->next, sizeof *tl->ext);
  if (rc) return rc;
  tl->ext[tl->next] = (pb_gpu_external){.external_id = external_id, .correlation_id = correlation_id,
                                        .seq = (uint32_t)tl->next, .kind = (uint8_t)kind};
  tl->next++;
  return 0;
}

#define CMP(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)

/* (correlation id, kind, arrival): equal pairs keep the first-delivered external id first. */
static int cmp_external(const void *pa, const void *pb) {
  const pb_gpu_external *a = pa, *b = pb;
  if (a->correlation_id != b->correlation_id) return CMP(a->correlation_id, b->correlation_id);
  if (a->kind != b->kind) return CMP(a->kind, b->kind);
  return CMP(a->seq, b->seq);
}

static int cmp_resolved(const void *pa, const void *pb) {
  const resolved *a = pa, *b = pb;
  return CMP(a->key, b->key);
}

/* The first external record for (correlation_id, kind) in the sorted array, or NULL. */
static const pb_gpu_external *find_external(const pb_gpu_timeline *tl, uint32_t correlation_id, uint8_t kind) {
  size_t lo = 0, hi = tl->next;
  pb_gpu_external probe = {.correlation_id = correlation_id, .kind = kind, .seq = 0};
  while (lo < hi) { /* lower bound */
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_external(&tl->ext[mid], &probe) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == tl->next) return NULL;
  const pb_gpu_external *e = &tl->ext[lo];
  return e->correlation_id == correlation_id && e->kind == kind ? e : NULL;
}

/* First index in the sorted resolved array with that key (n when none). */
static size_t lower_bound_key(const resolved *r, size_t n, uint64_t key) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r[mid].key < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Gives every kernel and copy its external id; those without one only count.  *out is malloc'd. */
static int resolve(pb_gpu_timeline *tl, resolved **out, size_t *nout, pb_gpu_apply_stats *st) {
  *out = NULL;
  *nout = 0;
  if (tl->nact == 0) return 0;
  resolved *r = malloc(tl->nact * sizeof *r);
  if (!r) return -ENOMEM;
  if (tl->next) qsort(tl->ext, tl->next, sizeof *tl->ext, cmp_external);
  size_t n = 0;
  for (size_t i = 0; i < tl->nact; i++) {
    const pb_gpu_activity *a = &tl->act[i];
    const pb_gpu_external *e = find_external(tl, a->correlation_id, a->ext_kind);
    if (!e) {
      st->uncorrelated++;
      continue;
    }
    r[n++] = (resolved){.key = e->external_id, .start_ns = a->start_ns, .end_ns = a->end_ns,
                        .bytes = a->bytes, .kind = a->ext_kind};
  }
  if (n) qsort(r, n, sizeof *r, cmp_resolved);
  *out = r;
  *nout = n;
  return 0;
}

static void span_add(span *s, const resolved *r) {
  if (!s->found || r->start_ns < s->start_ns) s->start_ns = r->start_ns;
  if (!s->found || r->end_ns > s->end_ns) s->end_ns = r->end_ns;
  s->bytes += r->bytes;
  s->found = true;
}

/* Merges one step's records into it and updates the counters. */
static void apply_step(pb_step *st, resolved *r, size_t n, pb_gpu_apply_stats *stats) {
  span sp[2] = {{0}, {0}}; /* indexed by PB_GPU_EXT_* */
  for (size_t i = lower_bound_key(r, n, st->key); i < n && r[i].key == st->key; i++) {
    span_add(&sp[r[i].kind], &r[i]);
    r[i].used = true;
  }
  const span *compute = &sp[PB_GPU_EXT_COMPUTE], *copy = &sp[PB_GPU_EXT_COPY];
  if (!compute->found && !copy->found) {
    stats->no_record++;
    return;
  }
  uint64_t h2d_end = copy->found ? copy->end_ns : st->h2d_end_ns;
  uint64_t compute_start = compute->found ? compute->start_ns : st->compute_start_ns;
  if (compute_start < h2d_end) {
    /* The step cannot have computed on a batch still being copied: the records are not this step's
     * (or the clocks disagree), and the host's own intervals are the safer answer. */
    stats->rejected++;
    return;
  }
  if (copy->found) {
    st->h2d_start_ns = copy->start_ns;
    st->h2d_end_ns = copy->end_ns;
    stats->h2d_rewritten++;
    stats->h2d_bytes += copy->bytes;
  }
  if (compute->found) {
    st->compute_start_ns = compute->start_ns;
    st->compute_end_ns = compute->end_ns;
    stats->compute_rewritten++;
  }
}

int pb_gpu_timeline_apply(pb_gpu_timeline *tl, pb_step *steps, size_t nsteps, pb_gpu_apply_stats *out) {
  pb_gpu_apply_stats stats = {0};
  resolved *r;
  size_t n;
  int rc = resolve(tl, &r, &n, &stats);
  if (rc) return rc;
  for (size_t i = 0; i < nsteps; i++) apply_step(&steps[i], r, n, &stats);
  for (size_t i = 0; i < n; i++)
    if (!r[i].used) stats.unmatched++;
  free(r);
  if (out) *out = stats;
  return 0;
}

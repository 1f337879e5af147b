/* The GPU planes of a capture (gpu_plane.h). */
#include "gpu_plane.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU_PLANE_PREFIX "/device:GPU:"

static int op_push(pb_gpu_activity *g, pb_gpu_op op) {
  if (g->nops == g->cap) {
    size_t cap = g->cap ? 2 * g->cap : 1024;
    pb_gpu_op *p = realloc(g->ops, cap * sizeof *p);
    if (!p) return -ENOMEM;
    g->ops = p, g->cap = cap;
  }
  g->ops[g->nops++] = op;
  g->nkernels += op.kind == PB_GPU_KERNEL;
  g->nh2d += op.kind == PB_GPU_H2D;
  return 0;
}

/* Memory the device computes on, as CUPTI names kinds (XLA's GetMemoryKindName): the rest (pageable, pinned,
 * managed) is the host's side of a copy. */
static bool on_device(const char *kind, size_t n) {
  static const char *const device_kinds[] = {"device", "array", "device_static"};
  for (size_t i = 0; i < sizeof device_kinds / sizeof *device_kinds; i++)
    if (strlen(device_kinds[i]) == n && strncmp(kind, device_kinds[i], n) == 0) return true;
  return false;
}

/* The value after `key` in "key:value key:value" text, and its length; NULL when absent. */
static const char *field(const char *text, const char *key, size_t *n) {
  size_t k = strlen(key);
  for (const char *p = text; (p = strstr(p, key)) != NULL; p += k)
    if ((p == text || p[-1] == ' ') && p[k] == ':') {
      p += k + 1;
      *n = strcspn(p, " ");
      return p;
    }
  return NULL;
}

int pb_gpu_memcpy_kind(const char *details, uint64_t *bytes) {
  size_t ns = 0, nd = 0, nz = 0;
  const char *src = field(details, "kind_src", &ns), *dst = field(details, "kind_dst", &nd);
  const char *size = field(details, "size", &nz);
  if (!src || !dst) return 0;
  if (size && nz > 0 && nz < 20) *bytes = strtoull(size, NULL, 10);
  bool from = on_device(src, ns), to = on_device(dst, nd);
  return from && to ? PB_GPU_D2D : to ? PB_GPU_H2D : from ? PB_GPU_D2H : 0;
}

/* A copy named by its trace type alone (no memcpy_details). */
static int kind_by_name(const char *name) {
  if (strncmp(name, "Memcpy", 6) != 0) return 0;
  return strstr(name, "H2D") || strstr(name, "HtoD")                          ? PB_GPU_H2D
         : strstr(name, "D2H") || strstr(name, "DtoH")                        ? PB_GPU_D2H
         : strstr(name, "D2D") || strstr(name, "DtoD") || strstr(name, "P2P") ? PB_GPU_D2D
                                                                              : 0;
}

static int event_kind(const pb_xspace *x, int plane, int line, size_t e, const pb_xevent *ev, uint64_t *bytes) {
  const char *s = NULL;
  if (pb_xspace_event_str(x, plane, line, e, "kernel_details", &s)) return PB_GPU_KERNEL;
  if (pb_xspace_event_str(x, plane, line, e, "memcpy_details", &s)) return pb_gpu_memcpy_kind(s, bytes);
  return kind_by_name(ev->name);
}

static int read_plane(const pb_xspace *x, int plane, int device, pb_gpu_activity *g) {
  for (int l = 0; l < pb_xspace_nlines(x, plane); l++) {
    pb_xline li;
    pb_xspace_line(x, plane, l, &li);
    for (size_t e = 0; e < li.nevents; e++) {
      pb_xevent ev;
      pb_xspace_event(x, plane, l, e, &ev);
      uint64_t bytes = 0;
      int kind = event_kind(x, plane, l, e, &ev, &bytes);
      if (!kind) continue;
      pb_gpu_op op = {ev.start_ps, ev.start_ps + ev.duration_ps, bytes, kind, device};
      if (op_push(g, op)) return -ENOMEM;
    }
  }
  return 0;
}

static int cmp_op(const void *a, const void *b) {
  const pb_gpu_op *x = a, *y = b;
  if (x->start_ps != y->start_ps) return (x->start_ps > y->start_ps) - (x->start_ps < y->start_ps);
  return (x->end_ps > y->end_ps) - (x->end_ps < y->end_ps);
}

int pb_gpu_read(const pb_xspace *x, pb_gpu_activity *out) {
  memset(out, 0, sizeof *out);
  for (int p = 0; p < pb_xspace_nplanes(x); p++) {
    const char *name = pb_xspace_plane_name(x, p);
    if (strncmp(name, GPU_PLANE_PREFIX, strlen(GPU_PLANE_PREFIX)) != 0) continue;
    int device = atoi(name + strlen(GPU_PLANE_PREFIX));
    out->ndevices++;
    if (read_plane(x, p, device, out)) return pb_gpu_free(out), -ENOMEM;
  }
  if (out->nops) qsort(out->ops, out->nops, sizeof *out->ops, cmp_op);
  return 0;
}

void pb_gpu_free(pb_gpu_activity *g) {
  if (!g) return;
  free(g->ops);
  memset(g, 0, sizeof *g);
}

int64_t pb_gpu_kernel_busy_ps(const pb_gpu_activity *g, int64_t t0_ps, int64_t t1_ps) {
  int64_t busy = 0, covered = t0_ps; /* the kernels are in start order: sweep, counting each moment once */
  for (size_t i = 0; i < g->nops && g->ops[i].start_ps < t1_ps; i++) {
    const pb_gpu_op *op = &g->ops[i];
    if (op->kind != PB_GPU_KERNEL) continue;
    int64_t a = op->start_ps > covered ? op->start_ps : covered, b = op->end_ps < t1_ps ? op->end_ps : t1_ps;
    if (b > a) busy += b - a, covered = b;
  }
  return busy;
}

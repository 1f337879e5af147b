/* Reading a TensorFlow Profiler XSpace (xspace.h), decoded with protobuf-c from proto/xplane.proto. */
#include "xspace.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xplane.pb-c.h"

typedef Tensorflow__Profiler__XPlane__EventMetadataEntry event_md;
typedef Tensorflow__Profiler__XPlane__StatMetadataEntry stat_md;

/* A plane's metadata maps, sorted by id for lookups. */
typedef struct plane_index {
  event_md **events;
  stat_md **stats;
} plane_index;

struct pb_xspace {
  Tensorflow__Profiler__XSpace *msg;
  plane_index *index; /* one per plane */
};

#define MAX_XSPACE_BYTES (4ull << 30) /* a capture larger than this is refused, not read */

static int cmp_event_md(const void *a, const void *b) {
  int64_t x = (*(event_md *const *)a)->key, y = (*(event_md *const *)b)->key;
  return (x > y) - (x < y);
}

static int cmp_stat_md(const void *a, const void *b) {
  int64_t x = (*(stat_md *const *)a)->key, y = (*(stat_md *const *)b)->key;
  return (x > y) - (x < y);
}

/* Sorted copies of a plane's metadata entry lists (protobuf-c keeps a map as its entries, in file order). */
static int index_plane(const Tensorflow__Profiler__XPlane *p, plane_index *ix) {
  ix->events = malloc((p->n_event_metadata + 1) * sizeof *ix->events);
  ix->stats = malloc((p->n_stat_metadata + 1) * sizeof *ix->stats);
  if (!ix->events || !ix->stats) return -ENOMEM;
  if (p->n_event_metadata) memcpy(ix->events, p->event_metadata, p->n_event_metadata * sizeof *ix->events);
  if (p->n_stat_metadata) memcpy(ix->stats, p->stat_metadata, p->n_stat_metadata * sizeof *ix->stats);
  qsort(ix->events, p->n_event_metadata, sizeof *ix->events, cmp_event_md);
  qsort(ix->stats, p->n_stat_metadata, sizeof *ix->stats, cmp_stat_md);
  return 0;
}

int pb_xspace_parse(const uint8_t *data, size_t bytes, const char *what, pb_xspace **out, pb_err *err) {
  *out = NULL;
  pb_xspace *x = calloc(1, sizeof *x);
  if (!x) return pb_err_setc(err, -ENOMEM, "%s: out of memory for the capture", what);
  x->msg = tensorflow__profiler__xspace__unpack(NULL, bytes, data);
  if (!x->msg) {
    free(x);
    return pb_err_setc(err, -EBADMSG,
                       "%s: not a TensorFlow Profiler XSpace (%zu bytes that do not decode as one; expected a "
                       "<host>.xplane.pb from a log directory's plugins/profile/<run>/)",
                       what, bytes);
  }
  if (x->msg->n_planes == 0) { /* an empty file decodes as an empty message: nothing to import */
    pb_xspace_free(x);
    return pb_err_setc(err, -EBADMSG,
                       "%s: an XSpace with no planes (%zu bytes; expected a capture of at least one "
                       "host, as tf.profiler.experimental.start/stop writes)",
                       what, bytes);
  }
  x->index = calloc(x->msg->n_planes + 1, sizeof *x->index);
  int rc = x->index ? 0 : -ENOMEM;
  for (size_t i = 0; !rc && i < x->msg->n_planes; i++) rc = index_plane(x->msg->planes[i], &x->index[i]);
  if (rc) {
    pb_xspace_free(x);
    return pb_err_setc(err, rc, "%s: out of memory indexing the capture", what);
  }
  *out = x;
  return 0;
}

int pb_xspace_load(const char *path, pb_xspace **out, pb_err *err) {
  *out = NULL;
  char *data = NULL;
  size_t bytes = 0;
  int rc = pb_read_file(path, MAX_XSPACE_BYTES, &data, &bytes);
  if (rc)
    return pb_err_setc(err, rc, "%s: cannot read it: %s (expected a TensorFlow Profiler capture of at most 4 GiB)",
                       path, rc == -EFBIG ? "more than 4 GiB" : strerror(-rc));
  rc = pb_xspace_parse((const uint8_t *)data, bytes, path, out, err);
  free(data);
  return rc;
}

void pb_xspace_free(pb_xspace *x) {
  if (!x) return;
  for (size_t i = 0; x->index && x->msg && i < x->msg->n_planes; i++) {
    free(x->index[i].events);
    free(x->index[i].stats);
  }
  free(x->index);
  tensorflow__profiler__xspace__free_unpacked(x->msg, NULL);
  free(x);
}

int pb_xspace_nhosts(const pb_xspace *x) { return (int)x->msg->n_hostnames; }
const char *pb_xspace_host(const pb_xspace *x, int i) { return x->msg->hostnames[i]; }
int pb_xspace_nplanes(const pb_xspace *x) { return (int)x->msg->n_planes; }
const char *pb_xspace_plane_name(const pb_xspace *x, int plane) { return x->msg->planes[plane]->name; }

int pb_xspace_find_plane(const pb_xspace *x, const char *name) {
  for (size_t i = 0; i < x->msg->n_planes; i++)
    if (strcmp(x->msg->planes[i]->name, name) == 0) return (int)i;
  return -1;
}

int pb_xspace_nlines(const pb_xspace *x, int plane) { return (int)x->msg->planes[plane]->n_lines; }

void pb_xspace_line(const pb_xspace *x, int plane, int line, pb_xline *out) {
  const Tensorflow__Profiler__XLine *l = x->msg->planes[plane]->lines[line];
  *out = (pb_xline){.name = l->name, .id = l->id, .timestamp_ns = l->timestamp_ns, .nevents = l->n_events};
}

static const event_md *find_event_md(const plane_index *ix, size_t n, int64_t id) {
  event_md key = {.key = id}, *k = &key;
  event_md **hit = bsearch(&k, ix->events, n, sizeof *ix->events, cmp_event_md);
  return hit ? *hit : NULL;
}

static const stat_md *find_stat_md(const plane_index *ix, size_t n, int64_t id) {
  stat_md key = {.key = id}, *k = &key;
  stat_md **hit = bsearch(&k, ix->stats, n, sizeof *ix->stats, cmp_stat_md);
  return hit ? *hit : NULL;
}

/* ns x 1000 + offset in picoseconds, held at the int64 range: a hostile file's timestamps must not overflow
 * (a real capture's are ~10^18 ps, far inside it). */
static int64_t start_ps(int64_t timestamp_ns, int64_t offset_ps) {
  int64_t ps, sum;
  if (__builtin_mul_overflow(timestamp_ns, (int64_t)1000, &ps)) return timestamp_ns < 0 ? INT64_MIN : INT64_MAX;
  if (__builtin_add_overflow(ps, offset_ps, &sum)) return offset_ps < 0 ? INT64_MIN : INT64_MAX;
  return sum;
}

void pb_xspace_event(const pb_xspace *x, int plane, int line, size_t event, pb_xevent *out) {
  const Tensorflow__Profiler__XPlane *p = x->msg->planes[plane];
  const Tensorflow__Profiler__XLine *l = p->lines[line];
  const Tensorflow__Profiler__XEvent *e = l->events[event];
  const event_md *md = find_event_md(&x->index[plane], p->n_event_metadata, e->metadata_id);
  int64_t offset_ps = e->data_case == TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS ? e->offset_ps : 0;
  int64_t start = start_ps(l->timestamp_ns, offset_ps), duration = e->duration_ps < 0 ? 0 : e->duration_ps;
  if (start > 0 && duration > INT64_MAX - start) duration = INT64_MAX - start; /* start + duration never overflows */
  *out = (pb_xevent){
      .name = md && md->value && md->value->name ? md->value->name : "", .start_ps = start, .duration_ps = duration};
}

/* The event's stat whose metadata is called `name`, or NULL. */
static const Tensorflow__Profiler__XStat *event_stat(const pb_xspace *x, int plane, int line, size_t event,
                                                     const char *name) {
  const Tensorflow__Profiler__XPlane *p = x->msg->planes[plane];
  const Tensorflow__Profiler__XEvent *e = p->lines[line]->events[event];
  for (size_t i = 0; i < e->n_stats; i++) {
    const stat_md *md = find_stat_md(&x->index[plane], p->n_stat_metadata, e->stats[i]->metadata_id);
    if (md && md->value && md->value->name && strcmp(md->value->name, name) == 0) return e->stats[i];
  }
  return NULL;
}

bool pb_xspace_event_int(const pb_xspace *x, int plane, int line, size_t event, const char *stat, int64_t *out) {
  const Tensorflow__Profiler__XStat *s = event_stat(x, plane, line, event, stat);
  if (!s) return false;
  switch (s->value_case) {
    case TENSORFLOW__PROFILER__XSTAT__VALUE_INT64_VALUE:
      return *out = s->int64_value, true;
    case TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE:
      return *out = (int64_t)s->uint64_value, true;
    default:
      return false;
  }
}

bool pb_xspace_event_str(const pb_xspace *x, int plane, int line, size_t event, const char *stat, const char **out) {
  const Tensorflow__Profiler__XStat *s = event_stat(x, plane, line, event, stat);
  if (!s) return false;
  if (s->value_case == TENSORFLOW__PROFILER__XSTAT__VALUE_STR_VALUE) return *out = s->str_value, true;
  if (s->value_case != TENSORFLOW__PROFILER__XSTAT__VALUE_REF_VALUE) return false;
  /* a ref's text is the name of the stat metadata it points at (how the profiler stores repeated strings) */
  const Tensorflow__Profiler__XPlane *p = x->msg->planes[plane];
  const stat_md *md = find_stat_md(&x->index[plane], p->n_stat_metadata, (int64_t)s->ref_value);
  if (!md || !md->value || !md->value->name) return false;
  *out = md->value->name;
  return true;
}

/* `read`: the source of a real-data run (docs/CONTRACT.md §2).  N threads take files in a seeded per-epoch
 * shuffled order, read each with pread in block_bytes pieces (O_DIRECT with aligned buffers when
 * `direct`), and split it into samples by dataset.format:
 *   jpeg      one sample per file, read straight into the sample's pooled buffer;
 *   raw       record_bytes per sample;
 *   tfrecord  one sample per record (length and masked CRC32C checked), the `dataset.feature` bytes
 *             of its tf.train.Example;
 *   npy, npz  the array (npz: its first member), split along axis 0 when it holds samples_per_file.
 * Emulation caps: latency_us is added to every read call, bandwidth_mb_per_s caps the whole stage.
 * A file that cannot be read, or a bad record, is an error on one sample (counted read and error);
 * the run goes on or stops as run.on_error says.  Nothing here blocks without a bound: files are opened
 * non-blocking and must be regular files (a FIFO swapped in for a data file is an error, not a reader
 * stuck in open()), and a file whose size says 0 (procfs, sysfs) is read to its end, up to
 * PB_UNSIZED_MAX_BYTES. */
#define _GNU_SOURCE /* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "account.h"
#include "engine.h"
#include "plan_probe.h"
#include "sat.h"
#include "npy.h"
#include "tfrecord.h"

#define DIRECT_ALIGN 4096
/* A file whose size says 0 bytes is read to its end up to this many bytes (more is an error on it): what
 * procfs and sysfs files hold, with room to spare, without letting one such file take unbounded memory. */
#define PB_UNSIZED_MAX_BYTES ((size_t)16 << 20)
#define UNSIZED_FIRST_BYTES ((size_t)64 << 10) /* the first read of such a file; the buffer doubles from there */

typedef struct read_state {
  pb_pool pool;
  bool pool_ready;
  uv_mutex_t order_lock;        /* the file dispenser */
  pb_file_list order;           /* this epoch's order */
  size_t next;                  /* next position in `order` */
  uint32_t epoch;
  uint32_t epochs;              /* 0 = endless */
  bool finished;
  _Atomic uint64_t good_samples; /* samples read so far (not errors) */
  _Atomic uint64_t files_done;   /* files completely read or failed */
  _Atomic uint64_t samples_tried; /* samples made and errors counted: with files_done, records per file */
  uv_mutex_t bw_lock;           /* bandwidth cap: the time the stage's "link" is free again */
  uint64_t bw_free_at_ns;
} read_state;

typedef struct read_worker {
  uint8_t *file_buf;            /* whole files of multi-sample formats (aligned for O_DIRECT) */
  size_t file_cap;
  size_t file_bytes;
  /* the file being split into samples */
  bool pending;
  uint32_t file_index;
  uint32_t epoch;
  size_t offset;                /* tfrecord: next record; raw/npy: next sample */
  size_t sample_bytes, nsamples, emitted;
  uint32_t record;              /* tfrecord: records seen in this file */
  const uint8_t *data;          /* raw/npy: first sample */
  char label[PB_PATH_LEN + 80];  /* npy errors' prefix: the file, or the npz and its member */
  const char *not_regular;      /* the last open found no regular file: what it found (pb_file_kind) */
} read_worker;

/* ---------- the file dispenser ---------- */

/* The next epoch's file order; false (and an empty order) when there is no memory for it. */
static bool shuffle_epoch(read_state *st, const pb_engine *e) {
  pb_file_list_free(&st->order);
  if (pb_file_list_clone(&e->files, &st->order)) {
    st->order.count = 0;
    return false;
  }
  pb_file_list_shuffle(&st->order, e->cfg->seed, st->epoch);
  return true;
}

/* The next file to read, or false when every epoch is done. */
static bool claim_file(pb_stage *s, uint32_t *index, uint32_t *epoch) {
  read_state *st = s->state;
  uv_mutex_lock(&st->order_lock);
  if (st->next == st->order.count && !st->finished) {
    if (st->epochs && st->epoch + 1 >= st->epochs) {
      st->finished = true; /* every epoch handed out; stays so for every later call */
    } else if (atomic_load(&st->files_done) >= st->order.count && atomic_load(&st->good_samples) == 0) {
      st->finished = true; /* a whole epoch and not one sample read: stop rather than loop on errors */
      pb_engine_fail(s->engine, "no sample of a whole epoch could be read (see accounting.first_errors)");
    } else {
      st->epoch++;
      st->next = 0;
      if (!shuffle_epoch(st, s->engine)) {
        st->finished = true;
        pb_engine_fail(s->engine, "out of memory for the next epoch's file order");
      }
    }
  }
  bool ok = !st->finished;
  if (ok) {
    *index = (uint32_t)st->order.files[st->next++].index;
    *epoch = st->epoch;
    atomic_fetch_add_explicit(&s->engine->files_claimed, 1, memory_order_relaxed);
  }
  uv_mutex_unlock(&st->order_lock);
  return ok;
}

/* ---------- reading, with the emulation caps ---------- */

static void apply_caps(pb_stage *s, size_t bytes) {
  const pb_stage_cfg *sc = s->cfg;
  read_state *st = s->state;
  uint64_t now = pb_now_ns(), until = now;
  if (sc->latency_us) until += (uint64_t)sc->latency_us * 1000u;
  if (sc->bandwidth_mb_per_s > 0) { /* MB/s = bytes/us: bytes / (MB/s) x 1000 ns */
    uint64_t cost_ns = pb_sat_u64_from_double((double)bytes * 1000.0 / sc->bandwidth_mb_per_s);
    uv_mutex_lock(&st->bw_lock);
    uint64_t start = st->bw_free_at_ns > now ? st->bw_free_at_ns : now;
    st->bw_free_at_ns = start + cost_ns;
    uv_mutex_unlock(&st->bw_lock);
    if (start + cost_ns > until) until = start + cost_ns;
  }
  /* in slices, so that a cancel (SIGINT) is not held up by a long emulated latency or a slow cap */
  while (until > now && !atomic_load_explicit(&s->engine->cancelled, memory_order_relaxed)) {
    uint64_t slice = until - now > 50000000u ? now + 50000000u : until;
    pb_sleep_until_ns(slice);
    now = pb_now_ns();
  }
}

/* Reads fd from offset `from` (a multiple of DIRECT_ALIGN) to file_bytes into buf (capacity cap, a multiple of
 * DIRECT_ALIGN) in block_bytes pieces; *got: where the data ends, at most file_bytes. */
static int read_blocks(pb_stage *s, int fd, uint8_t *buf, size_t from, size_t file_bytes, size_t cap, size_t *got) {
  size_t block = (size_t)s->cfg->block_bytes, done = from;
  if (s->cfg->direct) { /* O_DIRECT wants whole logical blocks: 4 KiB covers every device */
    block = (block + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN;
    cap = cap / DIRECT_ALIGN * DIRECT_ALIGN;
  }
  while (done < file_bytes) {
    size_t want = PB_MIN(block, cap - done);
    ssize_t n = pread(fd, buf + done, want, (off_t)done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    apply_caps(s, (size_t)n);
    if (n == 0) break; /* the file shrank since it was listed */
    done += (size_t)n;
  }
  *got = PB_MIN(done, file_bytes);
  return 0;
}

static size_t direct_round(size_t bytes) { return (bytes + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN; }

/* Opens and sizes a file; -errno with a readable reason (PB_ENOTREG: rw->not_regular says what it is). */
static int open_file(pb_worker *w, const char *path, size_t *bytes) {
  read_worker *rw = w->state;
  struct stat sb;
  int fd = pb_data_file_open(path, w->stage->cfg->direct ? O_DIRECT : 0, &sb);
  rw->not_regular = fd == PB_ENOTREG ? pb_file_kind(sb.st_mode) : NULL;
  if (fd >= 0) *bytes = (size_t)sb.st_size;
  return fd;
}

/* The file buffer with room for `bytes`, its first keep_bytes kept (aligned for O_DIRECT). */
static int grow_file_buf(read_worker *rw, size_t bytes, size_t keep_bytes) {
  if (rw->file_cap >= bytes) return 0;
  size_t cap = (bytes + DIRECT_ALIGN - 1) / DIRECT_ALIGN * DIRECT_ALIGN;
  uint8_t *buf = aligned_alloc(DIRECT_ALIGN, cap);
  if (!buf) return -ENOMEM;
  if (keep_bytes) memcpy(buf, rw->file_buf, keep_bytes);
  free(rw->file_buf);
  rw->file_buf = buf;
  rw->file_cap = cap;
  return 0;
}

/* A file whose size says 0 bytes though it may hold data (procfs, sysfs, some network file systems): read
 * to its end into the file buffer, doubling it as needed; -EFBIG past PB_UNSIZED_MAX_BYTES. */
static int read_to_end(pb_worker *w, int fd) {
  read_worker *rw = w->state;
  size_t got = 0, limit = PB_UNSIZED_MAX_BYTES + 1; /* a byte more than the bound tells a file over it */
  for (;;) {
    int rc = grow_file_buf(rw, PB_MIN(limit, PB_MAX(2 * got, UNSIZED_FIRST_BYTES)), got);
    size_t end = PB_MIN(rw->file_cap, limit);
    if (!rc) rc = read_blocks(w->stage, fd, rw->file_buf, got, end, rw->file_cap, &got);
    if (rc) return rc;
    rw->file_bytes = got;
    if (got > PB_UNSIZED_MAX_BYTES) return -EFBIG;
    if (got < end) return 0; /* the end came before the buffer filled */
  }
}

/* ---------- errors ---------- */

/* A file or record that yields no sample still counts as one sample read, and one error. */
static void read_error(pb_worker *w, uint32_t file_index, const char *message) {
  read_state *st = w->stage->state;
  pb_elem e = {.nsamples = 1, .file_index = file_index, .batch_id = PB_NO_BATCH};
  atomic_fetch_add_explicit(&st->samples_tried, 1, memory_order_relaxed);
  pb_count_made_failed(w);
  pb_worker_error(w, &e, pb_engine_file_path(w->stage->engine, file_index), message, false);
}

/* A file that is no longer what was listed: not a regular file (a FIFO swapped in), or one whose size says
 * 0 bytes holding more than PB_UNSIZED_MAX_BYTES.  False for any other rc (an errno). */
static bool file_trouble(pb_worker *w, int rc, const char *doing, char *msg, size_t len) {
  read_worker *rw = w->state;
  if (rc == PB_ENOTREG)
    snprintf(msg, len, "%s: not a regular file: %s (expected a regular file, as when the run started)", doing,
             rw->not_regular ? rw->not_regular : "of an unknown kind");
  else if (rc == -EFBIG)
    snprintf(msg, len, "%s: its size says 0 bytes but it holds more than %zu MiB (expected a file whose size is "
                       "known, or at most that much)", doing, PB_UNSIZED_MAX_BYTES >> 20);
  return rc == PB_ENOTREG || rc == -EFBIG;
}

/* `bytes`: the sample's size, named when it was past the memory plan (-E2BIG). */
static void read_errno(pb_worker *w, uint32_t file_index, int rc, const char *doing, uint64_t bytes) {
  char msg[400];
  if (file_trouble(w, rc, doing, msg, sizeof msg)) {
    read_error(w, file_index, msg);
    return;
  }
  if (rc == -E2BIG) /* past the memory plan: the only reserve failure that is not ENOMEM */
    pb_engine_over_plan_msg(w->stage, (size_t)bytes, msg, sizeof msg);
  else if (rc == -EINVAL && w->stage->cfg->direct)
    snprintf(msg, sizeof msg, "%s: O_DIRECT is not supported here (expected a file system with direct I/O, "
                              "or \"direct\": false)", doing);
  else
    snprintf(msg, sizeof msg, "%s: %s (expected %s)", doing, strerror(-rc),
             rc == -ENOENT                   ? "the file listed when the run started, still there"
             : rc == -EACCES || rc == -EPERM ? "a file this user may read"
                                             : "a readable file");
  read_error(w, file_index, msg);
}

/* ---------- emitting samples ---------- */

static int emit_sample(pb_worker *w, pb_buf *buf, size_t bytes, uint32_t file_index, uint32_t epoch,
                       uint32_t record) {
  read_state *st = w->stage->state;
  atomic_fetch_add_explicit(&st->good_samples, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&st->samples_tried, 1, memory_order_relaxed);
  pb_elem e = {.id = atomic_fetch_add(&w->stage->engine->next_sample_id, 1), .batch_id = PB_NO_BATCH,
               .data = buf->data, .bytes = bytes, .buf = buf, .nsamples = 1, .epoch = epoch,
               .file_index = file_index, .record = record};
  return pb_emit(w, &e);
}

/* Copies one sample out of the file buffer into its own pooled buffer and hands it on. */
static int emit_copy(pb_worker *w, const uint8_t *data, size_t bytes, uint32_t file_index, uint32_t epoch,
                     uint32_t record) {
  read_state *st = w->stage->state;
  pb_buf *b = pb_worker_get_buf(w, &st->pool);
  if (!b) return -ECANCELED;
  int rc = pb_buf_reserve(b, bytes);
  if (rc) {
    pb_buf_release(b);
    read_errno(w, file_index, rc, "out of memory for a sample", bytes);
    return 0;
  }
  memcpy(b->data, data, bytes);
  return emit_sample(w, b, bytes, file_index, epoch, record);
}

/* A one-sample file whose size says 0: read to its end in the file buffer, then copied into a sample's
 * buffer (rare: a copy costs nothing next to keeping a buffer of the bound's size per pool slot).  The file
 * buffer is freed after: the memory plan counts none for files read whole. */
static int read_whole_unsized(pb_worker *w, int fd, uint32_t fi, uint32_t epoch) {
  read_worker *rw = w->state;
  int rc = read_to_end(w, fd);
  close(fd);
  if (!rc) pb_count_file_read(w);
  if (!rc && rw->file_bytes) {
    pb_count_bytes_read(w, rw->file_bytes);
    rc = emit_copy(w, rw->file_buf, rw->file_bytes, fi, epoch, 0) < 0 ? -ECANCELED : 0;
  } else if (rc) {
    read_errno(w, fi, rc, "cannot read", rw->file_bytes);
  } else {
    read_error(w, fi, "empty file (expected a sample)");
  }
  free(rw->file_buf);
  rw->file_buf = NULL;
  rw->file_cap = 0;
  return rc == -ECANCELED ? rc : 0;
}

/* A file that is one sample (a JPEG, a one-record raw file): read straight into the sample's buffer. */
static int read_whole(pb_worker *w, uint32_t fi, uint32_t epoch) {
  read_state *st = w->stage->state;
  const char *path = pb_engine_file_path(w->stage->engine, fi);
  size_t bytes = 0, got = 0;
  int fd = open_file(w, path, &bytes);
  if (fd < 0) return read_errno(w, fi, fd, "cannot open", 0), 0;
  if (bytes == 0) return read_whole_unsized(w, fd, fi, epoch);
  pb_buf *b = pb_worker_get_buf(w, &st->pool);
  size_t room = w->stage->cfg->direct ? direct_round(bytes ? bytes : 1) : (bytes ? bytes : 1);
  int rc = !b ? -ECANCELED : pb_buf_reserve(b, room);
  if (!rc) rc = read_blocks(w->stage, fd, b->data, 0, bytes, b->capacity_bytes, &got);
  close(fd);
  if (rc == -ECANCELED) {
    pb_buf_release(b); /* NULL when the pool itself was cancelled */
    return rc;
  }
  if (!rc) pb_count_file_read(w); /* opened and read (empty too), as start_file counts them */
  if (rc || got == 0) {
    pb_buf_release(b);
    return rc ? read_errno(w, fi, rc, "cannot read", bytes) : read_error(w, fi, "empty file (expected a sample)"), 0;
  }
  pb_count_bytes_read(w, got);
  return emit_sample(w, b, got, fi, epoch, 0);
}

/* Multi-sample formats: the whole file into the worker's buffer. */
static int slurp(pb_worker *w, uint32_t fi) {
  read_worker *rw = w->state;
  const char *path = pb_engine_file_path(w->stage->engine, fi);
  size_t bytes = 0;
  int fd = open_file(w, path, &bytes);
  if (fd < 0) return fd;
  int rc = bytes ? grow_file_buf(rw, bytes, 0) : read_to_end(w, fd);
  if (!rc && bytes) rc = read_blocks(w->stage, fd, rw->file_buf, 0, bytes, rw->file_cap, &rw->file_bytes);
  close(fd);
  if (!rc) pb_count_bytes_read(w, rw->file_bytes);
  return rc;
}

/* ---------- splitting files into samples ---------- */

static size_t samples_per_file(const pb_config *cfg) {
  return cfg->dataset.generate.present ? (size_t)cfg->dataset.generate.samples_per_file : 1;
}

/* raw: fixed-size records; a trailing partial record is an error (the file is not what was promised). */
static int start_raw(pb_worker *w, read_worker *rw) {
  const pb_dataset_cfg *d = &w->stage->engine->cfg->dataset;
  size_t rec = (size_t)(d->record_bytes ? d->record_bytes : d->generate.record_bytes);
  if (!rec) return read_error(w, rw->file_index, "raw format without a record size (expected dataset.record_bytes)"), 0;
  rw->sample_bytes = rec;
  rw->nsamples = rw->file_bytes / rec;
  rw->data = rw->file_buf;
  if (rw->file_bytes % rec) {
    char msg[160];
    snprintf(msg, sizeof msg, "offset %zu: %zu trailing bytes (expected whole records of %zu bytes)",
             rw->nsamples * rec, rw->file_bytes % rec, rec);
    read_error(w, rw->file_index, msg);
  }
  return 0;
}

/* npy (and an npz member already in file_buf): the array, split along axis 0 into samples_per_file. */
static int start_npy(pb_worker *w, read_worker *rw) {
  pb_npy_info info;
  pb_err err;
  const char *path = pb_engine_file_path(w->stage->engine, rw->file_index);
  if (!rw->label[0]) snprintf(rw->label, sizeof rw->label, "%s", path);
  if (pb_npy_parse(rw->file_buf, rw->file_bytes, &info, rw->label, &err))
    return read_error(w, rw->file_index, err.msg), 0;
  size_t spf = samples_per_file(w->stage->engine->cfg);
  bool split = spf > 1 && info.ndims >= 1 && (size_t)info.shape[0] == spf;
  if (spf > 1 && !split) { /* not what the config promises: one sample of another size would pass unseen */
    char msg[PB_PATH_LEN + 240];
    char rows[48] = "a 0-d array";
    if (info.ndims >= 1) snprintf(rows, sizeof rows, "%lld rows along axis 0", (long long)info.shape[0]);
    snprintf(msg, sizeof msg, "%s: %s (expected %zu rows, dataset.generate.samples_per_file)", rw->label, rows, spf);
    return read_error(w, rw->file_index, msg), 0;
  }
  if (split && info.fortran_order) { /* its samples are not contiguous rows: refuse, never one big sample */
    char msg[PB_PATH_LEN + 240];
    snprintf(msg, sizeof msg, "%s: a Fortran-order array of %zu samples (expected C order: save it with "
                              "np.ascontiguousarray)", rw->label, spf);
    return read_error(w, rw->file_index, msg), 0;
  }
  rw->nsamples = split ? spf : 1;
  rw->sample_bytes = info.data_bytes / rw->nsamples;
  rw->data = rw->file_buf + info.data_offset_bytes;
  return 0;
}

/* npz: the first member, read (CRC-checked by libzip) into the file buffer, then as npy. */
static int load_npz(pb_worker *w, read_worker *rw) {
  const char *path = pb_engine_file_path(w->stage->engine, rw->file_index);
  pb_npz *z = NULL;
  pb_err err = {.msg = ""};
  int n = 0;
  int open_rc = pb_npz_open(path, &z, &err);
  /* files_read counts a file read through whatever its format: a bad archive, unlike an I/O error */
  if (open_rc == -EBADMSG) pb_count_file_read(w);
  if (open_rc) {
    if (!err.msg[0])
      snprintf(err.msg, sizeof err.msg, "%s: cannot open it: %s (expected a readable .npz file)", path,
               strerror(-open_rc));
    return read_error(w, rw->file_index, err.msg), -EBADMSG;
  }
  const pb_npz_member *m = pb_npz_list(z, &n);
  int rc = n > 0 ? 0 : -EBADMSG;
  if (rc) snprintf(err.msg, sizeof err.msg, "%s: no members (expected an array saved with np.savez)", path);
  if (!rc && rw->file_cap < m[0].bytes) {
    free(rw->file_buf);
    rw->file_buf = aligned_alloc(DIRECT_ALIGN, direct_round(m[0].bytes));
    rw->file_cap = rw->file_buf ? direct_round(m[0].bytes) : 0;
  }
  if (!rc) rc = pb_npz_read_member(z, 0, rw->file_buf, rw->file_cap, &err);
  if (!rc) rw->file_bytes = m[0].bytes;
  /* npy errors inside it name the member: their offsets are the member's, not the archive's */
  if (!rc) snprintf(rw->label, sizeof rw->label, "%s: member '%.60s'", path, m[0].name);
  pb_npz_close(z);
  if (rc == -EBADMSG) pb_count_file_read(w);
  if (rc) return read_error(w, rw->file_index, err.msg), rc;
  apply_caps(w->stage, rw->file_bytes);
  pb_count_bytes_read(w, rw->file_bytes);
  return 0;
}

/* tfrecord: the records the file's framing holds, up to the first bad length (their data is checked as
 * they are split off): the header walk costs a CRC of 8 bytes a record. */
static size_t count_records(const read_worker *rw) {
  size_t n = 0, at = 0;
  uint64_t data_bytes;
  while (rw->file_bytes - at >= PB_TFRECORD_HEADER_BYTES && !pb_tfrecord_header(rw->file_buf + at, &data_bytes) &&
         data_bytes <= rw->file_bytes - at - PB_TFRECORD_HEADER_BYTES) {
    size_t framed = pb_tfrecord_framed_bytes((size_t)data_bytes);
    if (framed > rw->file_bytes - at) break;
    at += framed;
    n++;
  }
  return n;
}

/* Reads a multi-sample file and sets up splitting it; errors are counted, not returned.  The time spent
 * reading it is the cost of its samples, shared among them (pb_worker_spread_work): a sample's service
 * time is its share plus its own copy, so the stage's capacity does not depend on where the measured
 * window cuts the files, nor on how long the worker then waits, holding the rest, for room downstream. */
static void start_file(pb_worker *w, uint32_t fi, uint32_t epoch) {
  read_worker *rw = w->state;
  pb_format fmt = w->stage->engine->cfg->dataset.format;
  *rw = (read_worker){.file_buf = rw->file_buf, .file_cap = rw->file_cap, .file_index = fi, .epoch = epoch};
  if (fmt == PB_FMT_NPZ) {
    if (load_npz(w, rw)) return;
  } else {
    int rc = slurp(w, fi);
    if (rc) return read_errno(w, fi, rc, "cannot read", 0);
  }
  pb_count_file_read(w);
  if (rw->file_bytes == 0) /* no record in it: an error, as an empty JPEG is, never a silent nothing */
    return read_error(w, fi, fmt == PB_FMT_NPZ ? "empty first member: 0 bytes (expected an .npy array)"
                                               : "empty file (expected at least one record)");
  rw->pending = true;
  if (fmt == PB_FMT_RAW) start_raw(w, rw);
  else if (fmt == PB_FMT_NPY || fmt == PB_FMT_NPZ) start_npy(w, rw);
  if (fmt != PB_FMT_TFRECORD && rw->nsamples == 0) rw->pending = false;
  if (rw->pending) pb_worker_spread_work(w, fmt == PB_FMT_TFRECORD ? count_records(rw) : rw->nsamples);
}

/* After a bad record: when its length (and the length's CRC) is sound, only its data is bad, and
 * reading goes on with the next record. */
static bool skip_bad_record(read_worker *rw) {
  uint64_t data_bytes;
  size_t at = rw->offset;
  if (rw->file_bytes - at < PB_TFRECORD_HEADER_BYTES || pb_tfrecord_header(rw->file_buf + at, &data_bytes)) return false;
  if (data_bytes > rw->file_bytes - at - PB_TFRECORD_HEADER_BYTES) return false;
  size_t framed = pb_tfrecord_framed_bytes((size_t)data_bytes);
  if (framed > rw->file_bytes - at) return false;
  rw->offset = at + framed;
  return true;
}

/* tfrecord: the next record's feature; 1 made (a sample, or an error), 0 file done, -ECANCELED. */
static int next_record(pb_worker *w, read_worker *rw) {
  const pb_dataset_cfg *d = &w->stage->engine->cfg->dataset;
  const char *path = pb_engine_file_path(w->stage->engine, rw->file_index);
  const uint8_t *rec, *val;
  size_t rec_bytes, val_bytes, at = rw->offset;
  pb_err err;
  int rc = pb_tfrecord_next(rw->file_buf, rw->file_bytes, &rw->offset, &rec, &rec_bytes, path, &err);
  if (rc < 0) {
    rw->record++;
    bool resync = skip_bad_record(rw);
    if (!resync) { /* framing lost: nothing after it can be trusted, and the error says so */
      rw->pending = false;
      size_t len = strlen(err.msg);
      snprintf(err.msg + len, sizeof err.msg - len, "; the rest of the file (%zu bytes) is skipped",
               rw->file_bytes - at);
    }
    read_error(w, rw->file_index, err.msg);
    return 1;
  }
  if (rc == 0) {
    rw->pending = false;
    return 0;
  }
  if (pb_example_get_bytes(rec, rec_bytes, d->feature, &val, &val_bytes, path, at, &err)) {
    rw->record++;
    return read_error(w, rw->file_index, err.msg), 1;
  }
  return emit_copy(w, val, val_bytes, rw->file_index, rw->epoch, rw->record++) < 0 ? -ECANCELED : 1;
}

static int next_sample(pb_worker *w, read_worker *rw) {
  if (w->stage->engine->cfg->dataset.format == PB_FMT_TFRECORD) return next_record(w, rw);
  uint32_t record = (uint32_t)rw->emitted;
  const uint8_t *p = rw->data + rw->emitted * rw->sample_bytes;
  if (++rw->emitted == rw->nsamples) rw->pending = false;
  return emit_copy(w, p, rw->sample_bytes, rw->file_index, rw->epoch, record) < 0 ? -ECANCELED : 1;
}

/* A file is finished: the epoch's size is learned from the records its files held so far (the failure
 * streak's yardstick, pb_streak_hopeless: files of many records make an epoch of more samples than files). */
static void file_done(pb_worker *w) {
  read_state *st = w->stage->state;
  pb_engine *e = w->stage->engine;
  uint64_t done = atomic_fetch_add_explicit(&st->files_done, 1, memory_order_relaxed) + 1;
  uint64_t tried = atomic_load_explicit(&st->samples_tried, memory_order_relaxed);
  if (tried > done) pb_engine_note_epoch_samples(e, (uint64_t)e->files.count * tried / done);
}

/* Files read with no copy: JPEGs, and raw files of exactly one record. */
static bool is_one_sample(const pb_engine *e, uint32_t fi) {
  const pb_dataset_cfg *d = &e->cfg->dataset;
  if (d->format == PB_FMT_JPEG) return true;
  size_t rec = (size_t)(d->record_bytes ? d->record_bytes : d->generate.record_bytes);
  return d->format == PB_FMT_RAW && rec && e->files.files[fi].bytes == rec;
}

/* Up to max samples (or failed files/records); 0 once every epoch has been read. */
static int read_produce(pb_worker *w, int max) {
  read_worker *rw = w->state;
  int n = 0;
  /* the engine's flag too: files that fail to open need no buffer and no push, so a run stopped by
   * their errors (on_error fail, max_errors) would otherwise go on claiming files to the epoch's end */
  const _Atomic bool *stopped = &w->stage->engine->cancelled;
  while (n < max && !w->cancelled && !atomic_load_explicit(stopped, memory_order_relaxed)) {
    if (rw->pending) {
      int rc = next_sample(w, rw);
      if (rc < 0) return -ECANCELED;
      n += rc; /* 0: the file ended (or its record failed, counted as an error) */
      if (rw->pending) continue;
      file_done(w);
      if (n > 0) break; /* the file's last samples are handed on now, not after the next file's read */
      continue;
    }
    uint32_t fi, epoch;
    if (!claim_file(w->stage, &fi, &epoch)) break;
    if (!is_one_sample(w->stage->engine, fi)) {
      start_file(w, fi, epoch);
      if (!rw->pending) file_done(w);
      continue;
    }
    n++;
    if (read_whole(w, fi, epoch) < 0) return -ECANCELED;
    file_done(w);
  }
  return w->cancelled || atomic_load_explicit(stopped, memory_order_relaxed) ? -ECANCELED : n;
}

/* ---------- lifecycle ---------- */

static uint64_t largest_file(const pb_file_list *l) {
  uint64_t max = 0;
  for (size_t i = 0; i < l->count; i++) max = PB_MAX(max, l->files[i].bytes);
  return max;
}

static size_t sample_align(const pb_stage *s) { return s->cfg->direct ? DIRECT_ALIGN : 64; }

static uint64_t read_memory(const pb_stage *s, pb_queue_fill fill) {
  const pb_engine *e = s->engine;
  size_t align = sample_align(s);
  uint64_t pool = (uint64_t)pb_stage_pool_buffers(s, fill) * ((s->sample_bytes + align - 1) / align * align);
  bool whole = e->cfg->dataset.format == PB_FMT_JPEG; /* raw may be either: plan for the file buffer */
  return pool + (whole ? 0 : (uint64_t)s->threads * largest_file(&e->files));
}

static int read_init(pb_stage *s, pb_err *err) {
  const pb_engine *e = s->engine;
  read_state *st = calloc(1, sizeof *st);
  read_worker *ws = calloc((size_t)s->threads, sizeof *ws);
  /* Sample buffers are read into with O_DIRECT only when `direct`; page alignment for small records
   * would cost a page each. */
  if (!st || !ws || pb_pool_init(&st->pool, pb_stage_pool_buffers(s, PB_QUEUES_FULL), 0, sample_align(s))) {
    free(st);
    free(ws);
    return pb_err_setc(err, -ENOMEM, "out of memory for the read stage's buffers");
  }
  st->pool_ready = true;
  /* Files read whole are the samples: their buffers start at the largest file's size (up to the plan's
   * estimate per buffer), so they do not grow, and leave holes in the heap, one file at a time. */
  if (e->cfg->dataset.format == PB_FMT_JPEG)
    pb_pool_expect(&st->pool, PB_MIN(largest_file(&e->files), s->sample_bytes));
  pb_pool_plan(&st->pool, s->sample_bytes, &s->engine->mem_budget); /* a file past the plan: its excess, or refused */
  uv_mutex_init(&st->order_lock);
  uv_mutex_init(&st->bw_lock);
  st->epochs = pb_engine_source_epochs(e);
  s->state = st;
  for (int k = 0; k < s->threads; k++) s->workers[k].state = &ws[k];
  if (!shuffle_epoch(st, e)) return pb_err_setc(err, -ENOMEM, "out of memory for the read stage's file order");
  return 0;
}

static void read_cancel(pb_stage *s) {
  read_state *st = s->state;
  pb_pool_cancel(&st->pool);
}

static void read_close(pb_stage *s) {
  read_state *st = s->state;
  if (!st) return;
  for (int k = 0; k < s->threads; k++) {
    read_worker *rw = s->workers[k].state;
    if (rw) free(rw->file_buf);
  }
  free(s->workers ? s->workers[0].state : NULL);
  pb_pool_close(&st->pool);
  pb_file_list_free(&st->order);
  uv_mutex_destroy(&st->order_lock);
  uv_mutex_destroy(&st->bw_lock);
  free(st);
  s->state = NULL;
}

/* Bytes of one encoded/raw sample as the read stage emits it: what the dataset itself says (plan_probe.c)
 * where it is there to read, else an estimate for planning. */
static uint64_t read_sample_bytes(const pb_stage *s, uint64_t input_bytes) {
  (void)input_bytes; /* a source: nothing comes in */
  const pb_engine *e = s->engine;
  const pb_dataset_cfg *d = &e->cfg->dataset;
  bool jpeg = d->format == PB_FMT_JPEG || (d->format == PB_FMT_TFRECORD && d->payload == PB_PAYLOAD_JPEG);
  uint64_t probed = e->have_files ? pb_probe_sample_bytes(e) : 0;
  if (probed) return probed;
  if (jpeg && d->generate.has_image) return (uint64_t)(d->generate.width * d->generate.height * 3 / 4);
  if (jpeg) return 256u << 10;
  uint64_t rec = (uint64_t)(d->record_bytes ? d->record_bytes : d->generate.record_bytes);
  return rec ? rec + 3 * (uint64_t)d->generate.record_bytes_stdev : 1u << 20;
}

const pb_stage_ops pb_stage_read_ops = {
    .type = "read",
    .desc = &pb_stage_desc_read,
    .memory_bytes = read_memory,
    .sample_bytes = read_sample_bytes,
    .init = read_init,
    .produce = read_produce,
    .cancel = read_cancel,
    .close = read_close,
};

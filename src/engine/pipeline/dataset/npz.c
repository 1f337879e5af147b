/* .npz archives (np.savez) through libzip, plus a small reader of the zip central directory that finds where
 * each stored member's bytes lie in the file: libzip does not expose that, and it lets the read stage pread a
 * member directly (zero-copy, any thread) instead of going through a non-thread-safe zip_t. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "dataset_err.h"
#include "files.h"
#include "npy.h"

struct pb_npz {
  zip_t *za;
  char *path;
  int nmembers;
  pb_npz_member *members;
};

/* ---- zip structures, just enough to locate stored data ------------------------------------------------ */

#define ZIP_EOCD_SIG 0x06054b50u
#define ZIP64_LOCATOR_SIG 0x07064b50u
#define ZIP64_EOCD_SIG 0x06064b50u
#define ZIP_CENTRAL_SIG 0x02014b50u
#define ZIP_LOCAL_SIG 0x04034b50u
#define ZIP_EOCD_BYTES 22
#define ZIP_CENTRAL_BYTES 46
#define ZIP_LOCAL_BYTES 30
#define ZIP_MAX_COMMENT_BYTES 65535
#define ZIP_MAX_CD_BYTES (64u << 20) /* a directory this big is not an npz worth zero-copy */

static uint64_t le(const uint8_t *p, int nbytes) {
  uint64_t v = 0;
  for (int i = nbytes - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static bool read_at(int fd, void *buf, size_t n, uint64_t offset) {
  for (size_t done = 0; done < n;) {
    ssize_t r = pread(fd, (uint8_t *)buf + done, n - done, (off_t)(offset + done));
    if (r <= 0) return false;
    done += (size_t)r;
  }
  return true;
}

static bool find_eocd(const uint8_t *tail, size_t n, size_t *at) {
  for (size_t i = n - ZIP_EOCD_BYTES + 1; i-- > 0;) {
    if (le(tail + i, 4) == ZIP_EOCD_SIG) {
      *at = i;
      return true;
    }
  }
  return false;
}

/* Where the central directory is, from the end-of-central-directory record (zip64's when there is one:
 * numpy forces zip64 for every member).  `tail` holds the file's last `n` bytes. */
static bool central_dir_from_tail(int fd, const uint8_t *tail, size_t n, uint64_t *cd_offset, uint64_t *cd_bytes) {
  size_t at;
  if (n < ZIP_EOCD_BYTES || !find_eocd(tail, n, &at)) return false;
  *cd_bytes = le(tail + at + 12, 4);
  *cd_offset = le(tail + at + 16, 4);
  if (at < 20 || le(tail + at - 20, 4) != ZIP64_LOCATOR_SIG) return true;
  uint8_t z64[56];
  if (!read_at(fd, z64, sizeof z64, le(tail + at - 20 + 8, 8)) || le(z64, 4) != ZIP64_EOCD_SIG) return false;
  *cd_bytes = le(z64 + 40, 8);
  *cd_offset = le(z64 + 48, 8);
  return true;
}

static bool find_central_dir(int fd, uint64_t file_bytes, uint64_t *cd_offset, uint64_t *cd_bytes) {
  size_t n = (size_t)PB_MIN(file_bytes, (uint64_t)(ZIP_EOCD_BYTES + ZIP_MAX_COMMENT_BYTES + 20));
  uint8_t *tail = malloc(n ? n : 1);
  bool ok = tail && read_at(fd, tail, n, file_bytes - n) &&
            central_dir_from_tail(fd, tail, n, cd_offset, cd_bytes);
  free(tail);
  return ok && *cd_bytes <= PB_MIN(file_bytes, (uint64_t)ZIP_MAX_CD_BYTES) && *cd_offset <= file_bytes - *cd_bytes;
}

/* Sizes and local-header offset of one central directory entry, with the zip64 extra field applied (it holds
 * the real values of whichever fields read 0xFFFFFFFF, in this order). */
typedef struct cd_entry {
  uint64_t size, comp_size, local_offset;
  const char *name;
  size_t name_bytes, entry_bytes;
} cd_entry;

static void apply_zip64_extra(const uint8_t *extra, size_t n, cd_entry *e) {
  while (n >= 4) {
    size_t id = le(extra, 2), len = le(extra + 2, 2);
    if (len > n - 4) return;
    if (id == 1) {
      const uint8_t *p = extra + 4, *end = p + len;
      uint64_t *fields[3] = {&e->size, &e->comp_size, &e->local_offset};
      for (int i = 0; i < 3; i++) {
        if (*fields[i] != 0xFFFFFFFFu || end - p < 8) continue;
        *fields[i] = le(p, 8);
        p += 8;
      }
      return;
    }
    extra += 4 + len;
    n -= 4 + len;
  }
}

static bool parse_cd_entry(const uint8_t *p, size_t left, cd_entry *e) {
  if (left < ZIP_CENTRAL_BYTES || le(p, 4) != ZIP_CENTRAL_SIG) return false;
  size_t name_bytes = le(p + 28, 2), extra_bytes = le(p + 30, 2), comment_bytes = le(p + 32, 2);
  e->entry_bytes = ZIP_CENTRAL_BYTES + name_bytes + extra_bytes + comment_bytes;
  if (e->entry_bytes > left) return false;
  e->comp_size = le(p + 20, 4);
  e->size = le(p + 24, 4);
  e->local_offset = le(p + 42, 4);
  e->name = (const char *)p + ZIP_CENTRAL_BYTES;
  e->name_bytes = name_bytes;
  apply_zip64_extra(p + ZIP_CENTRAL_BYTES + name_bytes, extra_bytes, e);
  return true;
}

/* The member's data starts after its local header, whose name and extra field lengths can differ from the
 * central directory's (numpy's local headers carry a zip64 extra the central one may not). */
static uint64_t local_data_offset(int fd, uint64_t local_offset, uint64_t file_bytes) {
  uint8_t h[ZIP_LOCAL_BYTES];
  if (!read_at(fd, h, sizeof h, local_offset) || le(h, 4) != ZIP_LOCAL_SIG) return PB_NPZ_NO_OFFSET;
  uint64_t at = local_offset + ZIP_LOCAL_BYTES + le(h + 26, 2) + le(h + 28, 2);
  return at <= file_bytes ? at : PB_NPZ_NO_OFFSET;
}

/* Fills members[i].offset_bytes for entries whose central record agrees with what libzip listed (same name
 * and size, in the same order); any doubt leaves PB_NPZ_NO_OFFSET, and libzip reads still work. */
static void locate_members(pb_npz *z, int fd, uint64_t file_bytes, const uint8_t *cd, size_t cd_bytes) {
  size_t at = 0;
  for (int i = 0; i < z->nmembers; i++) {
    cd_entry e;
    if (!parse_cd_entry(cd + at, cd_bytes - at, &e)) return;
    at += e.entry_bytes;
    pb_npz_member *m = &z->members[i];
    if (e.size != m->bytes || e.name_bytes != strlen(m->name) || memcmp(e.name, m->name, e.name_bytes) != 0)
      return;
    uint64_t data = local_data_offset(fd, e.local_offset, file_bytes);
    if (data != PB_NPZ_NO_OFFSET && m->bytes <= file_bytes - data) m->offset_bytes = data;
  }
}

static void find_offsets(pb_npz *z, int fd) {
  struct stat st;
  uint64_t cd_offset, cd_bytes;
  if (fstat(fd, &st) == 0 && find_central_dir(fd, (uint64_t)st.st_size, &cd_offset, &cd_bytes)) {
    uint8_t *cd = malloc(cd_bytes ? cd_bytes : 1);
    if (cd && read_at(fd, cd, cd_bytes, cd_offset)) locate_members(z, fd, (uint64_t)st.st_size, cd, cd_bytes);
    free(cd);
  }
}

/* ---- reading ------------------------------------------------------------------------------------------- */

/* A member name for a one-line message: the name comes from the file, so bytes that are not printable ASCII
 * (a newline, say) show as '?', as in npy.c's errors, and a long name is cut short with "...". */
#define SHOWN_NAME_CHARS 200

static const char *shown(const char *name, char buf[SHOWN_NAME_CHARS + 4]) {
  size_t n = 0;
  for (; name && name[n] && n < SHOWN_NAME_CHARS; n++) buf[n] = isprint((unsigned char)name[n]) ? name[n] : '?';
  strcpy(buf + n, name && name[n] ? "..." : "");
  return buf;
}

static int open_error(const char *path, int zerr, pb_err *err) {
  zip_error_t ze;
  zip_error_init_with_code(&ze, zerr);
  pb_err_set(err, "%s: cannot open as a zip archive: %s (expected an .npz written by np.savez)", path,
             zip_error_strerror(&ze));
  int sys = zip_error_code_system(&ze);
  zip_error_fini(&ze);
  if (zerr == ZIP_ER_NOENT) return -ENOENT;
  return zerr == ZIP_ER_OPEN || zerr == ZIP_ER_READ ? (sys > 0 ? -sys : -EIO) : -EBADMSG;
}

/* Records member `i`, refusing what np.savez never writes: compression or encryption. */
static int add_member(pb_npz *z, zip_uint64_t i, pb_err *err) {
  zip_stat_t st;
  char name[SHOWN_NAME_CHARS + 4];
  if (zip_stat_index(z->za, i, 0, &st) != 0)
    return PB_BAD_DATA(err, "%s: member %d: %s (expected a readable zip entry)", z->path, (int)i,
                       zip_strerror(z->za));
  if (st.comp_method != ZIP_CM_STORE || st.encryption_method != ZIP_EM_NONE)
    return PB_BAD_DATA(err, "%s: member '%s' is %s (expected stored members: write it with np.savez, not "
                       "np.savez_compressed)", z->path, shown(st.name, name),
                       st.comp_method != ZIP_CM_STORE ? "compressed" : "encrypted");
  pb_npz_member *m = &z->members[z->nmembers];
  m->name = strdup(st.name);
  if (!m->name) return -ENOMEM;
  m->bytes = st.size;
  m->offset_bytes = PB_NPZ_NO_OFFSET;
  z->nmembers++;
  return 0;
}

static int list_members(pb_npz *z, pb_err *err) {
  zip_int64_t n = zip_get_num_entries(z->za, 0);
  if (n < 0 || n > INT32_MAX) return PB_BAD_DATA(err, "%s: bad zip directory (expected an .npz)", z->path);
  z->members = calloc((size_t)n + 1, sizeof *z->members);
  if (!z->members) return -ENOMEM;
  for (zip_int64_t i = 0; i < n; i++) {
    int rc = add_member(z, (zip_uint64_t)i, err);
    if (rc < 0) return rc;
  }
  return 0;
}

/* zip_open converts each member's DOS time with mktime, and mktime re-reads the time zone (tzset) on every
 * call, freeing and allocating glibc's TZ string under a lock of glibc's own that TSan cannot see: two read
 * threads opening archives at once are reported as a race.  One open at a time costs nothing next to the
 * open itself and keeps the sanitizer stages meaningful. */
static pthread_mutex_t g_open_lock = PTHREAD_MUTEX_INITIALIZER;

int pb_npz_open(const char *path, pb_npz **out, pb_err *err) {
  int zerr = 0;
  *out = NULL;
  pb_npz *z = calloc(1, sizeof *z);
  if (!z || !(z->path = strdup(path))) {
    free(z);
    return -ENOMEM;
  }
  /* Opened without blocking and checked to be a regular file (a FIFO swapped in for the archive would
   * hold zip_open in open() for ever); libzip reads from a dup of the descriptor, find_offsets from it. */
  struct stat st;
  int fd = pb_data_file_open(path, 0, &st);
  if (fd < 0) {
    pb_npz_close(z);
    if (fd == PB_ENOTREG)
      pb_err_set(err, "%s: not a regular file: %s (expected an .npz file)", path, pb_file_kind(st.st_mode));
    else
      pb_err_set(err, "%s: cannot open as a zip archive: %s (expected an .npz written by np.savez)", path,
                 strerror(-fd));
    return fd;
  }
  int lent = dup(fd), dup_errno = errno; /* zip_fdopen closes what it is given once it succeeds */
  pthread_mutex_lock(&g_open_lock);
  z->za = lent >= 0 ? zip_fdopen(lent, ZIP_RDONLY | ZIP_CHECKCONS, &zerr) : NULL;
  int rc = z->za ? list_members(z, err) : lent < 0 ? -dup_errno : open_error(path, zerr, err);
  pthread_mutex_unlock(&g_open_lock);
  if (!z->za && lent >= 0) close(lent);
  if (!rc) find_offsets(z, fd);
  close(fd);
  if (rc < 0) {
    pb_npz_close(z);
    return rc;
  }
  *out = z;
  return 0;
}

const pb_npz_member *pb_npz_list(const pb_npz *z, int *nmembers) {
  *nmembers = z->nmembers;
  return z->members;
}

int pb_npz_find(const pb_npz *z, const char *name) {
  size_t n = strlen(name);
  for (int i = 0; i < z->nmembers; i++) {
    const char *m = z->members[i].name;
    if (strcmp(m, name) == 0 || (strncmp(m, name, n) == 0 && strcmp(m + n, ".npy") == 0)) return i;
  }
  return -1;
}

/* Reads exactly `want` bytes, then one more read that must hit the end: that is when libzip checks the CRC. */
static int read_all(zip_file_t *zf, uint8_t *buf, uint64_t want) {
  uint8_t extra;
  for (uint64_t got = 0; got < want;) {
    zip_int64_t n = zip_fread(zf, buf + got, want - got);
    if (n <= 0) return -EBADMSG;
    got += (uint64_t)n;
  }
  return zip_fread(zf, &extra, 1) == 0 ? 0 : -EBADMSG;
}

int pb_npz_read_member(pb_npz *z, int index, void *buf, size_t buf_bytes, pb_err *err) {
  if (index < 0 || index >= z->nmembers)
    return pb_err_set(err, "%s: member %d does not exist (expected 0..%d)", z->path, index, z->nmembers - 1);
  const pb_npz_member *m = &z->members[index];
  char name[SHOWN_NAME_CHARS + 4];
  if (buf_bytes < m->bytes)
    return pb_err_set(err, "%s: member '%s': buffer of %zu bytes is too small (expected at least %llu)", z->path,
                      shown(m->name, name), buf_bytes, (unsigned long long)m->bytes);
  zip_file_t *zf = zip_fopen_index(z->za, (zip_uint64_t)index, 0);
  if (!zf) return PB_BAD_DATA(err, "%s: member '%s': %s (expected a readable member)", z->path,
                              shown(m->name, name), zip_strerror(z->za));
  int rc = read_all(zf, buf, m->bytes);
  if (rc < 0)
    pb_err_set(err, "%s: member '%s': %s (expected %llu intact stored bytes)", z->path, shown(m->name, name),
               zip_file_strerror(zf), (unsigned long long)m->bytes);
  zip_fclose(zf);
  return rc;
}

void pb_npz_close(pb_npz *z) {
  if (!z) return;
  if (z->za) zip_discard(z->za); /* read-only: nothing to write back */
  for (int i = 0; i < z->nmembers; i++) free(z->members[i].name);
  free(z->members);
  free(z->path);
  free(z);
}

/* ---- writing ------------------------------------------------------------------------------------------- */

/* One member's whole .npy, built in memory: libzip reads its sources only at zip_close. */
static int member_npy(const char *descr, const int64_t *shape, int ndims, const void *data, size_t bytes,
                      char **out, size_t *out_bytes) {
  FILE *f = open_memstream(out, out_bytes);
  if (!f) return -errno;
  int rc = pb_npy_write(f, descr, shape, ndims, data, bytes);
  if (fclose(f) != 0 && rc == 0) rc = -EIO;
  if (rc < 0) {
    free(*out);
    *out = NULL;
  }
  return rc;
}

static int zip_add_stored(zip_t *za, const char *member, char *npy, size_t npy_bytes) {
  zip_source_t *src = zip_source_buffer(za, npy, npy_bytes, 1); /* 1: libzip frees npy */
  if (!src) {
    free(npy);
    return -ENOMEM;
  }
  zip_int64_t idx = zip_file_add(za, member, src, ZIP_FL_OVERWRITE | ZIP_FL_ENC_UTF_8);
  if (idx < 0) {
    zip_source_free(src);
    return -EIO;
  }
  return zip_set_file_compression(za, (zip_uint64_t)idx, ZIP_CM_STORE, 0) == 0 ? 0 : -EIO;
}

static int write_member(zip_t *za, const char *path, const char *name, const void *data, size_t bytes,
                        const int64_t *shape, int ndims, const char *descr, pb_err *err) {
  char member[4096], *npy = NULL;
  size_t npy_bytes = 0;
  if (!name || !*name || (size_t)snprintf(member, sizeof member, "%s.npy", name) >= sizeof member)
    return pb_err_set(err, "%s: bad member name (expected a short non-empty name)", path);
  int rc = member_npy(descr, shape, ndims, data, bytes, &npy, &npy_bytes);
  if (rc == -EINVAL)
    return pb_err_set(err, "%s: member '%s': %zu bytes do not make a '%s' array of the given shape (expected "
                      "prod(shape) x itemsize bytes)", path, member, bytes, descr);
  if (rc == 0) rc = zip_add_stored(za, member, npy, npy_bytes);
  if (rc < 0) pb_err_set(err, "%s: member '%s': %s (expected to add it to the archive)", path, member,
                         zip_strerror(za));
  return rc;
}

int pb_npz_write(const char *path, const char *const *names, const void *const *datas, const size_t *bytes,
                 const int64_t *const *shapes, const int *ndims, int nmembers, const char *descr, pb_err *err) {
  pb_npy_info info;
  if (nmembers < 1 || !descr || pb_npy_parse_descr(descr, &info) != 0)
    return pb_err_set(err, "%s: %d members of dtype '%s' (expected at least one member and a dtype such as "
                      "'<f4')", path, nmembers, descr ? descr : "(null)");
  int zerr = 0;
  zip_t *za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
  if (!za) return open_error(path, zerr, err);
  for (int i = 0; i < nmembers; i++) {
    int rc = write_member(za, path, names[i], datas[i], bytes[i], shapes[i], ndims[i], descr, err);
    if (rc < 0) {
      zip_discard(za);
      return rc;
    }
  }
  if (zip_close(za) == 0) return 0;
  pb_err_set(err, "%s: cannot write the archive: %s (expected a writable path)", path, zip_strerror(za));
  zip_discard(za);
  return -EIO;
}

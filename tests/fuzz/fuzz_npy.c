/* libFuzzer target: .npy parsing (src/engine/pipeline/dataset/npy.c) and .npz archives (npz.c over libzip), the way the
 * read stage (src/engine/pipeline/stage_read.c) reads them.
 *
 * Input: one file, taken both as a .npy (pb_npy_parse on the whole buffer, pb_npy_parse_header on its first
 * 128 bytes, as a reader that reads the header first does) and as an .npz: pb_npz_open takes a path, so the
 * bytes go into a memfd opened by its /proc/self/fd path (a file under /tmp where memfd_create is missing),
 * then every member is listed and read with pb_npz_read_member into a buffer of its size, and parsed as a
 * .npy, as load_npz + start_npy do for member 0.
 *
 * Checked besides ASan/UBSan/leaks: a parsed .npy's sizes add up to the buffer; the header-only parse agrees
 * with the whole one; a member's offset_bytes, when known, points at the bytes libzip reads; a buffer one
 * byte short is refused; errors come as one line. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "npy.h"

#define MAX_MEMBER_BYTES (8u << 20) /* members claiming more are listed but not read */
#define HEADER_PREFIX 128           /* what a header-first reader reads */

static int fd = -1;
static char path[64];

static void fail(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_npy: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

static void check_error(int rc, const pb_err *err) {
  if (rc >= 0) fail("negative error code expected", NULL);
  if (!err->msg[0]) fail("error without a message", NULL);
  if (strchr(err->msg, '\n')) fail("error message of more than one line", err->msg);
}

static void check_npy(const uint8_t *buf, size_t len) {
  pb_npy_info info, head;
  pb_err err = {{0}};
  int rc = pb_npy_parse(buf, len, &info, "fuzz.npy", &err);
  if (rc) {
    if (rc != -EBADMSG) fail("pb_npy_parse: error other than -EBADMSG", err.msg);
    check_error(rc, &err);
    return;
  }
  if (info.data_offset_bytes > len || len - info.data_offset_bytes != info.data_bytes ||
      info.count * info.itemsize_bytes != info.data_bytes || info.ndims < 0 || info.ndims > PB_NPY_MAX_DIMS)
    fail("pb_npy_parse: sizes do not add up", NULL);
  uint64_t count = 1;
  for (int i = 0; i < info.ndims; i++) {
    if (info.shape[i] < 0) fail("pb_npy_parse: negative dimension", NULL);
    count *= (uint64_t)info.shape[i];
  }
  if (count != info.count) fail("pb_npy_parse: count is not the product of the shape", NULL);
  if (info.data_offset_bytes <= HEADER_PREFIX) {
    size_t n = len < HEADER_PREFIX ? len : HEADER_PREFIX;
    if (pb_npy_parse_header(buf, n, &head, "fuzz.npy", &err) != 0)
      fail("pb_npy_parse_header refuses a header pb_npy_parse accepts", err.msg);
    bool same = head.version_major == info.version_major && head.version_minor == info.version_minor &&
                strcmp(head.descr, info.descr) == 0 && head.dtype == info.dtype && head.kind == info.kind &&
                head.byteorder == info.byteorder && head.itemsize_bytes == info.itemsize_bytes &&
                head.fortran_order == info.fortran_order && head.ndims == info.ndims &&
                memcmp(head.shape, info.shape, sizeof info.shape[0] * (size_t)info.ndims) == 0 &&
                head.count == info.count && head.data_offset_bytes == info.data_offset_bytes &&
                head.data_bytes == info.data_bytes;
    if (!same) fail("pb_npy_parse_header and pb_npy_parse disagree", NULL);
  }
}

/* The input as a file at `path`. */
static int put_file(const uint8_t *data, size_t size) {
  if (fd < 0) {
    fd = memfd_create("fuzz_npy.npz", MFD_CLOEXEC);
    if (fd >= 0) {
      snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    } else {
      snprintf(path, sizeof path, "/tmp/fuzz_npy.%d.npz", (int)getpid());
      fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) fail("cannot create a file for the npz", path);
    }
  }
  if (ftruncate(fd, 0) != 0) return -1;
  for (size_t done = 0; done < size;) {
    ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
    if (n <= 0) return -1;
    done += (size_t)n;
  }
  return 0;
}

static void check_npz(const uint8_t *data, size_t size) {
  if (put_file(data, size) != 0) return;
  pb_npz *z = NULL;
  pb_err err = {{0}};
  int rc = pb_npz_open(path, &z, &err);
  if (rc) {
    check_error(rc, &err);
    if (z) fail("pb_npz_open failed but gave an archive", NULL);
    return;
  }
  int n = -1;
  const pb_npz_member *m = pb_npz_list(z, &n);
  if (n < 0 || (n > 0 && !m)) fail("pb_npz_list", NULL);
  for (int i = 0; i < n; i++) {
    if (!m[i].name) fail("member without a name", NULL);
    int found = pb_npz_find(z, m[i].name);
    if (found < 0 || found > i) fail("pb_npz_find misses a listed member", m[i].name);
    if (m[i].bytes > MAX_MEMBER_BYTES) continue;
    size_t bytes = (size_t)m[i].bytes;
    uint8_t *buf = malloc(bytes ? bytes : 1);
    if (!buf) continue;
    if (bytes > 0 && pb_npz_read_member(z, i, buf, bytes - 1, &err) == 0)
      fail("pb_npz_read_member accepted a buffer one byte short", m[i].name);
    rc = pb_npz_read_member(z, i, buf, bytes, &err);
    if (rc == 0) {
      if (m[i].offset_bytes != PB_NPZ_NO_OFFSET &&
          (m[i].offset_bytes > size || size - m[i].offset_bytes < bytes ||
           memcmp(data + m[i].offset_bytes, buf, bytes) != 0))
        fail("offset_bytes does not point at the member's bytes", m[i].name);
      check_npy(buf, bytes);
    } else {
      check_error(rc, &err);
    }
    free(buf);
  }
  pb_npz_find(z, "x");
  if (pb_npz_read_member(z, n, NULL, 0, &err) == 0) fail("pb_npz_read_member read a member past the end", NULL);
  pb_npz_close(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_npy(data, size);
  check_npz(data, size);
  return 0;
}

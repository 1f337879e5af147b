/* h2d_copy_loop: the reference for pipebench's host-to-device bandwidth check (tests/gpu).
 *
 * A plain cudaMemcpyAsync loop, measured the way nvbandwidth measures a copy-engine copy: a pinned
 * (cudaMallocHost) host buffer, a cudaMalloc device buffer, one stream, CUDA events around each copy, and
 * the median over the timed copies.  No pipebench code: this is what the GPU and the bus can do, so that
 * "pipebench's pinned H2D reaches at least 90 % of a plain copy loop of the same size" has a ceiling
 * measured on the same machine.
 *
 *   pb_h2d_copy_loop --bytes N[,N2,...] [--iters K] [--warmup W] [--device ID] [--pageable]
 *
 * For each size it prints one JSON object on one line on stdout:
 *   {"bytes":..,"pinned":true,"median_gb_per_s":..,"min_gb_per_s":..,"max_gb_per_s":..,"mean_gb_per_s":..,
 *    "iters":..,"warmup":..,"device":..,"device_name":"..","device_count":..,"pci_bus_id":"..",
 *    "driver_version":..,"runtime_version":..,"method":".."}
 * GB = 10^9 bytes.  --pageable uses malloc'ed host memory instead (the staging path through the driver).
 * Every CUDA call is checked: on an error it prints the call and the CUDA error on stderr and exits 1
 * (also when there is no usable GPU).  Usage errors exit 2.
 *
 * Build: nvcc -O2 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
 *             -o pb_h2d_copy_loop tests/gpu/h2d_copy_loop.cu     (or the CMake target pb_h2d_copy_loop)
 */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 64

static const char *g_prog = "pb_h2d_copy_loop";

static void cuda_fail(cudaError_t e, const char *what, int line) {
  fprintf(stderr, "%s: %s failed (line %d): %s: %s\n", g_prog, what, line, cudaGetErrorName(e),
          cudaGetErrorString(e));
  exit(1);
}

#define CK(call)                                          \
  do {                                                    \
    cudaError_t ck_e_ = (call);                           \
    if (ck_e_ != cudaSuccess) cuda_fail(ck_e_, #call, __LINE__); \
  } while (0)

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s --bytes N[,N2,...] [--iters K] [--warmup W] [--device ID] [--pageable]\n"
          "  --bytes    copy sizes in bytes (comma list; integers, at least 1)\n"
          "  --iters    timed copies per size (default 100)\n"
          "  --warmup   untimed copies per size first (default 10)\n"
          "  --device   CUDA device ordinal (default 0)\n"
          "  --pageable copy from malloc'ed (pageable) host memory instead of cudaMallocHost\n"
          "Prints one JSON object per size on stdout: median/min/max GB/s (10^9 bytes/s) over the timed\n"
          "copies, each bracketed by CUDA events on one stream.  Exit 1 on any CUDA error, 2 on usage errors.\n",
          g_prog);
}

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "%s: ", g_prog);
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  usage(stderr);
  return 2;
}

/* A positive decimal integer that fits in unsigned long long; 0 on success. */
static int parse_u64(const char *s, size_t len, unsigned long long *out) {
  if (len == 0 || len > 20) return -1;
  char buf[32];
  memcpy(buf, s, len);
  buf[len] = '\0';
  for (size_t i = 0; i < len; i++)
    if (buf[i] < '0' || buf[i] > '9') return -1;
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(buf, &end, 10);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* numpy.percentile's default (linear interpolation) at 50 %: the median. */
static double median_sorted(const double *v, int n) {
  if (n % 2) return v[n / 2];
  return 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

int main(int argc, char **argv) {
  unsigned long long sizes[MAX_SIZES];
  int nsizes = 0;
  unsigned long long iters = 100, warmup = 10, device = 0;
  int pageable = 0;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--pageable")) {
      pageable = 1;
    } else if (!strcmp(a, "--bytes") || !strcmp(a, "--iters") || !strcmp(a, "--warmup") ||
               !strcmp(a, "--device")) {
      if (i + 1 >= argc) return usage_error("%s needs a value", a);
      const char *v = argv[++i];
      if (!strcmp(a, "--bytes")) {
        nsizes = 0;
        const char *p = v;
        for (;;) {
          size_t len = strcspn(p, ",");
          unsigned long long n;
          if (parse_u64(p, len, &n) || n == 0) return usage_error("--bytes: \"%s\" is not a list of positive integers", v);
          if (nsizes == MAX_SIZES) return usage_error("--bytes: more than 64 sizes in \"%s\"", v);
          sizes[nsizes++] = n;
          if (!p[len]) break;
          p += len + 1;
        }
      } else {
        unsigned long long n;
        if (parse_u64(v, strlen(v), &n)) return usage_error("\"%s\" is not a non-negative integer", v);
        if (!strcmp(a, "--iters")) {
          if (n < 1 || n > 1000000) return usage_error("--iters %s: expected 1 to 1000000", v);
          iters = n;
        } else if (!strcmp(a, "--warmup")) {
          if (n > 1000000) return usage_error("--warmup %s: expected 0 to 1000000", v);
          warmup = n;
        } else {
          if (n > 1023) return usage_error("--device %s: expected a CUDA device ordinal", v);
          device = n;
        }
      }
    } else {
      return usage_error("unknown argument \"%s\"", a);
    }
  }
  if (nsizes == 0) return usage_error("%s", "--bytes is required");

  int driver_version = 0, runtime_version = 0, count = 0;
  CK(cudaRuntimeGetVersion(&runtime_version));
  /* 0 when no driver is installed: cudaGetDeviceCount then says why. */
  CK(cudaDriverGetVersion(&driver_version));
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    fprintf(stderr, "%s: no usable CUDA GPU: cudaGetDeviceCount: %s: %s (driver version %d, runtime %d)\n", g_prog,
            e != cudaSuccess ? cudaGetErrorName(e) : "cudaSuccess",
            e != cudaSuccess ? cudaGetErrorString(e) : "0 devices", driver_version, runtime_version);
    return 1;
  }
  if ((int)device >= count) {
    fprintf(stderr, "%s: --device %llu: only %d CUDA device(s) (ordinals 0 to %d)\n", g_prog, device, count,
            count - 1);
    return 1;
  }
  CK(cudaSetDevice((int)device));
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, (int)device));
  char bus_id[32] = "";
  CK(cudaDeviceGetPCIBusId(bus_id, (int)sizeof bus_id, (int)device));

  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t *ev_start = (cudaEvent_t *)calloc(iters, sizeof *ev_start);
  cudaEvent_t *ev_end = (cudaEvent_t *)calloc(iters, sizeof *ev_end);
  double *gbps = (double *)calloc(iters, sizeof *gbps);
  if (!ev_start || !ev_end || !gbps) {
    fprintf(stderr, "%s: out of host memory for %llu iterations\n", g_prog, iters);
    return 1;
  }
  for (unsigned long long i = 0; i < iters; i++) {
    CK(cudaEventCreate(&ev_start[i]));
    CK(cudaEventCreate(&ev_end[i]));
  }

  for (int s = 0; s < nsizes; s++) {
    size_t bytes = (size_t)sizes[s];
    void *host = NULL, *dev = NULL;
    if (pageable) {
      host = malloc(bytes);
      if (!host) {
        fprintf(stderr, "%s: malloc(%zu) failed\n", g_prog, bytes);
        return 1;
      }
    } else {
      CK(cudaMallocHost(&host, bytes));
    }
    memset(host, 0x5a, bytes); /* fault every page in before timing */
    CK(cudaMalloc(&dev, bytes));

    for (unsigned long long i = 0; i < warmup; i++) CK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream));
    CK(cudaStreamSynchronize(stream));

    /* Timed copies back to back on one stream, each between its own pair of events. */
    for (unsigned long long i = 0; i < iters; i++) {
      CK(cudaEventRecord(ev_start[i], stream));
      CK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream));
      CK(cudaEventRecord(ev_end[i], stream));
    }
    CK(cudaStreamSynchronize(stream));
    double sum = 0;
    for (unsigned long long i = 0; i < iters; i++) {
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, ev_start[i], ev_end[i]));
      /* An event pair can read 0 ms for a tiny copy (0.5 us resolution): count it as that resolution. */
      double sec = (ms > 0 ? ms : 0.0005f) / 1e3;
      gbps[i] = (double)bytes / sec / 1e9;
      sum += gbps[i];
    }
    qsort(gbps, iters, sizeof *gbps, cmp_double);

    printf("{\"bytes\":%zu,\"pinned\":%s,\"median_gb_per_s\":%.3f,\"min_gb_per_s\":%.3f,\"max_gb_per_s\":%.3f,"
           "\"mean_gb_per_s\":%.3f,\"iters\":%llu,\"warmup\":%llu,\"device\":%llu,\"device_name\":",
           bytes, pageable ? "false" : "true", median_sorted(gbps, (int)iters), gbps[0], gbps[iters - 1],
           sum / (double)iters, iters, warmup, device);
    json_string(stdout, prop.name);
    printf(",\"device_count\":%d,\"pci_bus_id\":", count);
    json_string(stdout, bus_id);
    printf(",\"driver_version\":%d,\"runtime_version\":%d,\"method\":\"cudaMemcpyAsync H2D, %s host buffer, "
           "one stream, CUDA events around each copy, median of %llu\"}\n",
           driver_version, runtime_version, pageable ? "pageable (malloc)" : "pinned (cudaMallocHost)", iters);
    fflush(stdout);

    CK(cudaFree(dev));
    if (pageable) free(host);
    else CK(cudaFreeHost(host));
  }

  for (unsigned long long i = 0; i < iters; i++) {
    CK(cudaEventDestroy(ev_start[i]));
    CK(cudaEventDestroy(ev_end[i]));
  }
  CK(cudaStreamDestroy(stream));
  free(ev_start);
  free(ev_end);
  free(gbps);
  return 0;
}

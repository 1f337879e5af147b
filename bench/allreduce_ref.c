/* A plain MPI_Allreduce timing loop, the reference for pipebench's measured exchange (bench/mpi_scaling.py):
 * the same float32 sum of BYTES bytes (+ the 4-byte stop flag pipebench adds), one call every GAP_MS as
 * pipebench makes one per step, timed on CLOCK_MONOTONIC around the call; prints rank 0's median and mean.
 *
 *   mpicc -O2 -o allreduce_ref bench/allreduce_ref.c && mpirun -np 2 ./allreduce_ref BYTES CALLS GAP_MS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  long bytes = argc > 1 ? atol(argv[1]) : 4 << 20;
  int calls = argc > 2 ? atoi(argv[2]) : 100, warm = 5;
  double gap_ms = argc > 3 ? atof(argv[3]) : 5;
  int n = (int)((bytes + 3) / 4) + 1, rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  float *buf = calloc((size_t)n, sizeof *buf);
  double *t = calloc((size_t)calls, sizeof *t);
  for (int i = -warm; i < calls; i++) {
    double end = now_ms() + gap_ms; /* the step before the exchange */
    struct timespec ts = {0, 200000};
    while (now_ms() < end) nanosleep(&ts, NULL);
    double t0 = now_ms();
    MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (i >= 0) t[i] = now_ms() - t0;
  }
  double sum = 0;
  for (int i = 0; i < calls; i++) sum += t[i];
  qsort(t, (size_t)calls, sizeof *t, cmp);
  if (rank == 0) printf("%ld %.4f %.4f\n", bytes, t[calls / 2], sum / calls);
  free(buf);
  free(t);
  MPI_Finalize();
  return 0;
}

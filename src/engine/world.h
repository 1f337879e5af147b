/* The processes of one job (issue 8): `mpirun -np N pipebench --config X.json` runs one pipeline per rank.
 * Built with MPI (OpenMPI, found by CMake) and launched by mpirun, pipebench joins the MPI job; otherwise it
 * is a world of one and never touches MPI, so the same binary runs without mpirun.
 *
 * Every collective below must be reached by every rank, whatever happened to it before: the callers put
 * them on paths with no early return (src/cli/ranks.c), so that a rank that failed makes the job fail with its
 * own error instead of leaving the others waiting. */
#ifndef PB_WORLD_H
#define PB_WORLD_H

#include <stdbool.h>
#include <stddef.h>

typedef struct pb_world {
  bool mpi;                     /* joined an MPI job */
  bool threads_ok;              /* MPI lets a thread other than main make calls (MPI_THREAD_SERIALIZED) */
  int rank, size;               /* MPI_COMM_WORLD */
  int local_rank, local_size;   /* on this host (MPI_COMM_TYPE_SHARED): which GPU is ours */
  char host[64];
} pb_world;

/* Joins the MPI job when launched by mpirun; a world of one otherwise.  Returns 0, or an exit status after
 * printing one line (launched by mpirun with more than one rank, but built without MPI). */
int pb_world_init(int *argc, char ***argv);
const pb_world *pb_world_get(void);
/* Leaves the MPI job (no-op in a world of one). */
void pb_world_finalize(void);

/* Collectives (no-ops, or the identity, in a world of one): */
/* The largest of every rank's status: each rank learns whether any failed, and how. */
int pb_world_max_status(int status);
/* Rank 0's buf (a NUL-terminated string of at most len - 1 bytes) to every rank. */
void pb_world_bcast_str(char *buf, size_t len);
/* Every rank's text to rank 0: there, an array of `size` strings (free each and the array); NULL on the
 * others (and on rank 0 when out of memory). */
char **pb_world_gather_text(const char *text);
/* In place, the element-wise sum of every rank's n floats (the gradient exchange, src/engine/allreduce.c). */
void pb_world_allreduce_sum(float *buf, size_t n);

#endif

#include "world.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#ifdef PB_HAVE_MPI
#include <mpi.h>
#endif

static pb_world g_world = {.rank = 0, .size = 1, .local_rank = 0, .local_size = 1};

/* The world size a launcher (mpirun, srun) announced in the environment, or 0 when none did. */
static int launched_size(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"};
  for (size_t i = 0; i < PB_ARRAY_LEN(vars); i++) {
    const char *v = getenv(vars[i]);
    if (v && atoi(v) > 0) return atoi(v);
  }
  return getenv("PMIX_RANK") ? 1 : 0;
}

int pb_world_init(int *argc, char ***argv) {
  gethostname(g_world.host, sizeof g_world.host - 1);
  int launched = launched_size();
#ifdef PB_HAVE_MPI
  if (launched <= 0) return 0;
  int provided = 0;
  /* SERIALIZED: the main thread makes the collectives; a device thread may make the per-step allreduce,
   * never at the same time. */
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "pipebench: MPI_Init_thread failed (expected to join the job mpirun started)\n");
    return PB_EXIT_RUNTIME;
  }
  g_world.mpi = true;
  g_world.threads_ok = provided >= MPI_THREAD_SERIALIZED;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_world.size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_world.rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &g_world.local_rank);
  MPI_Comm_size(local, &g_world.local_size);
  MPI_Comm_free(&local);
  return 0;
#else
  (void)argc, (void)argv;
  if (launched > 1) {
    fprintf(stderr, "pipebench: launched as one of %d processes, but this pipebench was built without MPI "
                    "(expected a build with OpenMPI found: apt-get install libopenmpi-dev, then rebuild)\n",
            launched);
    return PB_EXIT_USAGE;
  }
  return 0;
#endif
}

const pb_world *pb_world_get(void) { return &g_world; }

void pb_world_finalize(void) {
#ifdef PB_HAVE_MPI
  if (g_world.mpi) MPI_Finalize();
  g_world.mpi = false;
#endif
}

int pb_world_max_status(int status) {
#ifdef PB_HAVE_MPI
  if (g_world.mpi) {
    int all = status;
    MPI_Allreduce(&status, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return all;
  }
#endif
  return status;
}

void pb_world_bcast_str(char *buf, size_t len) {
#ifdef PB_HAVE_MPI
  if (g_world.mpi) {
    buf[len - 1] = '\0';
    MPI_Bcast(buf, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD);
  }
#else
  (void)buf, (void)len;
#endif
}

char **pb_world_gather_text(const char *text) {
  int size = g_world.size;
  char **out = g_world.rank == 0 ? calloc((size_t)size, sizeof *out) : NULL;
#ifdef PB_HAVE_MPI
  if (g_world.mpi) {
    int n = (int)strlen(text) + 1;
    /* Rank 0 tells every rank whether it could make room, so that no rank sends into a buffer that is not
     * there: on "no", every rank skips the transfer and rank 0 returns NULL. */
    int *lens = g_world.rank == 0 ? calloc((size_t)size, sizeof *lens) : NULL;
    int *offs = g_world.rank == 0 ? calloc((size_t)size, sizeof *offs) : NULL;
    int ok = g_world.rank != 0 || (out && lens && offs);
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char *all = NULL;
    if (ok) {
      MPI_Gather(&n, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (g_world.rank == 0) {
        long long total = 0;
        for (int r = 0; r < size; r++) offs[r] = (int)total, total += lens[r];
        all = total <= INT32_MAX ? malloc((size_t)total) : NULL;
        ok = all != NULL;
      }
      MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    if (ok) MPI_Gatherv(text, n, MPI_CHAR, all, lens, offs, MPI_CHAR, 0, MPI_COMM_WORLD);
    for (int r = 0; ok && out && r < size; r++) out[r] = strdup(all + offs[r]);
    if (!ok && out) {
      free(out);
      out = NULL;
    }
    free(all);
    free(lens);
    free(offs);
    return out;
  }
#endif
  if (out) out[0] = strdup(text);
  return out;
}

void pb_world_allreduce_sum(float *buf, size_t n) {
#ifdef PB_HAVE_MPI
  if (g_world.mpi) MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
#else
  (void)buf, (void)n;
#endif
}

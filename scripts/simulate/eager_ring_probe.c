/* SMPI probe: the message pattern of Open MPI's reduce_scatter ring (coll_base_reduce_scatter_
 * intra_ring: post the receive for block k, wait for block k-1, send block k with a blocking send),
 * timed as shardbench times one operation: a world barrier, untimed, then each rank's own elapsed
 * time, the maximum over ranks reported. It also prints every rank's entry time (its clock when
 * it left the barrier), which calibrate/scripts/eager_ring.py's event simulation replays.
 * With a second argument `window`, every rank starts at one agreed time instead of at its barrier
 * exit: rank 0 broadcasts a start 50 us ahead and every rank sleeps until it (nanosleep is
 * simulated time under SMPI; SMPI's clock is global), the common start that removes the
 * barrier's skew (docs/CALIBRATION.md "Barrier skew in the measured counts").
 *
 * Build and run (SimGrid SMPI, Debian libsimgrid-dev):
 *   smpicc -O1 scripts/simulate/eager_ring_probe.c -o probe
 *   scripts/simulate/smpirun.sh --platform P --hostfile H --np N --shardbench ./probe -- \
 *       BYTES [window]
 * Output: "entry RANK ENTRY_US ELAPSED_US" per rank, then "max_elapsed_us X" (rank 0); with
 * `window`, "late_ranks K" first: ranks that got the start time after it (they started late: a
 * margin too short for this platform; exit 1).
 * Reductions are not computed (SMPI's smpi/simulate-computation:no makes them free anyway). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const long m = argc > 1 ? atol(argv[1]) : 0;
  const int window = argc > 2 && strcmp(argv[2], "window") == 0;
  if (m <= 0 || m > (1L << 30) || n < 2 || (argc > 2 && !window) || argc > 3) {
    if (rank == 0)
      fprintf(stderr,
              "eager_ring_probe: usage: eager_ring_probe BYTES (1..2^30) [window] on >= 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  char* in[2] = {malloc((size_t)m), malloc((size_t)m)};
  char* out = malloc((size_t)m);
  const int to = (rank + 1) % n, from = (rank + n - 1) % n;
  MPI_Request req[2];
  MPI_Barrier(MPI_COMM_WORLD);
  int late = 0;
  if (window) {
    double start = MPI_Wtime() + 50e-6;  // well past the barrier's and the broadcast's skew
    MPI_Bcast(&start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    const double dt = start - MPI_Wtime();
    late = dt < 0;
    if (dt > 0) {  // one ns more than the truncation: never before the start
      const long long ns = (long long)(dt * 1e9) + 1;
      const struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
      nanosleep(&ts, NULL);
    }
  }
  const double t0 = MPI_Wtime();
  int inbi = 0;
  MPI_Irecv(in[inbi], (int)m, MPI_BYTE, from, 7, MPI_COMM_WORLD, &req[inbi]);
  MPI_Send(out, (int)m, MPI_BYTE, to, 7, MPI_COMM_WORLD);
  for (int k = 2; k < n; ++k) {
    inbi ^= 1;
    MPI_Irecv(in[inbi], (int)m, MPI_BYTE, from, 7, MPI_COMM_WORLD, &req[inbi]);
    MPI_Wait(&req[inbi ^ 1], MPI_STATUS_IGNORE);
    MPI_Send(out, (int)m, MPI_BYTE, to, 7, MPI_COMM_WORLD);
  }
  MPI_Wait(&req[inbi], MPI_STATUS_IGNORE);
  const double mine = MPI_Wtime() - t0;
  double mx = 0;
  MPI_Reduce(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  int late_ranks = 0;
  MPI_Allreduce(&late, &late_ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (window && rank == 0) printf("late_ranks %d\n", late_ranks);
  printf("entry %d %.6f %.6f\n", rank, t0 * 1e6, mine * 1e6);
  fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("max_elapsed_us %.6f\n", mx * 1e6);
  free(in[0]);
  free(in[1]);
  free(out);
  MPI_Finalize();
  return late_ranks > 0 ? 1 : 0;
}

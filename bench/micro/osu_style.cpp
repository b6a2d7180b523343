// Peer reference for bench/scripts/parity.sh: MPI_Allgather / MPI_Allreduce timed the way the
// OSU micro-benchmarks do (osu_allgather.c, osu_allreduce.c): per iteration t_start = MPI_Wtime(),
// the call, t_stop = MPI_Wtime(), then MPI_Barrier; `skip` warm-up iterations are not timed.
// Besides OSU's own figure (mean over ranks of each rank's mean latency) it reports the statistic
// shardbench reports, the median over iterations of the slowest rank's time, so the two tools can
// be compared like for like. Sizes follow shardbench's convention (docs/RESULTS_FORMAT.md): all_gather S is
// the whole output (per-rank count S/4/n floats), all_reduce S one rank's buffer.
//   osu_style [--iterations N] [--skip K] [--thread-multiple] SIZE...   (JSON lines on rank 0)
// --thread-multiple initialises MPI with MPI_THREAD_MULTIPLE (as the shardcal MPI backend did for
// its watchdog in early versions; it now runs at SINGLE by default, see SHARDCAL_MPI_THREAD_LEVEL),
// to separate the cost of that thread level from the harness's own.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "shardcal/formats/median.hpp"

using shardcal::formats::median;

int main(int argc, char** argv) {
  bool multiple = false;
  for (int i = 1; i < argc; ++i) multiple = multiple || !std::strcmp(argv[i], "--thread-multiple");
  if (multiple) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  int iterations = 200, skip = 20;
  std::vector<long> sizes;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc) iterations = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--skip") && i + 1 < argc) skip = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--thread-multiple")) continue;
    else sizes.push_back(std::atol(argv[i]));
  }
  if (sizes.empty() || iterations < 1) {
    if (rank == 0)
      std::fprintf(stderr, "usage: osu_style [--iterations N] [--skip K] [--thread-multiple] SIZE...\n");
    MPI_Finalize();
    return 2;
  }
  for (const char* op : {"all_gather", "all_reduce"}) {
    const bool gather = op[4] == 'g';
    for (long s : sizes) {
      const long elems = std::max(1L, s / 4);
      const long count = gather ? std::max(1L, elems / world) : elems;
      std::vector<float> send(std::size_t(count), 1.0f), recv(std::size_t(gather ? count * world : count));
      std::vector<double> mine(static_cast<std::size_t>(iterations));
      double timer = 0.0;
      MPI_Barrier(MPI_COMM_WORLD);
      for (int i = 0; i < iterations + skip; ++i) {
        const double t_start = MPI_Wtime();
        if (gather)
          MPI_Allgather(send.data(), int(count), MPI_FLOAT, recv.data(), int(count), MPI_FLOAT, MPI_COMM_WORLD);
        else
          MPI_Allreduce(send.data(), recv.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        const double t_stop = MPI_Wtime();
        if (i >= skip) {
          timer += t_stop - t_start;
          mine[std::size_t(i - skip)] = t_stop - t_start;
        }
        MPI_Barrier(MPI_COMM_WORLD);
      }
      const double latency = timer / iterations;
      double avg = 0.0;
      MPI_Reduce(&latency, &avg, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      std::vector<double> slowest(static_cast<std::size_t>(iterations));
      MPI_Reduce(mine.data(), slowest.data(), iterations, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (rank == 0)
        std::printf("{\"op\":\"%s\",\"size\":%ld,\"count\":%ld,\"bytes\":%ld,\"iterations\":%d,"
                    "\"median_slowest_s\":%.9g,\"osu_avg_latency_s\":%.9g,\"thread_multiple\":%s}\n",
                    op, s, count, (gather ? count * world : count) * 4, iterations, median(slowest),
                    avg / world, multiple ? "true" : "false");
    }
  }
  MPI_Finalize();
  return 0;
}

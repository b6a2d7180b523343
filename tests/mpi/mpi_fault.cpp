// Fault injection under mpirun: the MPI backend must end the job in bounded time and name the
// failed rank and operation, never hang. Driven by run_expect.cmake from ctest.
//   mpi_fault <mode> [timeout_s]
//   ok          every rank completes
//   throw       rank 1 throws while the others wait in an all_reduce   -> rank 1 aborts the job
//   kill        rank 1 dies by SIGKILL while the others wait           -> mpirun ends the job
//   hang        rank 1 blocks forever outside MPI; the others' all_reduce on a split times out
//   consistent  every rank throws the same error                       -> each rethrows, no abort
//   peer        rank 1 throws after the last collective                -> peers get PeerFailure
//   mpi_error   rank 1 receives fewer elements than were sent: MPI's error comes back as an
//               Error naming rank, operation and group; the peers get it as PeerFailure
//   vcount      all_gatherv with a count beyond INT_MAX: a clear Error on every rank
//   level       every rank prints the MPI thread level asked for and provided, then completes
//   signal      the program handles the watchdog's signal itself: a clear Error on every rank,
//               not a silently replaced handler
// The hang test also runs at other SHARDCAL_MPI_THREAD_LEVELs: the watchdog never calls MPI, so the
// bound must hold at every level.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "shardcal/error.hpp"
#include "shardcal/launch.hpp"
#include "mpi/mpi_backend.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: mpi_fault ok|throw|kill|hang|consistent|peer|mpi_error|vcount|level|signal "
        "[timeout_s]\n");
    return 2;
  }
  const std::string mode = argv[1];
  shardcal::LaunchOptions opts;
  opts.backend = "mpi";
  opts.timeout_s = argc > 2 ? std::atof(argv[2]) : 300.0;
  int rank = -1;
  if (mode == "signal") signal(SIGRTMIN + 4, [](int) {});
  try {
    shardcal::launch(opts, [&](shardcal::Communicator& world) {
      rank = world.rank();
      std::vector<float> x(1024, 1.0f), y(1024);
      auto all_reduce = [&](shardcal::Communicator& c) {
        c.all_reduce(x.data(), y.data(), x.size(), shardcal::DType::F32, shardcal::ReduceOp::Sum);
      };
      all_reduce(world);  // everyone is alive up to here
      const bool victim = world.rank() == 1;
      if (mode == "throw" && victim)
        throw shardcal::Error("injected failure on rank 1 before all_reduce #2");
      if (mode == "kill" && victim) raise(SIGKILL);
      if (mode == "hang") {
        auto group = world.split(0, world.rank());
        if (victim)
          for (;;) pause();  // blocked outside MPI, not spinning; ends when the job is torn down
        all_reduce(*group);
        return;
      }
      if (mode == "level") {
        const auto level = shardcal::mpi::thread_level();
        std::fprintf(stderr, "mpi_fault rank %d: thread level requested %s provided %s\n", rank,
                     level.requested.c_str(), level.provided.c_str());
        return;
      }
      if (mode == "consistent") throw shardcal::Error("injected failure on every rank");
      if (mode == "mpi_error") {
        if (world.rank() == 0) world.send(x.data(), 16, shardcal::DType::F32, 1, 3);
        if (world.rank() == 1) world.recv(y.data(), 8, shardcal::DType::F32, 0, 3);
        return;
      }
      if (mode == "vcount") {
        const std::vector<std::size_t> counts(std::size_t(world.size()), 3000000000u),
            displs(std::size_t(world.size()), 0);
        world.all_gatherv(nullptr, counts[0], nullptr, counts, displs, shardcal::DType::U8);
        return;
      }
      all_reduce(world);
      if (mode == "peer" && victim)
        throw shardcal::Error("injected failure on rank 1 after the last collective");
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_fault rank %d: caught: %s\n", rank, e.what());
    return 1;
  }
  return 0;
}

#pragma once
// Start an SPMD program on a backend: the one place that knows how ranks come to exist.
//   sim   world threads in this process (any world size, deterministic)
//   mpi   this process is one rank of a job started by mpirun / srun --mpi=pmix
//   nccl  as mpi (MPI bootstraps the NCCL communicator), one CUDA device per rank
#include <functional>
#include <string>
#include <vector>

#include "shardcal/communicator.hpp"

namespace shardcal {

struct LaunchOptions {
  std::string backend = "sim";
  // sim: number of rank threads (required, >= 1). mpi/nccl: 0 = whatever the launcher started,
  // otherwise must equal it (a clear error on every rank if not).
  int world = 0;
  // A rank waiting longer than this in one operation raises PeerFailure (never a hang).
  double timeout_s = 300.0;
};

// Runs body(world) on every rank. Returns when every rank's body returned. sim: rethrows the
// root-cause error of the first rank that failed (peers get PeerFailure). mpi/nccl: rethrows this
// rank's error; a rank whose peer died gets PeerFailure within timeout_s.
void launch(const LaunchOptions& opts, const std::function<void(Communicator&)>& body);

std::vector<std::string> compiled_backends();  // e.g. {"sim", "mpi", "nccl"}
// Library versions compiled in, e.g. {"MPI", "Open MPI v4.1.4"}, {"NCCL", "2.27.3"}.
std::vector<std::pair<std::string, std::string>> library_versions();
// Process-wide settings of a backend that change what is measured, for results files; call after
// launch() started it. mpi and nccl: {"mpi_thread_level", provided}, {"mpi_thread_level_requested",
// requested} ("single" | "funneled" | "serialized" | "multiple"; see SHARDCAL_MPI_THREAD_LEVEL in
// mpi/mpi_backend.hpp). sim: none.
std::vector<std::pair<std::string, std::string>> backend_settings(const std::string& backend);

}  // namespace shardcal

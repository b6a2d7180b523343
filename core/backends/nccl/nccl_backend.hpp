#pragma once
// NCCL backend: this process is one rank of a job started by mpirun / srun --mpi=pmix; MPI
// bootstraps the NCCL communicator and carries the host control plane; data buffers live in the
// memory of one CUDA device per rank (node-local rank modulo the visible device count).
// No CUDA, NCCL or MPI header is included here, so launch.cpp stays free of them.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "shardcal/communicator.hpp"

namespace shardcal::nccl {

struct Options {
  // An operation (including communicator creation and split) waiting longer than this aborts
  // its NCCL communicator and raises PeerFailure.
  double timeout_s = 300;
};

// Runs body(world) on this rank. expected_world: 0 accepts the launcher's world size, otherwise
// it must match (Error on every rank, before any communication). Throws Error when no CUDA
// device is visible or there are more ranks on a node than devices.
void run(int expected_world, const Options& opts, const std::function<void(Communicator&)>& body);

// {"NCCL", "2.28.9"}, {"CUDA runtime", "13.0"}, {"CUDA driver", "13.0"} (driver "none" when no
// driver is installed). Never throws and never needs a device.
std::vector<std::pair<std::string, std::string>> library_versions();

}  // namespace shardcal::nccl

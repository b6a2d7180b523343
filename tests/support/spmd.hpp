#pragma once
// SPMD test support: one test body runs on every rank of the backend under test.
// The backend comes from SHARDCAL_TEST_BACKEND (sim | mpi | nccl; default sim). Under mpi/nccl
// the test binary is started by mpirun and each process is one rank, so the world size is fixed;
// under sim any world size can be asked for.
#include <functional>
#include <string>

#include "shardcal/communicator.hpp"

namespace shardcal::testing {

std::string backend_name();
// 0 when any world size works (sim), else the only world size available (processes launched).
int fixed_world_size();
// The world size a test should use when it wants `preferred` ranks.
inline int world_for(int preferred) {
  const int f = fixed_world_size();
  return f == 0 ? preferred : f;
}
// Collective timeout for tests (SHARDCAL_TEST_TIMEOUT seconds, default 60).
double test_timeout_s();

// Runs body on every rank. Any rank's exception fails the current test with the rank and message.
void run_spmd(int world, const std::function<void(Communicator&)>& body);

}  // namespace shardcal::testing

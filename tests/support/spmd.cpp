#include "spmd.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "shardcal/launch.hpp"

namespace shardcal::testing {

std::string backend_name() {
  const char* b = std::getenv("SHARDCAL_TEST_BACKEND");
  return (b != nullptr && *b != '\0') ? b : "sim";
}

double test_timeout_s() {
  const char* t = std::getenv("SHARDCAL_TEST_TIMEOUT");
  return (t != nullptr && *t != '\0') ? std::atof(t) : 60.0;
}

int fixed_world_size() {
  if (backend_name() == "sim") return 0;
  // The launcher's world size, from the environment every MPI launcher we use sets.
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') return std::atoi(v);
  }
  return 1;
}

void run_spmd(int world, const std::function<void(Communicator&)>& body) {
  LaunchOptions opts;
  opts.backend = backend_name();
  opts.world = world;
  opts.timeout_s = test_timeout_s();
  try {
    launch(opts, body);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "SPMD body failed on backend " << opts.backend << " (world " << world
                  << "): " << e.what();
  }
}

}  // namespace shardcal::testing

#include "shardcal/launch.hpp"

#include <algorithm>

#include "shardcal/error.hpp"
#include "sim/sim_backend.hpp"
#ifdef SHARDCAL_HAVE_MPI
#include "mpi/mpi_backend.hpp"
#endif
#ifdef SHARDCAL_HAVE_NCCL
#include "nccl/nccl_backend.hpp"
#endif

namespace shardcal {

static void launch_capped(const LaunchOptions& opts,
                          const std::function<void(Communicator&)>& body);

std::vector<std::string> compiled_backends() {
  std::vector<std::string> out{"sim"};
#ifdef SHARDCAL_HAVE_MPI
  out.push_back("mpi");
#endif
#ifdef SHARDCAL_HAVE_NCCL
  out.push_back("nccl");
#endif
  return out;
}

std::vector<std::pair<std::string, std::string>> library_versions() {
  std::vector<std::pair<std::string, std::string>> out;
#ifdef SHARDCAL_HAVE_MPI
  out.emplace_back("MPI", mpi::library_version());
#endif
#ifdef SHARDCAL_HAVE_NCCL
  for (auto& kv : nccl::library_versions()) out.push_back(kv);
#endif
  return out;
}

std::vector<std::pair<std::string, std::string>> backend_settings(const std::string& backend) {
  std::vector<std::pair<std::string, std::string>> out;
#ifdef SHARDCAL_HAVE_MPI
  if (backend == "mpi" || backend == "nccl") {
    const mpi::ThreadLevel level = mpi::thread_level();
    if (!level.provided.empty()) {
      out.emplace_back("mpi_thread_level", level.provided);
      out.emplace_back("mpi_thread_level_requested", level.requested);
    }
  }
#else
  (void)backend;
#endif
  return out;
}

void launch(const LaunchOptions& opts, const std::function<void(Communicator&)>& body) {
  if (!(opts.timeout_s > 0))
    throw Error("timeout must be positive seconds (got " + std::to_string(opts.timeout_s) + ")");
  // Deadlines are steady_clock time points: a huge timeout would overflow into the past and
  // fire at once. 1e7 s (~115 days) is "never" for any job.
  LaunchOptions capped = opts;
  capped.timeout_s = std::min(opts.timeout_s, 1e7);
  return launch_capped(capped, body);
}

void launch_capped(const LaunchOptions& opts, const std::function<void(Communicator&)>& body) {
  if (opts.backend == "sim") {
    if (opts.world < 1)
      throw Error("the sim backend needs --world N (number of simulated ranks, N >= 1)");
    sim::run(opts.world, sim::Options{opts.timeout_s}, body);
    return;
  }
#ifdef SHARDCAL_HAVE_MPI
  if (opts.backend == "mpi") {
    mpi::run(opts.world, mpi::Options{opts.timeout_s}, body);
    return;
  }
#endif
#ifdef SHARDCAL_HAVE_NCCL
  if (opts.backend == "nccl") {
    nccl::run(opts.world, nccl::Options{opts.timeout_s}, body);
    return;
  }
#endif
  std::string have;
  for (const auto& b : compiled_backends()) have += (have.empty() ? "" : ", ") + b;
  throw Error("backend '" + opts.backend + "' is not available in this build (compiled in: " +
              have + "); the MPI backend needs libopenmpi-dev at configure time, NCCL needs CUDA + NCCL");
}

}  // namespace shardcal

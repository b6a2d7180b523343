#include "nccl/nccl_backend.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "nccl/cuda_check.hpp"
#include "nccl/cuda_memory.hpp"
#include "nccl/mpi_control.hpp"
#include "nccl/nccl_communicator.hpp"
#include "shardcal/error.hpp"
#include "shardcal/topology.hpp"

namespace shardcal::nccl {

namespace {

// NCCL encodes versions as X*1000+Y*100+Z up to 2.8 and X*10000+Y*100+Z after.
std::string nccl_version_text(int code) {
  const bool wide = code >= 10000;
  const int major = wide ? code / 10000 : code / 1000;
  const int minor = wide ? (code % 10000) / 100 : (code % 1000) / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

// CUDA encodes versions as 1000*major + 10*minor.
std::string cuda_version_text(int code) {
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 10);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> library_versions() {
  std::vector<std::pair<std::string, std::string>> out;
  int code = 0;
  const int headers = NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  if (ncclGetVersion(&code) == ncclSuccess) {
    out.emplace_back("NCCL", nccl_version_text(code));
    // A different libnccl at run time than the headers we compiled against is worth knowing
    // when comparing calibrations across NCCL upgrades.
    if (code != headers) out.emplace_back("NCCL (headers)", nccl_version_text(headers));
  } else {
    out.emplace_back("NCCL", "unknown (ncclGetVersion failed)");
  }
  if (cudaRuntimeGetVersion(&code) == cudaSuccess)
    out.emplace_back("CUDA runtime", cuda_version_text(code));
  const cudaError_t err = cudaDriverGetVersion(&code);
  out.emplace_back("CUDA driver",
                   err == cudaSuccess && code > 0 ? cuda_version_text(code) : std::string("none"));
  (void)cudaGetLastError();
  return out;
}

void run(int expected_world, const Options& opts, const std::function<void(Communicator&)>& body) {
  detail::ensure_mpi_initialized();
  const Deadline dl(opts.timeout_s);
  // Message factory for the timed MPI steps below: "... waiting for every rank <what> ...".
  auto timeout = [&](const char* what) {
    return [&opts, what] {
      return "nccl backend: timed out after " + seconds_text(opts.timeout_s) +
             " s waiting for every rank " + what + " (a rank failed, is stuck, or was not started)";
    };
  };
  detail::MpiComm world = detail::dup_comm(MPI_COMM_WORLD, dl, timeout("to join"));
  const int rank = world.rank(), size = world.size();
  if (expected_world != 0 && expected_world != size)
    throw Error("the nccl backend was asked for " + std::to_string(expected_world) +
                " ranks but the launcher started " + std::to_string(size) + " (use mpirun -np " +
                std::to_string(expected_world) + ", or pass --world " + std::to_string(size) + ")");

  // One device per rank on each node: with one visible device per task (srun
  // --gpus-per-task=1, CUDA_VISIBLE_DEVICES per task) it is device 0, with all of the node's
  // devices visible the node-local rank picks it (choose_local_device). Every rank learns
  // whether any rank lacks a device, so all of them fail with the same clear error instead of
  // the others timing out in NCCL init.
  std::string why_no_device;
  const int devices = cuda_device_count(&why_no_device);
  MPI_Comm node_raw = MPI_COMM_NULL;
  detail::check_mpi(
      MPI_Comm_split_type(world.get(), MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_raw),
      "MPI_Comm_split_type");
  const detail::MpiComm node(node_raw);
  const int local_rank = node.rank(), local_size = node.size();
  std::string why_not;
  const int device = choose_local_device(local_rank, local_size, devices, &why_not);
  // Two tasks that each see one device may see the same one (CUDA_VISIBLE_DEVICES=0 for both):
  // compare the chosen devices' PCI bus ids across the node, so that is a clear error too.
  {
    constexpr std::size_t kIdLen = 32;
    char mine[kIdLen] = {};
    if (device >= 0 && cudaDeviceGetPCIBusId(mine, int(kIdLen) - 1, device) != cudaSuccess) {
      (void)cudaGetLastError();
      mine[0] = '\0';  // unknown: not compared
    }
    std::vector<char> all(kIdLen * std::size_t(local_size), '\0');
    detail::allgather_bytes(mine, all.data(), kIdLen, node.get(), dl,
                            timeout("on this node to report its CUDA device"));
    std::vector<std::string> ids;
    for (int r = 0; r < local_size; ++r)
      ids.emplace_back(all.data() + std::size_t(r) * kIdLen,
                       strnlen(all.data() + std::size_t(r) * kIdLen, kIdLen));
    if (const std::string shared = shared_device_error(ids); device >= 0 && !shared.empty())
      why_not = shared;
  }
  const std::int32_t ok = device >= 0 && why_not.empty() ? 1 : 0;
  std::vector<std::int32_t> oks(std::size_t(size), 0);
  detail::allgather_bytes(&ok, oks.data(), sizeof ok, world.get(), dl,
                          timeout("to check its CUDA devices"));
  if (devices == 0)
    throw Error("nccl backend: no CUDA device visible to rank " + std::to_string(rank) + " (" +
                why_no_device + "); run on a GPU node or use --backend mpi/sim");
  if (ok == 0) throw Error("nccl backend: rank " + std::to_string(rank) + ": " + why_not);
  for (int r = 0; r < size; ++r)
    if (oks[std::size_t(r)] == 0)
      throw Error("nccl backend: rank " + std::to_string(r) +
                  " has no usable CUDA device (see its error); this rank stops too");
  use_device(device);

  auto memory = std::make_shared<CudaMemory>(device);
  auto comm = detail::NcclCommunicator::create_world(memory, std::move(world), opts.timeout_s);
  std::exception_ptr error;
  try {
    body(*comm);
  } catch (...) {
    error = std::current_exception();
    // Peers may be blocked in an operation this rank will not join: abort, never finalize.
    comm->abort("the body threw on this rank");
  }

  // Every rank reports how its body ended. This makes run() return only when every rank's body
  // returned (as launch() promises, and so the world communicator is not torn down under a
  // peer), and tells ranks whose peer failed after the last collective which rank it was.
  // Bounded by the timeout: a rank stuck elsewhere cannot hold the others forever.
  const std::int32_t mine = error ? 0 : 1;
  std::vector<std::int32_t> status(std::size_t(size), 0);
  try {
    detail::allgather_bytes(&mine, status.data(), sizeof mine, comm->control_comm(),
                            Deadline(opts.timeout_s), timeout("to finish its body"));
  } catch (...) {
    if (error) std::rethrow_exception(error);
    throw;
  }
  if (error) std::rethrow_exception(error);
  std::string failed;
  for (int r = 0; r < size; ++r)
    if (status[std::size_t(r)] == 0) failed += (failed.empty() ? "" : ", ") + std::to_string(r);
  if (!failed.empty()) {
    comm->abort("a peer failed");
    const bool one = failed.find(',') == std::string::npos;
    throw PeerFailure(std::string("nccl backend: ") + (one ? "rank " : "ranks ") + failed +
                      " of the nccl world failed (see " + (one ? "its" : "their") +
                      " error); this rank's body had completed");
  }
}

}  // namespace shardcal::nccl

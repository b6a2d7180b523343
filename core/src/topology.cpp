#include "shardcal/topology.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>

#include "shardcal/error.hpp"

namespace shardcal {

namespace {
std::string local_hostname() {
  if (const char* env = std::getenv("SHARDCAL_HOSTNAME"); env != nullptr && *env != '\0')
    return env;
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}
}  // namespace

Topology discover_topology(Communicator& world) {
  const std::string mine = local_hostname();
  const std::vector<std::uint64_t> lengths = world.all_gather_u64(mine.size());
  std::vector<std::size_t> counts(lengths.begin(), lengths.end()), displs(lengths.size(), 0);
  std::size_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    displs[r] = total;
    total += counts[r];
  }
  // The names travel on the data path, so buffers live in the communicator's memory space
  // (device memory for NCCL) and are staged through host copies.
  MemorySpace& mem = world.memory();
  Buffer send(mem, mine.size()), recv(mem, total);
  mem.copy_from_host(send.data(), mine.data(), mine.size());
  world.all_gatherv(send.data(), mine.size(), recv.data(), counts, displs, DType::U8);
  mem.synchronize();
  std::string all(total, '\0');
  mem.copy_to_host(all.data(), recv.data(), total);

  Topology topo;
  std::map<std::string, int> host_index;
  std::vector<int> ranks_on_host;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    std::string name = all.substr(displs[r], counts[r]);
    const auto [it, added] = host_index.emplace(name, int(host_index.size()));
    if (added) ranks_on_host.push_back(0);
    ++ranks_on_host[std::size_t(it->second)];
    topo.host_of_rank.push_back(it->second);
    topo.hostnames.push_back(std::move(name));
  }
  topo.num_hosts = int(host_index.size());
  topo.max_ranks_per_host =
      ranks_on_host.empty() ? 0 : *std::max_element(ranks_on_host.begin(), ranks_on_host.end());
  return topo;
}

GroupSpan group_span(const Topology& topo, const std::vector<int>& world_ranks) {
  std::map<int, int> per_host;
  for (int r : world_ranks) {
    if (r < 0 || r >= int(topo.host_of_rank.size()))
      throw Error("group_span: rank " + std::to_string(r) + " is outside the topology's " +
                  std::to_string(topo.host_of_rank.size()) + " ranks");
    ++per_host[topo.host_of_rank[std::size_t(r)]];
  }
  GroupSpan s;
  s.hosts = int(per_host.size());
  for (const auto& [host, n] : per_host) s.max_ranks_per_host = std::max(s.max_ranks_per_host, n);
  return s;
}

std::vector<bool> mesh_dims_spanning_hosts(const Topology& topo, const DeviceMesh& mesh) {
  if (mesh.size() != int(topo.host_of_rank.size()))
    throw Error("mesh " + mesh.to_string() + " has " + std::to_string(mesh.size()) +
                " ranks but the topology has " + std::to_string(topo.host_of_rank.size()));
  std::vector<bool> spans(std::size_t(mesh.ndim()), false);
  for (int d = 0; d < mesh.ndim(); ++d)
    for (int r = 0; r < mesh.size() && !spans[std::size_t(d)]; ++r)
      if (mesh.group_position(r, {d}) == 0 && group_span(topo, mesh.group(r, {d})).hosts > 1)
        spans[std::size_t(d)] = true;
  return spans;
}

int choose_local_device(int local_rank, int local_size, int visible_devices, std::string* error) {
  std::string why;
  if (local_rank < 0 || local_size < 1 || local_rank >= local_size)
    why = "node-local rank " + std::to_string(local_rank) + " of " + std::to_string(local_size) +
          " is out of range (a launcher bug)";
  else if (visible_devices < 1)
    why = "no CUDA device is visible to this rank; run on a GPU node (with Slurm: --gpus-per-node "
          "or --gpus-per-task) or use --backend mpi/sim";
  else if (visible_devices == 1)
    return 0;  // one device per task (CUDA_VISIBLE_DEVICES per task), or one rank per node
  else if (local_rank < visible_devices && local_size <= visible_devices)
    return local_rank;  // every task sees the node's devices: the node-local rank picks one
  else
    why = std::to_string(local_size) + " ranks on this node see " +
          std::to_string(visible_devices) +
          " CUDA devices each; NCCL needs one device per rank: start at most " +
          std::to_string(visible_devices) + " ranks per node, or give each task its own device "
          "(srun --gpus-per-task=1, or CUDA_VISIBLE_DEVICES per task)";
  if (error != nullptr) *error = why;
  return -1;
}

std::string shared_device_error(const std::vector<std::string>& device_ids) {
  std::map<std::string, std::vector<int>> by_id;
  for (std::size_t r = 0; r < device_ids.size(); ++r)
    if (!device_ids[r].empty()) by_id[device_ids[r]].push_back(int(r));
  std::string out;
  for (const auto& [id, ranks] : by_id) {
    if (ranks.size() < 2) continue;
    std::string list;
    for (std::size_t i = 0; i < ranks.size(); ++i) list += (i ? "," : "") + std::to_string(ranks[i]);
    out += (out.empty() ? "" : "; ") + std::string("node-local ranks ") + list +
           " would share the CUDA device at PCI " + id;
  }
  if (!out.empty())
    out += "; NCCL needs one device per rank: give each task its own GPU (srun --gpus-per-task=1 "
           "or --gpus-per-node=<ranks per node>; CUDA_VISIBLE_DEVICES must differ per task)";
  return out;
}

}  // namespace shardcal


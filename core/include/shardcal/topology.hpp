#pragma once
// Which ranks share a host, discovered through the communicator (so it works on every backend),
// and which mesh dims / groups cross hosts: the link class the cost model needs.
#include <string>
#include <vector>

#include "shardcal/communicator.hpp"
#include "shardcal/mesh.hpp"

namespace shardcal {

struct Topology {
  std::vector<std::string> hostnames;  // per world rank
  int num_hosts = 0;
  std::vector<int> host_of_rank;  // host index per world rank; hosts numbered by first rank
  int max_ranks_per_host = 0;
};

// Collective over world. Each rank contributes gethostname(), or SHARDCAL_HOSTNAME when set
// (emulating several hosts on one machine, or naming hosts whose containers all report the same
// hostname). sim: every rank is on this one host.
Topology discover_topology(Communicator& world);

// Hosts and ranks per host of one group of world ranks (e.g. DeviceMesh::group(...)).
struct GroupSpan {
  int hosts = 0;
  int max_ranks_per_host = 0;
};
GroupSpan group_span(const Topology& topo, const std::vector<int>& world_ranks);

// Per mesh dim: true when some group along that dim contains ranks on different hosts.
// Throws Error if the mesh size differs from the number of ranks in topo.
std::vector<bool> mesh_dims_spanning_hosts(const Topology& topo, const DeviceMesh& mesh);

// The CUDA device a rank uses, from its node-local rank and the devices it can see (how Slurm
// and mpirun hand out GPUs, docs/SLURM.md). Two layouts are valid: every task sees exactly one device (`srun --gpus-per-task=1`, or
// CUDA_VISIBLE_DEVICES set per task) -> device 0; or the tasks of a node see all its devices
// (visible >= local_size) -> device local_rank. Anything else (no device, or fewer than one per
// local rank but more than one) is an error: `error` gets the reason and how to fix it, and -1
// is returned. Pure, so it is tested without a GPU.
int choose_local_device(int local_rank, int local_size, int visible_devices, std::string* error);

// The node's ranks' chosen devices by a physical identity (PCI bus id), indexed by node-local
// rank ("" = none chosen). "" when no two ranks share a device; else the error: which local
// ranks share which device and how to fix it (with one visible device per task, two tasks were
// given the same GPU, e.g. CUDA_VISIBLE_DEVICES=0 for both).
std::string shared_device_error(const std::vector<std::string>& device_ids);

}  // namespace shardcal

// `shardbench info`: what this build and this job look like — backends compiled in, library
// versions, and (collectively, on the chosen backend) the hosts of every rank and which mesh
// dims cross hosts: the link classes the cost model distinguishes.
#include <iostream>
#include <map>
#include <optional>

#include "commands.hpp"
#include "shardcal/error.hpp"
#include "shardcal/mesh.hpp"
#include "shardcal/topology.hpp"

namespace shardbench {

namespace {

struct InfoArgs {
  BackendOptions backend;
  std::string mesh;
  bool no_launch = false;
};

int run(const InfoArgs& a) {
  std::cout << "shardcal " << "backends compiled in:";
  for (const auto& b : shardcal::compiled_backends()) std::cout << " " << b;
  std::cout << "\n";
  for (const auto& [name, version] : shardcal::library_versions())
    std::cout << name << ": " << version << "\n";
  if (a.no_launch) return 0;

  std::optional<shardcal::DeviceMesh> mesh;
  if (!a.mesh.empty()) mesh = shardcal::DeviceMesh::parse(a.mesh);
  shardcal::LaunchOptions lo = a.backend.launch_options();
  if (lo.backend == "sim" && lo.world == 0) lo.world = mesh ? mesh->size() : 1;
  shardcal::launch(lo, [&](shardcal::Communicator& world) {
    const shardcal::Topology topo = shardcal::discover_topology(world);
    std::vector<bool> spans;
    if (mesh) spans = shardcal::mesh_dims_spanning_hosts(topo, *mesh);  // throws on size mismatch
    if (world.rank() != 0) return;
    std::cout << "backend: " << world.backend() << ", world size " << world.size() << ", "
              << topo.num_hosts << " host(s), at most " << topo.max_ranks_per_host
              << " rank(s) per host\n";
    std::map<int, std::vector<int>> ranks_of_host;
    for (std::size_t r = 0; r < topo.host_of_rank.size(); ++r)
      ranks_of_host[topo.host_of_rank[r]].push_back(int(r));
    for (const auto& [host, ranks] : ranks_of_host) {
      std::cout << "  host " << host << " " << topo.hostnames[std::size_t(ranks.front())] << ": ranks";
      for (int r : ranks) std::cout << " " << r;
      std::cout << "\n";
    }
    if (mesh) {
      std::cout << "mesh " << mesh->to_string() << ":\n";
      for (int d = 0; d < mesh->ndim(); ++d)
        std::cout << "  dim " << d << " (extent " << mesh->extent(d) << "): "
                  << (spans[std::size_t(d)] ? "spans hosts (inter-host)" : "within one host (intra-host)")
                  << "\n";
    }
  });
  return 0;
}

}  // namespace

Runner add_info_command(CLI::App& app) {
  auto args = std::make_shared<InfoArgs>();
  auto* cmd = app.add_subcommand(
      "info",
      "Show backends compiled in, library versions (MPI, NCCL, CUDA) and the job's topology:\n"
      "hostname of every rank, ranks per host and, with --mesh, which mesh dims span hosts.\n"
      "Example: mpirun -np 8 shardbench info --backend mpi --mesh 2x4");
  args->backend.add_to(*cmd);
  cmd->add_option("--mesh", args->mesh, "Mesh shape whose dims to classify as intra/inter-host, e.g. 2x4");
  cmd->add_flag("--no-launch", args->no_launch, "Only print build information; start no ranks");
  return [args]() { return run(*args); };
}

}  // namespace shardbench

// `shardbench info`: what this build and this job look like — backends compiled in, library
// versions, and (collectively, on the chosen backend) the hosts of every rank and which mesh
// dims cross hosts: the link classes the cost model distinguishes. `--collectives` prints the
// collective table instead (with --json, as the data file the Python side and the schemas use).
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.hpp"
#include "shardcal/collectives.hpp"
#include "shardcal/error.hpp"
#include "shardcal/mesh.hpp"
#include "shardcal/topology.hpp"

namespace shardbench {

namespace {

struct InfoArgs {
  BackendOptions backend;
  std::string mesh;
  bool no_launch = false;
  bool collectives = false;
  bool json = false;
};

// The collective table as data: every trait of a row that is not code (buffer sizing, the call,
// the reference output stay in C++). calibrate/python/shardcal/collectives.json is this output.
void print_collectives(bool as_json) {
  if (as_json) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& c : shardcal::kCollectives)
      rows.push_back({{"name", c.name},
                      {"bytes_convention", c.bytes_convention},
                      {"reduces", c.reduces},
                      {"has_root", c.has_root},
                      {"has_v_form", c.has_v_form},
                      {"input_in_recv", c.input_in_recv},
                      {"one_way", c.one_way},
                      {"busbw_share", c.busbw_share},
                      {"busbw_flat", c.busbw_flat},
                      {"ring_rounds", c.ring_rounds},
                      {"link_share", c.link_share},
                      {"host_bytes_per_rank", c.host_bytes_per_rank}});
    nlohmann::ordered_json doc = {{"schema", "shardcal.collectives"},
                                  {"version", 1},
                                  {"generated_by", "shardbench info --collectives --json"},
                                  {"collectives", rows}};
    std::cout << doc.dump(2) << "\n";
    return;
  }
  // The factors are doubles: print them as such (%g), so a fractional one is never cut short.
  auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return std::string(text);
  };
  std::cout << "collective      busbw/algbw (n ranks)   ring steps  traits\n";
  for (const auto& c : shardcal::kCollectives) {
    std::string bw = c.busbw_flat == 0 ? "" : number(c.busbw_flat);
    if (c.busbw_share != 0)
      bw += (bw.empty() ? "" : " + ") +
            (c.busbw_share == 1 ? std::string() : number(c.busbw_share) + " x ") + "(n-1)/n";
    std::string traits;
    for (auto [on, word] : {std::pair{c.reduces, "reduces"},
                            {c.has_root, "rooted"},
                            {c.has_v_form, "v-form"},
                            {c.one_way, "one-way"}})
      if (on) traits += std::string(traits.empty() ? "" : ", ") + word;
    const std::string steps =
        (c.ring_rounds == 1 ? "" : std::to_string(c.ring_rounds) + " x ") + std::string("(n-1)");
    char line[160];
    std::snprintf(line, sizeof line, "%-15s %-23s %-11s %s\n", std::string(c.name).c_str(),
                  bw.c_str(), steps.c_str(), traits.c_str());
    std::cout << line;
  }
}

int run(const InfoArgs& a) {
  if (a.collectives) {
    print_collectives(a.json);
    return 0;
  }
  if (a.json) throw shardcal::Error("info: --json goes with --collectives (the table as data)");
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
  cmd->add_flag("--collectives", args->collectives,
                "Print the collective table (name, bus-bandwidth factor, ring steps, traits); "
                "starts no ranks");
  cmd->add_flag(
      "--json", args->json,
      "With --collectives: the table as JSON (calibrate/python/shardcal/collectives.json)");
  return [args]() { return run(*args); };
}

}  // namespace shardbench

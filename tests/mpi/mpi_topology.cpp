// Topology discovery over real MPI processes. Run as an MPMD job whose app contexts set
// different SHARDCAL_HOSTNAME values to emulate hosts; prints what it found and checks it.
//   mpi_topology <mesh> <expected hosts> <expected spanning dims, e.g. 10 = dim 0 crosses hosts>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "shardcal/error.hpp"
#include "shardcal/launch.hpp"
#include "shardcal/mesh.hpp"
#include "shardcal/topology.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: mpi_topology <mesh> <expected hosts> <expected spans, e.g. 10>\n");
    return 2;
  }
  const shardcal::DeviceMesh mesh = shardcal::DeviceMesh::parse(argv[1]);
  const int want_hosts = std::atoi(argv[2]);
  const std::string want_spans = argv[3];
  shardcal::LaunchOptions opts;
  opts.backend = "mpi";
  opts.timeout_s = 60;
  int rank = -1;
  try {
    shardcal::launch(opts, [&](shardcal::Communicator& world) {
      rank = world.rank();
      const shardcal::Topology t = shardcal::discover_topology(world);
      std::string spans;
      for (bool b : shardcal::mesh_dims_spanning_hosts(t, mesh)) spans += b ? '1' : '0';
      if (rank == 0) {
        std::printf("hosts %d, max ranks per host %d, mesh %s dims spanning hosts %s; ranks:",
                    t.num_hosts, t.max_ranks_per_host, mesh.to_string().c_str(), spans.c_str());
        for (std::size_t r = 0; r < t.hostnames.size(); ++r)
          std::printf(" %zu@%s(host %d)", r, t.hostnames[r].c_str(), t.host_of_rank[r]);
        std::printf("\n");
      }
      if (t.num_hosts != want_hosts || spans != want_spans)
        throw shardcal::Error("expected " + std::to_string(want_hosts) + " hosts and spans " +
                              want_spans + ", found " + std::to_string(t.num_hosts) + " and " +
                              spans);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_topology rank %d: %s\n", rank, e.what());
    return 1;
  }
  return 0;
}

// Pure topology queries on hand-made topologies (no communication).
#include <gtest/gtest.h>

#include <algorithm>

#include "shardcal/error.hpp"
#include "shardcal/topology.hpp"

namespace shardcal {
namespace {

Topology hosts_of(int ranks, int per_host) {
  Topology t;
  for (int r = 0; r < ranks; ++r) {
    t.host_of_rank.push_back(r / per_host);
    t.hostnames.push_back("node" + std::to_string(r / per_host));
  }
  t.num_hosts = (ranks + per_host - 1) / per_host;
  t.max_ranks_per_host = std::min(ranks, per_host);
  return t;
}

TEST(Topology, OuterDimSpansHostsWhenInnerFillsAHost) {
  // 2 hosts x 4 ranks, mesh 2x4: dim 0 pairs rank r with r+4 (other host), dim 1 stays inside.
  EXPECT_EQ(mesh_dims_spanning_hosts(hosts_of(8, 4), DeviceMesh({2, 4})),
            (std::vector<bool>{true, false}));
  // 4 hosts x 2 ranks: both dims of 2x4 cross hosts.
  EXPECT_EQ(mesh_dims_spanning_hosts(hosts_of(8, 2), DeviceMesh({2, 4})),
            (std::vector<bool>{true, true}));
  // One host: nothing spans.
  EXPECT_EQ(mesh_dims_spanning_hosts(hosts_of(8, 8), DeviceMesh({2, 2, 2})),
            (std::vector<bool>{false, false, false}));
  // 2 hosts x 4 ranks, mesh 2x2x2: only the outermost dim crosses.
  EXPECT_EQ(mesh_dims_spanning_hosts(hosts_of(8, 4), DeviceMesh({2, 2, 2})),
            (std::vector<bool>{true, false, false}));
}

TEST(Topology, UnevenHostsAreHandled) {
  // Ranks 0-2 on host 0, ranks 3-5 on host 1, mesh 3x2: dim 1 pairs (2,3) across hosts.
  Topology t = hosts_of(6, 3);
  EXPECT_EQ(mesh_dims_spanning_hosts(t, DeviceMesh({3, 2})), (std::vector<bool>{true, true}));
  EXPECT_EQ(mesh_dims_spanning_hosts(t, DeviceMesh({2, 3})), (std::vector<bool>{true, false}));
}

TEST(Topology, GroupSpan) {
  const Topology t = hosts_of(8, 4);
  const GroupSpan a = group_span(t, {0, 1, 2, 3});
  EXPECT_EQ(a.hosts, 1);
  EXPECT_EQ(a.max_ranks_per_host, 4);
  const GroupSpan b = group_span(t, {0, 4});
  EXPECT_EQ(b.hosts, 2);
  EXPECT_EQ(b.max_ranks_per_host, 1);
  const GroupSpan c = group_span(t, {1, 2, 5});
  EXPECT_EQ(c.hosts, 2);
  EXPECT_EQ(c.max_ranks_per_host, 2);
  EXPECT_THROW(group_span(t, {8}), Error);
}

TEST(Topology, MeshSizeMustMatch) {
  EXPECT_THROW(mesh_dims_spanning_hosts(hosts_of(8, 4), DeviceMesh({2, 2})), Error);
}

}  // namespace
}  // namespace shardcal

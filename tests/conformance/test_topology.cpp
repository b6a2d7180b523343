// discover_topology on the backend under test: every rank gets the same complete picture.
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "shardcal/check.hpp"
#include "shardcal/hash.hpp"
#include "shardcal/topology.hpp"
#include "spmd.hpp"

namespace shardcal {
namespace {

TEST(Topology, DiscoveryIsCompleteAndIdenticalOnEveryRank) {
  testing::run_spmd(testing::world_for(4), [](Communicator& c) {
    const Topology t = discover_topology(c);
    ASSERT_EQ(int(t.hostnames.size()), c.size());
    ASSERT_EQ(int(t.host_of_rank.size()), c.size());
    EXPECT_GE(t.num_hosts, 1);
    EXPECT_LE(t.num_hosts, c.size());
    EXPECT_GE(t.max_ranks_per_host, (c.size() + t.num_hosts - 1) / t.num_hosts);
    EXPECT_EQ(t.host_of_rank[0], 0);  // hosts are numbered by their first rank

    std::string mine;
    if (const char* env = std::getenv("SHARDCAL_HOSTNAME"); env != nullptr && *env != '\0') {
      mine = env;
    } else {
      char buf[HOST_NAME_MAX + 1] = {};
      ASSERT_EQ(gethostname(buf, sizeof buf - 1), 0);
      mine = buf;
    }
    EXPECT_EQ(t.hostnames[std::size_t(c.rank())], mine);
    if (testing::backend_name() == "sim") {
      EXPECT_EQ(t.num_hosts, 1);
    }

    std::string all;
    for (const auto& h : t.hostnames) all += h + ";";
    EXPECT_NO_THROW(check_same_spec(c, "topology", fnv1a64(all), all));
  });
}

}  // namespace
}  // namespace shardcal

// check_same_spec: ranks that disagree on metadata get the same clear error on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "shardcal/check.hpp"
#include "shardcal/error.hpp"
#include "shardcal/hash.hpp"
#include "spmd.hpp"

namespace shardcal {
namespace {

using testing::run_spmd;
using testing::world_for;

// Runs check_same_spec and returns the error text ("" if it did not throw).
std::string spec_error(Communicator& c, std::uint64_t hash, const std::string& desc) {
  try {
    check_same_spec(c, "redistribute input", hash, desc);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

TEST(CheckSameSpec, AgreeingRanksPass) {
  run_spmd(world_for(4), [](Communicator& c) {
    EXPECT_EQ(spec_error(c, 42, "mesh=2x2 S(0),R"), "");
    // The description is only consulted on disagreement; ranks may word it differently.
    EXPECT_EQ(spec_error(c, 7, "rank " + std::to_string(c.rank())), "");
  });
}

TEST(CheckSameSpec, OneDissenterIsNamedOnEveryRank) {
  const int world = world_for(4);
  if (world < 2) GTEST_SKIP() << "needs at least 2 ranks";
  run_spmd(world, [](Communicator& c) {
    const int odd = std::min(2, c.size() - 1);
    const bool mine_odd = c.rank() == odd;
    const std::string msg =
        spec_error(c, mine_odd ? 7 : 5, mine_odd ? "mesh=2x2 S(1),R" : "mesh=2x2 S(0),R");
    std::vector<int> majority;
    for (int r = 0; r < c.size(); ++r)
      if (r != odd) majority.push_back(r);
    const std::string expected =
        "redistribute input: ranks disagree on " + c.describe() +
        " (2 distinct specs): " + (majority.size() == 1 ? "rank " : "ranks ") +
        format_rank_list(majority) + (majority.size() == 1 ? " has" : " have") +
        " spec A: mesh=2x2 S(0),R; rank " + std::to_string(odd) + " has spec B: mesh=2x2 S(1),R";
    EXPECT_EQ(msg, expected);
    if (c.size() == 4) {
      EXPECT_NE(msg.find("ranks 0,1,3 have spec A"), std::string::npos) << msg;
    }
  });
}

TEST(CheckSameSpec, EveryRankThrowsTheSameTextWithManyGroups) {
  const int world = world_for(4);
  if (world < 3) GTEST_SKIP() << "needs at least 3 ranks";
  run_spmd(world, [](Communicator& c) {
    const int group = c.rank() % 3;  // three distinct specs
    const std::string msg =
        spec_error(c, std::uint64_t(100 + group), "spec #" + std::to_string(group));
    ASSERT_NE(msg, "");
    EXPECT_NE(msg.find("(3 distinct specs)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("spec C: spec #2"), std::string::npos) << msg;
    // Same text on every rank: the descriptions came from the lowest rank of each group.
    const auto hashes = c.all_gather_u64(fnv1a64(msg));
    for (auto h : hashes) EXPECT_EQ(h, hashes[0]);
  });
}

TEST(CheckSameSpec, WorksOnSubCommunicators) {
  const int world = world_for(4);
  if (world < 4 || world % 2 != 0) GTEST_SKIP() << "needs an even world of at least 4 ranks";
  run_spmd(world, [](Communicator& c) {
    auto half = c.split(c.rank() % 2, c.rank());
    // Only the odd half disagrees internally.
    const bool dissent = c.rank() % 2 == 1 && half->rank() == 0;
    const std::string msg = spec_error(*half, dissent ? 2 : 1, dissent ? "B" : "A");
    if (c.rank() % 2 == 0) {
      EXPECT_EQ(msg, "");
    } else {
      EXPECT_NE(msg.find("on " + half->describe()), std::string::npos) << msg;
      EXPECT_NE(msg.find("rank 0 has spec A: B"), std::string::npos) << msg;
    }
  });
}

TEST(FormatRankList, CompressesRuns) {
  EXPECT_EQ(format_rank_list({}), "");
  EXPECT_EQ(format_rank_list({3}), "3");
  EXPECT_EQ(format_rank_list({0, 1}), "0,1");
  EXPECT_EQ(format_rank_list({0, 1, 2, 5, 7, 8, 9}), "0-2,5,7-9");
}

}  // namespace
}  // namespace shardcal

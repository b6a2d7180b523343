// The cost-based planner (shardcal/planner.hpp) and profile step prices
// (shardcal/calibrate/step_cost.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "shardcal/calibrate/profile.hpp"
#include "shardcal/calibrate/step_cost.hpp"
#include "shardcal/error.hpp"
#include "shardcal/plan.hpp"
#include "shardcal/planner.hpp"

#ifndef SHARDCAL_SOURCE_DIR
#error "SHARDCAL_SOURCE_DIR must be defined"
#endif

using namespace shardcal;

namespace {

const std::string kDTensorPath =
    std::string(SHARDCAL_SOURCE_DIR) + "/configs/profiles/dtensor-default.json";

TensorSpec spec(const std::string& mesh, const std::string& pl, const std::string& shape,
                DType dt = DType::F32) {
  return TensorSpec(DeviceMesh::parse(mesh), parse_placements(pl), TensorMeta{parse_shape(shape), dt});
}

// Bytes moved by the heaviest group, plus 1 per step: a simple, strictly positive price.
double bytes_cost(const Step&, const StepTraffic& t) { return double(t.bytes) + 1.0; }

TEST(Planner, SameStateIsEmptyPlan) {
  const auto a = spec("4", "S(0)", "8");
  const auto b = spec("4", "S(0)[2,2,2,2]", "8");
  const SearchResult r = plan_cheapest(a, b, bytes_cost);
  EXPECT_TRUE(r.best.plan.steps.empty());
  EXPECT_EQ(r.best.total, 0.0);
  ASSERT_EQ(r.alternatives.size(), 1u);
}

TEST(Planner, CheapestPassesValidateAndBeatsGreedy) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"S(0),S(1)", "R,R"}, {"S(0),R", "R,S(0)"}, {"P,S(0)", "S(1),R"},
           {"R,R", "S(0),S(1)"}, {"S(0),S(0)", "S(1),S(1)"}, {"P(max),R", "S(0),P"}}) {
    const auto a = spec("2x2", from, "8x6");
    const auto b = spec("2x2", to, "8x6");
    const SearchResult r = plan_cheapest(a, b, bytes_cost, {3, 100000});
    EXPECT_NO_THROW(validate_plan(r.best.plan)) << from << " -> " << to;
    const CostedPlan g = price_plan(plan_redistribution(a, b), bytes_cost);
    EXPECT_LE(r.best.total, g.total * (1 + 1e-12)) << from << " -> " << to;
    ASSERT_GE(r.alternatives.size(), 1u);
    for (std::size_t i = 1; i < r.alternatives.size(); ++i) {
      EXPECT_NO_THROW(validate_plan(r.alternatives[i].plan));
      EXPECT_LE(r.alternatives[i - 1].total, r.alternatives[i].total);
    }
    double sum = 0;
    for (double c : r.best.step_cost) sum += c;
    EXPECT_DOUBLE_EQ(sum, r.best.total);
  }
}

TEST(Planner, InfiniteCostIsAvoidedAndAllInfiniteIsAnError) {
  const auto a = spec("4", "S(0)", "8x4");
  const auto b = spec("4", "S(1)", "8x4");
  // all_to_all forbidden: the plan must gather and slice.
  auto no_a2a = [](const Step& s, const StepTraffic& t) {
    return s.kind == StepKind::AllToAll ? std::numeric_limits<double>::infinity() : double(t.bytes) + 1;
  };
  const SearchResult r = plan_cheapest(a, b, no_a2a);
  ASSERT_EQ(r.best.plan.steps.size(), 2u);
  EXPECT_EQ(r.best.plan.steps[0].kind, StepKind::AllGather);
  EXPECT_EQ(r.best.plan.steps[1].kind, StepKind::LocalSlice);
  auto never = [](const Step&, const StepTraffic&) { return std::numeric_limits<double>::infinity(); };
  EXPECT_THROW(plan_cheapest(a, b, never), Error);
  auto negative = [](const Step&, const StepTraffic&) { return -1.0; };
  EXPECT_THROW(plan_cheapest(a, b, negative), Error);
}

TEST(Planner, MaxStatesIsAClearError) {
  const auto a = spec("2x2x2", "S(0),S(1),S(0)", "8x8");
  const auto b = spec("2x2x2", "R,S(0),P", "8x8");
  try {
    plan_cheapest(a, b, bytes_cost, {1, 5});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_states"), std::string::npos) << e.what();
  }
}

TEST(Planner, MismatchedSpecsThrow) {
  EXPECT_THROW(plan_cheapest(spec("4", "S(0)", "8"), spec("2x2", "R,R", "8"), bytes_cost), Error);
  EXPECT_THROW(plan_cheapest(spec("4", "S(0)", "8"), spec("4", "R", "9"), bytes_cost), Error);
  EXPECT_THROW(plan_cheapest(spec("4", "S(0)", "8"), spec("4", "R", "8"), bytes_cost, {0, 10}), Error);
}

TEST(Planner, Deterministic) {
  const auto a = spec("2x2x2", "S(0),S(1),R", "8x8");
  const auto b = spec("2x2x2", "R,S(0),S(1)", "8x8");
  auto flat = [](const Step&, const StepTraffic&) { return 1.0; };  // many ties
  const SearchResult r1 = plan_cheapest(a, b, flat, {4, 100000});
  const SearchResult r2 = plan_cheapest(a, b, flat, {4, 100000});
  ASSERT_EQ(r1.alternatives.size(), r2.alternatives.size());
  for (std::size_t i = 0; i < r1.alternatives.size(); ++i)
    EXPECT_EQ(r1.alternatives[i].plan.to_string(), r2.alternatives[i].plan.to_string());
}

TEST(StepCost, LinkClassRowMajorHosts) {
  const DeviceMesh m = DeviceMesh::parse("2x4");
  const calib::LinkClass inner = calib::mesh_dim_link_class(m, 1, 4);
  EXPECT_EQ(inner.group_size, 4);
  EXPECT_EQ(inner.hosts, 1);
  EXPECT_EQ(inner.concurrent_groups, 1);
  const calib::LinkClass outer = calib::mesh_dim_link_class(m, 0, 4);
  EXPECT_EQ(outer.hosts, 2);
  EXPECT_EQ(outer.ranks_per_host, 1);
  EXPECT_EQ(outer.concurrent_groups, 4);
  EXPECT_THROW(calib::mesh_dim_link_class(m, 0, 0), Error);
}

}  // namespace

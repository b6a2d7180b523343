// The cost-based planner (shardcal/planner.hpp) and profile step prices
// (shardcal/calibrate/step_cost.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <limits>
#include <vector>

#include "shardcal/calibrate/profile.hpp"
#include "shardcal/calibrate/step_cost.hpp"
#include "shardcal/error.hpp"
#include "shardcal/plan.hpp"
#include "shardcal/planner.hpp"
#include "profile_variants.hpp"

#ifndef SHARDCAL_SOURCE_DIR
#error "SHARDCAL_SOURCE_DIR must be defined"
#endif

using namespace shardcal;

namespace {

const std::string kDTensorPath =
    std::string(SHARDCAL_SOURCE_DIR) + "/configs/profiles/dtensor-default.json";

TensorSpec spec(const std::string& mesh, const std::string& pl, const std::string& shape,
                DType dt = DType::F32) {
  return TensorSpec(DeviceMesh::parse(mesh), parse_placements(pl),
                    TensorMeta{parse_shape(shape), dt});
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
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"S(0),S(1)", "R,R"},
                                                        {"S(0),R", "R,S(0)"},
                                                        {"P,S(0)", "S(1),R"},
                                                        {"R,R", "S(0),S(1)"},
                                                        {"S(0),S(0)", "S(1),S(1)"},
                                                        {"P(max),R", "S(0),P"}}) {
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
    return s.kind == StepKind::AllToAll ? std::numeric_limits<double>::infinity()
                                        : double(t.bytes) + 1;
  };
  const SearchResult r = plan_cheapest(a, b, no_a2a);
  ASSERT_EQ(r.best.plan.steps.size(), 2u);
  EXPECT_EQ(r.best.plan.steps[0].kind, StepKind::AllGather);
  EXPECT_EQ(r.best.plan.steps[1].kind, StepKind::LocalSlice);
  auto never = [](const Step&, const StepTraffic&) {
    return std::numeric_limits<double>::infinity();
  };
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
  EXPECT_THROW(plan_cheapest(spec("4", "S(0)", "8"), spec("4", "R", "8"), bytes_cost, {0, 10}),
               Error);
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

TEST(Planner, CacheGivesTheUncachedAnswer) {
  PlanCache cache(8);
  const std::vector<std::pair<std::string, std::string>> tr = {
      {"S(0),S(1),R", "R,S(0),S(1)"},
      {"P,S(0),S(1)", "S(1),R,S(0)"},
      {"R,R,R", "S(0),S(0),S(1)"},
      {"S(0),S(1),R", "R,S(0),S(1)"},
      {"S(0),S(0),S(0)", "S(1)[5,3],R,S(0)"}};
  for (int round = 0; round < 2; ++round)
    for (const auto& [f, t] : tr) {
      const auto a = spec("2x2x2", f, "8x8");
      const auto b = spec("2x2x2", t, "8x8");
      const SearchResult want = plan_cheapest(a, b, bytes_cost, {2, 100000});
      const auto got = cache.get(a, b, bytes_cost, "bytes", {2, 100000});
      ASSERT_EQ(got->alternatives.size(), want.alternatives.size()) << f << " -> " << t;
      for (std::size_t i = 0; i < want.alternatives.size(); ++i) {
        EXPECT_EQ(got->alternatives[i].plan.to_string(), want.alternatives[i].plan.to_string());
        EXPECT_EQ(got->alternatives[i].total, want.alternatives[i].total);
      }
    }
  EXPECT_EQ(cache.misses(), 4u);  // 4 distinct transitions
  EXPECT_EQ(cache.hits(), 6u);
  // Another cost key is another cache entry, priced by its own function.
  auto flat = [](const Step&, const StepTraffic&) { return 1.0; };
  const auto a = spec("2x2x2", "S(0),S(1),R", "8x8"), b = spec("2x2x2", "R,S(0),S(1)", "8x8");
  EXPECT_EQ(cache.get(a, b, flat, "flat")->best.total, plan_cheapest(a, b, flat).best.total);
  EXPECT_EQ(cache.misses(), 5u);
}

// max_states bounds the states one search reaches, not the size of a graph a PlanCache shares:
// searching A first must not make B fail where B alone succeeds.
TEST(Planner, CacheMaxStatesCountsThisSearchOnly) {
  const auto a1 = spec("2x2x2", "S(0),S(1),S(0)", "8x8"), a2 = spec("2x2x2", "R,S(0),P", "8x8");
  const auto b1 = spec("2x2x2", "R,R,R", "8x8"), b2 = spec("2x2x2", "S(0),R,R", "8x8");
  // The fewest states B needs on its own.
  std::size_t need = 1;
  while (true) {
    try {
      plan_cheapest(b1, b2, bytes_cost, {1, need});
      break;
    } catch (const Error&) {
      ASSERT_LT(++need, 1000u);
    }
  }
  const SearchResult want = plan_cheapest(b1, b2, bytes_cost, {1, need});
  const SearchResult big = plan_cheapest(a1, a2, bytes_cost, {1, 100000});
  ASSERT_GT(big.states_explored, need);  // A's graph is larger than B's bound
  PlanCache cache;
  cache.get(a1, a2, bytes_cost, "bytes", {1, 100000});
  std::shared_ptr<const SearchResult> got;
  ASSERT_NO_THROW(got = cache.get(b1, b2, bytes_cost, "bytes", {1, need}));
  EXPECT_EQ(got->best.plan.to_string(), want.best.plan.to_string());
  EXPECT_EQ(got->best.total, want.best.total);
  // And the bound still holds through the cache: one state fewer is an error, as uncached.
  if (need > 1) {
    EXPECT_THROW(plan_cheapest(b1, b2, bytes_cost, {1, need - 1}), Error);
    EXPECT_THROW(cache.get(b1, b2, bytes_cost, "bytes", {1, need - 1}), Error);
  }
}

// The lower bound of recv_report: a Partial the target keeps on the same mesh dim does not make
// the whole target block new data; a Partial reduced away does.
TEST(RecvReport, KeptPartialIsNotNewData) {
  const auto a = spec("2x2x2", "P,S(0),S(0)", "8x8");
  const auto b = spec("2x2x2", "P,S(0),R", "8x8");
  const SearchResult r = plan_cheapest(a, b, bytes_cost);
  const RecvReport rc = recv_report(r.best.plan);
  // Target block 4x8 f32 = 128 B, of which the source block (2x8) holds 64 B.
  EXPECT_EQ(rc.max_lower_bound, 64);
  EXPECT_LE(rc.max_lower_bound, rc.max_received);
  // P(max) in the target is not the source's P(sum): every element is new.
  const auto c = spec("2x2x2", "P(max),S(0),R", "8x8");
  EXPECT_EQ(recv_report(plan_cheapest(a, c, bytes_cost).best.plan).max_lower_bound, 128);
  // Reducing the Partial away: the whole target block.
  const auto d = spec("2x2x2", "R,S(0),R", "8x8");
  EXPECT_EQ(recv_report(plan_cheapest(a, d, bytes_cost).best.plan).max_lower_bound, 128);
  // No Partial: the part of the target block the source block lacks.
  const auto e = spec("2x2x2", "R,S(0),S(0)", "8x8");
  EXPECT_EQ(recv_report(plan_cheapest(e, d, bytes_cost).best.plan).max_lower_bound, 64);
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

// The host count of a mesh dim, counted from its groups' rank lists (how it was computed before
// the stride walk), on meshes whose dims straddle host boundaries in every way.
TEST(StepCost, LinkClassMatchesRankWalk) {
  for (const char* shape : {"8", "3x5", "2x3x4", "4x1x6", "5x2x2x3", "8x16x8"})
    for (int rph : {1, 2, 3, 4, 5, 7, 8, 16, 1000}) {
      const DeviceMesh m = DeviceMesh::parse(shape);
      for (int i = 0; i < m.ndim(); ++i) {
        int groups = 0, max_hosts = 1;
        for (int r = 0; r < m.size(); ++r) {
          if (m.group_position(r, {i}) != 0) continue;
          ++groups;
          std::set<int> hosts;
          for (int q : m.group(r, {i})) hosts.insert(q / rph);
          max_hosts = std::max(max_hosts, int(hosts.size()));
        }
        const calib::LinkClass got = calib::mesh_dim_link_class(m, i, rph);
        const int n_hosts = (m.size() + rph - 1) / rph;
        const calib::LinkClass want = calib::group_link_class(
            m.extent(i), max_hosts,
            std::max(1, int(std::lround(double(groups) * max_hosts / std::max(1, n_hosts)))));
        const std::string what = std::string(shape) + " dim " + std::to_string(i) + " rph " +
                                 std::to_string(rph);
        EXPECT_EQ(got.hosts, want.hosts) << what;
        EXPECT_EQ(got.ranks_per_host, want.ranks_per_host) << what;
        EXPECT_EQ(got.concurrent_groups, want.concurrent_groups) << what;
        EXPECT_EQ(got.group_size, want.group_size) << what;
      }
    }
}

// The search prices candidates from their traffic alone (StepCostFn::from_traffic, no spec per
// candidate, one price per (traffic symbols, step) shared by states that differ only in R vs P
// elsewhere): every step of every plan it returns costs exactly price_step's time (the
// explanation `shardbench plan` prints), with and without pack/unpack copies, and a collective
// the profile has no model for is never taken.
TEST(StepCost, SearchPricesEqualPriceStep) {
  const test::ProfileVariants pv = test::profile_variants(kDTensorPath);
  const calib::Profile &dtensor = pv.dtensor, &measured = pv.copies, &no_a2a = pv.no_a2a;
  ASSERT_TRUE(calib::prices_copies(measured));
  struct Case {
    const char *mesh, *from, *to, *shape;
    DType dt;
  };
  const Case cases[] = {{"2x2x2", "S(0),S(1),R", "R,S(0),S(1)", "64x48", DType::F32},
                        {"2x2x2", "P,S(0),S(1)", "S(1),R,S(0)", "64x48", DType::BF16},
                        {"2x4", "S(0)[3,7],P(max)", "S(1),S(0)", "10x7", DType::F32},
                        {"3x5", "S(1),S(0)", "R,S(1)", "7x10", DType::F32},
                        {"2x1x2", "S(0),R,P", "R,S(1),S(1)[2,3]", "6x5", DType::I32},
                        {"4x2", "S(0),S(0)", "S(1),S(0)", "9x5", DType::BF16}};
  int steps = 0;
  for (const calib::Profile* prof :
       std::vector<const calib::Profile*>{&dtensor, &measured, &no_a2a})
    for (int rph : {1, 2}) {
      const StepCostFn cost = calib::profile_step_cost(*prof, rph);
      for (const Case& c : cases) {
        const TensorSpec from = spec(c.mesh, c.from, c.shape, c.dt);
        const TensorSpec to = spec(c.mesh, c.to, c.shape, c.dt);
        const SearchResult r = plan_cheapest(from, to, cost, {3, 100000});
        for (const CostedPlan& cp : r.alternatives)
          for (std::size_t k = 0; k < cp.plan.steps.size(); ++k) {
            const Step& st = cp.plan.steps[k];
            const std::string what = std::string(c.mesh) + " " + c.from + " -> " + c.to +
                                     ", step " + std::to_string(k + 1) + ", " + prof->backend;
            if (prof == &no_a2a) {
              EXPECT_NE(st.kind, StepKind::AllToAll) << what;
            }
            const StepTraffic t = describe_step(st);
            EXPECT_EQ(cp.step_cost[k], calib::price_step(*prof, st, t, rph).time_us) << what;
            EXPECT_EQ(cp.step_cost[k], cost(st, t)) << what;
            ++steps;
          }
      }
    }
  EXPECT_GE(steps, 100);
}

TEST(LegalSteps, PartialOpsMustNameEveryOpOrNone) {
  const DeviceMesh m = DeviceMesh::parse("2x2");
  const TensorSpec s(m, parse_placements("S(0),R"), TensorMeta{{8, 8}, DType::F32});
  EXPECT_THROW(legal_steps(s, std::vector<bool>{true}), Error);
  EXPECT_THROW(legal_steps(s, std::vector<bool>(std::size(kAllReduceOps) + 1, true)), Error);
  EXPECT_EQ(legal_steps(s, std::vector<bool>(std::size(kAllReduceOps), true)).size(),
            legal_steps(s).size());
}

// ---- dtensor-default equals PyTorch DTensor's redistribute_cost for single steps
// ----------------- Reference: torch/distributed/tensor/_collective_utils.py
// (MeshTopoInfo.build_from_mesh, allgather_cost, allreduce_cost, reduce_scatter_cost,
// redistribute_cost), restated here:
//   devices_per_host per host; walking mesh dims from the last, a dim is inter-host when the
//   product of its size and all later sizes exceeds devices_per_host: bandwidth 87.7 * 0.22 and
//   hop latency 2.7 us, else 87.7 and 0.6 us (bandwidth divides GiB, so GiB/s).
//   cost = 6.6 + hops * latency + (bytes_gb * hops / n) / bandwidth * 1e6, hops = n - 1
//   (all_gather, reduce_scatter) or 2 (n - 1) (all_reduce); bytes_gb = the spec's bytes /
//   num_shards / 1024^3 (one rank's block), times n for Shard -> Replicate (the gathered output).
//   Shard(a) -> Shard(b): allgather_cost(bytes_gb) + 1.0 (DTensor's all-to-all stand-in).
double dtensor_cost(const std::vector<int>& mesh, int devices_per_host, int i, const char* coll,
                    double local_bytes) {
  double bw = 87.7, lat = 0.6;
  long total = 1;
  for (int d = int(mesh.size()) - 1; d >= i; --d) total *= mesh[std::size_t(d)];
  if (total > devices_per_host) bw *= 0.22, lat = 2.7;
  const int n = mesh[std::size_t(i)];
  double gb = local_bytes / 1024 / 1024 / 1024;
  const std::string c = coll;
  double extra = 0;
  int hops = n - 1;
  if (c == "all_gather") gb *= n;
  if (c == "all_reduce") hops = 2 * (n - 1);
  if (c == "all_to_all") extra = 1.0;
  return 6.6 + hops * lat + (gb * hops / n) / bw * 1e6 + extra;
}

TEST(DTensorDefault, SingleStepsEqualRedistributeCost) {
  const calib::Profile prof = calib::read_profile(kDTensorPath);
  int checked = 0, single = 0;
  for (const std::vector<int>& mesh :
       std::vector<std::vector<int>>{{2}, {4}, {8}, {2, 2}, {2, 4}, {4, 2}})
    for (int dph : {1, 2, 4, 8})
      for (DType dt : {DType::F32, DType::BF16}) {
        const StepCostFn cost = calib::profile_step_cost(prof, dph);
        const TensorMeta meta{{1024, 512}, dt};
        const DeviceMesh m(mesh);
        for (int i = 0; i < m.ndim(); ++i) {
          // The other mesh dim (2-D meshes) holds R, S(0) or P: single steps on dim i only.
          std::vector<Placement> others{Placement::replicate()};
          if (m.ndim() == 2)
            others = {Placement::replicate(), Placement::shard(1), Placement::partial()};
          for (const Placement& other : others) {
            auto make = [&](const Placement& on_i) {
              std::vector<Placement> ps(std::size_t(m.ndim()), other);
              ps[std::size_t(i)] = on_i;
              return TensorSpec(m, ps, meta);
            };
            struct Case {
              Placement a, b;
              const char* coll;
              StepKind kind;
            };
            const Case cases[] = {
                {Placement::shard(0), Placement::replicate(), "all_gather", StepKind::AllGather},
                {Placement::partial(), Placement::replicate(), "all_reduce", StepKind::AllReduce},
                {Placement::partial(), Placement::shard(0), "reduce_scatter",
                 StepKind::ReduceScatter},
                {Placement::shard(0), Placement::shard(1), "all_to_all", StepKind::AllToAll}};
            for (const Case& c : cases) {
              if (other.is_shard() && (c.a.is_shard(1) || c.b.is_shard(1))) continue;  // not nested
              const TensorSpec from = make(c.a), to = make(c.b);
              const double local = double(from.local_nbytes(0));
              const double want = dtensor_cost(mesh, dph, i, c.coll, local);
              const Step st{i, c.kind, from, to};
              ASSERT_EQ(step_problem(st), "");
              const calib::StepPrice p = calib::price_step(prof, st, describe_step(st), dph);
              const std::string what = std::string(c.coll) + " mesh dim " + std::to_string(i) +
                                       " of " + m.to_string() + ", " + std::to_string(dph) +
                                       " devices/host, " + placements_to_string(from.placements()) +
                                       " -> " + placements_to_string(to.placements()) + " " +
                                       std::string(dtype_name(dt));
              EXPECT_NEAR(p.time_us, want, 1e-9 * want) << what;
              EXPECT_FALSE(p.prediction.extrapolated) << what << ": " << p.prediction.note;
              // The one-step plan costs the same through the planner's cost function, and the
              // search never does worse. It may do better: with 2x2 and 2 devices per host,
              // S(0),R -> R,R slices the intra-host dim first so the inter-host all_gather moves
              // half the bytes (then gathers intra-host).
              const CostedPlan one = price_plan(Plan{from, to, {st}}, cost);
              EXPECT_NEAR(one.total, want, 1e-9 * want) << what;
              const SearchResult r = plan_cheapest(from, to, cost);
              EXPECT_LE(r.best.total, want * (1 + 1e-9)) << what;
              if (r.best.plan.steps.size() == 1) {
                EXPECT_EQ(r.best.plan.steps[0].kind, c.kind) << what;
                ++single;
              }
              ++checked;
            }
          }
        }
      }
  EXPECT_GE(checked, 200);
  EXPECT_GE(single, checked / 2);  // mostly the one step DTensor prices
}

}  // namespace

// The search's fast paths give the plans of the plain search: profile_step_cost (traffic-only
// prices, shared between states and, through PlanCache, between searches on one graph) against a
// step-based cost calling price_step for every candidate. Seeded random transitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
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

class Gen {
 public:
  explicit Gen(std::uint64_t seed) : rng_(seed) {}
  int below(int n) { return int(rng_() % std::uint64_t(n)); }

  // Explicit sizes of `total` elements over `parts` shards: one shard holding all, or uneven.
  std::string sizes(std::int64_t total, int parts) {
    std::vector<std::int64_t> s(std::size_t(parts), 0);
    if (below(10) < 3) {
      s[std::size_t(below(parts))] = total;
    } else {
      for (std::int64_t e = 0; e < std::min<std::int64_t>(total, 16); ++e)
        ++s[std::size_t(below(parts))];
      s[std::size_t(below(parts))] += total - std::accumulate(s.begin(), s.end(), std::int64_t(0));
    }
    std::string o = "[";
    for (std::size_t i = 0; i < s.size(); ++i) o += (i ? "," : "") + std::to_string(s[i]);
    return o + "]";
  }

  // Placements over the mesh: R, every partial op, S(d) (nested when d repeats), explicit sizes
  // on the first shard of a tensor dim.
  std::string placements(const Shape& shape, const std::vector<int>& ext) {
    static const char* const kPartial[] = {"P", "P(max)", "P(min)", "P(avg)"};
    std::string out;
    std::vector<int> used;
    for (std::size_t j = 0; j < ext.size(); ++j) {
      if (j) out += ",";
      const int kind = below(7);
      if (kind == 0) {
        out += "R";
      } else if (kind == 1) {
        out += kPartial[below(4)];
      } else {
        const int d = below(int(shape.size()));
        const bool first = std::find(used.begin(), used.end(), d) == used.end();
        used.push_back(d);
        out += "S(" + std::to_string(d) + ")";
        if (kind >= 5 && first) out += sizes(shape[std::size_t(d)], ext[j]);
      }
    }
    return out;
  }

 private:
  std::mt19937_64 rng_;
};

// Everything a caller sees of a result, doubles to the bit (%a).
std::string dump(const SearchResult& r) {
  std::string o = "explored=" + std::to_string(r.states_explored) + "\n";
  for (const CostedPlan& cp : r.alternatives) {
    o += cp.plan.to_string();
    for (const Step& s : cp.plan.steps)
      o += " | " + s.before.serialize() + " > " + s.after.serialize();
    char b[64];
    for (double c : cp.step_cost) std::snprintf(b, sizeof b, " %a", c), o += b;
    std::snprintf(b, sizeof b, " total=%a\n", cp.total), o += b;
  }
  return o;
}

template <class F>
std::string outcome(F&& search) {
  try {
    return dump(search());
  } catch (const Error& e) {
    return std::string("error: ") + e.what();
  }
}

TEST(SearchEquivalence, ProfilePricesAndCacheMatchPlainSearch) {
  const test::ProfileVariants pv = test::profile_variants(
      std::string(SHARDCAL_SOURCE_DIR) + "/configs/profiles/dtensor-default.json");
  ASSERT_TRUE(calib::prices_copies(pv.copies));
  const calib::Profile* const profiles[] = {&pv.dtensor, &pv.copies, &pv.no_a2a};

  // One fast cost and one cache per (profile, ranks per host), shared by every case: the price
  // memo and the searched graphs carry over between searches.
  struct Priced {
    const calib::Profile* prof;
    int rph;
    StepCostFn fast, plain;
    std::string key;
    PlanCache cache;
  };
  std::vector<std::unique_ptr<Priced>> priced;
  for (const calib::Profile* p : profiles)
    for (int rph = 1; rph <= 4; ++rph) {
      auto x = std::make_unique<Priced>();
      x->prof = p, x->rph = rph;
      x->fast = calib::profile_step_cost(*p, rph);
      x->plain = [p, rph](const Step& s, const StepTraffic& t) -> double {
        if (t.collective &&
            std::none_of(p->models.begin(), p->models.end(),
                         [&](const calib::Model& m) { return m.collective == *t.collective; }))
          return std::numeric_limits<double>::infinity();
        return calib::price_step(*p, s, t, rph).time_us;
      };
      x->key = p->backend + std::to_string(p->models.size()) + ";rph=" + std::to_string(rph);
      priced.push_back(std::move(x));
    }

  static const char* const kMeshes[] = {"4",     "2x4",   "2x2x2",   "3x5",     "1x4",    "4x1x2",
                                        "2x1x3", "3x2x2", "1x2x1x2", "2x2x1x2", "2x2x2x2"};
  static const std::int64_t kDims[] = {1, 3, 7, 10, 64, 1000};
  static const DType kDTypes[] = {DType::F32, DType::BF16, DType::I32, DType::U8};
  const std::uint64_t seed = 20261125;
  Gen gen(seed);
  int searched = 0, planned = 0, cache_reuse = 0;
  for (int c = 0; c < 150; ++c) {
    const DeviceMesh mesh = DeviceMesh::parse(kMeshes[gen.below(std::size(kMeshes))]);
    Shape shape;
    for (int i = 0, nd = 1 + gen.below(3); i < nd; ++i)
      shape.push_back(kDims[gen.below(std::size(kDims))]);
    const TensorMeta meta{shape, kDTypes[gen.below(std::size(kDTypes))]};
    Priced& pr = *priced[std::size_t(gen.below(int(priced.size())))];
    const int k = 1 + gen.below(4);
    // Several transitions on one tensor and mesh: later ones reuse the cached graph.
    std::vector<std::pair<TensorSpec, TensorSpec>> transitions;
    for (int t = 0; t < 6 && transitions.size() < 4; ++t) {
      try {
        transitions.emplace_back(
            TensorSpec(mesh, parse_placements(gen.placements(shape, mesh.shape())), meta),
            TensorSpec(mesh, parse_placements(gen.placements(shape, mesh.shape())), meta));
      } catch (const Error&) {
        // an invalid random spec (e.g. sizes that do not fit): draw again
      }
    }
    for (const auto& tr : transitions) {
      const TensorSpec& from = tr.first;  // not a structured binding: clang 14 cannot capture one
      const TensorSpec& to = tr.second;
      const SearchOptions opt{k, 200000};
      const std::string fast = outcome([&] { return plan_cheapest(from, to, pr.fast, opt); });
      const std::string plain = outcome([&] { return plan_cheapest(from, to, pr.plain, opt); });
      const std::string cached =
          outcome([&] { return *pr.cache.get(from, to, pr.fast, pr.key, opt); });
      const std::string what = "seed " + std::to_string(seed) + ", case " + std::to_string(c) +
                               ": mesh " + mesh.to_string() + ", " + from.serialize() + " -> " +
                               to.serialize() + ", k=" + std::to_string(k) + ", " + pr.key;
      EXPECT_EQ(fast, plain) << what;
      EXPECT_EQ(fast, cached) << what;
      ++searched;
      planned += fast.rfind("error: ", 0) != 0;
    }
    cache_reuse += int(transitions.size()) > 1;
  }
  // The generator must exercise what the test is about: real plans, graphs reused.
  EXPECT_GE(searched, 450);
  EXPECT_GE(planned, searched * 9 / 10);
  EXPECT_GE(cache_reuse, 100);
}

TEST(SearchEquivalence, EmptyBoundPriceIsAnError) {
  const StepCostFn empty =
      StepCostFn::from_traffic([](const DeviceMesh&, DType) { return TrafficCostFn{}; });
  const TensorSpec from(DeviceMesh::parse("2x2"), parse_placements("S(0),R"),
                        TensorMeta{parse_shape("8x8"), DType::F32});
  const TensorSpec to(DeviceMesh::parse("2x2"), parse_placements("R,S(1)"),
                      TensorMeta{parse_shape("8x8"), DType::F32});
  EXPECT_THROW(plan_cheapest(from, to, empty), Error);
  PlanCache cache;
  EXPECT_THROW(cache.get(from, to, empty, "empty"), Error);
}

TEST(SearchEquivalence, PriceBoundToAnotherMeshIsAnError) {
  const calib::Profile dtensor = calib::read_profile(std::string(SHARDCAL_SOURCE_DIR) +
                                                     "/configs/profiles/dtensor-default.json");
  const TrafficCostFn price =
      calib::profile_step_cost(dtensor, 1).bind(DeviceMesh::parse("4"), DType::F32);
  const TensorSpec from(DeviceMesh::parse("2x2"), parse_placements("R,S(0)"),
                        TensorMeta{parse_shape("8x8"), DType::F32});
  const Step st{1, StepKind::AllGather, from,
                TensorSpec(from.mesh(), parse_placements("R,R"), from.meta())};
  EXPECT_THROW(price(describe_step(st)), Error);
}

TEST(SearchEquivalence, DescribeBeforePrepareIsAnError) {
  StepDescriber d;
  StepTraffic t;
  EXPECT_THROW(d.describe(StepKind::AllGather, Placement::replicate(), t), Error);
}

}  // namespace

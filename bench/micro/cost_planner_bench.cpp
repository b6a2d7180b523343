// The cost-based planner (plan_cheapest, docs/PLANNER.md): a 3-D mesh transition (goal <= 50 us),
// a 2x2x2x2 mesh and an 8x16x8 mesh of 1024 ranks (goals <= 1 ms) under the dtensor-default
// profile, uncached and through PlanCache. Counters: states = canonical placement states the search created, steps = plan
// length. The greedy planner on the same transitions for scale.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "shardcal/calibrate/loaded_profile.hpp"
#include "shardcal/calibrate/profile.hpp"
#include "shardcal/calibrate/step_cost.hpp"
#include "shardcal/planner.hpp"

#ifndef SHARDCAL_SOURCE_DIR
#error "SHARDCAL_SOURCE_DIR must be defined"
#endif

namespace {

using namespace shardcal;

const calib::Profile& dtensor_default() {
  static const calib::Profile p = calib::read_profile(std::string(SHARDCAL_SOURCE_DIR) +
                                                      "/configs/profiles/dtensor-default.json");
  return p;
}

struct Transition {
  TensorSpec from, to;
};

Transition make(const char* mesh, const char* from, const char* to) {
  const TensorMeta meta{{8192, 8192}, DType::BF16};
  const DeviceMesh m = DeviceMesh::parse(mesh);
  return {TensorSpec(m, parse_placements(from), meta), TensorSpec(m, parse_placements(to), meta)};
}

void BM_CostPlan(benchmark::State& state, const char* mesh, const char* from, const char* to) {
  const Transition t = make(mesh, from, to);
  const StepCostFn cost = calib::profile_step_cost(dtensor_default(), 4);
  std::size_t states = 0, steps = 0;
  for (auto _ : state) {
    const SearchResult r = plan_cheapest(t.from, t.to, cost);
    states = r.states_explored;
    steps = r.best.plan.steps.size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["states"] = double(states);
  state.counters["steps"] = double(steps);
}
BENCHMARK_CAPTURE(BM_CostPlan, s0s1r_to_rs0s1_2x2x2, "2x2x2", "S(0),S(1),R", "R,S(0),S(1)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CostPlan, pss_to_s1rs0_2x2x2, "2x2x2", "P,S(0),S(1)", "S(1),R,S(0)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CostPlan, nested_2x2x2x2, "2x2x2x2", "S(0),S(0),S(1),R", "R,S(1),S(1),S(0)")
    ->Unit(benchmark::kMicrosecond);
// 1024 ranks: step descriptions walk group shapes, not ranks (goal <= 1 ms).
BENCHMARK_CAPTURE(BM_CostPlan, s0s1r_to_rs0s1_8x16x8, "8x16x8", "S(0),S(1),R", "R,S(0),S(1)")
    ->Unit(benchmark::kMicrosecond);

// Truly cold: the cost function (and its per-mesh-dim link-class memo) is built inside the
// loop, as a fresh process planning one transition pays it.
void BM_CostPlanFreshCostFn(benchmark::State& state, const char* mesh, const char* from,
                            const char* to) {
  const Transition t = make(mesh, from, to);
  const calib::Profile& profile = dtensor_default();
  std::size_t states = 0;
  for (auto _ : state) {
    const StepCostFn cost = calib::profile_step_cost(profile, 4);
    const SearchResult r = plan_cheapest(t.from, t.to, cost);
    states = r.states_explored;
    benchmark::DoNotOptimize(r);
  }
  state.counters["states"] = double(states);
}
BENCHMARK_CAPTURE(BM_CostPlanFreshCostFn, s0s1r_to_rs0s1_2x2x2, "2x2x2", "S(0),S(1),R",
                  "R,S(0),S(1)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CostPlanFreshCostFn, s0s1r_to_rs0s1_8x16x8, "8x16x8", "S(0),S(1),R",
                  "R,S(0),S(1)")
    ->Unit(benchmark::kMicrosecond);
// Explicit sizes: specs check them per outer coordinate tuple, not per rank.
BENCHMARK_CAPTURE(BM_CostPlanFreshCostFn, explicit_s0s1r_to_rs0s1_8x16x8, "8x16x8",
                  "S(0)[2048,1024,1024,1024,1024,1024,1024,0],S(1),R", "R,S(0),S(1)")
    ->Unit(benchmark::kMicrosecond);

// One transition searched again with a profile loaded once, as redistribute/sweep/validate plan
// many: "Rebound" is the binding before LoadedProfile (profile_step_cost per search: the profile
// copied, the price memo rebuilt), "Bound" the kept LoadedProfile::step_cost. The profile is
// SHARDCAL_BENCH_PROFILE (e.g. a calibrated one) or dtensor-default.
std::shared_ptr<const calib::LoadedProfile> bench_profile() {
  static const auto lp = [] {
    const char* env = std::getenv("SHARDCAL_BENCH_PROFILE");
    return calib::LoadedProfile::load(
        env && *env ? std::string(env)
                    : std::string(SHARDCAL_SOURCE_DIR) + "/configs/profiles/dtensor-default.json",
        "SHARDCAL_BENCH_PROFILE");
  }();
  return lp;
}

void BM_CostPlanRebound(benchmark::State& state, const char* mesh, const char* from,
                        const char* to) {
  const Transition t = make(mesh, from, to);
  const auto lp = bench_profile();
  for (auto _ : state)
    benchmark::DoNotOptimize(
        plan_cheapest(t.from, t.to, calib::profile_step_cost(lp->profile(), 4)));
}
void BM_CostPlanBound(benchmark::State& state, const char* mesh, const char* from, const char* to) {
  const Transition t = make(mesh, from, to);
  const auto lp = bench_profile();
  (void)plan_cheapest(t.from, t.to, lp->step_cost(4));  // the first search fills the memo
  for (auto _ : state) benchmark::DoNotOptimize(plan_cheapest(t.from, t.to, lp->step_cost(4)));
}
BENCHMARK_CAPTURE(BM_CostPlanRebound, s0s1r_to_rs0s1_2x2x2, "2x2x2", "S(0),S(1),R", "R,S(0),S(1)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CostPlanBound, s0s1r_to_rs0s1_2x2x2, "2x2x2", "S(0),S(1),R", "R,S(0),S(1)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CostPlanRebound, s0_to_r_4, "4", "S(0)", "R")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CostPlanBound, s0_to_r_4, "4", "S(0)", "R")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CostPlanRebound, s0s1r_to_rs0s1_8x16x8, "8x16x8", "S(0),S(1),R", "R,S(0),S(1)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CostPlanBound, s0s1r_to_rs0s1_8x16x8, "8x16x8", "S(0),S(1),R", "R,S(0),S(1)")
    ->Unit(benchmark::kMicrosecond);

void BM_CostPlanCached(benchmark::State& state, const char* mesh, const char* from,
                       const char* to) {
  const Transition t = make(mesh, from, to);
  const StepCostFn cost = calib::profile_step_cost(dtensor_default(), 4);
  PlanCache cache;
  for (auto _ : state)
    benchmark::DoNotOptimize(cache.get(t.from, t.to, cost, "dtensor-default;rph=4"));
  state.counters["hits"] = double(cache.hits());
}
BENCHMARK_CAPTURE(BM_CostPlanCached, s0s1r_to_rs0s1_2x2x2, "2x2x2", "S(0),S(1),R", "R,S(0),S(1)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CostPlanCached, nested_2x2x2x2, "2x2x2x2", "S(0),S(0),S(1),R",
                  "R,S(1),S(1),S(0)")
    ->Unit(benchmark::kMicrosecond);

// A new transition on a tensor and mesh the cache has seen: the graph level answers (Dijkstra
// over already-priced steps), the result level is cleared every iteration.
void BM_CostPlanWarmGraph(benchmark::State& state, const char* mesh, const char* from,
                          const char* to) {
  const Transition t = make(mesh, from, to);
  const StepCostFn cost = calib::profile_step_cost(dtensor_default(), 4);
  PlanCache cache;
  (void)cache.get(t.from, t.to, cost, "dtensor-default;rph=4");
  std::size_t states = 0;
  for (auto _ : state) {
    cache.clear_results();
    auto r = cache.get(t.from, t.to, cost, "dtensor-default;rph=4");
    states = r->states_explored;
    benchmark::DoNotOptimize(r);
  }
  state.counters["states"] = double(states);
}
BENCHMARK_CAPTURE(BM_CostPlanWarmGraph, s0s1r_to_rs0s1_2x2x2, "2x2x2", "S(0),S(1),R", "R,S(0),S(1)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CostPlanWarmGraph, nested_2x2x2x2, "2x2x2x2", "S(0),S(0),S(1),R",
                  "R,S(1),S(1),S(0)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_CostPlanWarmGraph, s0s1r_to_rs0s1_8x16x8, "8x16x8", "S(0),S(1),R",
                  "R,S(0),S(1)")
    ->Unit(benchmark::kMicrosecond);

void BM_GreedyPlan(benchmark::State& state, const char* mesh, const char* from, const char* to) {
  const Transition t = make(mesh, from, to);
  for (auto _ : state) benchmark::DoNotOptimize(plan_redistribution(t.from, t.to));
}
BENCHMARK_CAPTURE(BM_GreedyPlan, s0s1r_to_rs0s1_2x2x2, "2x2x2", "S(0),S(1),R", "R,S(0),S(1)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GreedyPlan, nested_2x2x2x2, "2x2x2x2", "S(0),S(0),S(1),R", "R,S(1),S(1),S(0)")
    ->Unit(benchmark::kMicrosecond);

}  // namespace

#pragma once
// The cost-based planner (issue 9, docs/PLANNER.md): the cheapest plan under a caller's price
// per step, by Dijkstra over canonical states (state_key) reached by legal_steps. Pure: no
// communication, no dependency on the calibrate library (a profile's prices come in through
// StepCostFn; shardcal/calibrate/step_cost.hpp builds one). Every rank computing the same
// search with the same prices reaches the same plan.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "shardcal/layout.hpp"
#include "shardcal/plan.hpp"

namespace shardcal {

// Price of one step (any additive unit; the profile's is microseconds). +inf = never take it.
// Must be >= 0 and not NaN (the search throws Error naming the step otherwise).
using StepCostFn = std::function<double(const Step&, const StepTraffic&)>;

struct CostedPlan {
  Plan plan;
  std::vector<double> step_cost;  // per step, same order as plan.steps
  double total = 0;
};

struct SearchOptions {
  int k = 1;                          // k cheapest distinct plans (>= 1)
  std::size_t max_states = 200000;    // bound on distinct states visited: Error if exceeded
};

struct SearchResult {
  CostedPlan best;                       // == alternatives[0]
  std::vector<CostedPlan> alternatives;  // k cheapest distinct plans, cheapest first (incl. best)
  std::size_t states_explored = 0;       // distinct canonical states settled or queued
};

// Dijkstra over canonical states (state_key) reached by legal_steps, with k-shortest paths by
// state expansion (each state expanded at most k times, so the alternatives are the k cheapest
// walks; walks that revisit a state are dropped, so plans are loop-free). Ties: lower total,
// then fewer steps, then the lexicographically smaller sequence of (mesh dim, step kind,
// target state key). The result passes validate_plan. Throws Error on mismatched specs, a
// negative or NaN price, k < 1, more than max_states states, or no finite-cost plan.
// from == to (same state): one empty plan of cost 0.
SearchResult plan_cheapest(const TensorSpec& from, const TensorSpec& to, const StepCostFn& cost,
                           const SearchOptions& opt = {});

// The greedy plan (plan_redistribution) priced with `cost`, for comparison.
CostedPlan price_plan(const Plan& plan, const StepCostFn& cost);

// ---- Nested sharding: bytes a rank receives vs what it must receive ----------------------------

// Per rank: bytes received from other ranks over the whole plan (sum over steps of what that
// rank receives, counted as direct pairwise exchanges like StepTraffic::max_recv_bytes), and the
// lower bound: the bytes of the rank's target block that its source block does not hold
// (0 when the source holds a Partial on some mesh dim: then everything reduced is new data,
// and the bound is the target block's bytes).
struct RecvReport {
  std::vector<std::int64_t> received;   // per rank
  std::vector<std::int64_t> lower_bound;
  std::int64_t max_received = 0;
  std::int64_t max_lower_bound = 0;
};
RecvReport recv_report(const Plan& plan);

}  // namespace shardcal

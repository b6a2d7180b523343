#pragma once
// The cost-based planner (docs/PLANNER.md): the cheapest plan under a caller's price
// per step, by Dijkstra over canonical states (state_key) reached by legal_steps. Pure: no
// communication, no dependency on the calibrate library (a profile's prices come in through
// StepCostFn; shardcal/calibrate/step_cost.hpp builds one). Every rank computing the same
// search with the same prices reaches the same plan.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "shardcal/layout.hpp"
#include "shardcal/plan.hpp"

namespace shardcal {

// The price of a step from what it moves (its StepTraffic) alone, bound to one mesh and dtype.
using TrafficCostFn = std::function<double(const StepTraffic&)>;

// Price of one step (any additive unit; the profile's is microseconds). +inf = never take it.
// Must be >= 0 and not NaN (the search throws Error naming the step otherwise). Either any
// callable (const Step&, const StepTraffic&) -> double, or, through from_traffic, a price that
// depends on the step only through its traffic, mesh and dtype: the search then prices its
// candidates without building their specs (the profile's prices are of this form).
// A from_traffic price must be a pure function of (mesh, dtype, traffic): a search reuses a
// price across states with equal traffic, and a PlanCache across searches on one graph. The
// TrafficCostFn that bind() returns may keep per-search state: do not share one between
// threads (bind one per thread; the Binder itself may be called concurrently). It must not be
// empty (the search throws Error). operator() on a from_traffic cost binds on every call: fine
// for pricing a plan's few steps, not for a loop (bind once and call the result instead).
class StepCostFn {
 public:
  using Fn = std::function<double(const Step&, const StepTraffic&)>;
  // Makes the TrafficCostFn of one (mesh, dtype); a search calls it once.
  using Binder = std::function<TrafficCostFn(const DeviceMesh&, DType)>;

  StepCostFn() = default;
  template <class F>
    requires(!std::is_same_v<std::decay_t<F>, StepCostFn> && std::copy_constructible<F> &&
             std::is_invocable_r_v<double, F&, const Step&, const StepTraffic&>)
  StepCostFn(F f) : fn_(std::move(f)) {}  // NOLINT: implicit, as std::function's
  static StepCostFn from_traffic(Binder bind) {
    StepCostFn c;
    c.bind_ = std::move(bind);
    return c;
  }

  double operator()(const Step& s, const StepTraffic& t) const {
    return fn_ ? fn_(s, t) : bind_(s.before.mesh(), s.before.meta().dtype)(t);
  }
  explicit operator bool() const { return bool(fn_) || bool(bind_); }
  bool traffic_only() const { return bool(bind_); }  // made by from_traffic
  // The traffic-only price for (mesh, dtype); empty when this cost needs the step itself.
  TrafficCostFn bind(const DeviceMesh& mesh, DType dtype) const {
    return bind_ ? bind_(mesh, dtype) : TrafficCostFn{};
  }

 private:
  Fn fn_;
  Binder bind_;
};

struct CostedPlan {
  Plan plan;
  std::vector<double> step_cost;  // per step, same order as plan.steps
  double total = 0;
};

struct SearchOptions {
  int k = 1;  // up to k distinct plans (>= 1): the cheapest, then alternatives (see plan_cheapest)
  // Bound on the distinct states one search reaches (its endpoints and every state one step from
  // a state it expands): Error if exceeded. Counted per search, also through a PlanCache.
  std::size_t max_states = 200000;
};

struct SearchResult {
  CostedPlan best;  // == alternatives[0]; the cheapest plan (exact)
  // Up to k distinct loop-free plans, cheapest first (incl. best). For k > 1 not necessarily the
  // k cheapest loop-free plans: see plan_cheapest.
  std::vector<CostedPlan> alternatives;
  std::size_t states_explored = 0;  // distinct canonical states the search expanded
};

// Dijkstra over canonical states (state_key) reached by legal_steps, with k-shortest paths by
// state expansion (each state expanded at most k times; walks that revisit a state are dropped,
// so plans are loop-free). For k = 1 this is Dijkstra: the cheapest plan, exact. For k > 1 the
// alternatives are the cheapest loop-free plans this expansion finds, cheapest first; a cheaper
// loop-free plan can be missed when its prefix was crowded out of a state by k cheaper prefixes
// that later loop (docs/PLANNER.md, "Search"). Ties: lower total, then fewer steps, then the
// lexicographically smaller sequence of (mesh dim, step kind, edge index), where edges are
// ordered as legal_steps lists a state's steps. The result passes validate_plan. Throws Error on
// mismatched specs, a negative or NaN price, k < 1, more than max_states states, or no
// finite-cost plan.
// from == to (same state): one empty plan of cost 0.
SearchResult plan_cheapest(const TensorSpec& from, const TensorSpec& to, const StepCostFn& cost,
                           const SearchOptions& opt = {});

// The greedy plan (plan_redistribution) priced with `cost`, for comparison.
CostedPlan price_plan(const Plan& plan, const StepCostFn& cost);

struct SearchGraph;  // states and priced edges of one (mesh, tensor, cost key) (planner.cpp)

// Two levels of memo. (1) Search results per (source spec, target spec, cost key, options): a
// repeated transition costs one hash lookup. (2) The searched graph per (mesh, shape, dtype, cost
// key, partial ops of the endpoints, explicit target sizes): the states and the priced steps
// between them, which are what a search spends its time on; a new transition on a known tensor
// and mesh only runs Dijkstra over already-priced edges. The cost key names the cost function
// (e.g. the profile's sha256 and the ranks per host: "sha256:...;rph=4"): entries are reused only
// under the same key, so a caller that changes prices must change the key. Specs are compared by
// serialize() (the caller's spelling), so a cached plan's endpoints are exactly the ones asked
// for. Thread-safe (one search per graph at a time). When `capacity` results (or graphs) are
// held, the next miss clears that level: simple and bounded.
class PlanCache {
 public:
  explicit PlanCache(std::size_t capacity = 4096) : capacity_(capacity) {}
  std::shared_ptr<const SearchResult> get(const TensorSpec& from, const TensorSpec& to,
                                          const StepCostFn& cost, const std::string& cost_key,
                                          const SearchOptions& opt = {});
  std::size_t hits() const;
  std::size_t misses() const;
  std::size_t size() const;
  void clear();          // both levels
  void clear_results();  // level (1) only: the next get searches, over the kept graphs

 private:
  mutable std::mutex mu_;
  std::size_t capacity_;
  std::size_t hits_ = 0, misses_ = 0;
  std::unordered_map<std::string, std::shared_ptr<const SearchResult>> map_;
  std::unordered_map<std::string, std::shared_ptr<SearchGraph>> graphs_;
};

// ---- Nested sharding: bytes a rank receives vs what it must receive ----------------------------

// Per rank: bytes received from other ranks over the whole plan (sum over steps of what that
// rank receives, counted as direct pairwise exchanges like StepTraffic::max_recv_bytes), and the
// lower bound: the bytes of the rank's target block that its source block does not hold. When
// some mesh dim (of size > 1) is Partial in the source and not the same Partial (same op) in the
// target, every target element is a reduction over other ranks' data: the bound is then the
// whole target block's bytes. A Partial the target keeps on the same mesh dim does not count.
struct RecvReport {
  std::vector<std::int64_t> received;  // per rank
  std::vector<std::int64_t> lower_bound;
  std::int64_t max_received = 0;
  std::int64_t max_lower_bound = 0;
};
RecvReport recv_report(const Plan& plan);

}  // namespace shardcal

#pragma once
// TEMPORARY (branch validate): the cost-based planner API of INTERFACES §1 until branch
// `planner` lands on main. When its headers exist they are used; otherwise a stand-in that
// returns the greedy plan priced by the collective's profile prediction. Removed before the
// last commit of this branch.
#if __has_include("shardcal/planner.hpp") && __has_include("shardcal/calibrate/step_cost.hpp")
#include "shardcal/calibrate/step_cost.hpp"
#include "shardcal/planner.hpp"
#else
#include <functional>
#include <limits>
#include <vector>

#include "shardcal/calibrate/profile.hpp"
#include "shardcal/plan.hpp"

namespace shardcal {
using StepCostFn = std::function<double(const Step&, const StepTraffic&)>;
struct CostedPlan {
  Plan plan;
  std::vector<double> step_cost;
  double total = 0;
};
struct SearchOptions {
  int k = 1;
  std::size_t max_states = 200000;
};
struct SearchResult {
  CostedPlan best;
  std::vector<CostedPlan> alternatives;
  std::size_t states_explored = 0;
};
inline SearchResult plan_cheapest(const TensorSpec& from, const TensorSpec& to, const StepCostFn& cost,
                                  const SearchOptions& = {}) {
  SearchResult r;
  r.best.plan = plan_redistribution(from, to);
  for (const Step& s : r.best.plan.steps) {
    r.best.step_cost.push_back(cost(s, describe_step(s)));
    r.best.total += r.best.step_cost.back();
  }
  r.alternatives.push_back(r.best);
  r.states_explored = r.best.plan.steps.size() + 1;
  return r;
}
}  // namespace shardcal

namespace shardcal::calib {
inline StepCostFn profile_step_cost(const Profile& p, int ranks_per_host) {
  return [p, ranks_per_host](const Step& s, const StepTraffic& t) -> double {
    if (!t.collective) return 0.0;
    LinkClass lc;
    lc.group_size = t.group_size;
    lc.hosts = 1;
    lc.ranks_per_host = t.group_size;
    (void)ranks_per_host;
    (void)s;
    std::vector<std::int64_t> counts = t.counts;
    return predict(p, *t.collective, lc, double(t.bytes), counts, int(t.elem_size)).time_us;
  };
}
}  // namespace shardcal::calib
#endif

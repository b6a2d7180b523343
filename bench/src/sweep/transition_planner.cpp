#include "sweep/transition_planner.hpp"

#include <algorithm>

#include "shardcal/placement.hpp"

namespace shardbench::sweep {

int TransitionPlanner::resolve_ranks_per_host(const shardcal::Topology& topo) const {
  return std::max(1, topo.max_ranks_per_host);
}

namespace {

class GreedyPlanner final : public TransitionPlanner {
 public:
  std::string name() const override { return "greedy"; }
  bool priced() const override { return false; }
  PlannedTransition plan(const shardcal::TensorSpec& from, const shardcal::TensorSpec& to,
                         int /*ranks_per_host*/) const override {
    return {shardcal::plan_redistribution(from, to), {}, 0.0};
  }
  nlohmann::json key(int /*ranks_per_host*/) const override { return nullptr; }
  nlohmann::json describe(int /*ranks_per_host*/) const override { return {{"name", "greedy"}}; }
};

}  // namespace

std::shared_ptr<const TransitionPlanner> greedy_planner() {
  static const auto planner = std::make_shared<const GreedyPlanner>();
  return planner;
}

std::string step_short(const shardcal::Step& s) {
  const auto d = std::size_t(s.mesh_dim);
  return "mesh" + std::to_string(s.mesh_dim) + " " + s.before.placements().at(d).to_string() + "->" +
         s.after.placements().at(d).to_string() + " " + shardcal::step_kind_name(s.kind);
}

}  // namespace shardbench::sweep

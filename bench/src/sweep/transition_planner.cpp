#include "sweep/transition_planner.hpp"

#include <algorithm>

#include "shardcal/error.hpp"
#include "shardcal/placement.hpp"

namespace shardbench::sweep {

int TransitionPlanner::resolve_ranks_per_host(const shardcal::Topology& topo) const {
  if (ranks_per_host > 0) return ranks_per_host;
  return std::max(1, topo.max_ranks_per_host);
}

PlannedTransition TransitionPlanner::plan(const shardcal::TensorSpec& from, const shardcal::TensorSpec& to,
                                          int rph) const {
  if (!cost()) return {shardcal::plan_redistribution(from, to), {}, 0.0};
  if (!search) throw shardcal::Error("internal: cost planner without a search function");
  PlannedTransition t = search(from, to, rph);
  shardcal::validate_plan(t.plan);  // a plan the executor can run, or one clear error
  return t;
}

nlohmann::json TransitionPlanner::key(int rph) const {
  if (!cost()) return nullptr;
  return {{"name", "cost"}, {"profile_sha256", profile.value("sha256", "")}, {"ranks_per_host", rph}};
}

nlohmann::json TransitionPlanner::describe(int rph) const {
  if (!cost()) return {{"name", "greedy"}};
  return {{"name", "cost"}, {"profile", profile}, {"ranks_per_host", rph}};
}

std::string step_short(const shardcal::Step& s) {
  const auto d = std::size_t(s.mesh_dim);
  return "mesh" + std::to_string(s.mesh_dim) + " " + s.before.placements().at(d).to_string() + "->" +
         s.after.placements().at(d).to_string() + " " + shardcal::step_kind_name(s.kind);
}

}  // namespace shardbench::sweep

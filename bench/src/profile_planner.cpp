#include "profile_planner.hpp"

#include <algorithm>

#include "shardcal/error.hpp"

namespace shardbench {

CostPlanner::CostPlanner(std::shared_ptr<const shardcal::calib::LoadedProfile> profile,
                         int ranks_per_host_override)
    : profile_(std::move(profile)), rph_override_(ranks_per_host_override) {
  if (!profile_) throw shardcal::Error("internal: cost planner without a profile");
}

sweep::PlannedTransition CostPlanner::plan(const shardcal::TensorSpec& from,
                                           const shardcal::TensorSpec& to, int rph) const {
  const shardcal::SearchResult r = search(from, to, rph);
  shardcal::validate_plan(r.best.plan);  // a plan the executor can run, or one clear error
  return {r.best.plan, r.best.step_cost, r.best.total};
}

shardcal::SearchResult CostPlanner::search(const shardcal::TensorSpec& from,
                                           const shardcal::TensorSpec& to, int rph,
                                           const shardcal::SearchOptions& opt) const {
  return shardcal::plan_cheapest(from, to, profile_->step_cost(rph), opt);
}

int CostPlanner::resolve_ranks_per_host(const shardcal::Topology& topo) const {
  if (rph_override_ > 0) return rph_override_;
  return std::max(1, topo.max_ranks_per_host);
}

nlohmann::json CostPlanner::key(int rph) const {
  return {{"name", "cost"}, {"profile_sha256", profile_->sha256()}, {"ranks_per_host", rph}};
}

nlohmann::json CostPlanner::describe(int rph) const {
  return {{"name", "cost"}, {"profile", profile()}, {"ranks_per_host", rph}};
}

nlohmann::json CostPlanner::profile() const { return nlohmann::json(profile_->identity()); }

std::shared_ptr<const CostPlanner> make_cost_planner(const std::string& path,
                                                     const std::string& option,
                                                     int ranks_per_host_override) {
  return std::make_shared<const CostPlanner>(shardcal::calib::LoadedProfile::load(path, option),
                                             ranks_per_host_override);
}

}  // namespace shardbench

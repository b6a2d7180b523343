#pragma once
// The cost planner: sweep::TransitionPlanner over a calibrated profile loaded once
// (shardcal::calib::LoadedProfile: identity, sha256 of the bytes parsed, step prices bound once
// per ranks-per-host with their memo kept across searches). redistribute and sweep plan through
// the interface; plan and validate also use search() (k alternatives) and step_cost() (pricing
// the greedy plan) under the same bound prices. docs/ARCHITECTURE.md "Profiles and planners".
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "shardcal/calibrate/loaded_profile.hpp"
#include "shardcal/planner.hpp"
#include "sweep/transition_planner.hpp"

namespace shardbench {

class CostPlanner final : public sweep::TransitionPlanner {
 public:
  // ranks_per_host_override > 0 replaces the discovered topology.
  CostPlanner(std::shared_ptr<const shardcal::calib::LoadedProfile> profile,
              int ranks_per_host_override);

  std::string name() const override { return "cost"; }
  bool priced() const override { return true; }
  // The cheapest plan (plan_cheapest, k = 1), validated.
  sweep::PlannedTransition plan(const shardcal::TensorSpec& from, const shardcal::TensorSpec& to,
                                int ranks_per_host) const override;
  int resolve_ranks_per_host(const shardcal::Topology& topo) const override;
  nlohmann::json key(int ranks_per_host) const override;
  nlohmann::json describe(int ranks_per_host) const override;
  nlohmann::json profile() const override;

  // The full search (k alternatives, state bound) with the bound prices.
  shardcal::SearchResult search(const shardcal::TensorSpec& from, const shardcal::TensorSpec& to,
                                int ranks_per_host, const shardcal::SearchOptions& opt = {}) const;
  const shardcal::StepCostFn& step_cost(int ranks_per_host) const {
    return profile_->step_cost(ranks_per_host);
  }
  const shardcal::calib::LoadedProfile& loaded() const { return *profile_; }
  int ranks_per_host_override() const { return rph_override_; }

 private:
  std::shared_ptr<const shardcal::calib::LoadedProfile> profile_;
  int rph_override_;
};

// The cost planner over the profile at `path` (LoadedProfile::load; errors name `option`).
std::shared_ptr<const CostPlanner> make_cost_planner(const std::string& path,
                                                     const std::string& option,
                                                     int ranks_per_host_override);

}  // namespace shardbench

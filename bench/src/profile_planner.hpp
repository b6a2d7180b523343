#pragma once
// The cost-based planner as the CLI binds it: a calibrated profile read from a
// file, its identity in outputs (path as given, cluster, sha256 of the bytes), and the sweep's
// planner hook running plan_cheapest with profile_step_cost.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardcal/calibrate/profile.hpp"
#include "shardcal/calibrate/step_cost.hpp"
#include "shardcal/planner.hpp"
#include "sweep/transition_planner.hpp"

namespace shardbench {

struct LoadedProfile {
  std::string path;  // as given
  shardcal::calib::Profile profile;
  std::string sha256;  // of the file's bytes
  nlohmann::json identity() const;  // {"path", "cluster", "sha256"}
};

// Reads and checks the profile; throws shardcal::Error naming `option` (e.g. "--profile") and
// the file, with a fix.
LoadedProfile load_profile(const std::string& path, const std::string& option);

// The cost planner over `profile`; ranks_per_host_override > 0 replaces the discovered topology.
sweep::TransitionPlanner make_cost_planner(std::shared_ptr<const LoadedProfile> profile,
                                           int ranks_per_host_override);

}  // namespace shardbench

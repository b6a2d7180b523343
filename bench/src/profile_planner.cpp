#include "profile_planner.hpp"

#include <filesystem>

#include "shardcal/formats/sha256.hpp"
#include "shardcal/error.hpp"

namespace shardbench {

nlohmann::json LoadedProfile::identity() const {
  return {{"path", path}, {"cluster", profile.cluster}, {"sha256", sha256}};
}

LoadedProfile load_profile(const std::string& path, const std::string& option) {
  if (!std::filesystem::is_regular_file(path))
    throw shardcal::Error(option + " " + path + ": no such profile file; give a profile written by "
                          "`shardbench calibrate` or a built-in one such as "
                          "configs/profiles/dtensor-default.json");
  LoadedProfile lp;
  lp.path = path;
  try {
    lp.profile = shardcal::calib::read_profile(path);
  } catch (const shardcal::Error& e) {
    throw shardcal::Error(option + " " + path + ": " + e.what());
  }
  lp.sha256 = shardcal::formats::sha256_file(path);
  return lp;
}

sweep::TransitionPlanner make_cost_planner(std::shared_ptr<const LoadedProfile> profile,
                                           int ranks_per_host_override) {
  sweep::TransitionPlanner tp;
  tp.name = "cost";
  tp.profile = profile->identity();
  tp.ranks_per_host = ranks_per_host_override;
  // No shared mutable state: on the simulator every rank thread plans with this hook at once.
  tp.search = [profile](const shardcal::TensorSpec& from, const shardcal::TensorSpec& to, int rph) {
    const shardcal::StepCostFn cost = shardcal::calib::profile_step_cost(profile->profile, rph);
    const shardcal::SearchResult r = shardcal::plan_cheapest(from, to, cost);
    return sweep::PlannedTransition{r.best.plan, r.best.step_cost, r.best.total};
  };
  return tp;
}

}  // namespace shardbench

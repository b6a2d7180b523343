#pragma once
// A profile file loaded once and bound to the planner's step prices: how every C++ consumer
// (shardbench plan, predict, redistribute, sweep, validate; any new one) gets a profile from a
// path. docs/ARCHITECTURE.md "Profiles and planners".
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "shardcal/calibrate/profile.hpp"
#include "shardcal/planner.hpp"

namespace shardcal::calib {

class LoadedProfile {
 public:
  // Reads `path` once: the sha256 is of the very bytes parsed (no second read that could see
  // another file). Throws Error "<option> <path>: ..." with a fix; `option` names where the path
  // came from ("--profile", "cfg.json: /profile").
  static std::shared_ptr<const LoadedProfile> load(const std::string& path,
                                                   const std::string& option);
  // The same from bytes already in memory; `path` names them in errors and in identity().
  static std::shared_ptr<const LoadedProfile> parse(std::string bytes, const std::string& path);

  const std::string& path() const { return path_; }  // as given
  const Profile& profile() const { return *profile_; }
  const std::string& sha256() const { return sha256_; }  // of the file's bytes
  // {"path", "cluster", "sha256"}, in that order: the profile's identity in every output.
  nlohmann::ordered_json identity() const;

  // The step prices plan_cheapest uses when hosts hold `ranks_per_host` (>= 1, else Error)
  // consecutive ranks: made on first use per ranks-per-host and kept, so the price memo inside
  // (link class and model per mesh dim and collective, profile_step_cost) lasts across searches.
  // Thread-safe; the reference lives as long as this object.
  const StepCostFn& step_cost(int ranks_per_host) const;
  // Names those prices for a PlanCache: "sha256:<hex>;rph=<N>".
  std::string cost_key(int ranks_per_host) const;

  LoadedProfile(const LoadedProfile&) = delete;
  LoadedProfile& operator=(const LoadedProfile&) = delete;

 private:
  LoadedProfile() = default;
  std::string path_;
  std::shared_ptr<const Profile> profile_;
  std::string sha256_;
  mutable std::mutex mu_;
  mutable std::map<int, StepCostFn> costs_;  // per ranks per host; never erased (stable refs)
};

}  // namespace shardcal::calib

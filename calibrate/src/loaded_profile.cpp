// A profile file loaded once and bound to step prices (shardcal/calibrate/loaded_profile.hpp).
#include "shardcal/calibrate/loaded_profile.hpp"

#include <filesystem>

#include "shardcal/calibrate/step_cost.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/json.hpp"
#include "shardcal/formats/sha256.hpp"

namespace shardcal::calib {

namespace {

constexpr const char* kProfileFix =
    "give a profile written by `shardbench calibrate` or a built-in one such as "
    "configs/profiles/dtensor-default.json";

}  // namespace

std::shared_ptr<const LoadedProfile> LoadedProfile::load(const std::string& path,
                                                         const std::string& option) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(option + " " + path + ": cannot open profile: " +
                (std::filesystem::exists(path, ec) ? "not a regular file" : "no such file") + "; " +
                kProfileFix);
  try {
    return parse(formats::read_text_file(path, "profile", kProfileFix), path);
  } catch (const Error& e) {
    // The reader's messages mostly begin with the path (file:line:column): name it once.
    const std::string what = e.what();
    throw Error(option + " " + (what.rfind(path, 0) == 0 ? what : path + ": " + what));
  }
}

std::shared_ptr<const LoadedProfile> LoadedProfile::parse(std::string bytes,
                                                          const std::string& path) {
  // read_profile's checks, on bytes already read.
  if (bytes.find_first_not_of(" \t\r\n") == std::string::npos)
    throw Error(path + ": the profile file is empty; regenerate it with shardbench calibrate");
  std::shared_ptr<LoadedProfile> lp(new LoadedProfile());
  lp->path_ = path;
  lp->profile_ = std::make_shared<const Profile>(parse_profile(bytes, path));
  lp->sha256_ = formats::sha256_bytes(bytes);
  return lp;
}

nlohmann::ordered_json LoadedProfile::identity() const {
  return {{"path", path_}, {"cluster", profile_->cluster}, {"sha256", sha256_}};
}

const StepCostFn& LoadedProfile::step_cost(int ranks_per_host) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = costs_.find(ranks_per_host);
  if (it != costs_.end()) return it->second;
  // Shares the profile (no copy); throws for ranks_per_host < 1 before anything is kept.
  return costs_.emplace(ranks_per_host, profile_step_cost(profile_, ranks_per_host)).first->second;
}

std::string LoadedProfile::cost_key(int ranks_per_host) const {
  return "sha256:" + sha256_ + ";rph=" + std::to_string(ranks_per_host);
}

}  // namespace shardcal::calib

// `shardbench calibrate`: sweep results -> calibrated cost-model profile (docs/CALIBRATION.md).
// A thin shell over calibrate/ (shardcal_calibrate): read, fit, print the quality table, write
// the profile atomically (temp + rename, so a failed run leaves no output file).
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "commands.hpp"
#include "shardcal/calibrate/fit.hpp"
#include "shardcal/calibrate/profile.hpp"
#include "shardcal/formats/results_reader.hpp"
#include "shardcal/formats/schemas.hpp"
#include "shardcal/error.hpp"

namespace shardbench {

namespace {

struct CalibrateArgs {
  std::vector<std::string> results;
  std::string out;
  std::string name;
  std::string mode = "auto";
};

std::string default_cluster_name(const shardcal::calib::ResultSet& rs) {
  for (const auto& f : rs.files)
    for (const auto& c : f.contexts)
      if (c.contains("hosts") && c["hosts"].is_array() && !c["hosts"].empty() &&
          c["hosts"][0].contains("name") && c["hosts"][0]["name"].is_string())
        return c["hosts"][0]["name"].get<std::string>() +
               (c["hosts"].size() > 1 ? "+" + std::to_string(c["hosts"].size() - 1) : "");
  return "unnamed";
}

// --mode auto: the one timing mode the files hold (imported nccl-tests logs are pipelined, OSU
// and sweeps per_iteration by default, imported torch.profiler traces in_job); per_iteration,
// the sweep's default, when they hold several.
std::string resolve_mode(const std::string& mode, const shardcal::calib::ResultSet& rs) {
  if (mode != "auto") return mode;
  std::set<std::string> modes;
  for (const auto& p : rs.collectives) modes.insert(p.mode);
  for (const auto& t : rs.transitions) modes.insert(t.mode);
  if (modes.size() == 1) return *modes.begin();
  if (modes.size() > 1)
    std::cout << "calibrate: the results hold several timing modes; fitting per_iteration "
                 "(--mode pipelined for the others)\n";
  return "per_iteration";
}

int run(const CalibrateArgs& a) {
  namespace cb = shardcal::calib;
  const cb::ResultSet rs = cb::read_results(a.results);
  cb::FitOptions opt;
  opt.mode = resolve_mode(a.mode, rs);
  const cb::Calibration cal = cb::calibrate(rs, opt);
  const cb::Profile profile =
      cb::make_profile(rs, cal, a.name.empty() ? default_cluster_name(rs) : a.name);
  std::cout << cb::quality_report(rs, cal);
  cb::write_profile_atomic(profile, a.out);
  std::cout << "profile: " << a.out << " (" << cal.models.size() << " model(s))\n";
  return 0;
}

}  // namespace

Runner add_calibrate_command(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Fit the cost model (docs/CALIBRATION.md) to sweep results: one model per collective and link-class "
      "family, piecewise in size, with holdout error; writes a " +
          shardcal::formats::schema_label(shardcal::formats::kProfileSchema,
                                          shardcal::formats::kProfileVersion) +
          " JSON file");
  cmd->add_option("--results", args->results, "Sweep results files (JSON Lines) of one backend")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--out", args->out, "Profile to write (written atomically)")->required();
  cmd->add_option("--name", args->name, "Cluster name in the profile (default: the first host)");
  cmd->add_option("--mode", args->mode,
                  "Timing mode the models describe; auto: the one mode the results hold "
                  "(per_iteration when they hold several); in_job: kernel times imported from "
                  "torch.profiler traces")
      ->check(CLI::IsMember({"auto", "per_iteration", "pipelined", "in_job"}))
      ->capture_default_str();
  return [args] { return run(*args); };
}

}  // namespace shardbench

#pragma once
// shardbench subcommands. Each file cmd_<name>.cpp adds one subcommand to the app and returns the
// function that runs it when selected (exit code), so main.cpp stays a list.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "shardcal/formats/schemas.hpp"
#include "shardcal/launch.hpp"

namespace shardbench {

using Runner = std::function<int()>;

Runner add_redistribute_command(CLI::App& app);
Runner add_info_command(CLI::App& app);
Runner add_sweep_command(CLI::App& app);
Runner add_calibrate_command(CLI::App& app);
Runner add_predict_command(CLI::App& app);  // calibrate/ profile -> predicted time
Runner add_plan_command(CLI::App& app);     // cost-based planner (docs/PLANNER.md)
Runner add_validate_command(CLI::App& app);  // cost planner's choices vs measurement
Runner add_gate_command(CLI::App& app);     // gate/ statistical regression gate
Runner add_import_command(CLI::App& app);   // nccl-tests / OSU logs, torch traces -> results file
Runner add_check_command(CLI::App& app);    // results vs a profile: drift (docs/CHECK.md)

// The --profile option's help of plan and predict, naming the format from formats' constants.
inline std::string profile_option_help() {
  return "Profile JSON (" +
         shardcal::formats::schema_label(shardcal::formats::kProfileSchema,
                                         shardcal::formats::kProfileVersion) +
         ")";
}

// --backend/--world/--timeout, shared by every subcommand that communicates.
struct BackendOptions {
  std::string backend = "sim";
  int world = 0;
  double timeout_s = 300.0;
  void add_to(CLI::App& cmd);
  shardcal::LaunchOptions launch_options() const { return {backend, world, timeout_s}; }
};

// Runs rank(world) on every rank of backend's world with the stop handlers installed (restored
// afterwards) and returns its exit code; a sweep::InputError (one the ranks agreed on) is
// reported on stderr and gives exit code 2.
int launch_ranks(const BackendOptions& backend,
                 const std::function<int(shardcal::Communicator&)>& rank);

}  // namespace shardbench

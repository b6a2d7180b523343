// `shardbench redistribute`: distribute a reference tensor by --from, redistribute to --to, then
// either dump every rank's block (--dump) or verify against the reference (default).
#include <cmath>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "profile_planner.hpp"
#include "shardcal/check.hpp"
#include "shardcal/comm_util.hpp"
#include "shardcal/error.hpp"
#include "shardcal/redistribute.hpp"
#include "shardcal/topology.hpp"
#include "sweep/sweep.hpp"

namespace shardbench {

namespace {

struct RedistributeArgs {
  BackendOptions backend;
  std::string mesh, shape, dtype = "f32", from, to;
  bool dump = false, plan_only = false, no_check = false;
  int root = 0;
  std::string profile;     // cost-based planner; "" = greedy
  int ranks_per_host = 0;  // 0 = from the hostnames (--plan: every rank on one host)
};

nlohmann::json values_json(shardcal::DType t, const std::vector<std::byte>& bytes) {
  nlohmann::json out = nlohmann::json::array();
  const std::size_t es = shardcal::dtype_size(t);
  for (std::size_t i = 0; i < bytes.size() / es; ++i) {
    const double v = shardcal::load_as_double(t, bytes.data() + i * es);
    // Integral values print as integers so dumps read the same in every dtype.
    if (std::floor(v) == v && std::abs(v) < 9.0e15) out.push_back(std::int64_t(v));
    else out.push_back(v);
  }
  return out;
}

int run(const RedistributeArgs& a) {
  // Parse and validate everything before any rank starts: bad input fails with one message
  // and no communication.
  const shardcal::DeviceMesh mesh = shardcal::DeviceMesh::parse(a.mesh);
  const shardcal::TensorMeta meta{shardcal::parse_shape(a.shape), shardcal::parse_dtype(a.dtype)};
  const shardcal::TensorSpec from(mesh, shardcal::parse_placements(a.from), meta);
  const shardcal::TensorSpec to(mesh, shardcal::parse_placements(a.to), meta);
  std::shared_ptr<const sweep::TransitionPlanner> planner = sweep::greedy_planner();
  if (!a.profile.empty())
    planner = make_cost_planner(a.profile, "--profile", a.ranks_per_host);
  else if (a.ranks_per_host > 0)
    throw shardcal::Error("--ranks-per-host only applies with --profile");
  // Which planner made the plan, with the predicted time when the profile priced it.
  auto planner_line = [&](const sweep::PlannedTransition& pt, int rph) {
    std::ostringstream os;
    os << "planner: " << planner->name();
    if (planner->priced())
      os << " (profile " << a.profile << ", cluster " << planner->profile().value("cluster", "")
         << ", sha256 " << planner->profile().value("sha256", "").substr(0, 12) << ", " << rph
         << " ranks per host), predicted " << pt.total_us << " us";
    return os.str();
  };
  if (a.plan_only) {  // no communication: ranks per host from the option, else all on one host
    const int rph = a.ranks_per_host > 0 ? a.ranks_per_host : mesh.size();
    const sweep::PlannedTransition pt = planner->plan(from, to, rph);
    std::cout << pt.plan.to_string() << "\n" << planner_line(pt, rph) << "\n";
    return 0;
  }
  shardcal::LaunchOptions lo = a.backend.launch_options();
  if (lo.backend == "sim" && lo.world == 0) lo.world = mesh.size();
  int exit_code = 0;
  shardcal::launch(lo, [&](shardcal::Communicator& world) {
    if (!a.no_check) {
      // Ranks launched with different arguments would otherwise hang or corrupt data; checked on
      // the world before the mesh split, which itself depends on --mesh.
      shardcal::check_same_spec(world, "redistribute --from", from.hash(), from.serialize());
      shardcal::check_same_spec(world, "redistribute --to", to.hash(), to.serialize());
    }
    // Hostnames only matter to the cost planner (and need an all-gather, so only then).
    const int rph = planner->priced() && a.ranks_per_host == 0
                        ? planner->resolve_ranks_per_host(shardcal::discover_topology(world))
                        : a.ranks_per_host;
    // Each rank plans from its own --profile file: ranks given different files (or linked with
    // another libm) can choose different plans, which would hang or corrupt data. Planning errors
    // and the plan itself are agreed on before any data moves.
    std::string plan_error;
    sweep::PlannedTransition planned;
    try {
      planned = planner->plan(from, to, rph);
    } catch (const shardcal::Error& e) {
      plan_error = e.what();
    }
    if (planner->priced() && !a.no_check) {
      sweep::agree_on_input(world, plan_error);
      std::string steps;
      for (const shardcal::Step& s : planned.plan.steps)
        steps += (steps.empty() ? "" : ", ") + sweep::step_short(s);
      sweep::check_same_plans(world, "redistribute --profile",
                              planned.plan.to_string(), "plan [" + steps + "]");
    } else if (!plan_error.empty()) {
      throw shardcal::Error(plan_error);
    }
    const shardcal::Plan& plan = planned.plan;
    shardcal::MeshCommunicator mc(mesh, world);
    if (a.root < 0 || a.root >= world.size())
      throw shardcal::Error("--root " + std::to_string(a.root) + " outside the world of " +
                            std::to_string(world.size()) + " ranks");
    // Only the root holds the global tensor (a simulated world shares one process's memory).
    const std::vector<std::byte> global =
        world.rank() == a.root ? make_reference_tensor(meta) : std::vector<std::byte>{};
    // Scatter from the root: the other ranks pass only the root id and receive spec + data.
    shardcal::ShardedTensor t = shardcal::ShardedTensor::scatter_from_root(
        mc, a.root, world.rank() == a.root ? &from : nullptr,
        world.rank() == a.root ? global.data() : nullptr);
    shardcal::ShardedTensor out = shardcal::execute_plan(mc, plan, std::move(t));
    const std::vector<std::byte> local = out.local_to_host();
    if (a.dump) {
      const shardcal::Box box = out.local_box();
      nlohmann::ordered_json line = {{"rank", world.rank()},
                             {"coord", mesh.coord(world.rank())},
                             {"local_shape", box.shape},
                             {"offset", box.offset},
                             {"values", values_json(meta.dtype, local)}};
      const std::vector<std::string> lines = shardcal::gather_strings(world, line.dump(), 0);
      for (const std::string& l : lines) std::cout << l << "\n";
      std::cout.flush();
      return;
    }
    const std::vector<std::byte> want = shardcal::expected_reference_local(to, world.rank());
    std::uint64_t wrong = 0;
    const std::size_t es = shardcal::dtype_size(meta.dtype);
    if (want.size() != local.size()) wrong = std::max(want.size(), local.size()) / es;
    else
      for (std::size_t i = 0; i < want.size() / es; ++i)
        if (shardcal::load_as_double(meta.dtype, want.data() + i * es) !=
            shardcal::load_as_double(meta.dtype, local.data() + i * es))
          ++wrong;
    const std::vector<std::uint64_t> all = world.all_gather_u64(wrong);
    std::uint64_t total = 0;
    std::string bad_ranks;
    for (std::size_t r = 0; r < all.size(); ++r) {
      total += all[r];
      if (all[r]) bad_ranks += (bad_ranks.empty() ? "" : ",") + std::to_string(r);
    }
    if (world.rank() == 0) {
      std::cout << (total == 0 ? "OK" : "WRONG") << ": " << a.from << " -> " << a.to << " on mesh "
                << mesh.to_string() << " (" << world.backend() << ", " << world.size()
                << " ranks), tensor [" << a.shape << "] " << a.dtype << ": " << total
                << " wrong element(s)" << (bad_ranks.empty() ? "" : " on ranks " + bad_ranks)
                << "\nplan: " << plan.to_string() << "\n" << planner_line(planned, rph) << "\n";
      exit_code = total == 0 ? 0 : 1;
    }
  });
  return exit_code;
}

}  // namespace

Runner add_redistribute_command(CLI::App& app) {
  auto args = std::make_shared<RedistributeArgs>();
  auto* cmd = app.add_subcommand(
      "redistribute",
      "Distribute a reference tensor (element = row-major index mod 251) by --from, redistribute it\n"
      "to --to and verify every rank's block (exit 0 only when correct), or print the blocks with\n"
      "--dump. Partial placements hold the values on mesh coordinate 0 and zeros elsewhere for\n"
      "P(sum), the values on every coordinate for P(avg|max|min).\n"
      "Example: shardbench redistribute --backend sim --mesh 2x4 --shape 10x7 --dtype f32 \\\n"
      "           --from \"S(0)[3,7],S(1)\" --to \"R,S(0)\" --dump");
  args->backend.add_to(*cmd);
  cmd->add_option("--mesh", args->mesh, "Device mesh shape, e.g. 8, 2x4, 2x2x2 (extents multiply to the world size)")
      ->required();
  cmd->add_option("--shape", args->shape, "Global tensor shape, e.g. 10x7 (extents may be 0)")->required();
  cmd->add_option("--dtype", args->dtype, "Element type: f32 f64 f16 bf16 i32 i64 u8")->capture_default_str();
  cmd->add_option("--from", args->from,
                  "Source placements, one per mesh dim: S(d), S(d)[sizes], R, P, P(sum|avg|max|min)")
      ->required();
  cmd->add_option("--to", args->to, "Target placements, same syntax as --from")->required();
  cmd->add_flag("--dump", args->dump,
                "Print one JSON object per rank per line: "
                "{\"rank\",\"coord\",\"local_shape\",\"offset\",\"values\"} (values row-major)");
  cmd->add_flag("--plan", args->plan_only, "Only print the plan (steps, collectives, bytes); no communication");
  cmd->add_flag(
      "--no-check", args->no_check,
      "Skip the cross-rank check that every rank was given the same mesh, shape, dtype and "
      "placements, and with --profile chose the same plan (hash all-gathers; on by default)");
  cmd->add_option("--profile", args->profile,
                  "Plan with the cost-based planner (cheapest plan under this calibrated profile, "
                  "e.g. configs/profiles/dtensor-default.json) instead of the greedy rule-based one");
  cmd->add_option("--ranks-per-host", args->ranks_per_host,
                  "With --profile: ranks per host the planner assumes (hosts = blocks of consecutive "
                  "ranks); default from the ranks' hostnames (SHARDCAL_HOSTNAME), with --plan all "
                  "ranks on one host")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--root", args->root, "Rank that holds the global tensor and scatters it")->capture_default_str();
  return [args]() { return run(*args); };
}

}  // namespace shardbench

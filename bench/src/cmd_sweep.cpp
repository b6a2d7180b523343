// `shardbench sweep`: benchmark collectives along mesh dims and placement transitions over a
// configured grid of meshes, sizes, dtypes and shard distributions.
#include <string>
#include <utility>
#include <iostream>

#include "commands.hpp"
#include "profile_planner.hpp"
#include "shardcal/error.hpp"
#include "sweep/config.hpp"
#include "sweep/provenance.hpp"
#include "sweep/sweep.hpp"

namespace shardbench {

namespace {
struct SweepCli {
  BackendOptions backend;
  std::string config = "configs/local.json";
  std::string out;
  std::string resume;
  bool resume_anyway = false;
  bool quiet = false;
  bool check_only = false;
  std::string profile;     // overrides the config's "profile"
  int ranks_per_host = 0;  // 0 = from the hostnames
  std::string shard;  // "I/N"
};

// "I/N" -> {I, N}; {-1, 0} when malformed (reported as an input error on every rank).
std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) return {-1, 0};
  try {
    std::size_t a = 0, b = 0;
    const int i = std::stoi(text.substr(0, slash), &a);
    const int n = std::stoi(text.substr(slash + 1), &b);
    if (a != slash || b != text.size() - slash - 1 || n < 1 || i < 0 || i >= n) return {-1, 0};
    return {i, n};
  } catch (const std::exception&) {
    return {-1, 0};
  }
}
}  // namespace

Runner add_sweep_command(CLI::App& app) {
  auto opts = std::make_shared<SweepCli>();
  auto* cmd = app.add_subcommand(
      "sweep",
      "Benchmark sweep: collectives along each mesh dim (even and uneven shards) and placement\n"
      "transitions, over meshes x sizes x dtypes x distributions; writes JSON Lines.\n"
      "Config format: docs/RESULTS_FORMAT.md (section \"Sweep config\"), schema\n"
      "configs/schema/sweep.schema.json, examples configs/local.json (quick, 4 ranks) and\n"
      "configs/cluster.json (thorough). Results format: docs/RESULTS_FORMAT.md and\n"
      "configs/schema/results.schema.json.\n"
      "Examples:\n"
      "  mpirun -np 4 shardbench sweep --backend mpi --config configs/local.json --out r.jsonl\n"
      "  shardbench sweep --backend sim --world 8 --config configs/local.json --out r.jsonl\n"
      "  shardbench sweep --backend mpi --config configs/local.json --resume r.jsonl\n"
      "  shardbench sweep --backend sim --world 4 --config configs/local.json --out r.jsonl \\\n"
      "      --profile configs/profiles/dtensor-default.json   (cost-based transition plans)\n"
      "Exit codes: 0 done, 1 wrong results, 2 bad input, 130/143 stopped by SIGINT/SIGTERM\n"
      "(the file stays valid; finish it with --resume), 70 internal error (a bug).");
  opts->backend.add_to(*cmd);
  cmd->add_option("--config", opts->config, "Sweep config (JSON)")->capture_default_str();
  cmd->add_option("--out", opts->out, "Results file (JSON Lines), replaced if it exists");
  cmd->add_option("--resume", opts->resume,
                  "Complete an interrupted results file: same config, backend and world (and build "
                  "and hosts, unless --resume-anyway); points already in it are skipped, a torn "
                  "last line is dropped");
  cmd->add_flag("--resume-anyway", opts->resume_anyway,
                "With --resume: continue even if the file was measured by another build (git "
                "revision, shardcal or library versions) or on other hosts; a new context record "
                "is appended and the new points belong to it");
  cmd->add_option("--profile", opts->profile,
                  "Plan transitions with the cost-based planner priced by this calibrated profile "
                  "(overrides the config's \"profile\"); without either, the greedy planner. The "
                  "planner and profile (path, cluster, sha256) are recorded per point and are part "
                  "of its key");
  cmd->add_option("--ranks-per-host", opts->ranks_per_host,
                  "With a profile: ranks per host the planner assumes (hosts = blocks of consecutive "
                  "ranks); default from the ranks' hostnames (SHARDCAL_HOSTNAME)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--quiet,-q", opts->quiet, "No progress output on stderr");
  cmd->add_option("--shard", opts->shard,
                  "I/N: run only the config's points whose index % N == I (0 <= I < N), e.g. one "
                  "Slurm array task each (scripts/slurm/calibrate-array.sbatch); the N files "
                  "together hold every point once");
  cmd->add_flag("--validate-only", opts->check_only,
                "Check the config (for --world ranks, or the launcher's) and print the number of "
                "points; no communication, no file");
  return [opts]() -> int {
    namespace sw = sweep;
    sw::SweepJob job;
    job.config_path = opts->config;
    job.resume = !opts->resume.empty();
    job.resume_anyway = opts->resume_anyway;
    job.out_path = job.resume ? opts->resume : opts->out;
    job.quiet = opts->quiet;
    const auto [shard_i, shard_n] = opts->shard.empty() ? std::pair<int, int>{0, 1} : parse_shard(opts->shard);
    job.command_line = sw::process_command_line();
    job.library_versions = shardcal::library_versions();
    // Problems with the options themselves. Under MPI every rank has its own command line, so
    // these are input errors the ranks agree on (below), not something to throw before launch.
    std::string arg_error;
    if (opts->out.empty() && opts->resume.empty() && !opts->check_only)
      arg_error = "sweep needs --out FILE (new results) or --resume FILE (complete one)";
    else if (!opts->out.empty() && !opts->resume.empty() && opts->out != opts->resume)
      arg_error = "--out " + opts->out + " and --resume " + opts->resume +
                  " name different files; --resume appends to its file, drop --out";
    else if (opts->resume_anyway && opts->resume.empty())
      arg_error = "--resume-anyway only applies to --resume FILE";
    else if (shard_n == 0)
      arg_error = "--shard " + opts->shard + ": expected I/N with integers 0 <= I < N (e.g. 0/4)";
    job.shard_index = shard_n == 0 ? 0 : shard_i;
    job.shard_count = shard_n == 0 ? 1 : shard_n;
    const bool sim = opts->backend.backend == "sim";
    if (opts->check_only && sim) {  // no ranks needed to count points
      if (!arg_error.empty()) throw shardcal::Error(arg_error);
      if (opts->backend.world < 1) throw shardcal::Error("--validate-only with sim needs --world N");
      const sw::SweepConfig cfg = sw::load_config(opts->config);
      const auto pts = sw::expand_points(cfg, opts->backend.world);
      if (!opts->profile.empty() || !cfg.profile.empty())  // the profile must be readable too
        (void)make_cost_planner(!opts->profile.empty() ? opts->profile : cfg.profile,
                                !opts->profile.empty() ? "--profile" : opts->config + ": /profile",
                                opts->ranks_per_host);
      std::cout << opts->config << ": ok, " << pts.size() << " points for " << opts->backend.world
                << " ranks\n";
      return 0;
    }
    // What every rank must agree on besides the config: the mode of the run.
    const std::string mode = (job.shard_count > 1 ? "--shard " + opts->shard + " " : std::string()) +
                             (opts->check_only ? "--validate-only"
                             : job.resume     ? (job.resume_anyway ? "--resume --resume-anyway"
                                                                   : "--resume")
                                              : "--out");
    return launch_ranks(opts->backend, [&](shardcal::Communicator& world) -> int {
      // Every rank loads and validates the config itself (MPI ranks share nothing). Ranks may
      // still have been given different input (MPMD launches, a config edited while the job
      // starts, a file missing on one node): they agree on input errors and on the config
      // collectively, so every rank fails with the same message, or all proceed.
      sw::SweepJob mine = job;
      std::string error = arg_error;
      std::size_t n = 0;
      if (error.empty()) {
        try {
          mine.config = sw::load_config(opts->config);
          n = sw::expand_points(mine.config, world.size()).size();
          const std::string prof = !opts->profile.empty() ? opts->profile : mine.config.profile;
          if (!prof.empty())
            mine.planner = make_cost_planner(
                prof, !opts->profile.empty() ? "--profile" : opts->config + ": /profile",
                opts->ranks_per_host);
          else if (opts->ranks_per_host > 0)
            error = "--ranks-per-host only applies with --profile (or a config \"profile\")";
        } catch (const std::exception& e) {
          error = e.what();
        }
      }
      sw::agree_on_input(world, error);
      const std::string planned =
          mode + ", planner " + mine.planner->describe(opts->ranks_per_host).dump();
      sw::check_same_job(world, mine.config.hash(), planned,
                         "config " + opts->config + " (hash " + mine.config.hash() + "), " +
                             planned);
      if (opts->check_only) {
        // A window start's clock: the real run (run_sweep_rank) would refuse the same config.
        if (mine.config.window_start)
          sw::check_start_clock(world, mine.config, shardcal::discover_topology(world));
        if (world.rank() == 0)
          std::cout << opts->config << ": ok, " << n << " points for " << world.size()
                    << " ranks\n";
        return 0;
      }
      return sw::run_sweep_rank(world, mine);  // the same on every rank
    });
  };
}

}  // namespace shardbench

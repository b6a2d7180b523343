// `shardbench sweep`: benchmark collectives along mesh dims and placement transitions over a
// configured grid of meshes, sizes, dtypes and shard distributions (issue 4).
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "shardcal/error.hpp"
#include "sweep/config.hpp"
#include "sweep/results.hpp"
#include "sweep/signals.hpp"
#include "sweep/sweep.hpp"

namespace shardbench {

namespace {
struct SweepCli {
  BackendOptions backend;
  std::string config = "configs/local.json";
  std::string out;
  std::string resume;
  bool quiet = false;
  bool check_only = false;
};
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
      "Exit codes: 0 done, 1 wrong results, 2 bad input, 130/143 stopped by SIGINT/SIGTERM\n"
      "(the file stays valid; finish it with --resume).");
  opts->backend.add_to(*cmd);
  cmd->add_option("--config", opts->config, "Sweep config (JSON)")->capture_default_str();
  cmd->add_option("--out", opts->out, "Results file (JSON Lines), replaced if it exists");
  cmd->add_option("--resume", opts->resume,
                  "Complete an interrupted results file: same config, backend and world; points "
                  "already in it are skipped, a torn last line is dropped");
  cmd->add_flag("--quiet,-q", opts->quiet, "No progress output on stderr");
  cmd->add_flag("--validate-only", opts->check_only,
                "Check the config (for --world ranks, or the launcher's) and print the number of "
                "points; no communication, no file");
  return [opts]() -> int {
    namespace sw = sweep;
    if (opts->out.empty() && opts->resume.empty() && !opts->check_only)
      throw shardcal::Error("sweep needs --out FILE (new results) or --resume FILE (complete one)");
    if (!opts->out.empty() && !opts->resume.empty() && opts->out != opts->resume)
      throw shardcal::Error("--out " + opts->out + " and --resume " + opts->resume +
                            " name different files; --resume appends to its file, drop --out");
    sw::SweepJob job;
    job.config_path = opts->config;
    job.resume = !opts->resume.empty();
    job.out_path = job.resume ? opts->resume : opts->out;
    job.quiet = opts->quiet;
    job.command_line = sw::process_command_line();
    job.library_versions = shardcal::library_versions();
    const bool sim = opts->backend.backend == "sim";
    if (opts->check_only && sim) {  // no ranks needed to count points
      if (opts->backend.world < 1) throw shardcal::Error("--validate-only with sim needs --world N");
      const auto pts = sw::expand_points(sw::load_config(opts->config), opts->backend.world);
      std::cout << opts->config << ": ok, " << pts.size() << " points for " << opts->backend.world
                << " ranks\n";
      return 0;
    }
    std::atomic<int> code{0};
    sw::install_stop_handlers();
    try {
      shardcal::launch(opts->backend.launch_options(), [&](shardcal::Communicator& world) {
        // Every rank loads and validates the config itself (MPI ranks share nothing), so a bad
        // input is reported by every rank, from inside the job, before any communication.
        try {
          sw::SweepJob mine = job;
          try {
            mine.config = sw::load_config(opts->config);
          } catch (const shardcal::Error& e) {
            throw sw::InputError(e.what());
          }
          if (!mine.out_path.empty() && !mine.resume) {
            const auto dir = std::filesystem::path(mine.out_path).parent_path();
            if (!dir.empty() && !std::filesystem::is_directory(dir))
              throw sw::InputError("--out " + mine.out_path + ": directory " + dir.string() +
                                   " does not exist; create it first");
          }
          if (opts->check_only) {
            std::size_t n = 0;
            try {
              n = sw::expand_points(mine.config, world.size()).size();
            } catch (const shardcal::Error& e) {
              throw sw::InputError(e.what());
            }
            if (world.rank() == 0)
              std::cout << opts->config << ": ok, " << n << " points for " << world.size()
                        << " ranks\n";
            return;
          }
          code = sw::run_sweep_rank(world, mine);  // the same on every rank
        } catch (const sw::InputError& e) {
          // Input errors are identical on every rank: report them here, on each rank (once for
          // the in-process simulator), in one write so lines from several ranks do not mix.
          // Anything else (a failing collective) propagates to launch(), which handles peers.
          if (!sim || world.rank() == 0) {
            const std::string line = std::string("shardbench: error: ") + e.what() + "\n";
            std::fwrite(line.data(), 1, line.size(), stderr);
            std::fflush(stderr);
          }
          code = 2;
        }
      });
    } catch (...) {
      sw::restore_stop_handlers();
      throw;
    }
    sw::restore_stop_handlers();
    return code.load();
  };
}

}  // namespace shardbench

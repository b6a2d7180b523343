// shardbench: measure, check and plan sharded-tensor collectives. Subcommands live in cmd_*.cpp.
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <vector>

#include "commands.hpp"
#include "shardcal/error.hpp"

namespace shardbench {

void BackendOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--backend", backend,
                 "Communication backend: sim (ranks as threads in this process), mpi (run under "
                 "mpirun/srun), nccl (CUDA devices, run under mpirun/srun)")
      ->capture_default_str();
  cmd.add_option("--world", world,
                 "Number of ranks. sim: defaults to the mesh size; mpi/nccl: optional, must match the "
                 "launcher's -np when given")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--timeout", timeout_s,
                 "Seconds a rank waits in one operation before the job fails with an error naming "
                 "the rank that did not arrive (no hangs)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

}  // namespace shardbench

namespace {
constexpr int kInternalErrorExit = 70;
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "shardbench: sharded-tensor collectives and redistributions on N-d device meshes.\n"
      "Placements (one per mesh dim, comma separated): S(d) shard tensor dim d (torch.chunk sizes),\n"
      "S(d)[3,3,2,0] explicit shard sizes per mesh coordinate, R replicate, P / P(sum|avg|max|min)\n"
      "partial. Example: --mesh 2x4 --from \"S(0)[3,7],S(1)\" --to \"R,S(0)\"."};
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, shardbench::Runner>> runners;
  auto add = [&](shardbench::Runner (*f)(CLI::App&)) {
    const std::size_t before = app.get_subcommands({}).size();
    shardbench::Runner r = f(app);
    runners.emplace_back(app.get_subcommands({}).at(before), std::move(r));
  };
  add(shardbench::add_redistribute_command);
  add(shardbench::add_info_command);
  add(shardbench::add_sweep_command);
  add(shardbench::add_calibrate_command);
  add(shardbench::add_predict_command);
  add(shardbench::add_plan_command);
  add(shardbench::add_validate_command);
  add(shardbench::add_gate_command);
  add(shardbench::add_import_command);
  add(shardbench::add_check_command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help / --version exit 0; a bad command line is bad input: exit 2 like every other input
    // error (CLI11's own codes, e.g. 106 for a missing option, would collide with nothing we
    // document; `shardbench gate` promises 2 for bad input to CI scripts).
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    // Test hook (docs/DEVELOPING.md): an internal error on purpose, to check its exit code.
    if (const char* t = std::getenv("SHARDCAL_TEST_INTERNAL_ERROR"); t != nullptr && *t != '\0')
      throw std::logic_error("SHARDCAL_TEST_INTERNAL_ERROR is set");
    for (auto& [cmd, run] : runners)
      if (cmd->parsed()) return run();
  } catch (const shardcal::Error& e) {
    // One write per message, so lines of several MPI ranks sharing a terminal do not interleave.
    std::cerr << ("shardbench: error: " + std::string(e.what()) + "\n") << std::flush;
    return 2;
  } catch (const std::exception& e) {
    // A bug, not a result: 70 (EX_SOFTWARE, sysexits.h), a code no command uses for a verdict
    // (gate's 3 means inconclusive; a crash must not read as a soft result in CI).
    std::cerr << ("shardbench: internal error (a bug; please report it with the inputs): " +
                  std::string(e.what()) + "\n")
              << std::flush;
    return kInternalErrorExit;
  }
  return 0;
}

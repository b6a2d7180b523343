// The launch shared by the measuring subcommands (sweep, validate): stop handlers for the whole
// run, and input errors the ranks agreed on reported as exit code 2.
#include <atomic>
#include <cstdio>
#include <string>

#include "commands.hpp"
#include "sweep/signals.hpp"
#include "sweep/sweep.hpp"

namespace shardbench {

int launch_ranks(const BackendOptions& backend,
                 const std::function<int(shardcal::Communicator&)>& rank) {
  namespace sw = sweep;
  const bool sim = backend.backend == "sim";
  std::atomic<int> code{0};
  sw::install_stop_handlers();
  try {
    shardcal::launch(backend.launch_options(), [&](shardcal::Communicator& world) {
      try {
        code = rank(world);
      } catch (const sw::InputError& e) {
        // The ranks agreed on this error, so it is the same on every rank: report it on each
        // (once for the in-process simulator), in one write so lines from several ranks do not
        // mix, and return normally. Anything else (a failing collective) propagates to
        // launch(), which handles peers.
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
}

}  // namespace shardbench

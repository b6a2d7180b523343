#pragma once
// The sweep driver: runs on every rank (inside shardcal::launch) and ties config, runner,
// results file and progress together. Protocol, in order:
//   1. expand the config for this world (pure; a bad config throws the same Error on every rank
//      before any communication, and no file is touched);
//   2. rank 0 creates the results file, or reads it for --resume, and broadcasts "ok + points
//      already done" or the error text, so every rank fails or proceeds together;
//   3. points run in order; before each, the ranks agree whether any got SIGINT/SIGTERM.
#include <string>
#include <utility>
#include <vector>

#include "shardcal/communicator.hpp"
#include "shardcal/error.hpp"
#include "sweep/config.hpp"

namespace shardbench::sweep {

// A bad config, world mismatch or unusable results file: raised identically on every rank, before
// any point runs, so the caller can report it on every rank and exit without a peer failure.
class InputError : public shardcal::Error {
 public:
  explicit InputError(const std::string& what) : shardcal::Error(what) {}
};

struct SweepJob {
  SweepConfig config;  // loaded by the caller (load_config) on every rank
  std::string config_path;
  std::string out_path;
  bool resume = false;  // out_path exists and is completed, not replaced
  bool quiet = false;   // no progress output
  int progress_tty = -1;  // -1: isatty(stderr)
  std::string command_line;
  std::vector<std::pair<std::string, std::string>> library_versions;
};

// Exit code, identical on every rank: 0 all points done and correct, 1 some point had wrong
// elements, 128+signal when stopped by SIGINT/SIGTERM (the file stays valid for --resume).
int run_sweep_rank(shardcal::Communicator& world, const SweepJob& job);

}  // namespace shardbench::sweep

#pragma once
// The sweep driver: runs on every rank (inside shardcal::launch) and ties config, runner,
// results file and progress together. Protocol, in order:
//   0. (caller) every rank loads the config and reports its local input error, if any, to
//      agree_on_input; then check_same_job makes sure every rank loaded the same config and
//      mode: a rank with different input fails every rank with one message, never a hang;
//   1. expand the config for this world (pure; no file is touched before this succeeded);
//   2. rank 0 checks the output directory and creates the results file, or reads it for
//      --resume (comparing its context with this run's), and broadcasts "ok + points already
//      done" or the error text, so every rank fails or proceeds together;
//   3. points run in order; before each, the ranks agree whether any got SIGINT/SIGTERM.
#include <string>
#include <utility>
#include <vector>

#include "shardcal/communicator.hpp"
#include "shardcal/error.hpp"
#include "shardcal/topology.hpp"
#include "sweep/config.hpp"
#include "sweep/transition_planner.hpp"

namespace shardbench::sweep {

// A bad config, world mismatch or unusable results file: raised identically on every rank (the
// ranks agree on it collectively first), before any point runs, so the caller can report it on
// every rank and exit without a peer failure.
class InputError : public shardcal::Error {
 public:
  explicit InputError(const std::string& what) : shardcal::Error(what) {}
};

struct SweepJob {
  SweepConfig config;  // loaded by the caller (load_config) on every rank
  std::string config_path;
  std::string out_path;
  bool resume = false;  // out_path exists and is completed, not replaced
  // --resume-anyway: the file's context (hosts, library versions, git revision) may differ from
  // this run's; a new context record is appended and the new points belong to it.
  bool resume_anyway = false;
  // --shard I/N: run only the config's points with index % N == I (Slurm array tasks; the
  // shards' files together hold every point once). 0/1 = all points.
  int shard_index = 0;
  int shard_count = 1;
  bool quiet = false;   // no progress output
  int progress_tty = -1;  // -1: isatty(stderr)
  std::string command_line;
  std::vector<std::pair<std::string, std::string>> library_versions;
  // greedy unless --profile / config "profile"; shared, never null
  std::shared_ptr<const TransitionPlanner> planner = greedy_planner();
};

// Collective over world. Every rank passes its own input error ("" = none). Returns when no rank
// has one; otherwise throws the same InputError on every rank: the message itself when every
// rank failed alike, else which ranks failed with which message and which had no error.
void agree_on_input(shardcal::Communicator& world, const std::string& local_error);

// Collective over world: every rank must run the same job (config hash, mode such as --resume).
// `description` names it for the message. Throws the same InputError on every rank otherwise
// (shardcal::check_same_spec: which ranks hold which description).
void check_same_job(shardcal::Communicator& world, const std::string& config_hash,
                    const std::string& mode, const std::string& description);

// Collective over world, a no-op unless cfg.window_start: a window start needs a clock every
// rank shares (Communicator::start_clock_scope(): Global, or Host with every rank on one host
// and every reading taken before a barrier earlier than every one taken after it: SHARDCAL_HOSTNAME
// naming one host for ranks on several would not pass). Throws the same InputError on every rank
// otherwise. Called before a sweep, a --validate-only check and `validate` run anything.
void check_start_clock(shardcal::Communicator& world, const SweepConfig& cfg,
                       const shardcal::Topology& topo);

// Collective over world: every rank must execute the same plans. `plans_text` is this rank's
// plans (Plan::to_string of each, in order), hashed; `summary` a short description for the
// message (e.g. the steps of one plan, or "7 transition plans"). Plans made by each rank from
// its own --profile file (or with another libm) can differ even when the inputs agree, and
// different plans on different ranks hang or corrupt data. Throws the same InputError on every
// rank otherwise, naming which ranks hold which plans (shardcal::check_same_spec).
void check_same_plans(shardcal::Communicator& world, const std::string& what,
                      const std::string& plans_text, const std::string& summary);

// Exit code, identical on every rank: 0 all points done and correct, 1 some point had wrong
// elements, 128+signal when stopped by SIGINT/SIGTERM (the file stays valid for --resume).
int run_sweep_rank(shardcal::Communicator& world, const SweepJob& job);

}  // namespace shardbench::sweep

#pragma once
// The records of a sweep results file (docs/RESULTS_FORMAT.md) as types: the context record and
// the point record. `shardbench sweep` and `shardbench import` fill a ContextRecord and
// PointRecords; the to_json() overloads below are their one writer (ResultsFile::write appends
// the line); results_reader.hpp is its reader for the
// calibrator and the gate; formats/formats.json "results_point" lists its fields for the Python
// readers (reports/shardcal_report/load.py reads by that list), and the unit test ResultsRecord
// checks this writer against that list. Adding a field: docs/DEVELOPING.md "Adding a field to
// the results record".
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "shardcal/layout.hpp"
#include "shardcal/plan.hpp"

namespace shardcal::formats {

// One host of the run and the world ranks it holds, in rank order.
struct HostRecord {
  std::string name;
  std::vector<int> ranks;
};

// The context record (line 1 of a file; --resume-anyway and `import` of several logs append
// more): what was measured where, with what, by which build. n_hosts and ranks_per_host are
// written from `hosts`.
struct ContextRecord {
  std::string date;  // UTC, ISO 8601
  std::string command_line, config_path, config_hash;
  nlohmann::json config;  // the sweep config as given ({} for an import)
  std::string backend;
  int world = 0;
  std::string memory;  // "host" | "cuda"
  std::vector<HostRecord> hosts;
  std::map<std::string, std::string> library_versions, backend_settings;
  std::string shardcal_version, git_revision;
  std::optional<bool> git_dirty;  // null: unknown
  std::size_t points_total = 0;
  nlohmann::json planner;  // the sweep's transition planner (null: left out, import)
  std::string timing_method;
  // Left out when null: the Slurm step, the simulated platform, the --shard I/N part, and an
  // import's provenance (source log, tool, rows).
  nlohmann::json slurm, simulation, shard, import;
};

// Statistics over the slowest-rank samples of one point ("stats").
struct SampleStats {
  std::size_t n = 0;
  double min = 0, p10 = 0, p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0, stddev = 0;
  // Distribution-free confidence interval of the median (order statistics); `ci_coverage` is the
  // exact coverage achieved (>= the level asked for, or the best possible for small n).
  double ci_lo = 0, ci_hi = 0, ci_level = 0, ci_coverage = 0;
  double rel_ci_halfwidth() const { return p50 > 0 ? (ci_hi - ci_lo) / 2.0 / p50 : 0.0; }
  nlohmann::json to_json() const;
};

// Each rank's mean over its own samples, then the largest / mean / smallest across ranks (the
// OSU/IMB statistic; "stats.rank_means").
struct RankMeans {
  double max = 0, mean = 0, min = 0;
};

// How the samples were taken ("timing").
struct PointTiming {
  std::string mode;                // "per_iteration" | "pipelined"
  int ops_per_sample = 1;
  std::optional<int> warmup;       // null: the log did not say (import)
  int buffer_slots = 1;
  std::string barrier, timer, reduction, stop_reason;
  std::optional<double> elapsed_s;  // null: not measured here (import)
  // Window start only ("start" in the record): the largest window used, the late samples and
  // the samples run again (the start time reached a rank after it had passed).
  std::optional<double> start_window_us;
  std::optional<int> late_samples;
  std::optional<int> retried_samples;
};

// One step of a transition's plan ("transition.plan[i]"): where it runs, what it moves.
struct PlanStepRecord {
  int mesh_dim = 0;
  std::string collective;  // step_kind_name: "all_gather", "local_slice", ...
  std::string from, to;    // placements before and after the step
  StepTraffic traffic;     // describe_step(step)
  int hosts_spanned = 1;   // most hosts one group of the step spans
  std::optional<double> predicted_us;  // the cost planner's price of the step
};

// What a transition point measured ("transition").
struct TransitionRecord {
  std::string from, to;              // placements as run (distribution applied)
  std::string from_given, to_given;  // as configured
  Shape shape;
  std::vector<PlanStepRecord> plan;
  nlohmann::json planner;              // TransitionPlanner::describe
  std::optional<double> predicted_us;  // the cost planner's price of the plan
};

// One point record. Collective points fill the collective fields, transition points
// `transition`; the writer leaves out (or writes null for) what the kind does not have, as
// docs/RESULTS_FORMAT.md lists per kind.
struct PointRecord {
  std::size_t index = 0;  // the point's index in the config (or in the imported logs)
  std::string key;        // canonical JSON of `point`
  nlohmann::json point;   // the parameters that identify the point

  // Collective points.
  std::string collective, variant;   // "all_gather", "all_gatherv"
  std::optional<std::int64_t> root;  // rooted collectives
  std::vector<std::int64_t> counts;  // elements per group position
  std::int64_t bytes_eff = 0;        // n x the largest position's bytes
  double busbw_GBps = 0, busbw_factor = 0, algbw_eff_GBps = 0;
  // Transition points.
  std::optional<TransitionRecord> transition;

  // Both kinds.
  int group_size = 1, groups = 1, hosts_spanned = 1, max_ranks_per_host = 1;
  int elem_size = 1;
  std::int64_t bytes = 0;  // S of the collective table (transitions: the logical tensor)
  std::string bytes_convention;
  std::int64_t bytes_total = 0, bytes_max_rank = 0;
  SampleStats stats;
  std::optional<RankMeans> rank_means;
  double algbw_GBps = 0;
  PointTiming timing;
  std::vector<double> samples_s;
  std::optional<std::int64_t> wrong;  // wrong elements; null: not checked
  nlohmann::json import;              // imported points: the log rows they came from (else null)
};

// The records as the results file holds them (one JSON object each; ResultsFile::write adds the
// line).
nlohmann::json to_json(const ContextRecord& c);
nlohmann::json to_json(const PointRecord& r);

// One plan step's traffic fields ("call", "groups", "counts", ..., "max_out_bytes"), shared by
// the transition record and the validate file.
nlohmann::json step_traffic_json(const StepTraffic& t);

}  // namespace shardcal::formats

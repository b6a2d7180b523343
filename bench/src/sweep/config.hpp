#pragma once
// Sweep configuration: JSON parsing, full validation (errors name the file, the JSON pointer and
// a fix), and expansion into the ordered list of points for a given world size. Everything here
// is pure (no communication), so every rank validates identically before any collective runs.
// Format reference: docs/RESULTS_FORMAT.md ("Sweep config") and configs/schema/sweep.schema.json.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardcal/dtype.hpp"
#include "shardcal/layout.hpp"
#include "shardcal/collectives.hpp"
#include "sweep/distribution.hpp"

namespace shardbench {
// The collective table lives in core (planner, cost model and harness share it).
using shardcal::Collective;
using shardcal::CollectiveInfo;
using shardcal::collective_info;
using shardcal::find_collective;
using shardcal::kCollectives;
}  // namespace shardbench

namespace shardbench::sweep {

enum class Mode : unsigned char { PerIteration, Pipelined };
std::string_view mode_name(Mode m);  // "per_iteration" | "pipelined"

struct CollectiveSelection {
  Collective op;
  bool all_dims = true;
  std::vector<int> dims;  // when !all_dims
  std::string where;      // JSON pointer of the entry, for errors found at expansion
};

struct TransitionSelection {
  std::string mesh;  // "all" = every configured mesh
  bool all_single_dim = false;
  std::string from, to;  // explicit pair (when !all_single_dim)
  shardcal::Shape shape;  // fixed tensor shape (explicit shard sizes need one); empty = from sizes
  std::string where;
};

struct SweepConfig {
  std::string source;   // file name used in messages
  nlohmann::json json;  // the config as given (hashed into the results context)
  std::string text;     // its file text when read from one (error messages name lines)

  bool mesh_factorizations = false;
  int mesh_max_dims = 3;
  std::vector<std::string> meshes;  // explicit list (when !mesh_factorizations)

  std::vector<CollectiveSelection> collectives;
  std::vector<TransitionSelection> transitions;
  std::vector<std::int64_t> sizes;  // bytes of the logical tensor, ascending
  std::vector<shardcal::DType> dtypes{shardcal::DType::F32};
  std::vector<Distribution> distributions{Distribution{}};
  std::vector<Distribution> transition_distributions{Distribution{Distribution::Kind::Chunk}};
  std::vector<Mode> modes{Mode::PerIteration};

  int warmup = 5;
  int iterations_min = 10;
  int iterations_max = 1000;
  double time_budget_s = 1.0;   // per point, checked at the adaptive checkpoints
  double target_rel_ci = 0.02;  // stop once (ci_hi - ci_lo) / 2 / median <= this; 0 = never
  double confidence = 0.95;
  bool check = true;
  int pipeline_depth = 8;
  // How the ranks start each sample (docs/RESULTS_FORMAT.md "Starting a sample"): after an untimed world
  // barrier (the default), or at a time rank 0 sets start_window_us ahead on a clock every rank
  // shares (the window adapts: runner.cpp StartGate).
  bool window_start = false;
  double start_window_us = 100;
  std::int64_t rotation_bytes = 32 << 20;  // rotate buffer slots until this much is covered
  int rotation_max_slots = 1024;
  // Cost-based planning of transitions: a profile path ("" = the greedy planner);
  // relative paths are relative to the working directory, like --profile, which overrides it.
  std::string profile;

  std::string hash() const;  // FNV-1a 64 of the canonical JSON dump, 16 hex digits
};

// Throws shardcal::Error "<source>: <json pointer>: <what>; <fix>" on the first problem found.
SweepConfig parse_config(const nlohmann::json& j, const std::string& source);
SweepConfig parse_config_text(const std::string& text, const std::string& source);
SweepConfig load_config(const std::string& path);

// Element counts and byte conventions of one collective point (docs/RESULTS_FORMAT.md).
struct CollectiveShape {
  int n = 1;
  bool uniform = true;                // non-v form
  std::vector<std::int64_t> counts;   // elements per group position (n entries)
  std::int64_t elem = 1;              // bytes per element
  std::int64_t bytes = 0;             // S as the table counts it (algbw = bytes / t)
  std::int64_t bytes_total = 0;       // sum of all shards
  std::int64_t bytes_max_rank = 0;    // largest shard
  std::int64_t bytes_eff = 0;         // n x largest shard: what a ring is paced by
};
CollectiveShape collective_shape(Collective op, shardcal::DType t, std::int64_t size_bytes,
                                 const Distribution& d, int n);

// 2-D tensor shape used for transitions of a logical tensor of `size_bytes`: near-square.
shardcal::Shape transition_shape(std::int64_t size_bytes, shardcal::DType t);

// Version of the timed loop in runner.cpp (barrier, timer, ops per sample, reduction over ranks,
// check pass). Bump it whenever a change there can move a measured number: the value is part of
// every point's key, so --resume and comparisons never mix samples from two loops.
// 2: transitions reset their output to a sentinel (untimed) before every sample a stop decision
// follows, so the check sees the last timed run's output.
// 3: collective buffers start on a page (slots of a page or more on pages too), as OSU's.
inline constexpr int kTimingLoopVersion = 3;

// How a point is timed (docs/RESULTS_FORMAT.md); part of the point's identity.
struct Protocol {
  Mode mode = Mode::PerIteration;
  int ops_per_sample = 1;             // pipeline depth (1 in per-iteration mode)
  int warmup = 0;
  std::int64_t rotation_bytes = 0;    // buffer rotation target (collectives and transitions)
  int rotation_max_slots = 1;
  int timing_loop = kTimingLoopVersion;
  bool window_start = false;     // "start" in the key only when set: barrier keys are unchanged
  nlohmann::json to_json() const;
};

struct Point {
  std::size_t index = 0;
  bool transition = false;
  std::string mesh;  // "2x2": the key's and the labels' text of `device_mesh`
  shardcal::DeviceMesh device_mesh;  // parsed once at expansion
  shardcal::DType dtype = shardcal::DType::F32;
  Distribution dist;
  std::int64_t size = 0;  // configured logical bytes
  Mode mode = Mode::PerIteration;
  // Collective points.
  Collective op = Collective::AllGather;
  int mesh_dim = 0;
  Protocol protocol;  // filled by expand_points from the config
  // Transition points: placements as configured, canonical (parsed and reprinted: the key), and
  // as run (distribution applied).
  std::string from_given, to_given;
  std::string from_canonical, to_canonical;
  std::string from, to;
  shardcal::Shape shape;
  // Transition points: the layouts as run (mesh, placements of `from`/`to`, shape, dtype), parsed
  // and validated once at expansion; the planner and the timed run use these.
  shardcal::TensorSpec from_spec, to_spec;
  // Transition points: the planner's part of the key (TransitionPlanner::key; null = greedy,
  // left out of the key). Set by the driver once the planner and topology are known.
  nlohmann::json planner;

  // The parameters that identify the point; key() is their canonical JSON (sorted keys).
  nlohmann::json params() const;
  std::string key() const { return params().dump(); }
  std::string label() const;  // one-line human description for progress output
};

// All points for `world` ranks, in run order. Throws (with the JSON pointer) when a mesh does not
// match the world, a placement is invalid for a mesh, or a selection yields nothing.
std::vector<Point> expand_points(const SweepConfig& cfg, int world);
// Meshes the config selects for `world` (explicit list, or ordered factorisations).
std::vector<std::string> resolve_meshes(const SweepConfig& cfg, int world);

}  // namespace shardbench::sweep

#pragma once
// Reader of sweep results (JSON Lines, docs/RESULTS_FORMAT.md) for the calibrator and the gate:
// the points a fit needs, the context records they came from, and the sha256 of every file
// (provenance). The writer is results_writer.hpp; both take the format from schemas.hpp.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardcal/collectives.hpp"
#include "shardcal/dtype.hpp"

namespace shardcal::formats {

// One timed collective along one mesh dim.
struct CollectivePoint {
  std::string where;         // "file:line", for messages
  std::string key;           // the record's point key (docs/RESULTS_FORMAT.md "point keys")
  std::string label;         // "all_gather mesh=4 dim=0 f32 even per_iteration 1048576 B"
  Collective op = Collective::AllGather;
  DType dtype = DType::F32;
  std::string distribution;  // "even", "zipf(1.2)", ...
  std::string mode;          // "per_iteration" | "pipelined"
  std::string mesh;          // the measured mesh ("2x4"; leave-one-mesh-out)
  int group_size = 1;        // n
  int groups = 1;            // groups of this mesh dim in the world
  int hosts_spanned = 1;
  int max_ranks_per_host = 1;
  int n_hosts = 1;           // hosts of the world (from the context record)
  int concurrent_groups = 1; // groups with ranks on one host (link_class.hpp)
  int elem_size = 1;
  std::vector<std::int64_t> counts;
  double bytes = 0;          // S of the collective table
  double bytes_total = 0;    // all positions' bytes
  double bytes_eff = 0;      // n x the largest position's bytes
  bool uneven = false;       // counts differ between positions (v-form call)
  std::vector<double> samples_s;
  double median_s = 0;       // median of the slowest-rank samples
};

// One step of a transition's plan (local steps cost nothing and are kept for the count).
struct TransitionStep {
  std::optional<Collective> op;  // none: local step
  std::string kind;              // as recorded ("all_gather", "local_slice", ...)
  int mesh_dim = 0;
  int group_size = 1;
  int hosts_spanned = 1;
  int concurrent_groups = 1;
  double bytes = 0;
  // The heaviest group's counts (elements per position; all_to_all the m x m send matrix),
  // whether every group's counts are even, and the element size: predict() turns them into
  // S_eff with the model's effective-size rule. Empty for local steps.
  std::vector<std::int64_t> counts;
  bool uniform = true;
  int elem_size = 1;
  // Bytes the busiest rank packs + unpacks around the collective (StepTraffic::max_copy_bytes);
  // 0 when the file predates the field.
  double copy_bytes = 0;
  // Bytes the busiest rank writes to its output (StepTraffic::max_out_bytes): what a local step
  // copies. 0 when the file predates the field.
  double out_bytes = 0;
};

struct TransitionPoint {
  std::string where;
  std::string key;    // the record's point key
  std::vector<double> samples_s;
  std::string label;  // "mesh 2x2 S(0),R -> R,R f32 65536 B chunk"
  DType dtype = DType::F32;
  std::string mode;
  std::vector<TransitionStep> steps;
  double median_s = 0;
};

struct ResultsFileInfo {
  std::string path;
  std::string sha256;                    // hex, of the file's bytes
  std::vector<nlohmann::json> contexts;  // the file's context records (selected fields)
  std::vector<nlohmann::json> context_records;  // the same records in full (gate: environment)
  std::vector<nlohmann::json> warnings;  // the file's "warning" records (a sweep's floor check)
};

// A point record the reader left out (wrong > 0, or no usable samples), for tools that must
// list every point (`shardbench gate`).
struct SkippedPoint {
  std::string where;
  std::string key;
  std::string reason;  // "wrong = 3" | "no samples or a non-positive sample"
};

struct ResultSet {
  std::string backend;  // one for all files ("mpi", "sim", "nccl")
  std::string memory;   // "host" | "cuda"
  std::vector<ResultsFileInfo> files;
  std::vector<CollectivePoint> collectives;
  std::vector<TransitionPoint> transitions;
  int point_records = 0;   // all point records read
  int skipped_wrong = 0;   // wrong > 0: excluded
  int skipped_failed = 0;  // no samples, or a non-positive / non-finite median
  std::vector<SkippedPoint> skipped;  // the points counted in skipped_wrong / skipped_failed
};

// Reads every file; throws shardcal::Error (file:line, what, how to fix) for unreadable or
// malformed files, context records of another schema or format version (v1 is refused: its
// transition step bytes are wrong), files with no context record, and backends or memory spaces
// that differ between context records (one profile describes one backend on one memory space).
ResultSet read_results(const std::vector<std::string>& paths);

}  // namespace shardcal::formats

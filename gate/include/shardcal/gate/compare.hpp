#pragma once
// The regression gate (docs/GATE.md): read two runs (sweep results or Google Benchmark JSON),
// compare their environments, match points by key, give each a verdict, compare calibrated
// profiles model by model, and render the report (JSON schema "shardcal.gate" v1, Markdown).
// `shardbench gate` (bench/src/cmd_gate.cpp) is a thin shell over this.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shardcal/calibrate/profile.hpp"

namespace shardcal::gate {

// One point of a run: its identity and its per-iteration (or per-repetition) times, seconds.
struct Series {
  std::string key;    // sweep: the record's key; Google Benchmark: run_name
  std::string label;  // short human text
  std::vector<double> samples_s;
  // Pooled runs (several files on one side): how many of samples_s came from each run, in order.
  // Empty = one run. The bootstrap resamples runs, then samples within them (stats.hpp).
  std::vector<std::size_t> run_sizes = {};
};

struct Skipped {
  std::string key;
  std::string reason;
  bool wrong = false;  // sweep: the point's result was wrong (wrong > 0)
};

struct RunData {
  std::string path;    // pooled runs: the paths joined with " + "
  int runs = 1;        // files pooled into this one
  std::string format;  // "shardcal.sweep.results" | "google-benchmark"
  std::string sha256;
  // Environment fingerprint, field -> value (a JSON array of the distinct values when a file's
  // context records disagree). Sweep: backend, memory, world, n_hosts, ranks_per_host,
  // library_versions.<lib>, backend_settings.<name>. Google Benchmark: library_build_type,
  // num_cpus, library_version.
  nlohmann::json env = nlohmann::json::object();
  std::vector<Series> points;
  std::vector<Skipped> skipped;  // points without usable samples (sweep: wrong > 0, failed)
};

// Reads a sweep results file (JSON Lines, through calibrate's reader) or a Google Benchmark JSON
// file (an object with "context" and "benchmarks": the samples of a benchmark are the real_time
// of its non-aggregate entries, one per repetition). Throws Error (file, what, fix) on a missing,
// empty or malformed file, a duplicate key, or a file with no points.
RunData read_run(const std::string& path);

// Several runs of one side (e.g. baseline runs interleaved in time with candidate runs) pooled
// into one: the samples of a key are concatenated over the runs, so drift between runs becomes
// spread within the side (wider CIs, bimodal samples) instead of a false difference. All runs
// must be of one format with equal environment fingerprints (Error naming the field otherwise)
// and distinct files (the same sha256 twice on one side would count its samples twice: Error).
// `side` ("baseline" / "candidate") is for messages. One run is returned unchanged.
RunData pool_runs(const std::vector<RunData>& runs, const std::string& side);

struct Options {
  double alpha = 0.01;         // significance after FDR control; CI level is 1 - alpha
  double max_slowdown = 0.05;  // a regression's ratio CI must lie above 1 + max_slowdown
  std::string fdr = "benjamini-hochberg";  // or "holm"
  int min_samples = 10;                    // fewer on either side: inconclusive
  int resamples = 2000;                    // bootstrap resamples per point
  std::uint64_t seed = 20261123;           // bootstrap seed (xor the key's FNV-1a hash per point)
  bool allow_env_change = false;
  // Baseline points without usable candidate samples (only in the baseline, or skipped in the
  // candidate) make the run inconclusive unless this is set (then they are listed and flagged).
  bool allow_missing = false;
};

struct EnvDifference {
  std::string field;
  nlohmann::json baseline, candidate;  // null on the side that lacks the field
  // A Google Benchmark context key that older releases do not write, present on one side only:
  // listed, but not a reason to refuse the comparison.
  bool tolerated = false;
};

struct PointResult {
  std::string key, label;
  double baseline_median_us = 0, candidate_median_us = 0;
  double ratio = 1, ci_lo = 1, ci_hi = 1;  // candidate / baseline median, bootstrap CI
  double p = 1, q = 1;                     // Mann-Whitney p, FDR-adjusted q
  std::string p_method;                    // "exact" | "asymptotic"
  std::size_t n_baseline = 0, n_candidate = 0;
  std::string verdict;  // pass | regression | improvement | inconclusive
  std::string reason;
};

struct ModelResult {
  std::string collective, link;  // link: "hosts=1 concurrent_groups=2 dtype=pooled"
  int segment = -1;
  std::string param;  // bandwidth_GBps | alpha_us | segments | time_us (a priced time)
  // time_us rows: the link class and size of the row's numbers ("n=8 c=1 S_eff=1048576"; the
  // row stands for all the class's sizes: its worst); empty for the other rows.
  std::string at;
  double baseline = 0, candidate = 0, ratio = 1, ci_lo = 1, ci_hi = 1;
  std::string verdict;  // pass | regression | improvement | inconclusive
  std::string reason;
};

struct Report {
  Options options;
  std::string verdict;              // pass | regression | inconclusive | incomparable
  int exit_code = 0;                // 0 | 1 | 3 | 2
  std::string incomparable_reason;  // set when verdict == incomparable
  std::string baseline_path, candidate_path, baseline_sha256, candidate_sha256, format;
  int baseline_runs = 1, candidate_runs = 1;  // files pooled per side
  std::vector<EnvDifference> env_differences;
  std::vector<PointResult> points;  // worst first (largest ratio)
  std::vector<std::string> only_baseline, only_candidate;
  std::vector<Skipped> skipped_baseline, skipped_candidate;
  // Lost coverage: baseline points the candidate has no usable samples for (only in the
  // baseline, or skipped in the candidate), and candidate points with wrong results (a
  // regression whatever --allow-missing says).
  std::vector<std::string> missing_in_candidate, wrong_results;
  std::vector<std::string> warnings;  // e.g. the baseline and candidate are the same file
  std::vector<ModelResult> models;
  std::optional<std::string> baseline_profile, candidate_profile;
};

std::vector<EnvDifference> compare_env(const RunData& baseline, const RunData& candidate);

// The verdict of one point from its statistics (docs/GATE.md "Verdicts").
PointResult judge_point(const Series& baseline, const Series& candidate, const Options& opt);

// Model-level comparison: models matched by (collective, hosts, concurrent_groups, dtype).
// Prices (param time_us, one row per link class both models measured): calib::price() of each
// profile at the class's measured sizes (both sides' curve knots), ratio candidate/baseline with
// sd of log(ratio) from the two prices' 95 % intervals, FDR control across all priced sizes and
// the points' verdict rule. Parameters: segments matched by index. Uncertainty of a parameter: the two profiles' relative standard errors
// (alpha_rel_se / bandwidth_rel_se) in quadrature when both carry them, else each side's fit
// error max(mape, holdout_mape) (a heuristic); the row's reason says which. docs/GATE.md
// "Model level".
std::vector<ModelResult> compare_profiles(const calib::Profile& baseline,
                                          const calib::Profile& candidate, const Options& opt);

// Everything: environment check, matching, per-point verdicts with FDR control, models (when
// both profiles are given), overall verdict and exit code. Throws Error on bad options or when
// the two runs are of different formats.
Report compare_runs(const RunData& baseline, const RunData& candidate, const Options& opt,
                    const calib::Profile* baseline_profile = nullptr,
                    const calib::Profile* candidate_profile = nullptr);

nlohmann::json report_to_json(const Report& r);
std::string report_markdown(const Report& r);

}  // namespace shardcal::gate

#pragma once
// The fitter (docs/CALIBRATION.md): sweep points -> per-(collective, link-class family)
// piecewise models (per size segment the backbone's terms, cost_model.hpp), with relative-error
// weighting, Huber IRLS, breakpoints found from the data and the segment count chosen by k-fold
// held-out error over sizes.
#include <optional>
#include <string>
#include <vector>

#include "shardcal/calibrate/profile.hpp"
#include "shardcal/formats/results_reader.hpp"

namespace shardcal::calib {

// The fitter's input: sweep results as shardcal_formats reads them.
using formats::CollectivePoint;
using formats::read_results;
using formats::ResultSet;
using formats::TransitionPoint;
using formats::TransitionStep;

struct FitOptions {
  std::string mode = "per_iteration";  // timing mode the models describe
  int max_segments = 4;           // segments per model at most (docs/CALIBRATION.md)
  int min_sizes = 4;              // fewer distinct sizes: the model is not fitted
  int min_sizes_per_segment = 3;  // of a segment when there are several
  int folds = 5;                  // k-fold over sizes (k = min(folds, sizes))
  double huber_k = 1.345;         // IRLS Huber constant, in robust-scale units
  double score_delta = 0.05;      // Huber loss delta (relative residual) to compare breakpoints
  double more_segments_gain = 0.05;  // a larger count must cut holdout MAPE by this fraction
  double observed_drop_min = 0.10;   // a segment boundary may drop in time only where every
                                     // measured class's time falls by this fraction from the last
                                     // size before it to the first after (docs/CALIBRATION.md)
  bool boundary_at_power_of_two = true;  // a jump's boundary: the power of two inside the gap
                                         // between the measured sizes, where there is one
  double dtype_bias_min = 0.05;   // dtypes split when a dtype's mean relative residual under the
                                  // pooled fit exceeds this and 3 standard errors
  double class_bias_min = 0.05;   // link classes (group size, concurrency) split likewise; also
                                  // the least contention effect (at the largest concurrency) kept
  // Set by calibrate() from the results' backend ("nccl"), not by users: the models' channel_ramp
  // (profile_types.hpp), so the leave-one-size-out holdout prices the smallest size as predict does.
  bool channel_ramp = false;
};

// Pooling of the link classes of one collective and hosts pattern (docs/CALIBRATION.md "Pooling
// link classes"): per class (group size, concurrent groups) the median relative residual under
// the pooled fit and its standard error (infinite: fewer than 3 points, not tested); a class
// beyond class_bias_min and 3 SE is split off.
struct ClassResidual {
  int group_size = 1;
  int concurrent_groups = 1;
  double median = 0;
  double se = 0;
  bool differs = false;
};
struct ClassPoolingDecision {
  Collective collective = Collective::AllGather;
  int hosts = 1;
  std::vector<std::pair<int, int>> classes;  // (n, concurrent groups) measured
  bool pooled = true;
  bool contention = false;        // the pooled model carries the fitted contention term
  double contention_z = 0;        // largest segment contention / its SE
  double contention_effect = 0;   // largest slowdown of the bandwidth term at the largest concurrency
  std::vector<ClassResidual> class_residuals;
  // Classes split off (one model per concurrency among them), worst first; the rest stay pooled.
  std::vector<std::pair<int, int>> split_off;
  std::string detail;             // why no test was made ("" = tested)
  // Segments whose fit with contention was implausible and refitted without it (B beyond any
  // link or a slowdown beyond c^2; docs/CALIBRATION.md "Degenerate fits"), for the notes ("" =
  // none).
  std::string contention_fallback;
  // k-fold holdout MAPE over sizes of the pooled model and, when the residual test pooled, of
  // one model per concurrency over the same points (unset: not compared).
  std::optional<double> holdout_pooled, holdout_separate;
};

struct UnfittedModel {
  Collective collective = Collective::AllGather;
  int hosts = 1;
  int concurrent_groups = 1;
  std::optional<DType> dtype;
  std::vector<int> group_sizes;
  int sizes = 0;
  std::string reason;
};

struct EffectiveSizeComparison {
  Collective collective = Collective::AllGather;
  int points = 0;                 // uneven points priced (with a fitted model)
  double mape_total = 0;          // S_eff = total bytes
  double mape_n_max = 0;          // S_eff = n x largest shard
  EffectiveSize chosen = EffectiveSize::NTimesMax;
  bool measured = false;          // false: no uneven points, default kept
};

struct DtypeDecision {
  Collective collective = Collective::AllGather;
  int hosts = 1;
  int concurrent_groups = 1;
  std::vector<DType> dtypes;
  bool pooled = true;
  std::string detail;             // per-dtype mean relative residual under the pooled fit
};

struct TransitionPrediction {
  std::string label;
  int comm_steps = 0;
  double measured_us = 0;
  double predicted_us = 0;
  double rel_error = 0;           // (predicted - measured) / measured
  bool extrapolated = false;      // some step used a nearest class / missing model
  double collectives_us = 0;      // the collectives' predictions + kLocalStepUs per local step
  double copy_bytes = 0;          // bytes the busiest rank copies: pack/unpack around the
                                  // collectives plus what its local steps write, over all steps
};

// The local copy cost (docs/CALIBRATION.md "Copy cost"), fitted from the sweep's transitions
// made of local steps only: t = alpha + c x, x the bytes the busiest rank writes, ordinary least
// squares (the largest copies decide c), c in [0, kMaxCopyNsPerByte]; fitted from
// kMinCopyTransitions such points at two sizes or more. Adopted (written to the profile) only
// when it is not clamped, its SE is at most half its value (+ kCopyNsPerByteResolution), and it
// predicts the transitions with communication better than the memory space's built-in
// bandwidth by the factor kCopyAdoptRatio on composition MAPE; else the profile keeps the
// built-in value.
inline constexpr int kMinCopyTransitions = 3;
inline constexpr double kCopyAdoptRatio = 0.8;
inline constexpr double kCopyNsPerByteResolution = 1e-3;  // 1000 GB/s: below, copies are free
struct LocalCopyFit {
  int transitions = 0;          // local-only transitions measured
  bool fitted = false;
  bool used = false;            // adopted: the profile carries it
  double ns_per_byte = 0;
  double se_ns_per_byte = 0;
  double alpha_us = 0;          // fixed cost of a transition (not priced by the planner)
  bool clamped = false;
  double default_ns_per_byte = 0;                  // the built-in value
  std::optional<double> composition_mape_default;  // composition MAPE at the built-in value
  std::optional<double> composition_mape_fitted;   // and at the fitted one
  std::string why;                                 // the adoption decision, for the report
};

struct Calibration {
  FitOptions options;
  std::vector<Model> models;
  std::vector<UnfittedModel> unfitted;
  std::vector<EffectiveSizeComparison> effective_size;
  std::vector<DtypeDecision> dtypes;
  std::vector<ClassPoolingDecision> class_pooling;  // families with >= 2 concurrencies
  std::vector<TransitionPrediction> transitions;
  // Transitions with communication, their copies at the adopted copy cost (local_copy.used) or
  // the built-in one.
  std::optional<double> composition_mape;
  LocalCopyFit local_copy;
  int points_used = 0;
  int points_other_mode = 0;
};

// Throws shardcal::Error when no point is usable (e.g. all excluded) or nothing could be fitted.
Calibration calibrate(const ResultSet& results, const FitOptions& opt = {});

// Time (us) of one model at effective size s_eff (bytes) and group size n: the segment holding
// s_eff (its index in *segment when given).
double model_time_us(const Model& m, double s_eff, int n, int* segment = nullptr,
                     int concurrent_groups = 1);

// The profile (json_extra carries provenance, fit method, decisions and comparisons).
Profile make_profile(const ResultSet& results, const Calibration& cal, const std::string& cluster);

// Human-readable quality table and decisions (what `shardbench calibrate` prints).
std::string quality_report(const ResultSet& results, const Calibration& cal);

}  // namespace shardcal::calib

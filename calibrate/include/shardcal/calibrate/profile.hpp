#pragma once
// The calibrated cost-model profile (schema "shardcal.profile" version 1): the contract between
// the fitter (calibrate/src/fit*.cpp, `shardbench calibrate`), the readers (`shardbench
// predict`, the planner, calibrate/python) and the JSON file (docs/PROFILE_FORMAT.md).
//
// A model prices one collective on one *family* of link classes: groups that span `hosts` hosts
// with the same number of ranks on each, with `concurrent_groups` groups running at once on a
// host (contention). Group size n varies inside a family; per size segment
//     t_us = alpha_us + alpha_step_us * steps(n) + S_eff * f(n) / (B_GBps * 1e3)
// with steps(n), f(n) from the collective table (shardcal/collectives.hpp) and S_eff in bytes
// (the effective-size rule says how uneven counts become S_eff). Status: interface agreed between
// the fitter and the profile reader; both sides may extend it, keeping this shape.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardcal/collectives.hpp"
#include "shardcal/dtype.hpp"
#include "shardcal/formats/schemas.hpp"

namespace shardcal::calib {

using formats::kProfileSchema;
using formats::kProfileVersion;

// What a planner can compute before running anything for one mesh dim's groups.
struct LinkClass {
  int group_size = 1;         // n
  int hosts = 1;              // hosts one group spans
  int ranks_per_host = 1;     // ranks of one group on each of its hosts (n / hosts)
  int concurrent_groups = 1;  // groups of this mesh dim running at once on one host
};

// How uneven per-position counts turn into the S_eff of the model (bytes).
enum class EffectiveSize : unsigned char {
  Total,         // sum of all positions' bytes (the table's S for even counts)
  NTimesMax,     // n x the largest position's bytes (a ring is paced by the largest shard)
};

struct Segment {
  double s_lo = 0;                  // bytes (S_eff), inclusive
  std::optional<double> s_hi;       // bytes, exclusive; none = unbounded
  double alpha_us = 0;              // base latency alpha0
  double alpha_step_us = 0;         // per ring step
  double bandwidth_GBps = 0;        // B, 1e9 bytes/s
  // Relative standard errors of alpha_us and bandwidth_GBps from the fit's weighted
  // least-squares covariance (calibrate/src/fit_kernel.cpp). None = unknown: analytic profiles, a
  // parameter set by a bound or constraint rather than by the data, too few points. The gate
  // uses them as the parameters' uncertainty (docs/GATE.md "Model level").
  // (Initialised here so aggregate initialisers that stop at bandwidth_GBps stay warning-free.)
  std::optional<double> alpha_rel_se = std::nullopt;
  std::optional<double> bandwidth_rel_se = std::nullopt;
  // Contention between concurrent groups, gamma >= 0: with c groups at once on a host the
  // bandwidth term is multiplied by (1 + gamma (c - 1)), i.e. each group gets B / (1 + gamma
  // (c - 1)) (gamma = 1: c groups share B equally). None = 0: the model is one concurrency's, or
  // the fit found no contention beyond noise (docs/CALIBRATION.md "Pooling link classes").
  std::optional<double> contention = std::nullopt;
};

// Where a model applies without extrapolation (inclusive ranges; none = unbounded above). Absent
// in a Model = derived from what was measured: hosts and concurrent_groups exactly the model's,
// group size within [min, max] of group_sizes, any S_eff. Built-in analytic profiles (backend
// "model") set it to state the formula's whole domain. docs/PROFILE_FORMAT.md "Domain".
struct Range {
  double lo = 0;
  std::optional<double> hi;
  bool contains(double x) const { return x >= lo && (!hi || x <= *hi); }
};
struct Domain {
  Range hosts{1, 1};
  Range concurrent_groups{1, 1};
  Range group_size{1, std::nullopt};
  Range bytes{0, std::nullopt};  // S_eff
  // The measured (group size, concurrent groups) pairs of a model pooled over them; empty = not
  // recorded. A pair neither measured nor between measured pairs at the same group size or the
  // same concurrency is extrapolation (on one world size n and c move together, so contention
  // and n-dependence are confounded away from the measured pairs).
  std::vector<std::pair<int, int>> classes;
};

// True when (n, c) is measured or lies between measured pairs at the same n or the same c.
bool between_measured_classes(const std::vector<std::pair<int, int>>& classes, int n, int c);

struct FitQuality {
  int points = 0;
  double mape = 0;                  // training, relative
  double max_rel_error = 0;
  std::optional<double> holdout_mape;             // k-fold over sizes
  std::optional<double> leave_group_out_mape;     // where >= 3 group sizes were measured
  // Each measured mesh / concurrency predicted from a fit to the others (models pooled over
  // several meshes / concurrencies; none = not measured, omitted from the file).
  std::optional<double> leave_mesh_out_mape = std::nullopt;
  std::optional<double> leave_concurrency_out_mape = std::nullopt;
  // The held-out error of the model predict() uses (backbone x measured curves): each measured
  // size left out in turn, backbone and curves refitted without it, its points priced by price()
  // (docs/CALIBRATION.md "Quality table"). The fields above are the backbone's alone (the
  // intervals and the gate read them). None = not computed (too few sizes; older profiles).
  std::optional<double> leave_size_out_mape = std::nullopt;
};

// The measured curve of one link class (n, c) of a model (docs/CALIBRATION.md "Measured
// curves"; evaluated by cost_model.hpp): at each measured S_eff the log ratio of the measured
// time (median over the class's even-distribution points at that size) to the backbone, and
// what the 95 % interval needs.
struct MeasuredCurve {
  int group_size = 1;
  int concurrent_groups = 1;
  std::vector<double> bytes;      // measured S_eff, strictly ascending, > 0
  std::vector<double> log_ratio;  // ln(measured / backbone) at each
  // Leave-one-size-out interpolation error at each interior size, per unit of w (1 - w) g
  // (g: the gap in log2 bytes, w: the position in it); 0 at the two ends.
  std::vector<double> kappa;
  double kappa_scale = 0;  // the interior kappa's upper quartile (fewer than 3 sizes: a default)
  double noise = 0;      // measurement noise of one size's time, log scale
  double shrink = 1;     // lambda in [0, 1]: how much of the backbone's shape between two
                         // measured sizes the curve keeps (0: log-log interpolation)
  double weight = 1;     // mu in [0, 1]: how much of the measured ratio a price keeps (0: the
                         // ratios are noise around the backbone, which prices alone)
};

struct Model {
  Collective collective = Collective::AllGather;
  int hosts = 1;
  int concurrent_groups = 1;
  std::optional<DType> dtype;       // none = dtypes pooled
  std::vector<int> group_sizes;     // measured n (sorted)
  EffectiveSize effective_size = EffectiveSize::NTimesMax;
  std::vector<Segment> segments;    // sorted by s_lo, contiguous, first s_lo = 0
  FitQuality quality;
  std::optional<Domain> domain;     // none = derived from the measured class (see Domain)
  std::string json_extra;           // the model's "extra" object verbatim ("" = none)
  std::vector<MeasuredCurve> curves;  // per measured class; empty: backbone only
};

// The domain a model is used on without the prediction being marked extrapolated.
Domain effective_domain(const Model& m);

// How a collective's latency grows with its group along the algorithm the library runs
// (cost_model.hpp "Host-count transport"): ring steps n - 1, tree depth 1 + log2 hosts (NCCL's
// double binary trees across nodes), log2 n rounds (recursive doubling / halving, Bruck), or
// none (pipelined or offloaded).
enum class LatencyLaw { RingSteps, TreeDepth, LogRanks, Flat };
std::string_view latency_law_name(LatencyLaw law);
// How its bandwidth term grows: by the bus factors (a ring: busbw independent of the rank count),
// or with the share of each rank's bytes that leaves its host, (h - 1) / h (algorithms without a
// hierarchy, where every rank's bytes cross its host's NIC: all_to_all, recursive doubling and
// halving on several ranks per host).
enum class BandwidthLaw { BusFactor, HostShare };
std::string_view bandwidth_law_name(BandwidthLaw law);

// A price transported from the nearest measured host count to another along the collective's
// algorithm (cost_model.hpp "Host-count transport"); a second measured count, when the profile
// has one, tests that structure first (chooses the latency law, widens where it misses).
struct HostTransport {
  bool active = false;           // false: priced by the chosen model alone
  const Model* other = nullptr;  // the count that tested the structure (null: none measured)
  int n_model = 0;               // the group size the chosen model is priced at
  int n_other = 0;               // ... and the other model
  int n_query = 0;
  double doublings = 0;          // |log2(h / h_b)|: distance to the nearest measured count
  double test_doublings = 0;     // |log2(h_b / h_a)|: the test's distance (0: no test)
  LatencyLaw law = LatencyLaw::RingSteps;
  BandwidthLaw bw_law = BandwidthLaw::BusFactor;
  bool law_tested = false;       // tested by `other` (else the backend's defaults, untested)
  bool law_discriminated = false;  // the test's pair beat the defaults (else they held or tied)
  bool test_switch = false;      // the test crossed a known switch: defaults kept, miss widens
  // t = t_b (share R + (1 - share) F), share = min(1, L / t_b).
  double latency_us = 0;         // L: the chosen model's time at 1 byte (its latency floor)
  double latency_ratio = 1;      // R: latency growth from h_b to h by `law`
  double bus_ratio = 1;          // F: the bandwidth term's growth by bw_law (x a switch's middle)
  // The range the bandwidth term may move in between h_b and h, as log sigmas below and above
  // the price (its 95 % interval): NCCL's two-node tree (priced at the range's geometric
  // middle), an untested transport of a library that may run either bandwidth law (MPI:
  // priced by the ring's bus factors, the upper side reaching the host share's price).
  double switch_lo_log_sigma = 0, switch_hi_log_sigma = 0;
  bool two_node_switch = false;     // NCCL's two-node tree between h_b and h
  bool algorithm_unknown = false;   // MPI untested: the upper side reaches the host share
  double step_log_sigma = 0;     // per doubling
  // Where the tested structure missed the second count: log(measured / structure's price) per
  // size (0 inside a switch's range), interpolated in log size; widens, never moves, the price.
  std::vector<double> miss_bytes, miss_log;
};

struct Prediction {
  double time_us = 0;
  double lo_us = 0, hi_us = 0;      // 95 % prediction interval (cost_model.hpp)
  // What priced it: "measured curve", "measured curve, switch in the gap", "measured curve,
  // beyond the measured sizes", "nearest class's curve" (+ the same qualifiers), "backbone".
  std::string basis;
  const Model* model = nullptr;
  int segment = -1;
  bool extrapolated = false;        // link class, group size or size outside what was measured
  std::string note;                 // why extrapolated: "nearest measured class: hosts=1 ..."
  // Set (transport.active) when the price was transported from other host counts
  // (cost_model.hpp HostTransport); the planner's hot path repeats it from here.
  HostTransport transport;
};

struct Profile {
  std::string cluster;
  std::string created;              // ISO 8601 UTC
  std::string shardcal_version;
  std::string backend;              // "mpi" | "nccl" | "sim" | "model" (built-in profiles)
  std::string memory;               // "host" | "cuda"
  // A JSON object text whose members are written at the top level of the file, verbatim: only
  // "provenance", "fit_method" and "extra" (free-form) are allowed ("" = none of them).
  std::string json_extra;
  std::vector<Model> models;
  // What copying costs on this platform (pack/unpack around collectives, local steps), learned
  // by calibrate from the sweep's transitions: per byte copied, 0 = copies cost nothing (e.g. a
  // simulator that does not time computation). Absent: the memory space's built-in bandwidth
  // (step_cost.hpp). docs/PROFILE_FORMAT.md "local_copy".
  static constexpr double kMaxCopyNsPerByte = 10.0;  // 0.1 GB/s: slower is a broken fit
  struct LocalCopy {
    double ns_per_byte = 0;
    double se_ns_per_byte = 0;  // standard error of the fit
    int transitions = 0;        // measured transitions with copies the fit used
  };
  std::optional<LocalCopy> local_copy;
};

// Segment validity also requires alpha_step_us >= 0 and finite, s_lo >= 0, the last segment
// unbounded (s_hi null), and group sizes divisible by hosts. The nearest-measured-class rule that
// predict() applies is in docs/PROFILE_FORMAT.md ("Choosing a model").
// Throws shardcal::Error with the JSON pointer and a fix for every defect (unknown schema or
// version, missing fields, non-finite or non-physical values, unsorted/overlapping segments).
Profile read_profile(const std::string& path);
Profile parse_profile(const std::string& json_text, const std::string& origin);
std::string profile_to_json(const Profile& p);  // canonical text; round-trips parse_profile
void write_profile_atomic(const Profile& p, const std::string& path);  // temp + rename

std::string_view effective_size_name(EffectiveSize e);  // "total" | "n_times_max"
std::optional<EffectiveSize> parse_effective_size(std::string_view name);

// S_eff in bytes for a query of collective c. counts empty -> bytes. Else counts are elements
// per group position in the collective table's convention (CollectiveCall), counts.size() = the
// group size m (all_to_all: m or m x m; anything else throws):
//  - no v-form (all_reduce, broadcast): the count is the buffer, the same at every position;
//    uneven counts throw; S_eff = counts[0] x elem_size under either rule (as the sweep's
//    bytes_eff for these).
//  - all_to_all: m entries (every rank sends counts[q] to position q, the sweep's form) or
//    m x m entries (the send matrix row-major, counts[src * m + dst], as StepTraffic::counts);
//    the rule is applied to each sender's row and the largest result is S_eff (total: the
//    largest send buffer; n_times_max: m x the largest block).
//  - the other v-forms: the rule over the m counts.
// Throws Error on bad input.
double effective_bytes(Collective c, EffectiveSize rule, double bytes,
                       std::span<const std::int64_t> counts, int elem_size, int group_size);
// S in the collective table's convention for counts (no v-form: counts[0] x es; all_to_all: the
// largest row sum x es; others: the sum x es). Throws on empty, negative or (no v-form) uneven
// counts.
double table_bytes(Collective c, std::span<const std::int64_t> counts, int elem_size,
                   int group_size);

// The backbone's time for group size n at S_eff in segment `segment` (no model choice, no
// checks; cost_model.hpp defines it). concurrent_groups applies the segment's contention (no
// effect without one). n = 1: the first segment's alpha at every size (a group of one rank
// moves nothing).
double segment_time_us(const Model& m, std::size_t segment, int n, double s_eff,
                       int concurrent_groups = 1);
// True when the model's predictions for group size n never decrease as S_eff grows: each
// segment is linear with slope >= 0, so this checks every breakpoint (the time just below it
// vs at it, relative tolerance rel_tol). For the fitter's tests and `shardbench calibrate`.
bool non_decreasing_in_size(const Model& m, int n, double rel_tol = 1e-12);

// counts: elements per group position (empty = even, bytes is the table's S); elem_size bytes.
Prediction predict(const Profile& p, Collective c, const LinkClass& lc, double bytes,
                   std::span<const std::int64_t> counts = {}, int elem_size = 1,
                   std::optional<DType> dtype = std::nullopt);

}  // namespace shardcal::calib

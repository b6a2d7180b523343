#pragma once
// The calibrated cost-model profile's data (schema "shardcal.profile" version 1): the contract
// between the fitter (calibrate/src/fit*.cpp, `shardbench calibrate`), the readers (`shardbench
// predict`, the planner, calibrate/python) and the JSON file (docs/PROFILE_FORMAT.md). Read and
// written by profile_io.hpp, priced by cost_model.hpp, host_transport.hpp and predict.hpp
// (profile.hpp includes them all).
//
// A model prices one collective on one *family* of link classes: groups that span `hosts` hosts
// with the same number of ranks on each, with `concurrent_groups` groups running at once on a
// host (contention). Group size n varies inside a family; per size segment
//     t_us = alpha_us + alpha_step_us * steps(n) + S_eff * f(n) / (B_GBps * 1e3)
// with steps(n), f(n) from the collective table (shardcal/collectives.hpp) and S_eff in bytes
// (the effective-size rule says how uneven counts become S_eff). Status: interface agreed between
// the fitter and the profile reader; both sides may extend it, keeping this shape.
#include <cstdint>
#include <map>
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
  // The hosts the group really spans, where that is not `hosts`: group_link_class prices a group
  // whose ranks do not split evenly over its hosts as one rank per host (hosts = n), but the
  // host links' floor (docs/CALIBRATION.md "Link ceilings") needs the real count. 0: hosts.
  int spanned_hosts = 0;
};

// The hosts the host links' floor counts for a class (LinkClass::spanned_hosts, else hosts).
inline int floor_hosts(const LinkClass& lc) { return lc.spanned_hosts > 0 ? lc.spanned_hosts : lc.hosts; }

// How uneven per-position counts turn into the S_eff of the model (bytes).
enum class EffectiveSize : unsigned char {
  Total,      // sum of all positions' bytes (the table's S for even counts)
  NTimesMax,  // n x the largest position's bytes (a ring is paced by the largest shard)
};

struct Segment {
  double s_lo = 0;             // bytes (S_eff), inclusive
  std::optional<double> s_hi;  // bytes, exclusive; none = unbounded
  double alpha_us = 0;         // base latency alpha0
  double alpha_step_us = 0;    // per ring step
  double bandwidth_GBps = 0;   // B, 1e9 bytes/s
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
  double mape = 0;  // training, relative
  double max_rel_error = 0;
  std::optional<double> holdout_mape;          // k-fold over sizes
  std::optional<double> leave_group_out_mape;  // where >= 3 group sizes were measured
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
  double noise = 0;        // measurement noise of one size's time, log scale
  double shrink = 1;       // lambda in [0, 1]: how much of the backbone's shape between two
                           // measured sizes the curve keeps (0: log-log interpolation)
  double weight = 1;       // mu in [0, 1]: how much of the measured ratio a price keeps (0: the
                           // ratios are noise around the backbone, which prices alone)
};

struct Model {
  Collective collective = Collective::AllGather;
  int hosts = 1;
  int concurrent_groups = 1;
  std::optional<DType> dtype;    // none = dtypes pooled
  std::vector<int> group_sizes;  // measured n (sorted)
  EffectiveSize effective_size = EffectiveSize::NTimesMax;
  std::vector<Segment> segments;  // sorted by s_lo, contiguous, first s_lo = 0
  FitQuality quality;
  std::optional<Domain> domain;       // none = derived from the measured class (see Domain)
  std::string json_extra;             // the model's "extra" object verbatim ("" = none)
  std::vector<MeasuredCurve> curves;  // per measured class; empty: backbone only
  // The profile's link ceiling (Profile::link_ceiling), 0 = not known: prices never fall below
  // S_eff x link_floor_factor(n) / ceiling. Not written per model.
  double link_ceiling_GBps = 0;
  // Its host-link part (Profile::LinkCeilingInfo::host_GBps), 0 = none: a group across hosts
  // never falls below S_eff x host_floor_factor(n, r) / host link. Not written per model.
  double host_link_GBps = 0;
  // The profile's backend is NCCL, whose bandwidth grows with size (fewer channels for smaller
  // messages): below the measured sizes the price leans from the backbone carried towards the
  // log-log line (cost_model.cpp curve_part). Not written per model: set from Profile::backend on
  // read and by the fitter (FitOptions::channel_ramp).
  bool channel_ramp = false;
};

// The domain a model is used on without the prediction being marked extrapolated.
Domain effective_domain(const Model& m);

struct Profile {
  std::string cluster;
  std::string created;  // ISO 8601 UTC
  std::string shardcal_version;
  std::string backend;  // "mpi" | "nccl" | "sim" | "model" (built-in profiles)
  std::string memory;   // "host" | "cuda"
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
  // Which algorithms the MPI library chooses, where the sweep's context says so
  // (docs/PROFILE_FORMAT.md "mpi_selector"): SMPI's smpi/coll-selector ("ompi": Open MPI's
  // coll/tuned fixed rules) and the collectives forced to one algorithm (smpi/allgather:NTSLR ->
  // "all_gather": "NTSLR"). Absent: not known (host transport keeps its laws).
  struct MpiSelector {
    std::string selector;
    std::map<std::string, std::string> forced;
  };
  std::optional<MpiSelector> mpi_selector;
  // The GPUs' link ceiling (docs/PROFILE_FORMAT.md "link_ceiling", calibrate/link_ceiling.hpp):
  // the slowest named GPU's, where every context named its GPUs and the table knows them all,
  // and no measured point ran faster. Set into every Model (link_ceiling_GBps) on read.
  struct LinkCeilingInfo {
    double GBps = 0;
    std::vector<std::string> gpus;
    std::string source;
    double host_GBps = 0;  // the host link alone (0: not a bound; link_ceiling.hpp)
  };
  std::optional<LinkCeilingInfo> link_ceiling;
  // The network's routes for a ring over the first H hosts of the job's host order (extra.
  // ring_routes, docs/PROFILE_FORMAT.md; written by `calibrate --routes FILE`, a file of
  // `ring-routes` on a SimGrid platform or the user's own): per host count the longest route
  // latency of the ring's host-to-host steps and the smallest bandwidth share a ring flow gets on
  // any link. Host transport adds the route latency a larger ring's steps pay (docs/CALIBRATION.md
  // "Other host counts"): no measured count shows a route it never took.
  struct RingRoute {
    int hosts = 0;
    double latency_us = 0;
    double share_GBps = 0;
    // Optional: each host-to-host step's route latency, host i to host i+1 (mod hosts) of the
    // order; its largest is latency_us. With loopback_latency_us it prices the dependency chain
    // of a ring whose steps overlap (Open MPI's eager reduce_scatter ring).
    std::vector<double> hop_latency_us = {};  // (initialised: aggregate initialisers stay warning-free)
    // Optional: the largest route latency difference between two flows that share the link
    // setting share_GBps (they overlap for T - skew of a transfer T: host_transport.cpp).
    std::optional<double> share_skew_us = std::nullopt;
  };
  struct RingRoutes {
    std::string source;
    std::vector<std::string> hosts_order;  // the hosts in job order (may be empty: not given)
    std::vector<RingRoute> rings;          // ascending hosts, each once
    // Optional: the route latency between two ranks on one host (the largest over the hosts).
    std::optional<double> loopback_latency_us = std::nullopt;
    // Optional: the bandwidth between two ranks on one host (the slowest loopback route's
    // narrowest link): the eager chain's intra-host hops move their message at it.
    std::optional<double> loopback_GBps = std::nullopt;
    const RingRoute* at(int hosts) const {
      for (const RingRoute& r : rings)
        if (r.hosts == hosts) return &r;
      return nullptr;
    }
  };
  std::optional<RingRoutes> ring_routes;
};

std::string_view effective_size_name(EffectiveSize e);  // "total" | "n_times_max"
std::optional<EffectiveSize> parse_effective_size(std::string_view name);

}  // namespace shardcal::calib

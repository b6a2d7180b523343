// predict(): a query's S_eff (effective_bytes), the nearest measured class (docs/PROFILE_FORMAT.md
// "Choosing a model"), its host-count transport (host_transport.hpp) and its notes, priced by the
// cost model (cost_model.hpp). Python's shardcal.predict calls it (shardcal._core); the test
// oracle tests/calibrate/oracle/predict.py re-reads the rule and a ctest compares the two.
#include "shardcal/calibrate/predict.hpp"

#include <algorithm>
#include <functional>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include "shardcal/error.hpp"

namespace shardcal::calib {

namespace {

using json = nlohmann::json;

// Log-free distance of x to a range, as a factor >= 1 (1 = inside). Mirrored in Python.
double factor_distance(double x, const Range& r) {
  if (x < r.lo) return r.lo / x;
  if (r.hi && x > *r.hi) return x / *r.hi;
  return 1.0;
}

std::string fmt(double x) { return json(x).dump(); }

void check_counts(Collective c, std::span<const std::int64_t> counts, int elem_size) {
  if (elem_size < 1)
    throw Error("element size must be >= 1 byte, got " + std::to_string(elem_size));
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i] < 0)
      throw Error("counts[" + std::to_string(i) + "] = " + std::to_string(counts[i]) +
                  " is negative; counts are elements per group position");
  const CollectiveInfo& info = collective_info(c);
  if (!info.has_v_form)
    for (std::size_t i = 1; i < counts.size(); ++i)
      if (counts[i] != counts[0])
        throw Error(
            std::string(info.name) + " has no v-form: its count is the buffer, the same at every " +
            "group position, but counts[" + std::to_string(i) + "] = " + std::to_string(counts[i]) +
            " != counts[0] = " + std::to_string(counts[0]) + "; give equal counts (or --bytes)");
}

// The length of one row of counts for group size n: all_to_all takes n entries (one row every
// rank sends) or n x n (the send matrix); every other collective n entries.
std::size_t row_length(Collective c, std::size_t size, int n) {
  if (n < 1) throw Error("group size must be >= 1, got " + std::to_string(n));
  const auto m = std::size_t(n);
  if (size == m) return m;
  if (c == Collective::AllToAll && size == m * m) return m;
  throw Error("counts has " + std::to_string(size) + " entries but the group size is " +
              std::to_string(n) + "; give one count per group position" +
              (c == Collective::AllToAll
                   ? std::string(" (all_to_all: or n x n, the send matrix row-major)")
                   : std::string()));
}

}  // namespace

double table_bytes(Collective c, std::span<const std::int64_t> counts, int elem_size,
                   int group_size) {
  if (counts.empty()) throw Error("table_bytes: counts is empty");
  // The table's S is the `total` rule: the largest row's sum (the buffer for no-v-form ops).
  return effective_bytes(c, EffectiveSize::Total, 0, counts, elem_size, group_size);
}

double effective_bytes(Collective c, EffectiveSize rule, double bytes,
                       std::span<const std::int64_t> counts, int elem_size, int group_size) {
  if (counts.empty()) {
    if (!std::isfinite(bytes) || bytes < 0)
      throw Error("bytes must be finite and >= 0, got " + fmt(bytes));
    return bytes;
  }
  check_counts(c, counts, elem_size);
  const std::size_t row = row_length(c, counts.size(), group_size);
  const double es = elem_size;
  // No v-form (all_reduce, broadcast): the count is the buffer, S_eff = S under either rule
  // (the sweep records bytes_eff = bytes_total = the buffer for these).
  if (!collective_info(c).has_v_form) return double(counts[0]) * es;
  // The rule per row (all_to_all: per sending rank; others: the one row), the largest result.
  double best = 0;
  for (std::size_t r = 0; r < counts.size(); r += row) {
    double total = 0, largest = 0;
    for (std::size_t i = r; i < r + row; ++i) {
      total += double(counts[i]);
      largest = std::max(largest, double(counts[i]));
    }
    best = std::max(best, rule == EffectiveSize::Total ? total * es : double(row) * largest * es);
  }
  return best;
}

// What the ring routes' latency note adds for Open MPI's overlapped reduce_scatter ring
// (host_transport.hpp route_latency); nothing for the other rings.
static std::string route_latency_note(RouteLatency mode, const HostTransport& tr, double s_eff) {
  if (!route_latency_overlapped(tr)) return "";
  std::ostringstream o;
  o << std::setprecision(4);
  switch (mode) {
    case RouteLatency::LockStep:
      if (tr.route_step_us != 0)
        o << " (Open MPI's reduce_scatter ring: its steps' messages are past the measured protocol "
             "switch, so its steps wait for each other)";
      break;
    case RouteLatency::Chain: {
      const double extra = transported_chain_extra(tr, s_eff).extra_us;
      o << "; Open MPI's reduce_scatter ring overlaps its eager steps: priced by their dependency "
           "chain over the routes' hops (latency and the per-step message at each count's link share), "
        << (extra >= 0 ? "+" : "") << extra << " us in all"
        << (tr.route_step_us != 0 ? " (the interval reaches the prices without and with the extra on "
                                    "every step)"
                                  : "");
      break;
    }
    case RouteLatency::Middle:
      if (tr.route_step_us != 0)
        o << ", priced at the geometric middle of with and without it (Open MPI's reduce_scatter "
             "ring overlaps some of its eager steps' latency; no chain: the routes list no hop latencies, or "
             "no loopback latency for several ranks per host, or the ring has over 1024 ranks, or no "
             "protocol switch was measured, or the ring is not carried at equal per-step messages): "
             "the interval reaches both";
      break;
  }
  return o.str();
}

Prediction predict(const Profile& p, Collective c, const LinkClass& lc, double bytes,
                   std::span<const std::int64_t> counts, int elem_size,
                   std::optional<DType> dtype, bool check_class) {
  const std::string cname(collective_info(c).name);
  if (lc.group_size < 1 || lc.hosts < 1 || lc.ranks_per_host < 1 || lc.concurrent_groups < 1)
    throw Error(
        "link class: group size, hosts, ranks per host and concurrent groups must all be >= 1");
  if (check_class && lc.hosts * std::int64_t(lc.ranks_per_host) != lc.group_size)
    throw Error("link class: group size " + std::to_string(lc.group_size) + " != hosts " +
                std::to_string(lc.hosts) + " x ranks per host " +
                std::to_string(lc.ranks_per_host) +
                "; a group spanning h hosts has the same number of ranks on each");
  if (!counts.empty()) row_length(c, counts.size(), lc.group_size);  // throws on a wrong length

  // Nearest measured class, lexicographic (docs/PROFILE_FORMAT.md "Choosing a model").
  const Model* best = nullptr;
  std::tuple<int, double, int, double, double, int> best_key;
  for (const Model& m : p.models) {
    if (m.collective != c) continue;
    const Domain d = effective_domain(m);
    const bool inter = lc.hosts > 1;
    const int side = inter ? (d.hosts.hi && *d.hosts.hi <= 1 ? 1 : 0) : (d.hosts.lo > 1 ? 1 : 0);
    int dscore = 0;
    if (dtype)
      dscore = m.dtype == dtype ? 0 : (!m.dtype ? 1 : 2);
    else
      dscore = m.dtype ? 2 : 0;
    // Equally far host counts: the larger (small counts are often special cases).
    auto key = std::make_tuple(side, factor_distance(lc.hosts, d.hosts), -m.hosts,
                               factor_distance(lc.concurrent_groups, d.concurrent_groups),
                               factor_distance(lc.group_size, d.group_size), dscore);
    if (!best || key < best_key) best = &m, best_key = key;
  }
  if (!best) {
    std::set<std::string> have;
    for (const Model& m : p.models) have.insert(std::string(collective_info(m.collective).name));
    std::string list;
    for (const auto& h : have) list += (list.empty() ? "" : ", ") + h;
    throw Error("profile '" + p.cluster + "' has no model for " + cname +
                " (it has: " + (list.empty() ? "none" : list) +
                "); calibrate from a sweep that measures " + cname);
  }
  Prediction out;
  out.model = best;
  const double s_eff =
      effective_bytes(c, best->effective_size, bytes, counts, elem_size, lc.group_size);
  const Domain d = effective_domain(*best);
  std::string note;
  auto add = [&](const std::string& what) { note += (note.empty() ? "" : "; ") + what; };
  [[maybe_unused]] const auto& [side, dh, neg_hosts, dc, dn, ds] = best_key;
  out.transport = host_transport(p, *best, lc);
  const HostTransport& tr = out.transport;
  if (tr.active) {
    // Each model is priced at its hosts x these ranks per host: a group size it did not measure
    // is a class extrapolation of its own.
    auto outside = [](const Model& m, int n) {
      return factor_distance(n, effective_domain(m).group_size) != 1.0;
    };
    if (outside(*best, tr.n_model) || (tr.other && outside(*tr.other, tr.n_other)))
      add(std::to_string(lc.ranks_per_host) + " ranks per host: group sizes " +
          std::to_string(tr.n_model) +
          (tr.other ? " and " + std::to_string(tr.n_other) : std::string()) +
          " outside the measured ones at hosts=" + std::to_string(best->hosts) +
          (tr.other ? " and " + std::to_string(tr.other->hosts) : std::string()));
  }
  const bool transport_class_extrapolated = !note.empty();
  if (tr.active) {
    add(transport_note(tr, *best, lc));
    if (dc != 1.0)
      add("nearest measured class: concurrent_groups=" + std::to_string(best->concurrent_groups));
  } else if (side != 0 || dh != 1.0 || dc != 1.0)
    add("nearest measured class: hosts=" + std::to_string(best->hosts) +
        " concurrent_groups=" + std::to_string(best->concurrent_groups));
  // (Transported: each model's own group size was checked above.)
  if (!tr.active && dn != 1.0)
    add("group size " + std::to_string(lc.group_size) + " outside the measured range");
  else if (!tr.active && dc == 1.0 && !d.classes.empty() &&
           !between_measured_classes(d.classes, lc.group_size, lc.concurrent_groups))
    add("group size " + std::to_string(lc.group_size) + " with " +
        std::to_string(lc.concurrent_groups) +
        " concurrent groups neither measured nor between measured pairs at the same group size "
        "or concurrency");
  if (ds == 2)
    add("dtype model " +
        (best->dtype ? std::string(dtype_name(*best->dtype)) : std::string("pooled")) +
        " used for " +
        (dtype ? std::string(dtype_name(*dtype)) : std::string("an unspecified dtype")));
  // The class is extrapolated when the model's choice was (the size alone is not: the curve
  // widens the interval for sizes beyond the measured ones itself).
  const double class_sigma =
      tr.active   ? (dc != 1.0 || ds == 2 || !tr.other || transport_class_extrapolated
                         ? kExtrapolatedClassLogSigma
                         : 0.0)
      : side != 0 ? kOtherSideLogSigma
                  : (!note.empty() ? kExtrapolatedClassLogSigma : 0.0);
  out.class_note = note;
  out.other_side = side != 0 && !tr.active;
  if (out.other_side)
    add(std::string(lc.hosts > 1
                        ? "an inter-host group priced from intra-host measurements"
                        : "an intra-host group priced from inter-host measurements (hosts=" +
                              std::to_string(best->hosts) + ")") +
        ": links never measured, 95 % interval x" +
        std::to_string(int(std::round(std::exp(kIntervalZ * kOtherSideLogSigma)))) + " either way");
  const Priced pr = tr.active
                        ? price_transported(*best, tr, lc.concurrent_groups, s_eff, class_sigma)
                        : price(*best, lc.group_size, lc.concurrent_groups, s_eff, class_sigma, floor_hosts(lc));
  // The size: past the measured curve's sizes (what priced it), else outside the model's domain.
  // An MPI ring carried at equal per-step messages priced the measured count at s_eff n_b / n.
  const bool per_step = carried_at_equal_messages(tr, s_eff);
  if (tr.active && !tr.route_skipped.empty()) add("ring routes not applied (" + tr.route_skipped + ")");
  if (tr.active && tr.routes) {
    std::ostringstream o;
    o << std::setprecision(4);
    if (route_ring(tr, s_eff)) {
      o << "ring routes: hosts=" << lc.hosts << "'s ring takes " << tr.route_latency_query_us
        << " us routes at " << tr.route_share_query_GBps << " GB/s per flow, hosts="
        << tr.hosts_model << "'s " << tr.route_latency_model_us << " us at "
        << tr.route_share_model_GBps << " GB/s: " << (tr.route_step_us >= 0 ? "+" : "")
        << tr.route_step_us << " us on each of " << tr.route_steps << " steps"
        << route_latency_note(route_latency(*best, tr, s_eff), tr, s_eff);
      if (const double at = transported_chain_hold_bytes(*best, tr, lc.concurrent_groups, s_eff); at > 0)
        o << "; held at the chain's price at " << at << " B: a larger message is never priced faster";
      if (const double edge = transported_eager_hold_bytes(*best, tr, lc.concurrent_groups, s_eff); edge > 0)
        o << "; held at the eager steps' price at the switch (" << edge
          << " B): a larger message is never priced faster";
      // (an eager chain holds the shares' change itself: no factor on the bandwidth term)
      if (tr.route_bw_ratio != 1.0 && route_latency(*best, tr, s_eff) != RouteLatency::Chain) {
        o << "; the bandwidth term x" << tr.route_bw_ratio
          << " as far as the flows sharing the link overlap (their routes' latencies differ by "
          << tr.route_skew_us << " us";
        if (tr.route_skew_source != SkewSource::Table)
          o << " at most, the " << skew_source_name(tr.route_skew_source)
            << "'s: the interval reaches whole overlap; ring-routes writes share_skew_us";
        o << ")";
      }
    } else
      o << "ring routes not applied (the algorithm priced here is not a neighbour ring)";
    add(o.str());
  }
  const double s_priced = measured_bytes_at(tr, s_eff);
  if (pr.beyond_measured) {
    out.size_octaves = pr.beyond_octaves;
    const double edge = pr.beyond_octaves > 0 ? pr.curve->bytes.back() : pr.curve->bytes.front();
    out.size_edge_bytes = edge;
    auto g4 = [](double x) {
      std::ostringstream o;
      o << std::setprecision(4) << x;
      return o.str();
    };
    // (Below 1 B the price is the 1-byte price: a factor would mean nothing.)
    add("size " + g4(s_priced) + " B" +
        (per_step ? " (the measured count's per-step equivalent of " + g4(s_eff) + " B)" : std::string()) +
        " is " +
        (s_priced < 1.0 ? std::string()
                     : g4(std::exp2(std::abs(pr.beyond_octaves))) + "x ") +
        (pr.beyond_octaves > 0 ? "above the largest" : "below the smallest") + " measured (" +
        g4(edge) + " B): priced past the sweep, interval widened");
  } else if (!d.bytes.contains(s_eff)) {
    add("size " + fmt(s_eff) + " B outside the measured range");
  }
  const int fh = floor_hosts(lc);
  out.link_floor_us = link_floor_time_us(*best, lc.group_size, fh, s_eff);
  out.at_link_floor = out.link_floor_us > 0 && pr.time_us <= out.link_floor_us;
  // Which floor: the host links' (a group across hosts whose bytes must leave through its ranks'
  // PCIe) where it is above every link's.
  out.at_host_link_floor =
      out.at_link_floor && fh > 1 &&
      out.link_floor_us > link_floor_time_us(*best, lc.group_size, 1, s_eff);
  // (For uneven counts S_eff is the model's effective size, above the bytes that must move: the
  // floor there is the model's premise, not a physical bound; docs/CALIBRATION.md.)
  if (out.at_link_floor)
    add((out.at_host_link_floor
             ? "priced at the host links' floor (" +
                   (std::ostringstream() << std::setprecision(4) << best->host_link_GBps).str() +
                   " GB/s per GPU and direction: the bytes leaving each of " + std::to_string(fh) +
                   " hosts through the PCIe links of its ranks, at most " +
                   std::to_string(std::max(1, lc.group_size / fh)) + " on the least-populated)"
             : "priced at the GPUs' link ceiling (" +
                   (std::ostringstream() << std::setprecision(4) << best->link_ceiling_GBps).str() +
                   " GB/s per GPU and direction)") +
        ": " +
        (std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) == counts.end()
             ? std::string("no collective of this size can run faster")
             : std::string("the floor at S_eff, the model's size for these uneven counts")));
  out.extrapolated = !note.empty();
  out.note = note;
  out.segment = int(pr.segment);
  out.time_us = pr.time_us;
  out.lo_us = pr.lo_us;
  out.hi_us = pr.hi_us;
  out.basis = !pr.curve ? "backbone" : pr.curve_exact ? "measured curve" : "nearest class's curve";
  if (tr.active)
    out.basis = "hosts=" + std::to_string(best->hosts) +
                " transported to hosts=" + std::to_string(lc.hosts) +
                (tr.other && tr.law_tested ? ", tested by hosts=" + std::to_string(tr.other->hosts)
                                           : ", untested") +
                " (" + out.basis + ")";
  if (pr.switch_gap) out.basis += ", switch in the gap";
  if (pr.beyond_measured) out.basis += ", beyond the measured sizes";
  return out;
}

}  // namespace shardcal::calib

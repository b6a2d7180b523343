// Host-count transport, in one place (host_transport.hpp; docs/CALIBRATION.md "Other host
// counts"): the laws a price is carried along from a measured host count to another, the test of
// those laws against a second measured count that chooses them (host_transport()), the note that
// says so, and the transported price (price_transported()) on top of the cost model's price().
// Python prices through it; tests/calibrate/oracle/host_transport.py re-reads it as a test
// oracle.
#include "shardcal/calibrate/host_transport.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace shardcal::calib {

std::string_view latency_law_name(LatencyLaw law) {
  switch (law) {
    case LatencyLaw::RingSteps: return "ring-steps";
    case LatencyLaw::TreeDepth: return "tree-depth";
    case LatencyLaw::LogRanks: return "log2-ranks";
    case LatencyLaw::Flat: return "flat";
  }
  return "?";
}

std::string_view bandwidth_law_name(BandwidthLaw law) {
  return law == BandwidthLaw::HostShare ? "host-share" : "bus-factor";
}

double latency_growth(LatencyLaw law, int n_b, int h_b, int n, int h) {
  switch (law) {
    case LatencyLaw::RingSteps: return n_b > 1 ? double(n - 1) / double(n_b - 1) : 1.0;
    case LatencyLaw::TreeDepth:
      return (1.0 + std::log2(double(h))) / (1.0 + std::log2(double(h_b)));
    case LatencyLaw::LogRanks:
      return n_b > 1 && n > 1 ? std::log2(double(n)) / std::log2(double(n_b)) : 1.0;
    case LatencyLaw::Flat: return 1.0;
  }
  return 1.0;
}

LatencyLaw default_latency_law(Collective op, std::string_view backend) {
  // NCCL's all_reduce across nodes at small sizes: double binary trees (NCCL 2.4+); else rings
  // (NCCL's other collectives; MPI's bandwidth-optimal large-message algorithms; the profile's
  // own ring formula).
  return backend == "nccl" && op == Collective::AllReduce ? LatencyLaw::TreeDepth
                                                          : LatencyLaw::RingSteps;
}

BandwidthLaw default_bandwidth_law(Collective op) {
  return op == Collective::AllToAll ? BandwidthLaw::HostShare : BandwidthLaw::BusFactor;
}

double bandwidth_growth(BandwidthLaw law, Collective op, int n_b, int h_b, int n, int h) {
  if (law == BandwidthLaw::HostShare)
    return h_b > 1 ? (double(h - 1) / h) / (double(h_b - 1) / h_b) : 1.0;
  const CollectiveInfo& info = collective_info(op);
  return n_b > 1 && info.busbw_factor(n_b) > 0 ? info.busbw_factor(n) / info.busbw_factor(n_b)
                                               : 1.0;
}

std::pair<double, double> known_switch(Collective op, std::string_view backend, int h_b, int h) {
  // NCCL's all_reduce on two nodes: a double binary tree without interior nodes moves each
  // node's bytes across once where a ring (and the tree on more nodes) moves them twice.
  if (backend == "nccl" && op == Collective::AllReduce && (h_b == 2) != (h == 2) && h_b > 1 &&
      h > 1)
    return h_b == 2 ? std::pair{1.0, 2.0} : std::pair{0.5, 1.0};
  return {1.0, 1.0};
}

// Carried at equal per-step messages (docs/CALIBRATION.md "Other host counts"): a neighbour
// ring's 1 or 2 (n - 1) steps each move S/n, so on n ranks it runs the measured count's steps at
// S' = S n_b / n, (n - 1)/(n_b - 1) times over. MPI chooses its point-to-point protocol per
// message by its size (eager / rendezvous: Open MPI's btl eager limits, SMPI's
// smpi/send-is-detached-thresh), so a ring's features sit at per-step sizes and move with n; the
// ring-steps and bus-factor laws at the same S would carry them to the wrong sizes (SMPI's
// reduce_scatter ring: +59 % at 1 MiB on 8 hosts). NCCL picks its protocol per call from the
// total size and rank count (src/graph/tuning.cc), so its rings keep the laws (on the NCCL-like
// synthetic series this rule moved all_gather 2+4 -> 8 from 7.6 to 9.2 %). Where the rule holds:
// MPI, a neighbour ring at both counts (the laws' ring-steps + bus-factor pair, or the ompi
// selector's ring at both sizes), all_gather / reduce_scatter / all_reduce.
static bool equal_message(const HostTransport& t, LatencyLaw law, BandwidthLaw bw, bool sw, int nb, int n,
                   double s) {
  if (!t.mpi || n <= 1 || nb <= 1) return false;
  if (t.op != Collective::AllGather && t.op != Collective::ReduceScatter &&
      t.op != Collective::AllReduce)
    return false;
  if (t.selector) {
    const auto a = ompi_tuned_algorithm(t.op, nb, s * double(nb) / double(n));
    const auto b = ompi_tuned_algorithm(t.op, n, s);
    return a && b && *a == MpiAlgorithm::Ring && *b == MpiAlgorithm::Ring;
  }
  return law == LatencyLaw::RingSteps && bw == BandwidthLaw::BusFactor && !sw;
}

double transport_factor(double latency_us, double latency_ratio, double bus_ratio, double tb) {
  const double share = tb > 0 ? std::min(1.0, latency_us / tb) : 1.0;
  return share * latency_ratio + (1.0 - share) * bus_ratio;
}

// A transported time in two parts: latency and bandwidth term.
struct TransportParts {
  double lat = 0, bw = 0;
};
// The parts of the measured count's price tb carried by factor `factor` (tb x factor in all), the
// latency part being share R of tb (share = min(1, L / tb)); for a ring at equal per-step
// messages (R = F = the steps' ratio) the same split of tb x factor.
static TransportParts transport_parts(double latency_us, double latency_ratio, double bus_ratio,
                                      double tb) {
  const double share = tb > 0 ? std::min(1.0, latency_us / tb) : 1.0;
  return {tb * share * latency_ratio, tb * (1.0 - share) * bus_ratio};
}
// The size at the measured model m whose per-step messages are the query's (s_eff / n bytes): at
// the group size of the curve that prices m's group size n_m (its protocol switch is that curve's).
static double per_step_size_at(const Model& m, int n_m, double s_eff, int n) {
  const MeasuredCurve* cv = curve_for(m, n_m, 1);
  return s_eff * double(cv ? cv->group_size : n_m) / double(n);
}
// The latency part of the measured count's price tb (m on n_m ranks at `bytes`) where the ring
// routes split it (latency x the steps' ratio + the extra route latency; the bandwidth term x the
// link share) for a ring carried at equal per-step messages. Its steps run the protocol the
// measured size ran, so the bandwidth term is that protocol segment's own (its time less its
// time at 0 B) and the rest of tb is latency: past SMPI's eager limit each step adds a
// rendezvous handshake (4 us a step vs 2 eager on the scattered fat tree) that the link share
// does not slow. Split at t(1 B) (`fallback`, the eager floor), that handshake was priced as
// bandwidth and multiplied by the share: reduce_scatter 2+4 -> 16 hosts +12 .. +38 % there, a
// constant +349 us at 4-16 MiB. The bandwidth term is held at its largest below `bytes` (a
// protocol switch whose bandwidth term is smaller, or a measured curve's switch gap, never
// lowers it) and within [0, tb]: so the routed price, tb R + what the share adds to the bandwidth
// term, never falls with size where the share grows (g > 1; else `fallback`, as where the share
// is the same: there the split only moves the shorter route's clamp).
static double protocol_latency_us(const Model& m, int n_m, int concurrent_groups, double bytes,
                                  double tb, double fallback) {
  const auto bw_of = [&](std::size_t k, double s) {
    return segment_time_us(m, k, n_m, s, concurrent_groups) -
           segment_time_us(m, k, n_m, 0.0, concurrent_groups);
  };
  // The protocol by the per-step message at the group size of the curve that prices n_m (its
  // switch is that curve's; route_latency_for looks it up the same way): `bytes` x gs / n_m.
  const double to_seg = per_step_size_at(m, n_m, 1.0, n_m);
  const std::size_t seg = segment_of(m, bytes * to_seg);
  double bw = bw_of(seg, bytes);
  for (std::size_t k = 0; k < seg; ++k)
    if (const std::optional<double>& edge = m.segments[k].s_hi)
      bw = std::max(bw, bw_of(k, std::nextafter(*edge / to_seg, 0.0)));
  if (!std::isfinite(bw) || !(tb > 0)) return fallback;
  return tb - std::clamp(bw, 0.0, tb);
}
// With the ring routes: the latency part gains `extra` (lock step: the extra route latency delta
// on each of the ring's steps; an overlapped ring's eager steps: its dependency chain's growth),
// the bandwidth term the link-share ratio g as far as the flows sharing the link overlap. The
// share (the smallest per-flow bandwidth with every ring flow at once) assumes they transfer at
// the same time; they start a step as far apart as their routes' latencies differ (skew). Two
// transfers of T offset by the skew, fairly sharing the link while both run, each take
// T (1 + (g - 1) phi), phi = max(0, 1 - skew / T) the share of T they overlap; with T the
// bandwidth term per step (bw / steps):
//     bw (1 + (g - 1) phi) = bw + (g - 1) max(0, bw - steps x skew),
// which never falls as bw grows (g > 0). Flows of one latency overlap whole: on SMPI's fat tree
// with one uplink per leaf and a 4 x 4 torus, hosts scattered (the share halving or quartering,
// the flows on that link 0 us apart), the whole ratio priced all_gather at 0.0-2.6 % median. On
// its two dragonflies (the flows on the halved link 1.5 and 2 us apart at 16 hosts) the whole
// ratio was up to 33 % slow at 2-4 MiB, and phi follows the overlap the measured times show
// (0.4-0.6 at 4 MiB, 0.7-0.95 from 8 MiB). (Taking the head start off once for g > 2 flows,
// a work-conserving link's bound, fitted the even/odd dragonfly but made a held-out stride-3
// one worse, all_gather 2+4 -> 16 hosts 2.2 -> 4.5 %: not kept; docs/CALIBRATION.md.)
// The skew: the table's share_skew_us, else the
// ring's hop latency spread, else its longest route (route_step; of the contended ring, the
// query's where g > 1, the measured count's where g < 1). Where g < 1 phi still comes from the
// query's per-step transfer: exact for a ring carried at equal per-step messages, an overstated
// gain under the bus-factor law; the exact inverse of the measured ring's contention can fall
// with size for g < 1/2, the linear form never does. A shorter route (extra < 0) lowers the
// latency part at most to lat_ratio (the routes' ratio: the rest is the hosts' own).
static double routed_time(const TransportParts& p, double g, double extra, double lat_ratio,
                          double steps, double skew_us) {
  double lat = p.lat + extra;
  if (extra < 0) lat = std::max(lat, p.lat * lat_ratio);
  return lat + p.bw + (g - 1.0) * std::max(0.0, p.bw - std::max(steps, 0.0) * skew_us);
}
// The routes between two host counts (nullopt: the profile lacks one of them); chain: the eager
// dependency chain's envelopes (chain_envelope), where both rings list their hops.
// skew: how far apart the contended ring's flows on its most shared link start (routed_time),
// and where that came from.
struct RouteStep {
  double delta = 0, lat_ratio = 1, g = 1;
  bool chain = false;
  std::vector<ChainLine> chain_from, chain_to;  // the two rings' chains (chain_envelope)
  double chain_carry = 1;          // chain_to's ring steps over chain_from's
  double skew = 0;
  SkewSource skew_source = SkewSource::Table;
};
// Open MPI's ring reduce_scatter (coll_base_reduce_scatter_intra_ring, which SMPI's ompi_ring
// runs) keeps the receive for message k posted from the moment message k-2 arrived and sends
// message k with a blocking send once message k-1 arrived. Past the library's eager limit a send
// waits for its receiver (rendezvous), the ring runs in lock step and every step pays the whole
// extra route latency: on SMPI's fat tree, torus and dragonfly all of it (within 2 %). Below it
// (eager) the steps overlap: the ring takes as long as its dependency chain (chain_envelope),
// which paid 0.05-0.45 of the lock step's extra on those platforms. The measured curve shows
// where the library switches: steps whose messages lie past its first protocol switch (the
// model's segment > 0 at the measured count) are priced in lock step; the others by the chain
// where the routes list every hop's latency (and the loopback's) and the ring is carried at equal
// per-step messages (the two chains compared at one message), else at the geometric middle of
// the prices without and with the lock step's extra (weight 1/2 in log space, as a known switch's
// range is priced); a model with one segment (no switch measured) at the middle too. The
// interval reaches both of those prices either way.
// The collectives that run as neighbour rings over the hosts (all_to_all, gather, broadcast, ...
// do not, whatever their latency law): the ones the ring routes can price.
static bool ring_family(Collective op) {
  return op == Collective::AllGather || op == Collective::ReduceScatter || op == Collective::AllReduce;
}
bool route_latency_overlapped(const HostTransport& t) { return t.ompi_ring_reduce_scatter; }
// route_latency for m priced at n_m ranks, the query s_eff on n ranks (the size looked up only
// for an overlapped ring: the planner's hot path prices every other ring in lock step).
static RouteLatency route_latency_for(bool overlapped, bool chain, const Model& m, int n_m,
                                      double s_eff, int n) {
  if (!overlapped) return RouteLatency::LockStep;
  if (m.segments.size() < 2) return RouteLatency::Middle;  // no switch measured: which side is unknown
  if (segment_of(m, per_step_size_at(m, n_m, s_eff, n)) > 0) return RouteLatency::LockStep;
  return chain ? RouteLatency::Chain : RouteLatency::Middle;
}
// The routed price by mode: lock step (steps x delta), the eager chain (its extra at this size:
// `chain`), or the geometric middle of the prices without and with the lock step's extra. The
// chain moves each hop's message at its count's link share, so it holds the share's change: the
// bandwidth term is not multiplied by g again.
static double mode_routed_time(const TransportParts& p, const RouteStep& r, double steps,
                               RouteLatency mode, const ChainExtra& chain) {
  const double t1 = routed_time(p, r.g, steps * r.delta, r.lat_ratio, steps, r.skew);
  switch (mode) {
    case RouteLatency::LockStep:
      return t1;
    case RouteLatency::Chain: {
      // The chain's extra at 0 B is latency (a shorter chain lowers the latency part at most to
      // lat_ratio of it); the rest is the transfers' difference, on the bandwidth part.
      TransportParts q = p;
      q.bw = std::max(0.0, p.bw + (chain.extra_us - chain.extra0_us));
      return routed_time(q, 1.0, chain.extra0_us, chain.lat_ratio, steps, r.skew);
    }
    case RouteLatency::Middle: {
      const double t0 = routed_time(p, r.g, 0.0, r.lat_ratio, steps, r.skew);
      return t0 > 0 && t1 > 0 ? std::sqrt(t0) * std::sqrt(t1) : t1;
    }
  }
  return t1;
}
// An eager ring's dependency chain (Open MPI's reduce_scatter ring, above): message k reaches
// rank r once rank r-1 holds message k-1 (it sends then) and rank r holds message k-2 (its
// receive for k is posted then), one hop later:
//   A(r, k) = max(max(A(r-1, k-1), A(r, k-2)) + L(r-1 -> r) + m w(r-1 -> r),
//                 A(r, k-1) + m w(r-1 -> r)),               A(., 0) = A(., -1) = 0,
// done when every rank holds message n-1. L: the ring's hop latency between hosts (host i to
// i+1 of the order), the loopback's between two ranks of one host (c consecutive ranks per
// host); m w: the per-step message m moved at the ring flow's link share between hosts (that
// count's share_GBps), at the loopback's bandwidth inside one (0 where the table has none); the
// second term: a flow moves one message at a time. With latencies alone the chain left out that
// a slow hop's transfer also waits: on SimGrid's example fat tree (125 MB/s links, a 100 MB/s
// loopback) the eager reduce_scatter 2+4 -> 8 and 16 hosts was priced 13-27 % high at 8-32 KiB
// per step; this chain gives every measured eager point there to 0.1 %, and without the second
// term SimGrid's example dragonfly's to 41 % (with it 9.9 %; calibrate/scripts/eager_ring.py
// series). Every path's end is a line a + b m, so the chain is their upper envelope, built once
// per ring (O(n^2) cells of a few lines each): none past kChainMaxRanks ranks, nor without a hop
// list (or, c > 1, the loopback latency).
constexpr int kChainMaxRanks = 1024;
// The upper envelope on m >= 0 of lines sorted by slope (ties: higher first): slopes ascending,
// each line the largest on an interval. Linear: the inputs are envelopes merged (chain_envelope).
static void upper_envelope_sorted(const std::vector<ChainLine>& v, std::vector<ChainLine>& h) {
  h.clear();
  for (const ChainLine& l : v) {
    if (!h.empty() && h.back().b == l.b) continue;  // (the same slope, no higher)
    // A smaller slope no higher at m = 0 is below l on all of m >= 0.
    while (!h.empty() && h.back().a <= l.a) h.pop_back();
    // The last line is below the others where l overtakes the one before it no later than it does.
    while (h.size() >= 2) {
      const ChainLine &p = h[h.size() - 2], &q = h.back();
      if ((p.a - l.a) * (q.b - p.b) <= (p.a - q.a) * (l.b - p.b))
        h.pop_back();
      else
        break;
    }
    h.push_back(l);
  }
}
static bool by_slope(const ChainLine& x, const ChainLine& y) { return x.b < y.b || (x.b == y.b && x.a > y.a); }
static double envelope_at(const std::vector<ChainLine>& e, double m) {
  double v = -std::numeric_limits<double>::infinity();
  for (const ChainLine& l : e) v = std::max(v, l.a + l.b * m);
  return e.empty() ? 0.0 : v;
}
// The per-step messages where the envelope's line changes (> 0; two nearly equal lines can give
// two breaks a rounding apart, out of order).
static std::vector<double> envelope_breaks(const std::vector<ChainLine>& e) {
  std::vector<double> x;
  for (std::size_t i = 0; i + 1 < e.size(); ++i) x.push_back((e[i].a - e[i + 1].a) / (e[i + 1].b - e[i].b));
  return x;
}
// The chain of the ring over the first `hosts` hosts at c ranks per host, its transfers between
// hosts at that ring's share; nullopt where it cannot be priced (above).
static std::optional<std::vector<ChainLine>> chain_envelope(const Profile::RingRoutes& rr, int hosts, int c) {
  const Profile::RingRoute* ring = rr.at(hosts);
  if (!ring || ring->hop_latency_us.size() != std::size_t(hosts) || c < 1) return std::nullopt;
  if (c > 1 && !rr.loopback_latency_us) return std::nullopt;
  if (c > kChainMaxRanks / hosts) return std::nullopt;  // (before multiplying: no overflow)
  const std::size_t n = std::size_t(hosts) * std::size_t(c);
  // (the reader keeps share_GBps and loopback_GBps >= 1e-3: finite per-byte times)
  const double inter_w = 1.0 / (ring->share_GBps * 1e3);
  const double loop_w = rr.loopback_GBps ? 1.0 / (*rr.loopback_GBps * 1e3) : 0.0;
  // Every price transported across these counts builds it again (a 64-rank ring: ~0.1 ms): kept
  // by its inputs, for all threads.
  std::vector<double> key = ring->hop_latency_us;
  key.insert(key.end(), {inter_w, rr.loopback_latency_us.value_or(0.0), loop_w, double(c)});
  static std::mutex cache_mutex;
  static std::map<std::vector<double>, std::vector<ChainLine>> cache;
  {
    const std::lock_guard<std::mutex> lock(cache_mutex);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  std::vector<ChainLine> into(n);  // the hop into rank r: its latency and transfer per byte
  for (std::size_t r = 0; r < n; ++r) {
    const std::size_t from = (r + n - 1) % n, uc = std::size_t(c);
    into[r] = from / uc != r / uc ? ChainLine{ring->hop_latency_us[from / uc], inter_w}
                                  : ChainLine{*rr.loopback_latency_us, loop_w};
  }
  // Each cell's envelope from three earlier ones, each shifted by one line: still sorted by
  // slope, so merged and swept in linear time (buffers reused across steps).
  const std::vector<ChainLine> zero{ChainLine{}};
  std::vector<std::vector<ChainLine>> k2(n, zero), k1(n, zero), k0(n);
  std::vector<ChainLine> x, y, z, xy, xyz;
  const auto shifted = [](const std::vector<ChainLine>& e, double a, double b, std::vector<ChainLine>& out) {
    out.clear();
    for (const ChainLine& l : e) out.push_back({l.a + a, l.b + b});
  };
  for (std::size_t k = 1; k < n; ++k) {
    for (std::size_t r = 0; r < n; ++r) {
      const ChainLine h = into[r];
      shifted(k1[(r + n - 1) % n], h.a, h.b, x);
      shifted(k2[r], h.a, h.b, y);
      shifted(k1[r], 0.0, h.b, z);  // (one message at a time)
      xy.resize(x.size() + y.size());
      std::merge(x.begin(), x.end(), y.begin(), y.end(), xy.begin(), by_slope);
      xyz.resize(xy.size() + z.size());
      std::merge(xy.begin(), xy.end(), z.begin(), z.end(), xyz.begin(), by_slope);
      upper_envelope_sorted(xyz, k0[r]);
    }
    std::swap(k2, k1);
    std::swap(k1, k0);
  }
  xyz.clear();
  for (const std::vector<ChainLine>& e : k1) xyz.insert(xyz.end(), e.begin(), e.end());
  std::sort(xyz.begin(), xyz.end(), by_slope);
  std::vector<ChainLine> out;
  upper_envelope_sorted(xyz, out);
  const std::lock_guard<std::mutex> lock(cache_mutex);
  if (cache.size() >= 256) cache.clear();  // (bounded: a planner prices a few tables' rings)
  cache.emplace(std::move(key), out);
  return out;
}
// The chain at the query's count minus the measured one's carried by the steps' ratio, at a
// per-step message of m bytes; lat_ratio the two chains' ratio at 0 B (their latencies: how far
// a shorter chain can lower the latency part, routed_time). Each ring moves its messages between
// hosts at its own count's share, so the chain holds the share's change. (Tried, not kept: the
// query's transfers at the measured share times the share ratio as far as the flows overlap, by
// their skew or by how busy a flow is; a dragonfly's eager steps 1-2 points better, but the
// chain is then no envelope of lines and its prices' monotonicity could not be kept exactly.)
static ChainExtra chain_extra(const std::vector<ChainLine>& from, const std::vector<ChainLine>& to,
                              double carry, double m) {
  const double carried0 = envelope_at(from, 0.0) * carry;
  return {envelope_at(to, m) - envelope_at(from, m) * carry, envelope_at(to, 0.0) - carried0,
          carried0 > 0 ? envelope_at(to, 0.0) / carried0 : 1.0};
}
// The eager chain from h_from to h_to hosts at c ranks per host, where both rings list their hops:
// the chain at h_to minus the one at h_from carried by the ring's steps (as the latency part is).
static void add_chain(RouteStep& r, const Profile& p, Collective op, int h_from, int h_to, int c) {
  std::optional<std::vector<ChainLine>> a = chain_envelope(*p.ring_routes, h_from, c);
  std::optional<std::vector<ChainLine>> b = chain_envelope(*p.ring_routes, h_to, c);
  if (!a || !b) return;
  r.chain = true;
  r.chain_from = std::move(*a);
  r.chain_to = std::move(*b);
  r.chain_carry = double(collective_info(op).ring_steps(h_to * c)) /
                  double(collective_info(op).ring_steps(h_from * c));
}
// A measured count's latency floor L: its price at 1 B without NCCL's downward lean (cost_model.cpp
// curve_part). L is the latency's part of the measured times, the backbone's alpha carried; the
// lean prices sizes below a sweep, and in L it moved transported prices inside the measured range
// (a sweep from 1 MiB: -14 % at 1 MiB on 8 hosts).
static double latency_floor_us(const Model& m, int n, int c) {
  if (!m.channel_ramp) return price_time_us(m, n, c, 1.0);
  Model b = m;
  b.channel_ramp = false;
  return price_time_us(b, n, c, 1.0);
}
static std::optional<RouteStep> route_step(const Profile& p, int h_from, int h_to) {
  if (!p.ring_routes) return std::nullopt;
  const auto* a = p.ring_routes->at(h_from);
  const auto* b = p.ring_routes->at(h_to);
  if (!a || !b) return std::nullopt;
  RouteStep r;
  r.delta = b->latency_us - a->latency_us;
  r.lat_ratio = a->latency_us > 0 ? b->latency_us / a->latency_us : 1.0;
  r.g = a->share_GBps / b->share_GBps;
  // The skew of the ring whose flows share more: the query's (g > 1), else the measured one's
  // (its time held g^-1 of a contention the query lacks only as far as its flows overlapped).
  const Profile::RingRoute& c = r.g >= 1.0 ? *b : *a;
  const std::vector<double>& hops = c.hop_latency_us;
  if (c.share_skew_us) {
    r.skew = *c.share_skew_us;
  } else if (hops.size() == std::size_t(c.hosts) && !hops.empty()) {
    const auto [lo, hi] = std::minmax_element(hops.begin(), hops.end());
    r.skew = *hi - *lo;
    r.skew_source = SkewSource::HopSpread;
  } else {
    r.skew = c.latency_us;
    r.skew_source = SkewSource::LongestRoute;
  }
  return r;
}

// ---- Open MPI's coll/tuned fixed decision rules, as SMPI's `ompi` selector runs them ----------
// Source: SimGrid src/smpi/colls/smpi_openmpi_selector.cpp ("selector for collective algorithms
// based on openmpi's default coll_tuned_decision_fixed selector, Updated 02/2022"; unchanged but
// for copyright lines from SimGrid 3.32 to v4.1), functions allgather__ompi, allreduce__ompi
// (commutative branch) and reduce_scatter__ompi (commutative branch); the rules are Open MPI's
// ompi/mca/coll/tuned/coll_tuned_decision_fixed.c (ompi_coll_tuned_allgather_intra_dec_fixed,
// ..._allreduce_intra_dec_fixed, ..._reduce_scatter_intra_dec_fixed; the 2020 rules of Open MPI
// 4.1 / 5.0). Encoded as thresholds, not code: per communicator-size band (n < ranks_below, the
// first band that holds n), the first row whose bytes_below exceeds the size the rule reads
// (all_gather: one rank's block, S / n; all_reduce: the buffer, S; reduce_scatter: the whole
// input, S). SMPI's implementations: allgather__rdb, __bruck, __ring (Faraj's pairwise),
// __ompi_neighborexchange, __pair; allreduce__rdb, __lr, __ompi_ring_segmented, __rab_rdb,
// __redbcast; reduce_scatter__ompi_basic_recursivehalving, __ompi_ring, __ompi_butterfly,
// __default.
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kAll = std::numeric_limits<int>::max();
using A = MpiAlgorithm;
struct SelectorRow {
  int ranks_below;
  double bytes_below;
  MpiAlgorithm alg;
};

// The tables keep a band to a line or two (clang-format would put every row on its own line).
// clang-format off
// allgather__ompi: n == 2 two_proc; < 32 recursive doubling; then by block size.
constexpr SelectorRow kOmpiAllGather[] = {
    {3, kInf, A::TwoProc},  // communicator_size == 2 (n = 1 never reaches a transport)
    {32, kInf, A::RecursiveDoubling},
    {64, 1024, A::RecursiveDoubling}, {64, 65536, A::NeighborExchange}, {64, kInf, A::PairwiseRing},
    {128, 512, A::RecursiveDoubling}, {128, 65536, A::NeighborExchange}, {128, kInf, A::PairwiseRing},
    {256, 512, A::RecursiveDoubling}, {256, 131072, A::NeighborExchange},
    {256, 524288, A::PairwiseRing}, {256, 1048576, A::NeighborExchange}, {256, kInf, A::PairwiseRing},
    {512, 32, A::RecursiveDoubling}, {512, 128, A::Bruck}, {512, 1024, A::RecursiveDoubling},
    {512, 131072, A::NeighborExchange}, {512, 524288, A::PairwiseRing},
    {512, 1048576, A::NeighborExchange}, {512, kInf, A::PairwiseRing},
    {1024, 64, A::RecursiveDoubling}, {1024, 256, A::Bruck}, {1024, 2048, A::RecursiveDoubling},
    {1024, kInf, A::NeighborExchange},
    {2048, 4, A::RecursiveDoubling}, {2048, 8, A::Bruck}, {2048, 16, A::RecursiveDoubling},
    {2048, 32, A::Bruck}, {2048, 256, A::RecursiveDoubling}, {2048, 512, A::Bruck},
    {2048, 4096, A::RecursiveDoubling}, {2048, kInf, A::NeighborExchange},
    {4096, 32, A::Bruck}, {4096, 128, A::RecursiveDoubling}, {4096, 512, A::Bruck},
    {4096, 4096, A::RecursiveDoubling}, {4096, kInf, A::NeighborExchange},
    {kAll, 2, A::RecursiveDoubling}, {kAll, 8, A::Bruck}, {kAll, 16, A::RecursiveDoubling},
    {kAll, 512, A::Bruck}, {kAll, 4096, A::RecursiveDoubling}, {kAll, kInf, A::NeighborExchange},
};
// allreduce__ompi, commutative: 1 basic_linear / 2 nonoverlapping -> redbcast, 3 rdb, 4 lr
// (ring), 5 segmented ring, 6 rab_rdb (Rabenseifner).
constexpr SelectorRow kOmpiAllReduce[] = {
    {4, 8, A::Ring}, {4, 4096, A::RecursiveDoubling}, {4, 8192, A::Ring},
    {4, 16384, A::RecursiveDoubling}, {4, 65536, A::Ring}, {4, 262144, A::Ring},  // segmented
    {4, kInf, A::Rabenseifner},
    {8, 16, A::Ring}, {8, 8192, A::RecursiveDoubling}, {8, kInf, A::Rabenseifner},
    {16, 8192, A::RecursiveDoubling}, {16, kInf, A::Rabenseifner},
    {32, 64, A::Ring}, {32, 4096, A::RecursiveDoubling}, {32, kInf, A::Rabenseifner},
    {64, 128, A::Ring}, {64, kInf, A::Rabenseifner},
    {128, 262144, A::RecursiveDoubling}, {128, kInf, A::Rabenseifner},
    {256, 131072, A::ReduceThenBcast}, {256, 262144, A::RecursiveDoubling},
    {256, kInf, A::Rabenseifner},
    {512, 4096, A::ReduceThenBcast}, {512, kInf, A::Rabenseifner},
    {2048, 2048, A::ReduceThenBcast}, {2048, 16384, A::RecursiveDoubling},
    {2048, kInf, A::Rabenseifner},
    {4096, 2048, A::ReduceThenBcast}, {4096, 4096, A::Ring}, {4096, 16384, A::RecursiveDoubling},
    {4096, kInf, A::Rabenseifner},
    {kAll, 2048, A::ReduceThenBcast}, {kAll, 16384, A::Ring}, {kAll, 32768, A::RecursiveDoubling},
    {kAll, kInf, A::Rabenseifner},
};
// reduce_scatter__ompi, commutative: 1 non-overlapping (reduce + scatterv), 2 recursive
// halving, 3 ring, 4 butterfly.
constexpr SelectorRow kOmpiReduceScatter[] = {
    {4, 65536, A::Ring}, {4, 131072, A::Butterfly}, {4, kInf, A::Ring},
    {8, 8, A::ReduceThenBcast}, {8, 262144, A::RecursiveHalving}, {8, kInf, A::Ring},
    {32, 262144, A::RecursiveHalving}, {32, kInf, A::Ring},
    {64, 64, A::ReduceThenBcast}, {64, 2048, A::RecursiveHalving}, {64, 524288, A::Butterfly},
    {64, kInf, A::Ring},
    {128, 256, A::ReduceThenBcast}, {128, 512, A::RecursiveHalving}, {128, 2048, A::Butterfly},
    {128, 4096, A::RecursiveHalving}, {128, kInf, A::Butterfly},
    {256, 256, A::ReduceThenBcast}, {256, 512, A::RecursiveHalving}, {256, kInf, A::Butterfly},
    {512, 256, A::ReduceThenBcast}, {512, 1024, A::RecursiveHalving}, {512, kInf, A::Butterfly},
    {1024, 512, A::ReduceThenBcast}, {1024, 2048, A::RecursiveHalving}, {1024, 8192, A::Butterfly},
    {1024, 16384, A::RecursiveHalving}, {1024, kInf, A::Butterfly},
    {2048, 512, A::ReduceThenBcast}, {2048, 4096, A::RecursiveHalving},
    {2048, 16384, A::Butterfly}, {2048, 32768, A::RecursiveHalving}, {2048, kInf, A::Butterfly},
    {4096, 512, A::ReduceThenBcast}, {4096, 4096, A::RecursiveHalving}, {4096, kInf, A::Butterfly},
    {kAll, 1024, A::ReduceThenBcast}, {kAll, 8192, A::RecursiveHalving}, {kAll, kInf, A::Butterfly},
};
// clang-format on

template <std::size_t N>
MpiAlgorithm select_row(const SelectorRow (&rows)[N], int n, double bytes) {
  for (const SelectorRow& r : rows)
    if (n < r.ranks_below && bytes < r.bytes_below) return r.alg;
  return rows[N - 1].alg;
}

// ceil(log2 x) for x >= 1, in integers (0 for x <= 1).
double ceil_log2(int x) {
  int k = 0;
  while (x > 1 && (1LL << k) < x) ++k;
  return double(k);
}

}  // namespace

std::string_view mpi_algorithm_name(MpiAlgorithm a) {
  switch (a) {
    case A::Ring: return "ring";
    case A::NeighborExchange: return "neighbour exchange";
    case A::RecursiveDoubling: return "recursive doubling";
    case A::Bruck: return "Bruck";
    case A::PairwiseRing: return "pairwise ring";
    case A::TwoProc: return "two-proc";
    case A::Rabenseifner: return "Rabenseifner";
    case A::RecursiveHalving: return "recursive halving";
    case A::Butterfly: return "butterfly";
    case A::ReduceThenBcast: return "reduce + broadcast";
  }
  return "?";
}

std::optional<MpiAlgorithm> ompi_tuned_algorithm(Collective op, int n, double bytes) {
  switch (op) {
    case Collective::AllGather: return select_row(kOmpiAllGather, n, bytes / double(n));
    case Collective::AllReduce: return select_row(kOmpiAllReduce, n, bytes);
    case Collective::ReduceScatter: return select_row(kOmpiReduceScatter, n, bytes);
    default: return std::nullopt;
  }
}

AlgorithmShape algorithm_shape(MpiAlgorithm a, Collective op, int n, int h) {
  // Per byte of S through one host's NIC, r = n / h ranks per host (consecutive ranks), hs the
  // share of the peers off the host, (h - 1) / h. A neighbour ring sends each block across a host
  // boundary once ((n - 1) / n; all_reduce twice); algorithms whose partners at distance >= r all
  // sit on other hosts send every rank's exchange across at once: recursive doubling, Bruck, the
  // pairwise ring and farthest-first recursive halving r * hs; nearest-first halving and doubling
  // (butterfly, Rabenseifner's two halves) shrink the exchange before it leaves the host: hs
  // (Rabenseifner 2 hs); all_reduce's recursive doubling sends all of S every step, log2 h of them
  // across: r log2 h; reduce + broadcast along binomial trees 2 log2 h.
  const double dn = double(n), r = dn / double(std::max(h, 1));
  const double hs = h > 1 ? double(h - 1) / double(h) : 0.0;
  const double lg = ceil_log2(n), lh = ceil_log2(h);
  const bool ar = op == Collective::AllReduce;
  switch (a) {
    case A::Ring: return {ar ? 2.0 * (dn - 1.0) : dn - 1.0, (ar ? 2.0 : 1.0) * (dn - 1.0) / dn};
    case A::NeighborExchange: return {dn / 2.0, (dn - 1.0) / dn};
    case A::RecursiveDoubling: return {lg, ar ? r * lh : r * hs};
    case A::Bruck: return {lg, r * hs};
    case A::PairwiseRing: return {dn - 1.0, r * hs};
    case A::TwoProc: return {1.0, r * hs};
    case A::Rabenseifner: return {2.0 * lg, 2.0 * hs};
    case A::RecursiveHalving: return {lg, r * hs};
    case A::Butterfly: return {lg, hs};
    case A::ReduceThenBcast: return {2.0 * lg, 2.0 * lh};
  }
  return {dn - 1.0, (dn - 1.0) / dn};
}

// The algorithm an MPI profile says op was forced to (Profile::mpi_selector "forced"); null: none.
static const std::string* forced_algorithm(const Profile& p, Collective op) {
  if (p.backend != "mpi" || !p.mpi_selector) return nullptr;
  const auto it = p.mpi_selector->forced.find(std::string(collective_info(op).name));
  return it == p.mpi_selector->forced.end() ? nullptr : &it->second;
}

bool selector_known(const Profile& p, Collective op) {
  if (p.backend != "mpi" || !p.mpi_selector || p.mpi_selector->selector != "ompi") return false;
  if (forced_algorithm(p, op)) return false;
  return ompi_tuned_algorithm(op, 2, 1.0).has_value();
}

// SMPI's neighbour-ring algorithms (src/smpi/colls: allgather NTSLR, NTSLR_NB; allreduce lr,
// ompi_ring_segmented; reduce_scatter ompi_ring). Not allgather "ring" (Faraj's pairwise
// exchange, rank + i at step i) nor "loosely_lr" (hierarchical: rank +- cores across hosts).
bool forced_ring(const Profile& p, Collective op) {
  static const std::set<std::pair<Collective, std::string>> kRings = {
      {Collective::AllGather, "NTSLR"},    {Collective::AllGather, "NTSLR_NB"},
      {Collective::AllReduce, "lr"},       {Collective::AllReduce, "ompi_ring_segmented"},
      {Collective::ReduceScatter, "ompi_ring"}};
  const std::string* alg = forced_algorithm(p, op);
  return alg && kRings.count({op, *alg}) > 0;
}

// Open MPI's ring reduce_scatter: an MPI reduce_scatter not forced to another algorithm (an
// MPI without the record, e.g. a real Open MPI, is taken for Open MPI).
static bool ompi_ring_reduce_scatter(const Profile& p, Collective op) {
  if (p.backend != "mpi" || op != Collective::ReduceScatter) return false;
  const std::string* alg = forced_algorithm(p, op);
  return !alg || *alg == "ompi_ring";
}

SelectorStructure selector_structure(Collective op, int n_b, int h_b, int n, int h, double bytes) {
  SelectorStructure out;
  const auto ab = ompi_tuned_algorithm(op, n_b, bytes), aq = ompi_tuned_algorithm(op, n, bytes);
  if (!ab || !aq) return out;
  out.from = *ab;
  out.to = *aq;
  out.switched = *ab != *aq;
  const AlgorithmShape sb = algorithm_shape(*ab, op, n_b, h_b), sq = algorithm_shape(*aq, op, n, h);
  out.latency_ratio = sb.steps > 0 ? sq.steps / sb.steps : 1.0;
  out.bus_ratio = sb.nic_bytes > 0 ? sq.nic_bytes / sb.nic_bytes : 1.0;
  return out;
}

// The ompi selector runs a neighbour ring at both counts for op at S (the measured count at its
// per-step-equal size S n_b / n is not asked: the routes concern the steps, which a ring has at
// both).
static bool ring_at_both(Collective op, int n_b, int n, double bytes) {
  const auto a = ompi_tuned_algorithm(op, n_b, bytes), b = ompi_tuned_algorithm(op, n, bytes);
  return a && b && *a == MpiAlgorithm::Ring && *b == MpiAlgorithm::Ring;
}

// The host-count transport for a query (host_transport.hpp): when the query
// spans hosts the chosen model did not measure, the structure from its count to the query's, and
// the test of that structure against a second measured inter-host model of the collective (same
// dtype and concurrency, domain derived from measurements) nearest the chosen one. None when the
// query or the chosen model is intra-host.
HostTransport host_transport(const Profile& p, const Model& best, const LinkClass& lc) {
  HostTransport t;
  if (lc.hosts <= 1 || best.hosts <= 1 || best.hosts == lc.hosts || best.domain) return t;
  double other_d = 0;
  for (const Model& m : p.models) {
    if (&m == &best || m.collective != best.collective || m.hosts <= 1 || m.hosts == best.hosts ||
        m.domain || m.dtype != best.dtype || m.concurrent_groups != best.concurrent_groups)
      continue;
    const double d = std::abs(std::log(double(m.hosts) / best.hosts));
    if (!t.other || d < other_d || (d == other_d && m.hosts > t.other->hosts))
      t.other = &m, other_d = d;
  }
  const int c = lc.concurrent_groups, rph = lc.ranks_per_host;
  const Collective op = best.collective;
  t.active = true;
  // The ring routes: used only where the table lists the measured count, the query's and the
  // test's (the test carries its prices with the same routes), for one ring at a time (the share is
  // one ring's flows); else the note says why not.
  std::optional<RouteStep> route_bq, route_ab;
  if (p.ring_routes) {
    const auto missing = [&](int h) { return p.ring_routes->at(h) == nullptr; };
    if (missing(lc.hosts))
      t.route_skipped = "hosts=" + std::to_string(lc.hosts) + " is not in the table";
    else if (missing(best.hosts))
      t.route_skipped = "the measured hosts=" + std::to_string(best.hosts) + " is not in the table";
    else if (t.other && missing(t.other->hosts))
      t.route_skipped = "the test's hosts=" + std::to_string(t.other->hosts) + " is not in the table";
    else if (c > 1)
      t.route_skipped = std::to_string(c) + " concurrent groups: the table describes one ring";
    if (t.route_skipped.empty()) {
      route_bq = route_step(p, best.hosts, lc.hosts);
      if (t.other) route_ab = route_step(p, t.other->hosts, best.hosts);
    }
  }
  t.n_model = best.hosts * rph;
  t.n_query = lc.group_size;
  t.doublings = std::abs(std::log2(double(lc.hosts) / best.hosts));
  t.law = default_latency_law(op, p.backend);
  t.bw_law = default_bandwidth_law(op);
  t.step_log_sigma = kHostTransportLogSigma;
  t.op = op;
  t.hosts_model = best.hosts;
  t.hosts_query = lc.hosts;
  t.floor_hosts = floor_hosts(lc);
  t.selector = selector_known(p, op);
  t.mpi = p.backend == "mpi";
  t.forced_ring = forced_ring(p, op);
  t.ompi_ring_reduce_scatter = ompi_ring_reduce_scatter(p, op);
  if (t.other) {
    // The test: the other count's prices carried to the chosen count by each law, at the sizes
    // both measured (their curves' knots inside both domains; else a grid over the overlap).
    const Model& a = *t.other;
    t.n_other = a.hosts * rph;
    t.test_doublings = std::abs(std::log2(double(best.hosts) / a.hosts));
    // At the largest ranks per host both counts measured (else the query's), so the laws chosen
    // do not depend on the query's ranks per host.
    int trph = 0;
    for (int g : best.group_sizes)
      if (g % best.hosts == 0)
        for (int ga : a.group_sizes)
          if (ga % a.hosts == 0 && ga / a.hosts == g / best.hosts)
            trph = std::max(trph, g / best.hosts);
    if (trph == 0) trph = rph;
    const int nb = best.hosts * trph, na = a.hosts * trph;
    // An overlapped ring's eager steps: the chain from the other count's ring to the chosen one's.
    if (route_ab && route_latency_overlapped(t)) add_chain(*route_ab, p, op, a.hosts, best.hosts, trph);
    const MeasuredCurve* cb = curve_for(best, nb, c);
    const MeasuredCurve* ca = curve_for(a, na, c);
    std::vector<double> sizes;
    if (cb && ca && !cb->bytes.empty() && !ca->bytes.empty()) {
      const double lo = std::max(cb->bytes.front(), ca->bytes.front());
      const double hi = std::min(cb->bytes.back(), ca->bytes.back());
      for (const MeasuredCurve* cv : {cb, ca})
        for (double k : cv->bytes)
          if (k >= lo && k <= hi) sizes.push_back(k);
    } else {
      // Backbones only (no measured sizes recorded): every octave from 1 B to 1 GiB.
      for (int i = 0; i <= 30; ++i) sizes.push_back(std::ldexp(1.0, i));
    }
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    const auto [slo, shi] = known_switch(op, p.backend, a.hosts, best.hosts);
    const double la = latency_floor_us(a, na, c);
    // The ring routes from the other count to the chosen one (where they apply at all).
    const std::optional<RouteStep>& rab = route_ab;
    const double steps_b = collective_info(op).ring_steps(nb);
    // Per pair of laws, the miss per size: log(t_b / structure's t_b), 0 inside a switch's
    // range; the pair that misses least (ties: the defaults, listed first). Across a known
    // switch the pair is special by construction (NCCL's two-node tree): it chooses nothing, the
    // defaults stand and only its miss widens. NCCL runs rings and trees: its bandwidth law is
    // the bus factors' (all_to_all the host share's), never chosen.
    t.test_switch = slo != shi;
    // Known algorithms (the selector's): the other count's prices carried by the algorithms'
    // structure at each size; no law is chosen, the miss widens.
    // A known ring (the algorithm forced to a neighbour ring) keeps the ring's laws likewise: a
    // count that disagrees with it (e.g. a 2-host ring's own per-step overhead) widens the
    // interval, it does not choose another algorithm's trend.
    const int n_lat = t.selector || t.test_switch || t.forced_ring ? 1 : 5,
              n_bw = t.selector || t.test_switch || t.forced_ring || p.backend == "nccl" ? 1 : 3;
    const LatencyLaw lat_laws[] = {t.law, LatencyLaw::RingSteps, LatencyLaw::TreeDepth,
                                   LatencyLaw::LogRanks, LatencyLaw::Flat};
    const BandwidthLaw bw_laws[] = {t.bw_law, BandwidthLaw::BusFactor, BandwidthLaw::HostShare};
    // The eager chain's extra at each size (its hops move the per-step message k / nb), the
    // same for every pair of laws.
    std::vector<ChainExtra> chain_at_size(sizes.size());
    if (rab && rab->chain)
      for (std::size_t i = 0; i < sizes.size(); ++i)
        chain_at_size[i] = chain_extra(rab->chain_from, rab->chain_to, rab->chain_carry, sizes[i] / double(nb));
    double best_score = 0, default_score = 0;
    bool first = true;
    for (int ib = 0; ib < n_bw; ++ib) {
      const BandwidthLaw bw = bw_laws[ib];
      const double f = bandwidth_growth(bw, op, na, a.hosts, nb, best.hosts);
      for (int il = 0; il < n_lat; ++il) {
        const LatencyLaw law = lat_laws[il];
        const double r = latency_growth(law, na, a.hosts, nb, best.hosts);
        std::vector<double> miss;
        double score = 0;
        for (std::size_t ik = 0; ik < sizes.size(); ++ik) {
          const double k = sizes[ik];
          const double ta = price_time_us(a, na, c, k), tb = price_time_us(best, nb, c, k);
          if (!(ta > 0) || !(tb > 0)) {
            miss.push_back(0.0);
            continue;
          }
          double rk = r, fk = f;
          if (t.selector) {
            const SelectorStructure ss = selector_structure(op, na, a.hosts, nb, best.hosts, k);
            rk = ss.latency_ratio;
            fk = ss.bus_ratio;
          }
          TransportParts q_lo = transport_parts(la, rk, fk * slo, ta);
          TransportParts q_hi = transport_parts(la, rk, fk * shi, ta);
          const bool eqm = equal_message(t, law, bw, slo != shi, na, nb, k);
          // A neighbour ring at both counts pays the routes' extra latency per step.
          const bool ring = ring_family(op) && (eqm || (t.selector ? ring_at_both(t.op, na, nb, k)
                                                                    : law == LatencyLaw::RingSteps));
          if (eqm) {
            const double ke = k * double(na) / double(nb);
            const double te = price_time_us(a, na, c, ke);
            const double steps = double(nb - 1) / double(na - 1);
            // As priced (split_latency_us): where the routes split it, at the protocol's bandwidth term.
            const double lat =
                rab && ring && rab->g > 1.0 ? protocol_latency_us(a, na, c, ke, te, la) : la;
            q_lo = transport_parts(lat, steps, steps, te);
            q_hi = q_lo;
          }
          double p_lo = q_lo.lat + q_lo.bw, p_hi = q_hi.lat + q_hi.bw;
          if (rab && ring) {
            // As priced: an overlapped ring's eager steps by their chain (or the middle).
            const RouteLatency mode =
                route_latency_for(route_latency_overlapped(t), rab->chain && eqm, a, na, k, nb);
            p_lo = mode_routed_time(q_lo, *rab, steps_b, mode, chain_at_size[ik]);
            p_hi = mode_routed_time(q_hi, *rab, steps_b, mode, chain_at_size[ik]);
          }
          const double d = tb < p_lo ? std::log(tb / p_lo) : tb > p_hi ? std::log(tb / p_hi) : 0.0;
          miss.push_back(d);
          score += std::abs(d);
        }
        if (first) default_score = score;
        if (first || score < best_score - 1e-9 * std::max(1.0, best_score)) {
          first = false;
          best_score = score;
          t.law = law;
          t.bw_law = bw;
          t.miss_log = std::move(miss);
        }
      }
    }
    t.miss_bytes = sizes;
    if (sizes.empty()) t.miss_log.clear();
    t.law_tested = !sizes.empty();
    // Discriminating: the chosen pair beat the defaults (else they merely held or tied).
    t.law_discriminated =
        t.law_tested && best_score < default_score - 1e-9 * std::max(1.0, default_score);
    if (t.law_tested) t.step_log_sigma = kHostTransportTestedLogSigma;
  }
  t.latency_us = latency_floor_us(best, t.n_model, c);
  t.latency_ratio = latency_growth(t.law, t.n_model, best.hosts, lc.group_size, lc.hosts);
  const double f = bandwidth_growth(t.bw_law, op, t.n_model, best.hosts, lc.group_size, lc.hosts);
  // A known switch's range: priced at its geometric middle, the range the 95 % interval.
  const auto [klo, khi] = known_switch(op, p.backend, best.hosts, lc.hosts);
  const double mid = std::sqrt(klo * khi);
  double lo = klo, hi = khi;
  if (!t.selector && !t.law_tested && p.backend == "mpi" && t.bw_law == BandwidthLaw::BusFactor) {
    // Whether MPI runs a ring or an algorithm whose every rank's bytes cross the NIC (recursive
    // doubling / halving, Rabenseifner) is not known from one count: priced as a ring, the
    // interval reaching the host share's price.
    const double other = bandwidth_growth(BandwidthLaw::HostShare, op, t.n_model, best.hosts,
                                          lc.group_size, lc.hosts) /
                         f;
    lo *= std::min(1.0, other);
    hi *= std::max(1.0, other);
    t.algorithm_unknown = other != 1.0;
  }
  t.two_node_switch = klo != khi;
  t.bus_ratio = f * mid;
  if (auto& r = route_bq) {
    if (route_latency_overlapped(t)) add_chain(*r, p, op, best.hosts, lc.hosts, rph);
    t.routes = true;
    t.route_chain = r->chain;
    t.route_chain_model = std::move(r->chain_from);
    t.route_chain_query = std::move(r->chain_to);
    t.route_chain_carry = r->chain_carry;
    t.route_step_us = r->delta;
    t.route_lat_ratio = r->lat_ratio;
    t.route_bw_ratio = r->g;
    t.route_skew_us = r->skew;
    t.route_skew_source = r->skew_source;
    t.route_steps = collective_info(op).ring_steps(lc.group_size);
    const Profile::RingRoute &rb = *p.ring_routes->at(best.hosts), &rq = *p.ring_routes->at(lc.hosts);
    t.route_latency_model_us = rb.latency_us;
    t.route_latency_query_us = rq.latency_us;
    t.route_share_model_GBps = rb.share_GBps;
    t.route_share_query_GBps = rq.share_GBps;
    t.route_source = p.ring_routes->source;
  }
  t.switch_lo_log_sigma = std::log(mid / lo) / kIntervalZ;
  t.switch_hi_log_sigma = std::log(hi / mid) / kIntervalZ;
  return t;
}

std::string transport_note(const HostTransport& t, const Model& best, const LinkClass& lc) {
  std::ostringstream o;
  o << "hosts=" << lc.hosts << " transported from the measured hosts=" << best.hosts << " ("
    << std::setprecision(3) << t.doublings << (t.doublings == 1.0 ? " doubling" : " doublings")
    << ", ";
  if (t.selector)
    o << "the algorithms Open MPI's tuned rules (SMPI ompi selector) run at each count and size";
  else
    o << latency_law_name(t.law) << " latency, " << bandwidth_law_name(t.bw_law) << " bandwidth";
  if (t.other && !t.law_tested)
    o << ", untested by hosts=" << t.other->hosts << " (no common measured sizes)";
  else if (t.other && t.selector)
    o << ", tested by hosts=" << t.other->hosts << " (its miss widens)";
  else if (t.other && t.forced_ring)
    o << " (the algorithm forced to a neighbour ring), tested by hosts=" << t.other->hosts
      << " (its miss widens)";
  else if (t.other && t.test_switch)
    o << "; hosts=" << t.other->hosts
      << " across NCCL's two-node tree: defaults kept, its miss widens";
  else if (t.other)
    o << (t.law_discriminated ? " chosen by" : " consistent with") << " hosts=" << t.other->hosts;
  if (t.two_node_switch)
    o << "; NCCL's two-node all_reduce tree in between: priced at its middle, widened";
  if (t.algorithm_unknown) o << "; MPI's algorithm untested: widened toward host-share bandwidth";
  o << ")";
  return o.str();
}

namespace {

// An interval bound of a price t widened by a further log sigma `extra` (in quadrature with the
// bound's own distance from t), then scaled by f: sign -1 for the lower bound, +1 the upper.
double widened_bound(double f, double t, double bound, double sign, double extra) {
  if (!(bound > 0) || !(t > 0)) return bound * f;
  const double lb = std::log(bound / t);
  return f * t * std::exp(std::clamp(sign * std::hypot(lb, kIntervalZ * extra), -700.0, 700.0));
}

// The tested structure's miss at s_eff: linear in log size between the test's sizes, the end
// values beyond them.
double miss_at(const HostTransport& t, double s_eff) {
  const auto& x = t.miss_bytes;
  if (x.empty() || t.miss_log.size() != x.size() || std::isnan(s_eff)) return 0.0;
  const double s = std::max(s_eff, 1.0);
  if (s <= x.front()) return t.miss_log.front();
  if (s >= x.back()) return t.miss_log.back();
  const std::size_t i = std::size_t(std::upper_bound(x.begin(), x.end(), s) - x.begin()) - 1;
  const double w = std::log(s / x[i]) / std::log(x[i + 1] / x[i]);
  return (1 - w) * t.miss_log[i] + w * t.miss_log[i + 1];
}

// R and F at s_eff: the laws' (one value for every size), or with known algorithms the selector's
// structure at that size, and the log sigma its switch adds.
struct TransportAt {
  double latency_ratio, bus_ratio, switch_log_sigma;
};
TransportAt transport_at(const HostTransport& t, double s_eff) {
  if (!t.selector) return {t.latency_ratio, t.bus_ratio, 0.0};
  const SelectorStructure ss =
      selector_structure(t.op, t.n_model, t.hosts_model, t.n_query, t.hosts_query, s_eff);
  return {ss.latency_ratio, ss.bus_ratio, ss.switched ? kSelectorSwitchLogSigma : 0.0};
}

}  // namespace

bool carried_at_equal_messages(const HostTransport& t, double s_eff) {
  return t.active && equal_message(t, t.law, t.bw_law, t.two_node_switch, t.n_model, t.n_query, s_eff);
}

double measured_bytes_at(const HostTransport& t, double s_eff) {
  return carried_at_equal_messages(t, s_eff) ? s_eff * t.n_model / t.n_query : s_eff;
}

namespace {

// The latency split of the measured count's price tb (protocol_latency_us where the routes
// split a ring carried at equal per-step messages; elsewhere L = t(1 B), t.latency_us).
double split_latency_us(const Model& m, const HostTransport& t, bool eq, int concurrent_groups,
                        double measured_bytes, double tb) {
  if (!eq || !t.routes || !(t.route_bw_ratio > 1.0)) return t.latency_us;
  return protocol_latency_us(m, t.n_model, concurrent_groups, measured_bytes, tb, t.latency_us);
}

// The factor on the measured count's price tb: a ring's steps at equal per-step messages, else
// the structure's share R + (1 - share) F.
double transported_factor(const HostTransport& t, bool eq, const TransportAt& at, double tb) {
  return eq ? double(t.n_query - 1) / double(t.n_model - 1)
            : transport_factor(t.latency_us, at.latency_ratio, at.bus_ratio, tb);
}

// The eager chain's extra at the query's size s_eff (its hops move the per-step message s_eff / n).
ChainExtra chain_extra_at(const HostTransport& t, double s_eff) {
  if (!t.route_chain || t.n_query < 1) return {};
  return chain_extra(t.route_chain_model, t.route_chain_query, t.route_chain_carry, s_eff / double(t.n_query));
}

// Which of the routed prices transported_time gives: the price (by mode, route_latency), or one
// end of the range the interval reaches (without / with the lock step's extra route latency).
enum class Routed { Price, Without, With };

// The measured count's price tb carried to the query: tb x the factor, or where the ring routes
// apply (`ring`) its latency and bandwidth parts with the routes' link share and extra latency
// (which: the price, by mode, or the price without / with the lock step's extra).
// s_eff: the query's size (the eager chain's hops move its per-step message).
// skew_us: the flows' skew on the shared link (negative: the transport's own).
double transported_time(const HostTransport& t, bool eq, const TransportAt& at, double tb,
                        bool ring, Routed which, RouteLatency mode, double lat_us, double s_eff,
                        double skew_us = -1.0) {
  if (!t.routes || !ring) return tb * transported_factor(t, eq, at, tb);
  const double steps = double(t.n_query - 1) / double(t.n_model - 1);
  const TransportParts q = eq ? transport_parts(lat_us, steps, steps, tb)
                              : transport_parts(t.latency_us, at.latency_ratio, at.bus_ratio, tb);
  RouteStep r;  // (the chain's hops stay in t: its extra at s_eff is passed instead)
  r.delta = t.route_step_us;
  r.lat_ratio = t.route_lat_ratio;
  r.g = t.route_bw_ratio;
  r.skew = skew_us >= 0 ? skew_us : t.route_skew_us;
  const double n_steps = double(t.route_steps);
  if (which == Routed::Without) return routed_time(q, r.g, 0.0, r.lat_ratio, n_steps, r.skew);
  const RouteLatency m = which == Routed::With ? RouteLatency::LockStep : mode;
  return mode_routed_time(q, r, n_steps, m,
                          m == RouteLatency::Chain ? chain_extra_at(t, s_eff) : ChainExtra{});
}

}  // namespace

std::string_view route_latency_name(RouteLatency m) {
  switch (m) {
    case RouteLatency::LockStep:
      return "lock-step";
    case RouteLatency::Chain:
      return "eager chain";
    case RouteLatency::Middle:
      return "middle";
  }
  return "lock-step";
}

std::string_view skew_source_name(SkewSource s) {
  switch (s) {
    case SkewSource::Table:
      return "table";
    case SkewSource::HopSpread:
      return "hop spread";
    case SkewSource::LongestRoute:
      return "longest route";
  }
  return "table";
}

RouteLatency route_latency(const Model& m, const HostTransport& t, double s_eff) {
  // (the chain compares the two rings at one per-step message: only where the ring is carried
  // at equal per-step messages)
  return route_latency_for(route_latency_overlapped(t), t.route_chain && carried_at_equal_messages(t, s_eff), m,
                           t.n_model, s_eff,
                           t.n_query);
}

bool route_ring(const HostTransport& t, double s_eff) {
  if (!t.active) return false;
  if (!ring_family(t.op)) return false;
  if (carried_at_equal_messages(t, s_eff)) return true;
  return t.selector ? ring_at_both(t.op, t.n_model, t.n_query, s_eff) : t.law == LatencyLaw::RingSteps;
}

namespace {
// The hosts the measured count's price counts for its host links' floor: its own (0), except for
// a stand-in for an uneven split (priced as one rank per host, LinkClass::spanned_hosts): there
// one rank per host would set the floor too high, so the measured count is priced without it (1)
// and the query's own floor, at the hosts it spans, applies after the transport.
int measured_floor_hosts(const HostTransport& t) {
  return t.floor_hosts > 0 && t.floor_hosts != t.hosts_query ? 1 : 0;
}

// The transported price at s_eff as priced, before any hold or floor.
double raw_time_us(const Model& m, const HostTransport& t, int concurrent_groups, double s_eff) {
  const bool eq = carried_at_equal_messages(t, s_eff);
  const double mb = measured_bytes_at(t, s_eff);
  const double tb = price_time_us(m, t.n_model, concurrent_groups, mb, measured_floor_hosts(t));
  const bool ring = t.routes && route_ring(t, s_eff);
  return transported_time(t, eq, transport_at(t, s_eff), tb, ring, Routed::Price, route_latency(m, t, s_eff),
                          split_latency_us(m, t, eq, concurrent_groups, mb, tb), s_eff);
}
// Whether s_eff is priced by the eager chain (route_latency says Chain only where the transport
// has one and the ring is carried at equal per-step messages).
bool chain_priced(const Model& m, const HostTransport& t, double s_eff) {
  return t.routes && route_ring(t, s_eff) && route_latency(m, t, s_eff) == RouteLatency::Chain;
}
// An eager-chain price is the measured count's carried price plus the chain's extra, which can
// fall with size where the measured ring's chain grows faster than the query's (its steps go
// transfer-bound first) and faster than the measured curve does: 0.4 % over a third of an
// octave on a fat tree priced at 4 ranks per host from 8. So the price is held at its largest at
// the sizes below where it can turn: 1 B, the measured ring's chain's envelope breaks, the
// measured curve's knots and the backbone's and protocol switches. Between two of them the
// measured chain is a straight line, the query's convex, and the measured curve one smooth piece:
// the price peaks at an end where that piece is convex. Where it is concave (a log-log slope
// below 1) a peak inside is possible and not held: this hold is no proof; hosts_monotone checks
// every series' prices on a 1/16-octave grid (none falls). (Holding the extra instead, a running
// maximum from 0 B, is exact but keeps the latencies' chain wherever the transfers lower it:
// SimGrid's example fat tree's 13-27 % back.)
// held_at: where the held price came from (0: s_eff's own).
double chain_held_us(const Model& m, const HostTransport& t, int concurrent_groups, double s_eff, double price,
                     double* held_at = nullptr) {
  if (held_at) *held_at = 0.0;
  if (!chain_priced(m, t, s_eff)) return price;
  const double n = double(t.n_query);
  std::vector<double> at{1.0};  // (from 1 B: below the first break the chain extra is one line)
  // (the measured ring's chain: where its slope rises the extra's falls; the query's chain only
  // makes the extra's slope rise, which is no peak)
  for (double x : envelope_breaks(t.route_chain_model)) at.push_back(x * n);
  // The measured curve's knots and the backbone's segment switches where price() reads them (the
  // measured size s n_model / n), and the protocol switch where route_latency does (per_step_size_at).
  const double to_measured = double(t.n_model) / n, to_curve = per_step_size_at(m, t.n_model, 1.0, t.n_query);
  if (const MeasuredCurve* cv = curve_for(m, t.n_model, concurrent_groups))
    for (double k : cv->bytes) at.push_back(k / to_measured);
  for (const auto& seg : m.segments)
    if (seg.s_hi) {
      at.push_back(*seg.s_hi / to_measured);
      if (to_curve > 0) at.push_back(*seg.s_hi / to_curve);
    }
  for (double c : at)
    if (c > 0 && c < s_eff && chain_priced(m, t, c))
      if (const double p = raw_time_us(m, t, concurrent_groups, c); p > price) {
        price = p;
        if (held_at) *held_at = c;
      }
  return price;
}
// price_transported_time_us without the hold across the switch (eager_edge_size) or the floor.
double unheld_time_us(const Model& m, const HostTransport& t, int concurrent_groups, double s_eff) {
  return chain_held_us(m, t, concurrent_groups, s_eff, raw_time_us(m, t, concurrent_groups, s_eff));
}
}  // namespace

// Past the measured protocol switch an overlapped ring is priced in lock step, below it by its
// eager chain (route_latency_for). Where the chain's extra at the query is larger than the lock
// step's (shorter routes than the measured count's, or equal ones with a longer chain), the price
// could fall across the switch (SMPI dragonfly, hosts in stride-3 order, reduce_scatter on 3
// hosts x 2 ranks transported from 4 hosts: 23.82 -> 21.27 us from 376832 to 393216 B), which
// the measured counts do not show (the measured price barely moves there). The largest query size
// priced below the switch, whose price the lock step's is held at or above (a running maximum
// across the switch, as the measured curves' knots are kept non-decreasing: flat until the lock
// step's price passes it, 0.16 octave there); 0 where the price is not a lock step's past the
// same ring's switch.
static double eager_edge_size(const Model& m, const HostTransport& t, double s_eff) {
  if (!t.routes || !route_latency_overlapped(t) || m.segments.size() < 2 || !m.segments[0].s_hi)
    return 0.0;
  if (route_latency(m, t, s_eff) != RouteLatency::LockStep) return 0.0;
  // per_step_size_at is linear in the query's size: the switch at the measured count's per-step
  // size s_hi maps to s_hi / per_step_size_at(1 B).
  // (A few steps down where the division rounded up onto the switch.)
  double edge = *m.segments[0].s_hi / per_step_size_at(m, t.n_model, 1.0, t.n_query);
  for (int i = 0; i < 8 && edge > 0 && route_latency(m, t, edge) == RouteLatency::LockStep; ++i)
    edge = std::nextafter(edge, 0.0);
  if (!(edge > 0 && edge < s_eff) || route_latency(m, t, edge) == RouteLatency::LockStep) return 0.0;
  // Only across the ring's own protocol switch: the same ring carried the same way on both sides
  // (where the selector runs another algorithm below, or the transport changes, its fall is real:
  // Open MPI's fixed rules switch to a faster algorithm). Checked at the two ends only: Open MPI's
  // reduce_scatter rules leave the ring and come back only below 128 KiB for n <= 4 (butterfly at
  // 64-128 KiB), under SMPI's 64 KiB per-step switch times n, so not between them.
  if (!route_ring(t, s_eff) || !route_ring(t, edge) ||
      carried_at_equal_messages(t, edge) != carried_at_equal_messages(t, s_eff))
    return 0.0;
  return edge;
}

Priced price_transported(const Model& m, const HostTransport& t, int concurrent_groups,
                         double s_eff, double class_log_sigma) {
  const bool eq = carried_at_equal_messages(t, s_eff);
  const Priced b = price(m, t.n_model, concurrent_groups, measured_bytes_at(t, s_eff), 0.0, measured_floor_hosts(t));
  Priced out = b;
  const TransportAt at = transport_at(t, s_eff);
  const bool ring = t.routes && route_ring(t, s_eff);
  const RouteLatency mode = route_latency(m, t, s_eff);
  const double lat = split_latency_us(m, t, eq, concurrent_groups, measured_bytes_at(t, s_eff), b.time_us);
  double tq = chain_held_us(m, t, concurrent_groups, s_eff,
                            transported_time(t, eq, at, b.time_us, ring, Routed::Price, mode, lat, s_eff));
  if (const double edge = eager_edge_size(m, t, s_eff); edge > 0)
    tq = std::max(tq, price_transported_time_us(m, t, concurrent_groups, edge));
  // The factor on b (its interval scales with it; the hold only where the routes price a ring).
  const double f = ring && b.time_us > 0 ? tq / b.time_us : transported_factor(t, eq, at, b.time_us);
  const double step = t.step_log_sigma * t.doublings;
  const double miss =
      t.test_doublings > 0 ? miss_at(t, s_eff) * t.doublings / t.test_doublings : 0.0;
  const double common = step * step + miss * miss + class_log_sigma * class_log_sigma +
                        at.switch_log_sigma * at.switch_log_sigma;
  // A switch level that a larger group crosses first (and no measured count did) can double a
  // hop's latency: the latency's part of the price, share q, up to 2x on the side away from h_b.
  // Kept with ring routes too: a table is only as good as its description of the job's placement
  // (a mesh dim whose groups stride across hosts is priced as consecutive hosts).
  const double q = tq > 0 ? std::min(1.0, lat * at.latency_ratio / tq) : 1.0;  // (the split's)
  const double level = std::log1p(q) / kIntervalZ;
  const double lo = std::hypot(t.switch_lo_log_sigma, t.n_query < t.n_model ? level : 0.0);
  const double hi = std::hypot(t.switch_hi_log_sigma, t.n_query > t.n_model ? level : 0.0);
  // Never below the link ceiling's floor at the query's group size (0 without a ceiling).
  const double floor_us = link_floor_time_us(m, t.n_query, t.floor_hosts, s_eff);
  out.time_us = std::max(tq, floor_us);
  out.lo_us = widened_bound(f, b.time_us, b.lo_us, -1.0, std::sqrt(common + lo * lo));
  out.hi_us = widened_bound(f, b.time_us, b.hi_us, 1.0, std::sqrt(common + hi * hi));
  if (ring && tq > 0 &&
      (t.route_step_us != 0 ||
       (mode == RouteLatency::Chain && transported_chain_extra(t, s_eff).extra_us != 0))) {
    // Whether every step pays the whole extra route latency depends on how the library overlaps
    // its steps (route_latency_overlapped): the interval reaches the bounds of both prices, with
    // and without it (once each side, wherever the price lies).
    const double r0 = transported_time(t, eq, at, b.time_us, true, Routed::Without, mode, lat, s_eff) / tq;
    const double r1 = transported_time(t, eq, at, b.time_us, true, Routed::With, mode, lat, s_eff) / tq;
    out.lo_us *= std::min({1.0, r0, r1});
    out.hi_us *= std::max({1.0, r0, r1});
  }
  if (ring && tq > 0 && t.route_bw_ratio != 1.0 && t.route_skew_source != SkewSource::Table &&
      mode != RouteLatency::Chain) {
    // A skew the table did not give (its hop spread or longest route bound the shared link's
    // from above): the interval reaches the price with the flows overlapping whole. (Not for the
    // eager chain, which takes no skew: its transfers run at each count's share.)
    const double rw = transported_time(t, eq, at, b.time_us, true, Routed::Price, mode, lat, s_eff, 0.0) / tq;
    out.lo_us *= std::min(1.0, rw);
    out.hi_us *= std::max(1.0, rw);
  }
  out.lo_us = std::max(out.lo_us, floor_us);
  out.hi_us = std::max(floor_lifted_hi_us(out.hi_us, tq, floor_us), floor_us);
  return out;
}

double transported_latency_split_us(const Model& m, const HostTransport& t, int concurrent_groups,
                                    double s_eff) {
  const bool eq = carried_at_equal_messages(t, s_eff);
  const double mb = measured_bytes_at(t, s_eff);
  const bool ring = t.routes && route_ring(t, s_eff);
  return ring ? split_latency_us(m, t, eq, concurrent_groups, mb,
                                 price_time_us(m, t.n_model, concurrent_groups, mb, measured_floor_hosts(t)))
              : t.latency_us;
}

ChainExtra transported_chain_extra(const HostTransport& t, double s_eff) { return chain_extra_at(t, s_eff); }

double price_transported_time_us(const Model& m, const HostTransport& t, int concurrent_groups,
                                 double s_eff) {
  double tq = unheld_time_us(m, t, concurrent_groups, s_eff);
  if (const double edge = eager_edge_size(m, t, s_eff); edge > 0)
    tq = std::max(tq, price_transported_time_us(m, t, concurrent_groups, edge));
  return std::max(tq, link_floor_time_us(m, t.n_query, t.floor_hosts, s_eff));
}

double transported_chain_hold_bytes(const Model& m, const HostTransport& t, int concurrent_groups,
                                    double s_eff) {
  double at = 0.0;
  const double held = chain_held_us(m, t, concurrent_groups, s_eff, raw_time_us(m, t, concurrent_groups, s_eff), &at);
  return at > 0 && held > link_floor_time_us(m, t.n_query, t.floor_hosts, s_eff) ? at : 0.0;
}

double transported_eager_hold_bytes(const Model& m, const HostTransport& t, int concurrent_groups,
                                    double s_eff) {
  const double edge = eager_edge_size(m, t, s_eff);
  if (!(edge > 0)) return 0.0;
  const double held = price_transported_time_us(m, t, concurrent_groups, edge);
  return held > std::max(unheld_time_us(m, t, concurrent_groups, s_eff), link_floor_time_us(m, t.n_query, t.floor_hosts, s_eff))
             ? edge
             : 0.0;
}

}  // namespace shardcal::calib

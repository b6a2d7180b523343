#pragma once
// Host-count transport, in one place (calibrate/src/host_transport.cpp; docs/CALIBRATION.md
// "Other host counts"): a group spanning a host count the profile did not measure, priced from the
// nearest measured count along the collective's algorithm. predict() chooses the transport for its
// query (host_transport()) and prices with it (price_transported()), which prices the measured
// count with the cost model (cost_model.hpp): predict -> host_transport -> cost_model.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardcal/calibrate/cost_model.hpp"
#include "shardcal/calibrate/profile_types.hpp"

namespace shardcal::calib {

// How a collective's latency grows with its group along the algorithm the library runs
// ("Host-count transport" below): ring steps n - 1, tree depth 1 + log2 hosts (NCCL's
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

// The algorithms Open MPI's coll/tuned fixed decision rules choose among for all_gather,
// all_reduce and reduce_scatter (SimGrid SMPI's `ompi` selector runs its own implementations of
// the same rules; host_transport.cpp cites both and holds the thresholds).
enum class MpiAlgorithm {
  Ring,               // neighbour ring (all_reduce lr / segmented ring, reduce_scatter ring)
  NeighborExchange,   // all_gather: n/2 steps between alternating neighbours
  RecursiveDoubling,  // log2 n steps, every rank's whole exchange crosses at distance >= r
  Bruck,              // all_gather: ceil(log2 n) steps
  PairwiseRing,       // all_gather "ring" (Faraj's: step i sends its own block to rank + i)
  TwoProc,            // all_gather on 2 ranks
  Rabenseifner,       // all_reduce: recursive halving reduce_scatter + doubling all_gather
  RecursiveHalving,   // reduce_scatter, farthest partner first
  Butterfly,          // reduce_scatter (Traff), nearest partner first
  ReduceThenBcast,    // all_reduce / reduce_scatter: a reduce, then a broadcast / scatter
};
std::string_view mpi_algorithm_name(MpiAlgorithm a);
// The algorithm Open MPI's tuned rules run for op on n ranks at S bytes (the collective table's
// convention: all_gather the whole output, reduce_scatter the whole input), for a commutative
// reduction; nullopt for a collective the table here does not hold.
std::optional<MpiAlgorithm> ompi_tuned_algorithm(Collective op, int n, double bytes);
// An algorithm's structure on n ranks over h hosts (n / h per host, consecutive): its latency
// steps and the bytes through one host's NIC (one direction) per byte of S.
struct AlgorithmShape {
  double steps = 0;
  double nic_bytes = 0;
};
AlgorithmShape algorithm_shape(MpiAlgorithm a, Collective op, int n, int h);
// Whether the profile says which algorithm its MPI runs for op: the SMPI ompi selector
// (Profile::mpi_selector "ompi") and op not forced to one algorithm.
bool selector_known(const Profile& p, Collective op);
// Whether an MPI profile's collective op was forced to a neighbour-ring algorithm (Profile::
// mpi_selector "forced", e.g. SMPI's smpi/reduce_scatter:ompi_ring): its structure is known.
bool forced_ring(const Profile& p, Collective op);
// The transport from n_b ranks on h_b hosts to n on h at S bytes by the selector's algorithms:
// the latency steps' and NIC bytes' ratios of the target's algorithm to the measured one's, and
// whether the two differ (a switch between the counts).
struct SelectorStructure {
  double latency_ratio = 1, bus_ratio = 1;
  bool switched = false;
  MpiAlgorithm from = MpiAlgorithm::Ring, to = MpiAlgorithm::Ring;
};
SelectorStructure selector_structure(Collective op, int n_b, int h_b, int n, int h, double bytes);
// The log sigma (each side) a selector's algorithm switch between the counts adds: the shapes
// are counts of steps and bytes, not times (latencies inside vs across hosts, contention).
inline constexpr double kSelectorSwitchLogSigma = 0.20;

// Where a ring's skew on its most shared link came from (routed_time): the routes table's
// share_skew_us, else the ring's hop latency spread, else its longest route (bounds on it).
enum class SkewSource { Table, HopSpread, LongestRoute };
std::string_view skew_source_name(SkewSource s);

// A line a + b m of an eager ring's dependency chain as a function of its per-step message m
// (bytes): one path's latencies (us) and its transfer time per byte (host_transport.cpp
// chain_envelope). A chain is the upper envelope of its paths' lines.
struct ChainLine {
  double a = 0, b = 0;
};

// A price transported from the nearest measured host count to another along the collective's
// algorithm ("Host-count transport" below); a second measured count, when the profile
// has one, tests that structure first (chooses the latency law, widens where it misses).
struct HostTransport {
  bool active = false;           // false: priced by the chosen model alone
  const Model* other = nullptr;  // the count that tested the structure (null: none measured)
  int n_model = 0;               // the group size the chosen model is priced at
  int n_other = 0;               // ... and the other model
  int n_query = 0;
  double doublings = 0;       // |log2(h / h_b)|: distance to the nearest measured count
  double test_doublings = 0;  // |log2(h_b / h_a)|: the test's distance (0: no test)
  LatencyLaw law = LatencyLaw::RingSteps;
  BandwidthLaw bw_law = BandwidthLaw::BusFactor;
  bool law_tested = false;         // tested by `other` (else the backend's defaults, untested)
  bool law_discriminated = false;  // the test's pair beat the defaults (else they held or tied)
  bool test_switch = false;        // the test crossed a known switch: defaults kept, miss widens
  // t = t_b (share R + (1 - share) F), share = min(1, L / t_b).
  double latency_us = 0;     // L: the chosen model's time at 1 byte (its latency floor; where the
                             // routes price an MPI ring onto a smaller share, the split is
                             // transported_latency_split_us's)
  double latency_ratio = 1;  // R: latency growth from h_b to h by `law`
  double bus_ratio = 1;      // F: the bandwidth term's growth by bw_law (x a switch's middle)
  // The range the bandwidth term may move in between h_b and h, as log sigmas below and above
  // the price (its 95 % interval): NCCL's two-node tree (priced at the range's geometric
  // middle), an untested transport of a library that may run either bandwidth law (MPI:
  // priced by the ring's bus factors, the upper side reaching the host share's price).
  double switch_lo_log_sigma = 0, switch_hi_log_sigma = 0;
  bool two_node_switch = false;    // NCCL's two-node tree between h_b and h
  bool algorithm_unknown = false;  // MPI untested: the upper side reaches the host share
  double step_log_sigma = 0;       // per doubling
  // Known algorithms (selector_known): per size, the selector's algorithm at each count gives R
  // and F (selector_structure) instead of the laws; a switch widens by kSelectorSwitchLogSigma.
  bool selector = false;
  bool mpi = false;  // an MPI profile: rings are carried at equal per-step messages (host_transport.cpp)
  bool forced_ring = false;  // forced_ring(): the test keeps the ring's laws, its miss widens
  // Open MPI's ring reduce_scatter (an MPI reduce_scatter not forced to another algorithm): its
  // eager steps overlap (route_latency).
  bool ompi_ring_reduce_scatter = false;
  Collective op = Collective::AllReduce;
  int hosts_model = 0, hosts_query = 0;
  int floor_hosts = 0;  // the hosts the query's group really spans (floor_hosts(lc)): its host links' floor
  // Where the tested structure missed the second count: log(measured / structure's price) per
  // size (0 inside a switch's range), interpolated in log size; widens, never moves, the price.
  std::vector<double> miss_bytes, miss_log;
  // The network's ring routes (Profile::ring_routes) at both counts: a ring step is paced by its
  // slowest host pair, so each of the query's ring steps pays the longer route's extra latency,
  // and its bandwidth term the smaller link share. Applied where the priced algorithm is a
  // neighbour ring over the hosts (route_ring below); elsewhere the routes are not used.
  bool routes = false;
  double route_step_us = 0;    // latency(h) - latency(h_b), per ring step (may be < 0)
  // An overlapped ring's eager steps (route_latency): its dependency chain over the rings' hops
  // at h minus the one at h_b carried by the steps' ratio, where both list their hops; computed
  // per query size (each hop moves the per-step message: transported_chain_extra).
  bool route_chain = false;
  std::vector<ChainLine> route_chain_model, route_chain_query;  // the measured count's ring, the query's
  double route_chain_carry = 1;  // the query's ring steps over the measured one's
  double route_lat_ratio = 1;  // latency(h) / latency(h_b): how far a shorter route can lower
  double route_bw_ratio = 1;   // share(h_b) / share(h): > 1 where the query's ring shares links
  double route_skew_us = 0;    // how far apart the flows on the contended ring's most shared link start
  SkewSource route_skew_source = SkewSource::Table;  // where route_skew_us came from
  int route_steps = 0;         // the collective's ring steps on n_query ranks
  double route_latency_model_us = 0, route_latency_query_us = 0;  // for the note
  double route_share_model_GBps = 0, route_share_query_GBps = 0;
  std::string route_source;
  std::string route_skipped;  // the profile has routes but they were not used: why
};

// Host-count transport (docs/CALIBRATION.md "Other host counts"). A group spanning h hosts that
// the profile did not measure is priced from the measured inter-host count h_b nearest h (ties:
// the larger; small counts are often special cases) along the collective's algorithm:
//     t(h) = t_b (share R + (1 - share) F),   share = min(1, L / t_b),
// t_b the measured count's price at the query's S_eff (its hosts x the query's ranks per host),
// L its time at 1 byte (the latency floor, so share is the latency's part of t_b), R the
// latency's growth (LatencyLaw: ring steps, tree depth, log2 n rounds, flat) and F the bandwidth
// term's: bus factors f(n) / f(n_b) (a ring's busbw does not depend on the rank count), for
// all_to_all the share of each rank's bytes that leaves its host ((h - 1) / h per host NIC).
// Known algorithm switches between host counts widen instead of moving the price: NCCL's
// all_reduce on 2 nodes runs a double binary tree with no interior node (each node sends its
// bytes across once, a ring twice), so 2 -> more nodes may slow the bandwidth term up to 2x:
// priced at the range's geometric middle with the range as the 95 % interval.
// A second measured count h_a tests the structure: h_a's prices carried to h_b by each pair of
// laws (latency x bandwidth; NCCL: bandwidth by bus factors only) are compared with h_b's, and
// the pair that misses least is used (ties: the defaults: NCCL tree depth for all_reduce, else
// ring steps and bus factors; all_to_all host share). That choice is discrete and does move the
// price; what it never does is fit a trend: where the chosen pair still misses, the miss (log,
// per size) widens the interval in proportion to the doublings, and a pair across a known switch
// (NCCL's two nodes) chooses nothing (a real 2/4/8-node series had a two-node special case that a
// fitted trend doubled at 8 nodes). The interval: the measured count's own, plus in quadrature the
// step term per doubling (kHostTransportLogSigma untested, kHostTransportTestedLogSigma after a
// test), the switch range, the miss, and on the side away from h_b the latency's part of the price
// up to 2x (a switch level the larger group crosses first doubles a hop's latency: SMPI's fat tree,
// 4 hosts in one leaf -> 8 across two, a ring's per-step latency 1.5 -> 3 us). Prices stay
// non-decreasing in size (t_b is, and the factor keeps the order: L R + (t_b - L) F rises with
// t_b).
inline constexpr double kHostTransportLogSigma = 0.15;
inline constexpr double kHostTransportTestedLogSigma = 0.10;

// The latency growth R by law from n_b ranks on h_b hosts to n ranks on h hosts.
double latency_growth(LatencyLaw law, int n_b, int h_b, int n, int h);
// The backend's default laws for a collective ("nccl", "mpi", ...).
LatencyLaw default_latency_law(Collective op, std::string_view backend);
BandwidthLaw default_bandwidth_law(Collective op);
// The bandwidth term's growth F by law.
double bandwidth_growth(BandwidthLaw law, Collective op, int n_b, int h_b, int n, int h);
// The range [lo, hi] (factors on F) of a known algorithm switch between h_b and h: NCCL's
// two-node all_reduce tree ([1, 2] leaving two nodes, [1/2, 1] arriving); else [1, 1].
std::pair<double, double> known_switch(Collective op, std::string_view backend, int h_b, int h);
// The structure's factor on t_b: share R + (1 - share) F, share = min(1, L / t_b).
double transport_factor(double latency_us, double latency_ratio, double bus_ratio, double tb);

// The host-count transport for a query of link class lc whose chosen model is `best` (of p): when
// the query spans hosts the chosen model did not measure, the structure from its count to the
// query's, and the test of that structure against a second measured inter-host model of the
// collective (same dtype and concurrency, domain derived from measurements) nearest the chosen
// one. Inactive (active = false) when the query or the chosen model is intra-host.
HostTransport host_transport(const Profile& p, const Model& best, const LinkClass& lc);
// predict()'s note for an active transport: the counts, the doublings, the laws and how they were
// chosen, the switches that widened it.
std::string transport_note(const HostTransport& t, const Model& best, const LinkClass& lc);

// Whether t carries s_eff as an MPI ring at equal per-step messages (the measured count priced at
// s_eff x n_model / n_query; host_transport.cpp equal_message).
bool carried_at_equal_messages(const HostTransport& t, double s_eff);
// The size the measured count is priced at for s_eff (s_eff unless carried at equal messages).
double measured_bytes_at(const HostTransport& t, double s_eff);
// Whether t's price at s_eff is a neighbour ring over the hosts at both counts, so that the ring
// routes apply: the ring-steps latency law (or a ring carried at equal per-step messages, or the
// ompi selector's ring at both counts).
bool route_ring(const HostTransport& t, double s_eff);
// Open MPI's ring reduce_scatter, whose eager steps overlap part of their route latency.
bool route_latency_overlapped(const HostTransport& t);
// How a ring's route latency enters its price at s_eff: every step pays the extra (lock step);
// for Open MPI's overlapped reduce_scatter ring below the first protocol switch of m (the model at
// the measured count: eager steps) its dependency chain over the routes' hops (each moving the
// per-step message at its count's link share), where the routes list every hop and the ring is
// carried at equal per-step messages, else the geometric middle of the prices without and with
// the lock step's extra. The interval reaches both of those either way.
enum class RouteLatency { LockStep, Chain, Middle };
std::string_view route_latency_name(RouteLatency m);  // "lock-step", "eager chain", "middle"
RouteLatency route_latency(const Model& m, const HostTransport& t, double s_eff);
// The latency part of the measured count's price at s_eff as the routes split it (the rest is
// the bandwidth term the link share multiplies; an eager chain's transfers instead): for an MPI ring carried at equal per-step
// messages onto a smaller share (g > 1), the price less its protocol segment's bandwidth term
// (host_transport.cpp protocol_latency_us); elsewhere t.latency_us, the price at 1 B.
double transported_latency_split_us(const Model& m, const HostTransport& t, int concurrent_groups,
                                    double s_eff);
// An overlapped ring's eager chain at the query's size s_eff (route_latency Chain; the hops
// move the per-step message s_eff / n): the chain at h minus the measured count's carried by
// the steps' ratio (extra_us), the same at 0 B (extra0_us: the latencies' part), and the chain
// over that carried one at 0 B (lat_ratio).
struct ChainExtra {
  double extra_us = 0, extra0_us = 0, lat_ratio = 1;
};
ChainExtra transported_chain_extra(const HostTransport& t, double s_eff);
// The chosen model m transported to another host count by t.
Priced price_transported(const Model& m, const HostTransport& t, int concurrent_groups,
                         double s_eff, double class_log_sigma = 0.0);
double price_transported_time_us(const Model& m, const HostTransport& t, int concurrent_groups,
                                 double s_eff);
// Where the price past an overlapped ring's protocol switch is held at the eager price at the
// switch's edge (the lock step's would fall below it; host_transport.cpp eager_edge_size): that
// edge's size in the query's bytes, else 0.
double transported_eager_hold_bytes(const Model& m, const HostTransport& t, int concurrent_groups,
                                    double s_eff);
// Where an eager-chain price is held at its price at a smaller size (the chain's extra fell
// faster than the measured curve rose; host_transport.cpp chain_held_us): that size in the
// query's bytes, else 0.
double transported_chain_hold_bytes(const Model& m, const HostTransport& t, int concurrent_groups,
                                    double s_eff);

}  // namespace shardcal::calib

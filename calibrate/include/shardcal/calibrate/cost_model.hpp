#pragma once
// The cost model, defined once (docs/CALIBRATION.md "The model"). Everything that prices a
// collective from a profile -- predict(), the planner's step cost, the fitter, `shardbench
// predict`, the gate's model check -- goes through these functions; the Python reader
// (calibrate/python/shardcal/cost_model.py) mirrors them line for line and a parity test
// compares the two.
//
// A prediction has two layers:
//  1. the backbone, per size segment a sum of linear terms (the Term table below):
//        t = alpha0 + alpha_step * steps(n) + S_eff * f(n) / B * (1 + gamma (c - 1))
//  2. where the link class was measured, the measured curve: the log ratio of measured time to
//     backbone at every measured size, interpolated in log(size). Between two measured sizes
//     of one backbone segment the backbone gives the shape and the measurements the level
//     ("interpolation where measured, the model where not"); between two measured sizes that
//     straddle a segment boundary (a protocol/algorithm switch somewhere in the gap) the
//     prediction is the log-log line between them and the interval spans both sides.
// Every prediction carries a 95 % interval (Priced::lo_us, hi_us).
//
// Adding a term: a Term enumerator, its column in term_feature(), its coefficient in
// segment_coefficient() (and the Segment field it reads/writes in profile.hpp and the fitter's
// Coef), and the same three lines in cost_model.py.
#include <array>
#include <cstddef>
#include <string>
#include <utility>

#include "shardcal/calibrate/profile.hpp"

namespace shardcal::calib {

// The backbone's linear terms, in the order of the fitter's design columns.
enum class Term : int { Alpha = 0, AlphaStep = 1, InvBandwidth = 2, Contention = 3 };
inline constexpr int kTerms = 4;

// The column of term t for group size n, effective size s_eff (bytes), c concurrent groups:
// Alpha 1, AlphaStep steps(n), InvBandwidth S_eff f(n), Contention S_eff f(n) (c - 1).
double term_feature(Term t, Collective op, int n, double s_eff, int concurrent_groups);
// The coefficient of term t in a profile segment (us per unit of the column): alpha_us,
// alpha_step_us, 1 / (B 1e3), contention / (B 1e3).
double segment_coefficient(const Segment& s, Term t);

// The segment of m holding s_eff (s_lo <= s_eff < s_hi).
std::size_t segment_of(const Model& m, double s_eff);

// The backbone time of m for group size n at s_eff in its segment (no model choice, no checks).
// n = 1: the first segment's alpha at every size (a group of one rank moves nothing).
double backbone_time_us(const Model& m, int n, double s_eff, int concurrent_groups = 1);

// The 95 % interval's normal quantile (two-sided).
inline constexpr double kIntervalZ = 1.959963984540054;
inline constexpr double kIntervalLevel = 0.95;
// Relative (log-scale) uncertainty of a price from a model without measured curves or quality
// (built-in analytic profiles): a factor e^0.7 ~ 2 either way. On public nccl-tests logs
// DTensor's built-in constants are off by a median 33-73 % per log (docs/CALIBRATION.md).
inline constexpr double kUnmeasuredModelLogSigma = 0.35;
// Relative (log-scale) uncertainty added for a link class the model did not measure and that
// is not between measured ones (another host count, a group size outside the measured range):
// the nearest class's shape transported by the backbone; the error of such a transport is not
// estimable from one class's data.
inline constexpr double kExtrapolatedClassLogSigma = 0.15;
// ... and for a model of the other side of the host boundary (an intra-host model pricing a
// group across hosts, or the reverse): it knows nothing of the other side's links (on public
// logs an 8-GPU NVLink profile prices a 2-node all_reduce 72 % low, median), a factor e^1.96 ~ 7.
inline constexpr double kOtherSideLogSigma = 1.0;

// The log-scale sigma predict() adds for the model choice: 0 for a measured class (or one
// between measured classes), kExtrapolatedClassLogSigma for a nearest-class extrapolation,
// kOtherSideLogSigma when the model is of the other side of the host boundary.

// A gap across which the measured ratio changes by more than this (log scale: a factor 2) holds a
// switch the backbone does not have (a protocol change between two measured sizes no segment
// boundary marks): the backbone's shape says nothing there, so it is priced like a gap across a
// segment boundary (the log-log line, an interval holding both ends).
inline constexpr double kCurveSwitchLog = 0.6931471805599453;  // ln 2
inline constexpr double kLn2 = 0.6931471805599453;

// Past the measured sizes the interval grows by at least this log sigma per octave (the curve's
// own interpolation error scale kappa/2 where larger): a protocol or algorithm switch beyond the
// sweep is not in the data. 0.12 per octave (a 95 % factor 1.27 each octave) is what the public
// nccl-tests development logs needed for 90 % coverage extrapolating up from 40-75 % of their
// sizes (docs/CALIBRATION.md "Past the measured sizes").
inline constexpr double kBeyondLogSigmaPerOctave = 0.12;

// Bounds the profile readers put on a curve's noise and kappa_scale (log scale): beyond them an
// interval would be meaningless (e^(1.96 x 5) ~ 18000x) and exp() could overflow.
inline constexpr double kCurveMaxNoise = 5.0;
inline constexpr double kCurveMaxKappa = 100.0;

// One priced query.
struct Priced {
  double time_us = 0;
  double lo_us = 0, hi_us = 0;  // 95 % interval
  std::size_t segment = 0;      // the backbone segment at s_eff
  const MeasuredCurve* curve = nullptr;  // the curve used (none: backbone only)
  bool curve_exact = false;     // the curve is the query's own class (n, c)
  bool switch_gap = false;      // between two measured sizes on different segments
  bool beyond_measured = false; // s_eff outside the curve's measured sizes
  // beyond_measured: log2(s_eff / the nearest measured size): > 0 past the largest, < 0 below
  // the smallest (2^|octaves| = the factor past the measured range).
  double beyond_octaves = 0;
};

// The time of m for link class (n, c) at s_eff: backbone x measured curve (the curve of the
// class (n, c) if measured, else the nearest measured class's). class_log_sigma: the query
// is outside the model's measured classes (predict()'s extrapolation flag for the class), which
// widens the interval by class_log_sigma (in quadrature; see kOtherSideLogSigma).
Priced price(const Model& m, int n, int concurrent_groups, double s_eff,
             double class_log_sigma = 0.0);
// Only the time (the planner's hot path; same arithmetic as price().time_us).
double price_time_us(const Model& m, int n, int concurrent_groups, double s_eff);

// The curve price() uses for (n, c): exact match, else the nearest by |ln n/n_i| + |ln c/c_i|
// (ties: the one measured at concurrency c, then the first); null when the model has none.
const MeasuredCurve* curve_for(const Model& m, int n, int concurrent_groups, bool* exact = nullptr);

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
// fitted trend doubled at 8 nodes). The interval: the measured count's own, plus in quadrature the step
// term per doubling (kHostTransportLogSigma untested, kHostTransportTestedLogSigma after a test),
// the switch range, the miss, and on the side away from h_b the latency's part of the price up
// to 2x (a switch level the larger group crosses first doubles a hop's latency: SMPI's fat tree,
// 4 hosts in one leaf -> 8 across two, a ring's per-step latency 1.5 -> 3 us). Prices stay non-decreasing in size (t_b is, and the factor
// keeps the order: L R + (t_b - L) F rises with t_b).
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

// (HostTransport, what predict() chose, is in profile.hpp beside Prediction.)
// The chosen model m transported to another host count by t.
Priced price_transported(const Model& m, const HostTransport& t, int concurrent_groups, double s_eff,
                         double class_log_sigma = 0.0);
double price_transported_time_us(const Model& m, const HostTransport& t, int concurrent_groups,
                                 double s_eff);

}  // namespace shardcal::calib

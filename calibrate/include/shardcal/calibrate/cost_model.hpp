#pragma once
// The cost model, defined once (docs/CALIBRATION.md "The model"). Everything that prices a
// collective from a profile -- predict(), the planner's step cost, the fitter, `shardbench
// predict`, the gate's model check, Python's shardcal package (through shardcal._core,
// pricing_api.hpp) -- goes through these functions; tests/calibrate/oracle/cost_model.py
// re-reads them line for line as a test oracle.
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
// Every prediction carries a 95 % interval (Priced::lo_us, hi_us). Prices carried to host counts
// the profile did not measure are built on these in host_transport.hpp; the model choice is
// predict.hpp's.
//
// Adding a term: a Term enumerator, its column in term_feature(), its coefficient in
// segment_coefficient() (and the Segment field it reads/writes: profile_types.hpp, the reader
// profile_read.cpp, the writer profile_write.cpp, and the fitter's Coef), and the same three
// lines in the test oracle's cost_model.py.
#include <array>
#include <cstddef>
#include <string>
#include <utility>

#include "shardcal/calibrate/profile_types.hpp"

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

// The backbone's time for group size n at S_eff in segment `segment` (no model choice, no
// checks). concurrent_groups applies the segment's contention (no effect without one). n = 1:
// the first segment's alpha at every size (a group of one rank moves nothing).
double segment_time_us(const Model& m, std::size_t segment, int n, double s_eff,
                       int concurrent_groups = 1);
// True when the model's predictions for group size n never decrease as S_eff grows: each
// segment is linear with slope >= 0, so this checks every breakpoint (the time just below it
// vs at it, relative tolerance rel_tol). For the fitter's tests and `shardbench calibrate`.
bool non_decreasing_in_size(const Model& m, int n, double rel_tol = 1e-12);

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

// The least time the model's link ceiling (Model::link_ceiling_GBps; docs/CALIBRATION.md "Link
// ceilings") allows a group of n at s_eff: S_eff x link_floor_factor(n) / ceiling; 0 when the
// profile knows no ceiling. price() and the host transport never price below it.
double link_floor_time_us(const Model& m, int n, double s_eff);

// The curve price() uses for (n, c): exact match, else the nearest by |ln n/n_i| + |ln c/c_i|
// (ties: the one measured at concurrency c, then the first); null when the model has none.
const MeasuredCurve* curve_for(const Model& m, int n, int concurrent_groups, bool* exact = nullptr);

}  // namespace shardcal::calib

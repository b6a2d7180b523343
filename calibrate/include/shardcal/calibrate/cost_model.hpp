#pragma once
// The cost model, defined once (docs/CALIBRATION.md "The model"). Everything that prices a
// collective from a profile -- predict(), the planner's step cost, the fitter, `shardbench
// predict`, the gate's model check, Python's shardcal package (through shardcal._core,
// pricing_api.hpp) -- goes through these functions; tests/calibrate/oracle/cost_model.py
// re-reads them line for line as a test oracle.
//
// A prediction has two layers:
//  1. the backbone, per size segment a sum of linear terms (kTermInfo below):
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
// Adding a term: docs/DEVELOPING.md "Adding a model term" (a Term enumerator and its kTermInfo
// row here, the Segment field in profile_types.hpp, the fitter's Coef member).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include "shardcal/calibrate/profile_types.hpp"

namespace shardcal::calib {

// The backbone's linear terms, in the order of the fitter's design columns and of kTermInfo.
enum class Term : int { Alpha = 0, AlphaStep = 1, InvBandwidth = 2, Contention = 3 };
inline constexpr int kTerms = 4;

// When the fitter frees a term's column (fit_kernel.cpp); otherwise it stays at its floor.
enum class FitWhen : unsigned char {
  Always,
  SeveralGroupSizes,     // the data hold >= 2 group sizes (with one, the column is alpha's)
  SizeTerm,              // unless fitted latency only (CALIBRATION.md "Degenerate fits")
  SeveralConcurrencies,  // contention asked for, the size term free and >= 2 concurrencies
};

// One term of the backbone: all that the fitter, the pricer, the profile's reader and writer, the
// quality table, `shardbench predict` and the gate know of it. They iterate kTermInfo, so a term
// lives in its row and its Segment field, not in each of them.
struct TermInfo {
  Term term;
  // Price: t = sum over the terms of coefficient(segment) x feature(n, s_eff, c).
  // The column for group size n, effective size s_eff (bytes), c concurrent groups: the fitter's
  // design column and the pricer's multiplier.
  double (*feature)(const CollectiveInfo& info, int n, double s_eff, int c);
  double (*coefficient)(const Segment& s);  // us per unit of the column
  // Storage: the Segment field and its profile member.
  const char* key;  // member of a profile segment (and of `predict --json`'s "segment")
  std::optional<double> (*get)(const Segment& s);  // none: absent (an optional term)
  void (*set)(Segment& s, double value);
  bool optional;  // absent = 0; written after the standard errors, and only when present
  bool positive;  // the value is > 0 (else >= 0)
  // The stored value from fitted coefficients (Term order); none: leave it absent.
  std::optional<double> (*from_fit)(const std::array<double, kTerms>& coef);
  // Uncertainty: the member holding the value's relative standard error (null: none recorded),
  // and the term whose relative SE covers this term's share of a price (backbone intervals).
  const char* se_key;
  std::optional<double> Segment::*se;
  Term se_of;
  // Fit: the coefficient's lower bound (the active set pins it there) and when it is fitted.
  double fit_floor;
  FitWhen fit_when;
  // Display. rate: the value is a rate whose reciprocal prices (lower = slower).
  bool rate;
  const char* noun;          // what it measures, for the gate's reasons ("latency rose")
  const char* table_format;  // printf format of the value in the quality table's segments
  const char* text_before;   // `shardbench predict`'s segment line: before VALUE after
  const char* text_after;
};

inline constexpr std::array<TermInfo, kTerms> kTermInfo{{
    {.term = Term::Alpha,
     .feature = [](const CollectiveInfo&, int, double, int) { return 1.0; },
     .coefficient = [](const Segment& s) { return s.alpha_us; },
     .key = "alpha_us",
     .get = [](const Segment& s) -> std::optional<double> { return s.alpha_us; },
     .set = [](Segment& s, double v) { s.alpha_us = v; },
     .optional = false,
     .positive = false,
     .from_fit = [](const std::array<double, kTerms>& c) -> std::optional<double> { return c[0]; },
     .se_key = "alpha_rel_se",
     .se = &Segment::alpha_rel_se,
     .se_of = Term::Alpha,
     .fit_floor = 0.0,
     .fit_when = FitWhen::Always,
     .rate = false,
     .noun = "latency",
     .table_format = " %.2f",
     .text_before = "alpha ",
     .text_after = " us"},
    {.term = Term::AlphaStep,
     .feature = [](const CollectiveInfo& info, int n, double, int) {
       return double(info.ring_steps(n));
     },
     .coefficient = [](const Segment& s) { return s.alpha_step_us; },
     .key = "alpha_step_us",
     .get = [](const Segment& s) -> std::optional<double> { return s.alpha_step_us; },
     .set = [](Segment& s, double v) { s.alpha_step_us = v; },
     .optional = false,
     .positive = false,
     .from_fit = [](const std::array<double, kTerms>& c) -> std::optional<double> { return c[1]; },
     .se_key = nullptr,
     .se = nullptr,
     .se_of = Term::Alpha,
     .fit_floor = 0.0,
     .fit_when = FitWhen::SeveralGroupSizes,
     .rate = false,
     .noun = "per-step latency",
     .table_format = "+%.3f",
     .text_before = " + alpha_step ",
     .text_after = " us x steps"},
    {.term = Term::InvBandwidth,
     .feature = [](const CollectiveInfo& info, int n, double s_eff, int) {
       return s_eff * info.busbw_factor(n);
     },
     .coefficient = [](const Segment& s) { return 1.0 / (s.bandwidth_GBps * 1e3); },
     .key = "bandwidth_GBps",
     .get = [](const Segment& s) -> std::optional<double> { return s.bandwidth_GBps; },
     .set = [](Segment& s, double v) { s.bandwidth_GBps = v; },
     .optional = false,
     .positive = true,
     .from_fit = [](const std::array<double, kTerms>& c) -> std::optional<double> {
       return 1.0 / (c[2] * 1e3);
     },
     .se_key = "bandwidth_rel_se",  // SE(B)/B = SE(1/B)/(1/B) to first order (delta method)
     .se = &Segment::bandwidth_rel_se,
     .se_of = Term::InvBandwidth,
     // A segment that shows no growth with S gets this slope (B = 1e6 GB/s): "bandwidth
     // unresolved", still finite and positive as the profile requires.
     .fit_floor = 1e-9,
     .fit_when = FitWhen::SizeTerm,
     .rate = true,
     .noun = "bandwidth",
     .table_format = " %.3g",
     .text_before = ", B ",
     .text_after = " GB/s"},
    {.term = Term::Contention,
     .feature = [](const CollectiveInfo& info, int n, double s_eff, int c) {
       return s_eff * info.busbw_factor(n) * double(c - 1);
     },
     .coefficient = [](const Segment& s) {
       return s.contention ? *s.contention / (s.bandwidth_GBps * 1e3) : 0.0;
     },
     .key = "contention",
     .get = [](const Segment& s) { return s.contention; },
     .set = [](Segment& s, double v) { s.contention = v; },
     .optional = true,
     .positive = false,
     // gamma = kappa / (1/B): the slowdown per extra group, relative to the bandwidth term.
     .from_fit = [](const std::array<double, kTerms>& c) -> std::optional<double> {
       if (c[3] > 0) return c[3] / c[2];
       return std::nullopt;
     },
     .se_key = nullptr,
     .se = nullptr,
     .se_of = Term::InvBandwidth,
     .fit_floor = 0.0,
     .fit_when = FitWhen::SeveralConcurrencies,
     .rate = false,
     .noun = "contention",
     .table_format = " c%.3f",
     .text_before = " / (1 + contention ",
     .text_after = " x (concurrent - 1))"},
}};

constexpr const TermInfo& term_info(Term t) { return kTermInfo[std::size_t(t)]; }
static_assert(
    [] {
      for (std::size_t i = 0; i < kTermInfo.size(); ++i)
        if (kTermInfo[i].term != Term(i) || !term_info(kTermInfo[i].se_of).se_key) return false;
      return true;
    }(),
    "kTermInfo: one row per Term, in Term order; se_of names a term with a standard error");

// A segment's term members in the profile's canonical order: the required terms' values, the
// relative standard errors, then the optional terms' values (profiles have always been written
// so; readers of older versions compare, and key order is part of the format).
struct TermMember {
  const TermInfo* info;
  bool is_se;  // the member is the term's relative SE
  constexpr const char* key() const { return is_se ? info->se_key : info->key; }
};
inline constexpr std::size_t kTermMembers =
    kTerms + std::size_t(std::count_if(kTermInfo.begin(), kTermInfo.end(),
                                       [](const TermInfo& t) { return t.se_key != nullptr; }));
inline constexpr std::array<TermMember, kTermMembers> kSegmentTermMembers = [] {
  std::array<TermMember, kTermMembers> out{};
  std::size_t i = 0;
  for (const TermInfo& t : kTermInfo)
    if (!t.optional) out[i++] = {&t, false};
  for (const TermInfo& t : kTermInfo)
    if (t.se_key) out[i++] = {&t, true};
  for (const TermInfo& t : kTermInfo)
    if (t.optional) out[i++] = {&t, false};
  return out;
}();

// The column of term t for group size n, effective size s_eff (bytes), c concurrent groups.
double term_feature(Term t, Collective op, int n, double s_eff, int concurrent_groups);
// Every term's column, and every coefficient of a segment, in Term order. Each row's function is
// called through a constant index, so the compiler calls (and inlines) it directly: the pricer's
// and the fitter's inner loops stay free of indirect calls.
inline std::array<double, kTerms> term_features(const CollectiveInfo& info, int n, double s_eff,
                                                int concurrent_groups) {
  return [&]<std::size_t... J>(std::index_sequence<J...>) {
    return std::array<double, kTerms>{kTermInfo[J].feature(info, n, s_eff, concurrent_groups)...};
  }(std::make_index_sequence<kTerms>{});
}
inline std::array<double, kTerms> segment_coefficients(const Segment& s) {
  return [&]<std::size_t... J>(std::index_sequence<J...>) {
    return std::array<double, kTerms>{kTermInfo[J].coefficient(s)...};
  }(std::make_index_sequence<kTerms>{});
}
// The coefficient of term t in a profile segment (us per unit of the column).
inline double segment_coefficient(const Segment& s, Term t) { return term_info(t).coefficient(s); }

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

// Below the measured sizes an NCCL profile's price leans from the backbone carried towards the
// log-log line for this many octaves at most (then the lean is held). Chosen from 3, 5 and 8 on
// the development logs (docs/CALIBRATION.md "Past the measured sizes"); NCCL's own channel and
// thread reduction spans up to ~8 octaves (one channel off at a time from 32-64, then threads
// halved 512 -> 64), at sizes that need not start at the sweep's smallest.
inline constexpr double kChannelRampOctaves = 5.0;

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
// widens the interval by class_log_sigma (in quadrature; see kOtherSideLogSigma). hosts: the
// hosts the queried group spans, for the host links' floor (0: the model's own, m.hosts).
Priced price(const Model& m, int n, int concurrent_groups, double s_eff,
             double class_log_sigma = 0.0, int hosts = 0);
// Only the time (the planner's hot path; same arithmetic as price().time_us).
double price_time_us(const Model& m, int n, int concurrent_groups, double s_eff, int hosts = 0);

// The least time the model's link ceiling (Model::link_ceiling_GBps; docs/CALIBRATION.md "Link
// ceilings") allows a group of n across `hosts` hosts at s_eff: S_eff x link_floor_factor(n) /
// ceiling, and across hosts at least S_eff x host_floor_factor(n, n / hosts) / host link
// (Model::host_link_GBps); 0 when the profile knows no ceiling. price() and the host transport
// never price below it.
double link_floor_time_us(const Model& m, int n, int hosts, double s_eff);
// An interval's upper side when a floor lifts the price t_us (before the floor) to floor_us: it
// keeps its width above the floor (a bound, not an estimate: an interval collapsed onto it would
// claim the time exactly), capped at e^700 so a wild profile's lift cannot overflow to inf.
inline double floor_lifted_hi_us(double hi_us, double t_us, double floor_us) {
  const double lift = t_us > 0 ? std::max(1.0, floor_us / t_us) : 1.0;
  return std::min(hi_us * lift, std::exp(700.0));
}

// The curve price() uses for (n, c): exact match, else the nearest by |ln n/n_i| + |ln c/c_i|
// (ties: the one measured at concurrency c, then the first); null when the model has none.
const MeasuredCurve* curve_for(const Model& m, int n, int concurrent_groups, bool* exact = nullptr);

}  // namespace shardcal::calib

// The cost model's one definition (cost_model.hpp; docs/CALIBRATION.md "The model").
// Python prices through it (shardcal._core); tests/calibrate/oracle/cost_model.py re-reads it
// as a test oracle.
#include "shardcal/calibrate/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "shardcal/calibrate/link_ceiling.hpp"

namespace shardcal::calib {

double term_feature(Term t, Collective op, int n, double s_eff, int concurrent_groups) {
  return term_info(t).feature(collective_info(op), n, s_eff, concurrent_groups);
}

std::size_t segment_of(const Model& m, double s_eff) {
  std::size_t seg = 0;
  while (seg + 1 < m.segments.size() && s_eff >= *m.segments[seg].s_hi) ++seg;
  return seg;
}

double segment_time_us(const Model& m, std::size_t segment, int n, double s_eff,
                       int concurrent_groups) {
  // A group of one rank moves nothing (steps(1) = f(1) = 0): the size does not enter, so neither
  // does the segment. Its time is the model's base latency, alpha of its first segment, at every
  // size (docs/PROFILE_FORMAT.md). Later segments' alpha describe where their lines meet the
  // axis, not a group of one, and need not be larger than the first's.
  if (n <= 1) return m.segments.front().alpha_us;
  const Segment& s = m.segments.at(segment);
  const std::array<double, kTerms> k = segment_coefficients(s);
  const std::array<double, kTerms> f =
      term_features(collective_info(m.collective), n, s_eff, concurrent_groups);
  double t = 0;
  for (std::size_t j = 0; j < k.size(); ++j) t += k[j] * f[j];
  return t;
}

double backbone_time_us(const Model& m, int n, double s_eff, int concurrent_groups) {
  return segment_time_us(m, segment_of(m, s_eff), n, s_eff, concurrent_groups);
}

bool non_decreasing_in_size(const Model& m, int n, double rel_tol) {
  for (std::size_t i = 0; i + 1 < m.segments.size(); ++i) {
    if (!m.segments[i].s_hi) return true;
    const double b = *m.segments[i].s_hi;
    const double left = segment_time_us(m, i, n, b);  // the limit from below (linear segment)
    const double right = segment_time_us(m, i + 1, n, b);
    if (right < left * (1.0 - rel_tol)) return false;
  }
  return true;
}

const MeasuredCurve* curve_for(const Model& m, int n, int concurrent_groups, bool* exact) {
  // Nearest by |ln n/n_i| + |ln c/c_i|; on a tie the curve measured at the query's concurrency
  // (contention changes the curve more than the group size does), then the first.
  const MeasuredCurve* best = nullptr;
  double best_d = std::numeric_limits<double>::infinity();
  bool best_same_c = false;
  for (const MeasuredCurve& c : m.curves) {
    const double d = std::abs(std::log(double(n) / c.group_size)) +
                     std::abs(std::log(double(concurrent_groups) / c.concurrent_groups));
    const bool same_c = c.concurrent_groups == concurrent_groups;
    if (d < best_d || (d == best_d && same_c && !best_same_c)) best = &c, best_d = d, best_same_c = same_c;
  }
  if (exact) *exact = best && best_d == 0.0;
  return best;
}

namespace {

// log2 of a size; sizes below one byte count as one (an empty buffer is priced at the
// smallest sizes' level).
double lg2(double s) { return std::log2(std::max(s, 1.0)); }

// The backbone's log time (a time of 0 -- alpha 0 at an empty buffer -- is floored at 1 ps so
// the log exists).
double log_time(double t) { return std::log(std::max(t, 1e-6)); }

// ln of the link ceiling's floor at s_eff (docs/CALIBRATION.md "Link ceilings"); -inf when the
// profile knows no ceiling.
double log_link_floor(const Model& m, int n, int hosts, double s_eff) {
  const double f = link_floor_time_us(m, n, hosts, s_eff);
  return f > 0 ? std::log(f) : -std::numeric_limits<double>::infinity();
}


// Log-scale standard deviation of a backbone-only price: the fit's parameter standard errors
// and its held-out (else training) error; none of them known: kUnmeasuredModelLogSigma.
double backbone_sigma(const Model& m, std::size_t seg, int n, double s_eff, int c) {
  const Segment& s = m.segments[seg];
  const double t = std::max(segment_time_us(m, seg, n, s_eff, c), 1e-6);
  // The latency part (the terms alpha_rel_se covers) and the rest (bandwidth_rel_se's).
  double alpha_term = t;
  if (n > 1) {
    alpha_term = 0;
    for (const TermInfo& ti : kTermInfo)
      if (ti.se_of == Term::Alpha)
        alpha_term += ti.coefficient(s) * term_feature(ti.term, m.collective, n, s_eff, c);
  }
  const double bw_term = n <= 1 ? 0.0 : t - alpha_term;
  double var = 0;
  if (s.alpha_rel_se) var += std::pow(alpha_term / t * *s.alpha_rel_se, 2);
  if (s.bandwidth_rel_se) var += std::pow(bw_term / t * *s.bandwidth_rel_se, 2);
  const FitQuality& q = m.quality;
  if (q.points > 0) {
    const double err = q.holdout_mape.value_or(q.mape);
    var += err * err;
  } else {
    var += kUnmeasuredModelLogSigma * kUnmeasuredModelLogSigma;
  }
  return std::sqrt(var);
}

// The curve's part of a price: the log time and the log-scale sigma (plus, in a switch gap, the
// envelope of the two measured neighbours).
struct CurvePart {
  double log_t = 0;
  double sigma = 0;
  double env_lo = 0, env_hi = 0;  // log; valid when switch_gap
  bool switch_gap = false;
  bool beyond = false;
  double beyond_octaves = 0;      // beyond: log2(s_eff / the nearest measured size)
  double bound_lo = 0, bound_hi = 0;  // beyond: the physical bounds (log)
  double end_sigma = 0;           // beyond: the end knot's own sigma (noise, misfit)
};

// The share of the measured ratios a price does not keep (mu < 1) is the backbone's misfit: their
// rms, scaled by 1 - mu, at every size.
double curve_misfit(const MeasuredCurve& cv) {
  double ss = 0;
  for (double r : cv.log_ratio) ss += r * r;
  return (1 - cv.weight) * std::sqrt(ss / double(cv.log_ratio.size()));
}

// want_sigma false: the time only (the planner's path), sigma left 0.
CurvePart curve_part(const Model& m, const MeasuredCurve& cv, int n, int hosts, int c, double s_eff,
                     double log_bb, bool want_sigma) {
  CurvePart out;
  const std::size_t k = cv.bytes.size();
  const double x = lg2(s_eff);
  // The measurement at knot i transported to the query's class: the query's backbone there
  // times the measured ratio (the class's own time when the class was measured).
  auto log_bb_at = [&](std::size_t i) { return log_time(backbone_time_us(m, n, cv.bytes[i], c)); };
  // The priced value at knot i: the query's backbone there times the mu-weighted ratio (the
  // class's own measured time when measured and mu = 1).
  auto yk = [&](std::size_t i) { return log_bb_at(i) + cv.weight * cv.log_ratio[i]; };
  // ... made non-decreasing up to knot `upto` (a running maximum, restarted where the query's
  // backbone drops between two knots: a drop the data confirmed). The fitter already pooled the
  // measured class's knots (curves.cpp); this keeps another class's transported knots monotone.
  auto ymono = [&](std::size_t upto) {
    double run = yk(0), prev_bb = log_bb_at(0);
    for (std::size_t j = 1; j <= upto; ++j) {
      const double bb = log_bb_at(j), y = yk(j);
      run = bb < prev_bb ? y : std::max(run, y);
      prev_bb = bb;
    }
    return run;
  };
  const double x0 = lg2(cv.bytes.front()), xk = lg2(cv.bytes.back());
  if (x < x0 || x > xk) {
    // Beyond the measured sizes (docs/CALIBRATION.md "Past the measured sizes"): two
    // extrapolations that fail in opposite directions, and the price their geometric middle.
    //  - the backbone carried with the end's ratio: the last segment's bandwidth (latency) held.
    //    Upwards it is too slow where a faster protocol or more channels take over (NCCL's LL
    //    region carried to sizes where Simple runs 25x faster); downwards too slow where a
    //    lower-latency protocol does (its alpha is the large sizes');
    //  - the log-log line through the two end knots carried on: the last octave's slope held.
    //    Upwards too fast where the bandwidth term takes over (the slope rises towards 1),
    //    downwards too fast where the latency floor does.
    // Both inside the physical bounds: time never falls with size, and k sequential chunks of
    // S are always possible, so t(S) <= t(kS) <= k t(S) (a log-log slope in [0, 1] per octave).
    const bool up = x > xk;
    const double d = up ? x - xk : x0 - x;  // octaves past the end
    const double ye = up ? ymono(k - 1) : yk(0);
    const double yn = up ? ymono(k - 2) : ymono(1);
    const double slope = std::clamp(up ? (ye - yn) / (xk - lg2(cv.bytes[k - 2]))
                                       : (yn - ye) / (lg2(cv.bytes[1]) - x0),
                                    0.0, kLn2);
    const double far = up ? ye + kLn2 * d : ye - kLn2 * d;  // the other physical bound
    const double carried = std::clamp(log_bb + cv.weight * cv.log_ratio[up ? k - 1 : 0], std::min(ye, far),
                                      std::max(ye, far));
    // Upwards the line stops at the link ceiling's floor: a slope below 1 carried on would
    // eventually move bytes faster than the GPU's links can (1x8 H100 logs fitted to a flat top).
    const double line = std::max(up ? ye + slope * d : ye - slope * d, log_link_floor(m, n, hosts, s_eff));
    out.beyond = true;
    out.beyond_octaves = up ? d : -d;
    // Upwards their geometric middle. Downwards the backbone carried: a latency floor is in every
    // backbone, and the line's fall is what the floor stops (on the SMPI host series, transported
    // prices below the measured sizes missed by 20 % with the middle); the line bounds the interval.
    // NCCL (channel_ramp) lowers its channel count, then its threads, as the size falls
    // (src/enqueue.cc, "Ring/Tree channel tuning": while nBytes < nc * nt * threadThreshold), so
    // its bandwidth grows with size and a backbone fitted on large sizes carries an alpha above
    // the floor (all_reduce on 8 H100s fitted from 32 MiB: 57 us at 1 MiB, 42 measured). There the
    // floor counts as far as the end measured it: the price leans from the backbone carried
    // towards the line by (1 - a) / 2 (the middle at most), a the latency's share of the
    // backbone's time at the smallest measured size -- for kChannelRampOctaves below it; further
    // down the lean's offset is held (the backbone's shape, moved by that much), since the line
    // carried on would reach any price (a scalar all_reduce priced 30x fast). Every NCCL
    // collective (all_to_all's point-to-point too: on the RTX 2080 Ti log the lean helped).
    double w_line = up ? 0.5 : 0.0;
    double lean_line = line, lean_from = carried;  // the lean: w_line (lean_line - lean_from)
    if (!up && m.channel_ramp) {
      const std::size_t s0 = segment_of(m, cv.bytes.front());
      w_line = 0.5 * (1.0 - std::clamp(segment_time_us(m, s0, n, 1.0, c) / std::exp(log_bb_at(0)), 0.0, 1.0));
      if (d > kChannelRampOctaves) {
        const double sk = cv.bytes.front() * std::exp2(-kChannelRampOctaves);
        const double fk = ye - kLn2 * kChannelRampOctaves;
        lean_from = std::clamp(log_time(backbone_time_us(m, n, sk, c)) + cv.weight * cv.log_ratio[0],
                               std::min(ye, fk), std::max(ye, fk));
        lean_line = std::max(ye - slope * kChannelRampOctaves, log_link_floor(m, n, hosts, sk));
      }
    }
    // (Held, the lean can carry the price past t(S_0) / 2^d where the backbone below the smallest
    // size falls faster than that: back inside the physical bounds.)
    out.log_t = std::clamp(carried + w_line * (lean_line - lean_from), std::min(ye, far), std::max(ye, far));
    if (!want_sigma) return out;
    // The interval holds both extrapolations, each widened by the curve's noise and misfit and by
    // a growth per octave (the curve's own interpolation error scale, at least
    // kBeyondLogSigmaPerOctave: a protocol switch out there is not in the data), and stays within
    // the physical bounds (widened by the end's noise in price_on()).
    const double grow = std::max(cv.kappa_scale / 2.0, kBeyondLogSigmaPerOctave) * d;
    const double misfit = curve_misfit(cv);
    out.sigma = std::sqrt(cv.noise * cv.noise + grow * grow + misfit * misfit);
    // The end's own uncertainty for the bounds: the noise, the misfit and the curve's size-to-size
    // scatter (its leave-one-out error at one octave, kappa / 2): single measurements near the
    // end scatter by that much around the end knot.
    out.end_sigma = std::sqrt(cv.noise * cv.noise + misfit * misfit + cv.kappa_scale * cv.kappa_scale / 4.0);
    out.env_lo = std::min(carried, line);
    out.env_hi = std::max(carried, line);
    // A flat top -- the last gap's rise within the end's scatter: the sweep ended where latency
    // hides the bandwidth term (nccl-tests' all_gather on 8 H100s is flat at 35-41 us up to
    // 4 MiB, then 21 ms at 8 GiB), so the data bound nothing above the end but k t(S): the
    // interval's upper side is the physical bound.
    if (up && ye - yn <= kIntervalZ * out.end_sigma) out.env_hi = far;
    out.bound_lo = std::min(ye, far);
    out.bound_hi = std::max(ye, far);
    return out;
  }
  // The gap [i, i+1] holding x (x at the last size: the last gap, w = 1).
  std::size_t i = std::size_t(
      std::upper_bound(cv.bytes.begin(), cv.bytes.end(), std::max(s_eff, 1.0)) - cv.bytes.begin());
  i = i == 0 ? 0 : i - 1;
  if (i + 1 >= k) i = k - 2;
  const double xi = lg2(cv.bytes[i]), xj = lg2(cv.bytes[i + 1]);
  const double g = xj - xi;
  const double w = g > 0 ? (x - xi) / g : 0.0;
  const double lbb_i = log_bb_at(i), lbb_j = log_bb_at(i + 1);
  const double yi = ymono(i);
  const double yj = lbb_j < lbb_i ? yk(i + 1) : std::max(yk(i + 1), yi);
  const double ruler = (1 - w) * yi + w * yj;
  // At a measured size there is no gap to be unsure about. (Tested on the size, not on w: a size
  // within an ulp below a knot on a segment boundary has w = 1 in floating point and the
  // previous segment's backbone, and was priced 30 % low there; host transport's measured sizes,
  // s_eff n_b / n, land there.)
  const double sq = std::max(s_eff, 1.0);
  out.switch_gap = sq != cv.bytes[i] && sq != cv.bytes[i + 1] &&
                   (segment_of(m, cv.bytes[i]) != segment_of(m, cv.bytes[i + 1]) ||
                    cv.weight * std::abs(cv.log_ratio[i + 1] - cv.log_ratio[i]) > kCurveSwitchLog);
  if (out.switch_gap) {
    // A switch somewhere in the gap, where the data cannot say: the log-log line between the two
    // measured sizes, and an interval that holds both (a time that does not fall with size lies
    // between its neighbours').
    out.log_t = ruler;
    out.env_lo = std::min(yi, yj);
    out.env_hi = std::max(yi, yj);
  } else {
    // The measured ratio interpolated, less the share (1 - lambda) of the backbone's shape the
    // curve does not keep, weighted by mu: with lambda = mu = 1 the backbone times the
    // interpolated ratio; lambda = 0, mu = 1: the log-log line; mu = 0: the backbone.
    const double shape = log_bb - ((1 - w) * lbb_i + w * lbb_j);
    const double r = (1 - w) * cv.log_ratio[i] + w * cv.log_ratio[i + 1] - (1 - cv.shrink) * shape;
    // Convex in log size inside a segment (ln of alpha + beta S is), so held at or above the
    // gap's lower end it never falls: with non-decreasing knots (curves.cpp) prices are
    // non-decreasing in size.
    out.log_t = std::max(log_bb + cv.weight * r, yi);
  }
  if (!want_sigma) return out;
  // Shape: where the backbone's shape bends the price away from the log-log line between the two
  // measured sizes, which of the two is right is not known (a knee between sparse sizes); the
  // distance between them is one sigma (0 in a switch gap, where the price is the line). Without
  // it the dev logs' intervals covered 87-90 % on two of five splits (docs/CALIBRATION.md).
  const double shape_dev = std::abs(out.log_t - ruler);
  // Interpolation error: the curve's leave-one-size-out error scale (the larger of the gap's
  // two ends and the curve's typical kappa), times w (1 - w) g: zero at a measured size, largest
  // mid-gap, growing with the gap.
  const double kap = std::max({cv.kappa_scale, cv.kappa[i], cv.kappa[i + 1]});
  const double curv = kap * w * (1 - w) * g;
  const double misfit = curve_misfit(cv);
  out.sigma = std::sqrt(cv.noise * cv.noise + curv * curv + misfit * misfit + shape_dev * shape_dev);
  return out;
}

// price() on a given curve (cv: the class's or the nearest class's from curve_for(), or a
// transported class's built by host_transport(); exact: it is the query's own class).
Priced price_on(const Model& m, const MeasuredCurve* cv, bool exact, int n, int hosts, int c, double s_eff,
                double class_sigma, bool want_interval) {
  Priced out;
  out.segment = segment_of(m, s_eff);
  const double bb = segment_time_us(m, out.segment, n, s_eff, c);
  if (!cv || cv->bytes.size() < 2) {
    const double floor_us = link_floor_time_us(m, n, hosts, s_eff);  // 0 without a ceiling
    out.time_us = std::max(bb, floor_us);
    if (want_interval) {
      double sig = backbone_sigma(m, out.segment, n, s_eff, c);
      sig = std::hypot(sig, class_sigma);
      out.lo_us = std::max(bb * std::exp(-kIntervalZ * sig), floor_us);
      out.hi_us = std::max(floor_lifted_hi_us(bb * std::exp(kIntervalZ * sig), bb, floor_us), floor_us);
    }
    return out;
  }
  out.curve = cv;
  out.curve_exact = exact;
  const CurvePart cp = curve_part(m, *cv, n, hosts, c, s_eff, log_time(bb), want_interval);
  out.switch_gap = cp.switch_gap;
  out.beyond_measured = cp.beyond;
  // The floor in linear time, so a price on it equals link_floor_time_us() exactly.
  const double floor_us = link_floor_time_us(m, n, hosts, s_eff);
  out.time_us = std::max(std::exp(cp.log_t), floor_us);
  if (!want_interval) return out;
  out.beyond_octaves = cp.beyond_octaves;
  double sig = cp.sigma, end_sig = cp.end_sigma;
  if (cp.beyond) sig = std::hypot(sig, backbone_sigma(m, out.segment, n, s_eff, c));
  if (!exact) {
    // Another class's curve transported by the backbone: the family's leave-one-group-size-out
    // error where measured, else the generic class term.
    const double e = m.quality.leave_group_out_mape.value_or(kExtrapolatedClassLogSigma);
    sig = std::hypot(sig, e);
    end_sig = std::hypot(end_sig, e);
  }
  sig = std::hypot(sig, class_sigma);
  end_sig = std::hypot(end_sig, class_sigma);
  double lo = cp.log_t - kIntervalZ * sig, hi = cp.log_t + kIntervalZ * sig;
  if (cp.switch_gap) {
    lo = std::min(lo, cp.env_lo - kIntervalZ * cv->noise);
    hi = std::max(hi, cp.env_hi + kIntervalZ * cv->noise);
  }
  if (cp.beyond) {
    // Both extrapolations widened, inside the physical bounds (as uncertain as the end itself).
    lo = std::max(cp.env_lo - kIntervalZ * sig, cp.bound_lo - kIntervalZ * end_sig);
    hi = std::min(cp.env_hi + kIntervalZ * sig, cp.bound_hi + kIntervalZ * end_sig);
  }
  // Bounded so a wild profile cannot overflow exp() (readers bound noise and kappa too).
  out.lo_us = std::exp(std::clamp(lo, -700.0, 700.0));
  out.hi_us = std::exp(std::clamp(hi, -700.0, 700.0));
  // No price below the link ceiling's floor (docs/CALIBRATION.md "Link ceilings").
  out.lo_us = std::min(std::max(out.lo_us, floor_us), out.time_us);
  out.hi_us = std::max(floor_lifted_hi_us(out.hi_us, std::exp(cp.log_t), floor_us), out.time_us);
  return out;
}

Priced price_impl(const Model& m, int n, int hosts, int c, double s_eff, double class_sigma,
                  bool want_interval) {
  bool exact = false;
  const MeasuredCurve* cv = n > 1 ? curve_for(m, n, c, &exact) : nullptr;
  return price_on(m, cv, exact, n, hosts > 0 ? hosts : m.hosts, c, s_eff, class_sigma, want_interval);
}

}  // namespace

Priced price(const Model& m, int n, int concurrent_groups, double s_eff, double class_log_sigma,
             int hosts) {
  return price_impl(m, n, hosts, concurrent_groups, s_eff, class_log_sigma, true);
}

double link_floor_time_us(const Model& m, int n, int hosts, double s_eff) {
  const CollectiveInfo& ci = collective_info(m.collective);
  const double all_links = link_floor_us(ci.link_floor_factor(n), s_eff, m.link_ceiling_GBps);
  // Across hosts: the least-populated host's ranks (n / hosts at the most) carry its share.
  if (hosts <= 1 || m.host_link_GBps <= 0) return all_links;
  return std::max(all_links, link_floor_us(ci.host_floor_factor(n, n / hosts), s_eff, m.host_link_GBps));
}

double price_time_us(const Model& m, int n, int concurrent_groups, double s_eff, int hosts) {
  return price_impl(m, n, hosts, concurrent_groups, s_eff, 0.0, false).time_us;
}

}  // namespace shardcal::calib

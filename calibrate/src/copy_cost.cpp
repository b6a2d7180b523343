// Transitions and the copy cost: each measured transition priced from its plan steps with the
// fitted models (composition error), and the local copy cost fitted from the transitions made of
// local steps only (docs/CALIBRATION.md "Transitions: composition error", "Copy cost").
#include "copy_cost.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "fit_text.hpp"
#include "shardcal/calibrate/step_cost.hpp"
#include "shardcal/error.hpp"

namespace shardcal::calib::fitter {
namespace {

using fit_text::fmt;

// Composition MAPE of the transitions with communication, their copies at c us per byte (and
// their predictions filled in at that c).
double transitions_mape(std::vector<TransitionPrediction>& ts, double c_us_per_byte) {
  double sum = 0;
  for (auto& t : ts) {
    t.predicted_us = t.collectives_us + c_us_per_byte * t.copy_bytes;
    t.rel_error = (t.predicted_us - t.measured_us) / t.measured_us;
    sum += std::abs(t.rel_error);
  }
  return sum / double(ts.size());
}

// The copy cost from transitions made of local steps only (a slice or a partial embedding: no
// communication): measured t = a + c x, x the bytes the busiest rank writes, by ordinary least
// squares, c clamped at 0 (then a alone). Absolute residuals on purpose: the largest copies
// decide c, as they decide plans (small copies run from cache and are all fixed cost). a is the
// harness's and the platform's fixed cost of a transition; the planner prices c only. These
// points measure the copy directly, so c does not absorb the collectives' prediction errors.
void fit_copy_cost(Calibration& cal, const Profile& built_in,
                   const std::vector<std::pair<double, double>>& local_only /* (bytes, us) */) {
  LocalCopyFit& f = cal.local_copy;
  const double default_us = prices_copies(built_in) ? 1e-3 / local_copy_GBps(built_in) : 0.0;
  f.default_ns_per_byte = default_us * 1e3;
  f.transitions = int(local_only.size());
  std::set<double> xs;
  for (const auto& [x, y] : local_only) xs.insert(x);
  if (!prices_copies(built_in) || f.transitions < kMinCopyTransitions || xs.size() < 2) {
    if (!cal.transitions.empty())
      cal.composition_mape = transitions_mape(cal.transitions, default_us);
    return;
  }
  // Simple linear regression (closed form): c = Sxy / Sxx, a = mean y - c mean x.
  const double n = double(local_only.size());
  double mx = 0, my = 0;
  for (const auto& [x, y] : local_only) mx += x / n, my += y / n;
  double sxx = 0, sxy = 0;
  for (const auto& [x, y] : local_only) sxx += (x - mx) * (x - mx), sxy += (x - mx) * (y - my);
  double c = sxy / sxx, a = my - c * mx;
  if (!(c >= 0)) {  // negative slope: copies are free here; the fixed cost alone
    f.clamped = true;
    c = 0;
    a = my;
  }
  double ss = 0;
  for (const auto& [x, y] : local_only) ss += (a + c * x - y) * (a + c * x - y);
  const double se_c = std::sqrt(ss / std::max(1.0, n - 2) / sxx);
  f.fitted = true;
  f.alpha_us = a;
  f.clamped = f.clamped || c > Profile::kMaxCopyNsPerByte * 1e-3;
  f.ns_per_byte = std::min(c, Profile::kMaxCopyNsPerByte * 1e-3) * 1e3;
  f.se_ns_per_byte = se_c * 1e3;
  if (cal.transitions.empty()) return;  // nothing to confirm it with: not adopted
  // Adopted only where it predicts the transitions with communication clearly better than the
  // built-in value: a copy that ran hot from cache in a small local slice must not make the
  // planner trade collectives for packing on a machine where large packs are slow.
  const double at_fit = transitions_mape(cal.transitions, f.ns_per_byte * 1e-3);
  f.composition_mape_default = transitions_mape(cal.transitions, default_us);
  f.composition_mape_fitted = at_fit;
  // A clamped fit (negative slope, or slower than Profile::kMaxCopyNsPerByte) or one whose SE
  // exceeds half its value (absolute floor kCopyNsPerByteResolution, so that an exact 0 counts as
  // determined) carries no information to adopt; an informative one must also predict better.
  const bool determined = f.se_ns_per_byte <= 0.5 * f.ns_per_byte + kCopyNsPerByteResolution;
  if (f.clamped)
    f.why = "not adopted: the fit was clamped";
  else if (!determined)
    f.why = "not adopted: its standard error is more than half its value";
  else if (!(at_fit < kCopyAdoptRatio * *f.composition_mape_default))
    f.why = "not adopted: composition MAPE must be below " + fmt("%.0f%%", kCopyAdoptRatio * 100) +
            " of the built-in value's";
  else
    f.why = "adopted (in the profile)", f.used = true;
  cal.composition_mape =
      transitions_mape(cal.transitions, f.used ? f.ns_per_byte * 1e-3 : default_us);
}

}  // namespace

void compose_transitions(const ResultSet& rs, const FitOptions& opt, Calibration& cal) {
  Profile tmp;
  tmp.cluster = "calibration";
  tmp.backend = rs.backend;
  tmp.memory = rs.memory;
  tmp.models = cal.models;
  std::vector<std::pair<double, double>> local_only;  // (bytes written, measured us)
  for (const TransitionPoint& t : rs.transitions) {
    if (t.mode != opt.mode) continue;
    TransitionPrediction tp;
    tp.label = t.label;
    tp.measured_us = t.median_s * 1e6;
    bool missing = false;
    for (const TransitionStep& s : t.steps) {
      if (!s.op) {  // a local step: priced as the planner prices it, a copy of what it writes
        tp.collectives_us += kLocalStepUs;
        tp.copy_bytes += s.out_bytes;
        continue;
      }
      ++tp.comm_steps;
      if (s.group_size % s.hosts_spanned != 0) {
        missing = true;
        break;
      }
      const LinkClass lc = group_link_class(s.group_size, s.hosts_spanned, s.concurrent_groups);
      try {
        // The step's counts, so an uneven step is priced by the model's effective-size rule
        // (n x the largest block for n_times_max), not by its total. The planner's pricing
        // (step_cost.cpp) is the same function.
        const Prediction pr =
            price_collective(tmp, *s.op, lc, s.bytes, s.counts, s.elem_size, t.dtype);
        tp.extrapolated = tp.extrapolated || pr.extrapolated;
        tp.collectives_us += pr.time_us;
        // Pack/unpack around the collective, as the planner prices it (step_cost.cpp).
        if (prices_copies(tmp)) tp.copy_bytes += s.copy_bytes;
      } catch (const Error&) {
        missing = true;  // no model for this collective
        break;
      }
    }
    if (missing) continue;
    if (tp.comm_steps == 0) {  // local steps only: a direct measurement of the copy cost
      double out = 0;
      for (const TransitionStep& s : t.steps) out += s.out_bytes;
      // 0 us is a measurement too (a platform that does not time computation).
      if (out > 0 && tp.measured_us >= 0) local_only.emplace_back(out, tp.measured_us);
      continue;
    }
    if (tp.measured_us > 0) cal.transitions.push_back(tp);
  }
  fit_copy_cost(cal, tmp, local_only);
}

}  // namespace shardcal::calib::fitter

// A family's model: the segment count chosen by k-fold held-out error over sizes, the fitted
// segments, their quality (fit, holdout and leave-one-group-size/mesh/concurrency-out errors) and
// the measured curves over them. Method: docs/CALIBRATION.md "Model and fit (the backbone)".
#include "family_fit.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "curves.hpp"
#include "fit_text.hpp"
#include "shardcal/calibrate/cost_model.hpp"

namespace shardcal::calib::fitter {
namespace {

// Mean |relative error| on held-out sizes, k-fold (fold of a size = its rank mod k).
std::optional<double> holdout_sizes(const std::vector<Obs>& obs, int K, Collective c,
                                    const FitOptions& opt, bool contention) {
  const std::vector<double> u = distinct_sizes(obs);
  const int folds = std::min<int>(opt.folds, int(u.size()));
  if (folds < 2) return std::nullopt;
  double sum = 0;
  int cnt = 0;
  for (int f = 0; f < folds; ++f) {
    std::vector<Obs> train, test;
    for (const Obs& o : obs) {
      const int idx = int(std::lower_bound(u.begin(), u.end(), o.s) - u.begin());
      (idx % folds == f ? test : train).push_back(o);
    }
    auto p = fit_piecewise(train, K, c, opt, contention);
    if (!p) return std::nullopt;
    for (const Obs& o : test) {
      sum += std::abs(pw_eval(*p, o, c) - o.y) / o.y;
      ++cnt;
    }
  }
  return cnt ? std::optional<double>(sum / cnt) : std::nullopt;
}

// Mean |relative error| of each value of `key` predicted from a fit to the others (the chosen
// K, or fewer segments where the rest has too few sizes). None when fewer than two values, or
// when some value's complement cannot be fitted (the data do not allow the measurement).
std::optional<double> leave_one_out(const std::vector<Obs>& obs, int K, Collective c,
                                    const FitOptions& opt, bool contention,
                                    const std::function<std::string(const Obs&)>& key) {
  std::set<std::string> values;
  for (const Obs& o : obs) values.insert(key(o));
  if (values.size() < 2) return std::nullopt;
  double sum = 0;
  int cnt = 0;
  for (const std::string& v : values) {
    std::vector<Obs> train, test;
    for (const Obs& o : obs) (key(o) == v ? test : train).push_back(o);
    if (int(distinct_sizes(train).size()) < opt.min_sizes) return std::nullopt;
    std::optional<Piecewise> q;
    for (int k = K; k >= 1 && !q; --k) q = fit_piecewise(train, k, c, opt, contention);
    if (!q) return std::nullopt;
    for (const Obs& o : test) {
      sum += std::abs(pw_eval(*q, o, c) - o.y) / o.y;
      ++cnt;
    }
  }
  return cnt ? std::optional<double>(sum / cnt) : std::nullopt;
}

// The held-out error of the model predict() uses (the backbone times the measured curves,
// cost_model.hpp price()): each measured size left out in turn -- all its points, every class --
// the backbone refitted without it (the chosen K, or fewer segments where the rest has too few
// sizes; the family's contention choice) and the curves refitted on that backbone, its points
// priced by price_time_us(). Mean |relative error| over the held-out points (both ends included:
// an end is priced beyond the measured sizes). None when the rest of some size cannot be fitted.
std::optional<double> leave_size_out(const std::vector<Obs>& obs, const Model& m, int K,
                                     Collective c, const FitOptions& opt, bool contention) {
  const std::vector<double> u = distinct_sizes(obs);
  if (int(u.size()) - 1 < opt.min_sizes) return std::nullopt;
  double sum = 0;
  int cnt = 0;
  for (const double v : u) {
    std::vector<Obs> train, test;
    for (const Obs& o : obs) (o.s == v ? test : train).push_back(o);
    std::optional<Piecewise> q;
    for (int k = K; k >= 1 && !q; --k) q = fit_piecewise(train, k, c, opt, contention);
    if (!q) return std::nullopt;
    Model held = m;
    held.segments = to_segments(*q);
    std::vector<CurveObs> co;
    co.reserve(train.size());
    for (const Obs& o : train) co.push_back({o.s, o.n, o.c, o.y});
    held.curves = fit_curves(held, co);
    for (const Obs& o : test) {
      sum += std::abs(price_time_us(held, o.n, o.c, o.s) - o.y) / o.y;
      ++cnt;
    }
  }
  return cnt ? std::optional<double>(sum / cnt) : std::nullopt;
}

// The model's "extra" object when a segment fell back to a simpler fit (docs/CALIBRATION.md
// "Degenerate fits"): one entry per such segment ("" = none).
std::string fallback_notes(const Piecewise& p) {
  using fit_text::fmt;
  nlohmann::json notes = nlohmann::json::array();
  for (std::size_t k = 0; k < p.coef.size(); ++k) {
    const Coef& f = p.coef[k];
    if (!f.contention_dropped && !f.size_term_dropped) continue;
    std::string why;
    if (f.contention_dropped)
      why = "contention gamma " + fmt("%.4g", f.dropped_gamma) + " (bandwidth term x" +
            fmt("%.4g", 1 + f.dropped_gamma * double(f.c_max - 1)) + " at " +
            std::to_string(f.c_max) + " groups at once; at most " +
            std::to_string(f.c_max * f.c_max) + " is plausible) with " +
            (f.dropped_B_GBps >= 0.999 / (kInvFloor * 1e3)
                 ? std::string("no size term left at one group at once")
                 : "B " + fmt("%.4g", f.dropped_B_GBps) + " GB/s (at most " +
                       fmt("%.0f", kMaxPlausibleBandwidthGBps) + " is plausible)") +
            ": fitted without contention";
    if (f.size_term_dropped)
      why += (why.empty() ? "" : "; then ") + std::string("B ") + fmt("%.4g", f.flat_B_GBps) +
             " GB/s beyond any link (at most " + fmt("%.0f", kMaxPlausibleBandwidthGBps) +
             "): fitted latency only (no size term)";
    notes.push_back({{"segment", k},
                     {"s_lo", p.lo[k]},
                     {"contention_dropped", f.contention_dropped},
                     {"size_term_dropped", f.size_term_dropped},
                     {"why", why}});
  }
  if (notes.empty()) return "";
  return nlohmann::json{{"fit_fallbacks", notes}}.dump();
}

}  // namespace

// Segment count by held-out error: K+1 only if it cuts the holdout MAPE by the gain margin. A
// fourth segment (and beyond) is tried only where the third paid: each count costs a k-fold
// refit, and families that need 4 are those whose third regime showed.
std::optional<FamilyFit> fit_best(const std::vector<Obs>& obs, Collective op, const FitOptions& opt,
                                  bool contention) {
  FamilyFit f;
  f.holdout = holdout_sizes(obs, 1, op, opt, contention);
  for (int K = 2; K <= opt.max_segments; ++K) {
    auto cv = holdout_sizes(obs, K, op, opt, contention);
    if (!cv) break;
    if (!f.holdout || *cv < *f.holdout * (1.0 - opt.more_segments_gain)) {
      f.K = K;
      f.holdout = cv;
    } else if (K >= 3) {
      break;
    }
  }
  auto p = fit_piecewise(obs, f.K, op, opt, contention);
  if (!p) return std::nullopt;
  f.p = *p;
  return f;
}

std::variant<Model, UnfittedModel> fit_family(const std::vector<Obs>& obs, const FamilyKey& key,
                                              std::optional<DType> dt, const FitOptions& opt,
                                              bool contention) {
  const std::vector<double> u = distinct_sizes(obs);
  const std::vector<int> ns = distinct_ns(obs);
  const std::vector<int> cs = distinct_cs(obs);
  if (int(u.size()) < opt.min_sizes) {
    UnfittedModel um{
        key.op,
        key.hosts,
        key.conc,
        dt,
        ns,
        int(u.size()),
        std::to_string(u.size()) + " distinct size(s), need >= " + std::to_string(opt.min_sizes)};
    return um;
  }
  auto fit = fit_best(obs, key.op, opt, contention);
  if (!fit) {
    UnfittedModel um{key.op, key.hosts, key.conc, dt, ns, int(u.size()), "fit failed"};
    return um;
  }
  Model m;
  m.collective = key.op;
  m.hosts = key.hosts;
  m.concurrent_groups = cs.empty() ? key.conc : cs.front();
  m.dtype = dt;
  m.group_sizes = ns;
  m.segments = to_segments(fit->p);
  if (cs.size() >= 2) {
    // Pooled across concurrencies: the measured range is stated, so a query inside it is not
    // flagged and one outside is (the contention term then extrapolates).
    Domain d;
    d.hosts = {double(key.hosts), double(key.hosts)};
    d.concurrent_groups = {double(cs.front()), double(cs.back())};
    if (!ns.empty()) d.group_size = {double(ns.front()), double(ns.back())};
    std::set<std::pair<int, int>> pairs;
    for (const Obs& o : obs) pairs.insert({o.n, o.c});
    d.classes.assign(pairs.begin(), pairs.end());
    m.domain = d;
  }
  m.quality.points = int(obs.size());
  double sum = 0, mx = 0;
  for (const Obs& o : obs) {
    const double e = std::abs(pw_eval(fit->p, o, key.op) - o.y) / o.y;
    sum += e;
    mx = std::max(mx, e);
  }
  m.quality.mape = sum / double(obs.size());
  m.quality.max_rel_error = mx;
  m.quality.holdout_mape = fit->holdout;
  if (ns.size() >= 3)
    m.quality.leave_group_out_mape = leave_one_out(
        obs, fit->K, key.op, opt, contention, [](const Obs& o) { return std::to_string(o.n); });
  std::set<std::string> meshes;
  for (const Obs& o : obs) meshes.insert(o.mesh);
  // A mesh whose dims are all one class is the same held-out set as that class: still reported.
  if (meshes.size() >= 2)
    m.quality.leave_mesh_out_mape =
        leave_one_out(obs, fit->K, key.op, opt, contention, [](const Obs& o) { return o.mesh; });
  if (cs.size() >= 2)
    m.quality.leave_concurrency_out_mape = leave_one_out(
        obs, fit->K, key.op, opt, contention, [](const Obs& o) { return std::to_string(o.c); });
  // The second layer of the model: each measured class's curve over the backbone.
  std::vector<CurveObs> co;
  co.reserve(obs.size());
  for (const Obs& o : obs) co.push_back({o.s, o.n, o.c, o.y});
  m.curves = fit_curves(m, co);
  m.channel_ramp = opt.channel_ramp;
  m.quality.leave_size_out_mape = leave_size_out(obs, m, fit->K, key.op, opt, contention);
  m.json_extra = fallback_notes(fit->p);
  return m;
}

}  // namespace shardcal::calib::fitter

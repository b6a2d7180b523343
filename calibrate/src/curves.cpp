// Measured curves: what the fitter stores for cost_model.cpp's second layer
// (docs/CALIBRATION.md "Measured curves").
#include "curves.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "shardcal/calibrate/cost_model.hpp"

namespace shardcal::calib {
namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t k = v.size();
  return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

MeasuredCurve fit_one(const Model& m, int n, int c, const std::map<double, std::vector<double>>& by_size) {
  MeasuredCurve cv;
  int cv_spikes = 0;
  cv.group_size = n;
  cv.concurrent_groups = c;
  std::vector<double> logy, dev2;
  for (const auto& [s, ys] : by_size) {
    std::vector<double> ly;
    for (double y : ys) ly.push_back(std::log(y));
    const double med = median_of(ly);
    if (ly.size() >= 2)
      for (double l : ly) dev2.push_back((l - med) * (l - med));
    const double bb = std::max(backbone_time_us(m, n, s, c), 1e-6);
    cv.bytes.push_back(s);
    cv.log_ratio.push_back(med - std::log(bb));
    logy.push_back(med);
  }
  // Noise of one measurement: the spread of repeated measurements of one size (out-of-place and
  // in-place, dtypes, meshes), robustly; floored.
  cv.noise = std::max(kCurveNoiseFloor, dev2.empty() ? 0.0 : std::sqrt(median_of(dev2)));

  // Leave each interior size out and predict it from its two neighbours, as price() would in a gap
  // twice as wide: the log-log line (ruler) plus the backbone's shape. lambda, the share of the
  // shape kept, is the least-squares blend over those sizes (clamped to [0, 1]): 1 where the
  // backbone's curvature between sizes is right, towards 0 (plain interpolation) where it is not.
  const std::size_t k = cv.bytes.size();
  std::vector<double> x(k), lbb(k);
  for (std::size_t i = 0; i < k; ++i) {
    x[i] = std::log2(cv.bytes[i]);
    lbb[i] = std::log(std::max(backbone_time_us(m, n, cv.bytes[i], c), 1e-6));
  }
  struct Loo {
    std::size_t j;
    double e_ruler, shape, w, gap;
    bool sw;
    double pred_ratio = 0;
  };
  // An isolated spike -- one size whose time is far from what its two neighbours predict (more
  // than kCurveSpikeSigmas robust standard deviations of those leave-one-out errors, and of the
  // noise, and more than a factor e^kCurveSpikeMinLog = 1.3 off both neighbours the same way) --
  // is one slow run, not the curve: it is replaced by that prediction, so it moves
  // neither its own price nor its neighbours'. The largest first, at most a quarter of the sizes.
  // A size next to a segment boundary (a switch between it and a neighbour) is no candidate: its
  // neighbours cannot predict it.
  auto loo_error = [&](std::size_t j) {
    const double g = x[j + 1] - x[j - 1];
    const double w = (x[j] - x[j - 1]) / g;
    const double ruler = (1 - w) * logy[j - 1] + w * logy[j + 1];
    return logy[j] - (ruler + lbb[j] - ((1 - w) * lbb[j - 1] + w * lbb[j + 1]));
  };
  auto at_switch = [&](std::size_t j) {
    return segment_of(m, cv.bytes[j - 1]) != segment_of(m, cv.bytes[j + 1]) ||
           std::abs(cv.log_ratio[j + 1] - cv.log_ratio[j - 1]) > kCurveSwitchLog;
  };
  for (std::size_t round = 0; k >= 5 && round < k / 4; ++round) {
    std::vector<double> e, ae, all;  // all: |e| of every size not at a switch (the scale)
    for (std::size_t j = 1; j + 1 < k; ++j) {
      e.push_back(loo_error(j));
      if (!at_switch(j)) all.push_back(std::abs(e.back()));
      // Isolated: off both neighbours the same way by more than the factor (a level shift, where
      // the next size stays up, is a switch, not a spike).
      const double dl = cv.log_ratio[j] - cv.log_ratio[j - 1], dr = cv.log_ratio[j] - cv.log_ratio[j + 1];
      const bool isolated = dl * dr > 0 && std::min(std::abs(dl), std::abs(dr)) > kCurveSpikeMinLog;
      ae.push_back(at_switch(j) || !isolated ? 0.0 : std::abs(e.back()));
    }
    if (all.empty()) break;
    const double scale = std::max(1.4826 * median_of(all), cv.noise);
    const std::size_t worst = std::size_t(std::max_element(ae.begin(), ae.end()) - ae.begin());
    if (ae[worst] <= kCurveSpikeSigmas * scale || ae[worst] <= kCurveSpikeMinLog) break;
    const std::size_t j = worst + 1;
    logy[j] -= e[worst];
    cv.log_ratio[j] -= e[worst];
    ++cv_spikes;
  }

  std::vector<Loo> loo;
  for (std::size_t j = 1; j + 1 < k; ++j) {
    const double g = x[j + 1] - x[j - 1];
    const double w = (x[j] - x[j - 1]) / g;
    const double ruler = (1 - w) * logy[j - 1] + w * logy[j + 1];
    const bool sw = at_switch(j);
    const double shape = sw ? 0.0 : lbb[j] - ((1 - w) * lbb[j - 1] + w * lbb[j + 1]);
    loo.push_back({j, logy[j] - ruler, shape, w, g, sw, 0.0});
  }
  double ce = 0, cc = 0;
  for (const Loo& l : loo) ce += l.shape * l.e_ruler, cc += l.shape * l.shape;
  cv.shrink = cc > 1e-12 ? std::clamp(ce / cc, 0.0, 1.0) : 1.0;
  // mu, the share of the measured ratios kept: shrunk towards the backbone by their
  // signal-to-noise ratio (the positive-part James-Stein factor 1 - noise^2 / mean ratio^2;
  // James & Stein 1961, Efron & Morris, JASA 68, 1973): ratios no larger than the measurement
  // noise are noise around a backbone that fits (mu ~ 0, the backbone prices alone); ratios
  // well above it are structure the backbone lacks (a bend, a bump: mu ~ 1).
  double ms = 0;
  for (double r : cv.log_ratio) ms += r * r;
  ms /= double(k);
  cv.weight = ms > 0 ? std::clamp(1.0 - cv.noise * cv.noise / ms, 0.0, 1.0) : 1.0;
  for (Loo& l : loo)
    if (!l.sw)
      l.pred_ratio = (1 - l.w) * cv.log_ratio[l.j - 1] + l.w * cv.log_ratio[l.j + 1] - (1 - cv.shrink) * l.shape;
  cv.kappa.assign(k, 0.0);
  for (const Loo& l : loo) {
    const double e = l.sw ? l.e_ruler : cv.log_ratio[l.j] - cv.weight * l.pred_ratio;
    const double kap = std::abs(e) / (l.w * (1 - l.w) * l.gap);
    cv.kappa[l.j] = kap;
  }
  // Prices never fall with size where the backbone does not (a planner pads shards and takes the
  // slowest rank's size as the step's): the priced knot values ln bb + mu rho made non-decreasing
  // by pooling adjacent violators (isotonic regression, equal weights; Barlow et al. 1972) within
  // each run of sizes the backbone does not drop across (a drop the data confirm stays:
  // docs/CALIBRATION.md "Monotone across boundaries"). A first-size warm-up outlier of nccl-tests
  // is pooled with its neighbour. cost_model.cpp keeps prices inside a gap at or above the gap's
  // lower end, so with these knots every price is non-decreasing in size.
  if (cv.weight > 0) {
    std::vector<double> z(k);
    for (std::size_t i = 0; i < k; ++i) z[i] = lbb[i] + cv.weight * cv.log_ratio[i];
    std::size_t run = 0;
    for (std::size_t i = 1; i <= k; ++i) {
      if (i < k && !(lbb[i] < lbb[i - 1])) continue;
      // [run, i): pool adjacent violators.
      std::vector<std::pair<double, int>> blocks;  // (mean, count)
      for (std::size_t q = run; q < i; ++q) {
        blocks.push_back({z[q], 1});
        while (blocks.size() >= 2 && blocks[blocks.size() - 2].first > blocks.back().first) {
          auto [m2, c2] = blocks.back();
          blocks.pop_back();
          auto& b = blocks.back();
          b.first = (b.first * b.second + m2 * c2) / double(b.second + c2);
          b.second += c2;
        }
      }
      std::size_t q = run;
      for (const auto& [mean, count] : blocks)
        for (int t = 0; t < count; ++t, ++q) cv.log_ratio[q] = (mean - lbb[q]) / cv.weight;
      run = i;
    }
  }
  // The curve's typical scale, robustly: the upper quartile of the interior kappa (one switch's
  // large leave-one-out error widens its own gaps, through kappa there, not every gap of the
  // curve; the quartile rather than the median, since real curves hold surprises no single
  // left-out size shows: on the public nccl-tests dev logs the median covered 92.6 % of held-out
  // sizes, the upper quartile 96.3 %, the rms 98.5 %, before the monotone pooling above).
  std::vector<double> k2;
  for (const Loo& l : loo) k2.push_back(cv.kappa[l.j] * cv.kappa[l.j]);
  std::sort(k2.begin(), k2.end());
  cv.kappa_scale = loo.empty() ? kCurveKappaDefault : std::sqrt(k2[std::size_t(0.75 * double(k2.size() - 1) + 0.5)]);
  (void)cv_spikes;
  return cv;
}

}  // namespace

std::vector<MeasuredCurve> fit_curves(const Model& m, const std::vector<CurveObs>& obs) {
  std::map<std::pair<int, int>, std::map<double, std::vector<double>>> cls;
  for (const CurveObs& o : obs)
    if (o.n >= 2 && o.s >= 1.0 && o.y_us > 0 && std::isfinite(o.y_us)) cls[{o.n, o.c}][o.s].push_back(o.y_us);
  std::vector<MeasuredCurve> out;
  for (const auto& [nc, by_size] : cls)
    if (by_size.size() >= 2) out.push_back(fit_one(m, nc.first, nc.second, by_size));
  return out;
}

}  // namespace shardcal::calib

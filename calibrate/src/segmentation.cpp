// Segmentation: the best K-segment piecewise fit of a family (segment ends by dynamic
// programming), where each boundary goes inside the gap between two measured sizes, the
// monotone floors at the boundaries, and the segments written to the model.
// Method and citations: docs/CALIBRATION.md "Model and fit (the backbone)".
#include "segmentation.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>

#include "shardcal/calibrate/fit.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/median.hpp"

namespace shardcal::calib {
namespace fitter {
namespace {

int seg_of(const Piecewise& p, double s) {
  int k = 0;
  for (std::size_t i = 1; i < p.lo.size(); ++i)
    if (s >= p.lo[i]) k = int(i);
  return k;
}

// Make the prediction never drop at a segment boundary, for n = 1 and EVERY group size from the
// smallest measured one up, n >= n_min (below it a prediction is an extrapolation, flagged as
// such, and may drop: checking it moved measured prices, docs/CALIBRATION.md) (or, at a
// confirmed drop, never fall by more than the data did: BoundaryFloor below, where the terms are
// r x the earlier segment at s_before against the later at s_after). At the
// boundary b the drop is D(n) = A + B steps(n) + C f(n) with A = a0' - a0, B = as' - as,
// C = b (inv' - inv) (primes: the earlier segment). n = 1 (steps = f = 0) is priced at the first
// segment's alpha0 at every size (segment_time_us), so it needs no check. If B > 0, D grows
// without bound, so no alpha0 can fix it: the later segment's alpha_step is raised to the
// earlier's (B = 0). Then for n > hi, D(n) <= A + B steps(hi+1) + max(C f(hi+1), C f(inf)) (B <= 0;
// f is monotone in n and tends to f(inf)); with the exact values on n_min..hi this bounds D on the
// whole range, and alpha0 is raised by it.
// With contention the bandwidth slope is inv + kap (conc - 1); the guarantee holds for every
// concurrency in [1, c_max] (the measured range: beyond it the contention term extrapolates and
// the prediction is flagged as such).
// What each boundary must hold, for every group size n >= n_min and concurrency 1..c_max: the later
// segment's price at s_after >= ratio x the earlier segment's at s_before. Monotone (the
// default): both sizes at the boundary, ratio 1. Where the data confirm a drop (confirmed_drop),
// the last and first measured sizes around the gap and the smallest ratio measured there: no
// group size >= n_min, measured or not, is priced to fall across the gap by more than the largest
// drop the data show (a bound at the mildest would raise the measured series that fell further).
struct BoundaryFloor {
  double s_before = 0, s_after = 0, ratio = 1;
};

void make_monotone(Piecewise& p, Collective c, int n_min, int n_max, int c_max,
                   const std::vector<std::optional<BoundaryFloor>>& floors) {
  const auto& info = collective_info(c);
  const int hi = std::max(64, 2 * n_max);
  const double f_inf = info.busbw(1e15);
  for (std::size_t k = 1; k < p.coef.size(); ++k) {
    Coef& prev = p.coef[k - 1];
    Coef& cur = p.coef[k];
    const Coef fitted = cur;
    const BoundaryFloor fl = floors[k].value_or(BoundaryFloor{p.lo[k], p.lo[k], 1.0});
    const double r = fl.ratio, sa = fl.s_before, sb = fl.s_after;
    if (cur.as < r * prev.as) cur.as = r * prev.as;
    double deficit = 0;  // n = 1 is the first segment's alpha0 at every size (segment_time_us)
    for (int conc = 1; conc <= std::max(1, c_max); ++conc) {
      for (int n = std::max(2, n_min); n <= hi; ++n)
        deficit =
            std::max(deficit, r * eval_coef(prev, sa, n, c, conc) - eval_coef(cur, sb, n, c, conc));
      const double A = r * prev.a0 - cur.a0, B = r * prev.as - cur.as,
                   C = r * sa * (prev.inv + prev.kap * (conc - 1)) -
                       sb * (cur.inv + cur.kap * (conc - 1));
      const double tail =
          A + B * info.ring_steps(hi + 1) + std::max(C * info.busbw_factor(hi + 1), C * f_inf);
      deficit = std::max(deficit, tail);
    }
    if (deficit > 0) cur.a0 += deficit * (1 + 1e-12) + 1e-12;
    // An alpha0 moved by more than its own SE (or one whose alpha_step was raised) is set by this
    // constraint, not by the data: its SE would not describe it (as for a coefficient pinned at
    // a bound). The slope is not touched, so its SE stays.
    if (cur.as != fitted.as || cur.a0 - fitted.a0 > fitted.se_a0) cur.se_a0 = NAN;
  }
}

// Whether the measured times fall across the gap between sizes a < b (a protocol or algorithm
// switch: a monotone model mis-prices every size after it), and by how much: every series
// (group size, concurrency, dtype, mesh) measured at both sizes is faster at b by >= min_drop,
// and each of those points is priced within min_drop / 2 by its own segment's robust fit (`before`
// at a, `after` at b), so one slow point at the end of a segment is not a drop. Returns the
// smallest ratio t(b) / t(a) over the series (the largest drop), or nothing.
std::optional<double> confirmed_drop(const std::vector<Obs>& obs, const Coef& before,
                                     const Coef& after, double a, double b, double min_drop,
                                     Collective c) {
  using Series = std::tuple<int, int, DType, std::string>;
  std::map<Series, std::array<std::vector<double>, 2>> at;
  for (const Obs& o : obs) {
    if (o.s != a && o.s != b) continue;
    const bool is_a = o.s == a;
    const double fit = eval_obs(is_a ? before : after, o, c);
    if (std::abs(o.y - fit) > o.y * min_drop / 2) return std::nullopt;
    at[{o.n, o.c, o.dtype, o.mesh}][is_a ? 0 : 1].push_back(o.y);
  }
  std::optional<double> steepest;
  for (const auto& [series, y] : at) {
    if (y[0].empty() || y[1].empty()) continue;
    const double ratio = formats::median_or_zero(y[1]) / formats::median_or_zero(y[0]);
    if (!(ratio <= 1 - min_drop)) return std::nullopt;
    steepest = std::min(steepest.value_or(1.0), ratio);
  }
  return steepest;
}

// The power of two p with a < p <= b (a size of p takes the later segment: a switch "from 2^k
// bytes up"); where the gap holds several, the one nearest its geometric middle in log2 (on a
// tie the lower); for a <= 0, 1. Integer exponents, so p is exact and never equals a. For byte
// sizes (b < 1 has none; a fractional a may give a power below 1).
std::optional<double> power_of_two_in_gap(double a, double b) {
  if (!(b > a) || !(b >= 1) || !(b < 0x1p62)) return std::nullopt;
  const int top = int(std::bit_width(std::uint64_t(b))) - 1;  // 2^top <= b < 2^(top+1)
  if (!(std::ldexp(1.0, top) > a)) return std::nullopt;
  if (!(a > 0)) return 1.0;
  const double mid = (std::log2(a) + std::log2(b)) / 2;
  int best = top;
  for (int k = top - 1; std::ldexp(1.0, k) > a; --k)
    if (std::abs(k - mid) <= std::abs(best - mid)) best = k;
  return std::ldexp(1.0, best);
}

}  // namespace

// Best K-segment fit: every split of the distinct sizes into K runs of >= min_per sizes is
// fitted (robustly) and scored with the Huber loss of relative residuals.
std::optional<Piecewise> fit_piecewise(const std::vector<Obs>& obs, int K, Collective c,
                                       const FitOptions& opt, bool contention) {
  const std::vector<double> u = distinct_sizes(obs);
  const int m = int(u.size());
  const int min_per = K == 1 ? 2 : opt.min_sizes_per_segment;
  if (m < K * min_per) return std::nullopt;
  const std::vector<int> ns = distinct_ns(obs);

  std::map<std::pair<int, int>, std::pair<Coef, double>> cache;  // [i, j) size index range
  auto seg_fit = [&](int i, int j) -> std::pair<Coef, double> {
    auto key = std::make_pair(i, j);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    std::vector<const Obs*> sub;
    for (const Obs& o : obs)
      if (o.s >= u[std::size_t(i)] && o.s <= u[std::size_t(j - 1)]) sub.push_back(&o);
    const Coef k = fit_segment(sub, c, opt.huber_k, contention);
    double score = 0;
    for (const Obs* o : sub) score += huber((o->y - eval_obs(k, *o, c)) / o->y, opt.score_delta);
    return cache[key] = {k, score};
  };

  // The score is a sum over segments, so the best split is found by dynamic programming over
  // segment end points (optimal partitioning, R. Bellman, Comm. ACM 4(6), 1961; B. Jackson et
  // al., IEEE Signal Process. Lett. 12(2), 2005): best[k][j] = the best k segments covering sizes
  // [0, j). O(K m^2) instead of enumerating the O(m^(K-1)) splits (K = 4 on a few hundred
  // distinct effective sizes was minutes under ASan). On equal scores the earliest end wins.
  std::vector<std::vector<double>> best(std::size_t(K) + 1,
                                        std::vector<double>(std::size_t(m) + 1, INFINITY));
  std::vector<std::vector<int>> from(std::size_t(K) + 1, std::vector<int>(std::size_t(m) + 1, -1));
  best[0][0] = 0;
  for (int k = 1; k <= K; ++k)
    for (int j = k == K ? m : k * min_per; j <= m - (K - k) * min_per; ++j)  // the last ends at m
      for (int i = (k - 1) * min_per; i <= j - min_per; ++i) {
        const double before = best[std::size_t(k - 1)][std::size_t(i)];
        if (!std::isfinite(before)) continue;
        const double v = before + seg_fit(i, j).second;
        if (v < best[std::size_t(k)][std::size_t(j)]) {
          best[std::size_t(k)][std::size_t(j)] = v;
          from[std::size_t(k)][std::size_t(j)] = i;
        }
      }
  if (!std::isfinite(best[std::size_t(K)][std::size_t(m)])) return std::nullopt;
  std::vector<int> best_split;  // start indices of segments 1..K-1
  for (int k = K, j = m; k > 1; --k) {
    j = from[std::size_t(k)][std::size_t(j)];
    best_split.insert(best_split.begin(), j);
  }

  Piecewise p;
  p.lo.push_back(0);
  int prev = 0;
  for (int s : best_split) {
    p.coef.push_back(seg_fit(prev, s).first);
    prev = s;
  }
  p.coef.push_back(seg_fit(prev, m).first);
  for (std::size_t k = 0; k < best_split.size(); ++k) {
    const double a = u[std::size_t(best_split[k] - 1)], b = u[std::size_t(best_split[k])];
    // Where the two segments' lines cross, if inside the gap: a continuous change of slope. The
    // crossing moves with the group size, so of the measured ones (n >= 2) the boundary takes
    // the crossing that leaves every measured size's later line at or above its earlier one
    // there: a later line that is steeper (it starts lower) needs the largest crossing, a flatter
    // one (it starts higher) the smallest; then make_monotone has nothing to raise at a measured
    // size. Else the time jumps somewhere in the gap (an algorithm or protocol switch) and the
    // data cannot say where: the power of two inside the gap, where one is (docs/CALIBRATION.md
    // "Model and fit (the backbone)": why, and what it costs where a library's threshold is not
    // one), else the geometric middle of the gap.
    const Coef &L = p.coef[k], &R = p.coef[k + 1];
    const auto& info = collective_info(c);
    const double d_inv = L.inv - R.inv;
    std::optional<double> cross;
    if (d_inv != 0)
      for (int n : ns) {
        if (n < 2) continue;  // a group of one is priced at alpha alone
        const double dA = (R.a0 + R.as * info.ring_steps(n)) - (L.a0 + L.as * info.ring_steps(n));
        const double x = dA / (d_inv * info.busbw_factor(n));
        cross = !cross ? x : d_inv < 0 ? std::max(*cross, x) : std::min(*cross, x);
      }
    double bound = a > 0 ? std::sqrt(a * b) : b / 2;
    bool crossed = false;
    if (cross && *cross > a && *cross <= b) {  // a crossing of the wrong sign is negative
      bound = *cross;
      crossed = true;
    }
    if (!crossed && opt.boundary_at_power_of_two)
      if (auto p2 = power_of_two_in_gap(a, b)) bound = *p2;
    p.lo.push_back(bound);
  }
  std::vector<std::optional<BoundaryFloor>> floors(p.coef.size());
  for (std::size_t k = 0; k < best_split.size(); ++k) {
    const double a = u[std::size_t(best_split[k] - 1)], b = u[std::size_t(best_split[k])];
    if (auto r = confirmed_drop(obs, p.coef[k], p.coef[k + 1], a, b, opt.observed_drop_min, c))
      floors[k + 1] = BoundaryFloor{a, b, *r};
  }
  const std::vector<int> cs = distinct_cs(obs);
  make_monotone(p, c, ns.empty() ? 2 : ns.front(), ns.empty() ? 2 : ns.back(),
                cs.empty() ? 1 : cs.back(), floors);
  return p;
}

std::vector<Segment> to_segments(const Piecewise& p) {
  std::vector<Segment> out;
  for (std::size_t k = 0; k < p.coef.size(); ++k) {
    Segment s;
    s.s_lo = p.lo[k];
    if (k + 1 < p.coef.size()) s.s_hi = p.lo[k + 1];
    const Coef& fit = p.coef[k];
    std::array<double, kTerms> coef{};
    for (std::size_t j = 0; j < coef.size(); ++j) coef[j] = fit.*kCoefOf[j];
    for (const TermInfo& t : kTermInfo) {
      const std::size_t j = std::size_t(t.term);
      if (auto v = t.from_fit(coef)) t.set(s, *v);
      // The relative SE of the coefficient; for a rate (B = 1/(inv 1e3)) SE(B)/B = SE(inv)/inv
      // to first order (delta method).
      const double se = fit.*kSeOf[j];
      if (t.se && std::isfinite(se) && coef[j] > 0) s.*t.se = se / coef[j];
    }
    out.push_back(s);
  }
  return out;
}

double pw_eval(const Piecewise& p, const Obs& o, Collective c) {
  return eval_obs(p.coef[std::size_t(seg_of(p, o.s))], o, c);
}

}  // namespace fitter

double model_time_us(const Model& m, double s_eff, int n, int* segment, int concurrent_groups) {
  if (m.segments.empty()) throw Error("model has no segments");
  std::size_t k = 0;
  for (std::size_t i = 1; i < m.segments.size(); ++i)
    if (s_eff >= m.segments[i].s_lo) k = i;
  if (segment) *segment = int(k);
  return segment_time_us(m, k, n, s_eff, concurrent_groups);
}

}  // namespace shardcal::calib

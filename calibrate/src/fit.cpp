// The fitter: sweep points -> piecewise ring models per (collective, link-class family).
// Method and citations: docs/CALIBRATION.md.
#include "shardcal/calibrate/fit.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <variant>

#include <nlohmann/json.hpp>

#include "curves.hpp"
#include "fit_text.hpp"
#include "shardcal/calibrate/cost_model.hpp"
#include "shardcal/calibrate/step_cost.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/median.hpp"
#include "shardcal/formats/utc_time.hpp"

namespace shardcal::calib {
namespace {

using nlohmann::json;
using fit_text::fmt;
using fit_text::key_name;

// A segment that shows no growth with S gets this slope (B = 1e6 GB/s): "bandwidth unresolved",
// still finite and positive as the profile requires.
constexpr double kInvFloor = 1e-9;  // us per byte
constexpr int kMinClassPoints = 3;  // fewer: a class's residual is not tested

struct Obs {
  double s = 0;   // S_eff, bytes
  int n = 1;      // group size
  double y = 0;   // median time, us
  DType dtype = DType::F32;
  int c = 1;      // concurrent groups per host
  std::string mesh;  // the measured mesh (leave-one-mesh-out)
};

struct Coef {
  double a0 = 0, as = 0, inv = kInvFloor;  // inv: us per byte of S*f(n)
  double kap = 0;  // contention: us per byte of S*f(n) per extra concurrent group
  // Standard errors of a0, inv and kap from the final weighted fit; NaN = unknown (the
  // coefficient is pinned at its bound, N <= free coefficients, or the design is rank-deficient).
  double se_a0 = NAN, se_inv = NAN, se_kap = NAN;
};

// Columns of the linear model: the cost model's terms (cost_model.hpp).
constexpr int kCols = kTerms;

// The design column j of an observation: the cost model's Term j (cost_model.hpp).
double feat(int j, const Obs& o, Collective c) { return term_feature(Term(j), c, o.n, o.s, o.c); }

// The coefficients of Coef in Term order.
double coef_of(const Coef& k, int j) {
  switch (Term(j)) {
    case Term::Alpha: return k.a0;
    case Term::AlphaStep: return k.as;
    case Term::InvBandwidth: return k.inv;
    case Term::Contention: return k.kap;
  }
  return 0.0;
}

double eval_coef(const Coef& k, double s, int n, Collective c, int conc = 1) {
  double t = 0;
  for (int j = 0; j < kTerms; ++j) t += coef_of(k, j) * term_feature(Term(j), c, n, s, conc);
  return t;
}

double eval_obs(const Coef& k, const Obs& o, Collective c) { return eval_coef(k, o.s, o.n, c, o.c); }

// Weighted least squares of relative residuals, with an active set keeping alpha0, alpha_step
// >= 0 and the slope >= kInvFloor (non-negative latencies, positive finite bandwidth; a
// non-negative slope also makes each segment non-decreasing in S).
Coef wls(const std::vector<const Obs*>& o, const std::vector<double>& w, bool joint,
         bool contention, Collective c) {
  std::vector<int> free_vars{0};
  if (joint) free_vars.push_back(1);
  free_vars.push_back(2);
  if (contention) free_vars.push_back(3);
  double fixed[kCols] = {0, 0, kInvFloor, 0};
  Coef out;
  // Each attempt pins one more coefficient at its bound, so kCols + 1 attempts cover all cases.
  for (int attempt = 0; attempt <= kCols; ++attempt) {
    Eigen::MatrixXd A(Eigen::Index(o.size()), Eigen::Index(free_vars.size()));
    Eigen::VectorXd b(Eigen::Index(o.size()));
    for (std::size_t i = 0; i < o.size(); ++i) {
      const double sw = std::sqrt(w[i]) / o[i]->y;
      double target = o[i]->y;
      for (int j = 0; j < kCols; ++j)
        if (std::find(free_vars.begin(), free_vars.end(), j) == free_vars.end())
          target -= fixed[j] * feat(j, *o[i], c);
      for (std::size_t q = 0; q < free_vars.size(); ++q)
        A(Eigen::Index(i), Eigen::Index(q)) = feat(free_vars[q], *o[i], c) * sw;
      b(Eigen::Index(i)) = target * sw;
    }
    double x[kCols] = {fixed[0], fixed[1], fixed[2], fixed[3]};
    double se[kCols] = {NAN, NAN, NAN, NAN};
    if (!free_vars.empty()) {
      // Columns differ by orders of magnitude (1 vs S*f): scale them for the QR.
      Eigen::VectorXd scale(A.cols());
      for (Eigen::Index q = 0; q < A.cols(); ++q) {
        scale(q) = A.col(q).norm();
        if (scale(q) <= 0) scale(q) = 1;
        A.col(q) /= scale(q);
      }
      const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(A);
      Eigen::VectorXd sol = qr.solve(b);
      for (std::size_t q = 0; q < free_vars.size(); ++q)
        x[free_vars[q]] = sol(Eigen::Index(q)) / scale(Eigen::Index(q));
      // Standard errors of the free coefficients: the weighted least-squares covariance
      // Cov = s^2 (A^T W A)^-1, s^2 = sum w_i r_i^2 / (N - p) (Seber & Lee, "Linear Regression
      // Analysis", 2nd ed., Wiley 2003, sections 3.3 and 3.10). A's rows already carry the
      // weights sqrt(w_i)/y_i (relative residuals times the Huber weights of this IRLS step), so
      // b - A sol are the weighted residuals. With A P = Q R, (A^T A)^-1 = P R^-1 R^-T P^T; the
      // column scaling is undone by dividing by scale. Coefficients pinned at a bound are not
      // estimated: they get no SE. Huber IRLS: the covariance of the final iteration, the usual
      // approximation (Holland & Welsch 1977).
      const Eigen::Index N = A.rows(), P = A.cols();
      if (N > P && qr.rank() == P) {
        const double s2 = (b - A * sol).squaredNorm() / double(N - P);
        const Eigen::MatrixXd r_inv =
            qr.matrixR().topLeftCorner(P, P).triangularView<Eigen::Upper>().solve(
                Eigen::MatrixXd::Identity(P, P));
        const Eigen::MatrixXd cov =
            qr.colsPermutation() * (r_inv * r_inv.transpose()) * qr.colsPermutation().transpose();
        for (Eigen::Index q = 0; q < P; ++q)
          se[free_vars[std::size_t(q)]] = std::sqrt(s2 * cov(q, q)) / scale(q);
      }
    }
    int worst = -1;
    double worst_v = 0;
    for (int j : free_vars) {
      const double lim = j == 2 ? kInvFloor : 0.0;
      const double v = (x[j] - lim) / (j == 2 ? kInvFloor : 1.0);
      if (x[j] < lim && (worst < 0 || v < worst_v)) {
        worst = j;
        worst_v = v;
      }
    }
    out = Coef{x[0], x[1], x[2], x[3], se[0], se[2], se[3]};
    if (worst < 0) break;
    free_vars.erase(std::find(free_vars.begin(), free_vars.end(), worst));  // pinned at its bound
  }
  out.a0 = std::max(out.a0, 0.0);
  out.as = std::max(out.as, 0.0);
  out.inv = std::max(out.inv, kInvFloor);
  out.kap = std::max(out.kap, 0.0);
  return out;
}

// Huber M-estimate by iteratively reweighted least squares (Huber 1964; Holland & Welsch 1977),
// scale from the median absolute relative residual.
// contention: fit the contention column where the data hold >= 2 concurrencies.
Coef irls(const std::vector<const Obs*>& o, Collective c, double k, bool contention) {
  std::set<int> ns, cs;
  for (const Obs* p : o) ns.insert(p->n), cs.insert(p->c);
  const bool joint = ns.size() >= 2;
  contention = contention && cs.size() >= 2;
  std::vector<double> w(o.size(), 1.0);
  Coef coef;
  for (int it = 0; it < 40; ++it) {
    coef = wls(o, w, joint, contention, c);
    std::vector<double> r(o.size());
    for (std::size_t i = 0; i < o.size(); ++i)
      r[i] = (o[i]->y - eval_obs(coef, *o[i], c)) / o[i]->y;
    std::vector<double> ar(r.size());
    for (std::size_t i = 0; i < r.size(); ++i) ar[i] = std::abs(r[i]);
    const double scale = std::max(formats::median_or_zero(ar) / 0.6745, 1e-3);
    double change = 0;
    for (std::size_t i = 0; i < r.size(); ++i) {
      const double u = std::abs(r[i]) / scale;
      const double nw = u <= k ? 1.0 : k / u;
      change = std::max(change, std::abs(nw - w[i]));
      w[i] = nw;
    }
    if (change < 1e-6) break;
  }
  return coef;
}

double huber(double r, double d) {
  const double a = std::abs(r);
  return a <= d ? 0.5 * r * r : d * (a - 0.5 * d);
}

std::vector<double> distinct_sizes(const std::vector<Obs>& obs) {
  std::set<double> s;
  for (const Obs& o : obs) s.insert(o.s);
  return {s.begin(), s.end()};
}

std::vector<int> distinct_ns(const std::vector<Obs>& obs) {
  std::set<int> s;
  for (const Obs& o : obs) s.insert(o.n);
  return {s.begin(), s.end()};
}

std::vector<int> distinct_cs(const std::vector<Obs>& obs) {
  std::set<int> s;
  for (const Obs& o : obs) s.insert(o.c);
  return {s.begin(), s.end()};
}

struct Piecewise {
  std::vector<double> lo;  // segment starts (lo[0] = 0)
  std::vector<Coef> coef;
};

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
// group size >= n_min, measured or not, is priced to fall across the gap by more than the largest drop
// the data show (a bound at the mildest would raise the measured series that fell further).
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
        deficit = std::max(deficit, r * eval_coef(prev, sa, n, c, conc) - eval_coef(cur, sb, n, c, conc));
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
    const Coef k = irls(sub, c, opt.huber_k, contention);
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
    // "Segments": why, and what it costs where a library's threshold is not one), else the
    // geometric middle of the gap.
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
    s.alpha_us = p.coef[k].a0;
    s.alpha_step_us = p.coef[k].as;
    s.bandwidth_GBps = 1.0 / (p.coef[k].inv * 1e3);
    // Relative SEs; B = 1/(inv 1e3), so SE(B)/B = SE(inv)/inv to first order (delta method).
    const Coef& fit = p.coef[k];
    if (std::isfinite(fit.se_a0) && fit.a0 > 0) s.alpha_rel_se = fit.se_a0 / fit.a0;
    if (std::isfinite(fit.se_inv)) s.bandwidth_rel_se = fit.se_inv / fit.inv;
    if (fit.kap > 0) s.contention = fit.kap / fit.inv;
    out.push_back(s);
  }
  return out;
}

double pw_eval(const Piecewise& p, const Obs& o, Collective c) {
  return eval_obs(p.coef[std::size_t(seg_of(p, o.s))], o, c);
}

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

struct FamilyKey {
  Collective op;
  int hosts, conc;
  auto operator<=>(const FamilyKey&) const = default;
};

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

struct FamilyFit {
  Piecewise p;
  int K = 1;
  std::optional<double> holdout;
};

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
    UnfittedModel um{key.op, key.hosts, key.conc, dt, ns, int(u.size()),
                     std::to_string(u.size()) + " distinct size(s), need >= " +
                         std::to_string(opt.min_sizes)};
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
  return m;
}

// Whether the classes (group size, concurrency) of one collective and hosts pattern can share
// one model (docs/CALIBRATION.md "Pooling link classes"). *contention says whether the pooled
// model carries the contention term.
ClassPoolingDecision decide_pooling(const std::vector<Obs>& obs, Collective op, int hosts,
                                    const FitOptions& opt, bool* contention) {
  ClassPoolingDecision d;
  d.collective = op;
  d.hosts = hosts;
  std::set<std::pair<int, int>> classes;
  for (const Obs& o : obs) classes.insert({o.n, o.c});
  d.classes.assign(classes.begin(), classes.end());
  *contention = false;
  if (int(distinct_sizes(obs).size()) < opt.min_sizes) {
    d.detail = "too few sizes to test; pooled";
    return d;
  }
  const std::vector<int> cs = distinct_cs(obs);
  auto with = fit_best(obs, op, opt, true);
  if (!with) {
    d.detail = "fit failed; pooled";
    return d;
  }
  // Contention: kept when, in one and the same segment, the term is > 3 standard errors from 0
  // and slows the bandwidth term by more than the minimum effect at the largest measured
  // concurrency (the z and effect printed are that segment's, else the largest of each).
  for (const Coef& k : with->p.coef) {
    const double z = std::isfinite(k.se_kap) && k.se_kap > 0 ? k.kap / k.se_kap : 0.0;
    const double effect = k.kap / k.inv * double(cs.back() - 1);
    const bool sig = z > 3 && effect > opt.class_bias_min;
    if (sig && !*contention) d.contention_z = z, d.contention_effect = effect;
    else if (!*contention) {
      d.contention_z = std::max(d.contention_z, z);
      d.contention_effect = std::max(d.contention_effect, effect);
    }
    *contention = *contention || sig;
  }
  d.contention = *contention;
  std::optional<FamilyFit> fit = *contention ? with : fit_best(obs, op, opt, false);
  if (!fit) fit = with;
  d.holdout_pooled = fit->holdout;
  // Per class: the median relative residual under the pooled fit and its standard error against
  // the pooled robust scale (SE of a median = 1.2533 sigma / sqrt(m)). The median needs no
  // clipping to resist a few 2-3x outliers, so a class 2-3x off shows its full offset; a class
  // with fewer than kMinClassPoints points is not tested.
  std::vector<double> r(obs.size()), ar(obs.size());
  for (std::size_t i = 0; i < obs.size(); ++i) {
    r[i] = (obs[i].y - pw_eval(fit->p, obs[i], op)) / obs[i].y;
    ar[i] = std::abs(r[i]);
  }
  const double sigma = std::max(formats::median_or_zero(ar) / 0.6745, 1e-3);
  for (const auto& [n, c] : classes) {
    std::vector<double> v;
    for (std::size_t i = 0; i < obs.size(); ++i)
      if (obs[i].n == n && obs[i].c == c) v.push_back(r[i]);
    const double mid = formats::median_or_zero(v);
    const bool tested = int(v.size()) >= kMinClassPoints;
    const double se = tested ? 1.2533 * sigma / std::sqrt(double(v.size())) : INFINITY;
    const bool differs = tested && std::abs(mid) > opt.class_bias_min && std::abs(mid) > 3 * se;
    d.pooled = d.pooled && !differs;
    d.class_residuals.push_back({n, c, mid, se, differs});
  }
  return d;
}

// A pooled model must also predict held-out sizes as well as the classes' own models (one per
// concurrency, as a split family gets): where the pooled form cannot follow each class's shape
// (e.g. groups sharing a link overlap less at small sizes than one group alone), the residual
// test passes on the medians while the segments are a compromise that misses held-out sizes of
// both. The pooled model (its holdout from decide_pooling) is kept unless the separate models'
// k-fold holdout MAPE, over the same points, is lower by the segment-count gain margin; then
// d.pooled is cleared.
void compare_pooled_holdout(const std::vector<Obs>& all, Collective op, const FitOptions& opt,
                            ClassPoolingDecision& d) {
  if (!d.holdout_pooled) return;
  double sum = 0;
  std::size_t points = 0;
  for (int c : distinct_cs(all)) {
    std::vector<Obs> part;
    for (const Obs& o : all)
      if (o.c == c) part.push_back(o);
    if (int(distinct_sizes(part).size()) < opt.min_sizes) return;
    const auto own = fit_best(part, op, opt, false);
    if (!own || !own->holdout) return;
    sum += *own->holdout * double(part.size());
    points += part.size();
  }
  d.holdout_separate = sum / double(points);
  if (*d.holdout_separate < *d.holdout_pooled * (1.0 - opt.more_segments_gain)) d.pooled = false;
}

// The class most at odds with the others under a pooling decision's fit: the largest
// |median relative residual| (a class far off shows its full offset; see decide_pooling).
std::pair<int, int> worst_class(const ClassPoolingDecision& d) {
  const ClassResidual* w = &d.class_residuals.front();
  for (const ClassResidual& r : d.class_residuals)
    if (std::abs(r.median) > std::abs(w->median)) w = &r;
  return {w->group_size, w->concurrent_groups};
}

const Model* find_model(const std::vector<Model>& models, Collective op, int hosts, int conc,
                        DType dt, bool* exact) {
  const Model* best = nullptr;
  double best_d = INFINITY;
  for (const Model& m : models) {
    if (m.collective != op) continue;
    if (m.dtype && *m.dtype != dt) continue;
    // A model pooled over concurrencies covers its measured range.
    const Range cr = effective_domain(m).concurrent_groups;
    const double cd = cr.contains(conc) ? 0.0
                      : conc < cr.lo   ? std::log2(cr.lo / conc)
                                       : std::log2(conc / cr.hi.value_or(conc));
    const double d = 10.0 * std::abs(std::log2(double(m.hosts) / hosts)) + cd;
    if (d < best_d) {
      best_d = d;
      best = &m;
    }
  }
  if (exact) *exact = best && best_d == 0;
  return best;
}

}  // namespace

double model_time_us(const Model& m, double s_eff, int n, int* segment, int concurrent_groups) {
  if (m.segments.empty()) throw Error("model has no segments");
  std::size_t k = 0;
  for (std::size_t i = 1; i < m.segments.size(); ++i)
    if (s_eff >= m.segments[i].s_lo) k = i;
  if (segment) *segment = int(k);
  return segment_time_us(m, k, n, s_eff, concurrent_groups);
}

namespace {

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
    if (!cal.transitions.empty()) cal.composition_mape = transitions_mape(cal.transitions, default_us);
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
  // A clamped fit (negative slope, or slower than Profile::kMaxCopyNsPerByte) or one whose SE exceeds half
  // its value (absolute floor kCopyNsPerByteResolution, so that an exact 0 counts as determined)
  // carries no information to adopt; an informative one must also predict better.
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
  cal.composition_mape = transitions_mape(cal.transitions, f.used ? f.ns_per_byte * 1e-3 : default_us);
}

}  // namespace

Calibration calibrate(const ResultSet& rs, const FitOptions& opt) {
  Calibration cal;
  cal.options = opt;
  // Even points -> fit observations per family; uneven points kept for the S_eff comparison.
  std::map<std::pair<Collective, int>, std::vector<Obs>> by_hosts;  // (collective, hosts)
  std::vector<const CollectivePoint*> uneven;
  for (const CollectivePoint& p : rs.collectives) {
    if (p.mode != opt.mode) {
      ++cal.points_other_mode;
      continue;
    }
    ++cal.points_used;
    if (p.uneven) {
      uneven.push_back(&p);
      continue;
    }
    by_hosts[{p.op, p.hosts_spanned}].push_back(
        Obs{p.bytes, p.group_size, p.median_s * 1e6, p.dtype, p.concurrent_groups, p.mesh});
  }
  for (const TransitionPoint& t : rs.transitions)
    if (t.mode == opt.mode) ++cal.points_used;
    else ++cal.points_other_mode;
  if (cal.points_used == 0)
    throw Error("no usable point: " + std::to_string(rs.point_records) + " point record(s), " +
                std::to_string(rs.skipped_wrong) + " with wrong > 0, " +
                std::to_string(rs.skipped_failed) + " failed, " +
                std::to_string(cal.points_other_mode) + " in a timing mode other than " +
                opt.mode + "; rerun the sweep (with check on, every point correct)");

  // Families: one per (collective, hosts) where its classes pool (with the contention term where
  // the data show one), else one per concurrency as well.
  struct Family {
    FamilyKey key;
    std::vector<Obs> obs;
    bool contention = false;
  };
  std::vector<Family> fams;
  // Classes not pooled: one family per concurrency (the model key) of obs.
  const auto per_concurrency = [&fams](Collective op, int hosts, const std::vector<Obs>& obs) {
    for (int c : distinct_cs(obs)) {
      Family f{{op, hosts, c}, {}, false};
      for (const Obs& o : obs)
        if (o.c == c) f.obs.push_back(o);
      fams.push_back(std::move(f));
    }
  };
  for (auto& [hk, all] : by_hosts) {
    const std::vector<int> cs = distinct_cs(all);
    bool contention = false;
    if (cs.size() >= 2) {
      ClassPoolingDecision d = decide_pooling(all, hk.first, hk.second, opt, &contention);
      if (d.pooled) compare_pooled_holdout(all, hk.first, opt, d);
      if (d.pooled) {
        cal.class_pooling.push_back(d);
        fams.push_back({{hk.first, hk.second, cs.front()}, all, contention});
        continue;
      }
      if (d.holdout_separate) {  // pooled residuals pass, held-out sizes do not: one per concurrency
        d.contention = false;
        cal.class_pooling.push_back(d);
        per_concurrency(hk.first, hk.second, all);
        continue;
      }
      // Split off the worst class, one at a time, until the rest pools (or holds one
      // concurrency); the split classes get one model per concurrency.
      std::vector<Obs> rest = all, split;
      bool rest_pooled = false, rest_contention = false;
      ClassPoolingDecision cur = d;
      while (distinct_cs(rest).size() >= 2) {
        bool ct = false;
        if (rest.size() < all.size()) {
          cur = decide_pooling(rest, hk.first, hk.second, opt, &ct);
          if (cur.pooled) {
            rest_pooled = true;
            rest_contention = ct;
            break;
          }
        }
        if (cur.class_residuals.empty()) break;
        const auto k = worst_class(cur);
        d.split_off.push_back(k);
        std::vector<Obs> keep;
        for (const Obs& o : rest) (std::pair{o.n, o.c} == k ? split : keep).push_back(o);
        rest = std::move(keep);
      }
      const std::vector<int> rcs = distinct_cs(rest);
      const std::vector<int> scs = distinct_cs(split);
      const bool clash = !rcs.empty() && std::find(scs.begin(), scs.end(), rcs.front()) != scs.end();
      for (ClassResidual& r : d.class_residuals)
        r.differs = std::find(d.split_off.begin(), d.split_off.end(),
                              std::pair{r.group_size, r.concurrent_groups}) != d.split_off.end();
      if (!clash && !rest.empty()) {
        d.contention = rest_pooled && rest_contention;
        cal.class_pooling.push_back(d);
        fams.push_back({{hk.first, hk.second, rcs.front()}, rest, d.contention});
        per_concurrency(hk.first, hk.second, split);
        continue;
      }
      // A split class shares the rest's concurrency (the model key): one model per concurrency.
      d.split_off.clear();
      d.contention = false;
      cal.class_pooling.push_back(d);
    }
    per_concurrency(hk.first, hk.second, all);
  }
  for (const auto& [key, obs, contention] : fams) {
    std::set<DType> dts;
    for (const Obs& o : obs) dts.insert(o.dtype);
    DtypeDecision dd{key.op, key.hosts, key.conc, {dts.begin(), dts.end()}, true, ""};
    auto pooled = fit_family(obs, key, std::nullopt, opt, contention);
    if (dts.size() >= 2 && std::holds_alternative<Model>(pooled)) {
      const Model& pm = std::get<Model>(pooled);
      bool split = false;
      for (DType d : dts) {
        std::vector<double> r;
        for (const Obs& o : obs)
          if (o.dtype == d) r.push_back((o.y - model_time_us(pm, o.s, o.n, nullptr, o.c)) / o.y);
        const double mean = std::accumulate(r.begin(), r.end(), 0.0) / double(r.size());
        double var = 0;
        for (double x : r) var += (x - mean) * (x - mean);
        const double se = r.size() > 1 ? std::sqrt(var / double(r.size() - 1) / double(r.size())) : INFINITY;
        const bool differs = std::abs(mean) > opt.dtype_bias_min && std::abs(mean) > 3 * se;
        split = split || differs;
        dd.detail += std::string(dd.detail.empty() ? "" : ", ") + std::string(dtype_name(d)) +
                     " mean residual " + fmt("%+.1f%%", mean * 100) + " (se " +
                     fmt("%.1f%%", se * 100) + ")" + (differs ? " differs" : "");
      }
      if (split) {
        dd.pooled = false;
        for (DType d : dts) {
          std::vector<Obs> sub;
          for (const Obs& o : obs)
            if (o.dtype == d) sub.push_back(o);
          auto r = fit_family(sub, key, d, opt, contention);
          if (auto* m = std::get_if<Model>(&r)) cal.models.push_back(*m);
          else cal.unfitted.push_back(std::get<UnfittedModel>(r));
        }
      }
    } else if (dts.size() == 1) {
      dd.detail = "only " + std::string(dtype_name(*dts.begin())) + " measured";
    }
    if (dd.pooled) {
      if (auto* m = std::get_if<Model>(&pooled)) cal.models.push_back(*m);
      else cal.unfitted.push_back(std::get<UnfittedModel>(pooled));
    }
    cal.dtypes.push_back(dd);
  }
  if (cal.models.empty()) {
    std::string why;
    for (const auto& u : cal.unfitted)
      why += (why.empty() ? "" : "; ") + key_name(u.collective, u.hosts, u.concurrent_groups, u.dtype) +
             ": " + u.reason;
    throw Error("no model could be fitted (" + (why.empty() ? std::string("no even-shard collective point") : why) +
                "); sweep >= " + std::to_string(opt.min_sizes) + " sizes per collective");
  }

  // Uneven shards: which effective size predicts the v-form times best, per collective.
  for (const auto& info : kCollectives) {
    if (!info.has_v_form) continue;
    EffectiveSizeComparison e;
    e.collective = info.op;
    double st = 0, sn = 0;
    for (const CollectivePoint* p : uneven) {
      if (p->op != info.op) continue;
      bool exact = false;
      const Model* m = find_model(cal.models, p->op, p->hosts_spanned, p->concurrent_groups, p->dtype, &exact);
      if (!m || !exact) continue;
      const double y = p->median_s * 1e6;
      const int conc = p->concurrent_groups;
      st += std::abs(model_time_us(*m, p->bytes_total, p->group_size, nullptr, conc) - y) / y;
      sn += std::abs(model_time_us(*m, p->bytes_eff, p->group_size, nullptr, conc) - y) / y;
      ++e.points;
    }
    if (e.points > 0) {
      e.measured = true;
      e.mape_total = st / e.points;
      e.mape_n_max = sn / e.points;
      e.chosen = e.mape_total < e.mape_n_max ? EffectiveSize::Total : EffectiveSize::NTimesMax;
    }
    for (Model& m : cal.models)
      if (m.collective == info.op) m.effective_size = e.chosen;
    bool any_model = std::any_of(cal.models.begin(), cal.models.end(),
                                 [&](const Model& m) { return m.collective == info.op; });
    if (any_model) cal.effective_size.push_back(e);
  }

  // Transitions: predicted from their plan steps with the fitted models, through predict() (the
  // planner's path, including its nearest-measured-class rule), plus the copies their steps pack
  // and unpack at the copy cost fitted below.
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
  return cal;
}

}  // namespace shardcal::calib

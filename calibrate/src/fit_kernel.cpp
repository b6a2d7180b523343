// The fitter's kernel: robust weighted least squares of one segment over the cost model's term
// columns (relative residuals, active-set bounds, Huber IRLS) and its standard errors.
// Method and citations: docs/CALIBRATION.md.
#include "fit_kernel.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <set>

#include "shardcal/formats/median.hpp"

namespace shardcal::calib::fitter {
namespace {

// Columns of the linear model: the cost model's terms (cost_model.hpp).
constexpr int kCols = kTerms;

// The design columns of an observation: the cost model's terms (cost_model.hpp), in Term order.
std::array<double, kCols> feats(const Obs& o, Collective c) {
  return term_features(collective_info(c), o.n, o.s, o.c);
}

// Weighted least squares of relative residuals, with an active set keeping each coefficient at
// or above its term's fit_floor (non-negative latencies, positive finite bandwidth; a
// non-negative slope also makes each segment non-decreasing in S). free: the fitted columns.
Coef wls(const std::vector<const Obs*>& o, const std::vector<double>& w,
         const std::array<bool, kCols>& free, Collective c) {
  std::vector<int> free_vars;
  double fixed[kCols];
  for (int j = 0; j < kCols; ++j) {
    if (free[std::size_t(j)]) free_vars.push_back(j);
    fixed[j] = kTermInfo[std::size_t(j)].fit_floor;
  }
  Coef out;
  // Each attempt pins one more coefficient at its bound, so kCols + 1 attempts cover all cases.
  for (int attempt = 0; attempt <= kCols; ++attempt) {
    Eigen::MatrixXd A(Eigen::Index(o.size()), Eigen::Index(free_vars.size()));
    Eigen::VectorXd b(Eigen::Index(o.size()));
    for (std::size_t i = 0; i < o.size(); ++i) {
      const double sw = std::sqrt(w[i]) / o[i]->y;
      double target = o[i]->y;
      const std::array<double, kCols> f = feats(*o[i], c);
      for (int j = 0; j < kCols; ++j)
        if (std::find(free_vars.begin(), free_vars.end(), j) == free_vars.end())
          target -= fixed[j] * f[std::size_t(j)];
      for (std::size_t q = 0; q < free_vars.size(); ++q)
        A(Eigen::Index(i), Eigen::Index(q)) = f[std::size_t(free_vars[q])] * sw;
      b(Eigen::Index(i)) = target * sw;
    }
    double x[kCols], se[kCols];
    for (int j = 0; j < kCols; ++j) x[j] = fixed[j], se[j] = NAN;
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
      const double lim = fixed[j];
      const double v = (x[j] - lim) / (lim > 0 ? lim : 1.0);  // in units of a nonzero floor
      if (x[j] < lim && (worst < 0 || v < worst_v)) {
        worst = j;
        worst_v = v;
      }
    }
    out = Coef{};
    for (std::size_t j = 0; j < kCoefOf.size(); ++j) out.*kCoefOf[j] = x[j], out.*kSeOf[j] = se[j];
    if (worst < 0) break;
    free_vars.erase(std::find(free_vars.begin(), free_vars.end(), worst));  // pinned at its bound
  }
  for (std::size_t j = 0; j < kCoefOf.size(); ++j)
    out.*kCoefOf[j] = std::max(out.*kCoefOf[j], fixed[j]);
  return out;
}

}  // namespace

double eval_coef(const Coef& k, double s, int n, Collective c, int conc) {
  const std::array<double, kTerms> f = term_features(collective_info(c), n, s, conc);
  double t = 0;
  for (std::size_t j = 0; j < kCoefOf.size(); ++j) t += k.*kCoefOf[j] * f[j];
  return t;
}

double eval_obs(const Coef& k, const Obs& o, Collective c) {
  return eval_coef(k, o.s, o.n, c, o.c);
}

namespace {

Coef irls_impl(const std::vector<const Obs*>& o, Collective c, double k, bool contention,
               bool slope) {
  std::set<int> ns, cs;
  for (const Obs* p : o) ns.insert(p->n), cs.insert(p->c);
  std::array<bool, kCols> free{};
  for (const TermInfo& t : kTermInfo) {
    bool& f = free[std::size_t(t.term)];
    switch (t.fit_when) {
      case FitWhen::Always: f = true; break;
      case FitWhen::SeveralGroupSizes: f = ns.size() >= 2; break;
      case FitWhen::SizeTerm: f = slope; break;
      case FitWhen::SeveralConcurrencies: f = contention && slope && cs.size() >= 2; break;
    }
  }
  std::vector<double> w(o.size(), 1.0);
  Coef coef;
  for (int it = 0; it < 40; ++it) {
    coef = wls(o, w, free, c);
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

}  // namespace

Coef irls(const std::vector<const Obs*>& o, Collective c, double k, bool contention) {
  return irls_impl(o, c, k, contention, true);
}

Coef fit_segment(const std::vector<const Obs*>& o, Collective c, double k, bool contention) {
  int c_max = 1;
  for (const Obs* p : o) c_max = std::max(c_max, p->c);
  Coef fit = irls_impl(o, c, k, contention, true);
  if (fit.kap > 0) {
    const double B = coef_bandwidth_GBps(fit), gamma = coef_gamma(fit);
    const double slowdown = 1 + gamma * double(c_max - 1);
    if (!(B <= kMaxPlausibleBandwidthGBps) || !(slowdown <= double(c_max) * double(c_max))) {
      Coef simpler = irls_impl(o, c, k, false, true);
      simpler.contention_dropped = true;
      simpler.dropped_B_GBps = B;
      simpler.dropped_gamma = gamma;
      fit = simpler;
    }
  }
  // Latency only where the slope is beyond any link but above the floor (at the floor the fit is
  // latency only already: the active set pinned it).
  if (fit.inv > kInvFloor && fit.inv < kMaxPlausibleInvBandwidth) {
    Coef flat = irls_impl(o, c, k, false, false);
    flat.contention_dropped = fit.contention_dropped;
    flat.dropped_B_GBps = fit.dropped_B_GBps;
    flat.dropped_gamma = fit.dropped_gamma;
    flat.size_term_dropped = true;
    flat.flat_B_GBps = coef_bandwidth_GBps(fit);
    fit = flat;
  }
  fit.c_max = c_max;
  return fit;
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

}  // namespace shardcal::calib::fitter

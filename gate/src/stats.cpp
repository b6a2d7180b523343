// Statistics of the regression gate (docs/GATE.md). Formulas are cited in stats.hpp.
#include "shardcal/gate/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "shardcal/error.hpp"

namespace shardcal::gate {

MannWhitney mann_whitney_u(std::span<const double> x, std::span<const double> y) {
  if (x.empty() || y.empty()) throw Error("Mann-Whitney U needs at least one sample on each side");
  const std::size_t n1 = x.size(), n2 = y.size(), n = n1 + n2;
  // Pooled values tagged with their side; mid-ranks for ties.
  std::vector<std::pair<double, bool>> all;
  all.reserve(n);
  for (double v : x) all.emplace_back(v, true);
  for (double v : y) all.emplace_back(v, false);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double r1 = 0, tie_sum = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && all[j].first == all[i].first) ++j;
    const double t = double(j - i);
    const double mid_rank = (double(i + 1) + double(j)) / 2.0;  // ranks i+1 .. j
    for (std::size_t k = i; k < j; ++k)
      if (all[k].second) r1 += mid_rank;
    tie_sum += t * t * t - t;
    i = j;
  }
  const double a = double(n1), b = double(n2), N = double(n);
  MannWhitney r;
  r.u = r1 - a * (a + 1) / 2.0;
  const double mu = a * b / 2.0;
  const double var = a * b / 12.0 * ((N + 1) - (n > 1 ? tie_sum / (N * (N - 1)) : 0.0));
  if (!(var > 0)) {
    r.z = 0;
    r.p = 1;
    return r;
  }
  const double u = std::max(r.u, a * b - r.u);
  r.z = (u - mu - 0.5) / std::sqrt(var);
  r.p = std::min(1.0, std::erfc(r.z / std::sqrt(2.0)));  // 2 (1 - Phi(z))
  return r;
}

std::optional<MannWhitney> mann_whitney_u_exact(std::span<const double> x,
                                                std::span<const double> y) {
  const std::size_t n1 = x.size(), n2 = y.size();
  if (n1 == 0 || n2 == 0 || n1 > kExactMaxN || n2 > kExactMaxN) return std::nullopt;
  std::vector<double> all(x.begin(), x.end());
  all.insert(all.end(), y.begin(), y.end());
  std::sort(all.begin(), all.end());
  if (std::adjacent_find(all.begin(), all.end()) != all.end()) return std::nullopt;  // ties
  // U1 = #pairs (x_i, y_j) with x_i > y_j (no ties): the same value as R1 - n1(n1+1)/2.
  std::int64_t u1 = 0;
  for (double a : x)
    for (double b : y) u1 += a > b;
  // Counts c[k] of arrangements with U = k: prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i).
  const std::size_t umax = n1 * n2;
  std::vector<std::int64_t> c(umax + 1, 0);
  c[0] = 1;
  for (std::size_t i = 1; i <= n1; ++i) {
    const std::size_t a = n2 + i;
    for (std::size_t k = umax; k >= a; --k) c[k] -= c[k - a];  // times (1 - q^a)
    for (std::size_t k = i; k <= umax; ++k) c[k] += c[k - i];  // divided by (1 - q^i)
  }
  double total = 0, tail = 0;
  const std::int64_t u = std::max<std::int64_t>(u1, std::int64_t(umax) - u1);
  for (std::size_t k = 0; k <= umax; ++k) {
    total += double(c[k]);
    if (std::int64_t(k) >= u) tail += double(c[k]);
  }
  MannWhitney r;
  r.u = double(u1);
  r.z = 0;
  r.p = std::min(1.0, 2.0 * tail / total);
  return r;
}

namespace {
std::vector<std::size_t> order_by_p(std::span<const double> p) {
  for (double v : p)
    if (!(v >= 0 && v <= 1)) throw Error("p-values must lie in [0, 1]");
  std::vector<std::size_t> idx(p.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::stable_sort(idx.begin(), idx.end(),
                   [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
  return idx;
}
}  // namespace

std::vector<double> benjamini_hochberg(std::span<const double> p) {
  const auto idx = order_by_p(p);
  const std::size_t m = p.size();
  std::vector<double> q(m);
  double run = 1.0;
  for (std::size_t r = m; r-- > 0;) {  // from the largest p down: running minimum
    run = std::min(run, double(m) * p[idx[r]] / double(r + 1));
    q[idx[r]] = run;
  }
  return q;
}

std::vector<double> holm(std::span<const double> p) {
  const auto idx = order_by_p(p);
  const std::size_t m = p.size();
  std::vector<double> q(m);
  double run = 0.0;
  for (std::size_t r = 0; r < m; ++r) {  // from the smallest p up: running maximum
    run = std::max(run, std::min(1.0, double(m - r) * p[idx[r]]));
    q[idx[r]] = run;
  }
  return q;
}

namespace {
double quantile_sorted(const std::vector<double>& s, double q) {
  const double pos = q * double(s.size() - 1);
  const auto i = std::size_t(std::floor(pos));
  const double f = pos - double(i);
  return i + 1 < s.size() ? s[i] + f * (s[i + 1] - s[i]) : s[i];
}

double resampled_median(std::span<const double> v, std::mt19937_64& rng, std::vector<double>& buf) {
  // rng() % n rather than std::uniform_int_distribution (whose algorithm is up to the standard
  // library): the same indices with every compiler; the modulo bias is < n / 2^64.
  const std::uint64_t n = v.size();
  buf.resize(v.size());
  for (double& x : buf) x = v[std::size_t(rng() % n)];
  return median(buf);
}

// Two-stage resample over runs (offsets[r] .. offsets[r+1] in v), or the plain one for < 2 runs.
double resampled_median_runs(std::span<const double> v, const std::vector<std::size_t>& offsets,
                             std::mt19937_64& rng, std::vector<double>& buf) {
  const std::size_t runs = offsets.size() - 1;
  if (runs < 2) return resampled_median(v, rng, buf);
  buf.clear();
  for (std::size_t k = 0; k < runs; ++k) {
    const std::size_t r = std::size_t(rng() % runs);
    const std::size_t lo = offsets[r], n = offsets[r + 1] - lo;
    for (std::size_t i = 0; i < n; ++i) buf.push_back(v[lo + std::size_t(rng() % n)]);
  }
  return median(buf);
}

std::vector<std::size_t> run_offsets(std::span<const double> v, std::span<const std::size_t> runs,
                                     const char* side) {
  std::vector<std::size_t> off{0};
  for (std::size_t n : runs) {
    if (n == 0) continue;  // a run without samples of this point draws nothing
    off.push_back(off.back() + n);
  }
  if (off.size() == 1) off.push_back(v.size());
  if (off.back() != v.size())
    throw Error(std::string("bootstrap: the ") + side + " run sizes sum to " +
                std::to_string(off.back()) + ", not to its " + std::to_string(v.size()) +
                " samples");
  return off;
}
}  // namespace

RatioCI bootstrap_median_ratio(std::span<const double> baseline, std::span<const double> candidate,
                               double level, int resamples, std::uint64_t seed,
                               std::span<const std::size_t> baseline_runs,
                               std::span<const std::size_t> candidate_runs) {
  if (baseline.empty() || candidate.empty())
    throw Error("bootstrap of a median ratio needs samples on both sides");
  if (!(level > 0 && level < 1)) throw Error("bootstrap CI level must lie in (0, 1)");
  if (resamples < 100) throw Error("bootstrap needs at least 100 resamples");
  RatioCI r;
  const double mb = median(baseline);
  if (!(mb > 0)) throw Error("the baseline median is not positive; times must be > 0");
  r.ratio = median(candidate) / mb;
  const std::vector<std::size_t> bo = run_offsets(baseline, baseline_runs, "baseline"),
                                 co = run_offsets(candidate, candidate_runs, "candidate");
  std::mt19937_64 rng(seed);
  std::vector<double> ratios, buf;
  ratios.reserve(std::size_t(resamples));
  for (int i = 0; i < resamples; ++i) {
    const double b = resampled_median_runs(baseline, bo, rng, buf);
    const double c = resampled_median_runs(candidate, co, rng, buf);
    ratios.push_back(c / b);
  }
  std::sort(ratios.begin(), ratios.end());
  r.lo = quantile_sorted(ratios, (1 - level) / 2);
  r.hi = quantile_sorted(ratios, (1 + level) / 2);
  return r;
}

namespace {
// Scaled median absolute deviation (1.4826 MAD, the sd of a normal sample) of sorted values.
double mad_sorted(std::span<const double> s) {
  const double m = median(s);
  std::vector<double> d;
  d.reserve(s.size());
  for (double x : s) d.push_back(std::abs(x - m));
  return 1.4826 * median(d);
}

std::string fmt_time(double s) {
  char b[64];
  if (s >= 1e-3)
    std::snprintf(b, sizeof b, "%.4g ms", s * 1e3);
  else
    std::snprintf(b, sizeof b, "%.4g us", s * 1e6);
  return b;
}
}  // namespace

double quantile(std::span<const double> v, double q) {
  if (v.empty()) throw Error("quantile of an empty sample");
  std::vector<double> s(v.begin(), v.end());
  std::sort(s.begin(), s.end());
  return quantile_sorted(s, std::clamp(q, 0.0, 1.0));
}

std::optional<std::string> sample_problem(std::span<const double> s, int min_samples) {
  const std::size_t n = s.size();
  if (n < std::size_t(std::max(1, min_samples)))
    return "too few samples (" + std::to_string(n) + ", need >= " + std::to_string(min_samples) +
           ")";
  std::vector<double> v;
  v.reserve(n);
  for (double x : s) {
    if (!(x > 0) || !std::isfinite(x)) return "a sample is not a positive finite time";
    v.push_back(std::log(x));
  }
  std::sort(v.begin(), v.end());
  const std::size_t m = std::max<std::size_t>(kBimodalMinCluster, (n + 9) / 10);
  if (n < 2 * m) return std::nullopt;
  // Candidate splits: a jump of >= 10% between neighbours with >= m values on each side. A
  // split counts when the jump is also >= kBimodalGapInMads times the larger of the two
  // clusters' scaled MADs (log space): the clusters are tight relative to the space between
  // them. Checking only jumps >= 10% keeps this cheap on long, dense samples.
  std::size_t best = 0;
  double best_gap = 0;
  for (std::size_t k = m; k + m <= n; ++k) {
    const double gap = v[k] - v[k - 1];
    if (gap < std::log(1.1) || gap <= best_gap) continue;
    const std::span<const double> lo(v.data(), k), hi(v.data() + k, n - k);
    if (gap < kBimodalGapInMads * std::max(mad_sorted(lo), mad_sorted(hi))) continue;
    best_gap = gap;
    best = k;
  }
  if (best == 0) return std::nullopt;
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.0f%%", 100.0 * double(n - best) / double(n));
  return "bimodal samples (a gap from " + fmt_time(std::exp(v[best - 1])) + " to " +
         fmt_time(std::exp(v[best])) + ", " + pct + " of the samples above it)";
}

}  // namespace shardcal::gate

#include "sweep/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace shardbench::sweep {

double percentile_sorted(const std::vector<double>& s, double q) {
  if (s.empty()) return 0.0;
  const double pos = q * double(s.size() - 1);
  const std::size_t i = std::size_t(std::floor(pos));
  if (i + 1 >= s.size()) return s.back();
  const double frac = pos - double(i);
  return s[i] + (s[i + 1] - s[i]) * frac;
}

MedianCi median_ci_ranks(std::size_t n, double level) {
  // Order-statistic CI of the median: with X ~ Binomial(n, 1/2) the number of samples below the
  // median, P(x_(j) <= median < x_(n+1-j)) = 1 - 2 P(X <= j-1) (1-based j). Pick the largest j
  // whose coverage still reaches `level`. Distribution-free; see J.-Y. Le Boudec, "Performance
  // Evaluation of Computer and Communication Systems", EPFL Press 2010, Thm 2.1, and Hoefler &
  // Belli, "Scientific Benchmarking of Parallel Computing Systems", SC'15 (rule 5).
  if (n == 0) return {0, 0, 0.0};
  const double alpha_half = (1.0 - level) / 2.0;
  // Binomial(n, 1/2) pmf in log space so large n does not underflow. log C(n,k) is built up by
  // the recurrence C(n,k+1) = C(n,k) (n-k)/(k+1) rather than with std::lgamma: glibc's lgamma
  // writes the global `signgam`, a data race when sim ranks (threads) compute statistics at once.
  const double log_half_n = double(n) * std::log(0.5);
  double cdf = 0.0;  // P(X <= k)
  std::size_t j = 0;  // 1-based order index of the lower bound; 0 = none reaches the level
  double log_choose = 0.0;  // log C(n, k), k = 0
  for (std::size_t k = 0; k < n / 2; ++k) {
    if (k > 0) log_choose += std::log(double(n - k + 1)) - std::log(double(k));
    const double log_pmf = log_choose + log_half_n;
    const double next = cdf + std::exp(log_pmf);  // P(X <= k)
    if (next > alpha_half) break;
    cdf = next;
    j = k + 1;  // x_(k+1) works: P(X <= k) <= alpha/2
  }
  if (j == 0) {
    // Too few samples: the widest interval [min, max] covers with 1 - 2 * 0.5^n.
    return {0, n - 1, std::max(0.0, 1.0 - 2.0 * std::exp(log_half_n))};
  }
  return {j - 1, n - j, 1.0 - 2.0 * cdf};
}

Stats compute_stats(const std::vector<double>& samples, double ci_level) {
  Stats st;
  st.n = samples.size();
  st.ci_level = ci_level;
  if (samples.empty()) return st;
  std::vector<double> s = samples;
  std::sort(s.begin(), s.end());
  st.min = s.front();
  st.max = s.back();
  st.p10 = percentile_sorted(s, 0.10);
  st.p50 = percentile_sorted(s, 0.50);
  st.p90 = percentile_sorted(s, 0.90);
  st.p99 = percentile_sorted(s, 0.99);
  st.mean = std::accumulate(s.begin(), s.end(), 0.0) / double(s.size());
  double ss = 0.0;
  for (double x : s) ss += (x - st.mean) * (x - st.mean);
  st.stddev = s.size() > 1 ? std::sqrt(ss / double(s.size() - 1)) : 0.0;  // sample stddev
  const MedianCi ci = median_ci_ranks(s.size(), ci_level);
  st.ci_lo = s[ci.lo];
  st.ci_hi = s[ci.hi];
  st.ci_coverage = ci.coverage;
  return st;
}

Bandwidth bandwidth(Collective op, int n, std::int64_t bytes, double seconds) {
  Bandwidth b;
  b.factor = collective_info(op).busbw_factor(n);
  if (seconds > 0) b.algbw_GBps = double(bytes) / seconds / 1e9;
  b.busbw_GBps = b.algbw_GBps * b.factor;
  return b;
}

void fill_collective_record(shardcal::formats::PointRecord& rec, Collective op,
                            const CollectiveShape& sh, const std::vector<double>& samples,
                            double ci_level) {
  const auto& info = collective_info(op);
  rec.stats = compute_stats(samples, ci_level);
  const Bandwidth bw = bandwidth(op, sh.n, sh.bytes, rec.stats.p50);
  rec.collective = std::string(info.name);
  rec.variant = std::string(info.name) + (info.has_v_form && !sh.uniform ? "v" : "");
  rec.group_size = sh.n;
  rec.elem_size = int(sh.elem);
  rec.counts = sh.counts;
  rec.bytes = sh.bytes;
  rec.bytes_convention = std::string(info.bytes_convention);
  rec.bytes_total = sh.bytes_total;
  rec.bytes_max_rank = sh.bytes_max_rank;
  rec.bytes_eff = sh.bytes_eff;
  rec.algbw_GBps = bw.algbw_GBps;
  rec.busbw_GBps = bw.busbw_GBps;
  rec.busbw_factor = bw.factor;
  rec.algbw_eff_GBps = rec.stats.p50 > 0 ? double(sh.bytes_eff) / rec.stats.p50 / 1e9 : 0.0;
}

}  // namespace shardbench::sweep

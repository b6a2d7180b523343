#pragma once
// Statistics of the regression gate (docs/GATE.md): pure functions over samples, no I/O.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "shardcal/formats/median.hpp"

namespace shardcal::gate {

// Mann-Whitney U test (Mann & Whitney 1947), two-sided, normal approximation with the tie
// correction of the variance and a continuity correction of 0.5 (as scipy.stats.mannwhitneyu
// with method="asymptotic", use_continuity=True):
//   U1 = R1 - n1(n1+1)/2          (R1: the sum of x's mid-ranks in the pooled sample)
//   mu = n1 n2 / 2,  sigma^2 = n1 n2 / 12 * ((n+1) - sum(t^3 - t) / (n(n-1)))
//   z = (max(U1, n1 n2 - U1) - mu - 0.5) / sigma,  p = min(1, 2 (1 - Phi(z)))
// sigma = 0 (every value tied) gives p = 1. Throws Error when a side is empty.
struct MannWhitney {
  double u = 0;  // U1, the statistic of x
  double z = 0;
  double p = 1;
};
MannWhitney mann_whitney_u(std::span<const double> x, std::span<const double> y);

// The exact two-sided p-value of U when there are no ties (as scipy's method="exact"):
// p = min(1, 2 P(U >= max(U1, n1 n2 - U1))) under the null distribution of U, whose counts are
// the coefficients of the Gaussian binomial coefficient [n1+n2 choose n1]_q (Mann & Whitney
// 1947), computed exactly in 64-bit integers. Only for n1, n2 <= kExactMaxN and untied samples;
// returns nothing otherwise. `u` and `p` are set, z = 0.
inline constexpr std::size_t kExactMaxN = 20;
std::optional<MannWhitney> mann_whitney_u_exact(std::span<const double> x,
                                                std::span<const double> y);

// Adjusted p-values ("q"), in the input order, each in [0, 1].
// Benjamini & Hochberg (1995): q_(i) = min_{j >= i} m p_(j) / j (step-up; controls the false
// discovery rate at alpha for independent or positively dependent tests; under the complete null
// that is P(any rejection) <= alpha). As scipy.stats.false_discovery_control(p, method="bh").
std::vector<double> benjamini_hochberg(std::span<const double> p);
// Holm (1979): q_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)) (step-down; controls the
// family-wise error rate under any dependence).
std::vector<double> holm(std::span<const double> p);

// numpy-style median (mean of the two middle values for even n). Throws Error on empty input.
using formats::median;

// Percentile bootstrap (Efron & Tibshirani 1993, ch. 13) of median(candidate) / median(baseline):
// `resamples` times, resample each side with replacement (independently, std::mt19937_64 seeded
// with `seed`; the engine is fixed by the C++ standard and indices are rng() % n, so the
// interval is the same with every compiler), take the ratio of the
// resampled medians; the interval is the (1-level)/2 and (1+level)/2 quantiles of those ratios
// (linear interpolation). ratio is the ratio of the sample medians.
struct RatioCI {
  double ratio = 1;
  double lo = 1;
  double hi = 1;
};
// Pooled runs (baseline_runs / candidate_runs: sample counts of consecutive runs, summing to the
// side's size; empty or one entry = one run): a side with >= 2 runs is resampled in two stages,
// runs with replacement and then samples within each drawn run (the hierarchical bootstrap;
// Davison & Hinkley, "Bootstrap Methods and their Application", 1997, sec. 3.8), so a shift
// between launches (this machine's oversubscribed ranks settle into a latency mode per launch)
// widens the CI instead of being taken for a difference. One run: the ordinary bootstrap.
RatioCI bootstrap_median_ratio(std::span<const double> baseline, std::span<const double> candidate,
                               double level, int resamples, std::uint64_t seed,
                               std::span<const std::size_t> baseline_runs = {},
                               std::span<const std::size_t> candidate_runs = {});

// Why a sample cannot support a verdict, or nothing. Rule (docs/GATE.md "Sample checks"):
//  - too few: fewer than min_samples values;
//  - bimodal: in log space, sorted, some split leaves at least max(kBimodalMinCluster,
//    ceil(n/10)) values on each side, the jump across it is >= 10% (s[k] >= 1.1 s[k-1]) and at
//    least kBimodalGapInMads times the larger of the two sides' scaled MADs (1.4826 MAD): two
//    tight, separated clusters, whose medians' ratio is then decided by which cluster a run
//    happened to land in. On unimodal lognormal noise (sigma 0.2) this fires in ~3% of samples
//    of n = 10 and ~0.1% of n = 20 (test GateStats.BimodalFalseAlarmRate).
inline constexpr std::size_t kBimodalMinCluster = 4;
inline constexpr double kBimodalGapInMads = 3.0;
std::optional<std::string> sample_problem(std::span<const double> s, int min_samples);

// The q-quantile of a sample (linear interpolation, as numpy's default). Throws Error on empty.
double quantile(std::span<const double> v, double q);

}  // namespace shardcal::gate

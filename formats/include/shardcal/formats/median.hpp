#pragma once
// The median every tool reports: numpy's (the mean of the two middle values of an even sample),
// so the C++ tools and the Python report agree to the last bit. Header-only (target
// shardcal_median) so that plain MPI micro-benchmarks report it without linking the formats
// library and its dependencies.
#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "shardcal/error.hpp"

namespace shardcal::formats {

// Throws shardcal::Error on an empty sample.
inline double median(std::span<const double> v) {
  if (v.empty()) throw Error("median of an empty sample");
  std::vector<double> s(v.begin(), v.end());
  const std::size_t n = s.size(), h = n / 2;
  std::nth_element(s.begin(), s.begin() + std::ptrdiff_t(h), s.end());
  const double hi = s[h];
  if (n % 2) return hi;
  const double lo = *std::max_element(s.begin(), s.begin() + std::ptrdiff_t(h));
  return 0.5 * (lo + hi);
}
// 0 for an empty sample (summaries of optional series).
inline double median_or_zero(std::span<const double> v) { return v.empty() ? 0.0 : median(v); }

}  // namespace shardcal::formats

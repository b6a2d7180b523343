#include "shardcal/formats/median.hpp"

#include <algorithm>

#include "shardcal/error.hpp"

namespace shardcal::formats {

double median(std::span<const double> v) {
  if (v.empty()) throw Error("median of an empty sample");
  std::vector<double> s(v.begin(), v.end());
  const std::size_t n = s.size(), h = n / 2;
  std::nth_element(s.begin(), s.begin() + std::ptrdiff_t(h), s.end());
  const double hi = s[h];
  if (n % 2) return hi;
  const double lo = *std::max_element(s.begin(), s.begin() + std::ptrdiff_t(h));
  return 0.5 * (lo + hi);
}

}  // namespace shardcal::formats

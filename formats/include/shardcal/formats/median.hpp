#pragma once
// The median every tool reports: numpy's (the mean of the two middle values of an even sample),
// so the C++ tools and the Python report agree to the last bit.
#include <span>
#include <vector>

namespace shardcal::formats {

// Throws shardcal::Error on an empty sample.
double median(std::span<const double> v);
// 0 for an empty sample (summaries of optional series).
inline double median_or_zero(std::span<const double> v) { return v.empty() ? 0.0 : median(v); }

}  // namespace shardcal::formats

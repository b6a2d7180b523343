#pragma once
// Statistics over per-iteration times (each already the slowest rank's time) and the
// bandwidth conventions of the collective table.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "shardcal/collectives.hpp"
#include "shardcal/formats/results_record.hpp"
#include "sweep/config.hpp"

namespace shardbench::sweep {
using shardcal::Collective;
using shardcal::collective_info;

// The statistics of a point are part of its results record (formats/results_record.hpp).
using Stats = shardcal::formats::SampleStats;

// Percentile by linear interpolation between closest ranks (numpy's default "linear" method),
// q in [0, 1]; `sorted` ascending and non-empty.
double percentile_sorted(const std::vector<double>& sorted, double q);

// 0-based indices (lo, hi) of the order statistics bounding the median with coverage >= level,
// and the exact coverage. n < some minimum (6 for 95%) cannot reach the level: returns (0, n-1).
struct MedianCi {
  std::size_t lo, hi;
  double coverage;
};
MedianCi median_ci_ranks(std::size_t n, double level);

Stats compute_stats(const std::vector<double>& samples, double ci_level = 0.95);

struct Bandwidth {
  double algbw_GBps = 0;  // bytes / t / 1e9
  double busbw_GBps = 0;  // algbw * factor(n)
  double factor = 0;
};
Bandwidth bandwidth(Collective op, int n, std::int64_t bytes, double seconds);

// A collective point record's measured fields, alike for the sweep and the importer: name and
// variant, group size, element counts and byte conventions of `sh`, statistics over `samples`
// and the bandwidths of their median.
void fill_collective_record(shardcal::formats::PointRecord& rec, Collective op,
                            const CollectiveShape& sh, const std::vector<double>& samples,
                            double ci_level = 0.95);

}  // namespace shardbench::sweep

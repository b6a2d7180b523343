#pragma once
// What the gate's reading, deciding and reporting files share (not part of the public API).
#include <cstdio>
#include <string>

namespace shardcal::gate::detail {

// RunData::format of a Google Benchmark JSON run (sweep runs carry formats::kResultsSchema).
inline constexpr const char* kGbenchFormat = "google-benchmark";

// A number in printf format f, for messages and reports.
inline std::string fmt(double v, const char* f = "%.4g") {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace shardcal::gate::detail

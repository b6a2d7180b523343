#pragma once
// The small-message floor check of a sweep and of calibrate (docs/RESULTS_FORMAT.md "Warning
// records"): a link that needs a millisecond or more for every message of a few KiB is not the
// network. On a machine with more ranks than cores (the main job's 4 ranks on 2 cores, two
// emulated Slurm nodes on one VM) a rank waits for the scheduler's time slice, and busy-polling
// ranks starve each other: the fit would model the scheduler. Warnings only: such runs are
// legitimate tests of the machinery, not of a cluster.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shardcal::formats {

// One measured point: its series (one collective on one link class), the hosts one group
// spans, S in bytes and the median time.
struct FloorSample {
  std::string series;  // "all_gather mesh=4 dim=0"
  int hosts_spanned = 1;
  double bytes = 0;
  double median_s = 0;
};

struct FloorWarning {
  std::string series;
  int hosts_spanned = 1;
  double floor_s = 0;    // the smallest median among the small messages
  double limit_s = 0;    // what is plausible for this link at most
  double max_bytes = 0;  // the largest small message of the series
  int points = 0;        // small-message points, all at or above limit_s
  std::string message;   // one line, with likely causes
  nlohmann::json to_json() const;  // the results file's "warning" record
};

// Small messages: S <= 64 KiB. Plausible floors: under 1 ms inside a host, under 5 ms across
// hosts. A series warns when it has >= 2 small-message points and all of them are at or above
// its limit. One warning per series, in the order the series first appear.
inline constexpr double kSmallMessageBytes = 65536;
inline constexpr double kIntraHostFloorLimitS = 1e-3;
inline constexpr double kInterHostFloorLimitS = 5e-3;
std::vector<FloorWarning> implausible_floors(const std::vector<FloorSample>& samples);

// "likely causes: ..." (the shared tail of every floor message).
std::string floor_causes();

}  // namespace shardcal::formats

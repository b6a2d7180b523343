#pragma once
// What one query costs (calibrate/src/predict.cpp): its S_eff from uneven counts
// (effective_bytes), the nearest measured class (docs/PROFILE_FORMAT.md "Choosing a model"), its
// host-count transport (host_transport.hpp), the notes that say what was extrapolated, and the
// price with its 95 % interval (cost_model.hpp).
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "shardcal/calibrate/host_transport.hpp"
#include "shardcal/calibrate/profile_types.hpp"

namespace shardcal::calib {

struct Prediction {
  double time_us = 0;
  double lo_us = 0, hi_us = 0;  // 95 % prediction interval (cost_model.hpp)
  // What priced it: "measured curve", "measured curve, switch in the gap", "measured curve,
  // beyond the measured sizes", "nearest class's curve" (+ the same qualifiers), "backbone".
  std::string basis;
  const Model* model = nullptr;
  int segment = -1;
  bool extrapolated = false;  // link class, group size or size outside what was measured
  std::string note;           // why extrapolated: "nearest measured class: hosts=1 ..."
  std::string class_note;     // the link-class part of note ("" when the class was measured)
  // log2(S_eff / the nearest measured size) when S_eff lies past the measured sizes (> 0 above
  // the largest, < 0 below the smallest), else 0: the price is extrapolated 2^|size_octaves|x.
  double size_octaves = 0;
  double size_edge_bytes = 0;  // the nearest measured size when size_octaves != 0
  // The model is of the other side of the host boundary (an intra-host group priced from
  // inter-host measurements, or the reverse): the query's links were never measured.
  bool other_side = false;
  // The link ceiling's floor at this query (0: the profile knows no ceiling) and whether the
  // price sits on it (docs/CALIBRATION.md "Link ceilings").
  double link_floor_us = 0;
  bool at_link_floor = false;
  bool at_host_link_floor = false;  // ... and it is the host links' floor (a group across hosts)
  // Set (transport.active) when the price was transported from other host counts
  // (host_transport.hpp); the planner's hot path repeats it from here.
  HostTransport transport;
};

// S_eff in bytes for a query of collective c. counts empty -> bytes. Else counts are elements
// per group position in the collective table's convention (CollectiveCall), counts.size() = the
// group size m (all_to_all: m or m x m; anything else throws):
//  - no v-form (all_reduce, broadcast): the count is the buffer, the same at every position;
//    uneven counts throw; S_eff = counts[0] x elem_size under either rule (as the sweep's
//    bytes_eff for these).
//  - all_to_all: m entries (every rank sends counts[q] to position q, the sweep's form) or
//    m x m entries (the send matrix row-major, counts[src * m + dst], as StepTraffic::counts);
//    the rule is applied to each sender's row and the largest result is S_eff (total: the
//    largest send buffer; n_times_max: m x the largest block).
//  - the other v-forms: the rule over the m counts.
// Throws Error on bad input.
double effective_bytes(Collective c, EffectiveSize rule, double bytes,
                       std::span<const std::int64_t> counts, int elem_size, int group_size);
// S in the collective table's convention for counts (no v-form: counts[0] x es; all_to_all: the
// largest row sum x es; others: the sum x es). Throws on empty, negative or (no v-form) uneven
// counts.
double table_bytes(Collective c, std::span<const std::int64_t> counts, int elem_size,
                   int group_size);

// counts: elements per group position (empty = even, bytes is the table's S); elem_size bytes.
// check_class false: a class with hosts x ranks_per_host != group_size is priced as given (the
// Python adapters' link classes of groups spread unevenly over hosts), not rejected.
Prediction predict(const Profile& p, Collective c, const LinkClass& lc, double bytes,
                   std::span<const std::int64_t> counts = {}, int elem_size = 1,
                   std::optional<DType> dtype = std::nullopt, bool check_class = true);

}  // namespace shardcal::calib

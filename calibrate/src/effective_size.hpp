#pragma once
// The effective size of uneven shards (effective_size.cpp). Internal to calibrate/src.
#include <vector>

#include "shardcal/calibrate/fit.hpp"

namespace shardcal::calib::fitter {

// Per v-form collective with a model: the effective size whose prediction of the uneven points
// (those with a model of their exact hosts and concurrency) has the lower MAPE, set on every
// model of that collective and recorded in cal.effective_size (the default n x max where no
// uneven point was priced).
void choose_effective_sizes(const std::vector<const CollectivePoint*>& uneven, Calibration& cal);

}  // namespace shardcal::calib::fitter

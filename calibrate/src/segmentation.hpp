#pragma once
// Segmentation (segmentation.cpp): a family's piecewise fit in size, K segments of the kernel's
// model (fit_kernel.hpp) with ends chosen by dynamic programming, boundaries placed inside the
// gaps between measured sizes and floors that keep the price monotone except where the data
// confirm a drop. Internal to calibrate/src.
#include <optional>
#include <vector>

#include "fit_kernel.hpp"
#include "shardcal/calibrate/fit.hpp"

namespace shardcal::calib::fitter {

struct Piecewise {
  std::vector<double> lo;  // segment starts (lo[0] = 0)
  std::vector<Coef> coef;
};

// The best K-segment fit of obs (none: too few distinct sizes for K segments of
// opt.min_sizes_per_segment, 2 for K = 1).
std::optional<Piecewise> fit_piecewise(const std::vector<Obs>& obs, int K, Collective c,
                                       const FitOptions& opt, bool contention);

// The profile's segments of a piecewise fit (coefficients, relative SEs, contention).
std::vector<Segment> to_segments(const Piecewise& p);

// The piecewise fit's time (us) at an observation: the segment holding its size.
double pw_eval(const Piecewise& p, const Obs& o, Collective c);

}  // namespace shardcal::calib::fitter

#pragma once
// The fitter's measured curves (docs/CALIBRATION.md "Measured curves"): per measured link class of
// a fitted model, the log ratio of measured time to the backbone at every measured size, the
// shrink lambda and the interpolation error scales the 95 % interval uses. Internal to the
// fitter (family_fit.cpp calls it once per fitted model).
#include <vector>

#include "shardcal/calibrate/profile.hpp"

namespace shardcal::calib {

struct CurveObs {
  double s = 0;     // S_eff, bytes (even distribution)
  int n = 1;        // group size
  int c = 1;        // concurrent groups
  double y_us = 0;  // measured time
};

// Measurement noise floor (log scale) where a size was measured once: timer resolution and
// run-to-run variation of a mean over iterations.
inline constexpr double kCurveNoiseFloor = 0.005;
// A size whose leave-one-out error exceeds this many robust standard deviations is a spike.
inline constexpr double kCurveSpikeSigmas = 5.0;
// ... and is off by more than a factor 1.3 (a daemon waking up during a point makes it 2-3x; no
// size of the public nccl-tests dev logs is removed by it, whose own bumps between sizes a factor
// 4 apart stay below).
inline constexpr double kCurveSpikeMinLog = 0.26236426446749106;  // ln 1.3
// Interpolation error scale of a curve with fewer than 3 sizes (no size to leave out): 10 % per
// unit of w (1 - w) g, i.e. 2.5 % in the middle of an octave.
inline constexpr double kCurveKappaDefault = 0.1;

// One curve per class (n >= 2) with >= 2 distinct sizes >= 1 byte; sorted by (n, c).
std::vector<MeasuredCurve> fit_curves(const Model& m, const std::vector<CurveObs>& obs);

}  // namespace shardcal::calib

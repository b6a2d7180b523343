#pragma once
// Transitions and the copy cost (copy_cost.cpp). Internal to calibrate/src.
#include "shardcal/calibrate/fit.hpp"

namespace shardcal::calib::fitter {

// Transitions: predicted from their plan steps with cal.models, through predict() (the planner's
// path, including its nearest-measured-class rule), plus the copies their steps pack and unpack
// at the copy cost fitted from the transitions of local steps only. Fills cal.transitions,
// cal.local_copy and cal.composition_mape.
void compose_transitions(const ResultSet& rs, const FitOptions& opt, Calibration& cal);

}  // namespace shardcal::calib::fitter

#pragma once
// The calibrated cost-model profile (schema "shardcal.profile" version 1; docs/PROFILE_FORMAT.md),
// everything about it in one include:
//  - profile_types.hpp: the data (Profile, Model, Segment, MeasuredCurve, LinkClass, ...);
//  - profile_io.hpp: read_profile / parse_profile (calibrate/src/profile_read.cpp) and
//    profile_to_json / write_profile_atomic (calibrate/src/profile_write.cpp);
//  - cost_model.hpp: the model's prices and intervals (calibrate/src/cost_model.cpp);
//  - host_transport.hpp: prices carried to host counts no model measured
//    (calibrate/src/host_transport.cpp);
//  - predict.hpp: S_eff, the model choice and predict() (calibrate/src/predict.cpp).
#include "shardcal/calibrate/cost_model.hpp"
#include "shardcal/calibrate/host_transport.hpp"
#include "shardcal/calibrate/predict.hpp"
#include "shardcal/calibrate/profile_io.hpp"
#include "shardcal/calibrate/profile_types.hpp"

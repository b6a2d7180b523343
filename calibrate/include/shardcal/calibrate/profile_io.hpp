#pragma once
// Reading and writing profiles (shardcal.profile v1; docs/PROFILE_FORMAT.md): the reader in
// calibrate/src/profile_read.cpp, the writer in calibrate/src/profile_write.cpp.
#include <string>

#include "shardcal/calibrate/profile_types.hpp"

namespace shardcal::calib {

// Segment validity also requires every term's value finite and within its bound (cost_model.hpp
// kTermInfo), s_lo >= 0, the last segment unbounded (s_hi null), and group sizes divisible by
// hosts. The nearest-measured-class rule that
// predict() applies is in docs/PROFILE_FORMAT.md ("Choosing a model").
// Throws shardcal::Error with the JSON pointer and a fix for every defect (unknown schema or
// version, missing fields, non-finite or non-physical values, unsorted/overlapping segments).
Profile read_profile(const std::string& path);
Profile parse_profile(const std::string& json_text, const std::string& origin);
std::string profile_to_json(const Profile& p);  // canonical text; round-trips parse_profile
void write_profile_atomic(const Profile& p, const std::string& path);  // temp + rename
// A ring-routes file (format shardcal-ring-routes/1, docs/PROFILE_FORMAT.md "ring_routes"):
// what `calibrate --routes FILE` puts into the profile. Throws shardcal::Error on any defect.
Profile::RingRoutes read_ring_routes(const std::string& path);
}  // namespace shardcal::calib

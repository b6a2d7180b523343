// The profiles planner tests price with: DTensor's defaults, the same with pack/unpack copies
// priced (an "mpi" backend), and the same without an all_to_all model.
#pragma once

#include <algorithm>
#include <string>

#include "shardcal/calibrate/profile.hpp"
#include "shardcal/calibrate/step_cost.hpp"

namespace shardcal::test {

struct ProfileVariants {
  calib::Profile dtensor, copies, no_a2a;
};

inline ProfileVariants profile_variants(const std::string& dtensor_path) {
  ProfileVariants v;
  v.dtensor = calib::read_profile(dtensor_path);
  v.copies = v.dtensor;
  v.copies.backend = "mpi";  // prices_copies: pack/unpack on top of the models
  v.no_a2a = v.dtensor;
  std::erase_if(v.no_a2a.models,
                [](const calib::Model& m) { return m.collective == Collective::AllToAll; });
  return v;
}

}  // namespace shardcal::test

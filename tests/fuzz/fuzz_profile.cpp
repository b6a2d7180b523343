// libFuzzer target: the calibrated-profile reader (`shardbench plan/predict/validate/gate
// --profile`; read_profile reads the file and hands its text to parse_profile).
#include "fuzz_target.hpp"
#include "shardcal/calibrate/profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  shardcal::fuzz::accepts([&] {
    (void)shardcal::calib::parse_profile(shardcal::fuzz::as_text(data, size), "fuzz.json");
  });
  return 0;
}

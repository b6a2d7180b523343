// libFuzzer target: the sweep config, as `shardbench sweep --config` reads it (parse, validate)
// and expands it into points for a small world.
#include "fuzz_target.hpp"
#include "sweep/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace sw = shardbench::sweep;
  shardcal::fuzz::accepts([&] {
    const sw::SweepConfig cfg = sw::parse_config_text(shardcal::fuzz::as_text(data, size), "fuzz.json");
    (void)cfg.hash();
    (void)sw::expand_points(cfg, 4);
  });
  return 0;
}

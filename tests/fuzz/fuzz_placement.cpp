// libFuzzer target: the placement parser ("S(0)[3,7],S(1)", CLI --from/--to and sweep configs).
// Also checks the printed form parses back to the same placements.
#include <cstdlib>
#include <vector>

#include "fuzz_target.hpp"
#include "shardcal/placement.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<shardcal::Placement> ps;
  if (!shardcal::fuzz::accepts(
          [&] { ps = shardcal::parse_placements(shardcal::fuzz::as_text(data, size)); })) {
    return 0;
  }
  // What the parser accepted, it must print in a form it accepts again, unchanged.
  if (shardcal::parse_placements(shardcal::placements_to_string(ps)) != ps) std::abort();
  return 0;
}

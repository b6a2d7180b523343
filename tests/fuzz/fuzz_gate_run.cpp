// libFuzzer target: the gate's run reader (`shardbench gate --baseline/--candidate`): Google
// Benchmark JSON, or sweep results.
#include "fuzz_target.hpp"
#include "shardcal/gate/compare.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  shardcal::fuzz::accepts(
      [&] { (void)shardcal::gate::read_run(shardcal::fuzz::write_temp(data, size, ".json")); });
  return 0;
}

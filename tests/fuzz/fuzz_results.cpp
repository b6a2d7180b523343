// libFuzzer target: the sweep results reader (JSON Lines) that `shardbench calibrate` uses.
#include "fuzz_target.hpp"
#include "shardcal/formats/results_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  shardcal::fuzz::accepts([&] {
    (void)shardcal::formats::read_results({shardcal::fuzz::write_temp(data, size, ".jsonl")});
  });
  return 0;
}

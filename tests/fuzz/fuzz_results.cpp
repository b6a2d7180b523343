// libFuzzer target: the sweep results reader (JSON Lines) that `shardbench calibrate` uses.
#include "fuzz_target.hpp"
#include "shardcal/formats/results_reader.hpp"
#include "shardcal/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)shardcal::formats::read_results({shardcal::fuzz::write_temp(data, size, ".jsonl")});
  } catch (const shardcal::Error&) {
  }
  return 0;
}

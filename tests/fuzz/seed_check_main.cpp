// The seed check: one fuzz target, built without libFuzzer, run on every valid-* seed of its seed
// directory. Those seeds are meant to reach deep into the reader; if a format change made one of
// them invalid, the fuzzer would only exercise the rejection path and nothing else would notice.
// Usage: seed_check_NAME SEED_DIR. Exit 0 when every valid-* seed is accepted, 1 otherwise.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2 || !fs::is_directory(argv[1])) {
    std::cerr << "usage: " << argv[0] << " SEED_DIR (a directory of seeds)\n";
    return 2;
  }
  std::vector<fs::path> seeds;
  for (const auto& e : fs::directory_iterator(argv[1])) {
    if (e.path().filename().string().starts_with("valid-")) seeds.push_back(e.path());
  }
  std::sort(seeds.begin(), seeds.end());
  if (seeds.empty()) {
    std::cerr << "seed check: no valid-* seed in " << argv[1] << "\n";
    return 1;
  }
  shardcal::fuzz::rejection_is_error = true;
  int bad = 0;
  for (const fs::path& p : seeds) {
    std::ifstream in(p, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), {}};
    try {
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
      std::cout << "accepted " << p.string() << " (" << text.size() << " B)\n";
    } catch (const shardcal::Error& e) {
      std::cerr << "REJECTED " << p.string() << ": " << e.what() << "\n";
      ++bad;
    }
  }
  return bad == 0 ? 0 : 1;
}

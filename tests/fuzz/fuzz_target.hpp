#pragma once
// Shared by the libFuzzer targets: the input as text, a per-process temp file for readers that
// take a path, and the rule that only shardcal::Error is a clean rejection. Anything else that
// escapes (a std::exception from a library, a sanitizer report, an abort) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace shardcal::fuzz {

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Writes the input to one file per process (rewritten every run) and returns its path. The
// readers that take a path are fuzzed through it, so the file-opening code runs too.
inline const std::string& write_temp(const std::uint8_t* data, std::size_t size,
                                     const char* suffix) {
  static const std::string path = [&] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/shardcal-fuzz-" +
           std::to_string(::getpid()) + suffix;
  }();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();  // the machine, not the reader: stop loudly
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace shardcal::fuzz

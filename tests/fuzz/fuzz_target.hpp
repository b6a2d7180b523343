#pragma once
// Shared by the libFuzzer targets: the input as text, a per-process temp file for readers that
// take a path, and the rule that only shardcal::Error is a clean rejection. Anything else that
// escapes (a std::exception from a library, a sanitizer report, an abort) is a finding.
// The same targets also run without libFuzzer as the seed check (seed_check_main.cpp), where a
// valid seed must be accepted: there a shardcal::Error is passed on.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "shardcal/error.hpp"

namespace shardcal::fuzz {

// Set by the seed check: a rejection is then an error, not the clean outcome.
inline bool rejection_is_error = false;

// Runs one reader call; returns false when it rejected the input with a shardcal::Error.
template <class Read>
bool accepts(Read&& read) {
  try {
    read();
    return true;
  } catch (const shardcal::Error&) {
    if (rejection_is_error) throw;
    return false;
  }
}

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The per-process temp file; removed when the process exits normally (libFuzzer's
// -max_total_time ends with exit()). A crashing run leaves it, next to its crash-* input.
class TempFile {
 public:
  explicit TempFile(const char* suffix) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/shardcal-fuzz-" +
            std::to_string(::getpid()) + suffix;
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes the input to one file per process (rewritten every run) and returns its path. The
// readers that take a path are fuzzed through it, so the file-opening code runs too.
inline const std::string& write_temp(const std::uint8_t* data, std::size_t size,
                                     const char* suffix) {
  static const TempFile file(suffix);
  const std::string& path = file.path();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();  // the machine, not the reader: stop loudly
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace shardcal::fuzz

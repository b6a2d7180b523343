#pragma once
// Synthetic sweep results for the fitter's tests: a context record, noisy samples, a temporary
// results file.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardcal/collectives.hpp"

namespace shardcal::calib::testing {

struct TrueSeg {
  double a0, as, B;  // us, us, GB/s
};

// A two-regime ring model with its break at `brk` bytes; gamma: each of `conc` concurrent groups
// gets B / (1 + gamma (conc - 1)).
inline double two_regime_us(Collective c, double s, int n, const TrueSeg& small,
                            const TrueSeg& large, double brk, int conc = 1, double gamma = 0) {
  const TrueSeg& t = s < brk ? small : large;
  const auto& info = collective_info(c);
  return t.a0 + t.as * info.ring_steps(n) +
         s * info.busbw_factor(n) / (t.B * 1e3) * (1.0 + gamma * (conc - 1));
}

// One host with 8 ranks (the world every synthetic sweep here runs on).
inline nlohmann::json context(const std::string& backend = "sim") {
  return {{"type", "context"},
          {"schema", "shardcal.sweep.results"},
          {"version", 2},
          {"backend", backend},
          {"memory", "host"},
          {"world", 8},
          {"n_hosts", 1},
          {"hosts", nlohmann::json::array(
                        {{{"name", "synthetic"}, {"ranks", {0, 1, 2, 3, 4, 5, 6, 7}}}})},
          {"ranks_per_host", 8},
          {"shardcal_version", "0.1.0"},
          {"git_revision", "test"},
          {"config_hash", "0"}};
}

// The sweep's view of one point: `count` samples, each with `rel` multiplicative Gaussian noise
// (what the record's samples_s holds); the fitter's y is their median.
inline nlohmann::json noisy(double t_us, std::mt19937_64& rng, double rel = 0.05, int count = 21) {
  std::normal_distribution<double> noise(0.0, rel);
  nlohmann::json s = nlohmann::json::array();
  for (int i = 0; i < count; ++i) s.push_back(t_us * 1e-6 * std::max(0.5, 1.0 + noise(rng)));
  return s;
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() /
              ("shardcal_calib_" + std::to_string(::getpid()) + "_" + name))
                 .string()) {}
  ~TempFile() { std::filesystem::remove(path); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  void write(const std::vector<nlohmann::json>& recs) const {
    std::ofstream out(path);
    for (const nlohmann::json& r : recs) out << r.dump() << "\n";
  }
};

}  // namespace shardcal::calib::testing

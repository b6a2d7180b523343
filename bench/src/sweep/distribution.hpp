#pragma once
// Uneven shard distributions: how many elements of a logical tensor each of n ranks holds.
// Every distribution is a pure, deterministic function of (total, n), so all ranks compute the
// same counts without communication.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardbench::sweep {

struct Distribution {
  enum class Kind : unsigned char { Even, Chunk, Linear, Zipf, OneEmpty, Random };
  Kind kind = Kind::Even;
  double param = 0.0;       // Linear: largest/smallest weight ratio; Zipf: exponent s
  std::uint64_t seed = 0;   // Random

  // Canonical text, also accepted by parse(): even, chunk, linear(4), zipf(1.1), one_empty,
  // random(42).
  std::string name() const;
  // Throws shardcal::Error with the accepted spellings on bad text.
  static Distribution parse(std::string_view text);

  // Even: the non-v collective (same count on every rank). Everything else uses the v-forms.
  bool uniform() const { return kind == Kind::Even; }
  // Per-rank element counts summing to exactly `total` (Even: floor(total/n) each, at least 1,
  // so the sum may differ from total; see collective shapes).
  std::vector<std::int64_t> split(std::int64_t total, int n) const;
  bool operator==(const Distribution&) const = default;
};

// Largest-remainder apportionment of `total` by non-negative weights (ties to the lower index).
std::vector<std::int64_t> apportion(std::int64_t total, const std::vector<double>& weights);

}  // namespace shardbench::sweep

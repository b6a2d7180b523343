#pragma once
// FNV-1a, 64 bit: a stable hash of bytes (the same in every process, build and platform), for
// identities written to files and compared between ranks. Not cryptographic.
#include <cstdint>
#include <string_view>

namespace shardcal {

// The FNV offset basis (14695981039346656037).
inline constexpr std::uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;

// `basis` other than the standard one: for values that must stay what an older build computed
// (e.g. the gate's per-point bootstrap seeds; docs/GATE.md promises the same verdicts).
constexpr std::uint64_t fnv1a64(std::string_view s, std::uint64_t basis = kFnvOffsetBasis) {
  std::uint64_t h = basis;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;  // FNV prime
  return h;
}

}  // namespace shardcal

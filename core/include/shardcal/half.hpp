#pragma once
// IEEE binary16 and bfloat16 <-> float conversion with round-to-nearest-even. Stored as raw
// 16-bit patterns so the core needs no compiler extension and no CUDA header.
#include <bit>
#include <cstdint>

namespace shardcal {

inline float bf16_to_float(std::uint16_t h) { return std::bit_cast<float>(std::uint32_t(h) << 16); }

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::uint16_t(u >> 16);
}

inline float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    float v = float(man) * 0x1p-24f;
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(v) | sign);
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (man << 13));
}

inline std::uint16_t float_to_f16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return std::uint16_t(sign | 0x7e00u);           // NaN
  if (abs >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);          // overflow -> inf
  if (abs < 0x38800000u) {                                                // subnormal or zero
    const float a = std::bit_cast<float>(abs);
    // a * 2^24 rounded to nearest even integer gives the subnormal mantissa.
    const float scaled = a * 0x1p24f;
    std::uint32_t m = std::uint32_t(scaled);
    const float rem = scaled - float(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
    return std::uint16_t(sign | m);
  }
  std::uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even at bit 13
  return std::uint16_t(sign | ((r - (112u << 23)) >> 13));
}

}  // namespace shardcal

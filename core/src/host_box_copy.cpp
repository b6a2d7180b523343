// Host box copy (pack/unpack of shards whose dim is not the leading one): shardcal::host_copy_box.
//
// The box is reduced to "count runs of run_bytes contiguous bytes" over at most a few strided
// outer dims, and each run is copied with memcpy-class code chosen once per call by run size:
//   - runs of 1, 2, 4 B and of every multiple of 8 B up to 256 B: a fixed-size copy the compiler
//     turns into a few vector loads/stores (no call, no length test per run);
//   - other runs of 16..255 B: 16-byte chunks, the last one overlapping the previous (standard
//     trick for variable lengths without a byte tail loop);
//   - other runs below 16 B: two overlapping 8/4/2/1-byte moves;
//   - longer runs: std::memcpy (the C library picks the best code for the CPU).
// Everything works on bytes, so every element size (1, 2, 4, 8, 16 B) takes the same paths.
// Dims are collapsed first (collapse_box, shared with the CUDA copy): extents of 1 are dropped,
// and a dim is merged into the next inner one when the box is contiguous across both in source
// and destination.
//
// No threads: measured on the 2-core development VM (docs/PERFORMANCE.md, "Host pack/unpack"),
// a second thread did not pay for boxes up to the micro suite's largest (4 MiB).
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "shardcal/box_copy.hpp"
#include "shardcal/error.hpp"
#include "shardcal/memory.hpp"

namespace shardcal {

namespace {

constexpr std::size_t kMaxDims = 16;  // after collapsing; more throws (a clear internal error)

// Copy exactly N bytes (N a compile-time constant): inlined vector moves, no length tests.
template <std::size_t N>
inline void copy_fixed(std::byte* d, const std::byte* s) {
  if constexpr (N <= 16) {
    std::memcpy(d, s, N);
  } else {
    // 16-byte chunks, then (N not a multiple of 16) one more ending exactly at N, overlapping.
    for (std::size_t i = 0; i + 16 <= N; i += 16) std::memcpy(d + i, s + i, 16);
    if constexpr (N % 16 != 0) std::memcpy(d + N - 16, s + N - 16, 16);
  }
}

// 16 <= n: 16-byte chunks, the last overlapping its predecessor.
inline void copy_chunks16(std::byte* d, const std::byte* s, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 < n; i += 16) std::memcpy(d + i, s + i, 16);
  std::memcpy(d + n - 16, s + n - 16, 16);
}

// 1 <= n < 16: two overlapping moves of the largest power of two <= n.
inline void copy_small(std::byte* d, const std::byte* s, std::size_t n) {
  if (n >= 8) {
    std::uint64_t a, b;
    std::memcpy(&a, s, 8);
    std::memcpy(&b, s + n - 8, 8);
    std::memcpy(d, &a, 8);
    std::memcpy(d + n - 8, &b, 8);
  } else if (n >= 4) {
    std::uint32_t a, b;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + n - 4, 4);
    std::memcpy(d, &a, 4);
    std::memcpy(d + n - 4, &b, 4);
  } else if (n >= 2) {
    std::uint16_t a, b;
    std::memcpy(&a, s, 2);
    std::memcpy(&b, s + n - 2, 2);
    std::memcpy(d, &a, 2);
    std::memcpy(d + n - 2, &b, 2);
  } else {
    *d = *s;
  }
}

// The collapsed copy: runs of `run` bytes; outer dims [0, nd) with extents and byte strides,
// dim nd-1 innermost of them.
struct Plan {
  std::size_t nd = 0;
  std::int64_t extent[kMaxDims];
  std::int64_t sstride[kMaxDims];  // bytes
  std::int64_t dstride[kMaxDims];  // bytes
  std::size_t run = 0;             // bytes
};

// One kernel per run copier: the innermost outer dim is a tight loop, the others an odometer.
template <typename Copy>
void run_plan(const Plan& p, std::byte* dst, const std::byte* src, Copy copy) {
  if (p.nd == 0) {
    copy(dst, src);
    return;
  }
  const std::size_t last = p.nd - 1;
  const std::int64_t n = p.extent[last], ss = p.sstride[last], ds = p.dstride[last];
  auto row = [&](std::byte* d, const std::byte* s) {
    for (std::int64_t i = 0; i < n; ++i, d += ds, s += ss) copy(d, s);
  };
  if (p.nd == 1) {
    row(dst, src);
    return;
  }
  if (p.nd == 2) {
    const std::int64_t m = p.extent[0], ss0 = p.sstride[0], ds0 = p.dstride[0];
    for (std::int64_t j = 0; j < m; ++j) row(dst + j * ds0, src + j * ss0);
    return;
  }
  std::int64_t idx[kMaxDims] = {};
  while (true) {
    row(dst, src);
    std::size_t d = last;  // advance the odometer over dims [0, last)
    while (true) {
      if (d == 0) return;
      --d;
      dst += p.dstride[d];
      src += p.sstride[d];
      if (++idx[d] < p.extent[d]) break;
      dst -= p.dstride[d] * p.extent[d];
      src -= p.sstride[d] * p.extent[d];
      idx[d] = 0;
    }
  }
}

template <std::size_t N>
void run_fixed(const Plan& p, std::byte* dst, const std::byte* src) {
  run_plan(p, dst, src, [](std::byte* d, const std::byte* s) { copy_fixed<N>(d, s); });
}

using RunFn = void (*)(const Plan&, std::byte*, const std::byte*);
template <std::size_t... K>
constexpr std::array<RunFn, sizeof...(K)> fixed_table(std::index_sequence<K...>) {
  return {&run_fixed<8 * (K + 1)>...};
}
constexpr auto kFixed = fixed_table(std::make_index_sequence<32>());  // 8, 16, ..., 256 B

}  // namespace

void host_copy_box(const BoxCopy& c) {
  // Validation and collapse are shared with the CUDA copy (shardcal/box_copy.hpp); the outer
  // dims arrive innermost first and are stored outermost first.
  BoxDim rev[kMaxDims];
  std::size_t nrev = 0;
  const BoxRuns box = collapse_box(c, [&](const BoxDim& d) {
    if (nrev == kMaxDims) throw Error("internal: copy_box with more than 16 strided dims");
    rev[nrev++] = d;
  });
  if (box.empty) return;
  Plan p;
  p.nd = nrev;
  for (std::size_t i = 0; i < nrev; ++i) {
    p.extent[i] = rev[nrev - 1 - i].extent;
    p.sstride[i] = rev[nrev - 1 - i].src_stride;
    p.dstride[i] = rev[nrev - 1 - i].dst_stride;
  }
  p.run = std::size_t(box.run);

  const auto* src = static_cast<const std::byte*>(c.src) + box.src_base;
  auto* dst = static_cast<std::byte*>(c.dst) + box.dst_base;
  const std::size_t n = p.run;
  // Fixed-size copiers: 1, 2, 4 B and every multiple of 8 B up to 256 B (element sizes are 1, 2,
  // 4, 8 or 16 B, so most short runs are multiples of 8).
  if (n == 1) return run_fixed<1>(p, dst, src);
  if (n == 2) return run_fixed<2>(p, dst, src);
  if (n == 4) return run_fixed<4>(p, dst, src);
  if (n % 8 == 0 && n <= 8 * kFixed.size()) return kFixed[n / 8 - 1](p, dst, src);
  if (n < 16)
    run_plan(p, dst, src, [n](std::byte* d, const std::byte* s) { copy_small(d, s, n); });
  else if (n < 256)
    run_plan(p, dst, src, [n](std::byte* d, const std::byte* s) { copy_chunks16(d, s, n); });
  else
    run_plan(p, dst, src, [n](std::byte* d, const std::byte* s) { std::memcpy(d, s, n); });
}

}  // namespace shardcal

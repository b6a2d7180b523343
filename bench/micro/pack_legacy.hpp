#pragma once
// main's host_copy_box before the pack/unpack rewrite, kept verbatim in logic
// so bench/micro/pack_bench.cpp can time "before" and "after" side by side in one run. Not used
// by the library.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "shardcal/memory.hpp"

namespace shardcal_bench_legacy {

// One memcpy per contiguous run, an odometer (with per-run offset recomputation) over the rest.
inline void legacy_copy_box(const shardcal::BoxCopy& c) {
  const std::size_t nd = c.extent.size();
  for (std::size_t d = 0; d < nd; ++d)
    if (c.extent[d] == 0) return;
  std::size_t inner = nd;
  std::int64_t run = 1;
  while (inner > 0) {
    const std::size_t d = inner - 1;
    run *= c.extent[d];
    --inner;
    if (!(c.extent[d] == c.src_shape[d] && c.extent[d] == c.dst_shape[d])) break;
  }
  std::vector<std::int64_t> ss(nd, 1), ds(nd, 1);
  for (std::size_t d = nd; d-- > 1;) {
    ss[d - 1] = ss[d] * c.src_shape[d];
    ds[d - 1] = ds[d] * c.dst_shape[d];
  }
  std::int64_t src_base = 0, dst_base = 0;
  for (std::size_t d = 0; d < nd; ++d) {
    src_base += c.src_offset[d] * ss[d];
    dst_base += c.dst_offset[d] * ds[d];
  }
  const auto* src = static_cast<const std::byte*>(c.src);
  auto* dst = static_cast<std::byte*>(c.dst);
  const std::size_t run_bytes = std::size_t(run) * c.elem_size;
  std::vector<std::int64_t> idx(inner, 0);
  while (true) {
    std::int64_t so = src_base, doff = dst_base;
    for (std::size_t d = 0; d < inner; ++d) {
      so += idx[d] * ss[d];
      doff += idx[d] * ds[d];
    }
    std::memcpy(dst + std::size_t(doff) * c.elem_size, src + std::size_t(so) * c.elem_size, run_bytes);
    std::size_t d = inner;
    while (d > 0) {
      --d;
      if (++idx[d] < c.extent[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if (inner == 0) return;
  }
}

}  // namespace shardcal_bench_legacy

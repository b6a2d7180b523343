#include "shardcal/memory.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "shardcal/error.hpp"

namespace shardcal {

void host_copy_box(const BoxCopy& c) {
  const std::size_t nd = c.extent.size();
  if (c.src_shape.size() != nd || c.dst_shape.size() != nd || c.src_offset.size() != nd ||
      c.dst_offset.size() != nd)
    throw Error("internal: copy_box with inconsistent ranks");
  for (std::size_t d = 0; d < nd; ++d) {
    if (c.extent[d] == 0) return;
    if (c.src_offset[d] < 0 || c.src_offset[d] + c.extent[d] > c.src_shape[d] ||
        c.dst_offset[d] < 0 || c.dst_offset[d] + c.extent[d] > c.dst_shape[d])
      throw Error("internal: copy_box out of bounds on dim " + std::to_string(d));
  }
  // Merge trailing dims that are copied whole in both arrays into one contiguous run.
  std::size_t inner = nd;  // dims [inner, nd) form the contiguous run
  std::int64_t run = 1;
  while (inner > 0) {
    const std::size_t d = inner - 1;
    run *= c.extent[d];
    --inner;
    if (!(c.extent[d] == c.src_shape[d] && c.extent[d] == c.dst_shape[d])) break;
  }
  // Strides (elements) of both arrays.
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
  std::vector<std::int64_t> idx(inner, 0);  // odometer over dims [0, inner)
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

namespace {
class HostMemory final : public MemorySpace {
 public:
  MemoryKind kind() const override { return MemoryKind::Host; }
  void* allocate(std::size_t bytes) override {
    // 64-byte alignment: cache lines and any vector width; never nullptr, even for 0 bytes.
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (p == nullptr) throw Error("out of host memory allocating " + std::to_string(bytes) + " bytes");
    return p;
  }
  void deallocate(void* p) noexcept override { std::free(p); }
  void copy(void* dst, const void* src, std::size_t n) override {
    if (n) std::memmove(dst, src, n);
  }
  void copy_to_host(void* dst, const void* src, std::size_t n) override { copy(dst, src, n); }
  void copy_from_host(void* dst, const void* src, std::size_t n) override { copy(dst, src, n); }
  void fill_zero(void* dst, std::size_t n) override {
    if (n) std::memset(dst, 0, n);
  }
  void copy_box(const BoxCopy& c) override { host_copy_box(c); }
  void synchronize() override {}
};
}  // namespace

MemorySpace& host_memory() {
  static HostMemory space;
  return space;
}

}  // namespace shardcal

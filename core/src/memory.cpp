#include "shardcal/memory.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "shardcal/error.hpp"

namespace shardcal {

// host_copy_box lives in host_box_copy.cpp.

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

#include "shardcal/memory.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "shardcal/error.hpp"

namespace shardcal {

// host_copy_box lives in host_box_copy.cpp.

namespace {
constexpr std::size_t kPageBytes = 4096;

class HostMemory final : public MemorySpace {
 public:
  MemoryKind kind() const override { return MemoryKind::Host; }
  void* allocate(std::size_t bytes) override {
    // 64-byte alignment (cache lines, any vector width), and a page from a page up: MPI moves a
    // page-aligned buffer faster (on 2 Open MPI ranks a buffer 64 B past a page made 4-16 KiB
    // collectives 7-10 % slower, docs/PERFORMANCE.md "OSU"), and the sweep's collective points,
    // whose prices plans use, run on page-aligned buffers. Never nullptr, even for 0 bytes.
    const std::size_t align = bytes >= kPageBytes ? kPageBytes : 64;
    const std::size_t rounded = (bytes + align - 1) / align * align;
    void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded);
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

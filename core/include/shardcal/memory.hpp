#pragma once
// Where a communicator's buffers live (host memory, or CUDA device memory for NCCL) and the few
// operations the redistribution executor needs on them. Keeps the executor backend-agnostic and
// keeps CUDA headers out of core/.
#include <cstddef>
#include <utility>

#include "shardcal/layout.hpp"

namespace shardcal {

enum class MemoryKind : unsigned char { Host, Cuda };

// Copy the box `extent` from position `src_offset` of a row-major array of shape `src_shape`
// to position `dst_offset` of a row-major array of shape `dst_shape` (pack/unpack of shards
// whose dim is not the leading one). Offsets are relative to each array, not global.
struct BoxCopy {
  void* dst = nullptr;
  Shape dst_shape;
  Shape dst_offset;
  const void* src = nullptr;
  Shape src_shape;
  Shape src_offset;
  Shape extent;
  std::size_t elem_size = 0;
};

class MemorySpace {
 public:
  virtual ~MemorySpace() = default;
  virtual MemoryKind kind() const = 0;
  virtual void* allocate(std::size_t bytes) = 0;  // never nullptr; 0 bytes gives a unique ptr
  virtual void deallocate(void* p) noexcept = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;  // both in this space
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_from_host(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void fill_zero(void* dst, std::size_t bytes) = 0;
  virtual void copy_box(const BoxCopy& c) = 0;
  virtual void synchronize() = 0;  // outstanding device work done (no-op on host)
};

MemorySpace& host_memory();
// The host implementation of copy_box, shared by host spaces (core/src/host_box_copy.cpp):
// collapses contiguous dims into runs and copies each run with code specialised to its size.
// Source and destination must not overlap.
void host_copy_box(const BoxCopy& c);

// Owning, move-only buffer in one memory space.
class Buffer {
 public:
  Buffer() = default;
  Buffer(MemorySpace& space, std::size_t bytes)
      : space_(&space), ptr_(space.allocate(bytes)), bytes_(bytes) {}
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (ptr_ != nullptr) space_->deallocate(ptr_);
  }

  void* data() { return ptr_; }
  const void* data() const { return ptr_; }
  std::size_t size() const { return bytes_; }
  MemorySpace* space() const { return space_; }

 private:
  void swap(Buffer& o) noexcept {
    std::swap(space_, o.space_);
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
  }
  MemorySpace* space_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace shardcal

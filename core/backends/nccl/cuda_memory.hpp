#pragma once
// Device memory of one CUDA device, with one stream on which every copy, fill and box copy of
// this space is ordered (the NCCL communicators of a rank enqueue on the same stream, so packing
// before a collective and unpacking after it need no extra synchronization).
//
// Host-visible completion: copy_to_host and copy_from_host return when the data has arrived
// (so the host buffer may be read or reused); copy, fill_zero and copy_box are asynchronous on
// stream() and complete before anything enqueued later on it; synchronize() waits for all.
// Overlapping source and destination are not supported by copy_box (same as host_copy_box).
#include <cuda_runtime_api.h>

#include "nccl/box_kernel.hpp"
#include "shardcal/memory.hpp"

namespace shardcal::nccl {

class CudaMemory final : public MemorySpace {
 public:
  // Creates a non-blocking stream on `device` (so work here is not serialized against the legacy
  // default stream that other libraries in the process may use).
  explicit CudaMemory(int device);
  ~CudaMemory() override;
  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;

  MemoryKind kind() const override { return MemoryKind::Cuda; }
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p) noexcept override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, std::size_t bytes) override;
  void fill_zero(void* dst, std::size_t bytes) override;
  void copy_box(const BoxCopy& c) override;
  void synchronize() override;

  int device() const { return device_; }
  // Which kernel copy_box launches (box_kernel.hpp): `rows` unless a benchmark or test asks for
  // the first one to compare.
  void set_box_kernel(BoxKernel k) { box_kernel_ = k; }
  cudaStream_t stream() const { return stream_; }

  // Stream-ordered scratch memory (cudaMallocAsync) for staging inside an operation; released
  // with free_async on the same stream, so no device-wide synchronization is involved.
  void* allocate_async(std::size_t bytes);
  void free_async(void* p) noexcept;

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
  int max_blocks_ = 1;  // grid size cap for the box kernel: a few waves of resident blocks
  BoxKernel box_kernel_ = BoxKernel::rows;
};

}  // namespace shardcal::nccl

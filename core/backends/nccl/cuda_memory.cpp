#include "nccl/cuda_memory.hpp"

#include <cstddef>
#include <string>

#include "nccl/box_plan.hpp"
#include "nccl/cuda_check.hpp"
#include "shardcal/error.hpp"

namespace shardcal::nccl {

CudaMemory::CudaMemory(int device) : device_(device) {
  SHARDCAL_CUDA_CHECK(cudaSetDevice(device_));
  SHARDCAL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  int sms = 0;
  SHARDCAL_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
  // 8 blocks of 256 threads per SM fill an SM (2048 threads on sm_80/sm_90); the grid-stride
  // loop covers larger boxes without launching millions of blocks.
  max_blocks_ = sms > 0 ? sms * 8 : 1;
}

CudaMemory::~CudaMemory() {
  // Errors are ignored: the context may already be torn down at process exit.
  if (stream_ != nullptr) {
    (void)cudaSetDevice(device_);
    (void)cudaStreamSynchronize(stream_);
    (void)cudaStreamDestroy(stream_);
  }
}

void* CudaMemory::allocate(std::size_t bytes) {
  use_device(device_);
  void* p = nullptr;
  // cudaMalloc(0) yields nullptr; the interface promises a unique pointer for 0 bytes too.
  const cudaError_t err = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error("out of CUDA memory on device " + std::to_string(device_) + " allocating " +
                std::to_string(bytes) + " bytes: " + cuda_error_text(err));
  }
  return p;
}

void CudaMemory::deallocate(void* p) noexcept {
  if (p == nullptr) return;
  (void)cudaSetDevice(device_);
  // cudaFree waits for the device, so work still using p on our stream finishes first. A failure
  // here (e.g. during process teardown) cannot be reported from a noexcept function.
  (void)cudaFree(p);
}

void CudaMemory::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  use_device(device_);
  SHARDCAL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void CudaMemory::copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  use_device(device_);
  SHARDCAL_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  SHARDCAL_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaMemory::copy_from_host(void* dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  use_device(device_);
  SHARDCAL_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
  // From pinned memory the copy is truly asynchronous; wait so the caller may reuse host_src.
  SHARDCAL_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaMemory::fill_zero(void* dst, std::size_t bytes) {
  if (bytes == 0) return;
  use_device(device_);
  SHARDCAL_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream_));
}

void CudaMemory::copy_box(const BoxCopy& c) {
  const BoxPlan plan = plan_box_copy(c);
  if (plan.empty) return;
  use_device(device_);
  auto* dst = static_cast<std::byte*>(c.dst);
  const auto* src = static_cast<const std::byte*>(c.src);
  if (plan.extent.empty()) {
    // One contiguous run: the copy engine / driver path is as fast as any kernel.
    SHARDCAL_CUDA_CHECK(cudaMemcpyAsync(dst + plan.dst_base, src + plan.src_base,
                                        std::size_t(plan.run) * plan.word, cudaMemcpyDeviceToDevice,
                                        stream_));
    return;
  }
  for (const BoxLaunch& l : split_for_kernel(plan)) {
    const cudaError_t err =
        launch_box_copy(dst + l.dst_offset, src + l.src_offset, plan.word, l.narrow_index, l.args,
                        max_blocks_, stream_, box_kernel_);
    if (err != cudaSuccess)
      throw_cuda_error(err, "box_copy_kernel<<<...>>> (launch_box_copy)", __FILE__, __LINE__);
  }
}

void CudaMemory::synchronize() {
  use_device(device_);
  SHARDCAL_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void* CudaMemory::allocate_async(std::size_t bytes) {
  use_device(device_);
  void* p = nullptr;
  const cudaError_t err = cudaMallocAsync(&p, bytes == 0 ? 1 : bytes, stream_);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error("out of CUDA memory on device " + std::to_string(device_) +
                " allocating a staging buffer of " + std::to_string(bytes) +
                " bytes: " + cuda_error_text(err));
  }
  return p;
}

void CudaMemory::free_async(void* p) noexcept {
  if (p == nullptr) return;
  (void)cudaSetDevice(device_);
  (void)cudaFreeAsync(p, stream_);
}

}  // namespace shardcal::nccl

#pragma once
// Checking of CUDA runtime calls: every failure becomes a shardcal::Error naming the call, the
// CUDA error (name and text) and the source location, so a failure on rank 37 of a cluster job is
// diagnosable from the message alone.
#include <cuda_runtime_api.h>

#include <string>

namespace shardcal::nccl {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);

// "out of memory (cudaErrorMemoryAllocation)"
std::string cuda_error_text(cudaError_t err);

// Number of CUDA devices this process can use; 0 with `why` set when there are none or the
// runtime cannot tell (no driver, CUDA_VISIBLE_DEVICES empty, ...). Never throws.
int cuda_device_count(std::string* why = nullptr);

// Makes `device` current on the calling thread (cheap when it already is), so communicator and
// memory calls work from whatever thread the caller uses.
void use_device(int device);

}  // namespace shardcal::nccl

#define SHARDCAL_CUDA_CHECK(expr)                                                        \
  do {                                                                                   \
    const cudaError_t shardcal_cuda_err_ = (expr);                                       \
    if (shardcal_cuda_err_ != cudaSuccess)                                               \
      ::shardcal::nccl::throw_cuda_error(shardcal_cuda_err_, #expr, __FILE__, __LINE__); \
  } while (0)

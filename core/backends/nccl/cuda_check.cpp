#include "nccl/cuda_check.hpp"

#include <cstring>

#include "shardcal/error.hpp"

namespace shardcal::nccl {

namespace {
// Paths from the build are absolute; keep the part from the project's top-level dirs on.
const char* short_path(const char* file) {
  for (const char* top : {"/core/", "/tests/", "/bench/"}) {
    if (const char* p = std::strstr(file, top)) return p + 1;
  }
  return file;
}
}  // namespace

std::string cuda_error_text(cudaError_t err) {
  return std::string(cudaGetErrorString(err)) + " (" + cudaGetErrorName(err) + ")";
}

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  // Clear a non-sticky error so later, unrelated calls do not report it again.
  (void)cudaGetLastError();
  throw Error("CUDA call " + std::string(call) + " failed: " + cuda_error_text(err) + " at " +
              short_path(file) + ":" + std::to_string(line));
}

int cuda_device_count(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    if (why) *why = "cudaGetDeviceCount failed: " + cuda_error_text(err);
    return 0;
  }
  if (n == 0 && why) *why = "cudaGetDeviceCount returned 0 devices";
  return n;
}

void use_device(int device) {
  int current = -1;
  SHARDCAL_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) SHARDCAL_CUDA_CHECK(cudaSetDevice(device));
}

}  // namespace shardcal::nccl

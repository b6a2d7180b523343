// cuda_device_gate [--min-devices N] <command> [args...]
//
// Runs <command> only where at least N (default 1) CUDA devices are visible. Otherwise prints
// "skipped: no CUDA device (<why>)" (or "skipped: needs N CUDA devices, found M") and exits 77,
// which ctest reports as skipped through SKIP_RETURN_CODE. When devices are there it replaces
// itself with the command (execvp), so exit status and output are the command's own.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {
constexpr int kSkip = 77;

int usage() {
  std::fprintf(stderr, "usage: cuda_device_gate [--min-devices N] <command> [args...]\n");
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  int first = 1;
  int min_devices = 1;
  if (argc > 2 && std::strcmp(argv[1], "--min-devices") == 0) {
    char* end = nullptr;
    const long n = std::strtol(argv[2], &end, 10);
    if (end == argv[2] || *end != '\0' || n < 1) return usage();
    min_devices = int(n);
    first = 3;
  }
  if (first >= argc) return usage();

  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    const std::string why = err != cudaSuccess
                                ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err) +
                                      " (" + cudaGetErrorName(err) + ")"
                                : std::string("cudaGetDeviceCount returned 0");
    std::printf("skipped: no CUDA device (%s)\n", why.c_str());
    return kSkip;
  }
  if (count < min_devices) {
    std::printf("skipped: needs %d CUDA devices, found %d\n", min_devices, count);
    return kSkip;
  }
  std::fflush(stdout);
  execvp(argv[first], argv + first);
  std::fprintf(stderr, "cuda_device_gate: cannot run %s: %s\n", argv[first], std::strerror(errno));
  return 127;
}

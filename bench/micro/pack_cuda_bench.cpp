// pack_cuda_bench [--iters N]
//
// Bandwidth of CudaMemory::copy_box packing a non-leading-dim shard into a contiguous buffer
// (and unpacking it back) next to the device's own copies of the same number of bytes: a flat
// cudaMemcpyAsync (the ceiling: one contiguous run) and cudaMemcpy2DAsync (the driver's pitched
// copy, the same strided pattern for 2-d cases). GB/s = box bytes / time (1e9 B/s), each byte
// read once and written once in every column, so the columns compare directly. Times are the
// median of N iterations, each bracketed by CUDA events on the copy stream. "pack" and "unpack"
// use the default `rows` kernel; "pack flat" the first kernel (box_kernel.hpp), timed in three
// rounds with "pack", alternating which goes first (median round of each); rows/flat = speedup
// of the default.
//
// Without a CUDA device it prints "skipped: no CUDA device (...)" and exits 0.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "nccl/box_plan.hpp"
#include "nccl/cuda_check.hpp"
#include "nccl/cuda_memory.hpp"
#include "shardcal/error.hpp"

namespace {

using shardcal::BoxCopy;
using shardcal::Shape;
using shardcal::nccl::CudaMemory;

struct Case {
  std::string name;
  Shape shape;     // full tensor, row-major
  int dim;         // sharded dim
  int parts;       // shards along dim; the bench packs shard 1 (an interior one)
  std::size_t es;  // element bytes
};

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto e : s) n *= e;
  return n;
}

// Median seconds of `iters` timed runs of enqueue() on `stream`, after 3 warm-up runs.
double median_seconds(cudaStream_t stream, int iters, const std::function<void()>& enqueue) {
  cudaEvent_t start = nullptr, stop = nullptr;
  SHARDCAL_CUDA_CHECK(cudaEventCreate(&start));
  SHARDCAL_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) enqueue();
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    SHARDCAL_CUDA_CHECK(cudaEventRecord(start, stream));
    enqueue();
    SHARDCAL_CUDA_CHECK(cudaEventRecord(stop, stream));
    SHARDCAL_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    SHARDCAL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    t.push_back(double(ms) * 1e-3);
  }
  SHARDCAL_CUDA_CHECK(cudaEventDestroy(start));
  SHARDCAL_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void run_case(CudaMemory& mem, const Case& c, int iters) {
  const std::int64_t extent_d = c.shape[std::size_t(c.dim)] / c.parts;
  Shape extent = c.shape, offset(c.shape.size(), 0), zero(c.shape.size(), 0);
  extent[std::size_t(c.dim)] = extent_d;
  offset[std::size_t(c.dim)] = extent_d;  // shard 1
  const std::size_t full_bytes = std::size_t(numel(c.shape)) * c.es;
  const std::size_t box_bytes = std::size_t(numel(extent)) * c.es;

  shardcal::Buffer tensor(mem, full_bytes), packed(mem, box_bytes), flat(mem, box_bytes);
  mem.fill_zero(tensor.data(), full_bytes);
  mem.fill_zero(packed.data(), box_bytes);
  BoxCopy pack{packed.data(), extent, zero, tensor.data(), c.shape, offset, extent, c.es};
  BoxCopy unpack{tensor.data(), c.shape, offset, packed.data(), extent, zero, extent, c.es};
  const unsigned word = shardcal::nccl::plan_box_copy(pack).word;

  const double t_memcpy = median_seconds(mem.stream(), iters, [&] {
    SHARDCAL_CUDA_CHECK(cudaMemcpyAsync(flat.data(), packed.data(), box_bytes,
                                        cudaMemcpyDeviceToDevice, mem.stream()));
  });
  // The pitched driver copy expresses the pack only when the box is rows x contiguous run,
  // i.e. everything after the sharded dim is contiguous in both arrays.
  double t_2d = 0;
  {
    std::size_t run = c.es;
    for (std::size_t d = std::size_t(c.dim); d < c.shape.size(); ++d) run *= std::size_t(extent[d]);
    const std::size_t rows = box_bytes / run;
    const std::size_t src_pitch =
        run / std::size_t(extent_d) * std::size_t(c.shape[std::size_t(c.dim)]);
    const auto* src = static_cast<const std::byte*>(tensor.data()) + run;  // shard 1
    t_2d = median_seconds(mem.stream(), iters, [&] {
      SHARDCAL_CUDA_CHECK(cudaMemcpy2DAsync(packed.data(), run, src, src_pitch, run, rows,
                                            cudaMemcpyDeviceToDevice, mem.stream()));
    });
  }
  // The two box kernels side by side: three rounds (medians of `iters` runs each), rows first in
  // rounds 0 and 2, flat first in round 1; the median round of each reported.
  std::vector<double> pack_rows, pack_flat;
  auto time_kernel = [&](shardcal::nccl::BoxKernel k, std::vector<double>& out) {
    mem.set_box_kernel(k);
    out.push_back(median_seconds(mem.stream(), iters, [&] { mem.copy_box(pack); }));
  };
  for (int round = 0; round < 3; ++round) {
    if (round % 2 == 0) time_kernel(shardcal::nccl::BoxKernel::rows, pack_rows);
    time_kernel(shardcal::nccl::BoxKernel::flat, pack_flat);
    if (round % 2 == 1) time_kernel(shardcal::nccl::BoxKernel::rows, pack_rows);
  }
  mem.set_box_kernel(shardcal::nccl::BoxKernel::rows);
  std::sort(pack_rows.begin(), pack_rows.end());
  std::sort(pack_flat.begin(), pack_flat.end());
  const double t_pack = pack_rows[1], t_flat = pack_flat[1];
  const double t_unpack = median_seconds(mem.stream(), iters, [&] { mem.copy_box(unpack); });
  auto gbs = [&](double t) { return double(box_bytes) / t / 1e9; };
  std::printf("%-34s %7.1f %6u %11.1f %9.1f %9.1f %9.1f %9.1f %10.2f\n", c.name.c_str(),
              double(box_bytes) / (1 << 20), word, gbs(t_memcpy), gbs(t_2d), gbs(t_pack),
              gbs(t_unpack), gbs(t_flat), t_flat / t_pack);
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
      iters = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: pack_cuda_bench [--iters N]\n");
      return 2;
    }
  }
  std::string why;
  if (shardcal::nccl::cuda_device_count(&why) == 0) {
    std::printf("skipped: no CUDA device (%s)\n", why.c_str());
    return 0;
  }
  try {
    CudaMemory mem(0);
    cudaDeviceProp prop{};
    SHARDCAL_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf(
        "pack/unpack (CudaMemory::copy_box) vs device copies on %s (sm_%d%d), median of "
        "%d runs\n",
        prop.name, prop.major, prop.minor, iters);
    std::printf("%-34s %7s %6s %11s %9s %9s %9s %9s %10s\n", "case (shard 1 of dim d into k)",
                "MiB", "word B", "memcpy GB/s", "memcpy2D", "pack", "unpack", "pack flat",
                "rows/flat");
    const std::vector<Case> cases = {
        {"bf16 8192x8192 d1 k2", {8192, 8192}, 1, 2, 2},
        {"bf16 8192x8192 d1 k8", {8192, 8192}, 1, 8, 2},
        {"f32 4096x4096 d1 k4", {4096, 4096}, 1, 4, 4},
        {"bf16 8192x8190 d1 k2 (odd run)", {8192, 8190}, 1, 2, 2},
        {"u8 64x1024x1024 d1 k8", {64, 1024, 1024}, 1, 8, 1},
        {"f32 64x512x512 d2 k8 (256 B run)", {64, 512, 512}, 2, 8, 4},
        {"f64 16384x1024 d1 k16 (512 B run)", {16384, 1024}, 1, 16, 8},
        // Short runs (a last dim sharded many ways): teams of 1-4 threads in the rows kernel.
        {"f32 65536x1024 d1 k64 (64 B run)", {65536, 1024}, 1, 64, 4},
        {"f32 262144x256 d1 k64 (16 B run)", {262144, 256}, 1, 64, 4},
        {"bf16 262144x256 d1 k64 (8 B run)", {262144, 256}, 1, 64, 2},
    };
    for (const Case& c : cases) run_case(mem, c, iters);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pack_cuda_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

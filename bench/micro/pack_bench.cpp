// Host pack/unpack of shards whose dim is not the leading one (copy_box) against a plain memcpy
// of the same bytes: the overhead a non-leading S(d) adds around a collective.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "shardcal/memory.hpp"

namespace {

using shardcal::BoxCopy;

// A rows x cols f32 matrix; pack column block [c0, c0+w) (S(1) shard of 1/parts) contiguously.
void BM_PackColumnBlock(benchmark::State& state) {
  const std::int64_t rows = state.range(0), cols = state.range(1), parts = state.range(2);
  const std::int64_t w = cols / parts;
  std::vector<float> src(std::size_t(rows * cols), 1.0f), dst(std::size_t(rows * w));
  BoxCopy c{dst.data(), {rows, w}, {0, 0}, src.data(), {rows, cols}, {0, w}, {rows, w}, sizeof(float)};
  for (auto _ : state) {
    shardcal::host_copy_box(c);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * w * std::int64_t(sizeof(float)));
}

void BM_UnpackColumnBlock(benchmark::State& state) {
  const std::int64_t rows = state.range(0), cols = state.range(1), parts = state.range(2);
  const std::int64_t w = cols / parts;
  std::vector<float> src(std::size_t(rows * w), 1.0f), dst(std::size_t(rows * cols));
  BoxCopy c{dst.data(), {rows, cols}, {0, w}, src.data(), {rows, w}, {0, 0}, {rows, w}, sizeof(float)};
  for (auto _ : state) {
    shardcal::host_copy_box(c);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * w * std::int64_t(sizeof(float)));
}

void BM_MemcpySameBytes(benchmark::State& state) {
  const std::int64_t rows = state.range(0), cols = state.range(1), parts = state.range(2);
  const std::size_t bytes = std::size_t(rows * (cols / parts)) * sizeof(float);
  std::vector<char> src(bytes, 1), dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * std::int64_t(bytes));
}

// {rows, cols, parts}: narrow rows (many short runs) to wide rows (few long runs).
#define SHAPES ->Args({4096, 64, 4})->Args({1024, 1024, 4})->Args({256, 16384, 8})->Args({2048, 2048, 2})
BENCHMARK(BM_PackColumnBlock) SHAPES;
BENCHMARK(BM_UnpackColumnBlock) SHAPES;
BENCHMARK(BM_MemcpySameBytes) SHAPES;
#undef SHAPES

// 3-D box out of a 3-D array (odometer over two outer dims).
void BM_PackBox3d(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  std::vector<float> src(std::size_t(n * n * n), 1.0f), dst(std::size_t(n / 2 * n / 2 * n / 2));
  BoxCopy c{dst.data(), {n / 2, n / 2, n / 2}, {0, 0, 0}, src.data(), {n, n, n}, {n / 4, n / 4, n / 4},
            {n / 2, n / 2, n / 2}, sizeof(float)};
  for (auto _ : state) {
    shardcal::host_copy_box(c);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * std::int64_t(dst.size() * sizeof(float)));
}
BENCHMARK(BM_PackBox3d)->Arg(64)->Arg(256);

}  // namespace

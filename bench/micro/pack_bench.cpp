// Host pack/unpack of shards whose dim is not the leading one (host_copy_box) against a plain
// memcpy of the same bytes: the overhead a non-leading S(d) adds around a collective.
//
// BM_PackRatio times, interleaved in one run, four things per round: host_copy_box (the
// kernel), the kernel before the pack/unpack rewrite (pack_legacy.hpp, "old"), the kernel on 2
// threads, and std::memcpy of the same number of bytes between two contiguous buffers, in a new
// random order every round (SHARDCAL_PACK_ROUNDS rounds, default 15). Each timing is one untimed
// call then a batch of about 2 ms (at least 2 calls). Counters (medians over rounds):
//   ratio      median over rounds of t(memcpy) / t(kernel)      (1.0 = as fast as memcpy)
//   ratio_old  the same for main's old kernel
//   ratio_2t   the same for the kernel split over 2 threads (a std::thread per call plus the
//              caller) -- the measurement behind "no threads" in host_box_copy.cpp
//   GBps, GBps_memcpy  box bytes / median time
// bench/scripts/pack_ratio.sh runs it with repetitions and prints one table.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pack_legacy.hpp"
#include "shardcal/formats/median.hpp"
#include "shardcal/memory.hpp"

namespace {

using shardcal::BoxCopy;
using shardcal::Shape;
using Clock = std::chrono::steady_clock;

struct Case {
  const char* name;
  std::size_t es;  // element size in bytes
  Shape shape;     // the full (unsharded) local array
  Shape offset;    // the shard's box in it
  Shape extent;
};

// A rows x cols matrix; column block `which` of `parts` (an S(1) shard).
Case column_block(const char* name, std::int64_t rows, std::int64_t cols, std::int64_t parts,
                  std::size_t es) {
  const std::int64_t w = cols / parts;
  return {name, es, {rows, cols}, {0, w}, {rows, w}};
}

// The micro suite. Names say shape, dtype width and run length (bytes per contiguous run).
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      column_block("4096x64/4 f32 (64B runs)", 4096, 64, 4, 4),
      column_block("1024x1024/4 f32 (1KiB runs)", 1024, 1024, 4, 4),
      column_block("256x16384/8 f64 (16KiB runs)", 256, 16384, 8, 8),
      column_block("2048x2048/2 bf16 (2KiB runs)", 2048, 2048, 2, 2),
      column_block("4096x64/4 bf16 (32B runs)", 4096, 64, 4, 2),
      column_block("4096x64/4 u8 (16B runs)", 4096, 64, 4, 1),
      column_block("2048x2046/2 bf16 (2046B runs)", 2048, 2046, 2, 2),
      column_block("8192x96/4 bf16 (48B runs)", 8192, 96, 4, 2),
      column_block("4096x1024/2 f16 (1KiB runs, 8MiB src)", 4096, 1024, 2, 2),
      {"64^3 box 32^3 f32 (128B runs)", 4, {64, 64, 64}, {16, 16, 16}, {32, 32, 32}},
      {"256^3 box 128^3 f32 (512B runs)", 4, {256, 256, 256}, {64, 64, 64}, {128, 128, 128}},
      {"64x512x512/8 d2 f32 (256B runs)", 4, {64, 512, 512}, {0, 0, 64}, {64, 512, 64}},
  };
  return all;
}

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto e : s) n *= e;
  return n;
}

// The kernel over 2 threads: split the box along its first dim of extent > 1.
void copy_box_2threads(const BoxCopy& c) {
  std::size_t d = 0;
  while (d < c.extent.size() && c.extent[d] < 2) ++d;
  if (d == c.extent.size()) return shardcal::host_copy_box(c);
  BoxCopy a = c, b = c;
  const std::int64_t h = c.extent[d] / 2;
  a.extent[d] = h;
  b.extent[d] = c.extent[d] - h;
  b.src_offset[d] += h;
  b.dst_offset[d] += h;
  std::thread t([&] { shardcal::host_copy_box(b); });
  shardcal::host_copy_box(a);
  t.join();
}

using shardcal::formats::median;

// One untimed call first, so every batch measures its own steady state rather than the caches
// the previous contender left behind.
template <typename F>
double time_batch(F&& f, int reps) {
  f();
  benchmark::ClobberMemory();
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) {
    f();
    benchmark::ClobberMemory();
  }
  return std::chrono::duration<double>(Clock::now() - t0).count() / reps;
}

// state.range(0): case index; state.range(1): 0 pack (box -> contiguous), 1 unpack.
void BM_PackRatio(benchmark::State& state) {
  const Case& k = cases()[std::size_t(state.range(0))];
  const bool unpack = state.range(1) != 0;
  state.SetLabel(std::string(unpack ? "unpack " : "pack ") + k.name);
  const std::size_t full = std::size_t(numel(k.shape)) * k.es;
  const std::size_t bytes = std::size_t(numel(k.extent)) * k.es;
  // Buffers as the executor gets them: host_memory(), 64-byte aligned.
  shardcal::MemorySpace& mem = shardcal::host_memory();
  shardcal::Buffer tb(mem, full), pb(mem, bytes), sb(mem, bytes), db(mem, bytes);
  auto* tensor = static_cast<unsigned char*>(tb.data());
  auto* packed = static_cast<unsigned char*>(pb.data());
  auto* msrc = static_cast<unsigned char*>(sb.data());
  auto* mdst = static_cast<unsigned char*>(db.data());
  for (std::size_t i = 0; i < full; ++i) tensor[i] = static_cast<unsigned char>(i * 7 + 1);
  for (std::size_t i = 0; i < bytes; ++i) mdst[i] = msrc[i] = packed[i] = static_cast<unsigned char>(i * 3 + 2);
  const Shape zero(k.shape.size(), 0);
  const BoxCopy c = unpack ? BoxCopy{tensor, k.shape, k.offset, packed, k.extent, zero, k.extent, k.es}
                           : BoxCopy{packed, k.extent, zero, tensor, k.shape, k.offset, k.extent, k.es};

  auto run_new = [&] { shardcal::host_copy_box(c); };
  auto run_old = [&] { shardcal_bench_legacy::legacy_copy_box(c); };
  auto run_2t = [&] { copy_box_2threads(c); };
  auto run_memcpy = [&] { std::memcpy(mdst, msrc, bytes); };

  // Batch size: about 2 ms of memcpy, at least 2 calls (after warming every path once).
  run_new(), run_old(), run_2t(), run_memcpy();
  const double one = time_batch(run_memcpy, 3);
  const int reps = std::max(2, int(2e-3 / std::max(one, 1e-9)));

  std::vector<double> tn, to, t2, tm, rn, ro, r2;
  std::mt19937 rng(std::uint32_t(state.range(0) * 2 + state.range(1)));
  int order[4] = {0, 1, 2, 3};
  for (auto _ : state) {
    double t[4] = {};
    // A fresh random order every round: no contender always follows the same one.
    std::shuffle(std::begin(order), std::end(order), rng);
    for (int j : order) {
      switch (j) {
        case 0: t[0] = time_batch(run_new, reps); break;
        case 1: t[1] = time_batch(run_old, reps); break;
        case 2: t[2] = time_batch(run_2t, reps); break;
        default: t[3] = time_batch(run_memcpy, reps); break;
      }
    }
    tn.push_back(t[0]), to.push_back(t[1]), t2.push_back(t[2]), tm.push_back(t[3]);
    rn.push_back(t[3] / t[0]), ro.push_back(t[3] / t[1]), r2.push_back(t[3] / t[2]);
    state.SetIterationTime(t[0]);
  }
  state.counters["ratio"] = median(rn);
  state.counters["ratio_old"] = median(ro);
  state.counters["ratio_2t"] = median(r2);
  state.counters["GBps"] = double(bytes) / median(tn) * 1e-9;
  state.counters["GBps_memcpy"] = double(bytes) / median(tm) * 1e-9;
  state.counters["KiB"] = double(bytes) / 1024.0;
}

// Rounds per case: SHARDCAL_PACK_ROUNDS (default 15; micro.short sets 2 to stay quick).
int pack_rounds() {
  const char* e = std::getenv("SHARDCAL_PACK_ROUNDS");
  if (e == nullptr || *e == '\0') return 15;
  char* end = nullptr;
  const long v = std::strtol(e, &end, 10);
  if (*end != '\0' || v < 1 || v > 100000) {
    std::fprintf(stderr, "shardcal_micro: SHARDCAL_PACK_ROUNDS must be an integer in [1, 100000], got '%s'\n", e);
    std::exit(2);
  }
  return int(v);
}

void PackRatioArgs(benchmark::internal::Benchmark* b) {
  for (std::int64_t i = 0; i < std::int64_t(cases().size()); ++i)
    for (std::int64_t dir = 0; dir < 2; ++dir) b->Args({i, dir});
}
// --benchmark_repetitions repeats the whole measurement.
BENCHMARK(BM_PackRatio)->Apply(PackRatioArgs)->Iterations(pack_rounds())->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

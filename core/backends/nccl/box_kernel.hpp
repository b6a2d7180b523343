#pragma once
// The launch-level description of an N-d box copy on a CUDA device, shared by the kernels
// (box_kernel.cu), the host planner (box_plan.cpp) and the host-side tests. The index math (row
// offsets, and the `rows` kernel's split into items) lives here as host+device functions so the
// tests exercise the exact decomposition the kernels use, also on a machine without a GPU.
#include <cuda_runtime_api.h>

#include <cstdint>

#if defined(__CUDACC__)
#define SHARDCAL_HOST_DEVICE __host__ __device__
#else
#define SHARDCAL_HOST_DEVICE
#endif

namespace shardcal::nccl {

// Outer ("row") dims one launch can address; a plan with more is split into several launches
// over its leading dims (see split_for_kernel in box_plan.hpp). Eight covers every box of a
// tensor of rank <= 9 even before dims are merged, so the split is a rare fallback.
inline constexpr int kBoxKernelMaxDims = 8;

// One launch: copy `rows * run` words, where a word is 1, 2, 4, 8 or 16 bytes (chosen by the
// planner from the alignment of both sides). Row r of the row odometer (outermost dim first)
// starts at sum(coord[d] * stride[d]) words from each base pointer; within a row the `run`
// words are contiguous on both sides.
template <class Index>
struct BoxKernelArgs {
  Index total = 0;  // rows * run
  Index run = 0;    // contiguous words per row (>= 1)
  int ndim = 0;     // number of outer dims in use
  Index extent[kBoxKernelMaxDims] = {};
  Index src_stride[kBoxKernelMaxDims] = {};
  Index dst_stride[kBoxKernelMaxDims] = {};
};

// Word offsets (from the launch's base pointers) of the first word of row `row` < total / run.
template <class Index>
SHARDCAL_HOST_DEVICE inline void box_row_offsets(const BoxKernelArgs<Index>& a, Index row,
                                                 Index& src, Index& dst) {
  src = 0;
  dst = 0;
  for (int d = a.ndim - 1; d >= 0; --d) {
    const Index e = a.extent[d];
    const Index q = row / e;
    const Index c = row - q * e;
    src += c * a.src_stride[d];
    dst += c * a.dst_stride[d];
    row = q;
  }
}

// Word offsets (from the launch's base pointers) of flat word index i < total.
template <class Index>
SHARDCAL_HOST_DEVICE inline void box_word_offsets(const BoxKernelArgs<Index>& a, Index i,
                                                  Index& src, Index& dst) {
  const Index row = i / a.run;
  const Index col = i - row * a.run;
  box_row_offsets(a, row, src, dst);
  src += col;
  dst += col;
}

// The `rows` kernel's split of a launch (box_kernel.cu): items of up to kBoxWordsPerThread x T
// contiguous words of one row, T = 2^team_log2 threads per item (the power of two nearest above
// run / kBoxWordsPerThread, at most a block), `chunks` items per row. Host and device share it,
// so the tests check on the host that every word is covered exactly once.
inline constexpr int kBoxThreadsPerBlock = 256;
inline constexpr int kBoxWordsPerThread = 4;
struct BoxRowsSplit {
  int team_log2 = 0;
  std::uint64_t chunks = 1;  // items per row
  std::uint64_t items = 0;   // rows x chunks
};
inline BoxRowsSplit box_rows_split(std::uint64_t run, std::uint64_t total) {
  BoxRowsSplit s;
  while ((std::uint64_t(kBoxWordsPerThread) << s.team_log2) < run &&
         (1 << s.team_log2) < kBoxThreadsPerBlock)
    ++s.team_log2;
  const std::uint64_t chunk_words = std::uint64_t(kBoxWordsPerThread) << s.team_log2;
  s.chunks = (run + chunk_words - 1) / chunk_words;
  s.items = total / run * s.chunks;
  return s;
}
// Row of item `item` and the column of the first word lane `lane` copies in it; the thread's
// words are first + u * T, u < kBoxWordsPerThread, those < run.
template <class Index>
SHARDCAL_HOST_DEVICE inline void box_rows_item(Index item, Index lane, int team_log2, Index chunks,
                                               Index& row, Index& first) {
  row = item / chunks;
  first = (item - row * chunks) * (Index(kBoxWordsPerThread) << team_log2) + lane;
}

// Column of the thread's u-th word in its item (copied when < run).
template <class Index>
SHARDCAL_HOST_DEVICE inline Index box_rows_col(Index first, int u, int team_log2) {
  return first + (Index(u) << team_log2);
}

// Which kernel copies a box. `rows` (the default): a team of threads per piece of a row, the row's
// offsets computed once per piece and each thread keeping several loads in flight. `flat`: the
// first kernel, a grid-stride loop over words with the full index math per word; kept for
// pack_cuda_bench's side-by-side comparison and the tests.
enum class BoxKernel { rows, flat };

// Enqueues one launch on `stream`. `dst`/`src` are the launch's base pointers (already offset),
// aligned to `word_bytes`. `narrow_index` selects 32-bit index math (the planner guarantees
// every offset then fits); it roughly halves the cost of the per-element divisions.
// Returns the launch error (cudaGetLastError) so the caller can report it with context.
cudaError_t launch_box_copy(void* dst, const void* src, unsigned word_bytes, bool narrow_index,
                            const BoxKernelArgs<std::uint64_t>& args, int max_blocks,
                            cudaStream_t stream, BoxKernel kernel);

}  // namespace shardcal::nccl

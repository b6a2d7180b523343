// CUDA kernels of CudaMemory::copy_box. The host planner (box_plan.cpp) has already merged
// contiguous dims and picked the widest word both sides are aligned to (16 bytes where possible).
//
// rows (default): the box is cut into items, an item being up to kBoxWordsPerThread x T contiguous
// words of one row, copied by a team of T threads (a power of two <= the block; T ~ run /
// kBoxWordsPerThread, so short rows get small teams and a warp serves several rows). The row's
// offsets (one division per outer dim) are computed once per item instead of once per word, and
// each thread issues all its loads before its stores, so several loads are in flight per thread.
// flat: the first kernel, one grid-stride loop over words with the full index math per word
// (H100/H200: 0.3-0.5x of a flat copy once runs are <= 2 KiB, docs/PERFORMANCE.md).
#include <cstdint>

#include "nccl/box_kernel.hpp"

namespace shardcal::nccl {
namespace {

template <class Word, class Index>
__global__ void box_copy_flat_kernel(Word* __restrict__ dst, const Word* __restrict__ src,
                                     const BoxKernelArgs<Index> args) {
  const Index stride = Index(gridDim.x) * Index(blockDim.x);
  for (Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x); i < args.total;
       i += stride) {
    Index s = 0, d = 0;
    box_word_offsets(args, i, s, d);
    dst[d] = src[s];
  }
}

// team_log2: log2 of the team size T; chunks: items per row; items: rows x chunks.
template <class Word, class Index>
__global__ void box_copy_rows_kernel(Word* __restrict__ dst, const Word* __restrict__ src,
                                     const BoxKernelArgs<Index> args, int team_log2, Index chunks,
                                     Index items) {
  const int team_size = 1 << team_log2;
  const Index lane = Index(threadIdx.x & (team_size - 1));
  const Index teams = Index(gridDim.x) * Index(blockDim.x >> team_log2);
  for (Index item =
           Index(blockIdx.x) * Index(blockDim.x >> team_log2) + Index(threadIdx.x >> team_log2);
       item < items; item += teams) {
    Index row = 0, first = 0;
    box_rows_item(item, lane, team_log2, chunks, row, first);
    Index s = 0, d = 0;
    box_row_offsets(args, row, s, d);
    Word v[kBoxWordsPerThread];
#pragma unroll
    for (int u = 0; u < kBoxWordsPerThread; ++u) {
      const Index col = box_rows_col(first, u, team_log2);
      if (col < args.run) v[u] = src[s + col];
    }
#pragma unroll
    for (int u = 0; u < kBoxWordsPerThread; ++u) {
      const Index col = box_rows_col(first, u, team_log2);
      if (col < args.run) dst[d + col] = v[u];
    }
  }
}

template <class Index>
BoxKernelArgs<Index> narrow(const BoxKernelArgs<std::uint64_t>& a) {
  BoxKernelArgs<Index> out;
  out.total = Index(a.total);
  out.run = Index(a.run);
  out.ndim = a.ndim;
  for (int d = 0; d < kBoxKernelMaxDims; ++d) {
    out.extent[d] = Index(a.extent[d]);
    out.src_stride[d] = Index(a.src_stride[d]);
    out.dst_stride[d] = Index(a.dst_stride[d]);
  }
  return out;
}

unsigned grid_for(std::uint64_t units, std::uint64_t per_block, int max_blocks) {
  const std::uint64_t wanted = (units + per_block - 1) / per_block;
  return unsigned(wanted < std::uint64_t(max_blocks) ? wanted : std::uint64_t(max_blocks));
}

template <class Word, class Index>
void launch_typed(void* dst, const void* src, const BoxKernelArgs<Index>& args, int max_blocks,
                  cudaStream_t stream, BoxKernel kernel) {
  if (kernel == BoxKernel::flat) {
    box_copy_flat_kernel<Word, Index>
        <<<grid_for(std::uint64_t(args.total), kBoxThreadsPerBlock, max_blocks),
           kBoxThreadsPerBlock, 0, stream>>>(static_cast<Word*>(dst), static_cast<const Word*>(src),
                                             args);
    return;
  }
  const BoxRowsSplit split = box_rows_split(std::uint64_t(args.run), std::uint64_t(args.total));
  const int team_log2 = split.team_log2;
  const std::uint64_t chunks = split.chunks, items = split.items;
  box_copy_rows_kernel<Word, Index>
      <<<grid_for(items, std::uint64_t(kBoxThreadsPerBlock >> team_log2), max_blocks),
         kBoxThreadsPerBlock, 0, stream>>>(static_cast<Word*>(dst), static_cast<const Word*>(src),
                                           args, team_log2, Index(chunks), Index(items));
}

template <class Index>
cudaError_t launch_indexed(void* dst, const void* src, unsigned word_bytes,
                           const BoxKernelArgs<Index>& args, int max_blocks, cudaStream_t stream,
                           BoxKernel kernel) {
  switch (word_bytes) {
    case 1: launch_typed<std::uint8_t>(dst, src, args, max_blocks, stream, kernel); break;
    case 2: launch_typed<std::uint16_t>(dst, src, args, max_blocks, stream, kernel); break;
    case 4: launch_typed<std::uint32_t>(dst, src, args, max_blocks, stream, kernel); break;
    case 8: launch_typed<uint2>(dst, src, args, max_blocks, stream, kernel); break;
    case 16: launch_typed<uint4>(dst, src, args, max_blocks, stream, kernel); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_box_copy(void* dst, const void* src, unsigned word_bytes, bool narrow_index,
                            const BoxKernelArgs<std::uint64_t>& args, int max_blocks,
                            cudaStream_t stream, BoxKernel kernel) {
  if (args.total == 0) return cudaSuccess;
  if (max_blocks < 1) max_blocks = 1;
  if (narrow_index)
    return launch_indexed(dst, src, word_bytes, narrow<std::uint32_t>(args), max_blocks, stream,
                          kernel);
  return launch_indexed(dst, src, word_bytes, args, max_blocks, stream, kernel);
}

}  // namespace shardcal::nccl

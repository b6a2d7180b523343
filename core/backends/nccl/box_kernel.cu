// CUDA kernel of CudaMemory::copy_box. The host planner (box_plan.cpp) has already merged
// contiguous dims and picked the widest word both sides are aligned to, so the kernel is a plain
// grid-stride loop over words: one load and one store per word, 16-byte words where possible.
#include <cstdint>

#include "nccl/box_kernel.hpp"

namespace shardcal::nccl {
namespace {

constexpr int kThreadsPerBlock = 256;

template <class Word, class Index>
__global__ void box_copy_kernel(Word* __restrict__ dst, const Word* __restrict__ src,
                                const BoxKernelArgs<Index> args) {
  const Index stride = Index(gridDim.x) * Index(blockDim.x);
  for (Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x); i < args.total;
       i += stride) {
    Index s = 0, d = 0;
    box_word_offsets(args, i, s, d);
    dst[d] = src[s];
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

template <class Word, class Index>
void launch_typed(void* dst, const void* src, const BoxKernelArgs<Index>& args, int max_blocks,
                  cudaStream_t stream) {
  const std::uint64_t wanted =
      (std::uint64_t(args.total) + kThreadsPerBlock - 1) / kThreadsPerBlock;
  const unsigned blocks = unsigned(wanted < std::uint64_t(max_blocks) ? wanted : max_blocks);
  box_copy_kernel<Word, Index><<<blocks, kThreadsPerBlock, 0, stream>>>(
      static_cast<Word*>(dst), static_cast<const Word*>(src), args);
}

template <class Index>
cudaError_t launch_indexed(void* dst, const void* src, unsigned word_bytes,
                           const BoxKernelArgs<Index>& args, int max_blocks, cudaStream_t stream) {
  switch (word_bytes) {
    case 1: launch_typed<std::uint8_t>(dst, src, args, max_blocks, stream); break;
    case 2: launch_typed<std::uint16_t>(dst, src, args, max_blocks, stream); break;
    case 4: launch_typed<std::uint32_t>(dst, src, args, max_blocks, stream); break;
    case 8: launch_typed<uint2>(dst, src, args, max_blocks, stream); break;
    case 16: launch_typed<uint4>(dst, src, args, max_blocks, stream); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_box_copy(void* dst, const void* src, unsigned word_bytes, bool narrow_index,
                            const BoxKernelArgs<std::uint64_t>& args, int max_blocks,
                            cudaStream_t stream) {
  if (args.total == 0) return cudaSuccess;
  if (max_blocks < 1) max_blocks = 1;
  if (narrow_index)
    return launch_indexed(dst, src, word_bytes, narrow<std::uint32_t>(args), max_blocks, stream);
  return launch_indexed(dst, src, word_bytes, args, max_blocks, stream);
}

}  // namespace shardcal::nccl

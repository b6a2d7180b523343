#pragma once
// Host-side planning of an N-d box copy for the CUDA kernel: the shared validation and dim
// collapse (shardcal/box_copy.hpp, as host_copy_box), then word size selection and the split
// into launches. Pure C++ (no CUDA calls) so it is unit-tested on machines without a GPU.
#include <cstdint>
#include <vector>

#include "nccl/box_kernel.hpp"
#include "shardcal/memory.hpp"

namespace shardcal::nccl {

struct BoxPlan {
  bool empty = false;         // some extent is 0: nothing to copy
  unsigned word = 1;          // bytes per word: 1, 2, 4, 8 or 16
  std::int64_t src_base = 0;  // byte offset of the box's first element in src
  std::int64_t dst_base = 0;  // byte offset of the box's first element in dst
  std::int64_t run = 1;       // contiguous words per row
  // Outer dims after merging, outermost first; strides in words. Empty: one contiguous run.
  std::vector<std::int64_t> extent, src_stride, dst_stride;

  std::int64_t rows() const;
  std::int64_t total_words() const { return rows() * run; }
};

// Validates and collapses c (collapse_box: the checks, messages and runs of host_copy_box) and
// plans it. The word size depends on
// the addresses c.src / c.dst, so plan with the pointers that will be copied.
BoxPlan plan_box_copy(const BoxCopy& c);

// One kernel launch of a plan: byte offsets of its base from c.src / c.dst, and its arguments.
struct BoxLaunch {
  std::int64_t src_offset = 0;
  std::int64_t dst_offset = 0;
  bool narrow_index = false;  // every word offset and the total fit in 31 bits
  BoxKernelArgs<std::uint64_t> args;
};
// Splits a non-empty plan with outer dims into launches of at most kBoxKernelMaxDims outer dims
// each (one launch unless the plan has more dims than that).
std::vector<BoxLaunch> split_for_kernel(const BoxPlan& plan);

}  // namespace shardcal::nccl

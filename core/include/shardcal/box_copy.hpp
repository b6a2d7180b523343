#pragma once
// The rules every memory space's copy_box shares (host: core/src/host_box_copy.cpp; CUDA:
// core/backends/nccl/box_plan.cpp): one validation, so both accept the same boxes with the same
// messages, and one collapse of the box into contiguous runs over strided outer dims, so both
// copy the same runs. No copying here: each space turns the collapsed box into its own loops.
//
// Example (a pack of the upper half of the last dim): f32 box extent {4, 6, 4} at {0, 0, 4} of
// a {4, 6, 8} source, into a {4, 6, 4} destination at {0, 0, 0}. Dims 0 and 1 merge (stepping
// dim 0 is stepping dim 1 through its whole extent, in both arrays); dim 2 is the run:
//   run 16 B, src_base 16 B, dst_base 0, one outer dim {extent 24, src_stride 32, dst_stride 16}.
#include <cstddef>
#include <cstdint>

#include "shardcal/memory.hpp"

namespace shardcal {

namespace detail {
enum class BoxFault { InconsistentRanks, ElementSizeZero, OutOfBounds };
// Throws the Error for a fault (out of line: the message is built only on failure).
[[noreturn]] void throw_box_fault(BoxFault fault, std::size_t dim);
}  // namespace detail

// Checks a box copy's shapes. Throws Error "internal: copy_box with inconsistent ranks" (shape,
// offset and extent vectors of different lengths), "... with element size 0", or "... out of
// bounds on dim D" (a negative extent or offset, or the box leaving either array; the first such
// dim). Returns false at the first dim whose extent is 0 (nothing to copy; later dims are not
// checked), true otherwise. Inline: a call here cost the host copy of a small box about 30
// instructions (of about 260) at -O3, measured with callgrind.
inline bool check_box(const BoxCopy& c) {
  const std::size_t nd = c.extent.size();
  if (c.src_shape.size() != nd || c.dst_shape.size() != nd || c.src_offset.size() != nd ||
      c.dst_offset.size() != nd)
    detail::throw_box_fault(detail::BoxFault::InconsistentRanks, 0);
  if (c.elem_size == 0) detail::throw_box_fault(detail::BoxFault::ElementSizeZero, 0);
  for (std::size_t d = 0; d < nd; ++d) {
    if (c.extent[d] == 0) return false;
    if (c.extent[d] < 0 || c.src_offset[d] < 0 || c.src_offset[d] + c.extent[d] > c.src_shape[d] ||
        c.dst_offset[d] < 0 || c.dst_offset[d] + c.extent[d] > c.dst_shape[d])
      detail::throw_box_fault(detail::BoxFault::OutOfBounds, d);
  }
  return true;
}

// One strided outer dim of a collapsed box: `extent` steps of `src_stride` / `dst_stride` bytes.
struct BoxDim {
  std::int64_t extent, src_stride, dst_stride;
};

struct BoxRuns {
  bool empty = false;         // some extent is 0: nothing to copy, no outer dims reported
  std::int64_t src_base = 0;  // byte offset of the box's first element in c.src
  std::int64_t dst_base = 0;  // byte offset of the box's first element in c.dst
  std::int64_t run = 0;       // contiguous bytes per run (at least elem_size)
};

// Validates c (check_box) and collapses it: extent-1 dims only move the base; the innermost dims
// contiguous in both arrays become the run; adjacent outer dims merge when stepping the outer
// one equals stepping the inner one through its whole extent, in both arrays. Calls
// outer_dim(const BoxDim&) once per remaining outer dim, innermost first (so at most
// c.extent.size() times; none for an empty box). A template so the host copy's per-call
// collapse stays inline and allocation-free; the callback decides where the dims go.
template <class OuterDim>
BoxRuns collapse_box(const BoxCopy& c, OuterDim&& outer_dim) {
  BoxRuns r;
  if (!check_box(c)) {
    r.empty = true;
    return r;
  }
  const auto es = std::int64_t(c.elem_size);
  std::int64_t sstr = es, dstr = es;  // byte strides of dim k in both arrays
  r.run = es;
  bool run_open = true;     // still growing the contiguous run
  BoxDim pending{0, 0, 0};  // the outer dim being merged into; extent 0: none yet
  for (std::size_t k = c.extent.size(); k-- > 0;) {
    const std::int64_t e = c.extent[k];
    r.src_base += c.src_offset[k] * sstr;
    r.dst_base += c.dst_offset[k] * dstr;
    if (e != 1) {
      if (run_open && sstr == r.run && dstr == r.run) {
        r.run *= e;  // contiguous with the run in both arrays
      } else {
        run_open = false;
        if (pending.extent != 0 && pending.src_stride * pending.extent == sstr &&
            pending.dst_stride * pending.extent == dstr) {
          pending.extent *= e;  // merges with the inner outer dim
        } else {
          if (pending.extent != 0) outer_dim(pending);
          pending = {e, sstr, dstr};
        }
      }
    }
    // A dim the box does not fully cover ends the contiguous run.
    if (e != c.src_shape[k] || e != c.dst_shape[k]) run_open = false;
    sstr *= c.src_shape[k];
    dstr *= c.dst_shape[k];
  }
  if (pending.extent != 0) outer_dim(pending);
  return r;
}

}  // namespace shardcal

#include "nccl/box_plan.hpp"

#include <numeric>
#include <string>

#include "shardcal/error.hpp"

namespace shardcal::nccl {

std::int64_t BoxPlan::rows() const {
  std::int64_t r = 1;
  for (auto e : extent) r *= e;
  return r;
}

namespace {

struct Dim {
  std::int64_t extent, src_stride, dst_stride;  // strides in elements until the word is known
};

std::uint64_t gcd_u64(std::uint64_t a, std::uint64_t b) { return std::gcd(a, b); }

}  // namespace

BoxPlan plan_box_copy(const BoxCopy& c) {
  const std::size_t nd = c.extent.size();
  if (c.src_shape.size() != nd || c.dst_shape.size() != nd || c.src_offset.size() != nd ||
      c.dst_offset.size() != nd)
    throw Error("internal: copy_box with inconsistent ranks");
  if (c.elem_size == 0) throw Error("internal: copy_box with element size 0");
  BoxPlan plan;
  for (std::size_t d = 0; d < nd; ++d) {
    if (c.extent[d] == 0) {
      plan.empty = true;
      return plan;
    }
    if (c.extent[d] < 0 || c.src_offset[d] < 0 || c.src_offset[d] + c.extent[d] > c.src_shape[d] ||
        c.dst_offset[d] < 0 || c.dst_offset[d] + c.extent[d] > c.dst_shape[d])
      throw Error("internal: copy_box out of bounds on dim " + std::to_string(d));
  }

  // Row-major element strides and the element offset of the box's corner on both sides.
  std::vector<std::int64_t> ss(nd, 1), ds(nd, 1);
  for (std::size_t d = nd; d-- > 1;) {
    ss[d - 1] = ss[d] * c.src_shape[d];
    ds[d - 1] = ds[d] * c.dst_shape[d];
  }
  std::int64_t src_base = 0, dst_base = 0;
  for (std::size_t d = 0; d < nd; ++d) {
    src_base += c.src_offset[d] * ss[d];
    dst_base += c.dst_offset[d] * ds[d];
  }
  const auto es = std::int64_t(c.elem_size);
  plan.src_base = src_base * es;
  plan.dst_base = dst_base * es;

  // Extent-1 dims only shift the corner, which is already in the bases. Adjacent dims merge
  // when stepping the outer one equals stepping the inner one through its whole extent on both
  // sides; this covers the host version's "trailing dims copied whole" and also whole dims in
  // the middle, so the kernel does fewer divisions per element.
  std::vector<Dim> dims;
  for (std::size_t d = 0; d < nd; ++d)
    if (c.extent[d] != 1) dims.push_back({c.extent[d], ss[d], ds[d]});
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (!merged.empty()) {
      Dim& outer = merged.back();
      if (outer.src_stride == d.src_stride * d.extent &&
          outer.dst_stride == d.dst_stride * d.extent) {
        outer = {outer.extent * d.extent, d.src_stride, d.dst_stride};
        continue;
      }
    }
    merged.push_back(d);
  }
  // The innermost dim is the contiguous run when it has unit stride on both sides (always, in
  // row-major arrays, unless the true innermost dim had extent 1 and was dropped).
  std::int64_t run_elems = 1;
  if (!merged.empty() && merged.back().src_stride == 1 && merged.back().dst_stride == 1) {
    run_elems = merged.back().extent;
    merged.pop_back();
  }

  // Widest word (<= 16 bytes) dividing every byte quantity the kernel steps by: the run, the
  // outer strides and both absolute start addresses.
  auto g = std::uint64_t(run_elems * es);
  g = gcd_u64(g, reinterpret_cast<std::uintptr_t>(c.src) + std::uint64_t(plan.src_base));
  g = gcd_u64(g, reinterpret_cast<std::uintptr_t>(c.dst) + std::uint64_t(plan.dst_base));
  for (const Dim& d : merged) {
    g = gcd_u64(g, std::uint64_t(d.src_stride * es));
    g = gcd_u64(g, std::uint64_t(d.dst_stride * es));
  }
  unsigned word = 16;
  while (word > 1 && g % word != 0) word /= 2;
  plan.word = word;
  plan.run = run_elems * es / word;
  for (const Dim& d : merged) {
    plan.extent.push_back(d.extent);
    plan.src_stride.push_back(d.src_stride * es / word);
    plan.dst_stride.push_back(d.dst_stride * es / word);
  }
  return plan;
}

std::vector<BoxLaunch> split_for_kernel(const BoxPlan& plan) {
  std::vector<BoxLaunch> out;
  if (plan.empty) return out;
  const std::size_t nd = plan.extent.size();
  // Leading dims beyond what one launch addresses are iterated here, one launch per coordinate.
  const std::size_t lead = nd > std::size_t(kBoxKernelMaxDims) ? nd - kBoxKernelMaxDims : 0;
  const std::int64_t w = plan.word;

  BoxKernelArgs<std::uint64_t> args;
  args.run = std::uint64_t(plan.run);
  args.ndim = int(nd - lead);
  std::uint64_t rows = 1;
  auto src_span = std::uint64_t(plan.run);
  auto dst_span = src_span;
  for (std::size_t d = lead; d < nd; ++d) {
    const std::size_t k = d - lead;
    args.extent[k] = std::uint64_t(plan.extent[d]);
    args.src_stride[k] = std::uint64_t(plan.src_stride[d]);
    args.dst_stride[k] = std::uint64_t(plan.dst_stride[d]);
    rows *= args.extent[k];
    src_span += (args.extent[k] - 1) * args.src_stride[k];
    dst_span += (args.extent[k] - 1) * args.dst_stride[k];
  }
  args.total = rows * args.run;
  // 31 bits, not 32: the grid-stride loop adds up to one grid of threads past `total`.
  constexpr std::uint64_t kNarrowLimit = std::uint64_t(1) << 31;
  const bool narrow =
      args.total < kNarrowLimit && src_span < kNarrowLimit && dst_span < kNarrowLimit;

  std::vector<std::int64_t> idx(lead, 0);
  while (true) {
    BoxLaunch l;
    l.src_offset = plan.src_base;
    l.dst_offset = plan.dst_base;
    for (std::size_t d = 0; d < lead; ++d) {
      l.src_offset += idx[d] * plan.src_stride[d] * w;
      l.dst_offset += idx[d] * plan.dst_stride[d] * w;
    }
    l.narrow_index = narrow;
    l.args = args;
    out.push_back(l);
    std::size_t d = lead;
    while (d > 0) {
      --d;
      if (++idx[d] < plan.extent[d]) break;
      idx[d] = 0;
      if (d == 0) return out;
    }
    if (lead == 0) return out;
  }
}

}  // namespace shardcal::nccl

#include "nccl/box_plan.hpp"

#include <numeric>

#include "shardcal/box_copy.hpp"

namespace shardcal::nccl {

std::int64_t BoxPlan::rows() const {
  std::int64_t r = 1;
  for (auto e : extent) r *= e;
  return r;
}

namespace {

std::uint64_t gcd_u64(std::uint64_t a, std::uint64_t b) { return std::gcd(a, b); }

}  // namespace

BoxPlan plan_box_copy(const BoxCopy& c) {
  // Validation and collapse are shared with the host copy (shardcal/box_copy.hpp): the same
  // boxes are refused with the same messages, and both copy the same runs. Outer dims arrive
  // innermost first, in bytes.
  std::vector<BoxDim> outer;
  const BoxRuns box = collapse_box(c, [&](const BoxDim& d) { outer.push_back(d); });
  BoxPlan plan;
  if (box.empty) {
    plan.empty = true;
    return plan;
  }
  plan.src_base = box.src_base;
  plan.dst_base = box.dst_base;

  // Widest word (<= 16 bytes) dividing every byte quantity the kernel steps by: the run, the
  // outer strides and both absolute start addresses.
  auto g = std::uint64_t(box.run);
  g = gcd_u64(g, reinterpret_cast<std::uintptr_t>(c.src) + std::uint64_t(plan.src_base));
  g = gcd_u64(g, reinterpret_cast<std::uintptr_t>(c.dst) + std::uint64_t(plan.dst_base));
  for (const BoxDim& d : outer) {
    g = gcd_u64(g, std::uint64_t(d.src_stride));
    g = gcd_u64(g, std::uint64_t(d.dst_stride));
  }
  unsigned word = 16;
  while (word > 1 && g % word != 0) word /= 2;
  plan.word = word;
  plan.run = box.run / word;
  for (auto d = outer.rbegin(); d != outer.rend(); ++d) {  // outermost first
    plan.extent.push_back(d->extent);
    plan.src_stride.push_back(d->src_stride / word);
    plan.dst_stride.push_back(d->dst_stride / word);
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

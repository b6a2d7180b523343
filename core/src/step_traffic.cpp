// What one plan step moves (shardcal/plan.hpp: describe_step). The executor passes exactly
// these counts to the collectives (core/src/execute.cpp computes them with the same box
// arithmetic); tests/unit/test_step_traffic.cpp checks them against an element-by-element count.
#include <algorithm>
#include <functional>

#include "shardcal/error.hpp"
#include "shardcal/plan.hpp"

namespace shardcal {

std::vector<std::int64_t> step_group_counts(const Step& step, int rank) {
  const int i = step.mesh_dim;
  const std::vector<int> g = step.before.mesh().group(rank, {i});
  const std::size_t m = g.size();
  std::vector<std::int64_t> c;
  switch (step.kind) {
    case StepKind::AllGather:
      for (int r : g) c.push_back(step.before.local_numel(r));
      break;
    case StepKind::AllReduce: c.assign(m, step.before.local_numel(rank)); break;
    case StepKind::ReduceScatter:
      for (int r : g) c.push_back(step.after.local_numel(r));
      break;
    case StepKind::AllToAll:
      c.assign(m * m, 0);
      for (std::size_t s = 0; s < m; ++s) {
        const Box from = step.before.local_box(g[s]);
        for (std::size_t d = 0; d < m; ++d)
          c[s * m + d] = intersect(from, step.after.local_box(g[d])).numel();
      }
      break;
    case StepKind::LocalSlice:
    case StepKind::LocalPartial:
    case StepKind::LocalEmbedPartial: break;
  }
  return c;
}

bool pieces_contiguous(const Box& block, int dim) {
  for (int x = 0; x < dim; ++x)
    if (block.shape[std::size_t(x)] != 1) return false;
  return true;
}

std::int64_t step_copy_bytes(const Step& step, int rank) {
  const std::int64_t es = std::int64_t(dtype_size(step.before.meta().dtype));
  switch (step.kind) {
    case StepKind::AllGather:
      return pieces_contiguous(step.after.local_box(rank), step.before.placement(step.mesh_dim).dim)
                 ? 0
                 : step.after.local_numel(rank) * es;
    case StepKind::ReduceScatter:
      return pieces_contiguous(step.before.local_box(rank), step.after.placement(step.mesh_dim).dim)
                 ? 0
                 : step.before.local_numel(rank) * es;
    case StepKind::AllToAll:
      return (step.before.local_numel(rank) + step.after.local_numel(rank)) * es;
    case StepKind::AllReduce:
    case StepKind::LocalSlice:
    case StepKind::LocalPartial:
    case StepKind::LocalEmbedPartial: return 0;
  }
  return 0;
}

StepTraffic describe_step(const Step& step) {
  if (const std::string why = step_problem(step); !why.empty())
    throw Error("cannot describe step on mesh dim " + std::to_string(step.mesh_dim) + " (" +
                step_kind_name(step.kind) + "): " + why);
  const DeviceMesh& mesh = step.before.mesh();
  const int i = step.mesh_dim;
  StepTraffic t;
  t.kind = step.kind;
  t.collective = step_collective(step.kind);
  t.mesh_dim = i;
  t.group_size = mesh.extent(i);
  t.groups = mesh.size() / t.group_size;
  t.elem_size = dtype_size(step.before.meta().dtype);
  if (!t.collective) return t;
  for (int r = 0; r < mesh.size(); ++r)
    t.max_copy_bytes = std::max(t.max_copy_bytes, step_copy_bytes(step, r));
  const std::int64_t es = std::int64_t(t.elem_size);
  const std::size_t m = std::size_t(t.group_size);
  bool first = true;
  std::vector<std::int64_t> first_counts;
  std::int64_t best = -1;
  t.plain_groups = 0;
  for (int r = 0; r < mesh.size(); ++r) {
    if (mesh.group_position(r, {i}) != 0) continue;  // one representative per group
    const std::vector<std::int64_t> c = step_group_counts(step, r);
    if (first) first_counts = c, first = false;
    else if (c != first_counts) t.groups_identical = false;
    // The executor's per-group choice: plain call iff this group's counts are all equal (for
    // all_to_all the whole m x m matrix, as execute.cpp checks it).
    const bool even = std::adjacent_find(c.begin(), c.end(), std::not_equal_to<>()) == c.end();
    if (even) ++t.plain_groups;
    else t.uniform = false;
    std::int64_t sum = 0;
    for (std::int64_t x : c) sum += x;
    std::int64_t bytes = 0;
    switch (step.kind) {
      case StepKind::AllGather:
      case StepKind::ReduceScatter: bytes = sum * es; break;
      case StepKind::AllReduce: bytes = c[0] * es; break;
      case StepKind::AllToAll:
        for (std::size_t s = 0; s < m; ++s) {
          std::int64_t row = 0;
          for (std::size_t d = 0; d < m; ++d) row += c[s * m + d];
          bytes = std::max(bytes, row * es);
        }
        break;
      default: break;
    }
    const int color = mesh.group_color(r, {i});
    if (bytes > best || (bytes == best && color < t.heaviest_group)) {
      best = bytes;
      t.bytes = bytes;
      t.counts = c;
      t.heaviest_group = color;
      t.heaviest_uniform = even;
    }
    const std::int64_t mm = std::int64_t(m);
    for (std::size_t p = 0; p < m; ++p) {
      std::int64_t send = 0, recv = 0;
      switch (step.kind) {
        case StepKind::AllGather: send = c[p] * (mm - 1), recv = sum - c[p]; break;
        case StepKind::ReduceScatter: send = sum - c[p], recv = c[p] * (mm - 1); break;
        case StepKind::AllReduce: send = recv = c[p] * (mm - 1); break;
        case StepKind::AllToAll:
          for (std::size_t q = 0; q < m; ++q)
            if (q != p) send += c[p * m + q], recv += c[q * m + p];
          break;
        default: break;
      }
      t.max_send_bytes = std::max(t.max_send_bytes, send * es);
      t.max_recv_bytes = std::max(t.max_recv_bytes, recv * es);
    }
  }
  return t;
}

}  // namespace shardcal

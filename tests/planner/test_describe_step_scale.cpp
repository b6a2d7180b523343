// describe_step computes a step's traffic per distinct group shape (core/src/step_traffic.cpp);
// this checks every field against the per-rank computation it replaced (kept here as the
// reference: one group per rank of group position 0, every rank's block from local_box, itself
// checked against an independent split) over
// random specs on 1-4-D meshes of up to 96 ranks (and legal_steps against building and checking
// every candidate with step_problem): uneven and empty shards, explicit sizes,
// nested sharding, every legal step plus steps onto explicit-size targets.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <random>

#include "shardcal/error.hpp"
#include "shardcal/plan.hpp"

using namespace shardcal;

namespace {

// A rank's block, computed without the library's split code (which the reference below relies
// on through local_box): torch.chunk's sizes listed the way torch.chunk builds them (ceil-sized
// chunks until the extent runs out, then empty ones), or the explicit sizes, laid end to end.
Box independent_box(const TensorSpec& spec, int rank) {
  const DeviceMesh& mesh = spec.mesh();
  const std::vector<int> coord = mesh.coord(rank);
  Box b{Shape(spec.meta().shape.size(), 0), spec.meta().shape};
  for (int j = 0; j < mesh.ndim(); ++j) {
    const Placement& p = spec.placement(j);
    if (!p.is_shard()) continue;
    const std::size_t d = std::size_t(p.dim);
    const int m = mesh.extent(j);
    std::vector<std::int64_t> sizes = p.sizes;
    if (sizes.empty()) {
      const std::int64_t chunk = b.shape[d] / m + (b.shape[d] % m != 0);
      for (std::int64_t left = b.shape[d]; int(sizes.size()) < m; left -= sizes.back())
        sizes.push_back(std::min(chunk, left));
    }
    std::int64_t start = 0;
    for (int k = 0; k < coord[std::size_t(j)]; ++k) start += sizes[std::size_t(k)];
    b.offset[d] += start;
    b.shape[d] = sizes[std::size_t(coord[std::size_t(j)])];
  }
  return b;
}

// The per-rank describe_step (before it walked distinct group shapes), field for field.
StepTraffic describe_step_per_rank(const Step& step) {
  const DeviceMesh& mesh = step.before.mesh();
  const int i = step.mesh_dim;
  StepTraffic t;
  t.kind = step.kind;
  t.collective = step_collective(step.kind);
  t.mesh_dim = i;
  t.group_size = mesh.extent(i);
  t.groups = mesh.size() / t.group_size;
  t.elem_size = dtype_size(step.before.meta().dtype);
  for (int r = 0; r < mesh.size(); ++r)
    t.max_out_bytes = std::max(t.max_out_bytes, step.after.local_nbytes(r));
  if (!t.collective) return t;
  for (int r = 0; r < mesh.size(); ++r)
    t.max_copy_bytes = std::max(t.max_copy_bytes, step_copy_bytes(step, r));
  const std::int64_t es = std::int64_t(t.elem_size);
  const std::size_t m = std::size_t(t.group_size);
  bool first = true;
  std::vector<std::int64_t> first_counts;
  std::int64_t best = -1;
  for (int r = 0; r < mesh.size(); ++r) {
    if (mesh.group_position(r, {i}) != 0) continue;
    const std::vector<std::int64_t> c = step_group_counts(step, r);
    if (first) first_counts = c, first = false;
    else if (c != first_counts) t.groups_identical = false;
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

// The legal_steps that built every candidate and asked step_problem, as it was before the
// checks moved onto the canonical placements.
std::vector<Step> legal_steps_by_step_problem(const TensorSpec& spec) {
  std::vector<Step> out;
  const TensorSpec canon(spec.mesh(), canonical_placements(spec), spec.meta());
  for (int i = 0; i < spec.mesh().ndim(); ++i) {
    if (spec.mesh().extent(i) == 1) continue;
    std::vector<Placement> targets{Placement::replicate()};
    for (ReduceOp op : kAllReduceOps) targets.push_back(Placement::partial(op));
    for (int d = 0; d < spec.ndim(); ++d) targets.push_back(Placement::shard(d));
    for (const Placement& t : targets)
      for (StepKind k : {StepKind::AllGather, StepKind::AllReduce, StepKind::ReduceScatter,
                         StepKind::AllToAll, StepKind::LocalSlice, StepKind::LocalPartial,
                         StepKind::LocalEmbedPartial}) {
        std::optional<TensorSpec> after;
        try {
          after = canon.with_placement(i, t);
        } catch (const Error&) {
          continue;
        }
        Step st{i, k, spec, *after};
        if (step_problem(st).empty()) out.push_back(std::move(st));
      }
  }
  return out;
}

std::vector<std::int64_t> composition(std::mt19937_64& rng, std::int64_t total, int parts) {
  std::vector<std::int64_t> s(std::size_t(parts), 0);
  for (std::int64_t k = 0; k < total; ++k)
    ++s[std::uniform_int_distribution<std::size_t>(0, std::size_t(parts) - 1)(rng)];
  return s;
}

// Explicit sizes for mesh dim i sharding tensor dim d, when every rank's parent extent agrees.
std::optional<Placement> explicit_shard(std::mt19937_64& rng, const TensorSpec& spec, int i, int d) {
  const TensorSpec tmp = spec.with_placement(i, Placement::shard(d));
  const std::int64_t parent = tmp.parent_extent(0, i, d).size;
  for (int r = 0; r < spec.mesh().size(); ++r)
    if (tmp.parent_extent(r, i, d).size != parent) return std::nullopt;
  return Placement::shard(d, composition(rng, parent, spec.mesh().extent(i)));
}

TensorSpec random_spec(std::mt19937_64& rng, const DeviceMesh& mesh, const TensorMeta& meta) {
  TensorSpec spec(mesh, std::vector<Placement>(std::size_t(mesh.ndim()), Placement::replicate()),
                  meta);
  const int nd = int(meta.shape.size());
  for (int i = 0; i < mesh.ndim(); ++i) {
    const int kind = std::uniform_int_distribution<int>(0, 6)(rng);
    if (kind == 0 || nd == 0) continue;
    if (kind == 1) {
      spec = spec.with_placement(i, Placement::partial(kAllReduceOps[std::uniform_int_distribution<int>(0, 3)(rng)]));
      continue;
    }
    // Favour tensor dim 0 so that nested sharding is common.
    const int d = kind <= 3 ? 0 : std::uniform_int_distribution<int>(0, nd - 1)(rng);
    std::optional<Placement> p;
    if (kind >= 5) p = explicit_shard(rng, spec, i, d);
    spec = spec.with_placement(i, p ? *p : Placement::shard(d));
  }
  return spec;
}

void expect_same(const StepTraffic& a, const StepTraffic& b, const std::string& what) {
  EXPECT_EQ(a.kind, b.kind) << what;
  EXPECT_EQ(a.collective, b.collective) << what;
  EXPECT_EQ(a.mesh_dim, b.mesh_dim) << what;
  EXPECT_EQ(a.group_size, b.group_size) << what;
  EXPECT_EQ(a.groups, b.groups) << what;
  EXPECT_EQ(a.counts, b.counts) << what;
  EXPECT_EQ(a.heaviest_group, b.heaviest_group) << what;
  EXPECT_EQ(a.groups_identical, b.groups_identical) << what;
  EXPECT_EQ(a.uniform, b.uniform) << what;
  EXPECT_EQ(a.plain_groups, b.plain_groups) << what;
  EXPECT_EQ(a.heaviest_uniform, b.heaviest_uniform) << what;
  EXPECT_EQ(a.elem_size, b.elem_size) << what;
  EXPECT_EQ(a.bytes, b.bytes) << what;
  EXPECT_EQ(a.max_send_bytes, b.max_send_bytes) << what;
  EXPECT_EQ(a.max_recv_bytes, b.max_recv_bytes) << what;
  EXPECT_EQ(a.max_copy_bytes, b.max_copy_bytes) << what;
  EXPECT_EQ(a.max_out_bytes, b.max_out_bytes) << what;
}

}  // namespace

TEST(DescribeStepAtScale, EqualsThePerRankComputation) {
  std::mt19937_64 rng(20261124);
  const DType dtypes[] = {DType::F32, DType::BF16, DType::U8, DType::I64};
  int steps = 0, collectives = 0, mixed = 0, differ = 0, nested = 0, explicit_targets = 0, a2a = 0,
      copies = 0;
  for (int spec_no = 0; spec_no < 3000; ++spec_no) {
    std::vector<int> shape;
    int total = 1;
    const int mdims = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int d = 0; d < mdims; ++d) {
      const int e = std::uniform_int_distribution<int>(1, std::max(1, std::min(6, 96 / total)))(rng);
      shape.push_back(e);
      total *= e;
    }
    const DeviceMesh mesh(shape);
    Shape tshape;
    const int nd = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int d = 0; d < nd; ++d)
      tshape.push_back(std::uniform_int_distribution<std::int64_t>(0, 13)(rng));
    const TensorMeta meta{tshape, dtypes[std::uniform_int_distribution<int>(0, 3)(rng)]};
    const TensorSpec from = random_spec(rng, mesh, meta);
    for (int r = 0; r < mesh.size(); ++r)
      ASSERT_EQ(from.local_box(r), independent_box(from, r)) << from.serialize() << " rank " << r;
    std::vector<Step> cands = legal_steps(from);
    {
      const std::vector<Step> want = legal_steps_by_step_problem(from);
      ASSERT_EQ(cands.size(), want.size()) << from.serialize();
      for (std::size_t k = 0; k < want.size(); ++k) {
        EXPECT_EQ(cands[k].mesh_dim, want[k].mesh_dim) << from.serialize();
        EXPECT_EQ(cands[k].kind, want[k].kind) << from.serialize();
        EXPECT_EQ(cands[k].after.serialize(), want[k].after.serialize()) << from.serialize();
        EXPECT_EQ(cands[k].before.serialize(), want[k].before.serialize()) << from.serialize();
      }
    }
    // Steps onto explicit-size targets (the cost-based planner offers them; legal_steps does not).
    for (int i = 0; i < mesh.ndim() && nd > 0; ++i) {
      if (mesh.extent(i) == 1) continue;
      const int d = std::uniform_int_distribution<int>(0, nd - 1)(rng);
      std::optional<Placement> p;
      try {
        p = explicit_shard(rng, from, i, d);
      } catch (const Error&) {
        continue;
      }
      if (!p) continue;
      const Placement& cur = from.placement(i);
      const StepKind k = cur.is_shard()     ? StepKind::AllToAll
                         : cur.is_partial() ? StepKind::ReduceScatter
                                            : StepKind::LocalSlice;
      try {
        Step st{i, k, from, from.with_placement(i, *p)};
        if (step_problem(st).empty()) cands.push_back(std::move(st)), ++explicit_targets;
      } catch (const Error&) {
      }
    }
    for (int i = 0; i < mesh.ndim(); ++i)
      for (int j = i + 1; j < mesh.ndim(); ++j)
        nested += from.placement(i).is_shard() && mesh.extent(i) > 1 && mesh.extent(j) > 1 &&
                  from.placement(j).is_shard(from.placement(i).dim);
    for (const Step& st : cands) {
      const StepTraffic want = describe_step_per_rank(st);
      const StepTraffic got = describe_step(st);
      expect_same(got, want,
                  st.before.serialize() + " -> " + placements_to_string(st.after.placements()) +
                      " (" + step_kind_name(st.kind) + " on mesh dim " +
                      std::to_string(st.mesh_dim) + ")");
      ++steps;
      collectives += bool(want.collective);
      mixed += want.plain_groups > 0 && want.plain_groups < want.groups;
      differ += !want.groups_identical;
      a2a += st.kind == StepKind::AllToAll;
      copies += want.max_copy_bytes > 0 && st.kind != StepKind::AllToAll;
    }
  }
  // The generator reaches the cases the group-shape walk must get right.
  EXPECT_GT(steps, 10000);
  EXPECT_GT(collectives, 5000);
  EXPECT_GT(mixed, 200);
  EXPECT_GT(differ, 500);
  EXPECT_GT(nested, 300);
  EXPECT_GT(explicit_targets, 300);
  EXPECT_GT(a2a, 1000);
  EXPECT_GT(copies, 500);
}

TEST(DescribeStepAtScale, ThirtyTwoThousandRanks) {
  // Not a timing test: a 32x32x32 mesh (32768 ranks) describes in one pass over a handful of
  // group shapes; the per-rank walk would visit every rank. Checked by the result only.
  const TensorMeta meta{{8192, 8192}, DType::BF16};
  const DeviceMesh mesh({32, 32, 32});
  const TensorSpec from(mesh, parse_placements("S(0),S(1),S(0)"), meta);
  const TensorSpec to(mesh, parse_placements("S(0),R,S(0)"), meta);
  const StepTraffic t = describe_step(Step{1, StepKind::AllGather, from, to});
  EXPECT_EQ(t.groups, 32 * 32);
  EXPECT_EQ(t.group_size, 32);
  EXPECT_TRUE(t.uniform);
  EXPECT_EQ(t.counts, std::vector<std::int64_t>(32, 8 * 256));
  EXPECT_EQ(t.bytes, 8 * 8192 * 2);
}

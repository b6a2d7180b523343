// describe_step against brute force: for every legal step from >= 1000
// random specs (1-3-D meshes, uneven explicit sizes, nested sharding, empty shards), count
// element by element which rank's block gains or loses what, and compare the per-group counts,
// the bytes in the collective table's convention, the largest bytes any rank sends and
// receives, and the uniform / groups_identical flags. Also: state keys, legal_steps and the
// planner's plans passing validate_plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "shardcal/error.hpp"
#include "shardcal/plan.hpp"

using namespace shardcal;

namespace {

std::vector<int> random_mesh(std::mt19937_64& rng) {
  const int ndim = std::uniform_int_distribution<int>(1, 3)(rng);
  std::vector<int> shape;
  int total = 1;
  for (int d = 0; d < ndim; ++d) {
    const int e = std::uniform_int_distribution<int>(1, std::max(1, 8 / total))(rng);
    shape.push_back(std::min(e, 4));
    total *= shape.back();
  }
  return shape;
}

std::vector<std::int64_t> random_composition(std::mt19937_64& rng, std::int64_t total, int parts) {
  std::vector<std::int64_t> s(std::size_t(parts), 0);
  for (std::int64_t k = 0; k < total; ++k) ++s[std::uniform_int_distribution<std::size_t>(0, std::size_t(parts) - 1)(rng)];
  return s;
}

// A random placement for mesh dim i given the placements chosen for the outer dims.
Placement random_placement(std::mt19937_64& rng, const DeviceMesh& mesh, std::vector<Placement> ps,
                           int i, const TensorMeta& meta) {
  const int kind = std::uniform_int_distribution<int>(0, 5)(rng);
  const int nd = int(meta.shape.size());
  if (kind == 0 || nd == 0) return Placement::replicate();
  if (kind == 1) return Placement::partial(kAllReduceOps[std::uniform_int_distribution<int>(0, 3)(rng)]);
  const int d = std::uniform_int_distribution<int>(0, nd - 1)(rng);
  if (kind <= 3) return Placement::shard(d);
  // Explicit sizes: only when every rank's parent extent is the same (else sizes cannot sum).
  ps[std::size_t(i)] = Placement::shard(d);
  const TensorSpec tmp(mesh, ps, meta);
  const std::int64_t parent = tmp.parent_extent(0, i, d).size;
  for (int r = 0; r < mesh.size(); ++r)
    if (tmp.parent_extent(r, i, d).size != parent) return Placement::shard(d);
  return Placement::shard(d, random_composition(rng, parent, mesh.extent(i)));
}

TensorSpec random_spec(std::mt19937_64& rng, const DeviceMesh& mesh, const TensorMeta& meta) {
  std::vector<Placement> ps(std::size_t(mesh.ndim()), Placement::replicate());
  for (int i = 0; i < mesh.ndim(); ++i) ps[std::size_t(i)] = random_placement(rng, mesh, ps, i, meta);
  return TensorSpec(mesh, ps, meta);
}

bool holds(const Box& b, const Shape& idx) {
  for (std::size_t d = 0; d < idx.size(); ++d)
    if (idx[d] < b.offset[d] || idx[d] >= b.offset[d] + b.shape[d]) return false;
  return true;
}

struct Brute {
  std::map<int, std::vector<std::int64_t>> counts_by_color;
  std::map<int, std::int64_t> bytes_by_color;
  std::int64_t max_send = 0, max_recv = 0;
};

Brute brute_force(const Step& st) {
  const DeviceMesh& mesh = st.before.mesh();
  const Shape& shape = st.before.meta().shape;
  const std::int64_t es = std::int64_t(dtype_size(st.before.meta().dtype));
  const bool reduces = st.kind == StepKind::AllReduce || st.kind == StepKind::ReduceScatter;
  Brute out;
  for (int r0 = 0; r0 < mesh.size(); ++r0) {
    if (mesh.group_position(r0, {st.mesh_dim}) != 0) continue;
    const std::vector<int> g = mesh.group(r0, {st.mesh_dim});
    const std::size_t m = g.size();
    std::vector<Box> before, after;
    for (int r : g) before.push_back(st.before.local_box(r)), after.push_back(st.after.local_box(r));
    std::vector<std::int64_t> flow(m * m, 0), held_before(m, 0), held_after(m, 0);
    // Every element of the global tensor (row-major multi-index).
    const std::int64_t n = numel(shape);
    Shape idx(shape.size(), 0);
    for (std::int64_t e = 0; e < n; ++e) {
      std::int64_t rest = e;
      for (std::size_t d = shape.size(); d-- > 0;) idx[d] = rest % shape[d], rest /= shape[d];
      for (std::size_t s = 0; s < m; ++s) {
        const bool hb = holds(before[s], idx);
        held_before[s] += hb;
        held_after[s] += holds(after[s], idx);
        if (!hb) continue;
        for (std::size_t d = 0; d < m; ++d) {
          if (!holds(after[d], idx)) continue;
          if (d == s) flow[s * m + d] += 1;  // kept
          else if (reduces || !holds(before[d], idx)) flow[s * m + d] += 1;
        }
      }
    }
    std::vector<std::int64_t> counts;
    std::int64_t bytes = 0;
    switch (st.kind) {
      case StepKind::AllGather:
        counts = held_before;
        bytes = held_after[0] * es;
        break;
      case StepKind::AllReduce:
        counts = held_before;
        bytes = held_before[0] * es;
        break;
      case StepKind::ReduceScatter:
        counts = held_after;
        bytes = held_before[0] * es;
        break;
      case StepKind::AllToAll:
        counts = flow;
        for (std::size_t s = 0; s < m; ++s) bytes = std::max(bytes, held_before[s] * es);
        break;
      default: break;
    }
    for (std::size_t s = 0; s < m; ++s) {
      std::int64_t send = 0, recv = 0;
      for (std::size_t d = 0; d < m; ++d)
        if (d != s) send += flow[s * m + d], recv += flow[d * m + s];
      out.max_send = std::max(out.max_send, send * es);
      out.max_recv = std::max(out.max_recv, recv * es);
    }
    const int color = mesh.group_color(r0, {st.mesh_dim});
    out.counts_by_color[color] = counts;
    out.bytes_by_color[color] = bytes;
  }
  return out;
}

}  // namespace

TEST(StepTraffic, MatchesBruteForceOnRandomSpecs) {
  std::mt19937_64 rng(20261123);
  const DType dtypes[] = {DType::F32, DType::F64, DType::F16, DType::U8, DType::I64};
  int specs = 0, steps = 0, collectives = 0, uneven = 0, nested = 0, a2a = 0;
  while (specs < 1200) {
    const DeviceMesh mesh(random_mesh(rng));
    const int nd = std::uniform_int_distribution<int>(1, 3)(rng);
    Shape shape;
    for (int d = 0; d < nd; ++d) shape.push_back(std::uniform_int_distribution<std::int64_t>(0, 6)(rng));
    const TensorMeta meta{shape, dtypes[std::uniform_int_distribution<int>(0, 4)(rng)]};
    const TensorSpec from = random_spec(rng, mesh, meta);
    ++specs;
    std::vector<Step> cands = legal_steps(from);
    for (const Step& st : cands) {
      ASSERT_EQ(step_problem(st), "") << st.before.serialize() << " step on " << st.mesh_dim;
      const StepTraffic t = describe_step(st);
      ++steps;
      EXPECT_EQ(t.group_size * t.groups, mesh.size());
      EXPECT_EQ(t.group_size, mesh.extent(st.mesh_dim));
      EXPECT_EQ(t.elem_size, dtype_size(meta.dtype));
      if (!t.collective) {
        EXPECT_EQ(t.bytes, 0);
        EXPECT_EQ(t.max_send_bytes, 0);
        continue;
      }
      ++collectives;
      a2a += st.kind == StepKind::AllToAll;
      const Brute b = brute_force(st);
      const std::string what = st.before.serialize() + " -> " +
                               placements_to_string(st.after.placements()) + " (" +
                               step_kind_name(st.kind) + " on mesh dim " + std::to_string(st.mesh_dim) + ")";
      std::int64_t best = -1;
      int best_color = -1;
      bool identical = true, even = true;
      int plain = 0;
      for (const auto& [color, bytes] : b.bytes_by_color)
        if (bytes > best) best = bytes, best_color = color;
      for (const auto& entry : b.counts_by_color) {
        // Not a structured binding: clang 14 cannot capture one in the lambda below.
        const auto& c = entry.second;
        identical = identical && c == b.counts_by_color.begin()->second;
        const bool group_even = std::all_of(c.begin(), c.end(), [&](std::int64_t x) { return x == c[0]; });
        even = even && group_even;
        plain += group_even;
      }
      uneven += !even;
      EXPECT_EQ(t.bytes, best) << what;
      EXPECT_EQ(t.heaviest_group, best_color) << what;
      EXPECT_EQ(t.counts, b.counts_by_color.at(best_color)) << what;
      EXPECT_EQ(t.max_send_bytes, b.max_send) << what;
      EXPECT_EQ(t.max_recv_bytes, b.max_recv) << what;
      EXPECT_EQ(t.groups_identical, identical) << what;
      EXPECT_EQ(t.uniform, even) << what;
      EXPECT_EQ(t.plain_groups, plain) << what;
      const auto& hc = b.counts_by_color.at(best_color);
      EXPECT_EQ(t.heaviest_uniform,
                std::all_of(hc.begin(), hc.end(), [&](std::int64_t x) { return x == hc[0]; }))
          << what;
    }
    bool is_nested = false;
    for (int i = 0; i < mesh.ndim(); ++i)
      for (int j = i + 1; j < mesh.ndim(); ++j)
        is_nested = is_nested || (from.placement(i).is_shard() && from.placement(j).is_shard(from.placement(i).dim));
    nested += is_nested;
  }
  // The generator covers what the acceptance asks for.
  EXPECT_GE(specs, 1000);
  EXPECT_GT(collectives, 1000);
  EXPECT_GT(uneven, 100);
  EXPECT_GT(nested, 50);
  EXPECT_GT(a2a, 100);
  (void)steps;
}

TEST(StepTraffic, IssueExampleMovesOneRow) {
  // S(0)[5,3,4,4] -> S(0) on 4 ranks, 16 x 1024 f32 (4 KiB a row): one row moves (rank 0 -> 1).
  const DeviceMesh mesh({4});
  const TensorMeta meta{{16, 1024}, DType::F32};
  const Plan p = plan_redistribution(TensorSpec(mesh, parse_placements("S(0)[5,3,4,4]"), meta),
                                     TensorSpec(mesh, parse_placements("S(0)"), meta));
  ASSERT_EQ(p.steps.size(), 1u);
  const StepTraffic t = describe_step(p.steps[0]);
  EXPECT_EQ(t.collective, Collective::AllToAll);
  EXPECT_EQ(t.max_send_bytes, 4096);
  EXPECT_EQ(t.max_recv_bytes, 4096);
  EXPECT_EQ(t.bytes, 5 * 4096);  // convention: one rank's whole send buffer (own rows included)
  EXPECT_FALSE(t.uniform);
  ASSERT_EQ(t.counts.size(), 16u);
  EXPECT_EQ(t.counts[0 * 4 + 1], 1024);  // rank 0 sends one row to rank 1
  EXPECT_EQ(t.counts[0 * 4 + 0], 4 * 1024);
}

TEST(StepTraffic, EvenAllGatherIsPlainCall) {
  const DeviceMesh mesh({2, 4});
  const TensorMeta meta{{8, 8}, DType::F32};
  const Plan p = plan_redistribution(TensorSpec(mesh, parse_placements("R,S(1)"), meta),
                                     TensorSpec(mesh, parse_placements("R,R"), meta));
  ASSERT_EQ(p.steps.size(), 1u);
  const StepTraffic t = describe_step(p.steps[0]);
  EXPECT_EQ(t.groups, 2);
  EXPECT_EQ(t.group_size, 4);
  EXPECT_TRUE(t.uniform);
  EXPECT_TRUE(t.groups_identical);
  EXPECT_EQ(t.counts, (std::vector<std::int64_t>{16, 16, 16, 16}));
  EXPECT_EQ(t.bytes, 8 * 8 * 4);
  EXPECT_EQ(t.max_send_bytes, 16 * 4 * 3);
  EXPECT_EQ(t.max_recv_bytes, 48 * 4);
}

TEST(PlanState, KeysAreCanonical) {
  const TensorMeta meta{{10, 4}, DType::F32};
  const DeviceMesh m4({4});
  EXPECT_EQ(state_key(TensorSpec(m4, parse_placements("S(0)"), meta)),
            state_key(TensorSpec(m4, parse_placements("S(0)[3,3,3,1]"), meta)));
  EXPECT_NE(state_key(TensorSpec(m4, parse_placements("S(0)"), meta)),
            state_key(TensorSpec(m4, parse_placements("S(0)[4,3,2,1]"), meta)));
  const DeviceMesh m14({1, 4});
  EXPECT_EQ(state_key(TensorSpec(m14, parse_placements("S(1),R"), meta)),
            state_key(TensorSpec(m14, parse_placements("P(max),R"), meta)));
  EXPECT_EQ(state_key(TensorSpec(m14, parse_placements("R,S(0)"), meta)),
            "mesh=1x4;shape=10x4;dtype=f32;placements=R,S(0)");
}

TEST(PlanState, PlannerPlansValidateAndAvoidSizeOneDims) {
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int c = 0; c < 1500; ++c) {
    const DeviceMesh mesh(random_mesh(rng));
    Shape shape;
    const int nd = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int d = 0; d < nd; ++d) shape.push_back(std::uniform_int_distribution<std::int64_t>(0, 9)(rng));
    const TensorMeta meta{shape, DType::F32};
    const TensorSpec a = random_spec(rng, mesh, meta), b = random_spec(rng, mesh, meta);
    const Plan p = plan_redistribution(a, b);
    EXPECT_NO_THROW(validate_plan(p)) << a.serialize() << " -> " << b.serialize();
    for (const Step& st : p.steps) {
      EXPECT_GT(mesh.extent(st.mesh_dim), 1) << a.serialize() << " -> " << b.serialize();
      // Every planner step is one of legal_steps() (up to explicit target sizes).
      if (!st.after.placement(st.mesh_dim).sizes.empty()) continue;
      bool found = false;
      for (const Step& l : legal_steps(st.before))
        found = found || (l.mesh_dim == st.mesh_dim && l.kind == st.kind &&
                          state_key(l.after) == state_key(st.after));
      EXPECT_TRUE(found) << st.to_string();
    }
    ++checked;
  }
  EXPECT_EQ(checked, 1500);
}

TEST(PlanState, ValidateNamesTheProblem) {
  const DeviceMesh mesh({2, 2});
  const TensorMeta meta{{8, 3}, DType::F32};
  const TensorSpec from(mesh, parse_placements("S(0),S(0)"), meta);
  const TensorSpec to(mesh, parse_placements("R,S(0)"), meta);
  try {
    validate_plan(Plan{from, to, {Step{0, StepKind::AllGather, from, to}}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step 1 of 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gather mesh dim 1 first"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(validate_plan(plan_redistribution(from, to)));
}

TEST(StepTraffic, GroupsChoosePlainOrVFormEachOnTheirOwn) {
  // Shape [5] on 2x2, S(0),S(0) -> S(0),R: the gather on mesh dim 1 collects counts 2,1 in
  // group 0 (rows 0-2) and 1,1 in group 1 (rows 3-4). The executor calls all_gatherv in group 0
  // and the plain all_gather in group 1, so the step is mixed, not "all_gatherv".
  const DeviceMesh mesh({2, 2});
  const TensorMeta meta{{5}, DType::F32};
  const Plan p = plan_redistribution(TensorSpec(mesh, parse_placements("S(0),S(0)"), meta),
                                     TensorSpec(mesh, parse_placements("S(0),R"), meta));
  ASSERT_EQ(p.steps.size(), 1u);
  const StepTraffic t = describe_step(p.steps[0]);
  EXPECT_EQ(t.collective, Collective::AllGather);
  EXPECT_EQ(t.groups, 2);
  EXPECT_FALSE(t.uniform);
  EXPECT_EQ(t.plain_groups, 1);
  EXPECT_FALSE(t.groups_identical);
  EXPECT_EQ(t.counts, (std::vector<std::int64_t>{2, 1}));  // the heaviest group
  EXPECT_FALSE(t.heaviest_uniform);
  EXPECT_NE(p.steps[0].to_string().find("mixed (1 of 2 groups plain)"), std::string::npos)
      << p.steps[0].to_string();
  // Every group even: all plain.
  const TensorMeta meta4{{4}, DType::F32};
  const Plan q = plan_redistribution(TensorSpec(mesh, parse_placements("S(0),S(0)"), meta4),
                                     TensorSpec(mesh, parse_placements("S(0),R"), meta4));
  ASSERT_EQ(q.steps.size(), 1u);
  const StepTraffic u = describe_step(q.steps[0]);
  EXPECT_TRUE(u.uniform);
  EXPECT_EQ(u.plain_groups, 2);
  EXPECT_TRUE(u.heaviest_uniform);
}

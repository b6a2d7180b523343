// Property tests for sharded tensors and redistribution: random meshes (1-3 dims, up to 64
// ranks on sim; the launched world on mpi/nccl), random shapes (extents 0 and 1 included, sizes
// not divisible by the mesh), every dtype, random source/target placements with random uneven
// explicit sizes (zeros included), nested sharding. Every result is compared element by element
// with a slice of the reference global tensor.
//
// Exactness: values are (linear index mod 251). Sum-partials hold the values on coordinate 0 and
// zeros elsewhere, max/min-partials hold the values everywhere: those reductions are exact in
// every dtype. Avg-partials hold the values everywhere, so the reduction computes n*v/n: exact in
// f32/f64/i32/i64, but f16/bf16 round n*v (tolerance n * 2^-mantissa_bits relative), and u8 would
// wrap modulo 256 (like MPI and NCCL), so avg is not generated for u8.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <random>
#include <set>
#include <sstream>

#include "shardcal/error.hpp"
#include "shardcal/redistribute.hpp"
#include "spmd.hpp"

using namespace shardcal;
using shardcal::testing::run_spmd;
using shardcal::testing::world_for;

namespace {

int property_cases(int default_cases) {
  const char* v = std::getenv("SHARDCAL_PROPERTY_CASES");
  return (v != nullptr && *v != '\0') ? std::max(1, std::atoi(v)) : default_cases;
}

std::vector<int> random_mesh_shape(std::mt19937_64& rng, int world) {
  const int ndim = std::uniform_int_distribution<int>(1, 3)(rng);
  std::vector<int> shape(std::size_t(ndim), 1);
  int rem = world;
  // Peel random divisors off the world size; the last dim takes what is left.
  for (int d = 0; d < ndim - 1; ++d) {
    std::vector<int> divs;
    for (int x = 1; x <= rem; ++x)
      if (rem % x == 0) divs.push_back(x);
    shape[std::size_t(d)] = divs[std::uniform_int_distribution<std::size_t>(0, divs.size() - 1)(rng)];
    rem /= shape[std::size_t(d)];
  }
  shape.back() = rem;
  std::shuffle(shape.begin(), shape.end(), rng);
  return shape;
}

std::vector<std::int64_t> random_composition(std::mt19937_64& rng, std::int64_t total, int parts) {
  std::vector<std::int64_t> sizes(std::size_t(parts), 0);
  const int style = std::uniform_int_distribution<int>(0, 2)(rng);
  if (style == 0 && parts > 1) {  // everything on one rank, the rest empty
    sizes[std::uniform_int_distribution<std::size_t>(0, std::size_t(parts) - 1)(rng)] = total;
    return sizes;
  }
  for (std::int64_t i = 0; i < total; ++i)
    ++sizes[std::uniform_int_distribution<std::size_t>(0, std::size_t(parts) - 1)(rng)];
  return sizes;
}

// Random placements valid for (mesh, meta). Explicit sizes only where every piece the mesh dim
// splits has the same extent (see layout.hpp: one size list serves every outer piece).
std::vector<Placement> random_placements(std::mt19937_64& rng, const DeviceMesh& mesh,
                                         const TensorMeta& meta, bool allow_avg) {
  const int nd = int(meta.shape.size());
  std::vector<Placement> ps(std::size_t(mesh.ndim()), Placement::replicate());
  for (int i = 0; i < mesh.ndim(); ++i) {
    const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
    if (kind < 5 && nd > 0) {
      const int d = std::uniform_int_distribution<int>(0, nd - 1)(rng);
      Placement p = Placement::shard(d);
      if (std::uniform_int_distribution<int>(0, 1)(rng) == 1) {
        const TensorSpec partial(mesh, ps, meta);  // dims >= i still R: parents of dim i are final
        std::set<std::int64_t> parents;
        for (int r = 0; r < mesh.size(); ++r) parents.insert(partial.parent_extent(r, i, d).size);
        if (parents.size() == 1) p.sizes = random_composition(rng, *parents.begin(), mesh.extent(i));
      }
      ps[std::size_t(i)] = p;
    } else if (kind < 8) {
      ps[std::size_t(i)] = Placement::replicate();
    } else {
      std::vector<ReduceOp> ops{ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min};
      if (allow_avg) ops.push_back(ReduceOp::Avg);
      ps[std::size_t(i)] =
          Placement::partial(ops[std::uniform_int_distribution<std::size_t>(0, ops.size() - 1)(rng)]);
    }
  }
  return ps;
}

TensorMeta random_meta(std::mt19937_64& rng) {
  const int nd = std::uniform_int_distribution<int>(1, 3)(rng);
  Shape shape;
  for (int d = 0; d < nd; ++d) {
    const int pick = std::uniform_int_distribution<int>(0, 9)(rng);
    shape.push_back(pick == 0 ? 0 : pick == 1 ? 1 : std::uniform_int_distribution<int>(2, 13)(rng));
  }
  const DType t = kAllDTypes[std::uniform_int_distribution<std::size_t>(0, std::size(kAllDTypes) - 1)(rng)];
  return TensorMeta{shape, t};
}

double tolerance(const TensorSpec& a, const TensorSpec& b, double ref) {
  bool avg = false;
  int n = 1;
  for (const TensorSpec* s : {&a, &b})
    for (int i = 0; i < s->mesh().ndim(); ++i)
      if (s->placement(i).is_partial() && s->placement(i).op == ReduceOp::Avg) {
        avg = true;
        n = std::max(n, s->mesh().extent(i));
      }
  if (!avg) return 0;
  const DType t = a.meta().dtype;
  const double eps = t == DType::F16 ? std::ldexp(1.0, -11) : t == DType::BF16 ? std::ldexp(1.0, -8) : 0;
  return std::abs(ref) * n * eps * 2;
}

// Number of elements of `got` that differ from `want` beyond the tolerance.
std::int64_t count_wrong(const TensorSpec& from, const TensorSpec& to,
                         const std::vector<std::byte>& got, const std::vector<std::byte>& want,
                         std::string* first) {
  if (got.size() != want.size()) {
    *first = "size " + std::to_string(got.size()) + " != expected " + std::to_string(want.size());
    return std::int64_t(std::max(got.size(), want.size()));
  }
  const DType t = to.meta().dtype;
  const std::size_t es = dtype_size(t);
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < got.size() / es; ++i) {
    const double g = load_as_double(t, got.data() + i * es), w = load_as_double(t, want.data() + i * es);
    if (std::abs(g - w) > tolerance(from, to, w)) {
      if (wrong == 0) *first = "element " + std::to_string(i) + ": got " + std::to_string(g) +
                               ", want " + std::to_string(w);
      ++wrong;
    }
  }
  return wrong;
}

std::atomic<int> g_reported{0};

void report(const std::string& what) {
  if (g_reported.fetch_add(1) < 20) ADD_FAILURE() << what;
}

}  // namespace

TEST(Redistribute, RandomTransitionsMatchReference) {
  const int cases = property_cases(3000);
  const int per_batch = 25;
  std::mt19937_64 world_rng(12345);
  // Case executions seen by the ranks living in this process (all of them on sim, one on mpi).
  std::atomic<int> checked{0};
  int expected = 0;
  for (int batch = 0; batch * per_batch < cases; ++batch) {
    const int world = world_for(std::vector<int>{1, 2, 3, 4, 6, 8, 12, 16, 32, 64}[world_rng() % 10]);
    const std::uint64_t seed = world_rng();
    const int n_here = std::min(per_batch, cases - batch * per_batch);
    expected += n_here * (shardcal::testing::fixed_world_size() == 0 ? world : 1);
    run_spmd(world, [&](Communicator& comm) {
      std::mt19937_64 rng(seed);  // same seed on every rank: every rank draws the same cases
      for (int c = 0; c < n_here; ++c) {
        const DeviceMesh mesh(random_mesh_shape(rng, comm.size()));
        const TensorMeta meta = random_meta(rng);
        const bool allow_avg = meta.dtype != DType::U8;
        const TensorSpec from(mesh, random_placements(rng, mesh, meta, allow_avg), meta);
        const TensorSpec to(mesh, random_placements(rng, mesh, meta, allow_avg), meta);
        const bool via_scatter = rng() % 4 == 0;
        MeshCommunicator mc(mesh, comm);
        const std::vector<std::byte> global = make_reference_tensor(meta);
        const std::string label = "mesh " + mesh.to_string() + " shape [" + shape_to_string(meta.shape) +
                                  "] " + std::string(dtype_name(meta.dtype)) + " " +
                                  placements_to_string(from.placements()) + " -> " +
                                  placements_to_string(to.placements()) + " rank " +
                                  std::to_string(comm.rank());
        ShardedTensor t = via_scatter
                              ? ShardedTensor::scatter_from_root(mc, 0, comm.rank() == 0 ? &from : nullptr,
                                                                 comm.rank() == 0 ? global.data() : nullptr)
                              : ShardedTensor::from_global(mc, from, global.data());
        std::string first;
        if (count_wrong(from, from, t.local_to_host(), expected_local(from, global.data(), comm.rank()), &first))
          report("distribute " + label + ": " + first);
        ShardedTensor out = redistribute(mc, std::move(t), to);
        const std::int64_t wrong =
            count_wrong(from, to, out.local_to_host(), expected_local(to, global.data(), comm.rank()), &first);
        if (wrong) report("redistribute " + label + ": " + std::to_string(wrong) + " wrong, " + first);
        if (out.spec().local_box(comm.rank()) != to.local_box(comm.rank())) report("box " + label);
        // Every few cases also gather back: the reductions must give the reference exactly.
        if (c % 5 == 0) {
          const std::vector<std::byte> all = out.gather_to_all(mc);
          if (count_wrong(from, to, all, global, &first)) report("gather_to_all " + label + ": " + first);
          const std::vector<std::byte> at_root = out.gather_to_root(mc, comm.size() - 1);
          if (comm.rank() == comm.size() - 1 && count_wrong(from, to, at_root, global, &first))
            report("gather_to_root " + label + ": " + first);
          if (comm.rank() != comm.size() - 1 && !at_root.empty()) report("non-root got data " + label);
        }
        checked.fetch_add(1);
      }
    });
  }
  EXPECT_EQ(checked.load(), expected);
  std::cout << "[property] " << cases << " random redistributions checked on backend "
            << shardcal::testing::backend_name() << "\n";
}

// Hand-picked transitions (every kind of step: gather, split, reduce, all-to-all, nested), each checked on every rank.
TEST(Redistribute, NamedTransitions) {
  const int world = world_for(8);
  struct Case {
    std::string from, to;
  };
  // Built per mesh shape: 1-d meshes use the first placement of each pair only.
  const std::vector<Case> cases2d = {
      {"S(0)[3,7],S(1)", "R,S(0)"}, {"S(0),S(0)", "R,R"},        {"S(0),S(0)", "S(1),S(0)"},
      {"P(sum),S(1)", "S(1),R"},    {"P(avg),R", "S(0)[0,10],R"}, {"R,P(max)", "R,S(1)[7,0,0,0]"},
      {"S(1),P(min)", "P(sum),R"},  {"S(0)[10,0],R", "S(0)[0,10],R"}, {"R,R", "P(sum),P(sum)"},
      {"S(1)[1,6],S(0)[5,5,0,0]", "S(0),S(1)"}};
  run_spmd(world, [&](Communicator& comm) {
    if (comm.size() % 2 != 0 || comm.size() < 2) return;  // 2-d cases need an even world
    const DeviceMesh mesh({2, comm.size() / 2});
    const TensorMeta meta{{10, 7}, DType::F32};
    const std::vector<std::byte> global = make_reference_tensor(meta);
    MeshCommunicator mc(mesh, comm);
    for (const Case& c : cases2d) {
      std::vector<Placement> fp = parse_placements(c.from), tp = parse_placements(c.to);
      // Adapt explicit size lists to mesh dim 1's extent when the world is not 8.
      for (auto* ps : {&fp, &tp})
        if ((*ps)[1].is_shard() && !(*ps)[1].sizes.empty() && int((*ps)[1].sizes.size()) != mesh.extent(1))
          (*ps)[1].sizes.clear();
      const TensorSpec from(mesh, fp, meta), to(mesh, tp, meta);
      ShardedTensor out = redistribute(mc, ShardedTensor::from_global(mc, from, global.data()), to);
      std::string first;
      EXPECT_EQ(count_wrong(from, to, out.local_to_host(), expected_local(to, global.data(), comm.rank()), &first), 0)
          << c.from << " -> " << c.to << " rank " << comm.rank() << ": " << first;
    }
  });
}

TEST(Redistribute, PlannerUsesTheExpectedCollectives) {
  const DeviceMesh mesh({2, 4});
  const TensorMeta meta{{10, 7}, DType::F32};
  auto kinds = [&](const char* f, const char* t) {
    const Plan p = plan_redistribution(TensorSpec(mesh, parse_placements(f), meta),
                                       TensorSpec(mesh, parse_placements(t), meta));
    std::string s;
    for (const Step& st : p.steps) s += std::to_string(st.mesh_dim) + ":" + step_kind_name(st.kind) + " ";
    return s;
  };
  EXPECT_EQ(kinds("S(0),R", "R,R"), "0:all_gather ");
  EXPECT_EQ(kinds("P,R", "R,R"), "0:all_reduce ");
  EXPECT_EQ(kinds("P,R", "S(1),R"), "0:reduce_scatter ");
  EXPECT_EQ(kinds("S(0),R", "S(1),R"), "0:all_to_all ");
  EXPECT_EQ(kinds("S(0)[3,7],R", "S(0)[5,5],R"), "0:all_to_all ");
  EXPECT_EQ(kinds("R,R", "R,S(1)"), "1:local_slice ");
  EXPECT_EQ(kinds("R,R", "P(max),R"), "0:local_partial ");
  EXPECT_EQ(kinds("S(0),R", "P,R"), "0:all_gather 0:local_partial ");
  EXPECT_EQ(kinds("P(max),R", "P(sum),R"), "0:all_reduce 0:local_partial ");
  EXPECT_EQ(kinds("S(0)[5,5],R", "S(0),R"), "");  // same layout, different spelling
  // Nested: changing the outer dim first gathers the inner one, then re-shards it.
  EXPECT_EQ(kinds("S(0),S(0)", "S(1),S(0)"), "1:all_gather 0:all_to_all 1:local_slice ");
  const Plan p = plan_redistribution(TensorSpec(mesh, parse_placements("S(0)[3,7],S(1)"), meta),
                                     TensorSpec(mesh, parse_placements("R,S(0)"), meta));
  // First step gathers tensor dim 0 along mesh dim 0; the largest output block is 10 rows x the
  // widest column chunk (7 over 4 ranks: 2,2,2,1) of f32.
  const StepTraffic t = describe_step(p.steps.front());
  EXPECT_EQ(t.bytes, 10 * 2 * 4);
  EXPECT_EQ(t.counts, (std::vector<std::int64_t>{3 * 2, 7 * 2}));
  EXPECT_EQ(t.groups, 4);
  EXPECT_FALSE(t.uniform);
  EXPECT_TRUE(t.groups_identical == false);  // the last column group is 1 wide
}

TEST(Redistribute, MismatchedSpecsAreRejected) {
  const TensorMeta meta{{10, 7}, DType::F32};
  const TensorSpec a(DeviceMesh({2, 4}), parse_placements("R,R"), meta);
  const TensorSpec b(DeviceMesh({4, 2}), parse_placements("R,R"), meta);
  const TensorSpec c(DeviceMesh({2, 4}), parse_placements("R,R"), TensorMeta{{10, 7}, DType::F16});
  EXPECT_THROW(plan_redistribution(a, b), Error);
  try {
    plan_redistribution(a, c);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shape and dtype must match"), std::string::npos);
  }
}

TEST(ShardedTensor, ScatterReceiversNeedOnlyTheRoot) {
  const int world = world_for(4);
  run_spmd(world, [&](Communicator& comm) {
    const DeviceMesh mesh({comm.size()});
    const int root = comm.size() - 1;
    std::vector<std::int64_t> sizes(std::size_t(comm.size()), 0);
    sizes[0] = 5;  // everything on rank 0: every other rank's shard is empty
    const TensorMeta meta{{5, 3}, DType::I64};
    const TensorSpec spec(mesh, {Placement::shard(0, sizes)}, meta);
    const std::vector<std::byte> global = make_reference_tensor(meta);
    MeshCommunicator mc(mesh, comm);
    ShardedTensor t = comm.rank() == root ? ShardedTensor::scatter_from_root(mc, root, &spec, global.data())
                                          : ShardedTensor::scatter_from_root(mc, root, nullptr, nullptr);
    EXPECT_EQ(t.spec().serialize(), spec.serialize()) << "rank " << comm.rank();
    EXPECT_EQ(t.local_box(), spec.local_box(comm.rank()));
    EXPECT_EQ(t.local_to_host(), expected_local(spec, global.data(), comm.rank()));
    const std::vector<std::byte> back = t.gather_to_root(mc, root);
    if (comm.rank() == root) {
      EXPECT_EQ(back, global);
    }
  });
}

TEST(ShardedTensor, FromLocalChecksTheBlockSize) {
  run_spmd(world_for(2), [&](Communicator& comm) {
    const DeviceMesh mesh({comm.size()});
    MeshCommunicator mc(mesh, comm);
    const TensorSpec spec(mesh, {Placement::shard(0)}, TensorMeta{{7}, DType::F32});
    Buffer wrong(mc.memory(), 3);
    try {
      ShardedTensor::from_local(mc, spec, std::move(wrong));
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("has 3 bytes but spec"), std::string::npos);
    }
  });
}

TEST(Redistribute, PlanForAnotherMeshIsRejected) {
  run_spmd(world_for(2), [&](Communicator& comm) {
    const DeviceMesh mesh({comm.size()});
    MeshCommunicator mc(mesh, comm);
    const TensorMeta meta{{4}, DType::F32};
    const DeviceMesh other({1, comm.size()});
    const Plan plan = plan_redistribution(TensorSpec(other, parse_placements("R,R"), meta),
                                          TensorSpec(other, parse_placements("R,S(0)"), meta));
    ShardedTensor t = ShardedTensor::zeros(mc, TensorSpec(mesh, {Placement::replicate()}, meta));
    try {
      execute_plan(mc, plan, std::move(t));
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("but the communicator's mesh is"), std::string::npos);
    }
  });
}

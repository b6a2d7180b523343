// Plans as checked data: hand-built illegal plans are refused by execute_plan
// on every rank, with a message naming the problem, before any communication; afterwards the
// communicators still work (no rank was left waiting inside a collective). Runs on every
// backend (sim; mpi under mpirun).
#include <gtest/gtest.h>

#include "shardcal/error.hpp"
#include "shardcal/redistribute.hpp"
#include "spmd.hpp"

using namespace shardcal;
using shardcal::testing::run_spmd;
using shardcal::testing::world_for;

namespace {

TensorSpec spec(const DeviceMesh& mesh, const char* placements, const TensorMeta& meta) {
  return TensorSpec(mesh, parse_placements(placements), meta);
}

// Runs `make_plan` on every rank, expects execute_plan (both forms) to throw an Error whose text
// contains `needle` on every rank, then proves the world still works (an all_gather of the
// verdicts and a correct redistribution).
void expect_refused_everywhere(const std::vector<int>& mesh_shape, const TensorMeta& meta,
                               const std::function<Plan(const DeviceMesh&)>& make_plan,
                               const std::string& needle) {
  int world = 1;
  for (int e : mesh_shape) world *= e;
  run_spmd(world, [&](Communicator& comm) {
    const DeviceMesh mesh(mesh_shape);
    MeshCommunicator mc(mesh, comm);
    const Plan plan = make_plan(mesh);
    const std::vector<std::byte> global = make_reference_tensor(meta);
    std::uint64_t refused = 0;
    try {
      (void)execute_plan(mc, plan, ShardedTensor::from_global(mc, plan.from, global.data()));
      ADD_FAILURE() << "rank " << comm.rank() << ": illegal plan was executed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << "rank " << comm.rank() << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("invalid plan"), std::string::npos) << e.what();
      ++refused;
    }
    try {
      PlanWorkspace ws(mc, plan);
      ADD_FAILURE() << "rank " << comm.rank() << ": workspace built for an illegal plan";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      ++refused;
    }
    // Every rank refused both, and nobody is stuck in a collective: the world still answers.
    const std::vector<std::uint64_t> all = comm.all_gather_u64(refused);
    for (std::size_t r = 0; r < all.size(); ++r) EXPECT_EQ(all[r], 2u) << "rank " << r;
    const Plan good = plan_redistribution(plan.from, plan.to);
    ShardedTensor out = execute_plan(mc, good, ShardedTensor::from_global(mc, plan.from, global.data()));
    EXPECT_EQ(out.local_to_host(), expected_local(plan.to, global.data(), comm.rank()));
  });
}

}  // namespace

TEST(PlanChecks, SkippedInnerGatherIsRefused) {
  if (world_for(4) != 4) GTEST_SKIP() << "needs a 2x2 mesh (4 ranks)";
  const TensorMeta meta{{8, 3}, DType::F32};
  expect_refused_everywhere({2, 2}, meta, [&](const DeviceMesh& mesh) {
    const TensorSpec from = spec(mesh, "S(0),S(0)", meta);
    const TensorSpec to = spec(mesh, "R,S(0)", meta);
    // The rule-based planner gathers mesh dim 1 first; this plan skips that and gathers dim 0
    // directly, which would interleave the inner pieces (wrong data on every rank).
    return Plan{from, to, {Step{0, StepKind::AllGather, from, to}}};
  }, "inner mesh dim 1");
}

TEST(PlanChecks, BrokenChainIsRefused) {
  const int world = world_for(4);
  if (world < 2) GTEST_SKIP() << "needs 2 or more ranks";
  const TensorMeta meta{{6, 5}, DType::F64};
  expect_refused_everywhere({world}, meta, [&](const DeviceMesh& mesh) {
    const TensorSpec a = spec(mesh, "S(0)", meta), r = spec(mesh, "R", meta);
    const TensorSpec b = spec(mesh, "S(1)", meta);
    // Step 2 starts from S(1), but step 1 ended at R.
    return Plan{a, b, {Step{0, StepKind::AllGather, a, r}, Step{0, StepKind::AllToAll, b, a}}};
  }, "steps must chain");
}

TEST(PlanChecks, WrongFinalStateIsRefused) {
  const int world = world_for(4);
  if (world < 2) GTEST_SKIP() << "needs 2 or more ranks";
  const TensorMeta meta{{7, 2}, DType::I32};
  expect_refused_everywhere({world}, meta, [&](const DeviceMesh& mesh) {
    const TensorSpec a = spec(mesh, "S(0)", meta), r = spec(mesh, "R", meta);
    const TensorSpec b = spec(mesh, "S(1)", meta);
    return Plan{a, b, {Step{0, StepKind::AllGather, a, r}}};  // ends at R, target S(1)
  }, "not at the target");
}

TEST(PlanChecks, CollectiveOnSizeOneMeshDimIsRefused) {
  const int world = world_for(4);
  const TensorMeta meta{{5, 4}, DType::F32};
  expect_refused_everywhere({1, world}, meta, [&](const DeviceMesh& mesh) {
    const TensorSpec a = spec(mesh, "S(0),R", meta), b = spec(mesh, "R,R", meta);
    return Plan{a, b, {Step{0, StepKind::AllGather, a, b}}};
  }, "has size 1");
}

TEST(PlanChecks, WrongKindIsRefused) {
  const int world = world_for(4);
  if (world < 2) GTEST_SKIP() << "needs 2 or more ranks";
  const TensorMeta meta{{9}, DType::F32};
  expect_refused_everywhere({world}, meta, [&](const DeviceMesh& mesh) {
    const TensorSpec a = spec(mesh, "S(0)", meta), b = spec(mesh, "R", meta);
    return Plan{a, b, {Step{0, StepKind::AllReduce, a, b}}};  // S -> R is an all_gather
  }, "is all_gather, not all_reduce");
}

TEST(PlanChecks, WorkspaceIsReusedAcrossRuns) {
  const int world = world_for(4);
  run_spmd(world, [&](Communicator& comm) {
    const DeviceMesh mesh({world});
    MeshCommunicator mc(mesh, comm);
    const TensorMeta meta{{11, 3}, DType::F32};
    const std::vector<std::byte> global = make_reference_tensor(meta);
    // Uneven (v-form) and even (plain call) counts, single and multi-step plans.
    for (const auto& [f, t] : std::vector<std::pair<const char*, const char*>>{
             {"S(0)", "R"}, {"S(1)", "S(0)"}, {"R", "S(1)"}, {"S(0)", "P"}, {"P(max)", "S(0)"}}) {
      const TensorSpec from = spec(mesh, f, meta), to = spec(mesh, t, meta);
      PlanWorkspace ws(mc, plan_redistribution(from, to));
      const ShardedTensor in = ShardedTensor::from_global(mc, from, global.data());
      ShardedTensor out = make_plan_output(mc, ws);
      for (int rep = 0; rep < 3; ++rep) {
        comm.memory().fill_zero(out.local().data(), out.local().size());
        execute_plan(mc, ws, in, out);
        EXPECT_EQ(out.local_to_host(), expected_local(to, global.data(), comm.rank()))
            << f << " -> " << t << " run " << rep << " rank " << comm.rank();
      }
      EXPECT_EQ(in.local_to_host(), expected_local(from, global.data(), comm.rank())) << "input changed";
    }
  });
}

// describe_step per distinct group shape: the same transition's steps on 8, 1024 and 32768 ranks
// should cost about the same (docs/PLANNER.md "Step descriptions at scale").
#include <benchmark/benchmark.h>

#include "shardcal/plan.hpp"

namespace {

using namespace shardcal;

void BM_DescribeStep(benchmark::State& state, const char* mesh, const char* from, const char* to,
                     int mesh_dim, StepKind kind) {
  const TensorMeta meta{{8192, 8192}, DType::BF16};
  const DeviceMesh m = DeviceMesh::parse(mesh);
  const Step st{mesh_dim, kind, TensorSpec(m, parse_placements(from), meta),
                TensorSpec(m, parse_placements(to), meta)};
  for (auto _ : state) benchmark::DoNotOptimize(describe_legal_step(st));
  state.counters["ranks"] = double(m.size());
}
// all_gather of the middle mesh dim, nested S(0) on the outer and inner dims.
BENCHMARK_CAPTURE(BM_DescribeStep, all_gather_2x2x2, "2x2x2", "S(0),S(1),S(0)", "S(0),R,S(0)", 1,
                  StepKind::AllGather)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DescribeStep, all_gather_8x16x8, "8x16x8", "S(0),S(1),S(0)", "S(0),R,S(0)", 1,
                  StepKind::AllGather)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DescribeStep, all_gather_32x32x32, "32x32x32", "S(0),S(1),S(0)",
                  "S(0),R,S(0)", 1, StepKind::AllGather)->Unit(benchmark::kMicrosecond);
// all_to_all S(1) -> S(0) on the outer mesh dim (an m x m matrix per group shape).
BENCHMARK_CAPTURE(BM_DescribeStep, all_to_all_2x2x2, "2x2x2", "S(1),R,R", "S(0),R,R", 0,
                  StepKind::AllToAll)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_DescribeStep, all_to_all_8x16x8, "8x16x8", "S(1),R,R", "S(0),R,R", 0,
                  StepKind::AllToAll)->Unit(benchmark::kMicrosecond);

}  // namespace

// The rule-based planner (plan_redistribution) on 2-D/3-D meshes, and the sweep's own pure
// pieces: config expansion and the statistics of one point.
#include <benchmark/benchmark.h>

#include <random>

#include "shardcal/redistribute.hpp"
#include "sweep/config.hpp"
#include "sweep/stats.hpp"

namespace {

using namespace shardcal;

void BM_Plan(benchmark::State& state, const char* mesh, const char* from, const char* to) {
  const TensorMeta meta{{8192, 8192}, DType::BF16};
  const DeviceMesh m = DeviceMesh::parse(mesh);
  const TensorSpec a(m, parse_placements(from), meta), b(m, parse_placements(to), meta);
  for (auto _ : state) benchmark::DoNotOptimize(plan_redistribution(a, b));
}
BENCHMARK_CAPTURE(BM_Plan, s0s1_to_rs0_2x8, "2x8", "S(0),S(1)", "R,S(0)");
BENCHMARK_CAPTURE(BM_Plan, p_to_s_4x4x4, "4x4x4", "P,P,R", "S(0),S(1),S(0)");
BENCHMARK_CAPTURE(BM_Plan, rebalance_8, "8", "S(0)[1024,1024,1024,1024,1024,1024,1024,1024]",
                  "S(0)[4096,2048,1024,512,256,128,64,64]");

void BM_ExpandClusterConfig(benchmark::State& state) {
  const auto cfg = shardbench::sweep::parse_config_text(
      R"cfg({"meshes": {"factorizations": true, "max_dims": 2}, "transitions": "all_single_dim",
          "collectives": ["all_gather", "reduce_scatter", "all_reduce", "all_to_all"],
          "distributions": ["even", "zipf(1.1)", "one_empty"], "sizes": {"min": 16, "max": 1073741824, "factor": 4}})cfg",
      "bench");
  for (auto _ : state) benchmark::DoNotOptimize(shardbench::sweep::expand_points(cfg, int(state.range(0))));
}
BENCHMARK(BM_ExpandClusterConfig)->Arg(16)->Arg(128);

void BM_PointStats(benchmark::State& state) {
  std::mt19937_64 gen(1);
  std::vector<double> x(std::size_t(state.range(0)));
  for (auto& v : x) v = 1e-5 * (1.0 + double(gen() % 1000) / 1000.0);
  for (auto _ : state) benchmark::DoNotOptimize(shardbench::sweep::compute_stats(x, 0.95));
}
BENCHMARK(BM_PointStats)->Arg(20)->Arg(1000)->Arg(100000);

}  // namespace

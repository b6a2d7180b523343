// Layout math: every rank's local box of nested and uneven specs on large meshes (what a planner
// and the executor compute for every step), and torch.chunk splitting.
#include <benchmark/benchmark.h>

#include "shardcal/layout.hpp"

namespace {

using namespace shardcal;

TensorSpec make(const char* mesh, const char* placements, const char* shape) {
  return TensorSpec(DeviceMesh::parse(mesh), parse_placements(placements),
                    TensorMeta{parse_shape(shape), DType::BF16});
}

void BM_LocalBoxAllRanks(benchmark::State& state, const char* mesh, const char* pl, const char* shape) {
  const TensorSpec spec = make(mesh, pl, shape);
  const int world = spec.mesh().size();
  for (auto _ : state)
    for (int r = 0; r < world; ++r) benchmark::DoNotOptimize(spec.local_box(r));
  state.SetItemsProcessed(state.iterations() * world);
}
BENCHMARK_CAPTURE(BM_LocalBoxAllRanks, mesh_8x8_S0_S1, "8x8", "S(0),S(1)", "8192x8192");
BENCHMARK_CAPTURE(BM_LocalBoxAllRanks, mesh_16x8x8_nested, "16x8x8", "S(0),S(0),S(1)", "100003x4097");
BENCHMARK_CAPTURE(BM_LocalBoxAllRanks, mesh_16x64_R_P, "16x64", "R,P", "4096x4096");

void BM_SplitExtentChunk(benchmark::State& state) {
  const int parts = int(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(split_extent(1000003, parts, {}));
}
BENCHMARK(BM_SplitExtentChunk)->Arg(8)->Arg(64)->Arg(1024);

void BM_SpecParseAndValidate(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(make("4x8", "S(0)[100,200,300,424],S(1)", "1024x4096"));
}
BENCHMARK(BM_SpecParseAndValidate);

}  // namespace

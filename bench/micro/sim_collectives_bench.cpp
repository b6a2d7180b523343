// Rank-simulator collectives: the cost of the in-process backend a developer debugs with
// (threads exchanging through shared memory). Rank 0 drives Google Benchmark's loop; the other
// ranks run the same number of operations.
#include <benchmark/benchmark.h>

#include <vector>

#include "shardcal/launch.hpp"

namespace {

using namespace shardcal;

enum class Op { AllGather, AllReduce, AllToAll, Barrier };

void BM_SimCollective(benchmark::State& state, Op op) {
  const int world = int(state.range(0));
  const std::size_t bytes = std::size_t(state.range(1));
  const std::size_t count = std::max<std::size_t>(1, bytes / 4 / std::size_t(world));
  const auto iters = state.max_iterations;
  LaunchOptions lo;
  lo.backend = "sim";
  lo.world = world;
  launch(lo, [&](Communicator& c) {
    std::vector<float> send(count * std::size_t(world), 1.0f), recv(count * std::size_t(world));
    auto run = [&] {
      switch (op) {
        case Op::AllGather: c.all_gather(send.data(), recv.data(), count, DType::F32); break;
        case Op::AllReduce: c.all_reduce(send.data(), recv.data(), count * std::size_t(world), DType::F32, ReduceOp::Sum); break;
        case Op::AllToAll: c.all_to_all(send.data(), recv.data(), count, DType::F32); break;
        case Op::Barrier: c.barrier(); break;
      }
    };
    if (c.rank() == 0) {
      for (auto _ : state) run();
    } else {
      for (benchmark::IterationCount i = 0; i < iters; ++i) run();
    }
  });
  state.SetBytesProcessed(state.iterations() * std::int64_t(count) * world * 4);
}
BENCHMARK_CAPTURE(BM_SimCollective, all_gather, Op::AllGather)->Args({4, 4096})->Args({8, 1 << 20})->UseRealTime();
BENCHMARK_CAPTURE(BM_SimCollective, all_reduce, Op::AllReduce)->Args({4, 4096})->Args({8, 1 << 20})->UseRealTime();
BENCHMARK_CAPTURE(BM_SimCollective, all_to_all, Op::AllToAll)->Args({4, 4096})->Args({8, 1 << 20})->UseRealTime();
BENCHMARK_CAPTURE(BM_SimCollective, barrier, Op::Barrier)->Args({4, 0})->Args({16, 0})->UseRealTime();

}  // namespace

// The NCCL backend's OpTimer (CUDA events on the rank's stream) on a single-rank world (an MPI
// singleton, no mpirun needed), and the sweep runner using it. Needs a CUDA device: ctest runs
// these through cuda_device_gate, and each test also skips itself without one.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <memory>

#include "nccl/cuda_check.hpp"
#include "nccl/cuda_memory.hpp"
#include "nccl/nccl_backend.hpp"
#include "shardcal/error.hpp"
#include "shardcal/memory.hpp"
#include "shardcal/mesh_comm.hpp"
#include "sweep/config.hpp"
#include "sweep/runner.hpp"

namespace {

using shardcal::Communicator;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

TEST(NcclOpTimer, CudaEventTimerWaitsForAndTimesDeviceWork) {
  if (shardcal::nccl::cuda_device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  shardcal::nccl::run(0, {}, [&](Communicator& world) {
    const auto timer = world.make_op_timer();
    EXPECT_EQ(timer->method(), "cuda_event");
    EXPECT_THROW((void)timer->elapsed_s(), shardcal::Error);  // nothing recorded yet

    auto& mem = dynamic_cast<shardcal::nccl::CudaMemory&>(world.memory());
    const std::size_t bytes = std::size_t(256) << 20;
    shardcal::Buffer a(mem, bytes), b(mem, bytes);
    mem.fill_zero(a.data(), bytes);
    mem.synchronize();

    // Asynchronous device copies the host does not wait for: elapsed_s() must wait for them.
    const auto h0 = Clock::now();
    timer->start();
    for (int i = 0; i < 8; ++i) mem.copy(b.data(), a.data(), bytes);
    timer->stop();
    const double e = timer->elapsed_s();
    const double host = seconds_since(h0);
    EXPECT_EQ(cudaStreamQuery(mem.stream()), cudaSuccess) << "elapsed_s() returned early";
    EXPECT_TRUE(std::isfinite(e));
    // 8 x 2 x 256 MiB of memory traffic: well above 0.1 ms on any GPU (H100 ~3.4 TB/s: ~1.3 ms).
    EXPECT_GT(e, 1e-4);
    // The device interval lies inside the host's window around start() .. elapsed_s().
    EXPECT_LE(e, host + 1e-4);
    EXPECT_EQ(timer->elapsed_s(), e);  // reading again does not change the interval

    // Reused around collectives: per-iteration (one op) and pipelined (several) shapes.
    for (int ops : {1, 5}) {
      world.barrier();
      timer->start();
      for (int i = 0; i < ops; ++i)
        world.all_reduce(a.data(), b.data(), 1 << 20, shardcal::DType::F32,
                         shardcal::ReduceOp::Sum);
      timer->stop();
      const double t = timer->elapsed_s();
      EXPECT_TRUE(std::isfinite(t) && t >= 0) << ops << " ops: " << t;
    }

    // Sub-communicators get their own event timer on the same stream.
    auto sub = world.split(0, 0);
    const auto sub_timer = sub->make_op_timer();
    EXPECT_EQ(sub_timer->method(), "cuda_event");
    sub_timer->start();
    sub->barrier();
    sub_timer->stop();
    EXPECT_GE(sub_timer->elapsed_s(), 0.0);
  });
}

TEST(NcclOpTimer, SweepRunnerRecordsCudaEvents) {
  if (shardcal::nccl::cuda_device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  using namespace shardbench;
  using namespace shardbench::sweep;
  SweepConfig cfg;
  cfg.source = "test";
  cfg.warmup = 1;
  cfg.iterations_min = 3;
  cfg.iterations_max = 4;
  cfg.time_budget_s = 10;
  cfg.target_rel_ci = 0;
  cfg.pipeline_depth = 3;
  shardcal::nccl::run(0, {}, [&](Communicator& world) {
    shardcal::MeshCommunicator mc(shardcal::DeviceMesh::parse("1"), world);
    for (Mode mode : {Mode::PerIteration, Mode::Pipelined}) {
      Point p;
      p.mesh = "1";
      p.op = Collective::AllReduce;
      p.mesh_dim = 0;
      p.dtype = shardcal::DType::F32;
      p.dist = Distribution::parse("even");
      p.size = 1 << 20;
      p.mode = mode;
      const Measurement m = measure_collective(mc, p, cfg);
      EXPECT_EQ(m.timer, "cuda_event");
      EXPECT_EQ(m.wrong, 0u);
      EXPECT_GE(m.samples.size(), 3u);
      for (double s : m.samples) EXPECT_TRUE(std::isfinite(s) && s >= 0) << s;
    }
  });
}

}  // namespace

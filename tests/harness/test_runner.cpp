// The timing runner on the rank simulator: every collective/distribution/dtype/mode comes out
// with wrong == 0; a communicator that corrupts one element is caught; a stop request abandons
// the point on every rank; transitions run their plan and check the result.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <utility>

#include "shardcal/error.hpp"
#include "shardcal/formats/results_record.hpp"
#include "shardcal/mesh_comm.hpp"
#include "shardcal/placement.hpp"
#include "shardcal/redistribute.hpp"
#include "spmd.hpp"
#include "sweep/runner.hpp"
#include "sweep/signals.hpp"

using namespace shardbench;
using namespace shardbench::sweep;
using shardcal::Communicator;
using shardcal::DType;

namespace {

SweepConfig small_config() {
  SweepConfig cfg;
  cfg.source = "test";
  cfg.warmup = 1;
  cfg.iterations_min = 3;
  cfg.iterations_max = 4;
  cfg.time_budget_s = 10;
  cfg.target_rel_ci = 0;  // fixed sample counts
  cfg.pipeline_depth = 3;
  cfg.rotation_bytes = 4096;
  cfg.rotation_max_slots = 4;
  return cfg;
}

Point collective_point(Collective op, const char* mesh, int dim, DType t, const char* dist,
                       std::int64_t size, Mode mode = Mode::PerIteration) {
  Point p;
  p.mesh = mesh;
  p.op = op;
  p.mesh_dim = dim;
  p.dtype = t;
  p.dist = Distribution::parse(dist);
  p.size = size;
  p.mode = mode;
  return p;
}

// Forwards everything; on the one active world rank, adds 1 to the first received element of
// every all_gather(v), also on the sub-communicators it splits off.
class CorruptingComm final : public Communicator {
 public:
  // The (send, receive) buffers of every all_gather(v) issued on this rank (splits too).
  using BufferPairs = std::set<std::pair<const void*, const void*>>;
  // silent_after >= 0: every all_gather(v) after that many (counted per world rank, over the
  // splits too) returns without doing anything; pass it on every rank so they skip the same calls.
  CorruptingComm(Communicator& inner, bool active, std::unique_ptr<Communicator> owned = {},
                 int silent_after = -1, std::shared_ptr<int> gathers = std::make_shared<int>(0),
                 std::shared_ptr<BufferPairs> buffers = std::make_shared<BufferPairs>())
      : in_(inner), owned_(std::move(owned)), active_(active), silent_after_(silent_after),
        gathers_(std::move(gathers)), buffers_(std::move(buffers)) {}
  const BufferPairs& gathered_buffers() const { return *buffers_; }
  int rank() const override { return in_.rank(); }
  int size() const override { return in_.size(); }
  std::string backend() const override { return in_.backend(); }
  std::string describe() const override { return in_.describe(); }
  shardcal::MemorySpace& memory() override { return in_.memory(); }
  void barrier() override { in_.barrier(); }
  void do_broadcast(void* b, std::size_t c, DType t, int root) override {
    in_.broadcast(b, c, t, root);
  }
  void do_all_reduce(const void* s, void* r, std::size_t c, DType t,
                     shardcal::ReduceOp op) override {
    in_.all_reduce(s, r, c, t, op);
  }
  void do_all_gather(const void* s, void* r, std::size_t c, DType t) override {
    buffers_->emplace(s, r);
    if (silent()) return;
    in_.all_gather(s, r, c, t);
    corrupt(r, c * std::size_t(size()), t);
  }
  void do_all_gatherv(const void* s, std::size_t sc, void* r, shardcal::Counts c,
                      shardcal::Counts d, DType t) override {
    buffers_->emplace(s, r);
    if (silent()) return;
    in_.all_gatherv(s, sc, r, c, d, t);
    std::size_t total = 0;
    for (auto x : c) total += x;
    corrupt(r, total, t);
  }
  void do_reduce_scatter(const void* s, void* r, std::size_t c, DType t,
                         shardcal::ReduceOp op) override {
    in_.reduce_scatter(s, r, c, t, op);
  }
  void do_reduce_scatterv(const void* s, void* r, shardcal::Counts c, DType t,
                          shardcal::ReduceOp op) override {
    in_.reduce_scatterv(s, r, c, t, op);
  }
  void do_all_to_all(const void* s, void* r, std::size_t c, DType t) override {
    in_.all_to_all(s, r, c, t);
  }
  void do_all_to_allv(const void* s, shardcal::Counts sc, shardcal::Counts sd, void* r,
                      shardcal::Counts rc, shardcal::Counts rd, DType t) override {
    in_.all_to_allv(s, sc, sd, r, rc, rd, t);
  }
  void do_scatter(const void* s, void* r, std::size_t c, DType t, int root) override {
    in_.scatter(s, r, c, t, root);
  }
  void do_scatterv(const void* s, shardcal::Counts c, shardcal::Counts d, void* r, std::size_t rc,
                   DType t, int root) override {
    in_.scatterv(s, c, d, r, rc, t, root);
  }
  void do_gather(const void* s, void* r, std::size_t c, DType t, int root) override {
    in_.gather(s, r, c, t, root);
  }
  void do_gatherv(const void* s, std::size_t sc, void* r, shardcal::Counts c, shardcal::Counts d,
                  DType t, int root) override {
    in_.gatherv(s, sc, r, c, d, t, root);
  }
  void do_send(const void* b, std::size_t c, DType t, int peer, int tag) override {
    in_.send(b, c, t, peer, tag);
  }
  void do_recv(void* b, std::size_t c, DType t, int peer, int tag) override {
    in_.recv(b, c, t, peer, tag);
  }
  std::unique_ptr<Communicator> do_split(int color, int key) override {
    auto child = in_.split(color, key);
    Communicator& ref = *child;
    return std::make_unique<CorruptingComm>(ref, active_, std::move(child), silent_after_, gathers_,
                                            buffers_);
  }
  std::vector<std::uint64_t> all_gather_u64(std::uint64_t v) override { return in_.all_gather_u64(v); }
  void do_broadcast_string(std::string& s, int root) override { in_.broadcast_string(s, root); }
  double now() const override { return in_.now(); }
  std::unique_ptr<shardcal::OpTimer> make_op_timer() override { return in_.make_op_timer(); }

 private:
  void corrupt(void* r, std::size_t n, DType t) {
    if (n == 0 || !active_) return;
    std::vector<std::byte> e(shardcal::dtype_size(t));
    memory().copy_to_host(e.data(), r, e.size());
    shardcal::store_from_double(t, e.data(), shardcal::load_as_double(t, e.data()) + 1);
    memory().copy_from_host(r, e.data(), e.size());
  }
  bool silent() { return silent_after_ >= 0 && ++*gathers_ > silent_after_; }
  Communicator& in_;
  std::unique_ptr<Communicator> owned_;
  bool active_;
  int silent_after_;
  std::shared_ptr<int> gathers_;
  std::shared_ptr<BufferPairs> buffers_;
};

// S(0) -> R of 8x4 f32 on mesh 4 over `comm` (4 ranks): one all_gather from the input block
// (32 B) straight into the output (128 B), no workspace.
Measurement measure_gather_transition(Communicator& comm, const SweepConfig& cfg) {
  shardcal::MeshCommunicator mc(shardcal::DeviceMesh::parse("4"), comm);
  const shardcal::TensorMeta meta{{8, 4}, DType::F32};
  const shardcal::TensorSpec a(mc.mesh(), shardcal::parse_placements("S(0)"), meta);
  const shardcal::TensorSpec b(mc.mesh(), shardcal::parse_placements("R"), meta);
  return measure_transition(mc, shardcal::plan_redistribution(a, b), cfg);
}

}  // namespace

TEST(Runner, EveryCollectiveDistributionDtypeAndModeIsCorrect) {
  const SweepConfig cfg = small_config();
  shardcal::testing::run_spmd(4, [&](Communicator& world) {
    for (const char* mesh : {"4", "2x2"}) {
      shardcal::MeshCommunicator mc(shardcal::DeviceMesh::parse(mesh), world);
      for (const auto& info : kCollectives)
        for (int dim = 0; dim < mc.mesh().ndim(); ++dim)
          for (DType t : {DType::F32, DType::BF16, DType::U8, DType::I64})
            for (const char* dist : {"even", "zipf(1.5)", "one_empty", "random(3)"})
              for (Mode mode : {Mode::PerIteration, Mode::Pipelined})
                for (std::int64_t size : {1, 24, 5000}) {
                  const Point p = collective_point(info.op, mesh, dim, t, dist, size, mode);
                  const Measurement m = measure_collective(mc, p, cfg);
                  ASSERT_FALSE(m.abandoned);
                  EXPECT_EQ(m.wrong, 0u) << p.label();
                  EXPECT_TRUE(m.checked);
                  EXPECT_GE(m.samples.size(), 3u);
                  EXPECT_LE(m.samples.size(), 4u);
                  EXPECT_EQ(m.depth, mode == Mode::Pipelined ? 3 : 1);
                  EXPECT_EQ(m.stop_reason, "max_iterations");
                  // OSU's statistic from the same samples: min <= mean <= max across ranks, all
                  // positive, and a mean of per-sample maxima bounds every rank's mean.
                  double mean_slowest = 0;
                  for (double x : m.samples) mean_slowest += x / double(m.samples.size());
                  EXPECT_GT(m.rank_mean_min_s, 0.0) << p.label();
                  EXPECT_LE(m.rank_mean_min_s, m.rank_mean_avg_s * (1 + 1e-12)) << p.label();
                  EXPECT_LE(m.rank_mean_avg_s, m.rank_mean_max_s * (1 + 1e-12)) << p.label();
                  EXPECT_LE(m.rank_mean_max_s, mean_slowest * (1 + 1e-12)) << p.label();
                }
    }
  });
}

TEST(Runner, CorruptedResultsAreCounted) {
  const SweepConfig cfg = small_config();
  shardcal::testing::run_spmd(4, [&](Communicator& world) {
    CorruptingComm bad(world, world.rank() == 2);
    shardcal::MeshCommunicator mc(shardcal::DeviceMesh::parse("2x2"), bad);
    for (const char* dist : {"even", "one_empty"}) {
      const Measurement m = measure_collective(
          mc, collective_point(Collective::AllGather, "2x2", 1, DType::F32, dist, 64), cfg);
      // The check pass (1) plus every rotated slot the timed loop used (4 slots) on rank 2.
      EXPECT_EQ(m.wrong, 1u + 4u) << dist;
    }
    const Measurement ok = measure_collective(
        mc, collective_point(Collective::AllReduce, "2x2", 1, DType::F32, "even", 64), cfg);
    EXPECT_EQ(ok.wrong, 0u);
  });
}

TEST(Runner, StopRequestAbandonsThePointOnEveryRank) {
  SweepConfig cfg = small_config();
  cfg.iterations_max = 1000;
  shardcal::testing::run_spmd(4, [&](Communicator& world) {
    shardcal::MeshCommunicator mc(shardcal::DeviceMesh::parse("4"), world);
    if (world.rank() == 3) request_stop(15);  // only one rank got the signal
    const Measurement m = measure_collective(
        mc, collective_point(Collective::Broadcast, "4", 0, DType::F32, "even", 64), cfg);
    EXPECT_TRUE(m.abandoned);
    EXPECT_EQ(m.signal, 15);
    world.barrier();
    clear_stop();
  });
}

TEST(Runner, TransitionsExecuteTheirPlanCorrectly) {
  const SweepConfig cfg = small_config();
  shardcal::testing::run_spmd(4, [&](Communicator& world) {
    shardcal::MeshCommunicator mc(shardcal::DeviceMesh::parse("2x2"), world);
    for (auto [from, to] : {std::pair{"S(0),S(1)", "R,S(0)"}, {"P,R", "S(1),R"}, {"S(0)[5,1],R", "S(0),R"},
                            {"R,R", "P,S(0)"}}) {
      const shardcal::TensorMeta meta{{6, 10}, DType::BF16};
      const shardcal::TensorSpec a(mc.mesh(), shardcal::parse_placements(from), meta);
      const shardcal::TensorSpec b(mc.mesh(), shardcal::parse_placements(to), meta);
      const Measurement m = measure_transition(mc, shardcal::plan_redistribution(a, b), cfg);
      EXPECT_EQ(m.wrong, 0u) << from << " -> " << to;
      EXPECT_TRUE(m.checked);
      EXPECT_EQ(m.slots, 4) << "small sets rotate up to max_slots, as collectives";
      EXPECT_GE(m.samples.size(), 3u);
    }
  });
}

// The (send, receive) pairs of measure_gather_transition's all_gathers are its rotated sets: as
// many distinct ones as slots, each with its own input and output.
TEST(Runner, TransitionsRotateWholeBufferSetsLikeCollectives) {
  for (const auto& p : {std::pair<std::int64_t, int>{4096, 64}, {4096, 4}, {0, 64}}) {
    const std::int64_t bytes = p.first;  // not a structured binding: clang 14 cannot capture one
    const int max_slots = p.second;
    SweepConfig cfg = small_config();
    cfg.rotation_bytes = bytes;
    cfg.rotation_max_slots = max_slots;
    cfg.iterations_min = cfg.iterations_max = 40;  // more runs than slots: every slot is used
    const int want = rotation_slots(32 + 128, bytes, max_slots);
    ASSERT_EQ(want, bytes == 0 ? 1 : std::min(26, max_slots));
    shardcal::testing::run_spmd(4, [&](Communicator& world) {
      for (const bool corrupt : {false, true}) {
        CorruptingComm rec(world, corrupt && world.rank() == 2);
        const Measurement m = measure_gather_transition(rec, cfg);
        EXPECT_EQ(m.slots, want) << bytes << "/" << max_slots;
        EXPECT_TRUE(m.checked);
        const auto& pairs = rec.gathered_buffers();
        std::set<const void*> ins, outs;
        for (const auto& [in, out] : pairs) ins.insert(in), outs.insert(out);
        EXPECT_EQ(pairs.size(), std::size_t(want));
        EXPECT_EQ(ins.size(), std::size_t(want));
        EXPECT_EQ(outs.size(), std::size_t(want));
        // Corrupted on rank 2: the check run plus every slot the timed runs used (all of them).
        EXPECT_EQ(m.wrong, corrupt ? 1u + std::uint64_t(want) : 0u) << bytes << "/" << max_slots;
      }
    });
  }
}

// The default (host clock) timer: the interval contains what ran between start() and stop()
// (checked against a busy loop timed on the same clock, so no sleep or load makes it flaky).
TEST(Runner, TransitionWhoseTimedRunsWriteNothingIsWrong) {
  // S(0) -> R of 8x4 f32 on 4 ranks is one all_gather straight into the output. The check run
  // and the warm-up run gather for real and leave the right result in the output of slot 0;
  // every timed run after them does nothing. Outputs are reused, so only the sentinel reset
  // before the last timed sample (slot 0 with 4 slots, the only output with 1) lets the check
  // see that: every element of every slot of every rank is wrong.
  SweepConfig cfg = small_config();
  cfg.check = true;
  for (const auto& p : {std::pair<std::int64_t, int>{0, 1}, {4096, 4}})
  for (const int silent_after : {2, 1000}) {
    const int slots = p.second;  // not a structured binding: clang 14 cannot capture one
    cfg.rotation_bytes = p.first;
    shardcal::testing::run_spmd(4, [&](Communicator& world) {
      CorruptingComm quiet(world, /*active=*/false, {}, silent_after);
      const Measurement m = measure_gather_transition(quiet, cfg);
      EXPECT_TRUE(m.checked);
      EXPECT_EQ(m.slots, slots);
      EXPECT_GE(m.samples.size(), 3u);
      EXPECT_EQ(m.wrong, silent_after == 2 ? std::uint64_t(slots) * 4u * 32u : 0u)
          << "silent after " << silent_after << ", " << slots << " slot(s)";
    });
  }
}

TEST(OutputCheck, ArmedOutputThatIsNotWrittenCountsAsWrong) {
  shardcal::MemorySpace& mem = shardcal::host_memory();
  std::vector<std::byte> want(6 * 2);
  for (std::size_t k = 0; k < 6; ++k) shardcal::store_from_double(DType::BF16, want.data() + 2 * k, double(k));
  OutputCheck check(mem, DType::BF16, want);
  std::vector<std::byte> out = want;  // a previous run left the right result
  EXPECT_EQ(check.wrong(out), 0u);
  check.arm(out.data(), out.size());
  EXPECT_EQ(out, check.sentinel());
  EXPECT_EQ(check.wrong(out), 6u);  // nothing written since arm()
  std::copy(want.begin(), want.begin() + 8, out.begin());  // 4 of 6 elements written
  EXPECT_EQ(check.wrong(out), 2u);
  out = want;
  EXPECT_EQ(check.wrong(out), 0u);
  EXPECT_EQ(check.wrong(std::vector<std::byte>(10)), 7u);  // wrong size: all of it, plus one
  std::vector<std::byte> small(10);  // an output of the wrong size is filled and counted wrong
  check.arm(small.data(), small.size());
  EXPECT_EQ(small, check.sentinel());
  EXPECT_EQ(check.wrong(small), 7u);
  // No element of any reference tensor equals the sentinel.
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64, DType::U8}) {
    const shardcal::TensorMeta meta{{7, 64}, t};
    const auto ref = shardcal::make_reference_tensor(meta);
    const std::size_t es = shardcal::dtype_size(t);
    std::vector<std::byte> none(ref.size());
    OutputCheck c(mem, t, ref);
    c.arm(none.data(), none.size());
    for (std::size_t off = 0; off < ref.size(); off += es)
      ASSERT_NE(std::memcmp(ref.data() + off, none.data() + off, es), 0) << shardcal::dtype_name(t);
  }
}

TEST(StepRecord, GroupsThatDifferRecordAMixedCall) {
  // Shape [5] on 2x2, S(0),S(0) -> S(0),R: group 0 gathers counts 2,1 (all_gatherv), group 1
  // counts 1,1 (plain all_gather).
  const shardcal::DeviceMesh mesh = shardcal::DeviceMesh::parse("2x2");
  auto step_json = [&](std::int64_t n) {
    const shardcal::TensorMeta meta{{n}, DType::F32};
    const shardcal::Plan p =
        shardcal::plan_redistribution(shardcal::TensorSpec(mesh, shardcal::parse_placements("S(0),S(0)"), meta),
                                      shardcal::TensorSpec(mesh, shardcal::parse_placements("S(0),R"), meta));
    EXPECT_EQ(p.steps.size(), 1u);
    return shardcal::formats::step_traffic_json(shardcal::describe_step(p.steps.at(0)));
  };
  const auto mixed = step_json(5);
  EXPECT_EQ(mixed.at("call"), "mixed");
  EXPECT_EQ(mixed.at("plain_groups"), 1);
  EXPECT_EQ(mixed.at("uniform"), false);
  EXPECT_EQ(mixed.at("heaviest_uniform"), false);
  const auto plain = step_json(4);
  EXPECT_EQ(plain.at("call"), "all_gather");
  EXPECT_EQ(plain.at("plain_groups"), 2);
  const auto v = step_json(6);  // 3 rows per group: 2,1 in both
  EXPECT_EQ(v.at("call"), "all_gatherv");
  EXPECT_EQ(v.at("plain_groups"), 0);
}

TEST(OpTimer, DefaultTimerMeasuresAHostDelay) {
  using Clock = std::chrono::steady_clock;
  shardcal::testing::run_spmd(2, [&](Communicator& world) {
    const auto timer = world.make_op_timer();
    EXPECT_EQ(timer->method(), "host_clock");
    EXPECT_THROW((void)timer->elapsed_s(), shardcal::Error);  // nothing timed yet
    // The timer is reusable: every start() begins a new interval.
    for (double want : {0.0, 2e-3, 5e-4}) {
      timer->start();
      const auto b0 = Clock::now();
      double busy = 0;
      while ((busy = std::chrono::duration<double>(Clock::now() - b0).count()) < want) {
      }
      timer->stop();
      const double e = timer->elapsed_s();
      EXPECT_TRUE(std::isfinite(e));
      EXPECT_GE(e, busy) << want;
      EXPECT_LT(e, busy + 5.0) << want;  // generous: a loaded machine may preempt us
      EXPECT_EQ(timer->elapsed_s(), e);  // reading does not change the interval
    }
    timer->start();
    EXPECT_THROW((void)timer->elapsed_s(), shardcal::Error);  // started, not stopped
  });
}

// Every measurement says which timer produced its samples; wrappers forward the timer.
TEST(Runner, MeasurementsRecordTheTimer) {
  const SweepConfig cfg = small_config();
  shardcal::testing::run_spmd(4, [&](Communicator& world) {
    CorruptingComm fwd(world, false);
    for (Communicator* c : {&world, static_cast<Communicator*>(&fwd)}) {
      shardcal::MeshCommunicator mc(shardcal::DeviceMesh::parse("2x2"), *c);
      for (Mode mode : {Mode::PerIteration, Mode::Pipelined}) {
        const Measurement m = measure_collective(
            mc, collective_point(Collective::AllReduce, "2x2", 1, DType::F32, "even", 64, mode),
            cfg);
        EXPECT_EQ(m.timer, "host_clock");
        EXPECT_EQ(m.wrong, 0u);
        for (double s : m.samples) EXPECT_TRUE(std::isfinite(s) && s >= 0) << s;
      }
      const shardcal::TensorMeta meta{{4, 6}, DType::F32};
      const shardcal::TensorSpec a(mc.mesh(), shardcal::parse_placements("S(0),R"), meta);
      const shardcal::TensorSpec b(mc.mesh(), shardcal::parse_placements("R,S(1)"), meta);
      const Measurement m = measure_transition(mc, shardcal::plan_redistribution(a, b), cfg);
      EXPECT_EQ(m.timer, "host_clock");
      EXPECT_EQ(m.wrong, 0u);
    }
  });
}

TEST(Runner, RotationSlots) {
  EXPECT_EQ(rotation_slots(1 << 20, 1 << 20, 64), 1);
  EXPECT_EQ(rotation_slots(512, 4096, 64), 8);
  EXPECT_EQ(rotation_slots(500, 4096, 64), 9);
  EXPECT_EQ(rotation_slots(8, 1 << 30, 64), 64);
  EXPECT_EQ(rotation_slots(0, 0, 64), 1);
  // Reference patterns stay exact: reductions of any group size never exceed 250.
  for (int n : {1, 2, 3, 100, 251, 1000}) {
    double worst = 0;
    for (int i = 0; i < 300; ++i) {
      double s = 0;
      for (int r = 0; r < n; ++r) s += reduce_pattern_value(r, i, n);
      worst = std::max(worst, s);
    }
    EXPECT_LE(worst, 250.0) << n;
  }
}

// Slurm: a stop signal is noticed within a bounded time even in a long point.
namespace {

TEST(Runner, CheckpointsAreAtMostAPollIntervalOfSamplesApart) {
  // Fast samples: the usual schedule (straight to iterations_min, then +25%).
  EXPECT_EQ(next_checkpoint(1, 10, 1000, 1e-5), 10u);
  EXPECT_EQ(next_checkpoint(100, 10, 1000, 1e-3), 125u);
  EXPECT_EQ(next_checkpoint(990, 10, 1000, 1e-2), 1000u);  // capped at iterations_max
  // 0.1 s per sample: at most kStopPollS (1 s) = 10 samples between checks, also below min.
  EXPECT_EQ(next_checkpoint(1000, 10, 100000, 100.0), 1010u);
  EXPECT_EQ(next_checkpoint(1, 100000, 1000000, 0.1), 11u);
  // A sample longer than the poll interval: check after every sample.
  EXPECT_EQ(next_checkpoint(5, 100, 1000, 50.0), 6u);
  // Samples run but not kept (a window start's short ones, run again) set the time per sample
  // too: none kept after one 0.5 s sample, 2 more before the next check, not iterations_min (10);
  // 4 kept of 8 run in 1 s: 0.125 s each, 6 more (to iterations_min), not 4.
  EXPECT_EQ(next_checkpoint(0, 10, 1000, 0.5, 1), 2u);
  EXPECT_EQ(next_checkpoint(0, 10, 1000, 0.5), 10u);
  EXPECT_EQ(next_checkpoint(4, 10, 1000, 1.0, 8), 10u);
  EXPECT_EQ(next_checkpoint(4, 10, 1000, 1.0), 8u);
  // A window that just doubled to 0.4 s: every sample takes at least that, 2 more, however fast
  // the 4000 samples before it were.
  EXPECT_EQ(next_checkpoint(4000, 10, 100000, 4.0, 4000, 0.4), 4002u);
}

// A window start's window (docs/RESULTS_FORMAT.md "Starting a sample"): doubles where more than a
// tenth of the samples run since the last checkpoint got the start time late, up to the cap, and
// never narrows within a point; so a checkpoint keeps 9 in 10 of its samples or doubles, and a
// point ends within its sample count plus log2(cap / base) checkpoints.
TEST(Runner, StartWindowDoublesWhereMoreThanATenthWereShort) {
  EXPECT_EQ(next_start_window_us(100, 1e6, 1, 1), 200);   // the single first sample was short
  EXPECT_EQ(next_start_window_us(100, 1e6, 1, 10), 100);  // a tenth: run again, same window
  EXPECT_EQ(next_start_window_us(100, 1e6, 2, 11), 200);
  EXPECT_EQ(next_start_window_us(100, 1e6, 0, 40), 100);  // clean: not narrower
  EXPECT_EQ(next_start_window_us(800e3, 1e6, 5, 5), 1e6);  // capped
  EXPECT_EQ(next_start_window_us(1e6, 1e6, 5, 5), 1e6);
  double w = 1;
  int doublings = 0;
  while (w < 1e6) w = next_start_window_us(w, 1e6, 3, 3), ++doublings;
  EXPECT_EQ(doublings, 20);  // ceil(log2(1e6 / 1))
}

TEST(Runner, APendingStopEndsAPointAfterItsFirstSample) {
  SweepConfig cfg = small_config();
  cfg.iterations_min = 100000;  // before: a stop was only seen after iterations_min samples
  cfg.iterations_max = 100000;
  shardcal::testing::run_spmd(4, [&](Communicator& world) {
    shardcal::MeshCommunicator mc(shardcal::DeviceMesh::parse("4"), world);
    if (world.rank() == 1) request_stop(10);  // SIGUSR1: Slurm's warning before the time limit
    const Measurement m = measure_collective(
        mc, collective_point(Collective::AllReduce, "4", 0, DType::F32, "even", 64), cfg);
    EXPECT_TRUE(m.abandoned);
    EXPECT_EQ(m.signal, 10);
    EXPECT_EQ(m.samples.size(), 1u);
    world.barrier();
    clear_stop();
  });
}

}  // namespace

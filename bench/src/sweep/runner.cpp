#include "sweep/runner.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <optional>

#include "shardcal/error.hpp"
#include "shardcal/sharded_tensor.hpp"
#include "sweep/signals.hpp"
#include "sweep/stats.hpp"

namespace shardbench::sweep {

using shardcal::Communicator;
using shardcal::DType;
using shardcal::MemorySpace;

double pattern_value(int src, std::int64_t index) {
  // Values 0..250: exact in u8, f16 and bf16 (integers up to 256 are exact in bf16).
  return double((std::int64_t(src) * 37 + index * 7 + 1) % 251);
}

double reduce_pattern_value(int src, std::int64_t index, int group_size) {
  // Keep every partial and final sum <= 250 so reductions are exact in every dtype, in any
  // summation order: at most 250 contributors, each <= 250 / min(n, 250).
  const int m = std::max(1, 250 / std::max(1, std::min(group_size, 250)));
  return src < 250 ? double((std::int64_t(src) + index) % (m + 1)) : 0.0;
}

int rotation_slots(std::int64_t footprint, std::int64_t rotation_bytes, int max_slots) {
  const std::int64_t f = std::max<std::int64_t>(footprint, 1);
  if (rotation_bytes <= 0 || f >= rotation_bytes) return 1;
  return int(std::clamp<std::int64_t>((rotation_bytes + f - 1) / f, 1, max_slots));
}

namespace {

constexpr double kSentinel = 253.0;  // never produced by the patterns (<= 250)

std::int64_t round_up(std::int64_t v, std::int64_t a) { return (std::max<std::int64_t>(v, 1) + a - 1) / a * a; }

template <class F>
std::vector<std::byte> encode(DType t, std::int64_t n, F&& value) {
  const std::size_t es = shardcal::dtype_size(t);
  std::vector<std::byte> out(std::size_t(n) * es);
  for (std::int64_t i = 0; i < n; ++i) shardcal::store_from_double(t, out.data() + std::size_t(i) * es, value(i));
  return out;
}

std::uint64_t count_wrong(const std::byte* got, const std::vector<std::byte>& want, std::size_t es) {
  std::uint64_t wrong = 0;
  for (std::size_t off = 0; off < want.size(); off += es)
    wrong += std::memcmp(got + off, want.data() + off, es) != 0 ? 1 : 0;
  return wrong;
}

double max_of(const std::vector<std::uint64_t>& bits) {
  double m = 0;
  for (auto u : bits) m = std::max(m, std::bit_cast<double>(u));
  return m;
}

// Runs samples until the stop rule holds; see runner.hpp for why decisions are gathered.
template <class F>
void sample_loop(Communicator& world, const SweepConfig& cfg, Measurement& m, F&& sample) {
  std::vector<double> local;
  const double start = world.now();
  std::size_t next_check = std::size_t(cfg.iterations_min);
  while (true) {
    local.push_back(sample());
    if (local.size() < next_check) continue;
    for (std::size_t k = m.samples.size(); k < local.size(); ++k)
      m.samples.push_back(max_of(world.all_gather_u64(std::bit_cast<std::uint64_t>(local[k]))));
    for (auto s : world.all_gather_u64(std::uint64_t(pending_signal())))
      if (s != 0 && !m.abandoned) m.abandoned = true, m.signal = int(s);
    if (m.abandoned) return;
    m.elapsed_s = max_of(world.all_gather_u64(std::bit_cast<std::uint64_t>(world.now() - start)));
    const std::size_t n = m.samples.size();
    if (n >= std::size_t(cfg.iterations_max)) {
      m.stop_reason = "max_iterations";
      return;
    }
    if (cfg.target_rel_ci > 0 &&
        compute_stats(m.samples, cfg.confidence).rel_ci_halfwidth() <= cfg.target_rel_ci) {
      m.stop_reason = "ci_target";
      return;
    }
    if (m.elapsed_s >= cfg.time_budget_s) {
      m.stop_reason = "time_budget";
      return;
    }
    // Check again after ~25% more samples: few gathers, bounded overshoot of the budget.
    next_check = std::min<std::size_t>(std::size_t(cfg.iterations_max), n + std::max<std::size_t>(1, n / 4));
  }
}

std::uint64_t sum_over_ranks(Communicator& world, std::uint64_t v) {
  std::uint64_t s = 0;
  for (auto x : world.all_gather_u64(v)) s += x;
  return s;
}

// Per-position buffer sizes (elements) of one collective; root = position 0.
std::pair<std::int64_t, std::int64_t> buffer_elems(Collective op, const CollectiveShape& sh, int q) {
  std::int64_t sum = 0;
  for (auto c : sh.counts) sum += c;
  const std::int64_t mine = sh.counts[std::size_t(q)];
  switch (op) {
    case Collective::AllGather: return {mine, sum};
    case Collective::ReduceScatter: return {sum, mine};
    case Collective::AllReduce: return {mine, mine};
    case Collective::AllToAll: return {sum, std::int64_t(sh.n) * mine};
    case Collective::Broadcast: return {0, mine};
    case Collective::Scatter: return {q == 0 ? sum : 0, mine};
    case Collective::Gather: return {mine, q == 0 ? sum : 0};
  }
  return {0, 0};
}

}  // namespace

Measurement measure_collective(shardcal::MeshCommunicator& mc, const Point& p, const SweepConfig& cfg) {
  Communicator& world = mc.world();
  Communicator& g = mc.dim(p.mesh_dim);
  MemorySpace& mem = mc.memory();
  const int n = g.size();
  const int r = g.rank();
  const DType t = p.dtype;
  const auto es = std::int64_t(shardcal::dtype_size(t));
  const CollectiveShape sh = collective_shape(p.op, t, p.size, p.dist, n);
  const bool reduces = collective_info(p.op).reduces;

  std::vector<std::size_t> counts(sh.counts.begin(), sh.counts.end()), displs(counts.size(), 0);
  for (std::size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
  const std::size_t mine = counts[std::size_t(r)];
  // all_to_allv receive side: block j holds what j sent to us (our count from everyone).
  std::vector<std::size_t> rcounts(counts.size(), mine), rdispls(counts.size(), 0);
  for (std::size_t j = 0; j < rdispls.size(); ++j) rdispls[j] = j * mine;

  const auto [send_n, recv_n] = buffer_elems(p.op, sh, r);
  std::int64_t footprint = 0;  // the largest position's, so every rank picks the same slot count
  for (int q = 0; q < n; ++q) {
    const auto [s, rv] = buffer_elems(p.op, sh, q);
    footprint = std::max(footprint, round_up(s * es, 256) + round_up(rv * es, 256));
  }
  Measurement m;
  m.slots = rotation_slots(footprint, cfg.rotation_bytes, cfg.rotation_max_slots);
  m.depth = p.mode == Mode::Pipelined ? cfg.pipeline_depth : 1;
  const std::int64_t send_stride = round_up(send_n * es, 256), recv_stride = round_up(recv_n * es, 256);
  shardcal::Buffer send(mem, std::size_t(send_stride * m.slots));
  shardcal::Buffer recv(mem, std::size_t(recv_stride * m.slots));

  // Inputs: the reference pattern in every slot; outputs: a sentinel the op must overwrite.
  auto send_val = [&](std::int64_t i) { return reduces ? reduce_pattern_value(r, i, n) : pattern_value(r, i); };
  const auto send_one = encode(t, send_n, send_val);
  const bool bcast_root = p.op == Collective::Broadcast && r == 0;
  const auto recv_init = encode(t, recv_n, [&](std::int64_t i) { return bcast_root ? pattern_value(0, i) : kSentinel; });
  {
    std::vector<std::byte> img(std::size_t(send_stride * m.slots));
    std::vector<std::byte> rimg(std::size_t(recv_stride * m.slots));
    for (int s = 0; s < m.slots; ++s) {
      std::copy(send_one.begin(), send_one.end(), img.begin() + s * send_stride);
      std::copy(recv_init.begin(), recv_init.end(), rimg.begin() + s * recv_stride);
    }
    mem.copy_from_host(send.data(), img.data(), img.size());
    mem.copy_from_host(recv.data(), rimg.data(), rimg.size());
  }

  // What each output element must be, from the senders' patterns.
  const auto expected = encode(t, recv_n, [&](std::int64_t k) -> double {
    const auto ku = std::size_t(k);
    auto block_of = [&](const std::vector<std::size_t>& d) {
      return int(std::upper_bound(d.begin(), d.end(), ku) - d.begin()) - 1;
    };
    switch (p.op) {
      case Collective::AllGather:
      case Collective::Gather: {
        // Skip empty blocks: upper_bound lands on the last block starting at or before k.
        const int j = block_of(displs);
        return pattern_value(j, std::int64_t(ku - displs[std::size_t(j)]));
      }
      case Collective::ReduceScatter:
      case Collective::AllReduce: {
        const std::int64_t idx = p.op == Collective::AllReduce ? k : std::int64_t(displs[std::size_t(r)]) + k;
        double s = 0;
        for (int j = 0; j < n; ++j) s += reduce_pattern_value(j, idx, n);
        return s;
      }
      case Collective::AllToAll: {
        const int j = mine == 0 ? 0 : int(ku / mine);
        return pattern_value(j, std::int64_t(displs[std::size_t(r)] + ku % std::max<std::size_t>(mine, 1)));
      }
      case Collective::Broadcast: return pattern_value(0, k);
      case Collective::Scatter: return pattern_value(0, std::int64_t(displs[std::size_t(r)]) + k);
    }
    return 0;
  });

  auto* sbase = static_cast<std::byte*>(send.data());
  auto* rbase = static_cast<std::byte*>(recv.data());
  std::uint64_t ops = 0;
  auto run_op = [&] {
    const int s = int(ops++ % std::uint64_t(m.slots));
    const void* sp = sbase + s * send_stride;
    void* rp = rbase + s * recv_stride;
    const auto c = counts.front();
    using shardcal::ReduceOp;
    switch (p.op) {
      case Collective::AllGather:
        sh.uniform ? g.all_gather(sp, rp, c, t) : g.all_gatherv(sp, mine, rp, counts, displs, t);
        break;
      case Collective::ReduceScatter:
        sh.uniform ? g.reduce_scatter(sp, rp, c, t, ReduceOp::Sum) : g.reduce_scatterv(sp, rp, counts, t, ReduceOp::Sum);
        break;
      case Collective::AllReduce: g.all_reduce(sp, rp, c, t, ReduceOp::Sum); break;
      case Collective::AllToAll:
        sh.uniform ? g.all_to_all(sp, rp, c, t) : g.all_to_allv(sp, counts, displs, rp, rcounts, rdispls, t);
        break;
      case Collective::Broadcast: g.broadcast(rp, c, t, 0); break;
      case Collective::Scatter:
        sh.uniform ? g.scatter(sp, rp, c, t, 0) : g.scatterv(sp, counts, displs, rp, mine, t, 0);
        break;
      case Collective::Gather:
        sh.uniform ? g.gather(sp, rp, c, t, 0) : g.gatherv(sp, mine, rp, counts, displs, t, 0);
        break;
    }
  };
  std::vector<std::byte> host(static_cast<std::size_t>(recv_stride));
  auto check_slot = [&](int s) -> std::uint64_t {
    if (expected.empty()) return 0;
    mem.copy_to_host(host.data(), rbase + s * recv_stride, expected.size());
    return count_wrong(host.data(), expected, std::size_t(es));
  };

  std::uint64_t wrong = 0;
  if (cfg.check) {  // one run from sentinel outputs, as nccl-tests' check pass
    run_op();
    mem.synchronize();
    wrong += check_slot(0);
    ops = 0;
  }
  for (int w = 0; w < cfg.warmup; ++w) run_op();
  mem.synchronize();

  // The group's own timer (on NCCL: events on the stream its operations run on).
  const std::unique_ptr<shardcal::OpTimer> timer = g.make_op_timer();
  m.timer = timer->method();
  sample_loop(world, cfg, m, [&] {
    world.barrier();  // untimed: every group starts together
    timer->start();
    for (int k = 0; k < m.depth; ++k) run_op();
    timer->stop();
    return timer->elapsed_s() / m.depth;
  });
  if (m.abandoned) return m;
  if (cfg.check) {  // every slot used by the timed loop must hold the right result too
    const int used = int(std::min<std::uint64_t>(std::uint64_t(m.slots), ops));
    for (int s = 0; s < used; ++s) wrong += check_slot(s);
    m.checked = true;
  }
  m.wrong = sum_over_ranks(world, wrong);
  return m;
}

Measurement measure_transition(shardcal::MeshCommunicator& mc, const Point& p,
                               const shardcal::Plan& plan, const SweepConfig& cfg) {
  using shardcal::ShardedTensor;
  Communicator& world = mc.world();
  MemorySpace& mem = mc.memory();
  const int rank = world.rank();
  const auto& meta = plan.from.meta();
  const std::size_t es = shardcal::dtype_size(meta.dtype);
  const auto global = shardcal::make_reference_tensor(meta);
  const auto init_host = shardcal::expected_local(plan.from, global.data(), rank);
  const auto want = shardcal::expected_local(plan.to, global.data(), rank);
  // The input stays untouched by execute_plan (it reads `in`, writes `out`), and every
  // intermediate buffer lives in the workspace, allocated and pre-faulted once here: a timed
  // sample holds communication and pack/unpack only.
  shardcal::Buffer init(mem, init_host.size());
  mem.copy_from_host(init.data(), init_host.data(), init_host.size());
  const ShardedTensor in(plan.from, rank, std::move(init));
  shardcal::PlanWorkspace ws(mc, plan, /*prefault=*/true);
  ShardedTensor out = shardcal::make_plan_output(mc, ws);
  if (out.local().size() > 0) mem.fill_zero(out.local().data(), out.local().size());
  auto check = [&](const ShardedTensor& t) -> std::uint64_t {
    const auto got = t.local_to_host();
    if (got.size() != want.size()) return want.size() / es + 1;  // wrong shape: count it all
    return count_wrong(got.data(), want, es);
  };

  Measurement m;
  std::uint64_t wrong = 0;
  if (cfg.check) {
    shardcal::execute_plan(mc, ws, in, out);
    mem.synchronize();
    wrong += check(out);
    if (out.local().size() > 0) mem.fill_zero(out.local().data(), out.local().size());
  }
  for (int w = 0; w < cfg.warmup; ++w) shardcal::execute_plan(mc, ws, in, out);
  mem.synchronize();

  // The plan runs on several mesh-dim communicators; they share the world's memory space (on
  // NCCL: the rank's one stream), so the world's timer covers all of them.
  const std::unique_ptr<shardcal::OpTimer> timer = world.make_op_timer();
  m.timer = timer->method();
  bool ran = false;
  sample_loop(world, cfg, m, [&] {
    world.barrier();
    ran = true;
    timer->start();
    shardcal::execute_plan(mc, ws, in, out);
    timer->stop();
    return timer->elapsed_s();
  });
  if (m.abandoned) return m;
  if (cfg.check && ran) {
    wrong += check(out);
    m.checked = true;
  }
  m.wrong = sum_over_ranks(world, wrong);
  (void)p;
  return m;
}

}  // namespace shardbench::sweep

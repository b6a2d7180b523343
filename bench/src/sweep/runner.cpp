#include "sweep/runner.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
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

int rotation_slots(std::int64_t footprint, std::int64_t rotation_bytes, int max_slots) {
  const std::int64_t f = std::max<std::int64_t>(footprint, 1);
  if (rotation_bytes <= 0 || f >= rotation_bytes) return 1;
  return int(std::clamp<std::int64_t>((rotation_bytes + f - 1) / f, 1, max_slots));
}

double next_start_window_us(double now_us, double cap_us, std::size_t short_samples,
                            std::size_t run) {
  // More than a tenth of the samples run since the last checkpoint were short: double (a
  // checkpoint then keeps 9 in 10 of its samples or doubles; at the cap every sample is kept, so
  // the loop ends). Never narrower within a point: a window that was too short once would be
  // again, and each retry costs a sample (a point starts again from start_window_us).
  return short_samples * 10 > run ? std::min(now_us * 2, cap_us) : now_us;
}

std::size_t next_checkpoint(std::size_t n, std::size_t min_n, std::size_t max_n, double elapsed_s,
                            std::size_t runs, double min_sample_s) {
  // ~25% more samples (few gathers, bounded overshoot of the budget), straight to iterations_min
  // before it was reached, but no more than kStopPollS of samples later.
  const std::size_t ran = std::max(n, runs);
  const double per_sample = std::max(ran > 0 ? elapsed_s / double(ran) : 0.0, min_sample_s);
  std::size_t step = n < min_n ? min_n - n : std::max<std::size_t>(1, n / 4);
  if (per_sample > 0 && kStopPollS / per_sample < double(step))
    step = std::max<std::size_t>(1, std::size_t(kStopPollS / per_sample));
  return std::min(std::max(max_n, n + 1), n + step);
}

namespace {

constexpr double kSentinel = 253.0;  // never produced by the patterns (<= 250)

std::int64_t round_up(std::int64_t v, std::int64_t a) { return (std::max<std::int64_t>(v, 1) + a - 1) / a * a; }

constexpr std::int64_t kPage = 4096;

// The first page boundary at or after p (pointer arithmetic only: also for device pointers).
std::byte* page_aligned(void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return static_cast<std::byte*>(p) + (std::uintptr_t(kPage) - a % std::uintptr_t(kPage)) % std::uintptr_t(kPage);
}

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

// How every rank starts a sample (SweepConfig::window_start; docs/RESULTS_FORMAT.md
// "Starting a sample"). Barrier: an untimed world barrier, after which each rank times from its
// own exit. A barrier's algorithm releases ranks a few us apart (SimGrid's linear barrier at 4-7
// ranks lets rank 0 go one message early), and a small message's time then holds that skew.
// Window (ReproMPI's scheme: Hunold and Carpen-Amarie, "Reproducible MPI benchmarking is still
// not as easy as you think", IEEE TPDS 2016): rank 0 sends a start time `window` ahead on the
// clock every rank shares (sweep.cpp check_start_clock made sure there is one), each rank waits
// until it, and a rank's sample runs from that common start to its own end, so a rank that
// starts late has its lateness in the sample. sample_loop marks a sample late when some rank
// started over kLateS after the start, and runs it again when the start time reached some rank
// after it had passed (flags gathered at each checkpoint: exact counts).
class StartGate {
 public:
  static constexpr double kLateS = 1e-6;

  StartGate(Communicator& world, const SweepConfig& cfg, Measurement& m)
      : world_(world),
        window_(cfg.window_start),
        base_us_(std::clamp(cfg.start_window_us, 1.0, kMaxWindowUs)),  // (> 0: doubling ends)
        now_us_(base_us_) {
    if (window_) m.start_window_us = base_us_;
  }
  // Untimed; returns when this rank starts its timer.
  void open(Measurement& m) {
    if (!window_) {
      world_.barrier();
      return;
    }
    m.start_window_us = std::max(m.start_window_us, now_us_);  // the largest window used
    // On the control plane (host memory on every backend), not the data path.
    const double mine = world_.rank() == 0 ? world_.start_clock_now() + now_us_ * 1e-6 : 0.0;
    t_ = std::bit_cast<double>(world_.all_gather_u64(std::bit_cast<std::uint64_t>(mine))[0]);
    short_ = world_.start_clock_now() > t_;  // the window was too short for the start time
    world_.start_clock_wait_until(t_);
    late_s_ = std::max(0.0, world_.start_clock_now() - t_);
  }
  bool window() const { return window_; }
  // Seconds this rank started after the common start (0 with a barrier): added to its sample.
  double late_s() const { return window_ ? late_s_ : 0.0; }
  bool late() const { return window_ && late_s_ > kLateS; }
  // The start time reached this rank only after it had passed: the sample timed the control
  // plane's delivery, not only the operation (ReproMPI counts such a run invalid).
  bool short_start() const { return window_ && short_; }
  // Whether the window may still double: short samples are run again until it can't.
  bool can_widen() const { return window_ && now_us_ < kMaxWindowUs; }
  // At every checkpoint (a no-op with a barrier), from counts every rank holds alike (gathered
  // flags): next_start_window_us.
  void checkpoint(std::size_t short_samples, std::size_t run) {
    if (window_) now_us_ = next_start_window_us(now_us_, kMaxWindowUs, short_samples, run);
  }
  double window_s() const { return window_ ? now_us_ * 1e-6 : 0.0; }

 private:
  // 1 s: SMPI's start all_gather over 128 ranks of 1 ms hops (a forced ring) takes ~130 ms.
  static constexpr double kMaxWindowUs = 1e6;  // (start_window_us is at most that too)
  Communicator& world_;
  bool window_;
  double base_us_, now_us_;
  double t_ = 0, late_s_ = 0;
  bool short_ = false;
};

// Runs samples until the stop rule holds; see runner.hpp for why decisions are gathered.
// sample(may_be_last) is told whether a checkpoint (a stop decision) follows it: the loop only
// ever ends right after such a sample (or on a stop request, when the point is dropped anyway).
// Checkpoints come after the first sample, at iterations_min, then after ~25% more samples but
// at most kStopPollS of samples apart (judged from the gathered wall time per sample, so every
// rank computes the same schedule): a stop signal is noticed within about kStopPollS, or one
// sample when a single sample is longer (docs/SLURM.md, "Signals").
template <class F>
void sample_loop(Communicator& world, const SweepConfig& cfg, Measurement& m, StartGate& gate,
                 F&& sample) {
  std::vector<double> local;  // this rank's kept samples (their slowest rank's are m.samples)
  std::vector<double> batch;  // since the last checkpoint
  std::vector<std::uint64_t> flags;  // per batch sample: 1 late, 2 short (window start only)
  const double start = world.now();
  const auto min_n = std::size_t(std::max(1, cfg.iterations_min));
  const auto max_n = std::size_t(std::max(cfg.iterations_max, cfg.iterations_min));
  std::size_t next_check = 1;
  while (true) {
    batch.push_back(sample(m.samples.size() + batch.size() + 1 >= next_check));
    flags.push_back((gate.late() ? 1u : 0u) | (gate.short_start() ? 2u : 0u));
    if (m.samples.size() + batch.size() < next_check) continue;
    // Window start: each sample's flags over every rank, 32 samples a word. A sample in which the
    // start time reached some rank after it had passed is run again (with the window the
    // checkpoint below sets) while the window can still grow: it timed the start's delivery
    // (on SimGrid's example fat tree, 50 us links, the start's all_gather over 64 ranks took
    // 12.6 ms, 2.6 ms past a 10 ms window, all of it in every 16-host sample). Late samples
    // (some rank woke over 1 us after the start) are kept, their lateness inside them.
    std::vector<std::uint64_t> any(batch.size(), 0);
    if (gate.window()) {
      for (std::size_t w = 0; w * 32 < batch.size(); ++w) {
        const std::size_t end = std::min(batch.size(), (w + 1) * 32);
        std::uint64_t word = 0;
        for (std::size_t k = w * 32; k < end; ++k) word |= flags[k] << (2 * (k - w * 32));
        for (auto x : world.all_gather_u64(word))
          for (std::size_t k = w * 32; k < end; ++k) any[k] |= (x >> (2 * (k - w * 32))) & 3u;
      }
    }
    const bool may_retry = gate.can_widen();
    std::size_t short_samples = 0;
    for (std::size_t k = 0; k < batch.size(); ++k) {
      double most = 0;
      for (auto u : world.all_gather_u64(std::bit_cast<std::uint64_t>(batch[k])))
        most = std::max(most, std::bit_cast<double>(u));
      short_samples += (any[k] & 2u) ? 1 : 0;
      if ((any[k] & 2u) && may_retry) {
        ++m.retried_samples;
        continue;
      }
      m.samples.push_back(most);
      local.push_back(batch[k]);
      m.late_samples += (any[k] & 1u) ? 1 : 0;
    }
    gate.checkpoint(short_samples, batch.size());
    batch.clear();
    flags.clear();
    for (auto s : world.all_gather_u64(std::uint64_t(pending_signal())))
      if (s != 0 && !m.abandoned) m.abandoned = true, m.signal = int(s);
    if (m.abandoned) return;
    m.elapsed_s = max_of(world.all_gather_u64(std::bit_cast<std::uint64_t>(world.now() - start)));
    const std::size_t n = m.samples.size();
    if (n >= max_n) {
      m.stop_reason = "max_iterations";
      break;
    }
    if (n >= min_n) {
      if (cfg.target_rel_ci > 0 &&
          compute_stats(m.samples, cfg.confidence).rel_ci_halfwidth() <= cfg.target_rel_ci) {
        m.stop_reason = "ci_target";
        break;
      }
      if (m.elapsed_s >= cfg.time_budget_s) {
        m.stop_reason = "time_budget";
        break;
      }
    }
    // (Every sample from now on costs at least the window: the mean so far may lag a doubling.)
    next_check = next_checkpoint(n, min_n, max_n, m.elapsed_s, n + std::size_t(m.retried_samples),
                                 gate.window_s());
  }
  // OSU's and IMB's statistic, from the same samples after the timed loop: each rank's mean over
  // its own samples, then across ranks (OSU prints the mean by default, max and min with -f).
  double sum = 0;
  for (double x : local) sum += x;
  const auto means = world.all_gather_u64(std::bit_cast<std::uint64_t>(sum / double(local.size())));
  m.rank_mean_min_s = std::numeric_limits<double>::infinity();
  for (auto u : means) {
    const double x = std::bit_cast<double>(u);
    m.rank_mean_max_s = std::max(m.rank_mean_max_s, x);
    m.rank_mean_min_s = std::min(m.rank_mean_min_s, x);
    m.rank_mean_avg_s += x / double(means.size());
  }
}

std::uint64_t sum_over_ranks(Communicator& world, std::uint64_t v) {
  std::uint64_t s = 0;
  for (auto x : world.all_gather_u64(v)) s += x;
  return s;
}

}  // namespace

namespace {

// A collective point's rotation slot count: from the largest position's footprint, so every
// rank picks the same count; buffers of a page or more take whole pages (see
// CollectiveBuffers), so then pages bound it (rotation stays within its bytes).
int collective_slots(const shardcal::CollectiveCall& call, const SweepConfig& cfg) {
  const std::int64_t fine = call.footprint_bytes(256);
  const std::int64_t footprint = fine >= kPage ? call.footprint_bytes(kPage) : fine;
  return rotation_slots(footprint, cfg.rotation_bytes, cfg.rotation_max_slots);
}

// A collective point's send and receive slots, filled before anything is timed: the reference
// input in every send slot, and in every receive slot a sentinel the op must overwrite (or, in
// place at the root, the input). Buffers start on a page, and slots of a page or more on pages
// too, as OSU's (posix_memalign to the page size) and any large allocation do: on 2 ranks (Open
// MPI 4.1.4) buffers 64 B past a page made 4-16 KiB all_gather/all_reduce 7-10 % slower
// (docs/PERFORMANCE.md, "OSU").
struct CollectiveBuffers {
  shardcal::Buffer send, recv;
  std::byte* sbase = nullptr;
  std::byte* rbase = nullptr;
  std::int64_t send_stride = 0, recv_stride = 0;
};

CollectiveBuffers make_collective_buffers(MemorySpace& mem, const shardcal::CollectiveCall& call,
                                          DType t, int r, bool input_in_recv, int slots) {
  const auto es = std::int64_t(shardcal::dtype_size(t));
  const auto send_n = std::int64_t(call.send_elems), recv_n = std::int64_t(call.recv_elems);
  auto stride = [](std::int64_t b) { return round_up(b, b >= kPage ? kPage : 256); };
  CollectiveBuffers b;
  b.send_stride = stride(send_n * es);
  b.recv_stride = stride(recv_n * es);
  b.send = shardcal::Buffer(mem, std::size_t(b.send_stride * slots + kPage));
  b.recv = shardcal::Buffer(mem, std::size_t(b.recv_stride * slots + kPage));
  b.sbase = page_aligned(b.send.data());
  b.rbase = page_aligned(b.recv.data());

  auto input = [&](std::int64_t i) { return shardcal::reference_input(call, r, i); };
  const auto send_one = encode(t, send_n, input);
  const bool recv_is_input = input_in_recv && r == 0;
  const auto recv_init = encode(t, recv_n, [&](std::int64_t i) { return recv_is_input ? input(i) : kSentinel; });
  std::vector<std::byte> img(std::size_t(b.send_stride * slots));
  std::vector<std::byte> rimg(std::size_t(b.recv_stride * slots));
  for (int s = 0; s < slots; ++s) {
    std::copy(send_one.begin(), send_one.end(), img.begin() + s * b.send_stride);
    std::copy(recv_init.begin(), recv_init.end(), rimg.begin() + s * b.recv_stride);
  }
  mem.copy_from_host(b.sbase, img.data(), img.size());
  mem.copy_from_host(b.rbase, rimg.data(), rimg.size());
  return b;
}

}  // namespace

Measurement measure_collective(shardcal::MeshCommunicator& mc, const Point& p, const SweepConfig& cfg) {
  // Shared harness: everything specific to p.op comes from its collective-table entry (sizes,
  // the call, the reference output); see shardcal/collectives.hpp.
  Communicator& world = mc.world();
  Communicator& g = mc.dim(p.mesh_dim);
  MemorySpace& mem = mc.memory();
  const int r = g.rank();
  const DType t = p.dtype;
  const auto es = std::int64_t(shardcal::dtype_size(t));
  const CollectiveShape sh = collective_shape(p.op, t, p.size, p.dist, g.size());
  const shardcal::CollectiveCall call = shardcal::make_collective_call(p.op, t, sh.counts, r);
  Measurement m;
  m.slots = collective_slots(call, cfg);
  m.depth = p.mode == Mode::Pipelined ? cfg.pipeline_depth : 1;
  const CollectiveBuffers bufs =
      make_collective_buffers(mem, call, t, r, collective_info(p.op).input_in_recv, m.slots);
  std::byte* const sbase = bufs.sbase;
  std::byte* const rbase = bufs.rbase;
  const std::int64_t send_stride = bufs.send_stride, recv_stride = bufs.recv_stride;

  // What each output element must be, from the senders' patterns.
  const auto expected = encode(t, std::int64_t(call.recv_elems),
                               [&](std::int64_t k) { return shardcal::reference_output(call, k); });

  std::uint64_t ops = 0;
  // Inside the timed region: the table's call resolved once, and the slot advanced without a
  // division (a few ns on a ~250 ns small-message call are visible in parity.sh's table 2).
  const auto issue = collective_info(p.op).call;
  int slot = 0;
  auto run_op = [&] {
    issue(g, call, sbase + slot * send_stride, rbase + slot * recv_stride);
    if (++slot == m.slots) slot = 0;
    ++ops;
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
    slot = 0;
  }
  for (int w = 0; w < cfg.warmup; ++w) run_op();
  mem.synchronize();

  // The group's own timer (on NCCL: events on the stream its operations run on).
  const std::unique_ptr<shardcal::OpTimer> timer = g.make_op_timer();
  m.timer = timer->method();
  StartGate gate(world, cfg, m);
  sample_loop(world, cfg, m, gate, [&](bool) {
    gate.open(m);  // untimed: every group starts together
    timer->start();
    for (int k = 0; k < m.depth; ++k) run_op();
    timer->stop();
    return (gate.late_s() + timer->elapsed_s()) / m.depth;
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

OutputCheck::OutputCheck(MemorySpace& mem, DType t, std::vector<std::byte> want)
    : mem_(mem), t_(t), es_(shardcal::dtype_size(t)), want_(std::move(want)) {
  sentinel_ = encode(t, std::int64_t(want_.size() / es_), [](std::int64_t) { return kSentinel; });
}

void OutputCheck::arm(void* out, std::size_t bytes) {
  // An output of the wrong size is not an error here (no rank may throw alone in the middle of
  // a point): it is filled all the same, and wrong() counts all of it.
  if (bytes != sentinel_.size()) {
    sentinel_ = encode(t_, std::int64_t(bytes / es_), [](std::int64_t) { return kSentinel; });
    sentinel_.resize(bytes);
  }
  if (bytes > 0) mem_.copy_from_host(out, sentinel_.data(), bytes);
  mem_.synchronize();
}

std::uint64_t OutputCheck::wrong(const std::vector<std::byte>& got) const {
  if (got.size() != want_.size()) return want_.size() / es_ + 1;  // wrong shape: count it all
  return count_wrong(got.data(), want_, es_);
}

namespace {

// One rotated set of a transition's buffers: its own input (the reference blocks, never written
// by a run), plan workspace and output.
struct TransitionSlot {
  shardcal::ShardedTensor in;
  shardcal::PlanWorkspace ws;
  shardcal::ShardedTensor out;
  std::int64_t footprint() const {
    return std::int64_t(in.local().size() + ws.bytes() + out.local().size());
  }
};

TransitionSlot make_transition_slot(shardcal::MeshCommunicator& mc, const shardcal::Plan& plan,
                                    const std::vector<std::byte>& init_host) {
  MemorySpace& mem = mc.memory();
  shardcal::Buffer init(mem, init_host.size());
  mem.copy_from_host(init.data(), init_host.data(), init_host.size());
  shardcal::ShardedTensor in(plan.from, mc.rank(), std::move(init));
  shardcal::PlanWorkspace ws(mc, plan, /*prefault=*/true);
  shardcal::ShardedTensor out = shardcal::make_plan_output(mc, ws);
  return {std::move(in), std::move(ws), std::move(out)};
}

// The same protocol as a collective point (so a transition and the sum of its steps'
// collectives are comparable): whole (input, workspace, output) sets rotate between runs, as
// many as rotation_slots() gives for their footprint (the largest rank's, so every rank picks
// the same count). Inputs stay untouched by execute_plan, and every intermediate buffer lives in
// a slot's workspace, allocated and pre-faulted here: a timed sample holds communication and
// pack/unpack only. Each rank's blocks come from the reference formula: no global tensor per
// rank (a simulated world runs every rank in one process).
std::vector<TransitionSlot> make_transition_slots(shardcal::MeshCommunicator& mc,
                                                  const shardcal::Plan& plan,
                                                  const SweepConfig& cfg) {
  Communicator& world = mc.world();
  const auto init_host = shardcal::expected_reference_local(plan.from, world.rank());
  std::vector<TransitionSlot> slots;
  slots.push_back(make_transition_slot(mc, plan, init_host));
  std::int64_t footprint = 0;
  for (auto f : world.all_gather_u64(std::uint64_t(slots[0].footprint())))
    footprint = std::max(footprint, std::int64_t(f));
  const int n = rotation_slots(footprint, cfg.rotation_bytes, cfg.rotation_max_slots);
  slots.reserve(std::size_t(n));
  while (int(slots.size()) < n) slots.push_back(make_transition_slot(mc, plan, init_host));
  return slots;
}

}  // namespace

Measurement measure_transition(shardcal::MeshCommunicator& mc, const shardcal::Plan& plan,
                               const SweepConfig& cfg) {
  Communicator& world = mc.world();
  MemorySpace& mem = mc.memory();
  const int rank = world.rank();
  const auto& meta = plan.from.meta();
  std::vector<TransitionSlot> slots = make_transition_slots(mc, plan, cfg);
  Measurement m;
  m.slots = int(slots.size());

  // Outputs are reused, so a check of one is only meaningful right after it was filled with the
  // sentinel: a run that wrote nothing (or part of it) then leaves sentinels behind. Every
  // slot's output starts as the sentinel, as a collective's receive slots do.
  OutputCheck check(mem, meta.dtype, shardcal::expected_reference_local(plan.to, rank));
  auto arm = [&](int s) { check.arm(slots[std::size_t(s)].out.local().data(), slots[std::size_t(s)].out.local().size()); };
  auto check_slot = [&](int s) { return check.wrong(slots[std::size_t(s)].out.local_to_host()); };
  if (cfg.check)
    for (int s = 0; s < m.slots; ++s) arm(s);

  // Advanced as a collective point advances its slot: after every run, inside the timed region.
  int slot = 0;
  std::uint64_t runs = 0;
  auto run = [&] {
    TransitionSlot& s = slots[std::size_t(slot)];
    shardcal::execute_plan(mc, s.ws, s.in, s.out);
    if (++slot == m.slots) slot = 0;
    ++runs;
  };
  std::uint64_t wrong = 0;
  if (cfg.check) {  // one untimed run from sentinel outputs
    run();
    mem.synchronize();
    wrong += check_slot(0);
    slot = 0;
    runs = 0;
  }
  for (int w = 0; w < cfg.warmup; ++w) run();
  mem.synchronize();

  // The plan runs on several mesh-dim communicators; they share the world's memory space (on
  // NCCL: the rank's one stream), so the world's timer covers all of them.
  const std::unique_ptr<shardcal::OpTimer> timer = world.make_op_timer();
  m.timer = timer->method();
  bool last_armed = false;
  StartGate gate(world, cfg, m);
  sample_loop(world, cfg, m, gate, [&](bool may_be_last) {
    // Before every sample that may be the last one (a stop decision follows it), and outside the
    // timed region, the output this sample writes is reset to the sentinel, so the check below
    // sees what the last timed run wrote and nothing earlier runs left there.
    last_armed = cfg.check && may_be_last;
    if (last_armed) arm(slot);
    gate.open(m);
    timer->start();
    run();
    timer->stop();
    return gate.late_s() + timer->elapsed_s();
  });
  if (m.abandoned) return m;
  if (cfg.check && last_armed) {  // every slot the runs used, as for a collective point
    mem.synchronize();
    const int used = int(std::min<std::uint64_t>(std::uint64_t(m.slots), runs));
    for (int s = 0; s < used; ++s) wrong += check_slot(s);
    m.checked = true;
  }
  m.wrong = sum_over_ranks(world, wrong);
  return m;
}

}  // namespace shardbench::sweep

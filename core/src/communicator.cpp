#include "shardcal/communicator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#include "shardcal/error.hpp"

namespace shardcal {

// ---- argument checks: the one place every backend's calls go through ----------------------

namespace {

std::string num(std::size_t v) { return std::to_string(v); }

// The problem with a rank or root argument, or "" when it names a rank of a group of n.
std::string rank_problem(const char* role, int r, int n) {
  if (r >= 0 && r < n) return {};
  return std::string(role) + " " + std::to_string(r) + " is out of range for a group of " +
         std::to_string(n);
}

// The problem with rank `me`'s per-rank array, or "" when it has one entry per rank. Names the
// rank: the sim backend reports one rank's problem on every rank, where "passed" alone would
// not say whose array it was.
std::string per_rank_problem(int me, const char* name, Counts c, int n) {
  if (c.size() == std::size_t(n)) return {};
  return "rank " + std::to_string(me) + " passed " + num(c.size()) + " " + name +
         " for a group of " + std::to_string(n) + " (one entry per rank)";
}

// The problem when a rank's own entry of `counts` disagrees with the count it passed itself.
std::string own_block_problem(Counts counts, int rank, const char* verb, std::size_t own,
                              const char* own_name) {
  const std::size_t c = counts[std::size_t(rank)];
  if (c == own) return {};
  return "counts[" + std::to_string(rank) + "] is " + num(c) + " but rank " + std::to_string(rank) +
         " " + verb + " " + num(own) + " (its " + own_name + ")";
}

}  // namespace

void Communicator::reject(const char* op, const std::string& problem) {
  throw Error(std::string(op) + " on " + describe() + ": " + problem);
}

void Communicator::broadcast(void* buf, std::size_t count, DType t, int root) {
  if (auto p = rank_problem("root", root, size()); !p.empty()) reject("broadcast", p);
  do_broadcast(buf, count, t, root);
}

void Communicator::all_reduce(const void* send, void* recv, std::size_t count, DType t,
                              ReduceOp op) {
  do_all_reduce(send, recv, count, t, op);
}

void Communicator::all_gather(const void* send, void* recv, std::size_t count, DType t) {
  do_all_gather(send, recv, count, t);
}

void Communicator::all_gatherv(const void* send, std::size_t send_count, void* recv, Counts counts,
                               Counts displs, DType t) {
  const char* op = "all_gatherv";
  const int n = size(), me = rank();
  if (auto p = per_rank_problem(me, "counts", counts, n); !p.empty()) reject(op, p);
  if (auto p = per_rank_problem(me, "displs", displs, n); !p.empty()) reject(op, p);
  if (auto p = own_block_problem(counts, me, "sends", send_count, "send_count"); !p.empty())
    reject(op, p);
  do_all_gatherv(send, send_count, recv, counts, displs, t);
}

void Communicator::reduce_scatter(const void* send, void* recv, std::size_t count, DType t,
                                  ReduceOp op) {
  do_reduce_scatter(send, recv, count, t, op);
}

void Communicator::reduce_scatterv(const void* send, void* recv, Counts counts, DType t,
                                   ReduceOp op) {
  if (auto p = per_rank_problem(rank(), "counts", counts, size()); !p.empty())
    reject("reduce_scatterv", p);
  do_reduce_scatterv(send, recv, counts, t, op);
}

void Communicator::all_to_all(const void* send, void* recv, std::size_t count, DType t) {
  do_all_to_all(send, recv, count, t);
}

void Communicator::all_to_allv(const void* send, Counts send_counts, Counts send_displs, void* recv,
                               Counts recv_counts, Counts recv_displs, DType t) {
  const char* op = "all_to_allv";
  const int n = size(), me = rank();
  if (auto p = per_rank_problem(me, "send_counts", send_counts, n); !p.empty()) reject(op, p);
  if (auto p = per_rank_problem(me, "send_displs", send_displs, n); !p.empty()) reject(op, p);
  if (auto p = per_rank_problem(me, "recv_counts", recv_counts, n); !p.empty()) reject(op, p);
  if (auto p = per_rank_problem(me, "recv_displs", recv_displs, n); !p.empty()) reject(op, p);
  const auto m = std::size_t(me);
  if (send_counts[m] != recv_counts[m])
    reject(op, "rank " + std::to_string(me) + " sends " + num(send_counts[m]) +
                   " elements to itself (send_counts) but expects " + num(recv_counts[m]) +
                   " (recv_counts)");
  do_all_to_allv(send, send_counts, send_displs, recv, recv_counts, recv_displs, t);
}

void Communicator::scatter(const void* send, void* recv, std::size_t count, DType t, int root) {
  if (auto p = rank_problem("root", root, size()); !p.empty()) reject("scatter", p);
  do_scatter(send, recv, count, t, root);
}

void Communicator::scatterv(const void* send, Counts counts, Counts displs, void* recv,
                            std::size_t recv_count, DType t, int root) {
  const char* op = "scatterv";
  const int n = size(), me = rank();
  if (auto p = rank_problem("root", root, n); !p.empty()) reject(op, p);
  if (me == root) {  // counts/displs are the root's only
    if (auto p = per_rank_problem(me, "counts", counts, n); !p.empty()) reject(op, p);
    if (auto p = per_rank_problem(me, "displs", displs, n); !p.empty()) reject(op, p);
    if (auto p = own_block_problem(counts, me, "expects", recv_count, "recv_count"); !p.empty())
      reject(op, p);
  }
  do_scatterv(send, counts, displs, recv, recv_count, t, root);
}

void Communicator::gather(const void* send, void* recv, std::size_t count, DType t, int root) {
  if (auto p = rank_problem("root", root, size()); !p.empty()) reject("gather", p);
  do_gather(send, recv, count, t, root);
}

void Communicator::gatherv(const void* send, std::size_t send_count, void* recv, Counts counts,
                           Counts displs, DType t, int root) {
  const char* op = "gatherv";
  const int n = size(), me = rank();
  if (auto p = rank_problem("root", root, n); !p.empty()) reject(op, p);
  if (me == root) {
    if (auto p = per_rank_problem(me, "counts", counts, n); !p.empty()) reject(op, p);
    if (auto p = per_rank_problem(me, "displs", displs, n); !p.empty()) reject(op, p);
    if (auto p = own_block_problem(counts, me, "sends", send_count, "send_count"); !p.empty())
      reject(op, p);
  }
  do_gatherv(send, send_count, recv, counts, displs, t, root);
}

namespace {
// The problem with a point-to-point peer, or "".
std::string peer_problem(bool sending, int peer, int rank, int n) {
  if (auto p = rank_problem("peer", peer, n); !p.empty()) return p;
  if (peer != rank) return {};
  return "rank " + std::to_string(rank) + (sending ? " sends to" : " receives from") +
         " itself, which never completes with a blocking send on mpi/nccl; copy the data "
         "locally instead";
}

// Negative tags: MPI reserves them (MPI_ANY_TAG) and refuses them on a send, NCCL has no tags
// and ignored them, the simulator matched them. Refused here, so every backend says the same.
std::string tag_problem(int rank, int tag) {
  return "rank " + std::to_string(rank) + " passed tag " + std::to_string(tag) +
         "; tags must be >= 0";
}
}  // namespace

void Communicator::send(const void* buf, std::size_t count, DType t, int peer, int tag) {
  if (tag < 0) reject("send", tag_problem(rank(), tag));
  if (auto p = peer_problem(true, peer, rank(), size()); !p.empty()) reject("send", p);
  do_send(buf, count, t, peer, tag);
}

void Communicator::recv(void* buf, std::size_t count, DType t, int peer, int tag) {
  if (tag < 0) reject("recv", tag_problem(rank(), tag));
  if (auto p = peer_problem(false, peer, rank(), size()); !p.empty()) reject("recv", p);
  do_recv(buf, count, t, peer, tag);
}


std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  if (color < 0)
    reject("split", "rank " + std::to_string(rank()) + " passed color " + std::to_string(color) +
                        "; colors must be >= 0");
  return do_split(color, key);
}

void Communicator::broadcast_string(std::string& text, int root) {
  if (auto p = rank_problem("root", root, size()); !p.empty()) reject("broadcast_string", p);
  do_broadcast_string(text, root);
}

bool buffers_overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

std::size_t blocks_extent(Counts counts, Counts displs) {
  std::size_t end = 0;
  for (std::size_t i = 0; i < counts.size() && i < displs.size(); ++i)
    if (counts[i] != 0) end = std::max(end, displs[i] + counts[i]);
  return end;
}

// ---- clocks --------------------------------------------------------------------------------

double Communicator::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Communicator::start_clock_now() const { return Communicator::now(); }

void Communicator::start_clock_wait_until(double t) {
  // Sleeps until 100 us before (a sleep overshoots by tens of us), then polls, yielding the core
  // (the sim backend's ranks are threads that may share one).
  while (true) {
    const double left = t - start_clock_now();
    if (left <= 0) return;
    if (left > 200e-6)
      std::this_thread::sleep_for(std::chrono::duration<double>(left - 100e-6));
    else
      std::this_thread::yield();
  }
}

namespace {

// Host steady clock around the operations; stop() waits for the memory space first, so work a
// device backend left outstanding is inside the interval.
class HostClockTimer final : public OpTimer {
 public:
  // Host memory has nothing outstanding: skip its (virtual, empty) synchronize inside the timed
  // interval, where parity.sh's 0.25 us calls see every call.
  explicit HostClockTimer(MemorySpace& mem) : mem_(mem), sync_(mem.kind() != MemoryKind::Host) {}

  void start() override {
    started_ = true;
    stopped_ = false;
    t0_ = Clock::now();
  }
  void stop() override {
    if (!started_) throw Error("internal: OpTimer::stop() without start()");
    if (sync_) mem_.synchronize();
    t1_ = Clock::now();
    stopped_ = true;
  }
  double elapsed_s() override {
    if (!stopped_) throw Error("internal: OpTimer::elapsed_s() before start() and stop()");
    return std::chrono::duration<double>(t1_ - t0_).count();
  }
  std::string method() const override { return "host_clock"; }

 private:
  using Clock = std::chrono::steady_clock;
  MemorySpace& mem_;
  bool sync_;
  Clock::time_point t0_{}, t1_{};
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace

std::unique_ptr<OpTimer> Communicator::make_op_timer() {
  return std::make_unique<HostClockTimer>(memory());
}

}  // namespace shardcal

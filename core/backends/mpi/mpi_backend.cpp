#include "mpi_backend.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "mpi_runtime.hpp"
#include "shardcal/error.hpp"

namespace shardcal::mpi {
namespace {

using detail::ElemType;
using detail::WatchScope;

const std::byte* bytes(const void* p) { return static_cast<const std::byte*>(p); }
std::byte* bytes(void* p) { return static_cast<std::byte*>(p); }

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, std::string desc, double timeout_s)
      : comm_(comm), desc_(detail::intern(desc)), timeout_s_(timeout_s) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    // MPI_TAG_UB is attached to MPI_COMM_WORLD; 32767 is the least MPI guarantees.
    int* tag_ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
    if (found != 0 && tag_ub != nullptr) max_tag_ = *tag_ub;
  }
  ~MpiCommunicator() override {
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin == 0) MPI_Comm_free(&comm_);
  }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  std::string describe() const override { return desc_.str(); }
  MemorySpace& memory() override { return host_memory(); }
  double now() const override { return MPI_Wtime(); }
  ClockScope start_clock_scope() const override { return detail::TimePolicy::clock_scope(); }
  double start_clock_now() const override { return detail::TimePolicy::clock_now(); }
  void start_clock_wait_until(double t) override { detail::TimePolicy::wait_until(t); }
  std::unique_ptr<OpTimer> make_op_timer() override {
    // Under SMPI only MPI_Wtime runs on the simulated clock; real MPI keeps the host clock.
    if (auto t = detail::TimePolicy::op_timer()) return t;
    return Communicator::make_op_timer();
  }

  void barrier() override {
    WatchScope w("barrier", desc_, timeout_s_);
    check("barrier", MPI_Barrier(comm_));
  }

  void do_broadcast(void* buf, std::size_t count, DType t, int root) override {
    WatchScope w("broadcast", desc_, timeout_s_);
    for_chunks(count, dtype_size(t), [&](std::size_t off, int n) {
      check("broadcast", MPI_Bcast(bytes(buf) + off, n, detail::base_type(t), root, comm_));
    });
  }

  void do_all_reduce(const void* send, void* recv, std::size_t count, DType t,
                     ReduceOp op) override {
    const std::size_t es = dtype_size(t), nbytes = count * es;
    Scratch tmp;
    const bool in_place = send == recv;
    if (!in_place) send = tmp.unalias(send, nbytes, recv, nbytes);
    WatchScope w("all_reduce", desc_, timeout_s_);
    // Reductions are elementwise, so a large count is split into calls MPI can take with its
    // own (vectorized) ops.
    for_chunks(count, es, [&](std::size_t off, int n) {
      check("all_reduce",
            MPI_Allreduce(in_place ? MPI_IN_PLACE : bytes(send) + off, bytes(recv) + off, n,
                          detail::base_type(t), detail::reduce_op(t, op, false), comm_));
    });
    if (op == ReduceOp::Avg) finish_avg(t, recv, count, size_);
  }

  void do_all_gather(const void* send, void* recv, std::size_t count, DType t) override {
    const std::size_t es = dtype_size(t), block = count * es;
    Scratch tmp;
    const bool in_place = count > 0 && send == bytes(recv) + std::size_t(rank_) * block;
    if (!in_place) send = tmp.unalias(send, block, recv, block * std::size_t(size_));
    ElemType et(t, count, max_count_);
    WatchScope w("all_gather", desc_, timeout_s_);
    check("all_gather", MPI_Allgather(in_place ? MPI_IN_PLACE : send, et.count(), et.type(), recv,
                                      et.count(), et.type(), comm_));
  }

  void do_all_gatherv(const void* send, std::size_t send_count, void* recv, Counts counts,
                      Counts displs, DType t) override {
    const char* op = "all_gatherv";
    const std::size_t es = dtype_size(t);
    const int* c = to_ints(op, "count", counts, ints_[0]);
    const int* d = to_ints(op, "displacement", displs, ints_[1]);
    Scratch tmp;
    const bool in_place = send_count > 0 && send == bytes(recv) + displs[std::size_t(rank_)] * es;
    if (!in_place)
      send = tmp.unalias(send, send_count * es, recv, blocks_extent(counts, displs) * es);
    WatchScope w(op, desc_, timeout_s_);
    check(op, MPI_Allgatherv(in_place ? MPI_IN_PLACE : send, int(send_count), detail::base_type(t),
                             recv, c, d, detail::base_type(t), comm_));
  }

  void do_reduce_scatter(const void* send, void* recv, std::size_t count, DType t,
                         ReduceOp op) override {
    const std::size_t es = dtype_size(t);
    Scratch tmp;
    send = tmp.unalias(send, count * es * std::size_t(size_), recv, count * es);
    ElemType et(t, count, max_count_);
    WatchScope w("reduce_scatter", desc_, timeout_s_);
    check("reduce_scatter",
          MPI_Reduce_scatter_block(send, recv, et.count(), et.type(),
                                   detail::reduce_op(t, op, et.derived()), comm_));
    if (op == ReduceOp::Avg) finish_avg(t, recv, count, size_);
  }

  void do_reduce_scatterv(const void* send, void* recv, Counts counts, DType t,
                          ReduceOp op) override {
    const char* what = "reduce_scatterv";
    const int* c = to_ints(what, "count", counts, ints_[0]);
    std::size_t total = 0;
    for (std::size_t n : counts) total += n;
    // MPI implementations sum the int counts into an int.
    if (total > std::size_t(INT_MAX))
      fail(what, "the counts add up to " + std::to_string(total) + " elements, more than the " +
                     std::to_string(INT_MAX) + " MPI_Reduce_scatter can take");
    const std::size_t es = dtype_size(t), mine = counts[std::size_t(rank_)];
    Scratch tmp;
    send = tmp.unalias(send, total * es, recv, mine * es);
    WatchScope w(what, desc_, timeout_s_);
    check(what, MPI_Reduce_scatter(send, recv, c, detail::base_type(t),
                                   detail::reduce_op(t, op, false), comm_));
    if (op == ReduceOp::Avg) finish_avg(t, recv, mine, size_);
  }

  void do_all_to_all(const void* send, void* recv, std::size_t count, DType t) override {
    const std::size_t total = count * dtype_size(t) * std::size_t(size_);
    Scratch tmp;
    send = tmp.unalias(send, total, recv, total);
    ElemType et(t, count, max_count_);
    WatchScope w("all_to_all", desc_, timeout_s_);
    check("all_to_all",
          MPI_Alltoall(send, et.count(), et.type(), recv, et.count(), et.type(), comm_));
  }

  void do_all_to_allv(const void* send, Counts send_counts, Counts send_displs, void* recv,
                      Counts recv_counts, Counts recv_displs, DType t) override {
    const char* op = "all_to_allv";
    const int* sc = to_ints(op, "send count", send_counts, ints_[0]);
    const int* sd = to_ints(op, "send displacement", send_displs, ints_[1]);
    const int* rc = to_ints(op, "recv count", recv_counts, ints_[2]);
    const int* rd = to_ints(op, "recv displacement", recv_displs, ints_[3]);
    const std::size_t es = dtype_size(t);
    Scratch tmp;
    send = tmp.unalias(send, blocks_extent(send_counts, send_displs) * es, recv,
                       blocks_extent(recv_counts, recv_displs) * es);
    WatchScope w(op, desc_, timeout_s_);
    check(op, MPI_Alltoallv(send, sc, sd, detail::base_type(t), recv, rc, rd, detail::base_type(t),
                            comm_));
  }

  void do_scatter(const void* send, void* recv, std::size_t count, DType t, int root) override {
    const std::size_t block = count * dtype_size(t);
    Scratch tmp;
    bool in_place = false;
    if (rank_ == root) {
      in_place = count > 0 && recv == bytes(send) + std::size_t(root) * block;
      if (!in_place) send = tmp.unalias(send, block * std::size_t(size_), recv, block);
    }
    ElemType et(t, count, max_count_);
    WatchScope w("scatter", desc_, timeout_s_);
    check("scatter", MPI_Scatter(send, et.count(), et.type(), in_place ? MPI_IN_PLACE : recv,
                                 et.count(), et.type(), root, comm_));
  }

  void do_scatterv(const void* send, Counts counts, Counts displs, void* recv,
                   std::size_t recv_count, DType t, int root) override {
    const char* op = "scatterv";
    const std::size_t es = dtype_size(t);
    const auto [c, d] = root_ints(op, root, counts, displs);
    Scratch tmp;
    bool in_place = false;
    if (rank_ == root) {
      in_place = recv_count > 0 && recv == bytes(send) + displs[std::size_t(root)] * es;
      if (!in_place)
        send = tmp.unalias(send, blocks_extent(counts, displs) * es, recv, recv_count * es);
    }
    const int rn = to_int(op, "recv_count", recv_count);
    WatchScope w(op, desc_, timeout_s_);
    check(op, MPI_Scatterv(send, c, d, detail::base_type(t), in_place ? MPI_IN_PLACE : recv, rn,
                           detail::base_type(t), root, comm_));
  }

  void do_gather(const void* send, void* recv, std::size_t count, DType t, int root) override {
    const std::size_t block = count * dtype_size(t);
    Scratch tmp;
    bool in_place = false;
    if (rank_ == root) {
      in_place = count > 0 && send == bytes(recv) + std::size_t(root) * block;
      if (!in_place) send = tmp.unalias(send, block, recv, block * std::size_t(size_));
    }
    ElemType et(t, count, max_count_);
    WatchScope w("gather", desc_, timeout_s_);
    check("gather", MPI_Gather(in_place ? MPI_IN_PLACE : send, et.count(), et.type(), recv,
                               et.count(), et.type(), root, comm_));
  }

  void do_gatherv(const void* send, std::size_t send_count, void* recv, Counts counts,
                  Counts displs, DType t, int root) override {
    const char* op = "gatherv";
    const std::size_t es = dtype_size(t);
    const auto [c, d] = root_ints(op, root, counts, displs);
    Scratch tmp;
    bool in_place = false;
    if (rank_ == root) {
      in_place = send_count > 0 && send == bytes(recv) + displs[std::size_t(root)] * es;
      if (!in_place)
        send = tmp.unalias(send, send_count * es, recv, blocks_extent(counts, displs) * es);
    }
    const int sn = to_int(op, "send_count", send_count);
    WatchScope w(op, desc_, timeout_s_);
    check(op, MPI_Gatherv(in_place ? MPI_IN_PLACE : send, sn, detail::base_type(t), recv, c, d,
                          detail::base_type(t), root, comm_));
  }

  void do_send(const void* buf, std::size_t count, DType t, int peer, int tag) override {
    check_tag("send", tag);
    WatchScope w("send", desc_, timeout_s_, peer);
    for_chunks(count, dtype_size(t), [&](std::size_t off, int n) {
      check("send", MPI_Send(bytes(buf) + off, n, detail::base_type(t), peer, tag, comm_));
    });
  }

  void do_recv(void* buf, std::size_t count, DType t, int peer, int tag) override {
    check_tag("recv", tag);
    WatchScope w("recv", desc_, timeout_s_, peer);
    std::size_t received = 0;
    for_chunks(count, dtype_size(t), [&](std::size_t off, int n) {
      MPI_Status st;
      check("recv", MPI_Recv(bytes(buf) + off, n, detail::base_type(t), peer, tag, comm_, &st));
      int got = 0;
      check("recv", MPI_Get_count(&st, detail::base_type(t), &got));
      received += std::size_t(got);
      if (got != n)
        fail("recv", "received " + std::to_string(received) + " of the " + std::to_string(count) +
                         " elements expected from rank " + std::to_string(peer) + " (tag " +
                         std::to_string(tag) + "): the matching send was smaller");
    });
  }

  std::unique_ptr<Communicator> do_split(int color, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;
    {
      WatchScope w("split", desc_, timeout_s_);
      check("split", MPI_Comm_split(comm_, color, key, &sub));
    }
    return std::make_unique<MpiCommunicator>(
        sub, "mpi split(color " + std::to_string(color) + ") of " + desc_.str(), timeout_s_);
  }

  std::vector<std::uint64_t> all_gather_u64(std::uint64_t value) override {
    std::vector<std::uint64_t> out(static_cast<std::size_t>(size_));
    WatchScope w("all_gather_u64", desc_, timeout_s_);
    check("all_gather_u64",
          MPI_Allgather(&value, 1, MPI_UINT64_T, out.data(), 1, MPI_UINT64_T, comm_));
    return out;
  }

  void do_broadcast_string(std::string& text, int root) override {
    std::uint64_t len = text.size();
    {
      WatchScope w("broadcast_string", desc_, timeout_s_);
      check("broadcast_string", MPI_Bcast(&len, 1, MPI_UINT64_T, root, comm_));
    }
    text.resize(std::size_t(len));
    do_broadcast(text.data(), std::size_t(len), DType::U8, root);
  }

 private:
  // Copy of a send buffer that overlaps the receive buffer (MPI forbids aliasing; the cases MPI
  // supports natively go through MPI_IN_PLACE instead).
  class Scratch {
   public:
    const void* unalias(const void* send, std::size_t send_bytes, const void* recv,
                        std::size_t recv_bytes) {
      if (!buffers_overlap(send, send_bytes, recv, recv_bytes)) return send;
      copy_ = std::make_unique_for_overwrite<std::byte[]>(send_bytes);
      std::memcpy(copy_.get(), send, send_bytes);
      return copy_.get();
    }

   private:
    std::unique_ptr<std::byte[]> copy_;
  };

  // Calls f(byte offset, element count) for pieces of at most max_count() elements; at least
  // once, so a zero-size operation still synchronizes like any other call.
  template <class F>
  void for_chunks(std::size_t count, std::size_t es, F&& f) {
    const std::size_t limit = max_count_;
    std::size_t off = 0;
    do {
      const std::size_t n = std::min(limit, count - off);
      f(off * es, int(n));
      off += n;
    } while (off < count);
  }

  std::string where() const {
    return " on " + desc_.str() + " (rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
           ", world rank " + std::to_string(detail::world_rank()) + ")";
  }
  [[noreturn]] void fail(const char* op, const std::string& why) const {
    throw Error(std::string(op) + where() + ": " + why);
  }
  void check(const char* op, int rc) const {
    if (rc != MPI_SUCCESS)
      throw Error(std::string(op) + where() + " failed: " + detail::error_string(rc));
  }
  // Peers are checked by Communicator; tags have an MPI-specific upper bound.
  void check_tag(const char* op, int tag) const {
    if (tag < 0 || tag > max_tag_)
      fail(op, "tag " + std::to_string(tag) + " is outside 0.." + std::to_string(max_tag_) +
                   " (MPI_TAG_UB of this MPI)");
  }
  int to_int(const char* op, const char* what, std::size_t v) const {
    if (v > std::size_t(INT_MAX))
      fail(op, std::string(what) + " " + std::to_string(v) + " exceeds " + std::to_string(INT_MAX) +
                   ", the largest count or displacement the MPI-3 v-collectives take (split the "
                   "transfer, or use an MPI-4 library with large-count calls)");
    return int(v);
  }
  // The root's counts and displacements as the int arrays MPI_Scatterv/MPI_Gatherv read there
  // (null on the other ranks, where MPI ignores them).
  std::pair<const int*, const int*> root_ints(const char* op, int root, Counts counts,
                                              Counts displs) {
    if (rank_ != root) return {nullptr, nullptr};
    return {to_ints(op, "count", counts, ints_[0]), to_ints(op, "displacement", displs, ints_[1])};
  }
  // The v-collectives take int arrays; refuse (never truncate) values that do not fit.
  const int* to_ints(const char* op, const char* what, Counts in, std::vector<int>& out) const {
    out.resize(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (in[i] > std::size_t(INT_MAX))
        fail(op, std::string(what) + " " + std::to_string(in[i]) + " for rank " +
                     std::to_string(i) + " exceeds " + std::to_string(INT_MAX) +
                     ", the largest the MPI-3 v-collectives take (split the transfer, or use an "
                     "MPI-4 library with large-count calls)");
      out[i] = int(in[i]);
    }
    return out.data();
  }

  MPI_Comm comm_;
  // Interned: the watchdog may read it after this communicator is gone (WatchScope).
  detail::InternedText desc_;
  double timeout_s_;
  int rank_ = 0;
  int size_ = 1;
  int max_tag_ = 32767;
  // detail::max_count() is fixed once MPI is initialised (before any communicator exists);
  // cached so the per-call paths do not look it up.
  std::size_t max_count_ = detail::max_count();
  std::vector<int> ints_[4];  // reused int copies of v-collective counts/displacements
};

// Waits for a non-blocking request without blocking forever (detail::TimePolicy says how).
bool wait_until_done(MPI_Request& req, double seconds) {
  int rc = MPI_SUCCESS;
  const bool done = detail::TimePolicy::wait(req, seconds, rc);
  if (rc != MPI_SUCCESS)
    detail::abort_job("end-of-run check on mpi world failed: " + detail::error_string(rc),
                      detail::kErrorExitCode);
  return done;
}

// End of run(): every rank says whether its body failed, on a communicator the body never
// used. Returns the lowest failed rank and its message (-1 if none failed), or aborts the job
// when the ranks cannot all get here.
std::pair<int, std::string> agree_on_failures(MPI_Comm ctl, bool failed, const std::string& what,
                                              const Options& opts) {
  int size = 1;
  MPI_Comm_size(ctl, &size);
  int flag = failed ? 1 : 0;
  std::vector<int> flags(static_cast<std::size_t>(size), 0);
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = detail::TimePolicy::start_allgather(&flag, flags.data(), ctl, &req);
  if (rc != MPI_SUCCESS)
    detail::abort_job("end-of-run check on mpi world failed: " + detail::error_string(rc) +
                          (failed ? "; this rank's error: " + what : std::string()),
                      detail::kErrorExitCode);
  if (failed) {
    const double grace = std::min(opts.error_grace_s, opts.timeout_s);
    if (!wait_until_done(req, grace))
      detail::abort_job(
          what + " [the other ranks did not reach the end of the run within " +
              detail::seconds_text(grace) +
              " s, so they are presumably blocked waiting for this rank: aborting the job]",
          detail::kErrorExitCode);
  } else if (!wait_until_done(req, opts.timeout_s)) {
    detail::abort_job(
        "end of run on mpi world timed out after " + detail::seconds_text(opts.timeout_s) +
            " s waiting for the other ranks to finish their SPMD body; aborting the job",
        detail::kTimeoutExitCode);
  }
  const auto it = std::find(flags.begin(), flags.end(), 1);
  if (it == flags.end()) return {-1, {}};
  const int first = int(it - flags.begin());
  // Everyone is here, so the root-cause message can be shared with the healthy ranks.
  std::string text = what.substr(0, 4000);
  std::uint64_t len = text.size();
  WatchScope w("broadcast of the failed rank's error", detail::intern("mpi world (end of run)"),
               opts.timeout_s);
  rc = MPI_Bcast(&len, 1, MPI_UINT64_T, first, ctl);
  if (rc == MPI_SUCCESS) {
    text.resize(std::size_t(len));
    rc = MPI_Bcast(text.data(), int(len), MPI_CHAR, first, ctl);
  }
  if (rc != MPI_SUCCESS)
    text = "(its message could not be received: " + detail::error_string(rc) + ")";
  std::string ranks;
  int nfailed = 0;
  for (int r = 0; r < size; ++r)
    if (flags[std::size_t(r)] != 0) {
      ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
      ++nfailed;
    }
  if (nfailed > 1)
    text += " (ranks " + ranks + " failed; this is rank " + std::to_string(first) + "'s error)";
  return {first, text};
}

}  // namespace

void run(int expected_world, const Options& opts, const std::function<void(Communicator&)>& body) {
  if (!(opts.timeout_s > 0))
    throw Error("the MPI backend needs a positive timeout (got " +
                detail::seconds_text(opts.timeout_s) + " s)");
  detail::ensure_initialized();
  // Before the first MPI call of the run: a watchdog that cannot start is an Error on every rank
  // here, not a hang later (docs/ARCHITECTURE.md, "MPI thread level").
  if constexpr (detail::TimePolicy::kWatchdog) detail::start_watchdog();
  int world_size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (expected_world != 0 && expected_world != world_size)
    throw Error("the MPI job has " + std::to_string(world_size) + " ranks but a world of " +
                std::to_string(expected_world) + " was asked for: start it with mpirun -np " +
                std::to_string(expected_world) + " (or ask for world " +
                std::to_string(world_size) + ", or 0 for whatever was launched)");

  // Private duplicates of MPI_COMM_WORLD: the body's traffic cannot match an earlier run's or
  // the end-of-run check's.
  MPI_Comm data = MPI_COMM_NULL, ctl = MPI_COMM_NULL;
  {
    WatchScope w("MPI_Comm_dup", detail::intern("mpi world (start of run)"), opts.timeout_s);
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &data);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    if (rc != MPI_SUCCESS)
      throw Error("MPI_Comm_dup of MPI_COMM_WORLD failed on world rank " +
                  std::to_string(detail::world_rank()) + ": " + detail::error_string(rc));
  }
  MPI_Comm_set_errhandler(ctl, MPI_ERRORS_RETURN);

  std::exception_ptr error;
  std::string what;
  {
    MpiCommunicator world(data, "mpi world", opts.timeout_s);
    try {
      body(world);
    } catch (const std::exception& e) {
      error = std::current_exception();
      what = e.what();
    } catch (...) {
      error = std::current_exception();
      what = "unknown exception (not derived from std::exception)";
    }
  }
  const auto [failed_rank, message] = agree_on_failures(ctl, error != nullptr, what, opts);
  MPI_Comm_free(&ctl);
  if (error) std::rethrow_exception(error);
  if (failed_rank >= 0)
    throw PeerFailure("rank " + std::to_string(failed_rank) +
                      " of the mpi world failed: " + message);
}

}  // namespace shardcal::mpi

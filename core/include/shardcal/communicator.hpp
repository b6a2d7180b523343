#pragma once
// The one interface every backend (sim, mpi, nccl) implements. Counts and displacements are in
// elements of `dtype`; buffers live in memory() of the communicator. Every call is collective
// over the communicator unless it says otherwise. In place: all_reduce accepts send == recv;
// broadcast is always in place. Send and receive buffers of the other collectives may overlap:
// every backend reads the input before it writes an overlapping output (sim copies each
// contribution on arrival; mpi and nccl use their in-place forms where the overlap is one, and
// otherwise copy the input to scratch memory first: a copy and, on nccl, a stream-ordered
// allocation, so the executor never aliases them). A count of 0 may come with any pointer; ranks
// other than the root may pass empty counts/displs to scatterv/gatherv.
//
// Failure contract: an operation either completes on every rank or throws on every rank that
// reaches it: a peer that threw or died, or a wait longer than the configured timeout, raises
// PeerFailure naming the failed rank (when known) and the operation, never a hang.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "shardcal/dtype.hpp"
#include "shardcal/memory.hpp"

namespace shardcal {

using Counts = std::span<const std::size_t>;

// Times a stretch of a communicator's operations as the place they run on sees it: the host
// clock on host backends, CUDA events on the communicator's stream on NCCL. Use: start(), issue
// the operations, stop(), then elapsed_s(). A timer may be reused: every start() begins a new
// interval. It belongs to the communicator that made it (and must not outlive it) and is used
// from one thread.
class OpTimer {
 public:
  virtual ~OpTimer() = default;
  // Marks the beginning, after everything issued before it.
  virtual void start() = 0;
  // Marks the end, after everything issued before it (the operations to time).
  virtual void stop() = 0;
  // Seconds from start() to stop(); waits until stop's mark has completed (on a device: with the
  // communicator's timeout and failure contract). Throws Error when there was no start()/stop().
  virtual double elapsed_s() = 0;
  // What it measures: "host_clock" | "cuda_event" (recorded in benchmark results).
  virtual std::string method() const = 0;
};

// Public calls check their arguments once, here, before any backend sees them (roots and peers
// in range, count/displacement arrays one entry per rank, a rank's own block consistent with
// its send/recv count, split colors >= 0), so every backend names the same mistake in the same
// words: "<op> on <describe()>: <problem>". Backends implement the protected do_* calls and
// handle only what needs their runtime (aliasing, integer limits of their library); the sim
// backend additionally checks consistency across ranks, which it alone can see.
//
// Where a check fails: the checks are local, so on mpi/nccl a check failing on one rank throws on
// that rank only; the others, already inside the collective, end by the failure contract's
// timeout (PeerFailure from the watchdog / deadline, after timeout_s), as before the checks moved
// here. Only when every rank makes the same mistake does every rank throw at once. The sim
// backend sees all ranks, so it fails every rank of the collective with the message of the lowest
// failing rank. Per-rank problems name the rank ("rank 1 passed 2 counts ...") for that reason.
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;   // "sim" | "mpi" | "nccl"
  virtual std::string describe() const = 0;  // for errors: "mpi world", "mpi mesh dim 1 (group 2)"
  virtual MemorySpace& memory() = 0;

  virtual void barrier() = 0;
  void broadcast(void* buf, std::size_t count, DType t, int root);
  void all_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op);
  // recv holds size() * count elements, rank r's block at r * count.
  void all_gather(const void* send, void* recv, std::size_t count, DType t);
  void all_gatherv(const void* send, std::size_t send_count, void* recv, Counts counts,
                   Counts displs, DType t);
  // send holds size() * count elements; rank r receives the reduction of block r.
  void reduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op);
  // send holds sum(counts) elements, blocks contiguous in rank order; rank r gets counts[r].
  void reduce_scatterv(const void* send, void* recv, Counts counts, DType t, ReduceOp op);
  void all_to_all(const void* send, void* recv, std::size_t count, DType t);
  void all_to_allv(const void* send, Counts send_counts, Counts send_displs, void* recv,
                   Counts recv_counts, Counts recv_displs, DType t);
  void scatter(const void* send, void* recv, std::size_t count, DType t, int root);
  // counts/displs are read on the root only; receivers pass their own recv_count.
  void scatterv(const void* send, Counts counts, Counts displs, void* recv, std::size_t recv_count,
                DType t, int root);
  void gather(const void* send, void* recv, std::size_t count, DType t, int root);
  void gatherv(const void* send, std::size_t send_count, void* recv, Counts counts, Counts displs,
               DType t, int root);
  // Point to point (not collective). A rank never sends to or receives from itself: a blocking
  // send to oneself never completes on mpi/nccl. Tags are >= 0 on every backend (mpi also has an
  // upper bound, MPI_TAG_UB).
  void send(const void* buf, std::size_t count, DType t, int peer, int tag);
  void recv(void* buf, std::size_t count, DType t, int peer, int tag);

  // Collective: ranks with equal color (>= 0) form one new communicator, ordered by key.
  std::unique_ptr<Communicator> split(int color, int key);

  // Host-memory control plane for metadata (specs, hashes, sizes); works on every backend,
  // also when data buffers live on a device.
  virtual std::vector<std::uint64_t> all_gather_u64(std::uint64_t value) = 0;
  void broadcast_string(std::string& text, int root);

  // Wall-clock seconds, comparable within one rank (MPI_Wtime-like).
  virtual double now() const;

  // Starting ranks together at one instant (shardbench's window start, docs/RESULTS_FORMAT.md
  // "Starting a sample"): a clock the ranks read alike, and a wait until a time on it. The scope
  // says which ranks agree on start_clock_now(): Global (every rank: the sim backend's one
  // process, SMPI's simulated clock), Host (ranks on one host: the host's steady clock; real
  // MPI), None (no such clock; the default, and NCCL's, whose timer runs on the device).
  enum class ClockScope { None, Host, Global };
  virtual ClockScope start_clock_scope() const { return ClockScope::None; }
  // Seconds on that clock (the host steady clock by default). Local, not collective.
  virtual double start_clock_now() const;
  // Returns once start_clock_now() >= t, at once when it already is: sleeps, then polls the
  // last ~100 us (a sleep overshoots by tens of us). Local, not collective.
  virtual void start_clock_wait_until(double t);

  // A timer for this communicator's operations (see OpTimer). The default measures the host
  // steady clock, and stop() first waits for memory().synchronize(), so device work issued
  // between start() and stop() is included; method "host_clock".
  virtual std::unique_ptr<OpTimer> make_op_timer();

 protected:
  // The backend's operations, called with arguments the public call has checked.
  virtual void do_broadcast(void* buf, std::size_t count, DType t, int root) = 0;
  virtual void do_all_reduce(const void* send, void* recv, std::size_t count, DType t,
                             ReduceOp op) = 0;
  virtual void do_all_gather(const void* send, void* recv, std::size_t count, DType t) = 0;
  virtual void do_all_gatherv(const void* send, std::size_t send_count, void* recv, Counts counts,
                              Counts displs, DType t) = 0;
  virtual void do_reduce_scatter(const void* send, void* recv, std::size_t count, DType t,
                                 ReduceOp op) = 0;
  virtual void do_reduce_scatterv(const void* send, void* recv, Counts counts, DType t,
                                  ReduceOp op) = 0;
  virtual void do_all_to_all(const void* send, void* recv, std::size_t count, DType t) = 0;
  virtual void do_all_to_allv(const void* send, Counts send_counts, Counts send_displs, void* recv,
                              Counts recv_counts, Counts recv_displs, DType t) = 0;
  virtual void do_scatter(const void* send, void* recv, std::size_t count, DType t, int root) = 0;
  virtual void do_scatterv(const void* send, Counts counts, Counts displs, void* recv,
                           std::size_t recv_count, DType t, int root) = 0;
  virtual void do_gather(const void* send, void* recv, std::size_t count, DType t, int root) = 0;
  virtual void do_gatherv(const void* send, std::size_t send_count, void* recv, Counts counts,
                          Counts displs, DType t, int root) = 0;
  virtual void do_send(const void* buf, std::size_t count, DType t, int peer, int tag) = 0;
  virtual void do_recv(void* buf, std::size_t count, DType t, int peer, int tag) = 0;
  virtual std::unique_ptr<Communicator> do_split(int color, int key) = 0;
  virtual void do_broadcast_string(std::string& text, int root) = 0;

  // The arguments of `op` are wrong on this rank: throws Error("<op> on <describe()>: <problem>").
  // A backend that can tell every rank (sim) overrides it to make the whole collective fail with
  // that message; it must throw. A decorator wrapping another communicator (CorruptingComm in
  // tests/harness/test_runner.cpp) keeps this default, so its checks throw on the failing rank
  // only, even over sim: the inner communicator never sees the call.
  [[noreturn]] virtual void reject(const char* op, const std::string& problem);
};

// For backends handling aliasing: whether [a, a + a_bytes) and [b, b + b_bytes) share a byte
// (empty ranges never do), and the elements spanned by blocks counts[i] at displs[i].
bool buffers_overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes);
std::size_t blocks_extent(Counts counts, Counts displs);

}  // namespace shardcal

#pragma once
// The one interface every backend (sim, mpi, nccl) implements. Counts and displacements are in
// elements of `dtype`; buffers live in memory() of the communicator. Every call is collective
// over the communicator unless it says otherwise. In place: all_reduce accepts send == recv;
// broadcast is always in place; every other collective needs send and recv buffers that do not
// overlap (the executor never aliases them). A count of 0 may come with any pointer; ranks other
// than the root may pass empty counts/displs to scatterv/gatherv.
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

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;   // "sim" | "mpi" | "nccl"
  virtual std::string describe() const = 0;  // for errors: "mpi world", "mpi mesh dim 1 (group 2)"
  virtual MemorySpace& memory() = 0;

  virtual void barrier() = 0;
  virtual void broadcast(void* buf, std::size_t count, DType t, int root) = 0;
  virtual void all_reduce(const void* send, void* recv, std::size_t count, DType t,
                          ReduceOp op) = 0;
  // recv holds size() * count elements, rank r's block at r * count.
  virtual void all_gather(const void* send, void* recv, std::size_t count, DType t) = 0;
  virtual void all_gatherv(const void* send, std::size_t send_count, void* recv, Counts counts,
                           Counts displs, DType t) = 0;
  // send holds size() * count elements; rank r receives the reduction of block r.
  virtual void reduce_scatter(const void* send, void* recv, std::size_t count, DType t,
                              ReduceOp op) = 0;
  // send holds sum(counts) elements, blocks contiguous in rank order; rank r gets counts[r].
  virtual void reduce_scatterv(const void* send, void* recv, Counts counts, DType t,
                               ReduceOp op) = 0;
  virtual void all_to_all(const void* send, void* recv, std::size_t count, DType t) = 0;
  virtual void all_to_allv(const void* send, Counts send_counts, Counts send_displs, void* recv,
                           Counts recv_counts, Counts recv_displs, DType t) = 0;
  virtual void scatter(const void* send, void* recv, std::size_t count, DType t, int root) = 0;
  // counts/displs are read on the root only; receivers pass their own recv_count.
  virtual void scatterv(const void* send, Counts counts, Counts displs, void* recv,
                        std::size_t recv_count, DType t, int root) = 0;
  virtual void gather(const void* send, void* recv, std::size_t count, DType t, int root) = 0;
  virtual void gatherv(const void* send, std::size_t send_count, void* recv, Counts counts,
                       Counts displs, DType t, int root) = 0;
  // Point to point (not collective).
  virtual void send(const void* buf, std::size_t count, DType t, int peer, int tag) = 0;
  virtual void recv(void* buf, std::size_t count, DType t, int peer, int tag) = 0;

  // Collective: ranks with equal color form one new communicator, ordered by key.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  // Host-memory control plane for metadata (specs, hashes, sizes); works on every backend,
  // also when data buffers live on a device.
  virtual std::vector<std::uint64_t> all_gather_u64(std::uint64_t value) = 0;
  virtual void broadcast_string(std::string& text, int root) = 0;

  // Wall-clock seconds, comparable within one rank (MPI_Wtime-like).
  virtual double now() const;

  // A timer for this communicator's operations (see OpTimer). The default measures the host
  // steady clock, and stop() first waits for memory().synchronize(), so device work issued
  // between start() and stop() is included; method "host_clock".
  virtual std::unique_ptr<OpTimer> make_op_timer();
};

}  // namespace shardcal

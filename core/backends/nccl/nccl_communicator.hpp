#pragma once
// Communicator over NCCL on device buffers (internal to the NCCL backend: run() hands it to the
// body as a plain shardcal::Communicator).
//
// Every operation enqueues on the rank's stream (CudaMemory::stream()) and returns when it has
// completed on the device, so timings taken around a call are device-complete and buffers may
// be reused at once. Waiting polls cudaStreamQuery and ncclCommGetAsyncError against a deadline
// of timeout_s; on an NCCL error or a timeout the NCCL communicator is aborted (ncclCommAbort)
// and PeerFailure names the operation, rank and group. A communicator aborted this way refuses
// further operations with PeerFailure. NCCL communicators are non-blocking (ncclConfig_t
// blocking = 0), so creation, split and enqueueing are bounded by the same deadline.
//
// Aliasing: all_reduce with send == recv and the layouts NCCL documents as in place
// (all_gather with send == recv + rank*count, reduce_scatter with recv == send + rank*count,
// scatter/gather with the root's block in place) run in place. Any other overlap of the input
// with the output is handled by staging the input in scratch device memory first, i.e. the
// result is what an out-of-place call on a copy of the input gives.
//
// NCCL has no message tags: send/recv between two ranks match in call order; `tag` is ignored.
//
// make_op_timer() gives a CUDA-event timer ("cuda_event"): start()/stop() record an event on the
// stream, elapsed_s() waits for the stop event like an operation waits (polling cudaEventQuery and
// ncclCommGetAsyncError against timeout_s, aborting on error or timeout) and returns
// cudaEventElapsedTime. Every operation returns only when it has completed, so the stop event is
// recorded after the host noticed that: the interval is device timestamps, but it still contains
// the host's enqueue latency and completion polling of each timed operation (about what the host
// clock measures). Excluding those would need enqueue-only operations.
#include <nccl.h>

#include <memory>
#include <string>

#include "nccl/cuda_memory.hpp"
#include "nccl/mpi_control.hpp"
#include "shardcal/communicator.hpp"

namespace shardcal::nccl::detail {

class NcclCommunicator final : public Communicator {
 public:
  // Collective over `control` (a duplicate of the world's MPI communicator): agrees on a unique
  // id, creates the NCCL communicator on memory's device and waits until it is ready.
  static std::unique_ptr<NcclCommunicator> create_world(std::shared_ptr<CudaMemory> memory,
                                                        MpiComm control, double timeout_s);

  // Takes ownership of a ready NCCL communicator and its MPI control-plane twin.
  NcclCommunicator(std::shared_ptr<CudaMemory> memory, ncclComm_t comm, MpiComm control, int rank,
                   int size, std::string name, double timeout_s);
  // Finalizes and destroys the NCCL communicator (bounded by timeout_s, aborting when that
  // fails); aborts instead when destroyed during stack unwinding, since peers may then be stuck
  // in an operation this rank will never join.
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  // For run(): the MPI twin of this communicator, and an explicit abort (a catch handler is not
  // "unwinding", so the destructor alone would try a clean finalize).
  MPI_Comm control_comm() const { return control_.get(); }
  void abort(const std::string& why) noexcept { abort_comm(why); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  std::string describe() const override { return name_; }
  MemorySpace& memory() override { return *mem_; }

  void barrier() override;
  std::vector<std::uint64_t> all_gather_u64(std::uint64_t value) override;
  std::unique_ptr<OpTimer> make_op_timer() override;

 protected:
  void do_broadcast(void* buf, std::size_t count, DType t, int root) override;
  void do_all_reduce(const void* send, void* recv, std::size_t count, DType t,
                     ReduceOp op) override;
  void do_all_gather(const void* send, void* recv, std::size_t count, DType t) override;
  void do_all_gatherv(const void* send, std::size_t send_count, void* recv, Counts counts,
                      Counts displs, DType t) override;
  void do_reduce_scatter(const void* send, void* recv, std::size_t count, DType t,
                         ReduceOp op) override;
  void do_reduce_scatterv(const void* send, void* recv, Counts counts, DType t,
                          ReduceOp op) override;
  void do_all_to_all(const void* send, void* recv, std::size_t count, DType t) override;
  void do_all_to_allv(const void* send, Counts send_counts, Counts send_displs, void* recv,
                      Counts recv_counts, Counts recv_displs, DType t) override;
  void do_scatter(const void* send, void* recv, std::size_t count, DType t, int root) override;
  void do_scatterv(const void* send, Counts counts, Counts displs, void* recv,
                   std::size_t recv_count, DType t, int root) override;
  void do_gather(const void* send, void* recv, std::size_t count, DType t, int root) override;
  void do_gatherv(const void* send, std::size_t send_count, void* recv, Counts counts,
                  Counts displs, DType t, int root) override;
  void do_send(const void* buf, std::size_t count, DType t, int peer, int tag) override;
  void do_recv(void* buf, std::size_t count, DType t, int peer, int tag) override;
  std::unique_ptr<Communicator> do_split(int color, int key) override;
  void do_broadcast_string(std::string& text, int root) override;

 private:
  class Staging;
  class EventTimer;

  std::string where(const char* op) const;
  std::string timeout_text(const char* waiting_for) const;
  // Throws PeerFailure if the communicator was aborted; makes the device current.
  void begin(const char* op);
  // Aborts the NCCL communicator and throws (PeerFailure when peer-side, Error otherwise).
  [[noreturn]] void fail(const char* op, const std::string& what, bool peer);
  void abort_comm(const std::string& why) noexcept;
  // Handles the return code of an NCCL call that enqueues: ncclInProgress is waited out.
  void issued(const char* op, const char* call, ncclResult_t r, const Deadline& dl);
  // Waits until everything enqueued on the stream has completed (or fails).
  void wait_done(const char* op, const Deadline& dl);
  // Waits until query() (cudaStreamQuery / cudaEventQuery) leaves cudaErrorNotReady, watching
  // the NCCL communicator for asynchronous errors; fails on a CUDA or NCCL error or the deadline.
  template <class Query>
  void wait_until(const char* op, const Deadline& dl, Query&& query);
  // Runs enqueue(deadline) and waits for completion.
  template <class Enqueue>
  void run(const char* op, Enqueue&& enqueue);
  // Issues the NCCL calls made by calls(add) inside one ncclGroupStart/ncclGroupEnd.
  template <class Calls>
  void grouped(const char* op, const Deadline& dl, Calls&& calls);

  std::shared_ptr<CudaMemory> mem_;
  ncclComm_t comm_;
  MpiComm control_;
  int rank_;
  int size_;
  std::string name_;
  double timeout_s_;
  int uncaught_at_creation_;
  std::string dead_;         // why comm_ was aborted; empty while usable
  void* scratch_ = nullptr;  // one int32 on the device for barrier()
};

}  // namespace shardcal::nccl::detail

#include "nccl/nccl_communicator.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include "nccl/cuda_check.hpp"
#include "nccl/poll.hpp"
#include "shardcal/error.hpp"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0)
#error "the shardcal NCCL backend needs NCCL >= 2.18 (ncclCommSplit, non-blocking communicators)"
#endif
// ncclAlltoAll, ncclGather and ncclScatter are native from NCCL 2.28; older versions get the
// same operations from grouped ncclSend/ncclRecv. Defining it to 0 forces the grouped form
// (to compare the two, or to compile-check it against new headers).
#ifndef SHARDCAL_NCCL_NATIVE_A2A
#define SHARDCAL_NCCL_NATIVE_A2A (NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0))
#endif

namespace shardcal::nccl::detail {

namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
    case DType::F16: return ncclFloat16;
    case DType::BF16: return ncclBfloat16;
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
    case DType::U8: return ncclUint8;
  }
  throw Error("internal: unknown dtype for NCCL");
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Avg: return ncclAvg;  // native since NCCL 2.10; integers truncate like ours
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
  }
  throw Error("internal: unknown reduce op for NCCL");
}

std::string nccl_text(ncclResult_t r, ncclComm_t comm) {
  std::string s = ncclGetErrorString(r);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') s += " (NCCL: " + std::string(last) + ")";
  return s;
}

// Errors that come from outside this process: a peer died or the network failed.
bool peer_side(ncclResult_t r) {
  return r == ncclRemoteError || r == ncclSystemError || r == ncclInternalError;
}

// Polls comm's state until it leaves ncclInProgress. Returns the state; ncclInProgress means
// the deadline passed first.
ncclResult_t wait_not_in_progress(ncclComm_t comm, const Deadline& dl) {
  ncclResult_t state = ncclInProgress;
  poll_until(dl, [&] {
    const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) state = r;
    return state != ncclInProgress;
  });
  return state;
}

const std::byte* at(const void* base, std::size_t elems, std::size_t es) {
  return static_cast<const std::byte*>(base) + elems * es;
}
std::byte* at(void* base, std::size_t elems, std::size_t es) {
  return static_cast<std::byte*>(base) + elems * es;
}

}  // namespace

// The one overlap rule of every collective: an operation's input as NCCL may read it. get() is
// `input` itself unless the input's `input_bytes` overlap the output's `output_bytes` in a way
// NCCL does not support in place; then it is a copy of the input in stream-ordered scratch
// memory, freed (stream-ordered) on destruction. `native_in_place`: the buffers are in the
// layout NCCL documents as in place (or this rank reads no input), so no copy is made.
class NcclCommunicator::Staging {
 public:
  Staging(CudaMemory& mem, const void* input, std::size_t input_bytes, const void* output,
          std::size_t output_bytes, bool native_in_place = false)
      : mem_(mem), input_(input) {
    if (native_in_place || !buffers_overlap(input, input_bytes, output, output_bytes)) return;
    copy_ = mem_.allocate_async(input_bytes);
    mem_.copy(copy_, input, input_bytes);
  }
  ~Staging() {
    if (copy_ != nullptr) mem_.free_async(copy_);
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  const void* get() const { return copy_ != nullptr ? copy_ : input_; }

 private:
  CudaMemory& mem_;
  const void* input_;
  void* copy_ = nullptr;
};

// ---- lifetime ------------------------------------------------------------------------------

std::unique_ptr<NcclCommunicator> NcclCommunicator::create_world(std::shared_ptr<CudaMemory> mem,
                                                                 MpiComm control,
                                                                 double timeout_s) {
  const int rank = control.rank(), size = control.size();
  const Deadline dl(timeout_s);
  const std::string who = "nccl init on rank " + std::to_string(rank) + " of " +
                          std::to_string(size) + " (CUDA device " + std::to_string(mem->device()) +
                          ")";
  ncclUniqueId id{};
  if (rank == 0) {
    const ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) throw Error(who + ": ncclGetUniqueId failed: " + nccl_text(r, nullptr));
  }
  bcast_bytes(&id, sizeof id, 0, control.get(), dl, [&] {
    return who + ": timed out after " + seconds_text(timeout_s) +
           " s waiting for rank 0 to send the NCCL unique id (a rank failed or did not start)";
  });

  use_device(mem->device());
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // init must not block past the deadline when a peer never shows up
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  if (r == ncclSuccess || r == ncclInProgress) r = wait_not_in_progress(comm, dl);
  if (r != ncclSuccess) {
    const std::string why = r == ncclInProgress
                                ? "timed out after " + seconds_text(timeout_s) +
                                      " s creating the NCCL communicator (not every rank joined)"
                                : "ncclCommInitRankConfig failed: " + nccl_text(r, comm);
    if (comm != nullptr) (void)ncclCommAbort(comm);
    if (r == ncclInProgress || peer_side(r)) throw PeerFailure(who + ": " + why);
    throw Error(who + ": " + why);
  }
  return std::make_unique<NcclCommunicator>(std::move(mem), comm, std::move(control), rank, size,
                                            "nccl world", timeout_s);
}

NcclCommunicator::NcclCommunicator(std::shared_ptr<CudaMemory> memory, ncclComm_t comm,
                                   MpiComm control, int rank, int size, std::string name,
                                   double timeout_s)
    : mem_(std::move(memory)),
      comm_(comm),
      control_(std::move(control)),
      rank_(rank),
      size_(size),
      name_(std::move(name)),
      timeout_s_(timeout_s),
      uncaught_at_creation_(std::uncaught_exceptions()) {}

NcclCommunicator::~NcclCommunicator() {
  (void)cudaSetDevice(mem_->device());
  if (comm_ != nullptr) {
    if (std::uncaught_exceptions() > uncaught_at_creation_) {
      // Unwinding: peers may be blocked in an operation we will never join; finalizing could
      // wait for them, aborting does not.
      (void)ncclCommAbort(comm_);
    } else {
      const Deadline dl(timeout_s_);
      ncclResult_t r = ncclCommFinalize(comm_);
      if (r == ncclSuccess || r == ncclInProgress) r = wait_not_in_progress(comm_, dl);
      if (r == ncclSuccess)
        (void)ncclCommDestroy(comm_);
      else
        (void)ncclCommAbort(comm_);
    }
    comm_ = nullptr;
  }
  if (scratch_ != nullptr) mem_->deallocate(scratch_);
}

// ---- plumbing ------------------------------------------------------------------------------

std::string NcclCommunicator::where(const char* op) const {
  return std::string(op) + " on rank " + std::to_string(rank_) + " of " + name_ + " (size " +
         std::to_string(size_) + ", CUDA device " + std::to_string(mem_->device()) + ")";
}

std::string NcclCommunicator::timeout_text(const char* waiting_for) const {
  return "timed out after " + seconds_text(timeout_s_) + " s waiting for " + waiting_for +
         " (a peer failed or is in a different operation; the failed rank is not known to NCCL)";
}

void NcclCommunicator::begin(const char* op) {
  if (comm_ == nullptr)
    throw PeerFailure(where(op) +
                      ": the communicator was aborted after an earlier failure: " + dead_);
  use_device(mem_->device());
}

void NcclCommunicator::abort_comm(const std::string& why) noexcept {
  if (comm_ == nullptr) return;
  (void)ncclCommAbort(comm_);
  comm_ = nullptr;
  dead_ = why;
}

void NcclCommunicator::fail(const char* op, const std::string& what, bool peer) {
  abort_comm(std::string(op) + ": " + what);
  const std::string msg = where(op) + ": " + what + " (NCCL communicator aborted)";
  if (peer) throw PeerFailure(msg);
  throw Error(msg);
}

void NcclCommunicator::issued(const char* op, const char* call, ncclResult_t r,
                              const Deadline& dl) {
  if (r == ncclSuccess) return;
  if (r == ncclInProgress) {
    // Non-blocking communicator: the call continues in the background (e.g. connection setup);
    // NCCL's rule is to poll the state until it leaves ncclInProgress before anything else.
    const ncclResult_t state = wait_not_in_progress(comm_, dl);
    if (state == ncclSuccess) return;
    if (state == ncclInProgress)
      fail(op, std::string(call) + " did not complete: " + timeout_text("peers to connect"), true);
    fail(op, std::string(call) + " failed asynchronously: " + nccl_text(state, comm_), true);
  }
  fail(op, std::string(call) + " failed: " + nccl_text(r, comm_), peer_side(r));
}

template <class Query>
void NcclCommunicator::wait_until(const char* op, const Deadline& dl, Query&& query) {
  cudaError_t cuda = cudaErrorNotReady;
  ncclResult_t state = ncclSuccess;
  poll_until(dl, [&] {
    cuda = query();
    if (cuda != cudaErrorNotReady) return true;  // done, or a CUDA error
    const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
    if (r != ncclSuccess) state = r;
    return state != ncclSuccess && state != ncclInProgress;
  });
  if (cuda == cudaSuccess) return;
  if (cuda != cudaErrorNotReady) {
    (void)cudaGetLastError();
    fail(op, "CUDA error while waiting for the operation: " + cuda_error_text(cuda), false);
  }
  if (state != ncclSuccess && state != ncclInProgress)
    fail(op, "NCCL reported an asynchronous error: " + nccl_text(state, comm_), true);
  fail(op, timeout_text("the operation to complete"), true);
}

void NcclCommunicator::wait_done(const char* op, const Deadline& dl) {
  wait_until(op, dl, [&] { return cudaStreamQuery(mem_->stream()); });
}

template <class Enqueue>
void NcclCommunicator::run(const char* op, Enqueue&& enqueue) {
  begin(op);
  const Deadline dl(timeout_s_);
  enqueue(dl);
  wait_done(op, dl);
}

template <class Calls>
void NcclCommunicator::grouped(const char* op, const Deadline& dl, Calls&& calls) {
  issued(op, "ncclGroupStart", ncclGroupStart(), dl);
  // Errors inside the group are remembered, not thrown: ncclGroupEnd must run in any case, or
  // the thread would stay inside an open group and capture every later NCCL call.
  ncclResult_t first = ncclSuccess;
  const char* first_call = "";
  auto add = [&](ncclResult_t r, const char* call) {
    if (r != ncclSuccess && r != ncclInProgress && first == ncclSuccess) {
      first = r;
      first_call = call;
    }
  };
  calls(add);
  const ncclResult_t end = ncclGroupEnd();
  if (first != ncclSuccess)
    fail(op, std::string(first_call) + " failed: " + nccl_text(first, comm_), peer_side(first));
  issued(op, "ncclGroupEnd", end, dl);
}

// ---- collectives ---------------------------------------------------------------------------

void NcclCommunicator::barrier() {
  run("barrier", [&](const Deadline& dl) {
    if (scratch_ == nullptr) scratch_ = mem_->allocate(sizeof(std::int32_t));
    issued("barrier", "ncclAllReduce",
           ncclAllReduce(scratch_, scratch_, 1, ncclInt32, ncclSum, comm_, mem_->stream()), dl);
  });
}

void NcclCommunicator::do_broadcast(void* buf, std::size_t count, DType t, int root) {
  const char* op = "broadcast";
  if (count == 0) return;  // count is the same on every rank: all skip together
  run(op, [&](const Deadline& dl) {
    issued(op, "ncclBroadcast",
           ncclBroadcast(buf, buf, count, nccl_type(t), root, comm_, mem_->stream()), dl);
  });
}

void NcclCommunicator::do_all_reduce(const void* send, void* recv, std::size_t count, DType t,
                                     ReduceOp rop) {
  const char* op = "all_reduce";
  if (count == 0) return;
  const std::size_t bytes = count * dtype_size(t);
  run(op, [&](const Deadline& dl) {
    const Staging in(*mem_, send, bytes, recv, bytes, send == recv);
    send = in.get();
    issued(op, "ncclAllReduce",
           ncclAllReduce(send, recv, count, nccl_type(t), nccl_op(rop), comm_, mem_->stream()), dl);
  });
}

void NcclCommunicator::do_all_gather(const void* send, void* recv, std::size_t count, DType t) {
  const char* op = "all_gather";
  if (count == 0) return;
  const std::size_t es = dtype_size(t);
  run(op, [&](const Deadline& dl) {
    const Staging in(*mem_, send, count * es, recv, std::size_t(size_) * count * es,
                     send == at(recv, std::size_t(rank_) * count, es));
    send = in.get();
    issued(op, "ncclAllGather",
           ncclAllGather(send, recv, count, nccl_type(t), comm_, mem_->stream()), dl);
  });
}

void NcclCommunicator::do_all_gatherv(const void* send, std::size_t send_count, void* recv,
                                      Counts counts, Counts displs, DType t) {
  const char* op = "all_gatherv";
  const std::size_t es = dtype_size(t);
  // Equal blocks at r * count are a plain all-gather, which NCCL runs with its ring/tree
  // algorithms instead of n-1 point-to-point messages per rank.
  bool regular = true;
  for (std::size_t r = 0; r < counts.size(); ++r)
    regular = regular && counts[r] == counts[0] && displs[r] == r * counts[0];
  if (regular) return do_all_gather(send, recv, counts[0], t);

  run(op, [&](const Deadline& dl) {
    void* own = at(recv, displs[std::size_t(rank_)], es);
    const Staging in(*mem_, send, send_count * es, recv, blocks_extent(counts, displs) * es,
                     send == own);
    send = in.get();
    if (send != own) mem_->copy(own, send, send_count * es);
    const ncclDataType_t dt = nccl_type(t);
    grouped(op, dl, [&](auto& add) {
      for (int p = 0; p < size_; ++p) {
        if (p == rank_) continue;
        if (send_count > 0)
          add(ncclSend(send, send_count, dt, p, comm_, mem_->stream()), "ncclSend");
        const std::size_t n = counts[std::size_t(p)];
        if (n > 0)
          add(ncclRecv(at(recv, displs[std::size_t(p)], es), n, dt, p, comm_, mem_->stream()),
              "ncclRecv");
      }
    });
  });
}

void NcclCommunicator::do_reduce_scatter(const void* send, void* recv, std::size_t count, DType t,
                                         ReduceOp rop) {
  const char* op = "reduce_scatter";
  if (count == 0) return;
  const std::size_t es = dtype_size(t);
  run(op, [&](const Deadline& dl) {
    const Staging in(*mem_, send, std::size_t(size_) * count * es, recv, count * es,
                     recv == at(send, std::size_t(rank_) * count, es));
    send = in.get();
    issued(op, "ncclReduceScatter",
           ncclReduceScatter(send, recv, count, nccl_type(t), nccl_op(rop), comm_, mem_->stream()),
           dl);
  });
}

// Uneven reduce-scatter: one ncclReduce per rank (root r reduces block r), all in one group so
// NCCL runs them concurrently. Chosen over all-reduce-then-slice because that moves every
// block to every rank, about twice the bytes of a reduce-scatter; the grouped reduces move each
// block once along NCCL's reduce pipeline, which matches the cost the model assumes for a
// reduce-scatter. Equal counts take ncclReduceScatter directly.
void NcclCommunicator::do_reduce_scatterv(const void* send, void* recv, Counts counts, DType t,
                                          ReduceOp rop) {
  const char* op = "reduce_scatterv";
  if (std::all_of(counts.begin(), counts.end(), [&](std::size_t c) { return c == counts[0]; }))
    return do_reduce_scatter(send, recv, counts[0], t, rop);
  const std::size_t es = dtype_size(t);
  std::vector<std::size_t> offset(counts.size(), 0);
  for (std::size_t r = 1; r < counts.size(); ++r) offset[r] = offset[r - 1] + counts[r - 1];
  const std::size_t total = offset.back() + counts.back();
  const std::size_t mine = counts[std::size_t(rank_)];

  run(op, [&](const Deadline& dl) {
    const Staging in(*mem_, send, total * es, recv, mine * es,
                     recv == at(send, offset[std::size_t(rank_)], es));
    send = in.get();
    const ncclDataType_t dt = nccl_type(t);
    const ncclRedOp_t ro = nccl_op(rop);
    grouped(op, dl, [&](auto& add) {
      for (int r = 0; r < size_; ++r) {
        const std::size_t n = counts[std::size_t(r)];
        if (n == 0) continue;  // counts are the same on every rank: all skip together
        // recvbuff is only used on the root (nccl.h: "may be NULL on all calls except root").
        add(ncclReduce(at(send, offset[std::size_t(r)], es), r == rank_ ? recv : nullptr, n, dt, ro,
                       r, comm_, mem_->stream()),
            "ncclReduce");
      }
    });
  });
}

void NcclCommunicator::do_all_to_all(const void* send, void* recv, std::size_t count, DType t) {
  const char* op = "all_to_all";
  if (count == 0) return;
  const std::size_t es = dtype_size(t);
  const std::size_t total = std::size_t(size_) * count * es;
  run(op, [&](const Deadline& dl) {
    const Staging in(*mem_, send, total, recv, total);
    send = in.get();
    const ncclDataType_t dt = nccl_type(t);
#if SHARDCAL_NCCL_NATIVE_A2A
    issued(op, "ncclAlltoAll", ncclAlltoAll(send, recv, count, dt, comm_, mem_->stream()), dl);
#else
    mem_->copy(at(recv, std::size_t(rank_) * count, es), at(send, std::size_t(rank_) * count, es),
               count * es);
    grouped(op, dl, [&](auto& add) {
      for (int p = 0; p < size_; ++p) {
        if (p == rank_) continue;
        add(ncclSend(at(send, std::size_t(p) * count, es), count, dt, p, comm_, mem_->stream()),
            "ncclSend");
        add(ncclRecv(at(recv, std::size_t(p) * count, es), count, dt, p, comm_, mem_->stream()),
            "ncclRecv");
      }
    });
#endif
  });
}

void NcclCommunicator::do_all_to_allv(const void* send, Counts send_counts, Counts send_displs,
                                      void* recv, Counts recv_counts, Counts recv_displs, DType t) {
  const char* op = "all_to_allv";
  const auto me = std::size_t(rank_);
  const std::size_t es = dtype_size(t);
  const std::size_t send_extent = blocks_extent(send_counts, send_displs);
  const std::size_t recv_extent = blocks_extent(recv_counts, recv_displs);
  run(op, [&](const Deadline& dl) {
    const Staging in(*mem_, send, send_extent * es, recv, recv_extent * es);
    send = in.get();
    mem_->copy(at(recv, recv_displs[me], es), at(send, send_displs[me], es), send_counts[me] * es);
    const ncclDataType_t dt = nccl_type(t);
    grouped(op, dl, [&](auto& add) {
      for (int p = 0; p < size_; ++p) {
        if (p == rank_) continue;
        const auto q = std::size_t(p);
        if (send_counts[q] > 0)
          add(ncclSend(at(send, send_displs[q], es), send_counts[q], dt, p, comm_, mem_->stream()),
              "ncclSend");
        if (recv_counts[q] > 0)
          add(ncclRecv(at(recv, recv_displs[q], es), recv_counts[q], dt, p, comm_, mem_->stream()),
              "ncclRecv");
      }
    });
  });
}

void NcclCommunicator::do_scatter(const void* send, void* recv, std::size_t count, DType t,
                                  int root) {
  const char* op = "scatter";
  if (count == 0) return;
  const std::size_t es = dtype_size(t);
  run(op, [&](const Deadline& dl) {
    const bool is_root = rank_ == root;
    // Only the root reads an input.
    const Staging in(*mem_, send, std::size_t(size_) * count * es, recv, count * es,
                     !is_root || recv == at(send, std::size_t(root) * count, es));
    send = in.get();
    const ncclDataType_t dt = nccl_type(t);
#if SHARDCAL_NCCL_NATIVE_A2A
    issued(op, "ncclScatter", ncclScatter(send, recv, count, dt, root, comm_, mem_->stream()), dl);
#else
    if (is_root) mem_->copy(recv, at(send, std::size_t(root) * count, es), count * es);
    grouped(op, dl, [&](auto& add) {
      if (is_root) {
        for (int p = 0; p < size_; ++p)
          if (p != root)
            add(ncclSend(at(send, std::size_t(p) * count, es), count, dt, p, comm_, mem_->stream()),
                "ncclSend");
      } else {
        add(ncclRecv(recv, count, dt, root, comm_, mem_->stream()), "ncclRecv");
      }
    });
#endif
  });
}

void NcclCommunicator::do_scatterv(const void* send, Counts counts, Counts displs, void* recv,
                                   std::size_t recv_count, DType t, int root) {
  const char* op = "scatterv";
  const bool is_root = rank_ == root;
  const std::size_t es = dtype_size(t);
  run(op, [&](const Deadline& dl) {
    std::optional<Staging> in;  // only the root reads an input (and has counts and displs)
    const ncclDataType_t dt = nccl_type(t);
    if (is_root) {
      send = in.emplace(*mem_, send, blocks_extent(counts, displs) * es, recv, recv_count * es,
                        recv == at(send, displs[std::size_t(root)], es))
                 .get();
      mem_->copy(recv, at(send, displs[std::size_t(root)], es), recv_count * es);
    }
    grouped(op, dl, [&](auto& add) {
      if (is_root) {
        for (int p = 0; p < size_; ++p) {
          const std::size_t n = counts[std::size_t(p)];
          if (p != root && n > 0)
            add(ncclSend(at(send, displs[std::size_t(p)], es), n, dt, p, comm_, mem_->stream()),
                "ncclSend");
        }
      } else if (recv_count > 0) {
        add(ncclRecv(recv, recv_count, dt, root, comm_, mem_->stream()), "ncclRecv");
      }
    });
  });
}

void NcclCommunicator::do_gather(const void* send, void* recv, std::size_t count, DType t,
                                 int root) {
  const char* op = "gather";
  if (count == 0) return;
  const std::size_t es = dtype_size(t);
  run(op, [&](const Deadline& dl) {
    const bool is_root = rank_ == root;
    void* own = is_root ? at(recv, std::size_t(root) * count, es) : nullptr;
    // Only the root's input can meet its output.
    const Staging in(*mem_, send, count * es, recv, std::size_t(size_) * count * es,
                     !is_root || send == own);
    send = in.get();
    const ncclDataType_t dt = nccl_type(t);
#if SHARDCAL_NCCL_NATIVE_A2A
    issued(op, "ncclGather", ncclGather(send, recv, count, dt, root, comm_, mem_->stream()), dl);
#else
    if (is_root) mem_->copy(own, send, count * es);
    grouped(op, dl, [&](auto& add) {
      if (is_root) {
        for (int p = 0; p < size_; ++p)
          if (p != root)
            add(ncclRecv(at(recv, std::size_t(p) * count, es), count, dt, p, comm_, mem_->stream()),
                "ncclRecv");
      } else {
        add(ncclSend(send, count, dt, root, comm_, mem_->stream()), "ncclSend");
      }
    });
#endif
  });
}

void NcclCommunicator::do_gatherv(const void* send, std::size_t send_count, void* recv,
                                  Counts counts, Counts displs, DType t, int root) {
  const char* op = "gatherv";
  const bool is_root = rank_ == root;
  const std::size_t es = dtype_size(t);
  run(op, [&](const Deadline& dl) {
    std::optional<Staging> in;  // only the root's input can meet its output
    const ncclDataType_t dt = nccl_type(t);
    if (is_root) {
      void* own = at(recv, displs[std::size_t(root)], es);
      send = in.emplace(*mem_, send, send_count * es, recv, blocks_extent(counts, displs) * es,
                        send == own)
                 .get();
      mem_->copy(own, send, send_count * es);
    }
    grouped(op, dl, [&](auto& add) {
      if (is_root) {
        for (int p = 0; p < size_; ++p) {
          const std::size_t n = counts[std::size_t(p)];
          if (p != root && n > 0)
            add(ncclRecv(at(recv, displs[std::size_t(p)], es), n, dt, p, comm_, mem_->stream()),
                "ncclRecv");
        }
      } else if (send_count > 0) {
        add(ncclSend(send, send_count, dt, root, comm_, mem_->stream()), "ncclSend");
      }
    });
  });
}

void NcclCommunicator::do_send(const void* buf, std::size_t count, DType t, int peer, int /*tag*/) {
  const char* op = "send";
  if (count == 0) return;  // the matching recv has count 0 too and skips as well
  run(op, [&](const Deadline& dl) {
    issued(op, "ncclSend", ncclSend(buf, count, nccl_type(t), peer, comm_, mem_->stream()), dl);
  });
}

void NcclCommunicator::do_recv(void* buf, std::size_t count, DType t, int peer, int /*tag*/) {
  const char* op = "recv";
  if (count == 0) return;
  run(op, [&](const Deadline& dl) {
    issued(op, "ncclRecv", ncclRecv(buf, count, nccl_type(t), peer, comm_, mem_->stream()), dl);
  });
}

// ---- split and control plane ---------------------------------------------------------------

std::unique_ptr<Communicator> NcclCommunicator::do_split(int color, int key) {
  const char* op = "split";
  begin(op);
  const Deadline dl(timeout_s_);

  // Rendezvous on the control plane first, with a deadline: once every rank's (color, key) has
  // arrived, every rank is inside split, so the blocking MPI_Comm_split below cannot hang.
  struct Entry {
    std::int64_t color, key;
  };
  const Entry mine{color, key};
  std::vector<Entry> all(std::size_t(size_), Entry{0, 0});
  allgather_bytes(&mine, all.data(), sizeof(Entry), control_.get(), dl,
                  [&] { return where(op) + ": " + timeout_text("every rank to call split"); });
  // The child's ranks: same color, ordered by (key, parent rank) as MPI_Comm_split orders them.
  // Passing that rank as NCCL's key makes the NCCL order equal to the MPI order by construction.
  int child_rank = 0, child_size = 0;
  for (int r = 0; r < size_; ++r) {
    const Entry& e = all[std::size_t(r)];
    if (e.color != color) continue;
    ++child_size;
    if (e.key < key || (e.key == key && r < rank_)) ++child_rank;
  }
  MPI_Comm raw = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(control_.get(), color, child_rank, &raw), "MPI_Comm_split");
  MpiComm child_control(raw);

  // With a non-blocking parent NCCL writes the child handle asynchronously when the split
  // completes, so the slot lives on the heap and is read atomically.
  auto slot = std::make_unique<ncclComm_t>(nullptr);
  const ncclResult_t r = ncclCommSplit(comm_, color, child_rank, slot.get(), nullptr);
  if (r != ncclSuccess && r != ncclInProgress)
    fail(op, "ncclCommSplit failed: " + nccl_text(r, comm_), peer_side(r));
  // NCCL's rule for non-blocking calls: wait on the parent until it leaves ncclInProgress.
  const ncclResult_t parent_state = wait_not_in_progress(comm_, dl);
  if (parent_state == ncclInProgress) {
    (void)slot.release();  // NCCL may still write to it; leaking 8 bytes beats a dangling write
    fail(op, "ncclCommSplit did not complete: " + timeout_text("every rank of the new group"),
         true);
  }
  if (parent_state != ncclSuccess)
    fail(op, "ncclCommSplit failed asynchronously: " + nccl_text(parent_state, comm_), true);
  ncclComm_t child = nullptr;
  poll_until(dl, [&] {
    child = std::atomic_ref<ncclComm_t>(*slot).load(std::memory_order_acquire);
    return child != nullptr;
  });
  if (child == nullptr) {
    (void)slot.release();
    fail(op, "ncclCommSplit returned no communicator: " + timeout_text("the new communicator"),
         true);
  }
  const ncclResult_t child_state = wait_not_in_progress(child, dl);
  int n = -1, me = -1;
  if (child_state == ncclSuccess) {
    (void)ncclCommCount(child, &n);
    (void)ncclCommUserRank(child, &me);
  }
  if (child_state != ncclSuccess || n != child_size || me != child_rank) {
    const std::string why =
        child_state == ncclInProgress ? timeout_text("the new communicator to connect")
        : child_state != ncclSuccess
            ? "the new communicator failed: " + nccl_text(child_state, child)
            : "internal: NCCL placed this rank at " + std::to_string(me) + " of " +
                  std::to_string(n) + ", MPI at " + std::to_string(child_rank) + " of " +
                  std::to_string(child_size);
    (void)ncclCommAbort(child);
    throw PeerFailure(where(op) + ": " + why);
  }
  return std::make_unique<NcclCommunicator>(
      mem_, child, std::move(child_control), child_rank, child_size,
      "nccl split(color " + std::to_string(color) + ") of " + name_, timeout_s_);
}

std::vector<std::uint64_t> NcclCommunicator::all_gather_u64(std::uint64_t value) {
  const char* op = "all_gather_u64";
  std::vector<std::uint64_t> out(std::size_t(size_), 0);
  const Deadline dl(timeout_s_);
  allgather_bytes(&value, out.data(), sizeof value, control_.get(), dl,
                  [&] { return where(op) + ": " + timeout_text("every rank (control plane)"); });
  return out;
}

void NcclCommunicator::do_broadcast_string(std::string& text, int root) {
  const char* op = "broadcast_string";
  const Deadline dl(timeout_s_);
  auto timeout = [&] { return where(op) + ": " + timeout_text("the root (control plane)"); };
  std::uint64_t n = rank_ == root ? text.size() : 0;
  bcast_bytes(&n, sizeof n, root, control_.get(), dl, timeout);
  if (rank_ != root) text.assign(std::size_t(n), '\0');
  if (n > 0) bcast_bytes(text.data(), std::size_t(n), root, control_.get(), dl, timeout);
}

// ---- device timing -------------------------------------------------------------------------

// Two CUDA events recorded on the rank's stream. Errors of the CUDA calls themselves become Error
// (SHARDCAL_CUDA_CHECK); waiting for the stop event follows the operations' contract (wait_until).
class NcclCommunicator::EventTimer final : public OpTimer {
 public:
  explicit EventTimer(NcclCommunicator& comm) : comm_(comm), device_(comm.mem_->device()) {
    comm_.begin("make_op_timer");
    // Default flags: timing enabled; completion is polled, so no blocking sync is needed.
    SHARDCAL_CUDA_CHECK(cudaEventCreateWithFlags(&start_, cudaEventDefault));
    const cudaError_t err = cudaEventCreateWithFlags(&stop_, cudaEventDefault);
    if (err != cudaSuccess) {
      (void)cudaEventDestroy(start_);
      throw_cuda_error(err, "cudaEventCreateWithFlags(&stop_, cudaEventDefault)", __FILE__,
                       __LINE__);
    }
  }
  ~EventTimer() override {
    // Destroying an event whose record is still pending is allowed (released on completion);
    // errors are ignored, as in CudaMemory's teardown.
    (void)cudaSetDevice(device_);
    (void)cudaEventDestroy(start_);
    (void)cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void start() override {
    comm_.begin("op_timer start");
    SHARDCAL_CUDA_CHECK(cudaEventRecord(start_, comm_.mem_->stream()));
    started_ = true;
    stopped_ = false;
  }
  void stop() override {
    if (!started_) throw Error(comm_.where("op_timer stop") + ": internal: stop() without start()");
    comm_.begin("op_timer stop");
    SHARDCAL_CUDA_CHECK(cudaEventRecord(stop_, comm_.mem_->stream()));
    stopped_ = true;
  }
  double elapsed_s() override {
    const char* op = "op_timer elapsed";
    if (!stopped_)
      throw Error(comm_.where(op) + ": internal: elapsed_s() before start() and stop()");
    comm_.begin(op);
    const Deadline dl(comm_.timeout_s_);
    comm_.wait_until(op, dl, [&] { return cudaEventQuery(stop_); });
    float ms = 0;
    SHARDCAL_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return double(ms) * 1e-3;
  }
  std::string method() const override { return "cuda_event"; }

 private:
  NcclCommunicator& comm_;
  int device_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  bool started_ = false;
  bool stopped_ = false;
};

std::unique_ptr<OpTimer> NcclCommunicator::make_op_timer() {
  return std::make_unique<EventTimer>(*this);
}

}  // namespace shardcal::nccl::detail

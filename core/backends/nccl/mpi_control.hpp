#pragma once
// MPI as the NCCL backend uses it: bootstrap (process count, node-local rank, the NCCL unique id)
// and the host control plane of each communicator. Every collective here is non-blocking MPI
// polled against a deadline, so a dead peer yields PeerFailure instead of a hang.
#include <mpi.h>

#include <cstddef>
#include <functional>
#include <string>

#include "nccl/poll.hpp"

namespace shardcal::nccl::detail {

// Initializes MPI on first use through the MPI backend's runtime (so the process has one owner
// of MPI init/finalize, whichever backend runs first); a no-op when MPI is already running.
void ensure_mpi_initialized();

// Owning MPI communicator handle with errors returned (MPI_ERRORS_RETURN), not fatal.
class MpiComm {
 public:
  MpiComm() = default;
  explicit MpiComm(MPI_Comm c);
  ~MpiComm();
  MpiComm(MpiComm&& o) noexcept : comm_(o.comm_) { o.comm_ = MPI_COMM_NULL; }
  MpiComm& operator=(MpiComm&& o) noexcept;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;
  MPI_Comm get() const { return comm_; }
  int rank() const;
  int size() const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// Throws Error naming `call` and the MPI error text unless rc == MPI_SUCCESS.
void check_mpi(int rc, const char* call);

// Waits for `req` until the deadline; on timeout throws PeerFailure with the message `timeout_what`
// returns (built lazily: it is only needed on the failure path). The request is left pending on
// timeout: MPI cannot cancel a collective, and the caller is about to fail anyway.
void wait_request(MPI_Request& req, const Deadline& deadline,
                  const std::function<std::string()>& timeout_what);

// Timed collectives on the control plane.
MpiComm dup_comm(MPI_Comm parent, const Deadline& deadline,
                 const std::function<std::string()>& timeout_what);
void allgather_bytes(const void* send, void* recv, std::size_t bytes_per_rank, MPI_Comm comm,
                     const Deadline& deadline, const std::function<std::string()>& timeout_what);
void bcast_bytes(void* buf, std::size_t bytes, int root, MPI_Comm comm, const Deadline& deadline,
                 const std::function<std::string()>& timeout_what);

}  // namespace shardcal::nccl::detail

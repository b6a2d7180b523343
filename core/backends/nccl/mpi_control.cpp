#include "nccl/mpi_control.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

#include "mpi/mpi_runtime.hpp"
#include "shardcal/error.hpp"

namespace shardcal::nccl::detail {

namespace {

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, std::size_t(len));
}

// MPI counts are int; larger control messages go in chunks of this many bytes.
constexpr std::size_t kMaxChunk = std::size_t(1) << 30;

}  // namespace

void ensure_mpi_initialized() {
  // One owner of MPI's lifetime per process: the MPI backend's runtime initializes it (at the
  // level SHARDCAL_MPI_THREAD_LEVEL names, default MPI_THREAD_FUNNELED here: CUDA and NCCL start
  // threads of their own, which never call MPI; the NCCL backend calls MPI only from the thread
  // that runs the SPMD body) and finalizes it at exit under its watchdog, which never calls MPI.
  ::shardcal::mpi::detail::ensure_initialized(MPI_THREAD_FUNNELED);
}

void check_mpi(int rc, const char* call) {
  if (rc != MPI_SUCCESS) throw Error(std::string(call) + " failed: " + mpi_error_text(rc));
}

MpiComm::MpiComm(MPI_Comm c) : comm_(c) {
  if (comm_ != MPI_COMM_NULL)
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

MpiComm::~MpiComm() {
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  // Freeing is local in practice and deferred by MPI until pending operations complete, so this
  // is safe also when a timed-out request is still outstanding on the communicator.
  if (!finalized) MPI_Comm_free(&comm_);
}

MpiComm& MpiComm::operator=(MpiComm&& o) noexcept {
  if (this != &o) {
    MpiComm tmp(std::move(o));
    std::swap(comm_, tmp.comm_);
  }
  return *this;
}

int MpiComm::rank() const {
  int r = 0;
  check_mpi(MPI_Comm_rank(comm_, &r), "MPI_Comm_rank");
  return r;
}

int MpiComm::size() const {
  int n = 0;
  check_mpi(MPI_Comm_size(comm_, &n), "MPI_Comm_size");
  return n;
}

void wait_request(MPI_Request& req, const Deadline& deadline,
                  const std::function<std::string()>& timeout_what) {
  int rc = MPI_SUCCESS;
  const bool done = poll_until(deadline, [&] {
    int flag = 0;
    rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    return rc != MPI_SUCCESS || flag != 0;
  });
  check_mpi(rc, "MPI_Test");
  if (!done) throw PeerFailure(timeout_what());
}

MpiComm dup_comm(MPI_Comm parent, const Deadline& deadline,
                 const std::function<std::string()>& timeout_what) {
  MPI_Comm out = MPI_COMM_NULL;
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(MPI_Comm_idup(parent, &out, &req), "MPI_Comm_idup");
  wait_request(req, deadline, timeout_what);
  return MpiComm(out);
}

void allgather_bytes(const void* send, void* recv, std::size_t bytes_per_rank, MPI_Comm comm,
                     const Deadline& deadline, const std::function<std::string()>& timeout_what) {
  if (bytes_per_rank > std::size_t(INT_MAX))
    throw Error("internal: control-plane all-gather of " + std::to_string(bytes_per_rank) +
                " bytes per rank exceeds MPI's int count");
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallgather(send, int(bytes_per_rank), MPI_BYTE, recv, int(bytes_per_rank), MPI_BYTE,
                           comm, &req),
            "MPI_Iallgather");
  wait_request(req, deadline, timeout_what);
}

void bcast_bytes(void* buf, std::size_t bytes, int root, MPI_Comm comm, const Deadline& deadline,
                 const std::function<std::string()>& timeout_what) {
  auto* p = static_cast<char*>(buf);
  std::size_t done = 0;
  do {
    const std::size_t n = std::min(bytes - done, kMaxChunk);
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibcast(p + done, int(n), MPI_BYTE, root, comm, &req), "MPI_Ibcast");
    wait_request(req, deadline, timeout_what);
    done += n;
  } while (done < bytes);
}

}  // namespace shardcal::nccl::detail

#pragma once
// How the MPI backend treats time: the one thing that differs between a real MPI build and the
// SimGrid SMPI build (smpi_seam.hpp defines SHARDCAL_SIMULATED_TIME; docs/SIMULATION.md). The
// backend calls TimePolicy's members and never tests the build itself.
//
//   HostTime (real MPI)       the communicator's host-clock timer; a watchdog (a timer
//                             signal's handler, watchdog.cpp) bounds every blocking call; the end-of-run failure check is a
//                             non-blocking allgather polled against a host-clock deadline.
//   SimulatedTime (SMPI)      MPI_Wtime (the simulated clock) times operations; no watchdog and
//                             no deadline (host seconds mean nothing in a simulation, and SimGrid
//                             reports a deadlock itself); the failure check is a blocking
//                             MPI_Allgather, since SMPI runs MPI_Iallgather as N^2 concurrent
//                             flows whose simulation cost grows like N^4 (8.5 min at 256 ranks).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "shardcal/communicator.hpp"
#include "shardcal/error.hpp"

namespace shardcal::mpi::detail {

struct HostTime {
  static constexpr bool kWatchdog = true;
  // nullptr: the communicator's default (host clock).
  static std::unique_ptr<OpTimer> op_timer() { return nullptr; }
  static int start_allgather(const int* mine, int* all, MPI_Comm comm, MPI_Request* req) {
    return MPI_Iallgather(mine, 1, MPI_INT, all, 1, MPI_INT, comm, req);
  }
  // Waits for `req` until `seconds` pass, polling with a growing sleep so that oversubscribed
  // ranks still get the CPU. Returns whether it completed; an MPI error lands in rc.
  static bool wait(MPI_Request& req, double seconds, int& rc) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(std::min(seconds, 1e7)));
    auto pause = std::chrono::microseconds(20);
    while (true) {
      int done = 0;
      rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) return false;
      if (done != 0) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
  }
};

// MPI_Wtime around the operations: the simulated clock under SMPI.
class WtimeTimer final : public OpTimer {
 public:
  void start() override {
    stopped_ = false;
    started_ = true;
    t0_ = MPI_Wtime();
  }
  void stop() override {
    if (!started_) throw Error("internal: OpTimer::stop() without start()");
    t1_ = MPI_Wtime();
    stopped_ = true;
  }
  double elapsed_s() override {
    if (!stopped_) throw Error("internal: OpTimer::elapsed_s() before start() and stop()");
    return t1_ - t0_;
  }
  std::string method() const override { return "mpi_wtime"; }

 private:
  double t0_ = 0, t1_ = 0;
  bool started_ = false;
  bool stopped_ = false;
};

struct SimulatedTime {
  static constexpr bool kWatchdog = false;
  static std::unique_ptr<OpTimer> op_timer() { return std::make_unique<WtimeTimer>(); }
  static int start_allgather(const int* mine, int* all, MPI_Comm comm, MPI_Request* req) {
    *req = MPI_REQUEST_NULL;  // completed here: wait() has nothing left to do
    return MPI_Allgather(mine, 1, MPI_INT, all, 1, MPI_INT, comm);
  }
  static bool wait(MPI_Request& req, double /*seconds*/, int& rc) {
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    return rc == MPI_SUCCESS;
  }
};

#ifdef SHARDCAL_SIMULATED_TIME
using TimePolicy = SimulatedTime;
#else
using TimePolicy = HostTime;
#endif

}  // namespace shardcal::mpi::detail

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
#include <cmath>
#include <ctime>
#include <memory>
#include <thread>

#include "shardcal/communicator.hpp"
#include "shardcal/error.hpp"

namespace shardcal::mpi::detail {

struct HostTime {
  static constexpr bool kWatchdog = true;
  // The clock ranks start samples on (Communicator::start_clock_*): the host's steady clock
  // (CLOCK_MONOTONIC, one per host on Linux), which only ranks on one host share. MPI_Wtime is
  // not used even where MPI_WTIME_IS_GLOBAL says it is global: Open MPI's counts from each
  // process's start, MPICH's from a per-process epoch, and old MPICH ch4 set the attribute
  // unconditionally.
  static Communicator::ClockScope clock_scope() { return Communicator::ClockScope::Host; }
  static double clock_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  // Sleeps until 100 us before, yields until 5 us before, then spins (a sleep overshoots by tens
  // of us, a yield is a system call).
  static void wait_until(double t) {
    while (true) {
      const double left = t - clock_now();
      if (left <= 0) return;
      if (left > 200e-6)
        std::this_thread::sleep_for(std::chrono::duration<double>(left - 100e-6));
      else if (left > 5e-6)
        std::this_thread::yield();
    }
  }
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
  // The simulated clock is one clock for every rank; a simulated sleep ends exactly on time.
  static Communicator::ClockScope clock_scope() { return Communicator::ClockScope::Global; }
  static double clock_now() { return MPI_Wtime(); }
  static void wait_until(double t) {
    while (true) {
      const double left = t - MPI_Wtime();
      if (left <= 0) return;
      // Whole nanoseconds, at least one (a 0 ns sleep would not advance the simulated clock).
      const auto ns = std::max(1LL, static_cast<long long>(std::ceil(left * 1e9)));  // NOLINT(google-runtime-int)
      timespec ts{};
      ts.tv_sec = static_cast<time_t>(ns / 1000000000LL);
      ts.tv_nsec = static_cast<long>(ns % 1000000000LL);  // NOLINT(google-runtime-int)
#ifdef SHARDCAL_SIMULATED_TIME
      smpi_nanosleep(&ts, nullptr);  // smpi_seam.hpp undefines SMPI's nanosleep macro
#else
      nanosleep(&ts, nullptr);  // compiled, never chosen, outside SMPI
#endif
    }
  }
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

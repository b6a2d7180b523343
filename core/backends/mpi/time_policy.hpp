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
#include <ctime>
#include <memory>
#include <thread>

#include "shardcal/communicator.hpp"
#include "shardcal/error.hpp"

namespace shardcal::mpi::detail {

struct HostTime {
  static constexpr bool kWatchdog = true;
  // The clock ranks start samples on (Communicator::start_clock_*): MPI_Wtime where the MPI
  // library says it is global (MPI_WTIME_IS_GLOBAL; Open MPI's is not: it counts from each
  // process's own start), else the host's steady clock (CLOCK_MONOTONIC, one per host on Linux).
  static bool wtime_is_global() {
    int* flag = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &flag, &found);
    return found != 0 && flag != nullptr && *flag != 0;
  }
  static Communicator::ClockScope clock_scope(bool wtime_global) {
    return wtime_global ? Communicator::ClockScope::Global : Communicator::ClockScope::Host;
  }
  static double clock_now(bool wtime_global) {
    if (wtime_global) return MPI_Wtime();
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  // Sleeps, then polls the last stretch (a sleep overshoots by tens of us).
  static void wait_until(double t, bool wtime_global) {
    constexpr double kPoll = 100e-6;
    while (true) {
      const double left = t - clock_now(wtime_global);
      if (left <= 0) return;
      if (left > 2 * kPoll)
        std::this_thread::sleep_for(std::chrono::duration<double>(left - kPoll));
      else
        std::this_thread::yield();
    }
  }
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
  // The simulated clock is one clock for every rank; a simulated sleep ends exactly on time.
  static bool wtime_is_global() { return true; }
  static Communicator::ClockScope clock_scope(bool) { return Communicator::ClockScope::Global; }
  static double clock_now(bool) { return MPI_Wtime(); }
  static void wait_until(double t, bool) {
    while (true) {
      const double left = t - MPI_Wtime();
      if (left <= 0) return;
      const auto ns = static_cast<long long>(left * 1e9) + 1;  // NOLINT(google-runtime-int)
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

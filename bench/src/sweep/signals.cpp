#include "sweep/signals.hpp"

#include <atomic>
#include <csignal>

namespace shardbench::sweep {

namespace {
// Written by the signal handler, read by every rank thread (the sim backend runs ranks as
// threads): a lock-free atomic is both free of data races and async-signal-safe, which a
// volatile sig_atomic_t is not (it is only the former's signal half).
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free,
              "the stop flag must be a lock-free atomic to be usable from a signal handler");
std::atomic<int> g_installed{0};
struct sigaction g_old_int, g_old_term, g_old_usr1;

extern "C" void on_stop_signal(int signum) {
  int none = 0;  // keep the first signal
  g_signal.compare_exchange_strong(none, signum, std::memory_order_relaxed);
}
}  // namespace

void install_stop_handlers() {
  if (g_installed.fetch_add(1) != 0) return;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // blocking calls (MPI progress, file writes) just resume
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
  sigaction(SIGUSR1, &sa, &g_old_usr1);  // Slurm's --signal=USR1@T warning before the time limit
}

void restore_stop_handlers() {
  if (g_installed.fetch_sub(1) != 1) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGUSR1, &g_old_usr1, nullptr);
}

int pending_signal() { return g_signal.load(std::memory_order_relaxed); }
void request_stop(int signum) { g_signal.store(signum, std::memory_order_relaxed); }
void clear_stop() { g_signal.store(0, std::memory_order_relaxed); }

}  // namespace shardbench::sweep

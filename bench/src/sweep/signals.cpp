#include "sweep/signals.hpp"

#include <atomic>
#include <csignal>

namespace shardbench::sweep {

namespace {
volatile std::sig_atomic_t g_signal = 0;  // async-signal-safe: a plain sig_atomic_t store
std::atomic<int> g_installed{0};
struct sigaction g_old_int, g_old_term;

extern "C" void on_stop_signal(int signum) {
  if (g_signal == 0) g_signal = signum;
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
}

void restore_stop_handlers() {
  if (g_installed.fetch_sub(1) != 1) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

int pending_signal() { return g_signal; }
void request_stop(int signum) { g_signal = signum; }
void clear_stop() { g_signal = 0; }

}  // namespace shardbench::sweep

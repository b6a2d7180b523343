// The MPI backend's watchdog without a thread: a POSIX timer sends a real-time signal to the
// thread that calls MPI, and the handler checks the armed WatchScope (mpi_runtime.hpp).
//
// Why no thread: Open MPI turns its internal locking on for every thread level but
// MPI_THREAD_SINGLE (opal_set_using_threads in ompi_mpi_init), which cost 70-160 ns per small
// collective here (docs/PERFORMANCE.md, "Comparing with OSU"), and MPI_THREAD_SINGLE means "only
// one thread will execute" (the MPI standard at MPI_INIT_THREAD): a watchdog thread would make
// that level a lie. A signal handler is not a thread, so the MPI backend runs at
// MPI_THREAD_SINGLE by default and still never hangs.
//
// The handler does only async-signal-safe work (POSIX.1-2017 §2.4.3: clock_gettime,
// timer_settime, write, _exit; atomics that are lock-free): it never calls MPI, never allocates,
// and formats its message into a static buffer. The timer is process-wide, but SIGEV_THREAD_ID
// (Linux) delivers its signal to the MPI thread only, so MPI's and PMIx's own threads never see
// it. SA_RESTART restarts the system calls it interrupts (read, write, waits...); calls that
// return EINTR regardless (poll, nanosleep, epoll_wait) are retried by MPI's progress engine and
// by libstdc++'s sleep_for.
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "mpi_runtime.hpp"
#include "shardcal/error.hpp"

namespace shardcal::mpi::detail {
namespace {

// A real-time signal: no MPI library, PMIx or the C library uses these (glibc reserves the two
// below SIGRTMIN for itself). SIGRTMIN is not a constant, hence a function.
int watchdog_signal() { return SIGRTMIN + 4; }

constexpr std::int64_t kSecond = 1'000'000'000;

struct State {
  std::mutex m;  // start/stop only; the handler takes no lock
  bool attempted = false;
  std::atomic<bool> running{false};  // the timer exists (the handler ignores late signals)
  bool stopped = false;
  timer_t timer{};
  char error[256] = {};  // why it could not start ("" = it did)
  // Written before the timer starts, read by the handler: "<program> rank R".
  char prefix[160] = {};
  std::size_t prefix_len = 0;
  // Handler state. The signal goes to one thread and is blocked while its handler runs, so
  // these are never touched concurrently.
  std::uint64_t seen = 0;      // the armed scope being timed (its seq), 0 = none
  std::int64_t since_ns = 0;   // when the handler first saw it
  std::int64_t period_ns = 0;  // the timer's current interval
};
// Constant-initialised and never destroyed before the handler can run for the last time (the
// timer is deleted in stop_watchdog, at exit, before static destructors).
constinit State g_state{};

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t(ts.tv_sec) * kSecond + ts.tv_nsec;
}

std::int64_t seconds_to_ns(double s) { return std::int64_t(std::min(s, 1e7) * 1e9); }

// The poll interval: 1/20 of the timeout of the latest armed scope, 10 ms .. 1 s (1 s before any
// scope), so an operation stuck for timeout_s is reported after at most timeout_s + 2 intervals.
std::int64_t period_for(double timeout_s) {
  if (!(timeout_s > 0)) return kSecond;
  return std::clamp<std::int64_t>(seconds_to_ns(timeout_s) / 20, kSecond / 100, kSecond);
}

void set_period(State& st, std::int64_t ns) {
  if (ns == st.period_ns) return;
  itimerspec its{};
  its.it_interval.tv_sec = time_t(ns / kSecond);
  its.it_interval.tv_nsec = long(ns % kSecond);
  its.it_value = its.it_interval;
  if (timer_settime(st.timer, 0, &its, nullptr) == 0) st.period_ns = ns;
}

// Appends to a fixed buffer without allocating (a signal handler may not call malloc).
struct Line {
  char buf[4096] = {};
  std::size_t len = 0;
  void add(const char* s, std::size_t n) {
    n = std::min(n, sizeof buf - 1 - len);
    std::memcpy(buf + len, s, n);
    len += n;
  }
  void add(const char* s) { add(s, std::strlen(s)); }
  void add_uint(std::uint64_t v) {
    char d[24];
    std::size_t k = 0;
    do {
      d[k++] = char('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (k > 0) add(&d[--k], 1);
  }
  // Seconds to the millisecond, without trailing zeros: 2 -> "2", 0.5 -> "0.5", 300 -> "300"
  // (what seconds_text's "%g" gives for timeouts of whole milliseconds below 1e6 s; the error
  // text is for people, who type such timeouts).
  void add_seconds(double s) {
    const auto ms = std::uint64_t(std::min(s, 1e7) * 1000 + 0.5);
    add_uint(ms / 1000);
    std::uint64_t frac = ms % 1000;
    if (frac == 0) return;
    char f[4] = {char('0' + frac / 100), char('0' + frac / 10 % 10), char('0' + frac % 10), 0};
    std::size_t n = 3;
    while (f[n - 1] == '0') --n;
    add(".");
    add(f, n);
  }
};

// Constant-initialised (no guard variable, whose lock a signal handler must not take), and off
// the interrupted thread's stack.
constinit Line g_line{};

[[noreturn]] void report_timeout(State& st, const char* op, const std::string* group, int peer,
                                 double timeout_s) {
  Line& line = g_line;
  line.len = 0;
  line.add(st.prefix, st.prefix_len);
  line.add(": error: ");
  line.add(op);
  if (peer >= 0) {
    line.add(" (peer rank ");
    line.add_uint(std::uint64_t(peer));
    line.add(")");
  }
  line.add(" on ");
  line.add(group->data(), group->size());
  line.add(" timed out after ");
  line.add_seconds(timeout_s);
  line.add(
      " s (a peer rank died, is stuck, or never called it; raise --timeout if the operation is "
      "legitimately this slow); aborting the job");
  line.buf[line.len++] = '\n';
  // One write(2) per line so the lines of several ranks do not interleave.
  for (std::size_t done = 0; done < line.len;) {
    const ssize_t n = ::write(STDERR_FILENO, line.buf + done, line.len - done);
    if (n <= 0 && errno != EINTR) break;
    if (n > 0) done += std::size_t(n);
  }
  // No MPI_Abort: the handler may have interrupted MPI itself. A rank that exits without
  // MPI_Finalize makes the launcher end the job (mpirun/mpiexec always; srun with
  // --kill-on-bad-exit), and the peers' own watchdogs bound their wait in any case.
  _exit(kTimeoutExitCode);
}

// The watchdog proper: the same sequence-lock read as before the handler existed (WatchSlot).
void on_tick(int /*sig*/) {
  const int saved_errno = errno;
  State& st = g_state;
  if (!st.running.load(std::memory_order_relaxed)) return;  // pending when the timer was deleted
  WatchSlot& slot = g_watch;
  const std::int64_t now = now_ns();
  const std::uint64_t s1 = slot.seq.load(std::memory_order_acquire);
  const double timeout = std::min(slot.timeout_s.load(std::memory_order_relaxed), 1e7);
  if (s1 & 1) {
    const char* op = slot.op.load(std::memory_order_relaxed);
    const std::string* group = slot.group.load(std::memory_order_relaxed);
    const int peer = slot.peer.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.seq.load(std::memory_order_relaxed) == s1) {  // the fields belong to scope s1
      if (s1 != st.seen) {
        st.seen = s1;
        st.since_ns = now;
      } else if (now - st.since_ns >= seconds_to_ns(timeout)) {
        // Seen armed since `since` and still the same scope: it did not return in time.
        report_timeout(st, op, group, peer, timeout);
      }
    }
  }
  set_period(st, period_for(timeout));
  errno = saved_errno;
}

}  // namespace

namespace {

// Installs the handler and creates the timer, aimed at the calling thread; on failure records why
// in st.error. Called once, under st.m.
void start_locked(State& st) {
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free &&
                    std::atomic<double>::is_always_lock_free &&
                    std::atomic<const char*>::is_always_lock_free &&
                    std::atomic<bool>::is_always_lock_free,
                "the watchdog's signal handler reads WatchSlot: its atomics must be lock-free");
  st.attempted = true;
  g_watch.attempted.store(true, std::memory_order_relaxed);
  auto fail = [&st](const char* what, int err) {
    std::snprintf(st.error, sizeof st.error, "%s%s%s", what, err != 0 ? ": " : "",
                  err != 0 ? std::strerror(err) : "");
  };
  const std::string prefix = rank_prefix();
  st.prefix_len = std::min(prefix.size(), sizeof st.prefix);
  std::memcpy(st.prefix, prefix.data(), st.prefix_len);

  // The signal must be ours: a handler (or an ignore) someone else set would be silently
  // replaced, and the program would lose its own.
  struct sigaction old {};
  if (sigaction(watchdog_signal(), nullptr, &old) != 0) return fail("sigaction", errno);
  if ((old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_DFL && old.sa_handler != on_tick))
    return fail(
        "the MPI backend's watchdog needs signal SIGRTMIN+4, which this program already handles "
        "or ignores; free that signal (shardcal uses it to bound every blocking MPI call)",
        0);
  struct sigaction sa {};
  sa.sa_handler = on_tick;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(watchdog_signal(), &sa, nullptr) != 0)
    return fail("the MPI backend's watchdog cannot install its signal handler", errno);
  // A thread that blocks the signal would never be told that a call is stuck: unblock it on
  // this thread (only this signal, which nothing else uses).
  sigset_t mine;
  sigemptyset(&mine);
  sigaddset(&mine, watchdog_signal());
  pthread_sigmask(SIG_UNBLOCK, &mine, nullptr);
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = watchdog_signal();
  sev._sigev_un._tid = pid_t(syscall(SYS_gettid));  // this thread: the one that calls MPI
  if (timer_create(CLOCK_MONOTONIC, &sev, &st.timer) != 0)
    return fail("the MPI backend's watchdog cannot create its timer", errno);
  st.running.store(true, std::memory_order_relaxed);
  set_period(st, period_for(g_watch.timeout_s.load(std::memory_order_relaxed)));
}

}  // namespace

void start_watchdog() {
  State& st = g_state;
  std::lock_guard lk(st.m);
  if (!st.attempted && !st.stopped) start_locked(st);
  if (st.error[0] != '\0') throw Error(st.error);
}

void start_watchdog_quietly() noexcept {
  State& st = g_state;
  std::lock_guard lk(st.m);
  if (!st.attempted && !st.stopped) start_locked(st);
}

void stop_watchdog() {
  State& st = g_state;
  std::lock_guard lk(st.m);
  st.stopped = true;
  if (!st.running.load(std::memory_order_relaxed)) return;
  st.running.store(false, std::memory_order_relaxed);
  timer_delete(st.timer);  // a signal already pending finds running false and returns
}

}  // namespace shardcal::mpi::detail

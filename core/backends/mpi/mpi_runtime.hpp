#pragma once
// Internals of the MPI backend (includes mpi.h; included by the MPI and NCCL backends' .cpp files
// and by bench/micro/mpi_overhead.cpp, which times WatchScope on its own):
// process-wide MPI init/finalize, the watchdog that bounds every blocking call, job abort, and
// the datatype/op mapping including counts beyond INT_MAX.
#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstddef>
#include <string>
#include <string_view>

#include "shardcal/dtype.hpp"
#include "time_policy.hpp"

namespace shardcal::mpi::detail {

// MPI_Init_thread once per process (finalized at exit) at the level SHARDCAL_MPI_THREAD_LEVEL
// names, else `default_level` (the first caller's wins); throws Error if MPI is unusable or the
// variable is not a level. Only the calling thread may call MPI afterwards. The MPI backend's
// default is MPI_THREAD_SINGLE: its process has no other thread (the watchdog is a signal
// handler, watchdog.cpp). The NCCL backend asks for MPI_THREAD_FUNNELED (CUDA and NCCL start
// threads of their own, which never call MPI).
void ensure_initialized(int default_level = MPI_THREAD_SINGLE);
int world_rank();  // rank in MPI_COMM_WORLD (-1 before init)
int thread_level_provided();   // MPI_Query_thread after init
int thread_level_requested();  // what MPI_Init_thread was asked for
const char* thread_level_name(int level);  // "single", "funneled", "serialized", "multiple"

// "<program> rank R" for messages, e.g. "shardbench rank 3".
std::string rank_prefix();
// Prints "<program> rank R: error: <message>" to stderr in one write, then ends the whole job:
// MPI_Abort on MPI_COMM_WORLD from the thread that initialised MPI; from any other thread
// _Exit(exit_code) without calling MPI, and the launcher ends the job.
[[noreturn]] void abort_job(const std::string& message, int exit_code);
inline constexpr int kErrorExitCode = 1;
inline constexpr int kTimeoutExitCode = 124;  // as timeout(1), so scripts can tell it apart

// Text that lives as long as the process: one copy per distinct text, never freed (the texts
// are communicator descriptions, so there are few). Only intern() makes one.
class InternedText {
 public:
  const std::string& str() const { return *text_; }

 private:
  explicit InternedText(const std::string* text) : text_(text) {}
  friend InternedText intern(std::string_view text);
  const std::string* text_;
};
// Thread-safe (a lock and a set lookup: call it when a communicator is made, not per operation);
// equal texts give the same address.
InternedText intern(std::string_view text);

// Arms the process watchdog for one blocking operation: if the scope is still alive after
// timeout_s, the watchdog (a timer signal's handler on this thread, watchdog.cpp) prints a
// message naming op, group and peer (point to point, -1 otherwise) and ends this process with
// kTimeoutExitCode, without calling MPI; it fires after timeout_s and at most two poll periods
// later (a period is timeout_s/20 within 10 ms .. 1 s, so at most about 2 s later). Arming and disarming are a few plain stores (no
// lock, no clock read, no syscall), so timed collectives are not perturbed. Scopes do not nest
// (one blocking call at a time, from the thread that initialised MPI). `op` must live as long as
// the process (a string literal); `group` is interned text (above) for the same reason: the
// watchdog may still read the fields just after the scope ended and the communicator that named
// the group was destroyed.
//
// The armed operation is published by the thread that calls MPI without a lock or a clock read
// (a sequence lock with a single writer): `seq` is odd while a scope is armed and changes with
// every arm and disarm; the fields are written only while it is even. The watchdog reads seq,
// the fields, then seq again, and trusts the fields only if seq did not change (its handler can
// interrupt the writer between any two stores). The slot is a constant-initialised global (no
// destructor: the exit handler and the watchdog may use it while static destructors run) and the scope is inline, so arming costs a few stores and no
// call on every timed operation.
struct WatchSlot {
  std::atomic<bool> attempted{false};  // the watchdog was started (or failed to start)
  std::atomic<std::uint64_t> seq{0};
  std::atomic<const char*> op{nullptr};
  std::atomic<const std::string*> group{nullptr};
  std::atomic<int> peer{-1};
  std::atomic<double> timeout_s{0};  // also what MPI_Finalize's scope at exit reuses (0: none yet)
};
// One object per program as long as the backends are static libraries (as built here). Were
// they ever built as shared libraries with hidden visibility, each would get its own copy and
// a scope armed in one would be invisible to the watchdog: give it default visibility then.
inline constinit WatchSlot g_watch{};
// Starts the watchdog's timer, aimed at the calling thread (the one that calls MPI), once per
// process; throws Error if it cannot (e.g. the program handles SIGRTMIN+4 itself), now and at
// every later call. The MPI backend's run() calls it before its first MPI call, so such a
// program fails with that Error on every rank. While it runs, that thread receives SIGRTMIN+4
// (SA_RESTART) every 1/20 of the latest timeout (10 ms .. 1 s), even between runs.
void start_watchdog();
// The same without the Error: the first WatchScope of a process that never called it (the NCCL
// backend, whose only watched call is MPI_Finalize at exit) starts it here, or runs unwatched.
void start_watchdog_quietly() noexcept;
void stop_watchdog();  // at exit, after MPI_Finalize

class WatchScope {
 public:
  WatchScope(const char* op, InternedText group, double timeout_s, int peer = -1) {
    if constexpr (!TimePolicy::kWatchdog) return;
    WatchSlot& w = g_watch;
    if (!w.attempted.load(std::memory_order_relaxed)) start_watchdog_quietly();
    // Scopes do not nest (one blocking call at a time); if one did, it re-arms with its own
    // fields.
    const std::uint64_t s = w.seq.load(std::memory_order_relaxed);
    const std::uint64_t even = (s & 1) ? s + 1 : s;
    if (s & 1) w.seq.store(even, std::memory_order_relaxed);
    // Orders the disarm (seq even) before the field writes, for the watchdog's re-check of seq.
    std::atomic_thread_fence(std::memory_order_release);
    w.op.store(op, std::memory_order_relaxed);
    w.group.store(&group.str(), std::memory_order_relaxed);
    w.peer.store(peer, std::memory_order_relaxed);
    w.timeout_s.store(timeout_s, std::memory_order_relaxed);
    w.seq.store(even + 1, std::memory_order_release);  // armed
  }
  ~WatchScope() {
    if constexpr (!TimePolicy::kWatchdog) return;
    WatchSlot& w = g_watch;
    const std::uint64_t s = w.seq.load(std::memory_order_relaxed);
    if (s & 1) w.seq.store(s + 1, std::memory_order_release);  // disarmed
  }
  WatchScope(const WatchScope&) = delete;
  WatchScope& operator=(const WatchScope&) = delete;
};

// Largest element count passed to one MPI call on the non-v paths: INT_MAX, or the value of
// SHARDCAL_MPI_MAX_COUNT (a test knob that sends small messages through the large-count paths).
std::size_t max_count();
MPI_Op user_reduce_op(DType t, ReduceOp eff);   // shardcal's own op for (t, Sum|Max|Min)

// f16/bf16 travel as MPI_UINT16_T. Inline (as reduce_op's native branch and ElemType's
// common case below): they run on every call, and parity.sh times ~250 ns calls.
inline MPI_Datatype base_type(DType t) {
  switch (t) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::F16:
    case DType::BF16: return MPI_UINT16_T;
    case DType::I32: return MPI_INT32_T;
    case DType::I64: return MPI_INT64_T;
    case DType::U8: return MPI_UINT8_T;
  }
  throw_unknown_dtype();
}
// The MPI_Op for op on t (Avg maps to Sum; the caller divides). Native MPI_SUM/MAX/MIN where MPI
// reduces the type itself (f32, f64, i32, i64); a commutative user op over shardcal::reduce_into
// for f16/bf16, for u8 (see the .cpp for the MPI bugs), and whenever `derived` is set
// (predefined ops take predefined datatypes only).
inline MPI_Op reduce_op(DType t, ReduceOp op, bool derived) {
  const ReduceOp eff = op == ReduceOp::Avg ? ReduceOp::Sum : op;
  // u8 always goes through our own op: Open MPI 4.1.4's op/avx saturates MPI_SUM on
  // MPI_UINT8_T (127 + 130 gave 255; shardcal wraps like the sim, NCCL and C; cf.
  // open-mpi/ompi#8045) and MPICH 4.0.2 compares MPI_UINT8_T as signed in MPI_MAX/MPI_MIN
  // (max(100, 200) gave 100; pmodels/mpich#6083). Both verified on this machine.
  const bool native_ok = t != DType::F16 && t != DType::BF16 && t != DType::U8;
  if (!derived && native_ok) {
    switch (eff) {
      case ReduceOp::Sum: return MPI_SUM;
      case ReduceOp::Max: return MPI_MAX;
      case ReduceOp::Min: return MPI_MIN;
      case ReduceOp::Avg: break;
    }
  }
  return user_reduce_op(t, eff);
}

// n elements of t as one (datatype, count) pair for a single MPI call: the predefined type when
// n <= max_count(), else a committed struct type describing all n elements (count 1) that the
// user ops know how to reduce. Frees the derived type when destroyed.
class ElemType {
 public:
  ElemType(DType t, std::size_t n) : ElemType(t, n, max_count()) {}
  // limit: max_count(), passed by callers that cached it (the common case stays inline).
  ElemType(DType t, std::size_t n, std::size_t limit)
      : type_(base_type(t)), count_(n < std::size_t(INT_MAX) ? int(n) : INT_MAX) {
    if (n > limit) make_derived(t, n, limit);
  }
  ~ElemType() {
    if (derived_) release();
  }
  ElemType(const ElemType&) = delete;
  ElemType& operator=(const ElemType&) = delete;
  MPI_Datatype type() const { return type_; }
  int count() const { return count_; }
  bool derived() const { return derived_; }

 private:
  void make_derived(DType t, std::size_t n, std::size_t limit);
  void release();
  MPI_Datatype type_;
  int count_;
  bool derived_ = false;
};

std::string seconds_text(double s);  // "2", "0.5", "300"
// MPI_Error_string of an MPI return code.
std::string error_string(int rc);

}  // namespace shardcal::mpi::detail

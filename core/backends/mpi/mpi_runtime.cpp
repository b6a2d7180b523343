#include "mpi_runtime.hpp"

#include <algorithm>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "mpi_backend.hpp"
#include "shardcal/error.hpp"

namespace shardcal::mpi {

namespace detail {
namespace {

constexpr int kNumDTypes = 7;
constexpr int kNumOps = 4;

// Process-wide state. Heap-allocated and never freed: the exit handler uses it while static
// destructors run.
struct Runtime {
  std::once_flag once;
  bool we_initialized = false;
  int thread_level = MPI_THREAD_SINGLE;            // provided (MPI_Query_thread)
  int requested_level = MPI_THREAD_SINGLE;         // SHARDCAL_MPI_THREAD_LEVEL or the default
  std::thread::id init_thread;
  int world_rank = -1;
  std::size_t max_count = INT_MAX;
  std::array<MPI_Op, kNumDTypes * kNumOps> user_ops{};
  std::mutex types_m;
  std::vector<std::pair<MPI_Datatype, std::size_t>> derived_types;  // type -> elements per item
};

Runtime& rt() {
  static Runtime* r = [] {
    auto* fresh = new Runtime;
    fresh->user_ops.fill(MPI_OP_NULL);
    return fresh;
  }();
  return *r;
}

bool mpi_usable() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init != 0 && fin == 0;
}

std::size_t elems_per_item(MPI_Datatype dt, DType t) {
  if (dt == base_type(t)) return 1;
  Runtime& r = rt();
  std::lock_guard lk(r.types_m);
  for (const auto& [type, n] : r.derived_types)
    if (type == dt) return n;
  abort_job("internal: MPI user reduction called with a datatype the MPI backend did not create",
            kErrorExitCode);
}

// MPI_User_function for (dtype T, op O): MPI hands us `len` items of `dt`, which is either the
// predefined carrier type or one of our large-count struct types.
template <int T, int O>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype* dt) {
  const auto t = static_cast<DType>(T);
  reduce_into(t, static_cast<ReduceOp>(O), inout, in, std::size_t(*len) * elems_per_item(*dt, t));
}

template <std::size_t... I>
constexpr std::array<MPI_User_function*, sizeof...(I)> make_user_fns(std::index_sequence<I...>) {
  return {&user_reduce<int(I / kNumOps), int(I % kNumOps)>...};
}
constexpr auto kUserFns = make_user_fns(std::make_index_sequence<kNumDTypes * kNumOps>{});

void finalize_at_exit() {
  Runtime& r = rt();
  if (mpi_usable()) {
    {
      // MPI_Finalize synchronizes with the other ranks; a rank that exits while its peers are
      // stuck must not hang here either.
      // The timeout of the last operation (300 s if there was none).
      const double last = g_watch.timeout_s.load(std::memory_order_relaxed);
      WatchScope w("MPI_Finalize", intern("mpi world"), last > 0 ? last : 300);
      for (MPI_Op& op : r.user_ops)
        if (op != MPI_OP_NULL) MPI_Op_free(&op);
      MPI_Finalize();
    }
  }
  stop_watchdog();
}

std::size_t read_max_count() {
  const char* v = std::getenv("SHARDCAL_MPI_MAX_COUNT");
  if (v == nullptr || *v == '\0') return INT_MAX;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (end == v || *end != '\0' || n < 1 || n > INT_MAX)
    throw Error(std::string("SHARDCAL_MPI_MAX_COUNT='") + v + "' must be an integer in 1.." +
                std::to_string(INT_MAX));
  return std::size_t(n);
}

struct LevelName {
  int level;
  const char* name;
};
constexpr std::array<LevelName, 4> kLevels{{{MPI_THREAD_SINGLE, "single"},
                                            {MPI_THREAD_FUNNELED, "funneled"},
                                            {MPI_THREAD_SERIALIZED, "serialized"},
                                            {MPI_THREAD_MULTIPLE, "multiple"}}};

// SHARDCAL_MPI_THREAD_LEVEL: single | funneled | serialized | multiple (any case, with or
// without the MPI_THREAD_ prefix); unset or empty = `fallback`.
int read_thread_level(int fallback) {
  const char* v = std::getenv("SHARDCAL_MPI_THREAD_LEVEL");
  if (v == nullptr || *v == '\0') return fallback;
  std::string s(v);
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (s.rfind("mpi_thread_", 0) == 0) s.erase(0, 11);
  for (const auto& l : kLevels)
    if (s == l.name) return l.level;
  throw Error(std::string("SHARDCAL_MPI_THREAD_LEVEL='") + v +
              "' is not an MPI thread level: use single, funneled, serialized or multiple (or "
              "unset it for the backend's default, " + thread_level_name(fallback) +
              "; shardcal calls MPI from one thread only, so it never needs more)");
}

}  // namespace

const char* thread_level_name(int level) {
  for (const auto& l : kLevels)
    if (l.level == level) return l.name;
  return "unknown";
}

void ensure_initialized(int default_level) {
  Runtime& r = rt();
  std::call_once(r.once, [&r, default_level] {
    r.max_count = read_max_count();
    r.requested_level = read_thread_level(default_level);
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (fin != 0)
      throw Error("the MPI backend cannot start: MPI was already finalized in this process");
    if (init == 0) {
      int provided = MPI_THREAD_SINGLE;
      // Whatever MPI provides is enough: only this thread ever calls MPI (the watchdog is a
      // signal handler on this thread, watchdog.cpp, and never calls MPI).
      const int rc = MPI_Init_thread(nullptr, nullptr, r.requested_level, &provided);
      if (rc != MPI_SUCCESS) throw Error("MPI_Init_thread failed: " + error_string(rc));
      r.we_initialized = true;
      std::atexit(finalize_at_exit);
    } else {
      std::atexit(stop_watchdog);  // whoever initialised MPI finalizes it; the timer stops at exit
    }
    MPI_Query_thread(&r.thread_level);
    if (!r.we_initialized) r.requested_level = r.thread_level;  // someone else chose it
    r.init_thread = std::this_thread::get_id();
    MPI_Comm_rank(MPI_COMM_WORLD, &r.world_rank);
    // Errors come back as return codes everywhere (our communicators set it too), so they can
    // be turned into shardcal::Error with the rank, operation and group.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 0; i < kNumDTypes * kNumOps; ++i) {
      const int rc =
          MPI_Op_create(kUserFns[std::size_t(i)], /*commute=*/1, &r.user_ops[std::size_t(i)]);
      if (rc != MPI_SUCCESS) throw Error("MPI_Op_create failed: " + error_string(rc));
    }
  });
  if (!mpi_usable())
    throw Error("the MPI backend cannot run: MPI was already finalized in this process");
}

int world_rank() { return rt().world_rank; }

int thread_level_provided() { return rt().thread_level; }
int thread_level_requested() { return rt().requested_level; }

std::string rank_prefix() {
#if defined(__GLIBC__)
  const char* prog = program_invocation_short_name;
#else
  const char* prog = "shardcal";
#endif
  const int r = rt().world_rank;
  return std::string(prog) + " rank " + (r >= 0 ? std::to_string(r) : std::string("?"));
}

void abort_job(const std::string& message, int exit_code) {
  const std::string line = rank_prefix() + ": error: " + message + "\n";
  // One write(2) per line so the lines of several ranks do not interleave.
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n <= 0 && errno != EINTR) break;
    if (n > 0) done += std::size_t(n);
  }
  // Only the thread that initialised MPI may call it (the watchdog's handler never does, at any
  // thread level: it may fire while that thread is inside MPI). Without MPI_Abort, a rank that exits
  // without MPI_Finalize still makes the launcher end the job (mpirun/mpiexec always; srun with
  // --kill-on-bad-exit), and the peers' own watchdogs bound their wait in any case.
  Runtime& r = rt();
  if (std::this_thread::get_id() == r.init_thread && mpi_usable())
    MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

InternedText intern(std::string_view text) {
  // Heap-allocated and never freed, like the runtime: the watchdog may read a text while static
  // destructors run. std::set nodes never move, so the addresses stay valid as it grows.
  static std::mutex* m = new std::mutex;
  static std::set<std::string, std::less<>>* texts = new std::set<std::string, std::less<>>;
  std::lock_guard lk(*m);
  auto it = texts->find(text);
  if (it == texts->end()) it = texts->emplace(text).first;
  return InternedText(&*it);
}

std::size_t max_count() { return rt().max_count; }

MPI_Op user_reduce_op(DType t, ReduceOp eff) {
  return rt().user_ops[std::size_t(int(t) * kNumOps + int(eff))];
}

void ElemType::make_derived(DType t, std::size_t n, std::size_t limit) {
  // n elements as one item: q blocks of k elements, then the r leftover elements.
  const std::size_t k = std::min<std::size_t>(limit, std::size_t(1) << 20);
  const std::size_t q = n / k, r = n % k;
  const std::size_t es = dtype_size(t);
  if (q > std::size_t(INT_MAX))
    throw Error("message of " + std::to_string(n) + " elements is too large for the MPI backend");
  auto check = [n](int rc, const char* what) {
    if (rc != MPI_SUCCESS)
      throw Error(std::string(what) + " for a large-count message of " + std::to_string(n) +
                  " elements failed: " + error_string(rc));
  };
  MPI_Datatype block = MPI_DATATYPE_NULL, whole = MPI_DATATYPE_NULL;
  check(MPI_Type_contiguous(int(k), type_, &block), "MPI_Type_contiguous");
  int lens[2] = {int(q), int(r)};
  MPI_Aint displs[2] = {0, MPI_Aint(q * k * es)};
  MPI_Datatype types[2] = {block, type_};
  check(MPI_Type_create_struct(r != 0 ? 2 : 1, lens, displs, types, &whole),
        "MPI_Type_create_struct");
  // Pin the extent to exactly n elements (struct types may be padded for alignment), so rank
  // blocks of all_gather/all_to_all land at multiples of n.
  check(MPI_Type_create_resized(whole, 0, MPI_Aint(n * es), &type_), "MPI_Type_create_resized");
  MPI_Type_free(&whole);
  MPI_Type_free(&block);
  check(MPI_Type_commit(&type_), "MPI_Type_commit");
  count_ = 1;
  derived_ = true;
  Runtime& rr = rt();
  std::lock_guard lk(rr.types_m);
  rr.derived_types.emplace_back(type_, n);
}

void ElemType::release() {
  Runtime& r = rt();
  {
    std::lock_guard lk(r.types_m);
    std::erase_if(r.derived_types, [this](const auto& p) { return p.first == type_; });
  }
  if (mpi_usable()) MPI_Type_free(&type_);
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string error_string(int rc) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) return "MPI error code " + std::to_string(rc);
  return std::string(buf, std::size_t(len));
}

}  // namespace detail

ThreadLevel thread_level() {
  detail::Runtime& r = detail::rt();
  int init = 0;
  MPI_Initialized(&init);
  if (init == 0) return {};
  return {detail::thread_level_name(r.requested_level), detail::thread_level_name(r.thread_level)};
}

std::string library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  if (MPI_Get_library_version(buf, &len) != MPI_SUCCESS) return "unknown";
  std::string v(buf, std::size_t(len));
  if (const auto nl = v.find('\n'); nl != std::string::npos) v.resize(nl);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\r' || v.back() == '\0')) v.pop_back();
  return v;
}

}  // namespace shardcal::mpi

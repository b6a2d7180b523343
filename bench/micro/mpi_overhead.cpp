// What the MPI backend's design costs per call, by thread level (bench/scripts/mpi_overhead.sh runs
// this once per level, interleaved, and prints the table in docs/PERFORMANCE.md).
//
// Within one process (one thread level, taken from SHARDCAL_MPI_THREAD_LEVEL by the backend's own
// MPI_Init_thread) three ways of making the same call are timed the OSU way (MPI_Wtime around the
// call, MPI_Barrier between calls, `skip` untimed warm-up calls), interleaved round by round in a
// rotating order so that drift in machine load hits each alike:
//   raw      MPI_Allgather / MPI_Allreduce on MPI_COMM_WORLD (what osu_style.cpp does)
//   watch    the same call inside the backend's WatchScope (arming/disarming the watchdog)
//   backend  Communicator::all_gather / all_reduce of the MPI backend (virtual call, argument and
//            aliasing checks, WatchScope, the MPI call on the backend's duplicate of the world)
// Statistic (as shardbench and osu_style report it): per iteration the slowest rank's time; the
// median over iterations; then the median over rounds. Sizes follow shardbench's convention
// (DESIGN §4): all_gather S is the whole output, all_reduce S one rank's buffer (f32).
//
//   mpi_overhead [--iterations N] [--skip K] [--rounds R] SIZE...   (JSON lines on rank 0)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "mpi/mpi_backend.hpp"
#include "mpi/mpi_runtime.hpp"
#include "shardcal/error.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Args {
  int iterations = 200;
  int skip = 20;
  int rounds = 3;
  std::vector<long> sizes;
};

bool parse_int(const char* text, int lo, int& out) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > 1000000000L) return false;
  out = int(v);
  return true;
}

// Empty string on success, else what is wrong.
std::string parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](int lo, int& out) -> std::string {
      if (i + 1 >= argc) return arg + " needs a value";
      if (!parse_int(argv[++i], lo, out))
        return arg + " " + argv[i] + ": expected an integer >= " + std::to_string(lo);
      return {};
    };
    std::string err;
    if (arg == "--iterations") err = value(1, a.iterations);
    else if (arg == "--skip") err = value(0, a.skip);
    else if (arg == "--rounds") err = value(1, a.rounds);
    else {
      int s = 0;
      if (!parse_int(argv[i], 4, s) || s % 4 != 0)
        return "size '" + arg + "' must be a multiple of 4 bytes, at least 4 (f32 elements)";
      a.sizes.push_back(s);
    }
    if (!err.empty()) return err;
  }
  if (a.sizes.empty()) return "no sizes given";
  return {};
}

enum class Variant { Raw, Watch, Backend };
constexpr const char* kVariantNames[] = {"raw", "watch", "backend"};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (const std::string err = parse(argc, argv, a); !err.empty()) {
    std::fprintf(stderr,
                 "mpi_overhead: %s\nusage: mpi_overhead [--iterations N] [--skip K] [--rounds R] "
                 "SIZE...\n",
                 err.c_str());
    return 2;
  }
  namespace detail = shardcal::mpi::detail;
  try {
    shardcal::mpi::run(0, shardcal::mpi::Options{}, [&](shardcal::Communicator& world) {
      const int rank = world.rank(), n = world.size();
      const shardcal::mpi::ThreadLevel level = shardcal::mpi::thread_level();
      static const detail::InternedText group = detail::intern("mpi_overhead world");
      for (const char* op : {"all_gather", "all_reduce"}) {
        const bool gather = op[4] == 'g';
        for (long s : a.sizes) {
          const long elems = s / 4;
          const long count = gather ? std::max(1L, elems / n) : elems;
          std::vector<float> send(std::size_t(count), 1.0f),
              recv(std::size_t(gather ? count * n : count));
          auto raw = [&] {
            if (gather)
              MPI_Allgather(send.data(), int(count), MPI_FLOAT, recv.data(), int(count), MPI_FLOAT,
                            MPI_COMM_WORLD);
            else
              MPI_Allreduce(send.data(), recv.data(), int(count), MPI_FLOAT, MPI_SUM,
                            MPI_COMM_WORLD);
          };
          auto call = [&](Variant v) {
            switch (v) {
              case Variant::Raw:
                raw();
                break;
              case Variant::Watch: {
                detail::WatchScope w(op, group, 300);
                raw();
                break;
              }
              case Variant::Backend:
                if (gather)
                  world.all_gather(send.data(), recv.data(), std::size_t(count),
                                   shardcal::DType::F32);
                else
                  world.all_reduce(send.data(), recv.data(), std::size_t(count),
                                   shardcal::DType::F32, shardcal::ReduceOp::Sum);
                break;
            }
          };
          std::vector<std::vector<double>> per_round(3);
          std::vector<double> mine(std::size_t(a.iterations)), slowest(std::size_t(a.iterations));
          for (int r = 0; r < a.rounds; ++r) {
            for (int k = 0; k < 3; ++k) {
              const auto v = static_cast<Variant>((k + r) % 3);  // rotate who goes first
              MPI_Barrier(MPI_COMM_WORLD);
              for (int i = 0; i < a.iterations + a.skip; ++i) {
                const double t0 = MPI_Wtime();
                call(v);
                const double t1 = MPI_Wtime();
                if (i >= a.skip) mine[std::size_t(i - a.skip)] = t1 - t0;
                MPI_Barrier(MPI_COMM_WORLD);
              }
              MPI_Reduce(mine.data(), slowest.data(), a.iterations, MPI_DOUBLE, MPI_MAX, 0,
                         MPI_COMM_WORLD);
              if (rank == 0) per_round[std::size_t(v)].push_back(median(slowest));
            }
          }
          if (rank != 0) continue;
          for (int v = 0; v < 3; ++v)
            std::printf(
                "{\"op\":\"%s\",\"size\":%ld,\"variant\":\"%s\",\"thread_level\":\"%s\","
                "\"thread_level_requested\":\"%s\",\"ranks\":%d,\"iterations\":%d,\"rounds\":%d,"
                "\"median_slowest_s\":%.9g}\n",
                op, s, kVariantNames[v], level.provided.c_str(), level.requested.c_str(), n,
                a.iterations, a.rounds, median(per_round[std::size_t(v)]));
          std::fflush(stdout);
        }
      }
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_overhead: %s\n", e.what());
    return 1;
  }
  return 0;
}

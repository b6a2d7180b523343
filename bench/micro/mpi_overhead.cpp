// What the MPI backend's design costs per call, by thread level (bench/scripts/mpi_overhead.sh runs
// this once per level, interleaved, and prints the table in docs/PERFORMANCE.md).
//
// Within one process (one thread level, taken from SHARDCAL_MPI_THREAD_LEVEL by the backend's own
// MPI_Init_thread) up to six ways of making the same call are timed the OSU way (MPI_Wtime around the
// call, MPI_Barrier between calls, `skip` untimed warm-up calls), interleaved round by round in a
// rotating order so that drift in machine load hits each alike:
//   raw      MPI_Allgather / MPI_Allreduce on MPI_COMM_WORLD (what osu_style.cpp does)
//   watch    the same call inside the backend's WatchScope (arming/disarming the watchdog)
//   dup      the raw call on an MPI_Comm_dup of MPI_COMM_WORLD (the backend's communicators are
//            duplicates or splits of the world, never the world itself)
//   page     the raw call on page-aligned buffers, as OSU allocates them (posix_memalign to the
//            page size in osu_util.c) and the sweep places them; shardcal's host memory is
//            page-aligned from 4 KiB up anyway, so page and raw differ only below 4 KiB
//   backend  Communicator::all_gather / all_reduce of the MPI backend (virtual call, argument and
//            aliasing checks, WatchScope, the MPI call on the backend's duplicate of the world)
//   sweep    one point of `shardbench sweep` itself: shardbench::sweep::measure_collective, the
//            harness's own timed loop (untimed barrier, clock, backend call, clock; checkpoints;
//            the correctness check run), on the point of --sweep-config (the very config
//            parity.sh gives shardbench: fixed iteration count equal to --iterations, warm-up
//            equal to --skip, no buffer rotation, mesh = the world). Its samples are already the
//            slowest rank's; the median of them is compared as the other variants' is.
// Comparing `sweep` with `raw` inside one process is the side-by-side parity measurement of
// bench/scripts/parity.sh (table 2): same launch, same rank placement, same MPI thread level
// (run it with SHARDCAL_MPI_THREAD_LEVEL=single for the OSU loop's MPI_Init level). Every
// variant but page takes its buffers from shardcal's host memory (64-byte aligned, page-aligned
// from 4 KiB), as the sweep's do: with
// std::vector buffers (malloc, 16 bytes past a page boundary at these sizes) raw was 5-15 %
// slower than sweep at 2-4 MiB all_reduce, an allocation effect, not a harness one.
// Statistic (as shardbench and osu_style report it): per iteration the slowest rank's time; the
// median over iterations; then the median over rounds. OSU's statistic is reported too
// (`rank_mean_max_s`: each rank's mean over its iterations, the largest across ranks, median over
// rounds), the one osu_compare.sh compares with OSU's binary. Sizes follow shardbench's convention
// (docs/RESULTS_FORMAT.md): all_gather S is the whole output, all_reduce S one rank's buffer (f32).
//
//   mpi_overhead [--iterations N] [--skip K] [--rounds R] [--variants raw,page,sweep,...]
//                [--sweep-config FILE] SIZE...
//   (JSON lines on rank 0; default variants: raw,watch,backend; sweep needs >= 2 ranks and
//   --sweep-config)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "mpi/mpi_backend.hpp"
#include "mpi/mpi_runtime.hpp"
#include "shardcal/collectives.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/median.hpp"
#include "shardcal/memory.hpp"
#include "shardcal/mesh_comm.hpp"
#include "sweep/config.hpp"
#include "sweep/runner.hpp"

namespace {

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

using shardcal::formats::median;

struct Args {
  int iterations = 200;
  int skip = 20;
  int rounds = 3;
  std::vector<long> sizes;
  std::vector<int> variants;  // indices into kVariantNames
  std::string sweep_config;   // sweep config file for the sweep variant
};

enum class Variant { Raw, Watch, Backend, Sweep, Dup, Page };
constexpr const char* kVariantNames[] = {"raw", "watch", "backend", "sweep", "dup", "page"};
constexpr int kVariants = 6;

// A page-aligned f32 buffer (OSU's allocation); freed with the object.
struct PageBuffer {
  float* p = nullptr;
  explicit PageBuffer(std::size_t elems) {
    void* v = nullptr;
    const long page = sysconf(_SC_PAGESIZE);
    const std::size_t align = std::size_t(page > 0 ? page : 4096);
    if (posix_memalign(&v, align, std::max<std::size_t>(elems, 1) * 4) != 0)
      throw shardcal::Error("mpi_overhead: posix_memalign failed");
    p = static_cast<float*>(v);
  }
  ~PageBuffer() { std::free(p); }
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
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
    else if (arg == "--sweep-config") {
      if (i + 1 >= argc) return arg + " needs a value";
      a.sweep_config = argv[++i];
    } else if (arg == "--variants") {
      if (i + 1 >= argc) return arg + " needs a value";
      std::string list = argv[++i];
      a.variants.clear();
      for (std::size_t b = 0; b <= list.size();) {
        const std::size_t e = std::min(list.find(',', b), list.size());
        const std::string name = list.substr(b, e - b);
        int k = 0;
        while (k < kVariants && name != kVariantNames[k]) ++k;
        if (k == kVariants) return "--variants: '" + name + "' is not raw, watch, backend, sweep, dup or page";
        a.variants.push_back(k);
        b = e + 1;
      }
    } else {
      int s = 0;
      if (!parse_int(argv[i], 4, s) || s % 4 != 0)
        return "size '" + arg + "' must be a multiple of 4 bytes, at least 4 (f32 elements)";
      a.sizes.push_back(s);
    }
    if (!err.empty()) return err;
  }
  if (a.sizes.empty()) return "no sizes given";
  if (a.variants.empty()) a.variants = {0, 1, 2};  // what mpi_overhead.sh tabulates
  const bool sweep = std::count(a.variants.begin(), a.variants.end(), 3) > 0;
  if (sweep && a.sweep_config.empty())
    return "the sweep variant needs --sweep-config FILE (parity.sh passes its parity.json)";
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (const std::string err = parse(argc, argv, a); !err.empty()) {
    std::fprintf(stderr,
                 "mpi_overhead: %s\nusage: mpi_overhead [--iterations N] [--skip K] [--rounds R] "
                 "[--variants raw,watch,backend,sweep,dup,page] [--sweep-config FILE] SIZE...\n",
                 err.c_str());
    return 2;
  }
  namespace detail = shardcal::mpi::detail;
  try {
    shardcal::mpi::run(0, shardcal::mpi::Options{}, [&](shardcal::Communicator& world) {
      const int rank = world.rank(), n = world.size();
      const shardcal::mpi::ThreadLevel level = shardcal::mpi::thread_level();
      static const detail::InternedText group = detail::intern("mpi_overhead world");
      shardcal::MeshCommunicator mc(shardcal::DeviceMesh::parse(std::to_string(n)), world);
      MPI_Comm dup = MPI_COMM_NULL;  // for the dup variant; freed before the body returns
      MPI_Comm_dup(MPI_COMM_WORLD, &dup);
      struct FreeComm {
        MPI_Comm& c;
        ~FreeComm() { MPI_Comm_free(&c); }
      } free_dup{dup};
      const bool with_sweep =
          std::count(a.variants.begin(), a.variants.end(), int(Variant::Sweep)) > 0;
      shardbench::sweep::SweepConfig cfg;
      std::vector<shardbench::sweep::Point> points;
      if (with_sweep) {
        if (n < 2) throw shardcal::Error("the sweep variant needs at least 2 ranks (a mesh dim of size >= 2)");
        cfg = shardbench::sweep::load_config(a.sweep_config);
        // Same protocol on both sides, or the comparison means nothing.
        if (cfg.warmup != a.skip || cfg.iterations_min != a.iterations ||
            cfg.iterations_max != a.iterations)
          throw shardcal::Error(a.sweep_config + ": warmup and iterations {min, max} must equal "
                                "--skip and --iterations (" + std::to_string(a.skip) + ", " +
                                std::to_string(a.iterations) + ")");
        points = shardbench::sweep::expand_points(cfg, n);
      }
      for (const char* op : {"all_gather", "all_reduce"}) {
        const bool gather = op[4] == 'g';
        for (long s : a.sizes) {
          const long elems = s / 4;
          const long count = gather ? std::max(1L, elems / n) : elems;
          const long recv_count = gather ? count * n : count;
          shardcal::Buffer send_buf(shardcal::host_memory(), std::size_t(count) * 4),
              recv_buf(shardcal::host_memory(), std::size_t(recv_count) * 4);
          auto* send = static_cast<float*>(send_buf.data());
          auto* recv = static_cast<float*>(recv_buf.data());
          std::fill(send, send + count, 1.0f);
          std::fill(recv, recv + recv_count, 0.0f);
          PageBuffer psend{std::size_t(count)}, precv{std::size_t(recv_count)};
          std::fill(psend.p, psend.p + count, 1.0f);
          std::fill(precv.p, precv.p + recv_count, 0.0f);
          auto raw_on = [&](MPI_Comm c, const float* in, float* out) {
            if (gather)
              MPI_Allgather(in, int(count), MPI_FLOAT, out, int(count), MPI_FLOAT, c);
            else
              MPI_Allreduce(in, out, int(count), MPI_FLOAT, MPI_SUM, c);
          };
          auto raw = [&] { raw_on(MPI_COMM_WORLD, send, recv); };
          // The config's point for this op and size.
          const shardbench::sweep::Point* point = nullptr;
          for (const auto& p : points)
            if (!p.transition && p.size == s && shardcal::collective_info(p.op).name == op) point = &p;
          if (with_sweep && point == nullptr)
            throw shardcal::Error(a.sweep_config + " has no " + op + " point of " + std::to_string(s) +
                                  " bytes on mesh " + std::to_string(n));
          auto call = [&](Variant v) {
            switch (v) {
              case Variant::Sweep:
                break;  // measured by the harness itself below
              case Variant::Raw:
                raw();
                break;
              case Variant::Dup:
                raw_on(dup, send, recv);
                break;
              case Variant::Page:
                raw_on(MPI_COMM_WORLD, psend.p, precv.p);
                break;
              case Variant::Watch: {
                detail::WatchScope w(op, group, 300);
                raw();
                break;
              }
              case Variant::Backend:
                if (gather)
                  world.all_gather(send, recv, std::size_t(count),
                                   shardcal::DType::F32);
                else
                  world.all_reduce(send, recv, std::size_t(count),
                                   shardcal::DType::F32, shardcal::ReduceOp::Sum);
                break;
            }
          };
          // Per round: the median and the mean over iterations of the slowest rank's time. The
          // mean is reported too because MPI_Wtime ticks in 10 ns steps on the development VM:
          // a median of ~250 ns calls moves in 4 % jumps, a mean averages the ticks out.
          std::vector<std::vector<double>> per_round(kVariants), per_round_mean(kVariants),
              per_round_rank_max(kVariants);
          std::vector<double> mine(std::size_t(a.iterations)), slowest(std::size_t(a.iterations));
          const int nv = int(a.variants.size());
          // Round -1 is untimed: every variant once, so the first point of each op is not measured
          // on the state the previous op left behind (seen as a 0.6x / 1.15x first row).
          for (int r = -1; r < a.rounds; ++r) {
            const bool record = r >= 0;
            for (int k = 0; k < nv; ++k) {
              // rotate who goes first
              const auto v = static_cast<Variant>(a.variants[std::size_t((k + std::max(r, 0)) % nv)]);
              MPI_Barrier(MPI_COMM_WORLD);
              if (v == Variant::Sweep) {
                const auto m = shardbench::sweep::measure_collective(mc, *point, cfg);
                if (m.wrong != 0) throw shardcal::Error(std::string("sweep variant: wrong results in ") + op);
                if (m.samples.size() != std::size_t(a.iterations))
                  throw shardcal::Error("sweep variant: " + std::to_string(m.samples.size()) +
                                        " samples, expected " + std::to_string(a.iterations));
                if (rank == 0 && record) {
                  per_round[std::size_t(v)].push_back(median(m.samples));
                  per_round_mean[std::size_t(v)].push_back(mean(m.samples));
                  per_round_rank_max[std::size_t(v)].push_back(m.rank_mean_max_s);
                }
                continue;
              }
              for (int i = 0; i < a.iterations + a.skip; ++i) {
                const double t0 = MPI_Wtime();
                call(v);
                const double t1 = MPI_Wtime();
                if (i >= a.skip) mine[std::size_t(i - a.skip)] = t1 - t0;
                MPI_Barrier(MPI_COMM_WORLD);
              }
              MPI_Reduce(mine.data(), slowest.data(), a.iterations, MPI_DOUBLE, MPI_MAX, 0,
                         MPI_COMM_WORLD);
              const double my_mean = mean(mine);
              double rank_max = 0;
              MPI_Reduce(&my_mean, &rank_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
              if (rank == 0 && record) {
                per_round[std::size_t(v)].push_back(median(slowest));
                per_round_mean[std::size_t(v)].push_back(mean(slowest));
                per_round_rank_max[std::size_t(v)].push_back(rank_max);
              }
            }
          }
          if (rank != 0) continue;
          for (int v : a.variants)
            std::printf(
                "{\"op\":\"%s\",\"size\":%ld,\"variant\":\"%s\",\"thread_level\":\"%s\","
                "\"thread_level_requested\":\"%s\",\"ranks\":%d,\"iterations\":%d,\"rounds\":%d,"
                "\"median_slowest_s\":%.9g,\"mean_slowest_s\":%.9g,\"rank_mean_max_s\":%.9g}\n",
                op, s, kVariantNames[v], level.provided.c_str(), level.requested.c_str(), n,
                a.iterations, a.rounds, median(per_round[std::size_t(v)]),
                median(per_round_mean[std::size_t(v)]), median(per_round_rank_max[std::size_t(v)]));
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

// Counts beyond what one MPI call takes: the MPI backend splits elementwise calls and sends
// per-rank blocks as one derived datatype. Checks every element.
//   mpi_large_count <count>   u8 elements per rank block (e.g. 2147483653 > INT_MAX)
// Under SHARDCAL_MPI_MAX_COUNT=7 small counts take the same paths cheaply, so there it also runs
// the collectives whose buffers would be too big for this machine at real large counts.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "shardcal/error.hpp"
#include "shardcal/launch.hpp"

namespace {

using shardcal::Communicator;
using shardcal::DType;
using shardcal::ReduceOp;

// Element i of rank r's contribution; u8 arithmetic wraps like the MPI_SUM of MPI_UINT8_T.
std::uint8_t value(std::size_t i, int r) { return std::uint8_t(std::uint8_t(i) + 3 * r); }

void expect(bool ok, const std::string& what, std::size_t i) {
  if (!ok) throw shardcal::Error(what + ": wrong element at index " + std::to_string(i));
}

void run_checks(Communicator& c, std::size_t n, bool all_collectives) {
  const int p = c.size(), me = c.rank();
  const std::size_t np = n * std::size_t(p);
  double t0 = c.now();
  auto phase = [&](const char* name) {
    const double t1 = c.now();
    if (me == 0) std::printf("  %-10s %.1f s\n", name, t1 - t0);
    t0 = t1;
  };
  {
    // u8 semantics that MPI libraries get wrong (saturating sums, signed max/min): wrap-around
    // sums and unsigned comparisons on values above 127, 1000 elements (vectorized paths).
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
      std::vector<std::uint8_t> small(1000);
      for (std::size_t i = 0; i < small.size(); ++i) small[i] = value(i, me);
      c.all_reduce(small.data(), small.data(), small.size(), DType::U8, op);
      for (std::size_t i = 0; i < small.size(); ++i) {
        std::uint8_t want = value(i, 0);
        for (int r = 1; r < p; ++r)
          want = op == ReduceOp::Sum   ? std::uint8_t(want + value(i, r))
                 : op == ReduceOp::Max ? std::max(want, value(i, r))
                                       : std::min(want, value(i, r));
        if (small[i] != want)
          expect(false, "u8 all_reduce " + std::string(shardcal::reduce_op_name(op)), i);
      }
    }
  }
  {
    // At real sizes Max: cheaper than Sum's wrap-around check loop.
    const ReduceOp op = all_collectives ? ReduceOp::Sum : ReduceOp::Max;
    std::vector<std::uint8_t> buf(n);
    for (std::size_t i = 0; i < n; ++i) buf[i] = value(i, me);
    c.all_reduce(buf.data(), buf.data(), n, DType::U8, op);
    std::uint8_t want[256];
    for (std::size_t i = 0; i < 256; ++i) {
      want[i] = value(i, 0);
      for (int r = 1; r < p; ++r)
        want[i] = op == ReduceOp::Sum ? std::uint8_t(want[i] + value(i, r))
                                      : std::max(want[i], value(i, r));
    }
    for (std::size_t i = 0; i < n; ++i)
      if (buf[i] != want[i & 255]) expect(false, "all_reduce", i);
    phase("all_reduce");
    for (std::size_t i = 0; i < n; ++i) buf[i] = me == p - 1 ? value(i, 7) : 0;
    c.broadcast(buf.data(), n, DType::U8, p - 1);
    for (std::size_t i = 0; i < n; ++i)
      if (buf[i] != value(i, 7)) expect(false, "broadcast", i);
    phase("broadcast");
  }
  {
    std::vector<std::uint8_t> all(np);
    for (std::size_t i = 0; i < n; ++i) all[std::size_t(me) * n + i] = value(i, me);
    c.all_gather(all.data() + std::size_t(me) * n, all.data(), n, DType::U8);  // in place
    for (int r = 0; r < p; ++r)
      for (std::size_t i = 0; i < n; ++i)
        if (all[std::size_t(r) * n + i] != value(i, r))
          expect(false, "all_gather", std::size_t(r) * n + i);
    phase("all_gather");
  }
  if (!all_collectives) return;
  std::vector<std::uint8_t> send(np), recv(np);
  for (std::size_t i = 0; i < np; ++i) send[i] = value(i, me);
  c.reduce_scatter(send.data(), recv.data(), n, DType::U8, ReduceOp::Max);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t want = 0;
    for (int r = 0; r < p; ++r) want = std::max(want, value(std::size_t(me) * n + i, r));
    if (recv[i] != want) expect(false, "reduce_scatter", i);
  }
  c.all_to_all(send.data(), recv.data(), n, DType::U8);
  for (int r = 0; r < p; ++r)
    for (std::size_t i = 0; i < n; ++i)
      if (recv[std::size_t(r) * n + i] != value(std::size_t(me) * n + i, r))
        expect(false, "all_to_all", i);
  c.scatter(send.data(), recv.data(), n, DType::U8, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (recv[i] != value(std::size_t(me) * n + i, 0)) expect(false, "scatter", i);
  c.gather(send.data(), recv.data(), n, DType::U8, 0);
  if (me == 0)
    for (int r = 0; r < p; ++r)
      for (std::size_t i = 0; i < n; ++i)
        if (recv[std::size_t(r) * n + i] != value(i, r)) expect(false, "gather", i);
  if (p > 1) {
    const int next = (me + 1) % p, prev = (me + p - 1) % p;
    if (me % 2 == 0) {
      c.send(send.data(), n, DType::U8, next, 5);
      c.recv(recv.data(), n, DType::U8, prev, 5);
    } else {
      c.recv(recv.data(), n, DType::U8, prev, 5);
      c.send(send.data(), n, DType::U8, next, 5);
    }
    for (std::size_t i = 0; i < n; ++i)
      if (recv[i] != value(i, prev)) expect(false, "send/recv", i);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mpi_large_count <elements per rank>\n");
    return 2;
  }
  const std::size_t n = std::strtoull(argv[1], nullptr, 10);
  const char* knob = std::getenv("SHARDCAL_MPI_MAX_COUNT");
  const bool all_collectives = knob != nullptr && *knob != '\0';
  shardcal::LaunchOptions opts;
  opts.backend = "mpi";
  opts.timeout_s = 600;
  int rank = -1;
  try {
    shardcal::launch(opts, [&](Communicator& c) {
      rank = c.rank();
      run_checks(c, n, all_collectives);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_large_count rank %d: %s\n", rank, e.what());
    return 1;
  }
  if (rank == 0) std::printf("mpi_large_count: %zu elements per rank OK\n", n);
  return 0;
}

// Per-collective conformance: every Communicator operation against values computed locally.
// Runs unchanged on sim (several world sizes), mpi and nccl (the launcher's world size): buffers
// come from comm.memory() and are only touched through copy_to_host / copy_from_host.
//
// Data for reductions are small integers (|x| <= 2), so every partial sum of up to 64 ranks is
// exact in every dtype (u8 and bf16 included) and results compare exactly, in any order.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "shardcal/communicator.hpp"
#include "shardcal/dtype.hpp"
#include "shardcal/memory.hpp"
#include "spmd.hpp"

namespace {

using shardcal::Buffer;
using shardcal::Communicator;
using shardcal::DType;
using shardcal::ReduceOp;
using shardcal::testing::backend_name;
using shardcal::testing::fixed_world_size;
using shardcal::testing::run_spmd;

using Host = std::vector<std::byte>;
using Sizes = std::vector<std::size_t>;

// World sizes to test: the launcher's on mpi/nccl; on sim a spread including 1, odd and 64.
std::vector<int> world_sizes() {
  if (const int f = fixed_world_size(); f != 0) return {f};
  return {1, 2, 3, 4, 8, 64};
}

void for_each_world(const std::function<void(Communicator&)>& body) {
  for (int w : world_sizes()) run_spmd(w, body);
}

// Roots worth testing: first, last, middle (deduplicated).
std::vector<int> roots(int n) {
  std::vector<int> r{0, n - 1, n / 2};
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

bool is_signed(DType t) { return t != DType::U8; }

// Small exact values for reductions: {-1..2} (u8: {0..3}).
double small(DType t, int rank, std::size_t i, int salt) {
  const int v = int((std::size_t(rank) * 7 + i * 3 + std::size_t(salt)) % 4);
  return is_signed(t) ? v - 1 : v;
}

// Distinct-ish exact values for data movement: identifies (source, index) up to 200.
double tag_value(int src, std::size_t i, int salt) {
  return double((std::size_t(src) * 31 + i * 7 + std::size_t(salt) * 13) % 200);
}

constexpr double kSentinel = 99;  // exact in every dtype; marks bytes nobody should write

Host make_host(DType t, std::size_t n, const std::function<double(std::size_t)>& f) {
  const std::size_t es = shardcal::dtype_size(t);
  Host h(n * es);
  for (std::size_t i = 0; i < n; ++i) shardcal::store_from_double(t, h.data() + i * es, f(i));
  return h;
}

// A buffer in the communicator's memory space, filled from / read back to the host.
struct DevBuf {
  DevBuf(Communicator& comm, DType t, std::size_t n)
      : space(&comm.memory()), buf(comm.memory(), n * shardcal::dtype_size(t)), dtype(t), count(n) {}
  DevBuf(Communicator& comm, DType t, const Host& h)
      : DevBuf(comm, t, h.size() / shardcal::dtype_size(t)) {
    upload(h);
  }
  void upload(const Host& h) {
    if (!h.empty()) space->copy_from_host(buf.data(), h.data(), h.size());
    space->synchronize();
  }
  Host download() {
    space->synchronize();
    Host h(buf.size());
    if (!h.empty()) space->copy_to_host(h.data(), buf.data(), h.size());
    return h;
  }
  void* data() { return buf.data(); }

  shardcal::MemorySpace* space;
  Buffer buf;
  DType dtype;
  std::size_t count;
};

// Compares element-wise (after rounding the expectation to the dtype), nccl-tests #wrong style.
::testing::AssertionResult matches(DType t, const Host& got, const std::vector<double>& expect,
                                   double rel_tol = 0) {
  const std::size_t es = shardcal::dtype_size(t);
  if (got.size() != expect.size() * es)
    return ::testing::AssertionFailure() << "size " << got.size() / es << " != " << expect.size();
  std::size_t wrong = 0, first = 0;
  double first_got = 0, first_exp = 0;
  for (std::size_t i = 0; i < expect.size(); ++i) {
    std::byte rounded[8];
    shardcal::store_from_double(t, rounded, expect[i]);
    const double e = shardcal::load_as_double(t, rounded);
    const double g = shardcal::load_as_double(t, got.data() + i * es);
    const bool ok = rel_tol == 0 ? g == e : std::fabs(g - e) <= rel_tol * std::max(1.0, std::fabs(e));
    if (!ok && wrong++ == 0) {
      first = i;
      first_got = g;
      first_exp = e;
    }
  }
  if (wrong == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << wrong << " wrong of " << expect.size() << " " << shardcal::dtype_name(t)
                                       << "; first at " << first << ": got " << first_got
                                       << ", expected " << first_exp;
}

std::string ctx(const Communicator& c, const std::string& what) {
  return what + " [rank " + std::to_string(c.rank()) + "/" + std::to_string(c.size()) + " on " +
         c.describe() + "]";
}

// Rank-order fold of small() values, as the contract defines it (integers: avg truncates).
double reduce_expect(DType t, ReduceOp op, int n, std::size_t i, int salt) {
  double acc = 0;
  for (int r = 0; r < n; ++r) {
    const double v = small(t, r, i, salt);
    if (r == 0) {
      acc = v;
    } else if (op == ReduceOp::Max) {
      acc = std::max(acc, v);
    } else if (op == ReduceOp::Min) {
      acc = std::min(acc, v);
    } else {
      acc += v;
    }
  }
  if (op != ReduceOp::Avg) return acc;
  const bool integer = t == DType::I32 || t == DType::I64 || t == DType::U8;
  return integer ? std::trunc(acc / n) : acc / n;
}

// Float averages are exact on sim (sum, then one division). NCCL pre-multiplies by 1/n, which
// rounds unless n is a power of two; allow a couple of ulps there.
double avg_tolerance(DType t, ReduceOp op, int n) {
  if (op != ReduceOp::Avg || backend_name() == "sim" || (n & (n - 1)) == 0) return 0;
  switch (t) {
    case DType::F32: return 0x1p-22;
    case DType::F64: return 0x1p-51;
    case DType::F16: return 0x1p-9;
    case DType::BF16: return 0x1p-6;
    default: return 0;
  }
}

const Sizes kCounts{0, 1, 5, 33};

// Uneven per-rank counts with zeros (which rank gets zero moves with salt).
std::size_t uneven(int r, int salt) { return std::size_t((r * 5 + 3 + salt) % 4); }

TEST(Collectives, Barrier) {
  for_each_world([](Communicator& comm) {
    // Shared between rank threads on sim only; each process has its own copy on mpi/nccl.
    static std::atomic<int> arrivals{0};
    if (comm.rank() == 0) arrivals = 0;
    comm.barrier();
    const int n = comm.size();
    for (int iter = 0; iter < 10; ++iter) {
      arrivals.fetch_add(1);
      comm.barrier();
      if (fixed_world_size() == 0) {
        // After barrier k every rank has arrived k+1 times and none has arrived k+3 times.
        const int seen = arrivals.load();
        EXPECT_GE(seen, (iter + 1) * n) << ctx(comm, "barrier " + std::to_string(iter));
        EXPECT_LE(seen, (iter + 2) * n) << ctx(comm, "barrier " + std::to_string(iter));
      }
      const auto iters = comm.all_gather_u64(std::uint64_t(iter));
      for (auto v : iters) EXPECT_EQ(v, std::uint64_t(iter)) << ctx(comm, "barrier iteration");
    }
    comm.barrier();  // nobody resets `arrivals` for the next world while others still read it
  });
}

TEST(Collectives, BroadcastEveryDTypeCountAndRoot) {
  for_each_world([](Communicator& comm) {
    for (DType t : shardcal::kAllDTypes)
      for (std::size_t count : kCounts)
        for (int root : roots(comm.size())) {
          const bool is_root = comm.rank() == root;
          DevBuf buf(comm, t, make_host(t, count, [&](std::size_t i) {
                       return is_root ? tag_value(root, i, 1) : kSentinel;
                     }));
          comm.broadcast(buf.data(), count, t, root);
          std::vector<double> expect(count);
          for (std::size_t i = 0; i < count; ++i) expect[i] = tag_value(root, i, 1);
          EXPECT_TRUE(matches(t, buf.download(), expect))
              << ctx(comm, "broadcast count " + std::to_string(count) + " root " + std::to_string(root));
        }
  });
}

void all_reduce_case(Communicator& comm, bool in_place) {
  const int n = comm.size();
  int salt = 0;
  for (DType t : shardcal::kAllDTypes)
    for (ReduceOp op : shardcal::kAllReduceOps)
      for (std::size_t count : kCounts) {
        ++salt;
        const Host in = make_host(t, count, [&](std::size_t i) { return small(t, comm.rank(), i, salt); });
        DevBuf send(comm, t, in);
        DevBuf recv(comm, t, make_host(t, count, [](std::size_t) { return kSentinel; }));
        DevBuf& out = in_place ? send : recv;
        comm.all_reduce(send.data(), out.data(), count, t, op);
        std::vector<double> expect(count);
        for (std::size_t i = 0; i < count; ++i) expect[i] = reduce_expect(t, op, n, i, salt);
        const std::string what = std::string(in_place ? "in-place " : "") + "all_reduce " +
                                 std::string(shardcal::reduce_op_name(op)) + " count " +
                                 std::to_string(count);
        if (!in_place) {
          EXPECT_TRUE(send.download() == in) << ctx(comm, what + ": input modified");
          // A returned collective is done with this rank's input: scribbling on it now must not
          // change what slower peers compute.
          send.upload(make_host(t, count, [](std::size_t) { return kSentinel; }));
        }
        EXPECT_TRUE(matches(t, out.download(), expect, avg_tolerance(t, op, n))) << ctx(comm, what);
      }
}

TEST(Collectives, AllReduceEveryOpAndDType) {
  for_each_world([](Communicator& comm) { all_reduce_case(comm, false); });
}

TEST(Collectives, AllReduceInPlace) {
  for_each_world([](Communicator& comm) { all_reduce_case(comm, true); });
}

TEST(Collectives, ReduceScatterEveryOpAndDType) {
  for_each_world([](Communicator& comm) {
    const int n = comm.size();
    int salt = 0;
    for (DType t : shardcal::kAllDTypes)
      for (ReduceOp op : shardcal::kAllReduceOps)
        for (std::size_t count : kCounts) {
          ++salt;
          DevBuf send(comm, t, make_host(t, count * std::size_t(n), [&](std::size_t i) {
                        return small(t, comm.rank(), i, salt);
                      }));
          DevBuf recv(comm, t, make_host(t, count, [](std::size_t) { return kSentinel; }));
          comm.reduce_scatter(send.data(), recv.data(), count, t, op);
          std::vector<double> expect(count);
          for (std::size_t i = 0; i < count; ++i)
            expect[i] = reduce_expect(t, op, n, std::size_t(comm.rank()) * count + i, salt);
          EXPECT_TRUE(matches(t, recv.download(), expect, avg_tolerance(t, op, n)))
              << ctx(comm, "reduce_scatter " + std::string(shardcal::reduce_op_name(op)) +
                               " count " + std::to_string(count));
        }
  });
}

TEST(Collectives, ReduceScattervUnevenWithZeros) {
  for_each_world([](Communicator& comm) {
    const int n = comm.size();
    for (int salt = 0; salt < 2; ++salt) {
      Sizes counts(std::size_t(n), 0);
      for (int r = 0; r < n; ++r) counts[std::size_t(r)] = uneven(r, salt);
      const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
      const std::size_t offset =
          std::accumulate(counts.begin(), counts.begin() + comm.rank(), std::size_t{0});
      const std::size_t mine = counts[std::size_t(comm.rank())];
      for (DType t : shardcal::kAllDTypes)
        for (ReduceOp op : shardcal::kAllReduceOps) {
          DevBuf send(comm, t, make_host(t, total, [&](std::size_t i) {
                        return small(t, comm.rank(), i, salt);
                      }));
          DevBuf recv(comm, t, make_host(t, mine, [](std::size_t) { return kSentinel; }));
          comm.reduce_scatterv(send.data(), recv.data(), counts, t, op);
          std::vector<double> expect(mine);
          for (std::size_t i = 0; i < mine; ++i) expect[i] = reduce_expect(t, op, n, offset + i, salt);
          EXPECT_TRUE(matches(t, recv.download(), expect, avg_tolerance(t, op, n)))
              << ctx(comm, "reduce_scatterv " + std::string(shardcal::reduce_op_name(op)));
        }
    }
  });
}

TEST(Collectives, AllGatherEveryDType) {
  for_each_world([](Communicator& comm) {
    const auto n = std::size_t(comm.size());
    for (DType t : shardcal::kAllDTypes)
      for (std::size_t count : kCounts) {
        DevBuf send(comm, t, make_host(t, count, [&](std::size_t i) { return tag_value(comm.rank(), i, 2); }));
        DevBuf recv(comm, t, make_host(t, count * n, [](std::size_t) { return kSentinel; }));
        comm.all_gather(send.data(), recv.data(), count, t);
        std::vector<double> expect(count * n);
        for (std::size_t r = 0; r < n; ++r)
          for (std::size_t i = 0; i < count; ++i) expect[r * count + i] = tag_value(int(r), i, 2);
        EXPECT_TRUE(matches(t, recv.download(), expect))
            << ctx(comm, "all_gather count " + std::to_string(count));
      }
  });
}

// Displacements with a one-element gap after every block, blocks in reverse rank order, so a
// backend that ignores displs or writes past a block is caught (the gaps must stay sentinel).
Sizes gapped_displs(const Sizes& counts, bool reversed) {
  const std::size_t n = counts.size();
  Sizes displs(n, 0);
  std::size_t at = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t r = reversed ? n - 1 - k : k;
    displs[r] = at;
    at += counts[r] + 1;
  }
  return displs;
}
std::size_t span_of(const Sizes& counts, const Sizes& displs) {
  std::size_t e = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) e = std::max(e, displs[r] + counts[r] + 1);
  return e;
}

TEST(Collectives, AllGathervUnevenWithZerosAndGaps) {
  for_each_world([](Communicator& comm) {
    const int n = comm.size();
    for (int salt = 0; salt < 2; ++salt)
      for (DType t : shardcal::kAllDTypes) {
        Sizes counts(static_cast<std::size_t>(n));
        for (int r = 0; r < n; ++r) counts[std::size_t(r)] = uneven(r, salt);
        const Sizes displs = gapped_displs(counts, salt == 1);
        const std::size_t len = span_of(counts, displs);
        const std::size_t mine = counts[std::size_t(comm.rank())];
        DevBuf send(comm, t, make_host(t, mine, [&](std::size_t i) { return tag_value(comm.rank(), i, 3); }));
        DevBuf recv(comm, t, make_host(t, len, [](std::size_t) { return kSentinel; }));
        comm.all_gatherv(send.data(), mine, recv.data(), counts, displs, t);
        std::vector<double> expect(len, kSentinel);
        for (int r = 0; r < n; ++r)
          for (std::size_t i = 0; i < counts[std::size_t(r)]; ++i)
            expect[displs[std::size_t(r)] + i] = tag_value(r, i, 3);
        EXPECT_TRUE(matches(t, recv.download(), expect)) << ctx(comm, "all_gatherv");
      }
  });
}

TEST(Collectives, AllToAllEveryDType) {
  for_each_world([](Communicator& comm) {
    const auto n = std::size_t(comm.size());
    const int me = comm.rank();
    // Element i of the block for destination d encodes (me, d, i).
    auto value = [](int src, std::size_t dst, std::size_t i) { return tag_value(src, dst * 37 + i, 4); };
    for (DType t : shardcal::kAllDTypes)
      for (std::size_t count : kCounts) {
        DevBuf send(comm, t, make_host(t, count * n, [&](std::size_t k) {
                      return value(me, k / std::max<std::size_t>(count, 1), k % std::max<std::size_t>(count, 1));
                    }));
        DevBuf recv(comm, t, make_host(t, count * n, [](std::size_t) { return kSentinel; }));
        comm.all_to_all(send.data(), recv.data(), count, t);
        std::vector<double> expect(count * n);
        for (std::size_t s = 0; s < n; ++s)
          for (std::size_t i = 0; i < count; ++i) expect[s * count + i] = value(int(s), std::size_t(me), i);
        EXPECT_TRUE(matches(t, recv.download(), expect))
            << ctx(comm, "all_to_all count " + std::to_string(count));
      }
  });
}

TEST(Collectives, AllToAllvWithZeroLengthPairs) {
  for_each_world([](Communicator& comm) {
    const int n = comm.size();
    const int me = comm.rank();
    auto pair_count = [](int src, int dst, int salt) { return std::size_t((src + 2 * dst + salt) % 3); };
    auto value = [](int src, int dst, std::size_t i) { return tag_value(src, std::size_t(dst) * 11 + i, 5); };
    for (int salt = 0; salt < 3; ++salt)
      for (DType t : shardcal::kAllDTypes) {
        Sizes sc(static_cast<std::size_t>(n)), rc(static_cast<std::size_t>(n));
        for (int r = 0; r < n; ++r) {
          sc[std::size_t(r)] = pair_count(me, r, salt);
          rc[std::size_t(r)] = pair_count(r, me, salt);
        }
        const Sizes sd = gapped_displs(sc, false);
        const Sizes rd = gapped_displs(rc, true);
        const std::size_t slen = span_of(sc, sd), rlen = span_of(rc, rd);
        Host sh = make_host(t, slen, [](std::size_t) { return kSentinel; });
        const std::size_t es = shardcal::dtype_size(t);
        for (int r = 0; r < n; ++r)
          for (std::size_t i = 0; i < sc[std::size_t(r)]; ++i)
            shardcal::store_from_double(t, sh.data() + (sd[std::size_t(r)] + i) * es, value(me, r, i));
        DevBuf send(comm, t, sh);
        DevBuf recv(comm, t, make_host(t, rlen, [](std::size_t) { return kSentinel; }));
        comm.all_to_allv(send.data(), sc, sd, recv.data(), rc, rd, t);
        std::vector<double> expect(rlen, kSentinel);
        for (int r = 0; r < n; ++r)
          for (std::size_t i = 0; i < rc[std::size_t(r)]; ++i) expect[rd[std::size_t(r)] + i] = value(r, me, i);
        EXPECT_TRUE(matches(t, recv.download(), expect)) << ctx(comm, "all_to_allv salt " + std::to_string(salt));
      }
  });
}

TEST(Collectives, ScatterFromEveryRootKind) {
  for_each_world([](Communicator& comm) {
    const auto n = std::size_t(comm.size());
    for (DType t : shardcal::kAllDTypes)
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}})
        for (int root : roots(comm.size())) {
          const bool is_root = comm.rank() == root;
          // Only the root's send buffer is read; others pass an empty one.
          DevBuf send(comm, t, make_host(t, is_root ? count * n : 0, [&](std::size_t i) {
                        return tag_value(root, i, 6);
                      }));
          DevBuf recv(comm, t, make_host(t, count, [](std::size_t) { return kSentinel; }));
          comm.scatter(send.data(), recv.data(), count, t, root);
          std::vector<double> expect(count);
          for (std::size_t i = 0; i < count; ++i)
            expect[i] = tag_value(root, std::size_t(comm.rank()) * count + i, 6);
          EXPECT_TRUE(matches(t, recv.download(), expect))
              << ctx(comm, "scatter count " + std::to_string(count) + " root " + std::to_string(root));
        }
  });
}

TEST(Collectives, ScattervUnevenFromEveryRootKind) {
  for_each_world([](Communicator& comm) {
    const int n = comm.size();
    for (int salt = 0; salt < 2; ++salt)
      for (DType t : shardcal::kAllDTypes)
        for (int root : roots(n)) {
          Sizes counts(static_cast<std::size_t>(n));
          for (int r = 0; r < n; ++r) counts[std::size_t(r)] = uneven(r, salt);
          const Sizes displs = gapped_displs(counts, salt == 0);
          const bool is_root = comm.rank() == root;
          DevBuf send(comm, t, make_host(t, is_root ? span_of(counts, displs) : 0, [&](std::size_t i) {
                        return tag_value(root, i, 7);
                      }));
          const std::size_t mine = counts[std::size_t(comm.rank())];
          DevBuf recv(comm, t, make_host(t, mine, [](std::size_t) { return kSentinel; }));
          // Receivers pass empty counts/displs: they are read on the root only.
          const Sizes none;
          comm.scatterv(send.data(), is_root ? counts : none, is_root ? displs : none, recv.data(), mine,
                        t, root);
          std::vector<double> expect(mine);
          for (std::size_t i = 0; i < mine; ++i)
            expect[i] = tag_value(root, displs[std::size_t(comm.rank())] + i, 7);
          EXPECT_TRUE(matches(t, recv.download(), expect)) << ctx(comm, "scatterv root " + std::to_string(root));
        }
  });
}

TEST(Collectives, GatherToEveryRootKind) {
  for_each_world([](Communicator& comm) {
    const auto n = std::size_t(comm.size());
    for (DType t : shardcal::kAllDTypes)
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}})
        for (int root : roots(comm.size())) {
          const bool is_root = comm.rank() == root;
          DevBuf send(comm, t, make_host(t, count, [&](std::size_t i) { return tag_value(comm.rank(), i, 8); }));
          DevBuf recv(comm, t, make_host(t, is_root ? count * n : 0, [](std::size_t) { return kSentinel; }));
          comm.gather(send.data(), recv.data(), count, t, root);
          if (!is_root) continue;
          std::vector<double> expect(count * n);
          for (std::size_t r = 0; r < n; ++r)
            for (std::size_t i = 0; i < count; ++i) expect[r * count + i] = tag_value(int(r), i, 8);
          EXPECT_TRUE(matches(t, recv.download(), expect))
              << ctx(comm, "gather count " + std::to_string(count) + " root " + std::to_string(root));
        }
  });
}

TEST(Collectives, GathervUnevenToEveryRootKind) {
  for_each_world([](Communicator& comm) {
    const int n = comm.size();
    for (int salt = 0; salt < 2; ++salt)
      for (DType t : shardcal::kAllDTypes)
        for (int root : roots(n)) {
          Sizes counts(static_cast<std::size_t>(n));
          for (int r = 0; r < n; ++r) counts[std::size_t(r)] = uneven(r, salt);
          const Sizes displs = gapped_displs(counts, salt == 1);
          const bool is_root = comm.rank() == root;
          const std::size_t mine = counts[std::size_t(comm.rank())];
          const std::size_t len = is_root ? span_of(counts, displs) : 0;
          DevBuf send(comm, t, make_host(t, mine, [&](std::size_t i) { return tag_value(comm.rank(), i, 9); }));
          DevBuf recv(comm, t, make_host(t, len, [](std::size_t) { return kSentinel; }));
          const Sizes none;
          comm.gatherv(send.data(), mine, recv.data(), is_root ? counts : none, is_root ? displs : none, t,
                       root);
          if (!is_root) continue;
          std::vector<double> expect(len, kSentinel);
          for (int r = 0; r < n; ++r)
            for (std::size_t i = 0; i < counts[std::size_t(r)]; ++i)
              expect[displs[std::size_t(r)] + i] = tag_value(r, i, 9);
          EXPECT_TRUE(matches(t, recv.download(), expect)) << ctx(comm, "gatherv root " + std::to_string(root));
        }
  });
}

// Ring exchange in both directions. Even ranks send first, odd ranks receive first, which is
// deadlock-free with synchronous sends (nccl, sim) for every n >= 2.
void ring(Communicator& comm, DType t, int step, int tag) {
  const int n = comm.size(), me = comm.rank();
  const int to = (me + step + n) % n, from = (me - step + n) % n;
  auto count_of = [](int src) { return std::size_t(1 + src % 3); };
  DevBuf out(comm, t, make_host(t, count_of(me), [&](std::size_t i) { return tag_value(me, i, tag); }));
  DevBuf in(comm, t, make_host(t, count_of(from), [](std::size_t) { return kSentinel; }));
  if (me % 2 == 0) {
    comm.send(out.data(), count_of(me), t, to, tag);
    comm.recv(in.data(), count_of(from), t, from, tag);
  } else {
    comm.recv(in.data(), count_of(from), t, from, tag);
    comm.send(out.data(), count_of(me), t, to, tag);
  }
  std::vector<double> expect(count_of(from));
  for (std::size_t i = 0; i < expect.size(); ++i) expect[i] = tag_value(from, i, tag);
  EXPECT_TRUE(matches(t, in.download(), expect))
      << ctx(comm, "ring step " + std::to_string(step) + " tag " + std::to_string(tag));
}

TEST(PointToPoint, SendRecvRingBothDirections) {
  for_each_world([](Communicator& comm) {
    if (comm.size() < 2) return;  // a rank cannot send to itself
    int tag = 0;
    for (DType t : shardcal::kAllDTypes) {
      ring(comm, t, +1, ++tag);
      ring(comm, t, -1, ++tag);
    }
  });
}

TEST(PointToPoint, SameTagMessagesArriveInOrder) {
  for_each_world([](Communicator& comm) {
    if (comm.size() < 2) return;
    const int last = comm.size() - 1;
    const DType t = DType::I32;
    if (comm.rank() == 0) {
      for (int k = 0; k < 4; ++k) {
        DevBuf b(comm, t, make_host(t, 3, [&](std::size_t i) { return double(k * 10 + int(i)); }));
        comm.send(b.data(), 3, t, last, 42);
      }
    } else if (comm.rank() == last) {
      for (int k = 0; k < 4; ++k) {
        DevBuf b(comm, t, make_host(t, 3, [](std::size_t) { return kSentinel; }));
        comm.recv(b.data(), 3, t, 0, 42);
        EXPECT_TRUE(matches(t, b.download(), {double(k * 10), double(k * 10 + 1), double(k * 10 + 2)}))
            << ctx(comm, "message " + std::to_string(k));
      }
    }
    comm.barrier();
  });
}

TEST(Split, ParityGroupsWithReversedKeys) {
  for_each_world([](Communicator& comm) {
    const int n = comm.size(), me = comm.rank();
    const int color = me % 2;
    auto sub = comm.split(color, -me);  // reversed order within each color
    ASSERT_NE(sub, nullptr);
    std::vector<int> members;  // world ranks of my color, in new-rank order
    for (int r = n - 1; r >= 0; --r)
      if (r % 2 == color) members.push_back(r);
    ASSERT_EQ(sub->size(), int(members.size())) << ctx(comm, "split size");
    const int expect_rank = int(std::find(members.begin(), members.end(), me) - members.begin());
    EXPECT_EQ(sub->rank(), expect_rank) << ctx(comm, "split rank");
    EXPECT_EQ(sub->backend(), comm.backend());

    // The control plane sees the new order.
    const auto ids = sub->all_gather_u64(std::uint64_t(me));
    ASSERT_EQ(ids.size(), members.size());
    for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], std::uint64_t(members[i])) << ctx(*sub, "ids");

    // The two groups run different sequences at the same time; neither may see the other.
    const DType t = DType::I64;
    if (color == 0) {
      for (int k = 0; k < 5; ++k) {
        DevBuf v(comm, t, make_host(t, 4, [&](std::size_t i) { return double(me * 4 + int(i) + k); }));
        sub->all_reduce(v.data(), v.data(), 4, t, ReduceOp::Sum);
        std::vector<double> expect(4, 0);
        for (int r : members)
          for (std::size_t i = 0; i < 4; ++i) expect[i] += double(r * 4 + int(i) + k);
        EXPECT_TRUE(matches(t, v.download(), expect)) << ctx(*sub, "group all_reduce " + std::to_string(k));
      }
    } else {
      for (int k = 0; k < 3; ++k) {
        const int root = sub->size() - 1;
        DevBuf v(comm, t, make_host(t, 6, [&](std::size_t i) {
                   return sub->rank() == root ? double(me * 100 + int(i) + k) : kSentinel;
                 }));
        sub->broadcast(v.data(), 6, t, root);
        std::vector<double> expect(6);
        for (std::size_t i = 0; i < 6; ++i) expect[i] = double(members[std::size_t(root)] * 100 + int(i) + k);
        EXPECT_TRUE(matches(t, v.download(), expect)) << ctx(*sub, "group broadcast " + std::to_string(k));
      }
      if (sub->size() >= 2) ring(*sub, DType::F32, 1, 7);
    }

    // Nested split: halves of each group; then the world is still usable.
    auto half = sub->split(sub->rank() < (sub->size() + 1) / 2 ? 0 : 1, sub->rank());
    ASSERT_NE(half, nullptr);
    const auto hid = half->all_gather_u64(std::uint64_t(sub->rank()));
    for (std::size_t i = 1; i < hid.size(); ++i) EXPECT_EQ(hid[i], hid[i - 1] + 1) << ctx(*half, "nested order");
    EXPECT_EQ(hid[std::size_t(half->rank())], std::uint64_t(sub->rank())) << ctx(*half, "nested rank");
    comm.barrier();
    const auto all = comm.all_gather_u64(std::uint64_t(me) * 3);
    for (int r = 0; r < n; ++r) EXPECT_EQ(all[std::size_t(r)], std::uint64_t(r) * 3) << ctx(comm, "world after split");
  });
}

TEST(Split, SingletonAndWholeGroups) {
  for_each_world([](Communicator& comm) {
    const int n = comm.size(), me = comm.rank();
    auto alone = comm.split(me, 0);
    ASSERT_EQ(alone->size(), 1);
    EXPECT_EQ(alone->rank(), 0);
    const DType t = DType::F64;
    DevBuf v(comm, t, make_host(t, 3, [&](std::size_t i) { return double(me + int(i)); }));
    alone->all_reduce(v.data(), v.data(), 3, t, ReduceOp::Max);
    EXPECT_TRUE(matches(t, v.download(), {double(me), double(me + 1), double(me + 2)})) << ctx(*alone, "singleton");

    auto whole = comm.split(0, n - me);  // same members, reversed
    ASSERT_EQ(whole->size(), n);
    EXPECT_EQ(whole->rank(), n - 1 - me);
    std::string text = whole->rank() == 0 ? "from the last world rank" : "";
    whole->broadcast_string(text, 0);
    EXPECT_EQ(text, "from the last world rank") << ctx(*whole, "whole group broadcast_string");
  });
}

TEST(ControlPlane, AllGatherU64) {
  for_each_world([](Communicator& comm) {
    const std::uint64_t mine = 0x9E3779B97F4A7C15ull * std::uint64_t(comm.rank() + 1);
    const auto all = comm.all_gather_u64(mine);
    ASSERT_EQ(all.size(), std::size_t(comm.size()));
    for (int r = 0; r < comm.size(); ++r)
      EXPECT_EQ(all[std::size_t(r)], 0x9E3779B97F4A7C15ull * std::uint64_t(r + 1)) << ctx(comm, "u64");
  });
}

TEST(ControlPlane, BroadcastStringFromEveryRootKind) {
  for_each_world([](Communicator& comm) {
    for (int root : roots(comm.size())) {
      std::string payload = "spec from rank " + std::to_string(root) + std::string(1, '\0') + "tail";
      payload += std::string(10000, char('a' + root % 26));
      std::string text = comm.rank() == root ? payload : "stale content of another length";
      comm.broadcast_string(text, root);
      EXPECT_EQ(text, payload) << ctx(comm, "broadcast_string root " + std::to_string(root));
      std::string empty = comm.rank() == root ? "" : "not empty";
      comm.broadcast_string(empty, root);
      EXPECT_TRUE(empty.empty()) << ctx(comm, "empty broadcast_string");
    }
  });
}

}  // namespace

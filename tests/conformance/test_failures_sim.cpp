// Sim-only behaviour that a real launcher cannot reproduce in one process: failure propagation,
// argument validation across ranks, timeouts, determinism of reductions, many-rank stress.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <latch>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "shardcal/error.hpp"
#include "sim/sim_backend.hpp"
#include "spmd.hpp"

namespace {

using shardcal::Communicator;
using shardcal::DType;
using shardcal::Error;
using shardcal::PeerFailure;
using shardcal::ReduceOp;
using shardcal::testing::backend_name;

#define SKIP_UNLESS_SIM() \
  if (backend_name() != "sim") GTEST_SKIP() << "sim-only"

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\"\n  does not contain \"" << part << "\"";
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// What each rank saw: the message of the exception it caught, or "" if none.
struct Seen {
  explicit Seen(int n) : what(std::size_t(n)), peer(std::size_t(n), false), caught(std::size_t(n), false) {}
  void record(int r, const std::exception& e) {
    std::lock_guard<std::mutex> lk(mu);
    what[std::size_t(r)] = e.what();
    peer[std::size_t(r)] = dynamic_cast<const PeerFailure*>(&e) != nullptr;
    caught[std::size_t(r)] = true;
  }
  std::mutex mu;
  std::vector<std::string> what;
  std::vector<bool> peer, caught;
};

// Runs `call` on every rank, records what it threw, and rethrows it.
template <class F>
void observe(Seen& seen, Communicator& c, F&& call) {
  try {
    call();
  } catch (const std::exception& e) {
    seen.record(c.rank(), e);
    throw;
  }
}

std::string run_error(int world, double timeout_s, const std::function<void(Communicator&)>& body) {
  try {
    shardcal::sim::run(world, {timeout_s}, body);
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "sim::run did not throw";
  return {};
}

TEST(SimFailures, RankThrowsMidCollectiveCancelsPeersPromptly) {
  SKIP_UNLESS_SIM();
  constexpr int n = 8;
  Seen seen(n);
  const auto t0 = Clock::now();
  try {
    shardcal::sim::run(n, {60.0}, [&](Communicator& c) {
      std::vector<std::uint64_t> v(1, std::uint64_t(c.rank()));
      std::vector<std::uint64_t> all(n);
      const std::vector<std::size_t> counts(n, 1), displs{0, 1, 2, 3, 4, 5, 6, 7};
      c.all_gatherv(v.data(), 1, all.data(), counts, displs, DType::I64);  // one good round
      if (c.rank() == 3) throw Error("boom in user code");
      observe(seen, c, [&] { c.all_gatherv(v.data(), 1, all.data(), counts, displs, DType::I64); });
    });
    FAIL() << "sim::run did not throw";
  } catch (const PeerFailure& e) {
    FAIL() << "root cause reported as PeerFailure: " << e.what();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "rank 3 failed: boom in user code"));
  }
  // Well under the 60 s timeout: cancellation, not expiry, ended the waits.
  EXPECT_LT(seconds_since(t0), 10.0);
  for (int r = 0; r < n; ++r) {
    if (r == 3) continue;
    ASSERT_TRUE(seen.caught[std::size_t(r)]) << "rank " << r;
    EXPECT_TRUE(seen.peer[std::size_t(r)]) << seen.what[std::size_t(r)];
    EXPECT_TRUE(contains(seen.what[std::size_t(r)], "all_gatherv on sim world"));
    EXPECT_TRUE(contains(seen.what[std::size_t(r)], "rank 3 failed: boom in user code"));
  }
}

TEST(SimFailures, NonErrorExceptionTypeIsPreserved) {
  SKIP_UNLESS_SIM();
  EXPECT_THROW(shardcal::sim::run(4, {60.0},
                                  [](Communicator& c) {
                                    if (c.rank() == 2) throw std::logic_error("not a shardcal error");
                                    c.barrier();
                                  }),
               std::logic_error);
}

TEST(SimFailures, FailureCancelsWaitsInOtherSubCommunicatorsAndP2P) {
  SKIP_UNLESS_SIM();
  constexpr int n = 6;
  Seen seen(n);
  const std::string msg = run_error(n, 60.0, [&](Communicator& c) {
    auto sub = c.split(c.rank() % 2, c.rank());
    if (c.rank() == 0) throw Error("rank zero gives up");
    observe(seen, c, [&] {
      if (c.rank() == 1) {  // waits for a message rank 0 will never send
        int x = 0;
        c.recv(&x, 1, DType::I32, 0, 5);
      } else {
        sub->barrier();  // the odd group does not even contain rank 0
      }
    });
  });
  EXPECT_TRUE(contains(msg, "rank zero gives up"));
  for (int r = 1; r < n; ++r) {
    ASSERT_TRUE(seen.caught[std::size_t(r)]) << "rank " << r;
    EXPECT_TRUE(seen.peer[std::size_t(r)]) << seen.what[std::size_t(r)];
    EXPECT_TRUE(contains(seen.what[std::size_t(r)], "rank 0 failed"));
  }
  EXPECT_TRUE(contains(seen.what[1], "recv"));
}

TEST(SimFailures, MismatchedOpsThrowErrorOnEveryRankAndCommStaysUsable) {
  SKIP_UNLESS_SIM();
  constexpr int n = 4;
  Seen seen(n);
  shardcal::sim::run(n, {60.0}, [&](Communicator& c) {
    float x = float(c.rank() + 1), y = 0;
    try {
      if (c.rank() == 0)
        c.all_reduce(&x, &y, 1, DType::F32, ReduceOp::Sum);
      else
        c.broadcast(&x, 1, DType::F32, 0);
      ADD_FAILURE() << "mismatched collectives did not throw on rank " << c.rank();
    } catch (const Error& e) {
      seen.record(c.rank(), e);
    }
    // Validation happens before any data moves, so the communicator is still consistent.
    c.all_reduce(&x, &y, 1, DType::F32, ReduceOp::Sum);
    EXPECT_EQ(y, float(n * (n + 1) / 2));
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(seen.caught[std::size_t(r)]);
    EXPECT_FALSE(seen.peer[std::size_t(r)]) << "a mismatch is a usage Error, not a PeerFailure";
    EXPECT_TRUE(contains(seen.what[std::size_t(r)], "all_reduce"));
    EXPECT_TRUE(contains(seen.what[std::size_t(r)], "broadcast"));
  }
  EXPECT_EQ(seen.what[0], seen.what[3]) << "every rank reports the same problem";
}

// Each case: a collective call that is inconsistent across ranks, and a phrase the Error must
// contain. Every rank must throw Error (not hang, not corrupt).
struct BadCall {
  const char* name;
  std::function<void(Communicator&)> call;
  const char* phrase;
};

TEST(SimFailures, InconsistentArgumentsAreErrorsOnEveryRank) {
  SKIP_UNLESS_SIM();
  constexpr int n = 3;
  static std::array<double, 64> a{}, b{};  // large enough for every case; contents irrelevant
  const std::vector<BadCall> cases = {
      {"all_gather count differs",
       [](Communicator& c) { c.all_gather(a.data(), b.data(), c.rank() == 1 ? 2 : 1, DType::F64); },
       "count differs"},
      {"dtype differs",
       [](Communicator& c) {
         c.all_reduce(a.data(), b.data(), 1, c.rank() == 2 ? DType::I64 : DType::F64, ReduceOp::Sum);
       },
       "dtype differs"},
      {"reduce op differs",
       [](Communicator& c) {
         c.all_reduce(a.data(), b.data(), 1, DType::F64, c.rank() == 0 ? ReduceOp::Max : ReduceOp::Min);
       },
       "reduce op differs"},
      {"root out of range", [](Communicator& c) { c.broadcast(a.data(), 1, DType::F64, 3); }, "out of range"},
      {"root differs", [](Communicator& c) { c.broadcast(a.data(), 1, DType::F64, c.rank() == 0 ? 1 : 0); },
       "root differs"},
      {"all_to_allv send/recv counts disagree",
       [](Communicator& c) {
         const std::vector<std::size_t> sc{1, 1, 1}, d{0, 1, 2};
         const std::vector<std::size_t> rc = c.rank() == 2 ? std::vector<std::size_t>{1, 2, 1} : sc;
         c.all_to_allv(a.data(), sc, d, b.data(), rc, std::vector<std::size_t>{0, 4, 8}, DType::F64);
       },
       "rank 1 sends 1 elements to rank 2 but rank 2 expects 2"},
      {"all_gatherv counts disagree with send count",
       [](Communicator& c) {
         const std::vector<std::size_t> counts{1, 1, 1}, d{0, 1, 2};
         c.all_gatherv(a.data(), c.rank() == 0 ? 2 : 1, b.data(), counts, d, DType::F64);
       },
       "but rank 0 sends 2"},
      {"gatherv counts of wrong length",
       [](Communicator& c) {
         const std::vector<std::size_t> counts{1, 1}, d{0, 1};
         c.gatherv(a.data(), 1, b.data(), counts, d, DType::F64, 0);
       },
       "passed 2 counts for a group of 3"},
      {"scatterv recv count disagrees",
       [](Communicator& c) {
         const std::vector<std::size_t> counts{1, 2, 1}, d{0, 1, 3};
         c.scatterv(a.data(), counts, d, b.data(), 1, DType::F64, 0);
       },
       "expects 1"},
      {"reduce_scatterv counts differ",
       [](Communicator& c) {
         const std::vector<std::size_t> counts =
             c.rank() == 1 ? std::vector<std::size_t>{1, 1, 2} : std::vector<std::size_t>{1, 1, 1};
         c.reduce_scatterv(a.data(), b.data(), counts, DType::F64, ReduceOp::Sum);
       },
       "counts differ"},
      {"negative split color", [](Communicator& c) { (void)c.split(c.rank() == 1 ? -1 : 0, 0); }, "color -1"},
  };
  for (const auto& bad : cases) {
    Seen seen(n);
    shardcal::sim::run(n, {60.0}, [&](Communicator& c) {
      try {
        bad.call(c);
      } catch (const Error& e) {
        seen.record(c.rank(), e);
      }
      c.barrier();  // still usable afterwards
    });
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(seen.caught[std::size_t(r)]) << bad.name << ": rank " << r << " did not throw";
      EXPECT_FALSE(seen.peer[std::size_t(r)]) << bad.name << ": " << seen.what[std::size_t(r)];
      EXPECT_TRUE(contains(seen.what[std::size_t(r)], bad.phrase)) << bad.name;
    }
  }
}

TEST(SimFailures, TimeoutNamesTheMissingRank) {
  SKIP_UNLESS_SIM();
  constexpr int n = 3;
  Seen seen(n);
  std::latch waiters_failed(2);  // ranks 0 and 2 have given up on the barrier
  const auto t0 = Clock::now();
  const std::string msg = run_error(n, 0.5, [&](Communicator& c) {
    if (c.rank() == 1) {
      // Stays away from the barrier until the others have timed out; then the run is poisoned.
      waiters_failed.wait();
      observe(seen, c, [&] { c.barrier(); });
      return;
    }
    try {
      observe(seen, c, [&] { c.barrier(); });
    } catch (...) {
      waiters_failed.count_down();
      throw;
    }
  });
  const double took = seconds_since(t0);
  EXPECT_GE(took, 0.45);
  EXPECT_LT(took, 10.0);
  EXPECT_TRUE(contains(msg, "timed out after 0.5 s"));
  EXPECT_TRUE(contains(msg, "waiting for rank 1 (it is not inside any communicator call)"));
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(seen.caught[std::size_t(r)]) << "rank " << r;
    EXPECT_TRUE(seen.peer[std::size_t(r)]) << seen.what[std::size_t(r)];
    EXPECT_TRUE(contains(seen.what[std::size_t(r)], "rank 1"));
  }
}

TEST(SimFailures, TimeoutNamesWhatTheMissingRankIsDoing) {
  SKIP_UNLESS_SIM();
  // Rank 1 waits in a recv nobody sends to; ranks 0 and 2 wait in a barrier for it.
  const std::string msg = run_error(3, 0.3, [&](Communicator& c) {
    if (c.rank() == 1) {
      int x = 0;
      c.recv(&x, 1, DType::I32, 2, 9);
    } else {
      c.barrier();
    }
  });
  EXPECT_TRUE(contains(msg, "timed out after 0.3 s"));
  // Whichever wait expired first, its message says what the other side was doing.
  const bool barrier_first = msg.find("barrier on sim world timed out") != std::string::npos;
  if (barrier_first)
    EXPECT_TRUE(contains(msg, "rank 1 (it is in recv on sim world)"));
  else
    EXPECT_TRUE(contains(msg, "no matching send (it is in barrier on sim world)"));
}

TEST(SimFailures, RankReturningEarlyFailsWaitersImmediately) {
  SKIP_UNLESS_SIM();
  const auto t0 = Clock::now();
  const std::string msg = run_error(4, 60.0, [](Communicator& c) {
    if (c.rank() == 2) return;  // forgets the barrier
    c.barrier();
  });
  EXPECT_LT(seconds_since(t0), 10.0);
  EXPECT_TRUE(contains(msg, "rank 2 returned from its SPMD body without calling barrier"));

  const std::string p2p = run_error(2, 60.0, [](Communicator& c) {
    int x = 0;
    if (c.rank() == 0) c.recv(&x, 1, DType::I32, 1, 0);
  });
  EXPECT_TRUE(contains(p2p, "the sender returned from its SPMD body without a matching send"));
}

TEST(SimFailures, PointToPointMisuse) {
  SKIP_UNLESS_SIM();
  // Count mismatch: both sides get the same Error.
  Seen seen(2);
  shardcal::sim::run(2, {60.0}, [&](Communicator& c) {
    std::array<int, 4> buf{};
    try {
      if (c.rank() == 0)
        c.send(buf.data(), 4, DType::I32, 1, 3);
      else
        c.recv(buf.data(), 3, DType::I32, 0, 3);
    } catch (const Error& e) {
      seen.record(c.rank(), e);
    }
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(seen.caught[std::size_t(r)]) << "rank " << r;
    EXPECT_TRUE(contains(seen.what[std::size_t(r)], "expected 3 x i32 but the sender sent 4 x i32"));
  }
  // Self-send and out-of-range peers are rejected without blocking.
  const std::string self = run_error(1, 60.0, [](Communicator& c) {
    int x = 0;
    c.send(&x, 1, DType::I32, 0, 0);
  });
  EXPECT_TRUE(contains(self, "to itself"));
  const std::string range = run_error(2, 60.0, [](Communicator& c) {
    int x = 0;
    c.recv(&x, 1, DType::I32, 5, 0);
  });
  EXPECT_TRUE(contains(range, "peer 5 is out of range"));
}

TEST(SimFailures, ReductionsAreDeterministicRankOrderFolds) {
  SKIP_UNLESS_SIM();
  // Values whose float sum depends on association order.
  constexpr int n = 16;
  constexpr std::size_t count = 257;
  auto value = [](int r, std::size_t i) {
    return float(std::pow(10.0, double((r * 5 + int(i)) % 9) - 4.0)) * ((r + int(i)) % 2 ? -1.f : 1.f);
  };
  std::vector<float> expect(count);
  for (std::size_t i = 0; i < count; ++i) {
    float acc = value(0, i);
    for (int r = 1; r < n; ++r) acc = acc + value(r, i);
    expect[i] = acc;
  }
  for (int rep = 0; rep < 5; ++rep) {
    std::mutex mu;
    int mismatches = 0;
    shardcal::sim::run(n, {60.0}, [&](Communicator& c) {
      std::vector<float> in(count), out(count);
      for (std::size_t i = 0; i < count; ++i) in[i] = value(c.rank(), i);
      c.all_reduce(in.data(), out.data(), count, DType::F32, ReduceOp::Sum);
      std::lock_guard<std::mutex> lk(mu);
      mismatches += std::memcmp(out.data(), expect.data(), count * sizeof(float)) != 0;
    });
    EXPECT_EQ(mismatches, 0) << "repetition " << rep;
  }
}

TEST(SimStress, ManyRunsOfManyRanks) {
  SKIP_UNLESS_SIM();
  // The property tests start thousands of short runs; they must neither hang nor crawl.
  const auto t0 = Clock::now();
  for (int rep = 0; rep < 40; ++rep) {
    const int n = 64 - rep % 5;
    shardcal::sim::run(n, {60.0}, [&](Communicator& c) {
      auto sub = c.split(c.rank() % 4, c.rank());
      std::int64_t x = c.rank(), y = 0;
      sub->all_reduce(&x, &y, 1, DType::I64, ReduceOp::Sum);
      std::int64_t expect = 0;
      for (int r = c.rank() % 4; r < n; r += 4) expect += r;
      EXPECT_EQ(y, expect);
      c.barrier();
    });
  }
  EXPECT_LT(seconds_since(t0), 60.0);
}

}  // namespace

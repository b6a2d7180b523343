// Argument checks are the Communicator's, not a backend's: the same mistake gives the same
// message, "<op> on <describe()>: <problem>", on every backend this suite runs on (a problem that
// names a rank names one that made the mistake). Every rank makes the same mistake, so every
// backend (also those that cannot see their peers' arguments) throws on every rank before any
// data moves, and the communicator stays usable.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "shardcal/communicator.hpp"
#include "shardcal/error.hpp"
#include "spmd.hpp"

namespace {

using shardcal::Communicator;
using shardcal::DType;
using shardcal::Error;
using shardcal::ReduceOp;
using shardcal::testing::run_spmd;
using shardcal::testing::world_for;
using Sizes = std::vector<std::size_t>;

struct BadCall {
  const char* op;
  std::function<void(Communicator&, void*, void*)> call;
  // The problem text for a rank of a group of n.
  std::function<std::string(int rank, int n)> problem;
};

std::string n_text(int n) { return std::to_string(n); }

// Rank r passed one entry too many of a per-rank array `what` in a group of n.
std::string one_too_many(const char* what, int r, int n) {
  return "rank " + n_text(r) + " passed " + n_text(n + 1) + " " + what + " for a group of " +
         n_text(n) + " (one entry per rank)";
}

// Element offsets 0, 1, ..., n-1: blocks of one element each, one per rank.
Sizes unit_displs(const Communicator& c) {
  Sizes d(std::size_t(c.size()));
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = i;
  return d;
}

// Makes the bad call on c and expects it refused with "<op> on <describe()>: <problem>". A
// problem names the rank that made the mistake: itself where each rank throws its own (mpi,
// nccl, and point to point everywhere); on sim, which fails the whole collective with one
// message, the lowest rank that made it.
void expect_refused(Communicator& c, const BadCall& bad, void* a, void* b, const std::string& who) {
  const std::string op = bad.op;
  const bool own = c.backend() != "sim" || op == "send" || op == "recv";
  const std::string expected =
      op + " on " + c.describe() + ": " + bad.problem(own ? c.rank() : 0, c.size());
  try {
    bad.call(c, a, b);
    ADD_FAILURE() << op << " was not refused on " << who << "; expected: " << expected;
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), expected) << who;
  }
}

TEST(ArgumentChecks, SameMistakeSameMessageOnEveryBackend) {
  const std::vector<BadCall> cases = {
      {"broadcast",
       [](Communicator& c, void* a, void*) { c.broadcast(a, 1, DType::F32, c.size()); },
       [](int, int n) {
         return "root " + n_text(n) + " is out of range for a group of " + n_text(n);
       }},
      {"scatter", [](Communicator& c, void* a, void* b) { c.scatter(a, b, 1, DType::F32, -1); },
       [](int, int n) { return "root -1 is out of range for a group of " + n_text(n); }},
      {"gather", [](Communicator& c, void* a, void* b) { c.gather(a, b, 1, DType::F32, c.size()); },
       [](int, int n) {
         return "root " + n_text(n) + " is out of range for a group of " + n_text(n);
       }},
      {"scatterv",
       [](Communicator& c, void* a, void* b) {
         const Sizes counts(std::size_t(c.size()), 1), displs(std::size_t(c.size()), 0);
         c.scatterv(a, counts, displs, b, 1, DType::F32, c.size() + 2);
       },
       [](int, int n) {
         return "root " + n_text(n + 2) + " is out of range for a group of " + n_text(n);
       }},
      {"gatherv",
       [](Communicator& c, void* a, void* b) {
         const Sizes counts(std::size_t(c.size()), 1), displs(std::size_t(c.size()), 0);
         c.gatherv(a, 1, b, counts, displs, DType::F32, -3);
       },
       [](int, int n) { return "root -3 is out of range for a group of " + n_text(n); }},
      {"broadcast_string",
       [](Communicator& c, void*, void*) {
         std::string s = "x";
         c.broadcast_string(s, c.size());
       },
       [](int, int n) {
         return "root " + n_text(n) + " is out of range for a group of " + n_text(n);
       }},
      {"all_gatherv",
       [](Communicator& c, void* a, void* b) {
         const Sizes counts(std::size_t(c.size()) + 1, 1), displs(std::size_t(c.size()), 0);
         c.all_gatherv(a, 1, b, counts, displs, DType::F32);
       },
       [](int r, int n) { return one_too_many("counts", r, n); }},
      {"all_gatherv",
       [](Communicator& c, void* a, void* b) {
         const Sizes counts(std::size_t(c.size()), 1);
         c.all_gatherv(a, 2, b, counts, unit_displs(c), DType::F32);
       },
       [](int r, int) {
         return "counts[" + n_text(r) + "] is 1 but rank " + n_text(r) +
                " sends 2 (its send_count)";
       }},
      {"reduce_scatterv",
       [](Communicator& c, void* a, void* b) {
         const Sizes counts(std::size_t(c.size()) + 1, 1);
         c.reduce_scatterv(a, b, counts, DType::F32, ReduceOp::Sum);
       },
       [](int r, int n) { return one_too_many("counts", r, n); }},
      {"all_to_allv",
       [](Communicator& c, void* a, void* b) {
         const Sizes ok(std::size_t(c.size()), 1), bad(std::size_t(c.size()) + 1, 0);
         c.all_to_allv(a, ok, ok, b, ok, bad, DType::F32);
       },
       [](int r, int n) { return one_too_many("recv_displs", r, n); }},
      {"all_to_allv",
       [](Communicator& c, void* a, void* b) {
         const Sizes ones(std::size_t(c.size()), 1), displs = unit_displs(c);
         Sizes recv_counts = ones;
         recv_counts[std::size_t(c.rank())] = 2;  // disagrees with what it sends itself
         c.all_to_allv(a, ones, displs, b, recv_counts, displs, DType::F32);
       },
       [](int r, int) {
         return "rank " + n_text(r) + " sends 1 elements to itself (send_counts) but expects 2 " +
                "(recv_counts)";
       }},
      {"split", [](Communicator& c, void*, void*) { (void)c.split(-1, 0); },
       [](int r, int) { return "rank " + n_text(r) + " passed color -1; colors must be >= 0"; }},
      {"send", [](Communicator& c, void* a, void*) { c.send(a, 1, DType::F32, c.size(), 0); },
       [](int, int n) {
         return "peer " + n_text(n) + " is out of range for a group of " + n_text(n);
       }},
      {"recv", [](Communicator& c, void* a, void*) { c.recv(a, 1, DType::F32, -1, 0); },
       [](int, int n) { return "peer -1 is out of range for a group of " + n_text(n); }},
      {"send", [](Communicator& c, void* a, void*) { c.send(a, 1, DType::F32, c.rank(), 0); },
       [](int r, int) {
         return "rank " + n_text(r) +
                " sends to itself, which never completes with a blocking send on mpi/nccl; copy "
                "the "
                "data locally instead";
       }},
      {"send",
       [](Communicator& c, void* a, void*) {
         c.send(a, 1, DType::F32, (c.rank() + 1) % c.size(), -1);
       },
       [](int r, int) { return "rank " + n_text(r) + " passed tag -1; tags must be >= 0"; }},
      {"recv",
       [](Communicator& c, void* a, void*) {
         c.recv(a, 1, DType::F32, (c.rank() + 1) % c.size(), -7);
       },
       [](int r, int) { return "rank " + n_text(r) + " passed tag -7; tags must be >= 0"; }},
      {"recv", [](Communicator& c, void* a, void*) { c.recv(a, 1, DType::F32, c.rank(), 0); },
       [](int r, int) {
         return "rank " + n_text(r) +
                " receives from itself, which never completes with a blocking send on mpi/nccl; "
                "copy the data locally instead";
       }},
  };
  run_spmd(world_for(3), [&](Communicator& c) {
    // Device-resident on nccl; no call below reads or writes them (every call is refused).
    shardcal::Buffer a(c.memory(), 64 * sizeof(float)), b(c.memory(), 64 * sizeof(float));
    for (const BadCall& bad : cases) {
      expect_refused(c, bad, a.data(), b.data(), "rank " + n_text(c.rank()));
      c.barrier();  // still usable
    }
  });
}

// The root's own block of scatterv/gatherv is checked on the root only (the others may pass
// empty counts), so in a larger group only the root would throw and the others would wait for
// the timeout on mpi/nccl. In groups of one every rank is a root making the same mistake.
TEST(ArgumentChecks, RootsOwnBlockSameMessageOnEveryBackend) {
  const std::vector<BadCall> cases = {
      {"scatterv",
       [](Communicator& c, void* a, void* b) {
         const Sizes counts{1}, displs{0};
         c.scatterv(a, counts, displs, b, 2, DType::F32, 0);
       },
       [](int, int) {
         return std::string("counts[0] is 1 but rank 0 expects 2 (its recv_count)");
       }},
      {"gatherv",
       [](Communicator& c, void* a, void* b) {
         const Sizes counts{1}, displs{0};
         c.gatherv(a, 2, b, counts, displs, DType::F32, 0);
       },
       [](int, int) { return std::string("counts[0] is 1 but rank 0 sends 2 (its send_count)"); }},
  };
  run_spmd(world_for(3), [&](Communicator& world) {
    const auto solo = world.split(world.rank(), 0);
    Communicator& c = *solo;
    ASSERT_EQ(c.size(), 1);
    shardcal::Buffer a(c.memory(), 64 * sizeof(float)), b(c.memory(), 64 * sizeof(float));
    for (const BadCall& bad : cases)
      expect_refused(c, bad, a.data(), b.data(), "world rank " + n_text(world.rank()));
    world.barrier();  // still usable
  });
}

}  // namespace

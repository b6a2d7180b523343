// main() of the conformance suite. Under mpi/nccl every process runs the same tests in the same
// order (collectives must match): the ranks check that they selected the same tests and share
// one shuffle seed. Only rank 0 prints gtest's progress and writes --gtest_output reports; the
// other ranks print just their failures, prefixed with the rank. All ranks exit with the same
// code, so a failure on any rank fails the job.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <exception>
#include <string>
#include <vector>

#include "shardcal/check.hpp"
#include "shardcal/hash.hpp"
#include "shardcal/launch.hpp"
#include "spmd.hpp"

namespace {

// Failed assertions of a non-zero rank (its progress output is suppressed).
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  // The name is kept here: UnitTest::current_test_info() takes a lock that gtest already holds
  // while it reports a part result.
  void OnTestStart(const ::testing::TestInfo& info) override {
    test_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestEnd(const ::testing::TestInfo&) override { test_ = "(between tests)"; }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure in %s\n%s\n", rank_,
                 r.file_name() != nullptr ? r.file_name() : "?", r.line_number(), test_.c_str(),
                 r.message());
    std::fflush(stderr);
  }

 private:
  int rank_;
  std::string test_ = "(between tests)";
};

shardcal::LaunchOptions launch_options() {
  shardcal::LaunchOptions o;
  o.backend = shardcal::testing::backend_name();
  o.timeout_s = shardcal::testing::test_timeout_s();
  return o;
}

// Before the tests: learn this process's rank, agree on the shuffle seed, and make sure every
// rank will run the same list of tests. Returns the rank.
int prepare_ranks() {
  int rank = 0;
  shardcal::launch(launch_options(), [&](shardcal::Communicator& world) {
    rank = world.rank();
    int seed = GTEST_FLAG_GET(random_seed);
    if (seed == 0) seed = 1 + int(std::time(nullptr) % 99999);  // gtest's seed range
    seed = int(world.all_gather_u64(std::uint64_t(seed))[0]);
    GTEST_FLAG_SET(random_seed, seed);
    const std::string selection =
        "filter '" + GTEST_FLAG_GET(filter) + "', " +
        std::to_string(::testing::UnitTest::GetInstance()->total_test_count()) + " tests, repeat " +
        std::to_string(GTEST_FLAG_GET(repeat)) + (GTEST_FLAG_GET(shuffle) ? ", shuffled" : "") +
        (GTEST_FLAG_GET(also_run_disabled_tests) ? ", with disabled tests" : "");
    shardcal::check_same_spec(world, "conformance test selection", shardcal::fnv1a64(selection), selection);
  });
  return rank;
}

// After the tests: every rank returns 1 if any rank failed; rank 0 says which ranks did.
int agree_on_exit_code(int local_rc) {
  int rc = local_rc;
  shardcal::launch(launch_options(), [&](shardcal::Communicator& world) {
    const int failed = ::testing::UnitTest::GetInstance()->failed_test_count();
    const auto codes = world.all_gather_u64(std::uint64_t(local_rc != 0 ? 1 : 0));
    const auto fails = world.all_gather_u64(std::uint64_t(failed));
    std::vector<int> bad;
    for (int r = 0; r < world.size(); ++r)
      if (codes[std::size_t(r)] != 0) bad.push_back(r);
    if (!bad.empty()) rc = 1;
    if (world.rank() == 0 && !bad.empty()) {
      std::string detail;
      for (int r : bad)
        detail += (detail.empty() ? "" : ", ") + ("rank " + std::to_string(r)) + ": " +
                  std::to_string(fails[std::size_t(r)]) + " failed test(s)";
      std::fprintf(stderr,
                   "[spmd] tests failed on %s (%s); failures of ranks other than 0 are printed "
                   "with a [rank N] prefix\n",
                   bad.size() == 1 ? "one rank" : "several ranks", detail.c_str());
    }
  });
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (shardcal::testing::backend_name() == "sim") return RUN_ALL_TESTS();

  try {
    const int rank = prepare_ranks();
    if (rank != 0) {
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
      delete listeners.Release(listeners.default_xml_generator());
      listeners.Append(new RankFailurePrinter(rank));
    }
    return agree_on_exit_code(RUN_ALL_TESTS());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[spmd] %s\n", e.what());
    return 1;
  }
}

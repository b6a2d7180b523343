// Statistics on known samples, the order-statistic CI of the median against published tables,
// and bandwidth factors against the collective table.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "shardcal/collectives.hpp"
#include "sweep/regret.hpp"
#include "sweep/stats.hpp"

using namespace shardbench;
using namespace shardcal;
using namespace shardbench::sweep;

TEST(Stats, KnownSamples) {
  // numpy: np.percentile(x, [10, 50, 90, 99]) with the default linear method.
  const std::vector<double> x{5, 1, 4, 2, 3, 10, 9, 8, 7, 6};
  const Stats s = compute_stats(x);
  EXPECT_EQ(s.n, 10u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.p10, 1.9);
  EXPECT_DOUBLE_EQ(s.p50, 5.5);
  EXPECT_DOUBLE_EQ(s.p90, 9.1);
  EXPECT_NEAR(s.p99, 9.91, 1e-12);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_NEAR(s.stddev, std::sqrt(82.5 / 9.0), 1e-12);  // sample (n-1) stddev
  // n = 10 at 95%: [x_(2), x_(9)] with coverage 1 - 2 * 11/1024 = 0.978515625.
  EXPECT_DOUBLE_EQ(s.ci_lo, 2);
  EXPECT_DOUBLE_EQ(s.ci_hi, 9);
  EXPECT_DOUBLE_EQ(s.ci_coverage, 1.0 - 22.0 / 1024.0);
  EXPECT_NEAR(s.rel_ci_halfwidth(), 3.5 / 5.5, 1e-12);
}

TEST(Stats, MedianCiMatchesTables) {
  // 1-based (j, k) for 95% from Le Boudec, Performance Evaluation (2010), Table A.1.
  struct Row {
    std::size_t n, j, k;
  };
  for (const Row& r : {Row{6, 1, 6}, Row{10, 2, 9}, Row{20, 6, 15}, Row{30, 10, 21}, Row{50, 18, 33},
                       Row{70, 27, 44}}) {
    const MedianCi ci = median_ci_ranks(r.n, 0.95);
    EXPECT_EQ(ci.lo + 1, r.j) << "n=" << r.n;
    EXPECT_EQ(ci.hi + 1, r.k) << "n=" << r.n;
    EXPECT_GE(ci.coverage, 0.95);
  }
  // Large n: close to the normal approximation n/2 -+ 0.98 sqrt(n).
  const MedianCi big = median_ci_ranks(10000, 0.95);
  EXPECT_NEAR(double(big.lo), 5000 - 0.98 * 100, 2.0);
  EXPECT_NEAR(double(big.hi), 5000 + 0.98 * 100, 2.0);
  // Too few samples for 95%: [min, max] with the coverage it really has.
  const MedianCi small = median_ci_ranks(5, 0.95);
  EXPECT_EQ(small.lo, 0u);
  EXPECT_EQ(small.hi, 4u);
  EXPECT_DOUBLE_EQ(small.coverage, 1.0 - 2.0 / 32.0);
  EXPECT_EQ(compute_stats({}).n, 0u);
  EXPECT_DOUBLE_EQ(compute_stats({3.0}).p99, 3.0);
}

TEST(Bandwidth, FactorsFollowTheTable) {
  EXPECT_DOUBLE_EQ(collective_info(Collective::AllReduce).busbw_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(collective_info(Collective::AllGather).busbw_factor(8), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(collective_info(Collective::ReduceScatter).busbw_factor(2), 0.5);
  EXPECT_DOUBLE_EQ(collective_info(Collective::AllToAll).busbw_factor(4), 0.75);
  EXPECT_DOUBLE_EQ(collective_info(Collective::Broadcast).busbw_factor(16), 1.0);
  EXPECT_DOUBLE_EQ(collective_info(Collective::Scatter).busbw_factor(4), 0.75);
  EXPECT_DOUBLE_EQ(collective_info(Collective::Gather).busbw_factor(4), 0.75);
  EXPECT_DOUBLE_EQ(collective_info(Collective::AllGather).busbw_factor(1), 0.0);
  EXPECT_EQ(collective_info(Collective::AllReduce).ring_steps(4), 6);
  EXPECT_EQ(collective_info(Collective::Broadcast).ring_steps(4), 3);
  const Bandwidth b = bandwidth(Collective::AllReduce, 4, 1'000'000'000, 0.5);
  EXPECT_DOUBLE_EQ(b.algbw_GBps, 2.0);
  EXPECT_DOUBLE_EQ(b.busbw_GBps, 3.0);
  for (const auto& info : kCollectives) EXPECT_EQ(find_collective(info.name), info.op);
  EXPECT_FALSE(find_collective("allgather").has_value());
}

// The config and results schemas spell the collective names; they must list exactly the table's
// entries (scripts/collectives_table.py writes these enums from the table; see "Adding a
// collective" in docs/DEVELOPING.md).
TEST(CollectiveTable, SchemasListTheTable) {
  std::vector<std::string> names;
  for (const auto& info : kCollectives) names.emplace_back(info.name);
  for (const char* file : {"sweep.schema.json", "results.schema.json"}) {
    const std::string path = std::string(SHARDCAL_SOURCE_DIR) + "/configs/schema/" + file;
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    // The one enum that lists "all_gather" must list every entry, in table order, and nothing else.
    const auto at = text.find("\"all_gather\"");
    ASSERT_NE(at, std::string::npos) << path;
    const auto open = text.rfind('[', at), close = text.find(']', at);
    const auto list = nlohmann::json::parse(text.substr(open, close - open + 1));
    EXPECT_EQ(list.get<std::vector<std::string>>(), names) << path;
  }
}

namespace {
MeasuredPlan measured(double p50, double lo, double hi, bool wrong = false) {
  MeasuredPlan m;
  m.stats.n = 10;
  m.stats.p50 = p50, m.stats.ci_lo = lo, m.stats.ci_hi = hi;
  m.wrong = wrong;
  return m;
}
}  // namespace

// validate's regret: a plan that produced wrong data is no alternative; a plan measured at 0 s
// is (0 is a time, not "unset").
TEST(Regret, WrongPlansAreLeftOutOfTheBest) {
  // The fastest plan (index 2) produced wrong data: the regret compares with plan 1 only.
  const Regret r = regret_of(
      {measured(2.0, 1.9, 2.1), measured(1.6, 1.5, 1.7), measured(1.0, 0.9, 1.1, /*wrong=*/true)});
  EXPECT_DOUBLE_EQ(r.regret, 2.0 / 1.6);
  EXPECT_TRUE(r.significant);  // 1.9 > 1.7
  EXPECT_EQ(r.left_out_wrong, 1u);
  // Only a wrong plan was faster: regret 1, not significant.
  const Regret w = regret_of({measured(2.0, 1.9, 2.1), measured(1.0, 0.9, 1.1, true)});
  EXPECT_DOUBLE_EQ(w.regret, 1.0);
  EXPECT_FALSE(w.significant);
  // The chosen plan counts even when it is wrong (that is reported as wrong data).
  const Regret c = regret_of({measured(1.0, 0.9, 1.1, true), measured(3.0, 2.9, 3.1)});
  EXPECT_DOUBLE_EQ(c.regret, 1.0);
  EXPECT_EQ(c.left_out_wrong, 0u);
}

TEST(Regret, ZeroMedianIsATimeNotUnset) {
  // A plan measured at 0 (below the timer's resolution) is the best, not "no best yet".
  const Regret r = regret_of({measured(0.0, 0.0, 0.0), measured(1.0, 0.9, 1.1)});
  EXPECT_DOUBLE_EQ(r.regret, 1.0);
  const Regret s =
      regret_of({measured(1.0, 0.9, 1.1), measured(0.0, 0.0, 0.0), measured(0.5, 0.4, 0.6)});
  EXPECT_DOUBLE_EQ(s.regret, 1.0);  // best 0: no finite ratio, reported as 1
  EXPECT_TRUE(s.significant);
}

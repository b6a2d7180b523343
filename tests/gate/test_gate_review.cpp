// Hardening of the gate (docs/GATE.md): bimodal samples do not mask a clear regression, the
// bimodality rule's false-alarm rate on unimodal noise, lost coverage and wrong results, one-sided
// environment fields, repeated files on one side, Google Benchmark fields of the wrong type.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "shardcal/error.hpp"
#include "shardcal/gate/compare.hpp"
#include "shardcal/gate/stats.hpp"

namespace g = shardcal::gate;
using nlohmann::json;

namespace {

std::vector<double> noisy(std::mt19937_64& rng, int n, double median_s, double sigma) {
  std::normal_distribution<double> z(0, sigma);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(median_s * std::exp(z(rng)));
  return v;
}

g::RunData run_of(std::vector<g::Series> pts, std::string sha = "aa") {
  g::RunData r;
  r.path = "run_" + sha;
  r.format = "shardcal.sweep.results";
  r.sha256 = std::move(sha);
  r.env = json{{"backend", "sim"}, {"world", 4}};
  r.points = std::move(pts);
  return r;
}

}  // namespace

// A candidate alternating 130 and 200 us against a baseline at 100 us +-2%: bimodal, but every
// candidate sample is >= 1.3x slower, so it is a regression, not "inconclusive (bimodal)".
TEST(GateReview, BimodalCandidateDoesNotMaskARegression) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-0.02, 0.02);
  g::Series b{"k", "k", {}}, c{"k", "k", {}};
  for (int i = 0; i < 60; ++i) {
    b.samples_s.push_back(100e-6 * (1 + u(rng)));
    c.samples_s.push_back(i % 2 ? 200e-6 : 130e-6);
  }
  ASSERT_TRUE(g::sample_problem(c.samples_s, 10).has_value());  // it is bimodal
  const g::Report r = g::compare_runs(run_of({b}, "b"), run_of({c}, "c"), g::Options{});
  ASSERT_EQ(r.points.size(), 1u);
  EXPECT_EQ(r.points[0].verdict, "regression") << r.points[0].reason;
  EXPECT_NE(r.points[0].reason.find("bimodal"), std::string::npos) << r.points[0].reason;
  EXPECT_EQ(r.exit_code, 1);

  // A bimodal candidate whose fast cluster is as fast as the baseline stays inconclusive.
  g::Series c2{"k", "k", {}};
  for (int i = 0; i < 60; ++i) c2.samples_s.push_back(i % 3 ? 200e-6 : 100e-6 * (1 + u(rng)));
  const g::Report r2 = g::compare_runs(run_of({b}, "b"), run_of({c2}, "c"), g::Options{});
  EXPECT_EQ(r2.points[0].verdict, "inconclusive") << r2.points[0].reason;
  EXPECT_EQ(r2.exit_code, 3);
}

// Unimodal lognormal noise (sigma 0.2) must rarely look bimodal, also at small n (the old rule:
// ~31% at n = 10, ~9% at n = 20). Fixed seed: deterministic.
TEST(GateReview, BimodalFalseAlarmRate) {
  std::mt19937_64 rng(20261123);
  for (int n : {10, 20}) {
    const int reps = 2000;
    int flagged = 0;
    for (int i = 0; i < reps; ++i)
      flagged += g::sample_problem(noisy(rng, n, 1e-4, 0.2), 2).has_value();
    std::printf("n = %d: %d of %d unimodal samples flagged bimodal\n", n, flagged, reps);
    EXPECT_LT(flagged, reps / 20) << "n = " << n;  // < 5%
  }
  // Still found: two tight clusters 1.5x apart, at n = 10 and n = 60.
  for (int n : {10, 60}) {
    std::vector<double> v = noisy(rng, n, 1e-4, 0.02);
    for (int i = 0; i < n; i += 2) v[std::size_t(i)] *= 1.5;
    EXPECT_TRUE(g::sample_problem(v, 2).has_value()) << "n = " << n;
  }
}

// Lost coverage: baseline points the candidate has no samples for are inconclusive unless
// --allow-missing; wrong results in the candidate are a regression.
TEST(GateReview, LostCoverageAndWrongResults) {
  std::mt19937_64 rng(3);
  std::vector<g::Series> bp, cp;
  for (int i = 0; i < 10; ++i) {
    const std::string k = "p" + std::to_string(i);
    bp.push_back({k, k, noisy(rng, 30, 1e-4, 0.01)});
    if (i < 5) cp.push_back({k, k, noisy(rng, 30, 1e-4, 0.01)});
  }
  g::RunData b = run_of(bp, "b"), c = run_of(cp, "c");
  // Points 5..9 skipped in the candidate for lack of samples.
  for (int i = 5; i < 10; ++i) c.skipped.push_back({"p" + std::to_string(i), "no samples", false});
  g::Options opt;
  g::Report r = g::compare_runs(b, c, opt);
  EXPECT_EQ(r.verdict, "inconclusive");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.missing_in_candidate.size(), 5u);
  EXPECT_TRUE(r.only_baseline.empty());  // listed as skipped, not twice
  opt.allow_missing = true;
  r = g::compare_runs(b, c, opt);
  EXPECT_EQ(r.exit_code, 0) << r.verdict;
  EXPECT_EQ(g::report_to_json(r)["missing_allowed"], true);
  // Only in the baseline (not skipped) counts the same way.
  c.skipped.clear();
  opt.allow_missing = false;
  r = g::compare_runs(b, c, opt);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.only_baseline.size(), 5u);
  // Half the candidate's points fail correctness: a regression, "wrong results".
  for (int i = 5; i < 10; ++i) c.skipped.push_back({"p" + std::to_string(i), "wrong = 1", true});
  opt.allow_missing = true;
  r = g::compare_runs(b, c, opt);
  EXPECT_EQ(r.verdict, "regression");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.wrong_results.size(), 5u);
  EXPECT_NE(g::report_markdown(r).find("Wrong results"), std::string::npos);
}

// An environment field on one side only is a difference (null on the other side); only Google
// Benchmark's optional context keys are tolerated (and listed).
TEST(GateReview, OneSidedEnvironmentFields) {
  std::mt19937_64 rng(5);
  g::RunData b = run_of({{"k", "k", noisy(rng, 30, 1e-4, 0.01)}}, "b");
  g::RunData c = run_of({{"k", "k", noisy(rng, 30, 1e-4, 0.01)}}, "c");
  c.env["library_versions.MPI"] = "Open MPI v4.1.4";
  g::Report r = g::compare_runs(b, c, g::Options{});
  ASSERT_EQ(r.env_differences.size(), 1u);
  EXPECT_TRUE(r.env_differences[0].baseline.is_null());
  EXPECT_EQ(r.exit_code, 2);
  g::Options allow;
  allow.allow_env_change = true;
  EXPECT_EQ(g::compare_runs(b, c, allow).exit_code, 0);

  b.format = c.format = "google-benchmark";
  b.env = json{{"num_cpus", 2}, {"library_build_type", "release"}};
  c.env = json{{"num_cpus", 2}, {"library_build_type", "release"}, {"library_version", "v1.8"}};
  r = g::compare_runs(b, c, g::Options{});
  EXPECT_EQ(r.exit_code, 0) << r.incomparable_reason;
  ASSERT_EQ(r.env_differences.size(), 1u);
  EXPECT_TRUE(r.env_differences[0].tolerated);
  EXPECT_EQ(g::report_to_json(r)["env_change_allowed"], false);
  c.env.erase("num_cpus");
  EXPECT_EQ(g::compare_runs(b, c, g::Options{}).exit_code, 2);
}

// The same file twice on one side would count its samples twice.
TEST(GateReview, RepeatedFileOnOneSide) {
  std::mt19937_64 rng(9);
  const g::RunData a = run_of({{"k", "k", noisy(rng, 30, 1e-4, 0.01)}}, "same");
  g::RunData a2 = a;
  a2.path = "copy_of_run";
  try {
    g::pool_runs({a, a2}, "baseline");
    FAIL() << "pooled the same file twice";
  } catch (const shardcal::Error& e) {
    EXPECT_NE(std::string(e.what()).find("copy_of_run"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("same file"), std::string::npos) << e.what();
  }
  // Baseline and candidate the same file: a warning, not an error.
  const g::Report r = g::compare_runs(a, a, g::Options{});
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(g::report_markdown(r).find("Warning"), std::string::npos);
}

// Google Benchmark fields of the wrong type: a clear Error naming the file and the field (never
// nlohmann's type_error); error_occurred: true is skipped with its reason.
TEST(GateReview, GoogleBenchmarkFieldTypes) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gate_review_" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const json& entry) {
    json doc = {{"context", {{"num_cpus", 2}}},
                {"benchmarks", json::array({{{"name", "BM_A"},
                                             {"run_type", "iteration"},
                                             {"real_time", 5.0},
                                             {"time_unit", "ns"}},
                                            entry})}};
    const std::string p = (dir / name).string();
    std::ofstream(p) << doc.dump();
    return p;
  };
  const json ok = {{"name", "BM_B"}, {"real_time", 5.0}, {"time_unit", "ns"}};
  for (const auto& [field, bad] : std::vector<std::pair<std::string, json>>{
           {"error_occurred", 1}, {"run_type", nullptr}, {"time_unit", 1000}}) {
    json e = ok;
    e[field] = bad;
    const std::string p = write(field + ".json", e);
    try {
      g::read_run(p);
      ADD_FAILURE() << field << ": accepted";
    } catch (const shardcal::Error& err) {
      const std::string m = err.what();
      EXPECT_NE(m.find(p), std::string::npos) << m;
      EXPECT_NE(m.find("/benchmarks/1/" + field + ": "), std::string::npos) << m;
    } catch (const std::exception& err) {
      ADD_FAILURE() << field << ": not a shardcal::Error: " << err.what();
    }
  }
  json e = ok;
  e["error_occurred"] = true;
  e["error_message"] = "boom";
  const g::RunData r = g::read_run(write("err.json", e));
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].key, "BM_B");
  EXPECT_NE(r.skipped[0].reason.find("boom"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Pooled runs: a shift between launches (two of three candidate runs settle 60% slower, every run tight)
// must widen the CI (two-stage bootstrap over runs), not look like a certain 30% slowdown.
TEST(GateReview, PooledRunsBootstrapOverRuns) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 0.01);
  auto run = [&](double level, int n) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(level * (1 + noise(rng)));
    return v;
  };
  std::vector<double> b, c;
  for (double lv : {100e-6, 100e-6, 100e-6}) {
    auto r = run(lv, 40);
    b.insert(b.end(), r.begin(), r.end());
  }
  for (double lv : {160e-6, 100e-6, 160e-6}) {
    auto r = run(lv, 40);
    c.insert(c.end(), r.begin(), r.end());
  }
  const std::vector<std::size_t> runs{40, 40, 40};
  using g::RatioCI;
  using g::bootstrap_median_ratio;
  const RatioCI flat = bootstrap_median_ratio(b, c, 0.99, 2000, 1);
  const RatioCI hier = bootstrap_median_ratio(b, c, 0.99, 2000, 1, runs, runs);
  // Pooled as one run the CI excludes 1 (a "certain" 60% slowdown); over runs it covers no change.
  EXPECT_GT(flat.lo, 1.5);
  EXPECT_LE(hier.lo, 1.01);
  EXPECT_GE(hier.hi, 1.5);
  // One run, or run sizes that are one run: the ordinary bootstrap, bit for bit.
  const std::vector<std::size_t> one{120};
  const RatioCI same = bootstrap_median_ratio(b, c, 0.99, 2000, 1, one, one);
  EXPECT_EQ(same.lo, flat.lo);
  EXPECT_EQ(same.hi, flat.hi);
  // Run sizes that do not add up are an error, not a silent misread.
  const std::vector<std::size_t> bad{40, 40, 39};
  EXPECT_THROW(bootstrap_median_ratio(b, c, 0.99, 2000, 1, bad, runs), shardcal::Error);
}

// Calibration fitter against synthetic ground truth: results files generated
// from known parameters (two segments with a known break, 5% multiplicative noise, outliers,
// three group sizes) must give back the parameters, and a held-out group size must be predicted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardcal/calibrate/fit.hpp"
#include "shardcal/formats/results_reader.hpp"
#include "shardcal/error.hpp"
#include "synthetic_results.hpp"

namespace {

using nlohmann::json;
using shardcal::Collective;
using shardcal::collective_info;
using namespace shardcal::calib;
using namespace shardcal::calib::testing;

// Two regimes with a break at 64 KiB (an eager -> rendezvous switch: more latency, more
// bandwidth; the time jumps up at the break for every n, so the truth is monotone in S).
constexpr double kBreak = 65536;
const TrueSeg kSmall{5.0, 1.0, 1.0};
const TrueSeg kLarge{40.0, 5.0, 10.0};

double truth_us(Collective c, double s, int n) {
  return two_regime_us(c, s, n, kSmall, kLarge, kBreak);
}

std::vector<double> sizes() {
  std::vector<double> v;
  for (double s = 8; s <= 4 * 1048576; s *= 2) v.push_back(s);  // 8 B .. 4 MiB, 20 sizes
  return v;
}

json point(Collective c, int n, double bytes, const json& samples_s, const std::vector<std::int64_t>& counts,
           double bytes_total, double bytes_eff, int wrong = 0, const std::string& dtype = "f32") {
  static int index = 0;
  const auto& info = collective_info(c);
  const bool uneven = std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) != counts.end();
  json params = {{"kind", "collective"}, {"mesh", std::to_string(n)}, {"mesh_dim", 0},
                 {"op", std::string(info.name)}, {"dtype", dtype},
                 {"distribution", uneven ? "zipf(1.2)" : "even"}, {"mode", "per_iteration"},
                 {"size", bytes}};
  return {{"type", "point"}, {"index", index++}, {"key", params.dump()}, {"point", params},
          {"collective", std::string(info.name)}, {"group_size", n}, {"groups", 1},
          {"hosts_spanned", 1}, {"max_ranks_per_host", n}, {"elem_size", 1}, {"counts", counts},
          {"bytes", bytes}, {"bytes_total", bytes_total}, {"bytes_max_rank", bytes_eff / n},
          {"bytes_eff", bytes_eff}, {"samples_s", samples_s}, {"wrong", wrong}};
}

json one(double t_us) { return json::array({t_us * 1e-6}); }

std::vector<std::int64_t> even_counts(int n, double bytes) {
  return std::vector<std::int64_t>(std::size_t(n), std::int64_t(bytes) / n);
}

// Three group sizes (2, 4, 8) of all_gather, 5% multiplicative noise on every sample, four
// points made 2-3x slow as a whole (a daemon woke up during the point).
std::vector<json> synthetic(unsigned seed, Collective c = Collective::AllGather,
                            const std::vector<int>& ns = {2, 4, 8}) {
  std::mt19937_64 rng(seed);
  std::vector<json> recs{context()};
  for (int n : ns)
    for (double s : sizes())
      recs.push_back(point(c, n, s, noisy(truth_us(c, s, n), rng), even_counts(n, s), s, s));
  for (std::size_t i : {5u, 12u, 30u, 47u}) {
    json& r = recs[i];
    for (json& x : r["samples_s"]) x = x.get<double>() * (i % 2 ? 2.0 : 3.0);
  }
  return recs;
}

const Model& only_model(const Calibration& cal) {
  EXPECT_EQ(cal.models.size(), 1u);
  return cal.models.at(0);
}

TEST(CalibrateFit, RecoversSyntheticGroundTruth) {
  for (unsigned seed : {1u, 2u, 3u, 4u, 5u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    TempFile f("truth.jsonl");
    f.write(synthetic(seed));
    const ResultSet rs = read_results({f.path});
    const Calibration cal = calibrate(rs);
    const Model& m = only_model(cal);
    EXPECT_EQ(m.group_sizes, (std::vector<int>{2, 4, 8}));
    ASSERT_EQ(m.segments.size(), 2u) << quality_report(rs, cal);
    const TrueSeg* truth[2] = {&kSmall, &kLarge};
    for (int k = 0; k < 2; ++k) {
      const Segment& s = m.segments[std::size_t(k)];
      const TrueSeg& t = *truth[k];
      EXPECT_LE(std::abs(s.alpha_us - t.a0), std::max(0.05 * t.a0, 0.5)) << "segment " << k;
      EXPECT_LE(std::abs(s.alpha_step_us - t.as), std::max(0.05 * t.as, 0.5)) << "segment " << k;
      EXPECT_LE(std::abs(s.bandwidth_GBps - t.B), 0.05 * t.B) << "segment " << k;
    }
    // The break within one size step (sizes double): in (32 KiB, 128 KiB).
    EXPECT_GT(m.segments[1].s_lo, kBreak / 2);
    EXPECT_LT(m.segments[1].s_lo, kBreak * 2);
    // Holdout MAPE includes the four 2-3x outliers (about 4 points of it) and held-out sizes
    // next to the break, whose side a fit without them cannot know: 10-11% here.
    ASSERT_TRUE(m.quality.holdout_mape.has_value());
    EXPECT_LT(*m.quality.holdout_mape, 0.15);
    ASSERT_TRUE(m.quality.leave_group_out_mape.has_value());
    EXPECT_LT(*m.quality.leave_group_out_mape, 0.10);
    // A group size that was not measured (16): predicted within 10% at every size, also through
    // the written profile and predict() (what planners use), which marks it extrapolated.
    const Profile prof = parse_profile(profile_to_json(make_profile(rs, cal, "synthetic")), "test");
    for (double s : sizes()) {
      const double want = truth_us(Collective::AllGather, s, 16);
      EXPECT_LE(std::abs(model_time_us(m, s, 16) - want) / want, 0.10) << "S=" << s;
      const Prediction pr = predict(prof, Collective::AllGather, LinkClass{16, 1, 16, 1}, s);
      // Through the nearest measured class's curve (n = 8), transported by the backbone.
      EXPECT_LE(std::abs(pr.time_us - want) / want, 0.10) << "S=" << s;
      EXPECT_TRUE(pr.extrapolated);
    }
  }
}

TEST(CalibrateFit, PredictionsNonDecreasingInSize) {
  for (Collective c : {Collective::AllGather, Collective::AllReduce, Collective::Broadcast}) {
    for (unsigned seed : {7u, 8u, 9u}) {
      TempFile f("mono.jsonl");
      f.write(synthetic(seed, c));
      const Calibration cal = calibrate(read_results({f.path}));
      for (const Model& m : cal.models)
        for (int n = 2; n <= 64; ++n) {
          EXPECT_TRUE(non_decreasing_in_size(m, n)) << collective_info(c).name << " n=" << n;
          double prev = -1;
          std::vector<double> grid;
          for (double s = 1; s <= 64.0 * 1048576; s *= 1.05) grid.push_back(s);
          for (const Segment& seg : m.segments)
            for (double d : {-1e-6, 0.0, 1e-6})
              if (seg.s_lo + d > 0) grid.push_back(seg.s_lo + d);
          std::sort(grid.begin(), grid.end());
          for (double s : grid) {
            const double t = model_time_us(m, s, n);
            ASSERT_GE(t, prev * (1 - 1e-12)) << collective_info(c).name << " n=" << n << " S=" << s;
            prev = t;
          }
        }
    }
  }
}

TEST(CalibrateFit, SegmentCountChosenByHoldout) {
  // One regime only: the holdout must not pay for a second segment.
  std::mt19937_64 rng(11);
  std::vector<json> recs{context()};
  for (int n : {2, 4, 8})
    for (double s : sizes()) {
      const auto& info = collective_info(Collective::AllGather);
      const double t = 3.0 + 0.5 * info.ring_steps(n) + s * info.busbw_factor(n) / 5e3;
      recs.push_back(point(Collective::AllGather, n, s, noisy(t, rng), even_counts(n, s), s, s));
    }
  TempFile f("one.jsonl");
  f.write(recs);
  const Calibration cal = calibrate(read_results({f.path}));
  EXPECT_EQ(only_model(cal).segments.size(), 1u);
}

// Parameter standard errors (Segment::alpha_rel_se, bandwidth_rel_se) against known truth. On
// data sets drawn from known parameters with 3% multiplicative Gaussian noise, z = (estimate -
// truth) / SE must look like a standard normal: about 95% of |z| <= 2 and 68% of |z| <= 1. The
// bands below are loose enough for 50 data sets (fixed seeds), yet a SE 10x too small or too
// large fails them (checked on the same z values: a wrongly scaled SE cannot pass).
std::vector<double> size_grid(double lo, double hi, double step) {
  std::vector<double> v;
  for (double s = lo; s <= hi * 1.0001; s *= step) v.push_back(std::round(s / 64) * 64);
  return v;
}

struct Coverage {
  std::vector<double> z;
  double within(double k, double se_scale) const {
    int in = 0;
    for (double x : z) in += std::abs(x / se_scale) <= k;
    return double(in) / double(z.size());
  }
  // The SEs, multiplied by se_scale, are calibrated: +-2 SE covers 80-100% and +-1 SE 45-90%.
  bool calibrated(double se_scale) const {
    const double c2 = within(2, se_scale), c1 = within(1, se_scale);
    return c2 >= 0.8 && c2 <= 1.0 && c1 >= 0.45 && c1 <= 0.9;
  }
};

TEST(CalibrateFit, ParameterStandardErrorsCoverTheTruth) {
  struct Design {
    const char* name;
    std::vector<int> ns;
    std::vector<double> sizes;
    TrueSeg truth;
  };
  const std::vector<Design> designs = {
      // Three group sizes, 64 B - 4 MiB: alpha0, alpha_step and B all determined.
      {"three group sizes", {2, 4, 8}, size_grid(64, 4 << 20, 2), {20.0, 2.0, 5.0}},
      // One group size on a slow link (400 Mbit/s) from 256 KiB: alpha is 30% of the smallest
      // point's time and < 0.1% of the largest, so it trades off against B (the emulated
      // two-host case of docs/PERFORMANCE.md) and its SE is several percent.
      {"alpha a small share",
       {8},
       size_grid(256 << 10, 64 << 20, std::sqrt(2.0)),
       {2000.0, 0.0, 0.05}},
  };
  FitOptions opt;
  opt.max_segments = 1;  // one regime: the SE of that segment's fit is what is tested
  for (const Design& d : designs) {
    SCOPED_TRACE(d.name);
    Coverage alpha, bw;
    double alpha_se_sum = 0;
    for (unsigned seed = 1; seed <= 50; ++seed) {
      std::mt19937_64 rng(1000 + seed);
      std::vector<json> recs{context()};
      for (int n : d.ns)
        for (double s : d.sizes) {
          const auto& info = collective_info(Collective::AllGather);
          const double t = d.truth.a0 + d.truth.as * info.ring_steps(n) +
                           s * info.busbw_factor(n) / (d.truth.B * 1e3);
          recs.push_back(
              point(Collective::AllGather, n, s, noisy(t, rng, 0.03, 1), even_counts(n, s), s, s));
        }
      TempFile f("se.jsonl");
      f.write(recs);
      const Calibration cal = calibrate(read_results({f.path}), opt);
      const Model& m = only_model(cal);
      ASSERT_EQ(m.segments.size(), 1u);
      const Segment& s = m.segments[0];
      ASSERT_TRUE(s.alpha_rel_se && s.bandwidth_rel_se) << "seed " << seed;
      ASSERT_TRUE(std::isfinite(*s.alpha_rel_se) && *s.alpha_rel_se > 0) << *s.alpha_rel_se;
      ASSERT_TRUE(std::isfinite(*s.bandwidth_rel_se) && *s.bandwidth_rel_se > 0);
      // alpha0 and 1/B are the coefficients the fit is linear in: z in those.
      alpha.z.push_back((s.alpha_us - d.truth.a0) / (*s.alpha_rel_se * s.alpha_us));
      bw.z.push_back((1.0 - s.bandwidth_GBps / d.truth.B) / *s.bandwidth_rel_se);
      alpha_se_sum += *s.alpha_rel_se;
    }
    for (const Coverage* c : {&alpha, &bw}) {
      const char* what = c == &alpha ? "alpha" : "bandwidth";
      EXPECT_TRUE(c->calibrated(1.0))
          << what << ": +-2 SE covers " << c->within(2, 1) << ", +-1 SE " << c->within(1, 1);
      EXPECT_GE(c->within(3, 1.0), 0.96) << what;  // the truth within ~3 SE
      EXPECT_FALSE(c->calibrated(0.1)) << what << ": a SE 10x too small would pass";
      EXPECT_FALSE(c->calibrated(10.0)) << what << ": a SE 10x too large would pass";
      std::printf("%s, %s: +-1 SE covers %.2f, +-2 SE %.2f, +-3 SE %.2f\n", d.name, what,
                  c->within(1, 1), c->within(2, 1), c->within(3, 1));
    }
    std::printf("%s: mean alpha_rel_se %.3f\n", d.name, alpha_se_sum / 50);
    if (std::string(d.name) == "alpha a small share") {  // the case the gate must not over-read
      EXPECT_GT(alpha_se_sum / 50, 0.03);
    }
  }
}

// No SE where the data do not determine the parameter: a slope pinned at its floor (times that
// do not grow with S) gets no bandwidth_rel_se; an alpha0 pinned at 0 no alpha_rel_se.
TEST(CalibrateFit, ParameterStandardErrorsOmittedWhenPinned) {
  FitOptions opt;
  opt.max_segments = 1;
  const auto& info = collective_info(Collective::AllGather);
  std::vector<json> flat{context()}, no_alpha{context()};
  for (double s : size_grid(64, 4 << 20, 2)) {
    // Slightly falling with S: the unconstrained slope is negative.
    flat.push_back(point(Collective::AllGather, 4, s, one(50.0 - 0.1 * std::log2(s)),
                         even_counts(4, s), s, s));
    // Exactly a line with a negative intercept (-0.004 us): alpha0 is pinned at 0.
    no_alpha.push_back(point(Collective::AllGather, 4, s,
                             one(s * info.busbw_factor(4) / 5e3 - 0.004), even_counts(4, s), s, s));
  }
  TempFile f("pinned.jsonl");
  f.write(flat);
  const Calibration cal_flat = calibrate(read_results({f.path}), opt);
  const Segment& s_flat = only_model(cal_flat).segments.at(0);
  EXPECT_NEAR(s_flat.bandwidth_GBps, 1e6, 1e-3);  // unresolved: 1/B at its floor
  EXPECT_FALSE(s_flat.bandwidth_rel_se.has_value());
  EXPECT_TRUE(s_flat.alpha_rel_se.has_value());
  f.write(no_alpha);
  const Calibration cal_bw = calibrate(read_results({f.path}), opt);
  const Segment& s_bw = only_model(cal_bw).segments.at(0);
  EXPECT_EQ(s_bw.alpha_us, 0.0);
  EXPECT_FALSE(s_bw.alpha_rel_se.has_value());
  EXPECT_TRUE(s_bw.bandwidth_rel_se.has_value());
}

TEST(CalibrateFit, UnevenShardsPacedByLargestShard) {
  std::vector<json> recs = synthetic(21);
  // v-form points whose true time follows n x the largest shard.
  const int n = 4;
  for (double s : sizes()) {
    if (s < 64) continue;
    const std::int64_t total = std::int64_t(s);
    std::vector<std::int64_t> counts{total / 2, total / 4, total / 8, total - total / 2 - total / 4 - total / 8};
    const double eff = double(n) * double(*std::max_element(counts.begin(), counts.end()));
    recs.push_back(point(Collective::AllGather, n, s, one(truth_us(Collective::AllGather, eff, n)),
                         counts, s, eff));
  }
  TempFile f("uneven.jsonl");
  f.write(recs);
  const Calibration cal = calibrate(read_results({f.path}));
  bool seen = false;
  for (const auto& e : cal.effective_size)
    if (e.collective == Collective::AllGather) {
      seen = true;
      EXPECT_TRUE(e.measured);
      EXPECT_GT(e.points, 10);
      EXPECT_EQ(e.chosen, EffectiveSize::NTimesMax);
      EXPECT_LT(e.mape_n_max, 0.10);
      EXPECT_GT(e.mape_total, 2 * e.mape_n_max);
    }
  EXPECT_TRUE(seen);
  EXPECT_EQ(only_model(cal).effective_size, EffectiveSize::NTimesMax);
}

TEST(CalibrateFit, DtypesPooledUnlessTheyDiffer) {
  for (double slow : {1.0, 1.4}) {
    std::mt19937_64 rng(5);
    std::vector<json> recs{context()};
    for (const char* dt : {"f32", "bf16"})
      for (int n : {2, 4})
        for (double s : sizes()) {
          const double k = std::string(dt) == "bf16" ? slow : 1.0;
          const double t = truth_us(Collective::AllReduce, s, n) * k;
          recs.push_back(point(Collective::AllReduce, n, s, noisy(t, rng), even_counts(n, s), s, s, 0, dt));
        }
    TempFile f("dtype.jsonl");
    f.write(recs);
    const Calibration cal = calibrate(read_results({f.path}));
    ASSERT_EQ(cal.dtypes.size(), 1u);
    EXPECT_EQ(cal.dtypes[0].pooled, slow == 1.0) << cal.dtypes[0].detail;
    EXPECT_EQ(cal.models.size(), slow == 1.0 ? 1u : 2u);
  }
}

TEST(CalibrateFit, TransitionComposedFromSteps) {
  std::vector<json> recs = synthetic(31);
  const double b1 = 65536, b2 = 1024;
  const double t = truth_us(Collective::AllGather, b1, 4) + truth_us(Collective::AllGather, b2, 2);
  json params = {{"kind", "transition"}, {"mesh", "4x2"}, {"dtype", "f32"}, {"distribution", "chunk"},
                 {"mode", "per_iteration"}, {"size", b1}, {"from", "S(0),S(1)"}, {"to", "R,R"}};
  json plan = json::array({{{"mesh_dim", 0},
                            {"collective", "all_gather"},
                            {"from", "S(0),S(1)"},
                            {"to", "R,S(1)"},
                            {"bytes", b1},
                            {"group_size", 4},
                            {"hosts_spanned", 1},
                            {"counts", even_counts(4, b1 / 4)},
                            {"uniform", true},
                            {"elem_size", 4}},
                           {{"mesh_dim", 1},
                            {"collective", "all_gather"},
                            {"from", "R,S(1)"},
                            {"to", "R,R"},
                            {"bytes", b2},
                            {"group_size", 2},
                            {"hosts_spanned", 1},
                            {"counts", even_counts(2, b2 / 4)},
                            {"uniform", true},
                            {"elem_size", 4}},
                           {{"mesh_dim", 1},
                            {"collective", "local_slice"},
                            {"from", "R,R"},
                            {"to", "R,R"},
                            {"bytes", 0},
                            {"group_size", 2},
                            {"hosts_spanned", 1},
                            {"counts", json::array()},
                            {"uniform", true},
                            {"elem_size", 4}}});
  recs.push_back({{"type", "point"}, {"index", 999}, {"key", params.dump()}, {"point", params},
                  {"transition", {{"from", "S(0),S(1)"}, {"to", "R,R"}, {"shape", {256, 64}}, {"plan", plan}}},
                  {"group_size", 8}, {"groups", 1}, {"hosts_spanned", 1}, {"max_ranks_per_host", 8},
                  {"bytes", b1}, {"samples_s", {t * 1e-6}}, {"wrong", 0}});
  TempFile f("transition.jsonl");
  f.write(recs);
  const Calibration cal = calibrate(read_results({f.path}));
  ASSERT_EQ(cal.transitions.size(), 1u);
  EXPECT_EQ(cal.transitions[0].comm_steps, 2);
  // Steps run on 2 and 4 concurrent groups: the only model (1 group) is the nearest class.
  EXPECT_TRUE(cal.transitions[0].extrapolated);
  EXPECT_LT(std::abs(cal.transitions[0].rel_error), 0.10);
  ASSERT_TRUE(cal.composition_mape.has_value());
}

// Copy cost: transitions made of local steps only measure it; it is adopted when it predicts
// the transitions with communication (whose all_gather steps unpack) clearly better
// than the built-in 0.1 ns/B. `copy_ns` is what copies really cost in the synthetic world,
// `local_ns` what the local-only transitions show (they differ when slices run from cache).
std::vector<json> with_copy_transitions(double copy_ns, double local_ns, double fixed_us = 0.2) {
  std::vector<json> recs = synthetic(41);
  int index = 5000;
  auto record = [&](const json& plan, double bytes, double us, const char* from, const char* to) {
    json params = {{"kind", "transition"}, {"mesh", "8"}, {"dtype", "f32"}, {"distribution", "chunk"},
                   {"mode", "per_iteration"}, {"size", bytes}, {"from", from}, {"to", to}};
    recs.push_back({{"type", "point"}, {"index", index++}, {"key", params.dump()}, {"point", params},
                    {"transition", {{"from", from}, {"to", to}, {"shape", {int(bytes / 4)}}, {"plan", plan}}},
                    {"group_size", 8}, {"groups", 1}, {"hosts_spanned", 1}, {"max_ranks_per_host", 8},
                    {"bytes", bytes}, {"samples_s", {us * 1e-6}}, {"wrong", 0}});
  };
  for (double b : {65536.0, 262144.0, 1048576.0, 4194304.0}) {
    // S(1) -> R on mesh 8: one all_gather that unpacks its whole output (b bytes).
    json gather = {{"mesh_dim", 0}, {"collective", "all_gather"}, {"from", "S(1)"}, {"to", "R"},
                   {"bytes", b}, {"group_size", 8}, {"hosts_spanned", 1},
                   {"counts", even_counts(8, b / 4)}, {"uniform", true}, {"elem_size", 4},
                   {"max_copy_bytes", b}, {"max_out_bytes", b}};
    record(json::array({gather}), b, truth_us(Collective::AllGather, b, 8) + b * copy_ns * 1e-3, "S(1)", "R");
    // R -> S(1): a local slice writing b / 8 bytes, plus a fixed 0.2 us.
    json slice = {{"mesh_dim", 0}, {"collective", "local_slice"}, {"from", "R"}, {"to", "S(1)"},
                  {"bytes", 0}, {"group_size", 8}, {"hosts_spanned", 1}, {"counts", json::array()},
                  {"uniform", true}, {"elem_size", 4}, {"max_copy_bytes", 0}, {"max_out_bytes", b / 8}};
    record(json::array({slice}), b, fixed_us + b / 8 * local_ns * 1e-3, "R", "S(1)");
  }
  return recs;
}

TEST(CalibrateFit, CopyCostFittedFromLocalOnlyTransitionsAndAdopted) {
  TempFile f("copy_free.jsonl");
  f.write(with_copy_transitions(/*copy_ns=*/0.0, /*local_ns=*/0.0));  // copies are free
  const auto rs = read_results({f.path});
  const Calibration cal = calibrate(rs);
  const auto& lc = cal.local_copy;
  EXPECT_EQ(lc.transitions, 4);
  ASSERT_TRUE(lc.fitted);
  EXPECT_NEAR(lc.ns_per_byte, 0.0, 1e-9);
  EXPECT_NEAR(lc.alpha_us, 0.2, 1e-6);
  EXPECT_NEAR(lc.default_ns_per_byte, 0.1, 1e-12);
  ASSERT_TRUE(lc.used);  // the built-in 0.1 ns/B overprices every all_to_all's copies
  ASSERT_TRUE(lc.composition_mape_default && lc.composition_mape_fitted);
  EXPECT_LT(*lc.composition_mape_fitted, 0.8 * *lc.composition_mape_default);
  EXPECT_EQ(cal.composition_mape, lc.composition_mape_fitted);
  const shardcal::calib::Profile p = make_profile(rs, cal, "copy");
  ASSERT_TRUE(p.local_copy.has_value());
  EXPECT_EQ(p.local_copy->ns_per_byte, 0.0);
  EXPECT_EQ(p.local_copy->transitions, 4);
}

TEST(CalibrateFit, CopyCostRecoveredWhenItCosts) {
  TempFile f("copy_costs.jsonl");
  f.write(with_copy_transitions(/*copy_ns=*/0.5, /*local_ns=*/0.5));  // 2 GB/s, slower than built in
  const Calibration cal = calibrate(read_results({f.path}));
  ASSERT_TRUE(cal.local_copy.fitted);
  EXPECT_NEAR(cal.local_copy.ns_per_byte, 0.5, 1e-6);
  EXPECT_TRUE(cal.local_copy.used);
}

TEST(CalibrateFit, CopyCostNotAdoptedWhenTransitionsDisagree) {
  // Slices look 5x cheaper than the packs around collectives really are (cache vs DRAM): the
  // fit is reported but the profile keeps the built-in value, which predicts better.
  TempFile f("copy_cache.jsonl");
  f.write(with_copy_transitions(/*copy_ns=*/0.1, /*local_ns=*/0.02));
  const auto rs = read_results({f.path});
  const Calibration cal = calibrate(rs);
  ASSERT_TRUE(cal.local_copy.fitted);
  EXPECT_NEAR(cal.local_copy.ns_per_byte, 0.02, 1e-6);
  EXPECT_FALSE(cal.local_copy.used);
  EXPECT_EQ(cal.composition_mape, cal.local_copy.composition_mape_default);
  EXPECT_FALSE(make_profile(rs, cal, "x").local_copy.has_value());
}

TEST(CalibrateFit, CopyCostFromZeroTimeLocalSteps) {
  // SMPI without computation: local-only transitions take 0 s (a measurement, not a failure).
  TempFile f("copy_zero.jsonl");
  f.write(with_copy_transitions(/*copy_ns=*/0.0, /*local_ns=*/0.0, /*fixed_us=*/0.0));
  const auto rs = read_results({f.path});
  EXPECT_EQ(rs.skipped_failed, 0);
  const Calibration cal = calibrate(rs);
  EXPECT_EQ(cal.local_copy.transitions, 4);
  EXPECT_TRUE(cal.local_copy.used);
  EXPECT_EQ(cal.local_copy.ns_per_byte, 0.0);
  EXPECT_EQ(cal.local_copy.se_ns_per_byte, 0.0);
}

TEST(CalibrateFit, ZeroSampleOfACommunicatingTransitionIsSkipped) {
  std::vector<json> recs = with_copy_transitions(0.0, 0.0);
  for (json& r : recs)
    if (r.contains("point") && r["point"].value("from", "") == "S(1)") r["samples_s"] = {0.0};
  TempFile f("copy_zero_comm.jsonl");
  f.write(recs);
  const auto rs = read_results({f.path});
  EXPECT_EQ(rs.skipped_failed, 4);
  ASSERT_FALSE(rs.skipped.empty());
  EXPECT_NE(rs.skipped.back().reason.find("zero sample of a transition that communicates"), std::string::npos);
}

TEST(CalibrateFit, CopyCostClampedOrUncertainIsNotAdopted) {
  {  // slices get faster with size: a negative slope, clamped at 0, not adopted
    std::vector<json> recs = with_copy_transitions(0.0, 0.0);
    int k = 0;
    for (json& r : recs)
      if (r.contains("point") && r["point"].value("from", "") == "R") r["samples_s"] = {(10.0 - k++) * 1e-6};
    TempFile f("copy_negative.jsonl");
    f.write(recs);
    const Calibration cal = calibrate(read_results({f.path}));
    ASSERT_TRUE(cal.local_copy.fitted);
    EXPECT_TRUE(cal.local_copy.clamped);
    EXPECT_EQ(cal.local_copy.ns_per_byte, 0.0);
    EXPECT_FALSE(cal.local_copy.used);
    EXPECT_NE(cal.local_copy.why.find("clamped"), std::string::npos);
  }
  {  // noise much larger than the slope: SE above half the value, not adopted
    std::vector<json> recs = with_copy_transitions(0.0, 0.001);
    int k = 0;
    for (json& r : recs)
      if (r.contains("point") && r["point"].value("from", "") == "R")
        r["samples_s"] = {r["samples_s"][0].get<double>() + ((k++ % 2) ? 40e-6 : 0.0)};
    TempFile f("copy_noisy.jsonl");
    f.write(recs);
    const Calibration cal = calibrate(read_results({f.path}));
    ASSERT_TRUE(cal.local_copy.fitted);
    EXPECT_GT(cal.local_copy.se_ns_per_byte, 0.5 * cal.local_copy.ns_per_byte);
    EXPECT_FALSE(cal.local_copy.used);
  }
}

TEST(CalibrateFit, CopyCostNeedsLocalOnlyTransitions) {
  TempFile f("copy_none.jsonl");
  std::vector<json> recs = with_copy_transitions(0.0, 0.0);
  recs.erase(std::remove_if(recs.begin(), recs.end(),
                            [](const json& r) { return r.contains("point") && r["point"].value("from", "") == "R"; }),
             recs.end());
  f.write(recs);
  const Calibration cal = calibrate(read_results({f.path}));
  EXPECT_EQ(cal.local_copy.transitions, 0);
  EXPECT_FALSE(cal.local_copy.fitted);
  EXPECT_FALSE(cal.local_copy.used);
  ASSERT_TRUE(cal.composition_mape.has_value());  // priced at the built-in value
}

// An uneven step is priced by the model's effective-size rule from the step's
// counts (n x the largest shard here), not by its total bytes.
TEST(CalibrateFit, UnevenTransitionStepPricedByEffectiveSize) {
  std::vector<json> recs = synthetic(33);
  const int n = 4;
  for (double s : sizes()) {  // uneven points: the fitter learns n_times_max
    if (s < 64) continue;
    const std::int64_t total = std::int64_t(s);
    std::vector<std::int64_t> counts{total / 2, total / 4, total / 8,
                                     total - total / 2 - total / 4 - total / 8};
    const double eff = double(n) * double(*std::max_element(counts.begin(), counts.end()));
    recs.push_back(point(Collective::AllGather, n, s, one(truth_us(Collective::AllGather, eff, n)),
                         counts, s, eff));
  }
  // One all_gather step, all of 1 MiB (f32) on position 0: S = 1 MiB, S_eff = 4 MiB.
  const std::vector<std::int64_t> counts{262144, 0, 0, 0};
  const double bytes = 1048576, eff = 4.0 * 1048576;
  const double t = truth_us(Collective::AllGather, eff, n);
  json params = {{"kind", "transition"},    {"mesh", "4"},
                 {"dtype", "f32"},          {"distribution", "chunk"},
                 {"mode", "per_iteration"}, {"size", bytes},
                 {"from", "S(0)[1,0,0,0]"}, {"to", "R"}};
  json plan = json::array({{{"mesh_dim", 0},
                            {"collective", "all_gather"},
                            {"from", "S(0)"},
                            {"to", "R"},
                            {"bytes", bytes},
                            {"group_size", n},
                            {"hosts_spanned", 1},
                            {"counts", counts},
                            {"uniform", false},
                            {"elem_size", 4}}});
  recs.push_back(
      {{"type", "point"},
       {"index", 998},
       {"key", params.dump()},
       {"point", params},
       {"transition", {{"from", "S(0)"}, {"to", "R"}, {"shape", {1024, 256}}, {"plan", plan}}},
       {"group_size", n},
       {"groups", 1},
       {"hosts_spanned", 1},
       {"max_ranks_per_host", n},
       {"bytes", bytes},
       {"samples_s", {t * 1e-6}},
       {"wrong", 0}});
  TempFile f("uneven_transition.jsonl");
  f.write(recs);
  const ResultSet rs = read_results({f.path});
  ASSERT_EQ(rs.transitions.size(), 1u);
  ASSERT_EQ(rs.transitions[0].steps.size(), 1u);
  EXPECT_EQ(rs.transitions[0].steps[0].counts, counts);
  EXPECT_FALSE(rs.transitions[0].steps[0].uniform);
  EXPECT_EQ(rs.transitions[0].steps[0].elem_size, 4);
  const Calibration cal = calibrate(rs);
  ASSERT_EQ(only_model(cal).effective_size, EffectiveSize::NTimesMax);
  ASSERT_EQ(cal.transitions.size(), 1u);
  // Priced at the total (1 MiB) it would be ~64% low.
  EXPECT_LT(std::abs(cal.transitions[0].rel_error), 0.05)
      << cal.transitions[0].predicted_us << " vs " << cal.transitions[0].measured_us;
}

// The fitted piecewise model never decreases in S for ANY group size: n = 1
// (time = alpha0 only) and n far beyond the measured ones, also when the earlier segment has
// the larger alpha_step or alpha0.
TEST(CalibrateFit, MonotoneForEveryGroupSize) {
  struct Case {
    TrueSeg small, large;
  };
  for (const Case& k : {Case{{5.0, 4.0, 1.0}, {40.0, 1.0, 10.0}},  // alpha_step drops at the break
                        Case{{12.0, 0.5, 10.0}, {10.0, 5.0, 2.0}}}) {  // alpha0 drops (n = 1 only)
    std::mt19937_64 rng(17);
    std::vector<json> recs{context()};
    for (int n : {2, 4, 8})
      for (double s : sizes()) {
        const TrueSeg& t = s < kBreak ? k.small : k.large;
        const auto& info = collective_info(Collective::AllGather);
        const double y = t.a0 + t.as * info.ring_steps(n) + s * info.busbw_factor(n) / (t.B * 1e3);
        recs.push_back(
            point(Collective::AllGather, n, s, noisy(y, rng, 0.01), even_counts(n, s), s, s));
      }
    TempFile f("mono_all_n.jsonl");
    f.write(recs);
    // The first case's truth falls across the break for n = 8 and rises for n = 2: no model is
    // both monotone and on the data, and one segment holds out about as well as two. Two are
    // taken whenever they hold out better at all, so that the monotone step is what is tested.
    FitOptions opt;
    opt.more_segments_gain = 0;
    const Calibration cal = calibrate(read_results({f.path}), opt);
    const Model& m = only_model(cal);
    EXPECT_GE(m.segments.size(), 2u) << k.small.a0;
    for (int n : {1, 2, 3, 8, 64, 65, 129, 1000, 100000, 1 << 24})
      EXPECT_TRUE(non_decreasing_in_size(m, n))
          << "n=" << n << " a_step " << m.segments[0].alpha_step_us << " -> "
          << m.segments.back().alpha_step_us;
  }
}

// Groups that share a link sharing it more as messages grow (small flows barely overlap, large
// ones share the link for their whole length): the time is the larger of two lines, the later one
// slower with a SMALLER intercept (measured on the simulated 64-rank cluster, docs/PERFORMANCE.md
// "64 simulated ranks: a group of one rank"). A group of one rank is priced at the first
// segment's alpha at every size, so the later segment's alpha is not raised to the first's: every
// measured size within 2% (before: the later segment shifted up by the first's alpha, +17% just
// after the break), and the model still never decreases in S for any group size.
TEST(CalibrateFit, LaterSegmentMayStartBelowTheFirstsAlpha) {
  std::mt19937_64 rng(23);
  std::vector<json> recs{context()};
  const TrueSeg fast{8.0, 0.0, 4.65}, slow{0.0, 0.0, 3.1};
  const auto& info = collective_info(Collective::AllGather);
  std::vector<double> ss;
  for (double s = 16384; s <= 4 * 1048576; s *= 2) ss.push_back(s);
  auto truth = [&](double s) {
    const double sf = s * info.busbw_factor(2);
    return std::max(fast.a0 + sf / (fast.B * 1e3), slow.a0 + sf / (slow.B * 1e3));
  };
  for (double s : ss)
    recs.push_back(point(Collective::AllGather, 2, s, noisy(truth(s), rng, 0.002), even_counts(2, s), s, s));
  TempFile f("alpha_drop.jsonl");
  f.write(recs);
  const Calibration cal = calibrate(read_results({f.path}));
  const Model& m = only_model(cal);
  ASSERT_GE(m.segments.size(), 2u);
  EXPECT_LT(m.segments.back().alpha_us, m.segments.front().alpha_us);
  for (double s : ss)
    EXPECT_NEAR(model_time_us(m, s, 2) / truth(s), 1.0, 0.02) << "S=" << s;
  for (int n : {1, 2, 3, 8, 64, 1 << 24}) EXPECT_TRUE(non_decreasing_in_size(m, n)) << "n=" << n;
  for (std::size_t k = 0; k < m.segments.size(); ++k)
    EXPECT_EQ(segment_time_us(m, k, 1, 1e9), m.segments.front().alpha_us);
}

// An algorithm switch that makes the next size faster (a library's selector changing algorithm;
// on the simulated cluster scatter inside a host falls from 9.6 to 7.1 us at 128 KiB): where every
// measured group size's time falls across the gap, the boundary keeps the drop and every measured
// size is priced within 2 %; a monotone model would raise the later segment by the drop.
TEST(CalibrateFit, FollowsATimeDropEveryClassShows) {
  std::mt19937_64 rng(29);
  std::vector<json> recs{context()};
  const TrueSeg before{9.0, 0.0, 50.0}, after{5.0, 0.0, 20.0};
  for (int n : {2, 4, 8})
    for (double s : sizes()) {
      const double y = two_regime_us(Collective::AllGather, s, n, before, after, kBreak);
      recs.push_back(point(Collective::AllGather, n, s, noisy(y, rng, 0.002), even_counts(n, s), s, s));
    }
  TempFile f("drop.jsonl");
  f.write(recs);
  const Calibration cal = calibrate(read_results({f.path}));
  const Model& m = only_model(cal);
  ASSERT_GE(m.segments.size(), 2u);
  for (int n : {2, 4, 8}) {
    for (double s : sizes())
      EXPECT_NEAR(model_time_us(m, s, n) / two_regime_us(Collective::AllGather, s, n, before, after, kBreak),
                  1.0, 0.02) << "n=" << n << " S=" << s;
    EXPECT_LT(model_time_us(m, kBreak, n), model_time_us(m, kBreak / 2, n)) << "n=" << n;
  }
  // Group sizes not measured fall across the gap by no more than the largest measured drop.
  double r_min = 1;
  for (int n : {2, 4, 8})
    r_min = std::min(r_min, two_regime_us(Collective::AllGather, kBreak, n, before, after, kBreak) /
                                two_regime_us(Collective::AllGather, kBreak / 2, n, before, after, kBreak));
  for (int n : {3, 16, 64, 1000, 1 << 20})
    EXPECT_GE(model_time_us(m, kBreak, n), 0.99 * r_min * model_time_us(m, kBreak / 2, n)) << "n=" << n;
}

// One slow point (a daemon waking for a whole point, 3x) at the end of a regime is not a drop:
// the truth only rises (kSmall -> kLarge jumps up at kBreak), so the model stays non-decreasing
// for every group size from the measured one up wherever the outlier sits.
TEST(CalibrateFit, OneSlowPointIsNotADrop) {
  for (double slow_at : {131072.0, 262144.0})
    for (unsigned seed : {31u, 32u, 33u}) {
      std::mt19937_64 rng(seed);
      std::vector<json> recs{context()};
      for (double s : sizes()) {
        const double y = truth_us(Collective::AllGather, s, 8) * (s == slow_at ? 3.0 : 1.0);
        recs.push_back(point(Collective::AllGather, 8, s, noisy(y, rng), even_counts(8, s), s, s));
      }
      TempFile f("slow_point.jsonl");
      f.write(recs);
      const Calibration cal = calibrate(read_results({f.path}));
      const Model& m = only_model(cal);
      for (int n : {1, 8, 9, 64, 1 << 24})  // from the measured group size up (n = 8)
        EXPECT_TRUE(non_decreasing_in_size(m, n)) << "slow at " << slow_at << " seed " << seed << " n=" << n;
    }
}

// Sizes as the 64-rank calibration samples them: four per octave, 16 KiB .. 4 MiB (33 sizes).
std::vector<double> quarter_octaves() {
  std::vector<double> v;
  for (double p = 16384; p <= 4 * 1048576; p *= 2)
    for (double q : {4.0, 5.0, 6.0, 7.0})
      if (p * q / 4 <= 4 * 1048576) v.push_back(p * q / 4);
  return v;
}

// Near-exact all_gather points of group size n (0.2 % noise, as on the simulated cluster) at
// sizes ss, timed truth(s); and the results file they make, read back.
void add_exact_points(std::vector<json>& recs, int n, const std::vector<double>& ss,
                      const std::function<double(double)>& truth, std::mt19937_64& rng) {
  for (double s : ss)
    recs.push_back(point(Collective::AllGather, n, s, noisy(truth(s), rng, 0.002), even_counts(n, s), s, s));
}
ResultSet results_of(const std::vector<json>& recs, const std::string& name) {
  TempFile f(name);
  f.write(recs);
  return read_results({f.path});
}

// A time jump between two measured sizes (an algorithm switch) sits somewhere in the gap the
// data cannot see into. Every switch of the simulated 64-rank cluster (24 of 24) was at a power
// of two, "from 2^k bytes up": the boundary goes to the power of two inside the gap, so a
// held-out size on either side of the jump is priced by its own regime. With the gap's
// geometric middle instead, the sizes next to the jump are priced by the other regime in the
// k-fold holdout (x5 here: holdout MAPE ~17 % on the simulated all_gather this mimics).
TEST(CalibrateFit, AJumpsBoundaryGoesToThePowerOfTwoInTheGap) {
  const TrueSeg before{15.0, 0.0, 4.0}, after{100.0, 0.0, 4.0};
  for (double jump : {2097152.0, 3145728.0}) {  // a power of two; 3 MiB, a measured size that is not
    std::mt19937_64 rng(37);
    std::vector<json> recs{context()};
    add_exact_points(recs, 32, quarter_octaves(), [&](double s) {
      return two_regime_us(Collective::AllGather, s, 32, before, after, jump);
    }, rng);
    const Calibration cal = calibrate(results_of(recs, "jump.jsonl"));
    const Model& m = only_model(cal);
    ASSERT_EQ(m.segments.size(), 2u) << "jump at " << jump;
    if (jump == 2097152.0) {
      EXPECT_EQ(m.segments[1].s_lo, jump);
      ASSERT_TRUE(m.quality.holdout_mape.has_value());
      EXPECT_LT(*m.quality.holdout_mape, 0.01);
    } else {  // no power of two between 2.5 and 3 MiB: the geometric middle, as before
      EXPECT_DOUBLE_EQ(m.segments[1].s_lo, std::sqrt(2621440.0 * jump));
    }
    for (double s : quarter_octaves())
      EXPECT_NEAR(model_time_us(m, s, 32) /
                      two_regime_us(Collective::AllGather, s, 32, before, after, jump),
                  1.0, 0.02) << "S=" << s;
  }
}

// A model measured at one group size (16) whose later segment's line meets the axis below the
// first's (a flat regime, then the bandwidth term takes over: the time is the larger of two
// lines, continuous at n = 16). Extrapolated to a smaller group (n = 2, f(n) halves the
// bandwidth term) the later segment would start below the flat one; raising it for that
// unmeasured n moved every measured price after the boundary (+3 us, up to 20 %). Monotonicity is
// guaranteed from the smallest measured group size up; the measured prices stay on the data.
TEST(CalibrateFit, SmallerUnmeasuredGroupsDoNotMoveMeasuredPrices) {
  const TrueSeg flat{12.4, 0.0, 1e4}, sloped{5.5, 0.0, 6.0};  // lines cross at 44 KiB
  const auto& info = collective_info(Collective::AllGather);
  auto truth = [&](double s) {
    const double f = s * info.busbw_factor(16);
    return std::max(flat.a0 + f / (flat.B * 1e3), sloped.a0 + f / (sloped.B * 1e3));
  };
  std::mt19937_64 rng(41);
  std::vector<json> recs{context()};
  add_exact_points(recs, 16, quarter_octaves(), truth, rng);
  const ResultSet rs = results_of(recs, "flat_then_slope.jsonl");
  const Calibration cal = calibrate(rs);
  const Model& m = only_model(cal);
  ASSERT_GE(m.segments.size(), 2u);
  for (double s : quarter_octaves()) EXPECT_NEAR(model_time_us(m, s, 16) / truth(s), 1.0, 0.02) << "S=" << s;
  for (int n : {1, 16, 17, 64, 1000, 1 << 24}) EXPECT_TRUE(non_decreasing_in_size(m, n)) << "n=" << n;
  // A smaller group is an extrapolation, and the planner is told so.
  const Profile prof = parse_profile(profile_to_json(make_profile(rs, cal, "synthetic")), "test");
  const Prediction small = predict(prof, Collective::AllGather, LinkClass{2, 1, 2, 1}, 65536);
  EXPECT_TRUE(small.extrapolated);
  EXPECT_NE(small.note.find("group size 2 outside the measured range"), std::string::npos) << small.note;
  EXPECT_FALSE(predict(prof, Collective::AllGather, LinkClass{16, 1, 16, 1}, 65536).extrapolated);
}

// A knee where the later line is the steeper one and starts lower (latency-bound, then
// bandwidth-bound; continuous): the boundary is where the lines cross, inside the gap, even when
// a power of two lies in the same gap; every size, measured or not, within 2 %.
TEST(CalibrateFit, AKneeKeepsItsCrossingWhereTheLaterLineIsSteeper) {
  const TrueSeg flat{20.0, 0.0, 1e4}, steep{2.0, 0.0, 4.0};
  const auto& info = collective_info(Collective::AllGather);
  auto truth = [&](double s) {
    const double f = s * info.busbw_factor(8);
    return std::max(flat.a0 + f / (flat.B * 1e3), steep.a0 + f / (steep.B * 1e3));
  };
  // The lines cross at (20 - 2) * 4e3 / (7/8) = 82286 B, inside the gap (65536, 131072] of
  // this power-of-two grid, which also holds the power of two 131072: the crossing wins (the
  // first rule looked for crossings only where the later line is the flatter: the power of two,
  // 131072).
  std::vector<double> ss;
  for (double x = 4096; x <= 4 * 1048576; x *= 2) ss.push_back(x);
  std::mt19937_64 rng(43);
  std::vector<json> recs{context()};
  add_exact_points(recs, 8, ss, truth, rng);
  const Calibration cal = calibrate(results_of(recs, "knee.jsonl"));
  const Model& m = only_model(cal);
  ASSERT_GE(m.segments.size(), 2u);
  EXPECT_NEAR(m.segments[1].s_lo / 82286.0, 1.0, 0.03);
  for (double s = 4096; s <= 4 * 1048576; s *= 1.25)
    EXPECT_NEAR(model_time_us(m, s, 8) / truth(s), 1.0, 0.02) << "S=" << s;
}

// The same knee measured at two group sizes, n = 64 on a denser grid than n = 8: the lines cross
// at 73143 B for n = 64 and 82286 B for n = 8. A boundary at n = 64's crossing (the most-measured
// size, the first rule) leaves n = 8's later line below its earlier one there, and the monotone
// step raised it: n = 8 priced 8 % high after the knee. The boundary takes the crossing that
// keeps every measured group size monotone (here n = 8's), and both stay on their data.
TEST(CalibrateFit, PooledKneeStaysOnEveryMeasuredGroupSize) {
  const TrueSeg flat{20.0, 0.0, 1e4}, steep{2.0, 0.0, 4.0};
  const auto& info = collective_info(Collective::AllGather);
  auto truth = [&](double s, int n) {
    const double f = s * info.busbw_factor(n);
    return std::max(flat.a0 + f / (flat.B * 1e3), steep.a0 + f / (steep.B * 1e3));
  };
  std::map<int, std::vector<double>> grid;
  for (double x = 4096; x <= 4 * 1048576; x *= 2) {
    grid[8].push_back(x);
    grid[64].push_back(x);
    if (x < 4 * 1048576) grid[64].push_back(1.5 * x);
  }
  std::mt19937_64 rng(53);
  std::vector<json> recs{context()};
  for (const auto& [n, ss] : grid)
    add_exact_points(recs, n, ss, [&, n = n](double s) { return truth(s, n); }, rng);
  const Calibration cal = calibrate(results_of(recs, "pooled_knee.jsonl"));
  const Model& m = only_model(cal);
  ASSERT_EQ(m.group_sizes, (std::vector<int>{8, 64}));
  for (const auto& [n, ss] : grid)
    for (double s : ss)
      EXPECT_NEAR(model_time_us(m, s, n) / truth(s, n), 1.0, 0.02) << "n=" << n << " S=" << s;
}

// Four regimes (jumps at 64 KiB, 512 KiB and 2 MiB): four segments, each boundary at its power
// of two; with the power-of-two rule off, the boundaries are the gaps' geometric middles.
TEST(CalibrateFit, FourRegimesFourSegments) {
  const TrueSeg r0{10.0, 0.0, 5.0}, r1{30.0, 0.0, 6.0}, r2{80.0, 0.0, 7.0}, r3{200.0, 0.0, 8.0};
  auto truth = [&](double s) {
    const TrueSeg& t = s < 65536 ? r0 : s < 524288 ? r1 : s < 2097152 ? r2 : r3;
    return two_regime_us(Collective::AllGather, s, 8, t, t, 0);
  };
  std::mt19937_64 rng(47);
  std::vector<json> recs{context()};
  add_exact_points(recs, 8, quarter_octaves(), truth, rng);
  const ResultSet rs = results_of(recs, "four.jsonl");
  const double at_pow2[3] = {65536, 524288, 2097152};
  const double middles[3] = {std::sqrt(57344.0 * 65536), std::sqrt(458752.0 * 524288),
                             std::sqrt(1835008.0 * 2097152)};
  {
    const Calibration cal = calibrate(rs);
    const Model& m = only_model(cal);
    ASSERT_EQ(m.segments.size(), 4u) << quality_report(rs, cal);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(m.segments[std::size_t(k) + 1].s_lo, at_pow2[k]);
    ASSERT_TRUE(m.quality.holdout_mape.has_value());
    EXPECT_LT(*m.quality.holdout_mape, 0.01);
  }
  // The rule off: boundaries at the middles (and, held-out sizes beside the jumps then being
  // priced on the wrong line, a 4th segment does not pay in the holdout: 3 here, 7.9 %).
  FitOptions opt;
  opt.boundary_at_power_of_two = false;
  const Calibration cal = calibrate(rs, opt);
  const Model& m = only_model(cal);
  ASSERT_GE(m.segments.size(), 2u);
  for (std::size_t k = 1; k < m.segments.size(); ++k)
    EXPECT_TRUE(m.segments[k].s_lo == middles[0] || m.segments[k].s_lo == middles[1] ||
                m.segments[k].s_lo == middles[2])
        << m.segments[k].s_lo;
}

// Only the sweep results format this calibrator understands is read.
TEST(CalibrateFit, RefusesOtherResultsFormats) {
  auto message = [](json ctx) {
    std::vector<json> recs = synthetic(71);
    recs[0] = std::move(ctx);
    TempFile f("format.jsonl");
    f.write(recs);
    try {
      read_results({f.path});
    } catch (const shardcal::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  json c = context();
  EXPECT_EQ(message(c), "");
  c["version"] = 1;
  EXPECT_NE(message(c).find("version 1 is too old"), std::string::npos) << message(c);
  c["version"] = 3;
  EXPECT_NE(message(c).find("version 3 is unknown"), std::string::npos) << message(c);
  c.erase("version");
  EXPECT_NE(message(c).find("version is missing"), std::string::npos) << message(c);
  c = context();
  c["schema"] = "shardcal.profile";
  EXPECT_NE(message(c).find("schema"), std::string::npos) << message(c);
  c.erase("schema");
  EXPECT_NE(message(c).find("schema is missing"), std::string::npos) << message(c);
}

TEST(CalibrateFit, ExcludesWrongPointsAndCountsThem) {
  std::vector<json> recs = synthetic(41);
  recs[3]["wrong"] = 7;
  recs[4]["samples_s"] = json::array();
  TempFile f("wrong.jsonl");
  f.write(recs);
  const ResultSet rs = read_results({f.path});
  EXPECT_EQ(rs.skipped_wrong, 1);
  EXPECT_EQ(rs.skipped_failed, 1);
  EXPECT_EQ(rs.point_records, int(recs.size()) - 1);
  EXPECT_EQ(rs.files.at(0).sha256.size(), 64u);
}

TEST(CalibrateFit, FewSizesNotFitted) {
  std::vector<json> recs{context()};
  for (double s : {8.0, 64.0, 512.0})
    recs.push_back(point(Collective::Broadcast, 4, s, one(truth_us(Collective::Broadcast, s, 4)),
                         even_counts(4, s), s, s));
  for (json& r : synthetic(51)) if (r["type"] == "point") recs.push_back(r);
  TempFile f("few.jsonl");
  f.write(recs);
  const Calibration cal = calibrate(read_results({f.path}));
  ASSERT_EQ(cal.unfitted.size(), 1u);
  EXPECT_EQ(cal.unfitted[0].collective, Collective::Broadcast);
  EXPECT_EQ(cal.unfitted[0].sizes, 3);
}

TEST(CalibrateFit, BadInputsThrowClearErrors) {
  TempFile empty("empty.jsonl");
  empty.write({});
  EXPECT_THROW(
      {
        try {
          read_results({empty.path});
        } catch (const shardcal::Error& e) {
          EXPECT_NE(std::string(e.what()).find("no context record"), std::string::npos) << e.what();
          throw;
        }
      },
      shardcal::Error);
  std::vector<json> recs = synthetic(61);
  for (json& r : recs)
    if (r["type"] == "point") r["wrong"] = 1;
  TempFile wrong("allwrong.jsonl");
  wrong.write(recs);
  try {
    calibrate(read_results({wrong.path}));
    ADD_FAILURE() << "only wrong points must not calibrate";
  } catch (const shardcal::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no usable point"), std::string::npos) << e.what();
  }
  TempFile a("a.jsonl"), b("b.jsonl");
  a.write(synthetic(62));
  std::vector<json> other = synthetic(63);
  other[0]["backend"] = "mpi";
  b.write(other);
  try {
    read_results({a.path, b.path});
    ADD_FAILURE() << "mixed backends must be refused";
  } catch (const shardcal::Error& e) {
    EXPECT_NE(std::string(e.what()).find("differs"), std::string::npos) << e.what();
  }
}

// An NCCL sweep's models lean below the measured sizes (Model::channel_ramp, cost_model.cpp),
// set by the fitter (so the leave-one-size-out holdout prices its smallest size as predict will)
// and by the profile's reader; other backends' do not. The same data under both backends: the
// holdouts differ only through that smallest size, and predict's price below the sweep with them.
TEST(CalibrateFit, NcclModelsLeanBelowTheMeasuredSizes) {
  std::vector<json> recs;
  for (const json& r : synthetic(71))
    if (r.value("type", "") != "point" || r["bytes"].get<double>() >= 65536) recs.push_back(r);
  double hold[2] = {0, 0}, below[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    recs[0]["backend"] = k ? "nccl" : "sim";
    TempFile f(k ? "nccl.jsonl" : "sim.jsonl");
    f.write(recs);
    const ResultSet rs = read_results({f.path});
    const Calibration cal = calibrate(rs);
    const Model& m = only_model(cal);
    EXPECT_EQ(m.channel_ramp, k == 1);
    ASSERT_TRUE(m.quality.leave_size_out_mape.has_value());
    hold[k] = *m.quality.leave_size_out_mape;
    const Profile prof = parse_profile(profile_to_json(make_profile(rs, cal, "synthetic")), "test");
    ASSERT_EQ(prof.models.size(), 1u);
    EXPECT_EQ(prof.models[0].channel_ramp, k == 1);
    below[k] = predict(prof, Collective::AllGather, LinkClass{8, 1, 8, 1}, 1024.0).time_us;
  }
  EXPECT_NE(hold[0], hold[1]);
  EXPECT_LT(below[1], below[0]);  // leaning from the backbone's floor towards the line
}

}  // namespace

// Real GPU curves bend where alpha + S/B lines cannot (a soft protocol knee: the bandwidth
// grows smoothly with the message; a bump where two protocols overlap). The measured curve over
// the backbone prices every measured size as measured and the sizes between from the backbone's
// shape: on held-out sizes (every other size of a half-octave grid left out of the fit) it beats
// the backbone alone, is no worse than log-log interpolation, and its 95 % intervals cover them.
TEST(CalibrateFit, MeasuredCurveBeatsTheBackboneAcrossASoftKnee) {
  auto truth = [](double s) {  // 12 us + S / B(S), B rising smoothly to 80 GB/s; a 15 % bump
    const double b = 80.0 * s / (s + 262144.0);
    const double x = std::log2(s) - 18.0;
    return (12.0 + s / (b * 1e3)) * (1.0 + 0.15 * std::exp(-x * x / 2.0));
  };
  std::vector<double> all;
  for (double s = 1024; s <= 64.0 * 1048576; s *= std::sqrt(2.0)) all.push_back(std::round(s));
  std::vector<double> train, held;
  for (std::size_t i = 0; i < all.size(); ++i) (i % 2 == 0 || i + 1 == all.size() ? train : held).push_back(all[i]);
  std::mt19937_64 rng(11);
  std::vector<json> recs{context()};
  for (double s : train)
    recs.push_back(point(Collective::AllGather, 8, s, noisy(truth(s), rng, 0.01, 5), even_counts(8, s), s, s));
  const Calibration cal = calibrate(results_of(recs, "soft_knee.jsonl"));
  const Model& m = only_model(cal);
  ASSERT_EQ(m.curves.size(), 1u);
  EXPECT_EQ(m.curves[0].bytes.size(), train.size());
  Profile p;
  p.cluster = "t";
  p.models = {m};
  std::vector<double> e_curve, e_backbone, e_ruler;
  int covered = 0;
  for (double s : held) {
    const Prediction pr = predict(p, Collective::AllGather, LinkClass{8, 1, 8, 1}, s);
    const double t = truth(s);
    e_curve.push_back(std::abs(pr.time_us / t - 1));
    e_backbone.push_back(std::abs(model_time_us(m, s, 8) / t - 1));
    const auto hi = std::upper_bound(train.begin(), train.end(), s);
    const double a = *(hi - 1), b = *hi;
    const double w = std::log(s / a) / std::log(b / a);
    e_ruler.push_back(std::abs(std::exp((1 - w) * std::log(truth(a)) + w * std::log(truth(b))) / t - 1));
    covered += pr.lo_us <= t && t <= pr.hi_us;
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto mx = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
  EXPECT_LT(med(e_curve), med(e_backbone));
  EXPECT_LE(mx(e_curve), mx(e_backbone));
  EXPECT_LE(med(e_curve), med(e_ruler) + 0.005);
  EXPECT_LE(mx(e_curve), mx(e_ruler) + 0.005);
  EXPECT_GE(double(covered), 0.9 * double(held.size()));
  // Prices never fall with size, for the measured class and for classes priced through its
  // curve (a planner pads shards and prices the slowest rank's size): a fine grid, noisy data.
  for (int n : {8, 4, 16}) {
    double last = 0;
    for (double s = 1; s <= 256.0 * 1048576; s *= 1.07) {
      const double t = predict(p, Collective::AllGather, LinkClass{n, 1, n, 1}, s).time_us;
      EXPECT_GE(t, last * (1 - 1e-12)) << "n=" << n << " S=" << s;
      last = t;
    }
  }
}

// A switch between two measured sizes that is not where the backbone put its boundary (failure
// mode (a) of real logs: +82 % on one size): the size between them is priced between its two
// measured neighbours, and its interval holds the regime it is really in.
TEST(CalibrateFit, ASizeBetweenTwoMeasuredSizesAcrossASwitchIsPricedBetweenThem) {
  const TrueSeg before{15.0, 0.0, 4.0}, after{100.0, 0.0, 4.0};
  const double jump = 3.0 * 1048576;  // not a power of two
  auto truth = [&](double s) { return two_regime_us(Collective::AllGather, s, 32, before, after, jump); };
  std::vector<double> train;
  for (double s = 16384; s <= 64.0 * 1048576; s *= 2) train.push_back(s);
  std::mt19937_64 rng(5);
  std::vector<json> recs{context()};
  add_exact_points(recs, 32, train, truth, rng);
  const Calibration cal = calibrate(results_of(recs, "switch.jsonl"));
  Profile p;
  p.cluster = "t";
  p.models = cal.models;
  ASSERT_EQ(cal.models.size(), 1u);
  ASSERT_EQ(cal.models[0].segments.size(), 2u);  // the jump is a segment boundary in (2, 4] MiB
  for (double s : {2.5 * 1048576, 3.5 * 1048576}) {
    const Prediction pr = predict(p, Collective::AllGather, LinkClass{32, 1, 32, 1}, s);
    EXPECT_EQ(pr.basis, "measured curve, switch in the gap");
    const auto hi = std::upper_bound(train.begin(), train.end(), s);
    const double ta = truth(*(hi - 1)), tb = truth(*hi);
    EXPECT_GE(pr.time_us, std::min(ta, tb) * 0.99) << s;
    EXPECT_LE(pr.time_us, std::max(ta, tb) * 1.01) << s;
    EXPECT_LE(pr.lo_us, truth(s)) << s;
    EXPECT_GE(pr.hi_us, truth(s)) << s;
  }
}

// One slow run (a point 3x its neighbours, a daemon waking up) is not the curve: it is replaced
// by what its neighbours predict, so neither its own price nor its neighbours' moves. A level
// shift (the next sizes stay up) is not a spike: it stays.
TEST(CalibrateFit, ASpikeIsRemovedALevelShiftIsNot) {
  auto truth = [](double s) { return 10.0 + s / 20e3; };  // 10 us + S at 20 GB/s
  std::vector<double> ss;
  for (double s = 1024; s <= 64.0 * 1048576; s *= 2) ss.push_back(s);
  const double spike = 65536;
  std::mt19937_64 rng(3);
  std::vector<json> recs{context()};
  add_exact_points(recs, 8, ss, [&](double s) { return truth(s) * (s == spike ? 3.0 : 1.0); }, rng);
  Profile p;
  p.cluster = "t";
  p.models = calibrate(results_of(recs, "spike.jsonl")).models;
  ASSERT_EQ(p.models.size(), 1u);
  for (double s : {spike / 2, spike * 0.75, spike, spike * 1.5, spike * 2}) {
    const double t = predict(p, Collective::AllGather, LinkClass{8, 1, 8, 1}, s).time_us;
    EXPECT_LE(std::abs(t / truth(s) - 1), 0.05) << s;
  }
  // A level shift at 64 KiB (every size from there on 3x): priced as measured on both sides.
  std::vector<json> shift{context()};
  add_exact_points(shift, 8, ss, [&](double s) { return truth(s) * (s >= spike && s < 1048576 ? 3.0 : 1.0); }, rng);
  p.models = calibrate(results_of(shift, "shift.jsonl")).models;
  EXPECT_GE(predict(p, Collective::AllGather, LinkClass{8, 1, 8, 1}, spike * 2).time_us, 2.5 * truth(spike * 2));
}

// Issue 43: the quality figures of the model predict() uses, and degenerate fits.

namespace {
std::string fit_pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", v * 100);
  return buf;
}
}  // namespace

// The held-out error in the table (quality.leave_size_out_mape) is that of the model predict()
// prices with (backbone x measured curve): recomputed here from scratch -- each size's points
// dropped from the results, calibrate() on the rest, predict() through the written profile at the
// dropped points -- it agrees within 1.5x or 1 point; and on a soft knee the backbone alone misses
// (its k-fold holdout is the backbone's) the model in use holds out better.
TEST(CalibrateFit, LeaveSizeOutIsTheHeldOutErrorOfThePriceInUse) {
  auto truth = [](double s) {  // 12 us + S / B(S), B rising smoothly to 80 GB/s; a 15 % bump
    const double b = 80.0 * s / (s + 262144.0);
    const double x = std::log2(s) - 18.0;
    return (12.0 + s / (b * 1e3)) * (1.0 + 0.15 * std::exp(-x * x / 2.0));
  };
  std::vector<double> ss;
  for (double s = 1024; s <= 64.0 * 1048576; s *= 2) ss.push_back(s);  // 17 sizes
  std::mt19937_64 rng(5);
  std::vector<json> recs{context()};
  for (double s : ss)
    recs.push_back(point(Collective::AllGather, 8, s, noisy(truth(s), rng, 0.01, 5), even_counts(8, s), s, s));
  const ResultSet rs = results_of(recs, "loso.jsonl");
  const Calibration cal = calibrate(rs);
  const Model& m = only_model(cal);
  ASSERT_TRUE(m.quality.leave_size_out_mape.has_value());
  ASSERT_TRUE(m.quality.holdout_mape.has_value());
  const double in_use = *m.quality.leave_size_out_mape;
  double sum = 0;
  int cnt = 0;
  for (std::size_t i = 1; i < recs.size(); ++i) {
    std::vector<json> rest{recs[0]};
    for (std::size_t j = 1; j < recs.size(); ++j)
      if (j != i) rest.push_back(recs[j]);
    const ResultSet rrs = results_of(rest, "loso_rest.jsonl");
    const Profile p = parse_profile(profile_to_json(make_profile(rrs, calibrate(rrs), "t")), "test");
    const double s = recs[i]["bytes"].get<double>();
    std::vector<double> y;
    for (const json& x : recs[i]["samples_s"]) y.push_back(x.get<double>() * 1e6);
    std::sort(y.begin(), y.end());
    const double meas = y[y.size() / 2];
    sum += std::abs(predict(p, Collective::AllGather, LinkClass{8, 1, 8, 1}, s).time_us / meas - 1);
    ++cnt;
  }
  const double recomputed = sum / cnt;
  EXPECT_TRUE(std::abs(in_use - recomputed) <= 0.01 ||
              (in_use <= 1.5 * recomputed && recomputed <= 1.5 * in_use))
      << "table " << in_use << ", recomputed " << recomputed;
  EXPECT_LT(in_use, *m.quality.holdout_mape) << quality_report(rs, cal);
  // The table prints it in the "holdout" column, the backbone's k-fold beside it.
  const std::string table = quality_report(rs, cal);
  EXPECT_NE(table.find(fit_pct(in_use)), std::string::npos) << table;
  EXPECT_NE(table.find("backbone alone"), std::string::npos) << table;
  // And the profile carries it through a round trip.
  const Profile back = parse_profile(profile_to_json(make_profile(rs, cal, "t")), "test");
  ASSERT_TRUE(back.models.at(0).quality.leave_size_out_mape.has_value());
  EXPECT_EQ(*back.models.at(0).quality.leave_size_out_mape, in_use);
}

namespace {

// One host of 4 ranks: mesh 4 (n = 4 alone) and 2x2 (n = 2, two groups at once), as the main
// job's sweep measures them.
json context4() {
  json c = context();
  c["world"] = 4;
  c["hosts"] = json::array({{{"name", "synthetic"}, {"ranks", {0, 1, 2, 3}}}});
  c["ranks_per_host"] = 4;
  return c;
}

json point4(Collective c, const std::string& mesh, int dim, int n, double bytes, const json& samples) {
  static int index = 0;
  json params = {{"kind", "collective"}, {"mesh", mesh}, {"mesh_dim", dim},
                 {"op", std::string(collective_info(c).name)}, {"dtype", "f32"},
                 {"distribution", "even"}, {"mode", "per_iteration"}, {"size", bytes}};
  return {{"type", "point"}, {"index", index++}, {"key", params.dump()}, {"point", params},
          {"collective", std::string(collective_info(c).name)}, {"group_size", n},
          {"groups", 4 / n}, {"hosts_spanned", 1}, {"max_ranks_per_host", n},
          {"elem_size", 1}, {"counts", even_counts(n, bytes)}, {"bytes", bytes}, {"bytes_total", bytes},
          {"bytes_max_rank", bytes / n}, {"bytes_eff", bytes}, {"samples_s", samples}, {"wrong", 0}};
}

// Every segment of every model is plausible: B within kMaxPlausibleBandwidthGBps unless the
// segment is latency only (the fitter's floor, no contention), and the contention slowdown at the
// largest measured concurrency at most its square.
void expect_plausible(const Calibration& cal, const std::string& table) {
  for (const Model& m : cal.models) {
    const Domain d = effective_domain(m);
    const double c_max = d.concurrent_groups.hi.value_or(m.concurrent_groups);
    for (const Segment& s : m.segments) {
      const bool flat = s.bandwidth_GBps >= 0.999e6;
      EXPECT_TRUE(s.bandwidth_GBps <= 1e4 || (flat && !s.contention)) << s.bandwidth_GBps << "\n" << table;
      if (s.contention) {
        EXPECT_LE(1 + *s.contention * (c_max - 1), c_max * c_max) << table;
      }
    }
  }
  EXPECT_EQ(table.find("1e+06"), std::string::npos) << table;
}

}  // namespace

// The main job's degenerate gather (4 local ranks: "B 1e+06 GB/s c471350", "contention effect
// 47135009.3 %"): n = 4 alone does not grow with size, n = 2 two at once does. With the
// contention column the slope lands on it alone (B at the floor, gamma ~1e6). The fitter falls
// back to the model without contention and says so; the classes then split, each priced as
// measured.
TEST(CalibrateFit, DegenerateContentionFallsBackToASimplerModel) {
  std::mt19937_64 rng(3);
  std::vector<json> recs{context4()};
  auto t4 = [](double) { return 5.0; };
  auto t2 = [](double s) { return 5.0 + s / 1e3; };  // 1 GB/s
  for (double s = 8; s <= 4194304; s *= 4) {
    recs.push_back(point4(Collective::Gather, "4", 0, 4, s, noisy(t4(s), rng, 0.02, 11)));
    recs.push_back(point4(Collective::Gather, "2x2", 0, 2, s, noisy(t2(s), rng, 0.02, 11)));
    recs.push_back(point4(Collective::Gather, "2x2", 1, 2, s, noisy(t2(s), rng, 0.02, 11)));
  }
  const ResultSet rs = results_of(recs, "degenerate.jsonl");
  const Calibration cal = calibrate(rs);
  const std::string table = quality_report(rs, cal);
  expect_plausible(cal, table);
  ASSERT_EQ(cal.class_pooling.size(), 1u);
  EXPECT_FALSE(cal.class_pooling[0].contention_fallback.empty()) << table;
  EXPECT_LT(cal.class_pooling[0].contention_effect, 10.0) << table;
  EXPECT_NE(table.find("fitted without contention"), std::string::npos) << table;
  EXPECT_NE(table.find("flat"), std::string::npos) << table;
  const Profile p = parse_profile(profile_to_json(make_profile(rs, cal, "t")), "test");
  EXPECT_NE(p.json_extra.find("contention_fallback"), std::string::npos);
  for (double s : {8.0, 8192.0, 4194304.0}) {
    EXPECT_LE(std::abs(predict(p, Collective::Gather, LinkClass{4, 1, 4, 1}, s).time_us / t4(s) - 1), 0.05) << s;
    EXPECT_LE(std::abs(predict(p, Collective::Gather, LinkClass{2, 1, 2, 2}, s).time_us / t2(s) - 1), 0.05) << s;
  }
}

// A slope beyond any link (50 TB/s: a segment whose times barely grow) falls back to latency only
// and says so in the table and the model's extra; 5 GB/s, the same way measured, is kept.
TEST(CalibrateFit, ImplausibleBandwidthFallsBackToLatencyOnly) {
  for (double B : {5e4, 5.0}) {
    SCOPED_TRACE("B " + std::to_string(B));
    const auto& info = collective_info(Collective::AllGather);
    std::vector<json> recs{context()};
    for (double s = 1024; s <= 4194304; s *= 2)
      recs.push_back(point(Collective::AllGather, 8, s, one(5.0 + s * info.busbw_factor(8) / (B * 1e3)),
                           even_counts(8, s), s, s));
    const ResultSet rs = results_of(recs, "implausible_bw.jsonl");
    const Calibration cal = calibrate(rs);
    const std::string table = quality_report(rs, cal);
    expect_plausible(cal, table);
    const Model& m = only_model(cal);
    if (B > 1e4) {
      // Latency only everywhere (exact data: a few flat steps follow the 1 % of growth).
      for (const Segment& seg : m.segments) EXPECT_GE(seg.bandwidth_GBps, 0.999e6) << table;
      EXPECT_NE(m.json_extra.find("\"size_term_dropped\":true"), std::string::npos) << m.json_extra;
      EXPECT_NE(table.find("fitted latency only"), std::string::npos) << table;
      EXPECT_NE(table.find(" flat"), std::string::npos) << table;
    } else {
      ASSERT_EQ(m.segments.size(), 1u) << table;
      EXPECT_NEAR(m.segments[0].bandwidth_GBps, B, 0.01 * B) << table;
      EXPECT_TRUE(m.json_extra.empty()) << m.json_extra;
      EXPECT_EQ(table.find("fallback"), std::string::npos) << table;
    }
  }
}

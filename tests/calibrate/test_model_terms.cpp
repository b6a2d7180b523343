// The backbone's term table (cost_model.hpp kTermInfo) reaches everything that uses a term: a term
// the fitter fits but the pricer, the profile writer, the reader or the gate skips fails here
// (issue 45; docs/DEVELOPING.md "Adding a model term"). Each test iterates the table, so a new row
// is checked without an edit here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "segmentation.hpp"  // calibrate/src: the fitter's Coef -> profile Segment step
#include "shardcal/calibrate/cost_model.hpp"
#include "shardcal/calibrate/profile_io.hpp"
#include "shardcal/error.hpp"
#include "shardcal/gate/compare.hpp"

namespace calib = shardcal::calib;
namespace fitter = shardcal::calib::fitter;
using calib::kTermInfo;
using calib::TermInfo;

namespace {

// One all_reduce model measured at two concurrent groups, every term nonzero and every SE set, so
// that each term moves a price at the classes the gate prices (n = 2, 4 at c = 2).
calib::Profile profile_with_every_term() {
  calib::Segment s;
  s.alpha_us = 5;
  s.alpha_step_us = 0.5;
  s.bandwidth_GBps = 20;
  s.alpha_rel_se = 0.05;
  s.bandwidth_rel_se = 0.04;
  s.contention = 0.5;
  for (const TermInfo& t : kTermInfo) {
    if (!t.get(s) || *t.get(s) == 0) t.set(s, 1.25);  // a row added without updating this test
    if (t.se && !(s.*t.se)) s.*t.se = 0.05;
  }
  calib::Model m;
  m.collective = shardcal::Collective::AllReduce;
  m.concurrent_groups = 2;
  m.group_sizes = {2, 4};
  m.segments = {s};
  m.quality.points = 40;
  m.quality.mape = 0.02;
  m.quality.holdout_mape = 0.03;
  calib::Profile p;
  p.cluster = "terms";
  p.created = "2026-11-29T00:00:00Z";
  p.shardcal_version = "test";
  p.backend = "sim";
  p.memory = "host";
  p.models = {m};
  return p;
}

// The term made slower by half (a rate divided, a time multiplied): the gate's worst size shows it.
calib::Profile slower(calib::Profile p, const TermInfo& t) {
  calib::Segment& s = p.models[0].segments[0];
  const double v = *t.get(s);
  t.set(s, t.rate ? v / 1.5 : v * 1.5);
  return p;
}

double max_time_ratio(const std::vector<shardcal::gate::ModelResult>& rows) {
  double worst = 0;
  for (const auto& r : rows)
    if (r.param == "time_us" && std::isfinite(r.ratio)) worst = std::max(worst, r.ratio);
  return worst;
}

}  // namespace

TEST(ModelTerms, TableRowsAreComplete) {
  std::set<std::string> keys{"s_lo", "s_hi"};
  for (const TermInfo& t : kTermInfo) {
    SCOPED_TRACE(t.key);
    EXPECT_TRUE(t.feature && t.coefficient && t.get && t.set && t.from_fit);
    EXPECT_TRUE(t.noun && t.table_format && t.text_before && t.text_after);
    EXPECT_TRUE(keys.insert(t.key).second) << "duplicate member";
    if (t.se_key) {
      EXPECT_TRUE(keys.insert(t.se_key).second) << "duplicate member";
    }
    EXPECT_EQ(t.se_key == nullptr, t.se == nullptr);
  }
  EXPECT_EQ(calib::kSegmentTermMembers.size() + 2, keys.size());
}

// Each term changes the price, survives the JSON round trip and moves the gate's priced rows.
TEST(ModelTerms, EveryTermIsPricedWrittenReadAndGated) {
  const calib::Profile base = profile_with_every_term();
  const std::string base_json = calib::profile_to_json(base);
  const calib::Model& bm = base.models[0];
  const shardcal::gate::Options opt;
  EXPECT_DOUBLE_EQ(max_time_ratio(shardcal::gate::compare_profiles(base, base, opt)), 1.0);
  for (const TermInfo& t : kTermInfo) {
    SCOPED_TRACE(t.key);
    const calib::Profile cand = slower(base, t);
    const calib::Model& cm = cand.models[0];
    // Priced: the backbone and the full price, at a class where every column is nonzero.
    EXPECT_GT(t.feature(shardcal::collective_info(bm.collective), 4, 1 << 20, 2), 0.0);
    EXPECT_GT(calib::price_time_us(cm, 4, 2, 1 << 20), calib::price_time_us(bm, 4, 2, 1 << 20));
    EXPECT_GT(calib::price(cm, 4, 2, 1 << 20).time_us, calib::price(bm, 4, 2, 1 << 20).time_us);
    // Written under its key, and read back to the same value.
    const std::string text = calib::profile_to_json(cand);
    EXPECT_NE(text, base_json);
    EXPECT_NE(base_json.find('"' + std::string(t.key) + '"'), std::string::npos);
    const calib::Profile back = calib::parse_profile(text, "round trip");
    EXPECT_EQ(t.get(back.models[0].segments[0]), t.get(cm.segments[0]));
    EXPECT_EQ(calib::profile_to_json(back), text);
    // Gated: the candidate's priced time rose.
    EXPECT_GT(max_time_ratio(shardcal::gate::compare_profiles(base, cand, opt)), 1.0 + 1e-9);
  }
  // The reader refuses a term's value out of its bound (negative; 0 for a positive one).
  for (const TermInfo& t : kTermInfo) {
    SCOPED_TRACE(t.key);
    const std::string key = '"' + std::string(t.key) + "\": ";
    std::string bad = base_json;
    const std::size_t at = bad.find(key);
    ASSERT_NE(at, std::string::npos);
    const std::size_t end = bad.find_first_of(",\n", at + key.size());
    bad.replace(at + key.size(), end - at - key.size(), t.positive ? "0" : "-1");
    EXPECT_THROW(calib::parse_profile(bad, "bad"), shardcal::Error);
  }
}

// What the fitter fits reaches the pricer: a segment fitted with only term j nonzero (the others
// at their floors) prices as the fit's own evaluation does, at every group size, concurrency and
// size tried.
TEST(ModelTerms, FittedCoefficientsReachThePricer) {
  const shardcal::Collective op = shardcal::Collective::AllReduce;
  for (const TermInfo& t : kTermInfo) {
    SCOPED_TRACE(t.key);
    fitter::Coef k;
    // A term beside the slope (contention is relative to it) keeps the slope's floor.
    k.*fitter::kCoefOf[std::size_t(t.term)] = t.term == calib::Term::InvBandwidth ? 1e-4 : 3.0;
    fitter::Piecewise p;
    p.lo = {0};
    p.coef = {k};
    calib::Model m;
    m.collective = op;
    m.segments = fitter::to_segments(p);
    ASSERT_EQ(m.segments.size(), 1u);
    for (int n : {2, 4, 8})
      for (int c : {1, 3})
        for (double s : {64.0, 1e6}) {
          const double fit = fitter::eval_coef(k, s, n, op, c);
          const double priced = calib::segment_time_us(m, 0, n, s, c);
          EXPECT_NEAR(priced, fit, 1e-12 * fit) << "n " << n << " c " << c << " s " << s;
        }
  }
}

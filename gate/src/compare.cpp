// The regression gate's decisions (docs/GATE.md "Verdicts"): environment check, per-point and
// per-model verdicts, the overall verdict and exit code.
#include "shardcal/gate/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "detail.hpp"
#include "shardcal/calibrate/cost_model.hpp"
#include "shardcal/error.hpp"
#include "shardcal/gate/stats.hpp"
#include "shardcal/hash.hpp"

namespace shardcal::gate {
namespace {

using detail::fmt;
using detail::kGbenchFormat;
using nlohmann::json;

// The FNV basis the gate's per-point bootstrap seeds were always computed with (the standard
// basis without its last digit). Kept so that the same inputs and --seed give the same confidence
// intervals, and verdicts, as every earlier build; a seed needs no particular basis.
constexpr std::uint64_t kGateSeedBasis = 1469598103934665603ull;

// Inverse of the standard normal CDF (Acklam's rational approximation, relative error < 1.2e-9,
// refined by one Halley step with erfc).
double norm_ppf(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  double x;
  if (p < 0.02425) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - 0.02425) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

}  // namespace

std::vector<EnvDifference> compare_env(const RunData& b, const RunData& c) {
  std::vector<EnvDifference> out;
  // A field on one side only is a difference (null on the other side): an older file, or a
  // stack that does not report it, is not known to be the same stack. Only Google Benchmark's
  // context keys that older releases do not write are tolerated (still listed).
  auto tolerated = [&](const std::string& k) {
    return b.format == kGbenchFormat && c.format == kGbenchFormat &&
           (k == "library_version" || k == "library_build_type");
  };
  for (const auto& [k, v] : b.env.items()) {
    if (!c.env.contains(k))
      out.push_back({k, v, json(nullptr), tolerated(k)});
    else if (c.env[k] != v)
      out.push_back({k, v, c.env[k]});
  }
  for (const auto& [k, v] : c.env.items())
    if (!b.env.contains(k)) out.push_back({k, json(nullptr), v, tolerated(k)});
  return out;
}

PointResult judge_point(const Series& b, const Series& c, const Options& opt) {
  PointResult r;
  r.key = b.key;
  r.label = b.label;
  r.n_baseline = b.samples_s.size();
  r.n_candidate = c.samples_s.size();
  r.baseline_median_us = median(b.samples_s) * 1e6;
  r.candidate_median_us = median(c.samples_s) * 1e6;
  // Exact null distribution for small untied samples, the normal approximation otherwise.
  const auto exact = mann_whitney_u_exact(b.samples_s, c.samples_s);
  r.p = exact ? exact->p : mann_whitney_u(b.samples_s, c.samples_s).p;
  r.p_method = exact ? "exact" : "asymptotic";
  const RatioCI ci = bootstrap_median_ratio(b.samples_s, c.samples_s, 1 - opt.alpha, opt.resamples,
                                            opt.seed ^ shardcal::fnv1a64(b.key, kGateSeedBasis),
                                            b.run_sizes, c.run_sizes);
  r.ratio = ci.ratio;
  r.ci_lo = ci.lo;
  r.ci_hi = ci.hi;
  r.q = r.p;  // until the FDR step
  return r;
}

namespace {

// Verdict after the FDR step (docs/GATE.md "Verdicts").
void decide(PointResult& r, const Series& b, const Series& c, const Options& opt) {
  const double up = 1 + opt.max_slowdown, down = 1 / (1 + opt.max_slowdown);
  const bool sig = r.q <= opt.alpha;
  const auto pb = sample_problem(b.samples_s, opt.min_samples);
  const auto pc = sample_problem(c.samples_s, opt.min_samples);
  const std::string ci = "ratio CI [" + fmt(r.ci_lo, "%.3f") + ", " + fmt(r.ci_hi, "%.3f") + "]";
  std::string problem;
  if (pb) problem = "baseline: " + *pb;
  if (pc) problem += (problem.empty() ? "" : "; ") + ("candidate: " + *pc);
  // A sample problem (too few, bimodal) only stops the gate from trusting a pass or a straddling
  // CI. A significant regression stays one when even the candidate's fast samples are slower:
  // its 10th percentile above (1 + s) x the baseline's 90th (a slow cluster cannot mask it).
  const double c_p10 = quantile(c.samples_s, 0.1), b_p90 = quantile(b.samples_s, 0.9);
  const bool clear_of_problem = problem.empty() || c_p10 > up * b_p90;
  if (sig && r.ci_lo > up && clear_of_problem) {
    r.verdict = "regression";
    r.reason = "q " + fmt(r.q, "%.2g") + " <= alpha and " + ci + " above " + fmt(up, "%.3g");
    if (!problem.empty())
      r.reason += "; despite " + problem + ", the candidate's p10 " + fmt(c_p10 * 1e6) + " us > " +
                  fmt(up, "%.3g") + " x the baseline's p90 " + fmt(b_p90 * 1e6) + " us";
  } else if (!problem.empty()) {
    r.verdict = "inconclusive";
    r.reason = problem;
  } else if (sig && r.ci_hi < down) {
    r.verdict = "improvement";
    r.reason = "q " + fmt(r.q, "%.2g") + " <= alpha and " + ci + " below " + fmt(down, "%.3g");
  } else if (r.ci_hi <= up) {
    r.verdict = "pass";
    r.reason =
        ci + " <= " + fmt(up, "%.3g") + (sig ? " (significant, but within --max-slowdown)" : "");
  } else {
    r.verdict = "inconclusive";
    r.reason =
        ci + " straddles " + fmt(up, "%.3g") + (sig ? "" : " (q " + fmt(r.q, "%.2g") + " > alpha)");
  }
}

std::string link_name(const calib::Model& m) {
  return "hosts=" + std::to_string(m.hosts) +
         " concurrent_groups=" + std::to_string(m.concurrent_groups) +
         " dtype=" + (m.dtype ? std::string(dtype_name(*m.dtype)) : std::string("pooled"));
}

// Fallback uncertainty of a side when a profile has no parameter SEs: its fit's relative time
// error (a heuristic; it can understate alpha and B badly when they trade off in the fit).
double rel_uncertainty(const calib::Model& m) {
  return std::max(m.quality.mape, m.quality.holdout_mape.value_or(0.0));
}

// A model's identity within a profile: its collective and link class.
ModelResult model_identity(const calib::Model& m) {
  ModelResult r;
  r.collective = std::string(collective_info(m.collective).name);
  r.link = link_name(m);
  return r;
}

// A model present in one profile only: nothing to compare, so no verdict either way.
ModelResult one_sided_model(const calib::Model& m, const char* which) {
  ModelResult r = model_identity(m);
  r.param = "segments";
  r.verdict = "inconclusive";
  r.reason = std::string("model only in the ") + which + " profile";
  return r;
}

// Size regimes that moved between the two fits: their segments are not the same quantity.
ModelResult segment_count_changed(const calib::Model& bm, const calib::Model& cm) {
  ModelResult r = model_identity(bm);
  r.param = "segments";
  r.baseline = double(bm.segments.size());
  r.candidate = double(cm.segments.size());
  r.ratio = r.candidate / r.baseline;
  r.ci_lo = r.ci_hi = r.ratio;
  r.verdict = "inconclusive";
  r.reason = "the number of size segments changed (" + std::to_string(bm.segments.size()) +
             " -> " + std::to_string(cm.segments.size()) +
             "): the size regimes moved; compare the points";
  return r;
}

// The verdict on one term of one segment of a model both profiles have (a term with a relative
// SE: cost_model.hpp kTermInfo). z: the normal quantile of the confidence level; sigma_fit: the
// fallback sd of log(ratio) from fit errors.
ModelResult judge_parameter(const calib::Model& bm, const calib::Model& cm, std::size_t s,
                            const calib::TermInfo& term, double z, double sigma_fit,
                            const Options& opt) {
  const double up = 1 + opt.max_slowdown, down = 1 / (1 + opt.max_slowdown);
  const bool bw = term.rate;  // a rate: lower is slower
  const calib::Segment &bs = bm.segments[s], &cs = cm.segments[s];
  ModelResult r = model_identity(bm);
  r.segment = int(s);
  r.param = term.key;
  r.baseline = term.get(bs).value_or(0.0);
  r.candidate = term.get(cs).value_or(0.0);
  // sd of log(ratio): the two parameters' relative SEs in quadrature (independent fits;
  // relative SE = sd of the log to first order) when both profiles carry them. alpha and B
  // are fitted jointly and trade off, so a fit with a small time error can still leave
  // alpha uncertain by tens of percent; the fit-error fallback would call that a change.
  const std::optional<double> b_se = bs.*term.se;
  const std::optional<double> c_se = cs.*term.se;
  const bool from_se = b_se && c_se;
  const double sigma = from_se ? std::hypot(*b_se, *c_se) : sigma_fit;
  if (!(r.baseline > 0) || !(r.candidate > 0)) {
    r.ratio = r.ci_lo = r.ci_hi = r.baseline == r.candidate ? 1.0 : NAN;
    r.verdict = r.baseline == r.candidate ? "pass" : "inconclusive";
    r.reason = r.baseline == r.candidate ? "both 0" : "one side is 0: no ratio";
    return r;
  }
  r.ratio = r.candidate / r.baseline;
  r.ci_lo = r.ratio * std::exp(-z * sigma);
  r.ci_hi = r.ratio * std::exp(z * sigma);
  // Slower = lower bandwidth or higher latency.
  const double worse_lo = bw ? 1 / r.ci_hi : r.ci_lo;  // slowdown factor's CI
  const double worse_hi = bw ? 1 / r.ci_lo : r.ci_hi;
  const std::string ci = "CI [" + fmt(r.ci_lo, "%.3f") + ", " + fmt(r.ci_hi, "%.3f") +
                         "] from " + (from_se ? "parameter SEs" : "fit errors") + " +-" +
                         fmt(100 * sigma, "%.1f") + "%";
  if (worse_lo > up) {
    r.verdict = "regression";
    r.reason = std::string(term.noun) + (bw ? " fell" : " rose") + ": " + ci;
  } else if (worse_hi < down) {
    r.verdict = "improvement";
    r.reason = ci;
  } else if (worse_hi <= up) {
    r.verdict = "pass";
    r.reason = ci;
  } else {
    r.verdict = "inconclusive";
    r.reason = ci + " straddles the threshold";
  }
  return r;
}

// Prices (docs/GATE.md "Model level"): per link class both models measured, calib::price() of
// each side at the class's measured sizes -- what the planner prices, so every model term and
// the measured curves count.

// One priced size of one class, before the FDR step.
struct PricedSize {
  std::size_t row = 0;  // the class's row in the price rows
  double s_eff = 0;
  int segment = 0;
  double tb = 0, tc = 0, ratio = 1, ci_lo = 1, ci_hi = 1, sigma = 0, p = 1, q = 1;
  std::string verdict;
};

using LinkClass = std::pair<int, int>;  // (group size n, concurrent groups c)

// The classes a model measured: its curves' (n, c), and its group sizes at its concurrency.
std::set<LinkClass> measured_classes(const calib::Model& m) {
  std::set<LinkClass> out;
  for (const auto& cv : m.curves) out.insert({cv.group_size, cv.concurrent_groups});
  for (int n : m.group_sizes) out.insert({n, m.concurrent_groups});
  return out;
}

// Where a class is priced: the knots of its own measured curve in either profile; a class with
// no curve on either side (a backbone-only profile): every 16x from 1 B to 4 GiB inside both
// models' byte domains.
std::vector<double> class_sizes(const calib::Model& bm, const calib::Model& cm, LinkClass k) {
  std::set<double> sizes;
  for (const calib::Model* m : {&bm, &cm})
    for (const auto& cv : m->curves)
      if (LinkClass{cv.group_size, cv.concurrent_groups} == k)
        sizes.insert(cv.bytes.begin(), cv.bytes.end());
  if (sizes.empty()) {
    const calib::Range rb = calib::effective_domain(bm).bytes, rc = calib::effective_domain(cm).bytes;
    for (double s = 1; s <= 4294967296.0; s *= 16)
      if (rb.contains(s) && rc.contains(s)) sizes.insert(s);
  }
  return {sizes.begin(), sizes.end()};
}

// The sd of a price's log from its 95 % interval (half the interval's log width over z).
double interval_sigma(const calib::Priced& p) {
  return p.lo_us > 0 && p.hi_us > p.lo_us ? std::log(p.hi_us / p.lo_us) / (2 * calib::kIntervalZ)
                                          : 0.0;
}

// Both prices of one size, its ratio, CI (normal quantile z) and two-sided p of log(ratio) = 0.
PricedSize price_size(const calib::Model& bm, const calib::Model& cm, LinkClass k, double s_eff,
                      double z) {
  PricedSize r;
  r.s_eff = s_eff;
  const calib::Priced pb = calib::price(bm, k.first, k.second, s_eff);
  const calib::Priced pc = calib::price(cm, k.first, k.second, s_eff);
  r.segment = int(pb.segment);
  r.tb = pb.time_us;
  r.tc = pc.time_us;
  if (!(r.tb > 0 && r.tc > 0 && std::isfinite(r.tb) && std::isfinite(r.tc))) {
    r.ratio = r.ci_lo = r.ci_hi = NAN;
    r.verdict = "inconclusive";  // no ratio; never a regression
    return r;
  }
  r.ratio = r.tc / r.tb;
  r.sigma = std::hypot(interval_sigma(pb), interval_sigma(pc));
  r.ci_lo = r.ratio * std::exp(-z * r.sigma);
  r.ci_hi = r.ratio * std::exp(z * r.sigma);
  const double lr = std::abs(std::log(r.ratio));
  r.p = r.sigma > 0 ? std::min(1.0, std::erfc(lr / r.sigma / std::sqrt(2.0))) : (lr > 0 ? 0.0 : 1.0);
  return r;
}

// The points' verdict rule (decide(), without sample checks) on one priced size after the FDR.
void decide_size(PricedSize& r, const Options& opt) {
  if (!r.verdict.empty()) return;
  const double up = 1 + opt.max_slowdown, down = 1 / (1 + opt.max_slowdown);
  const bool sig = r.q <= opt.alpha;
  r.verdict = sig && r.ci_lo > up     ? "regression"
              : sig && r.ci_hi < down ? "improvement"
              : r.ci_hi <= up         ? "pass"
                                      : "inconclusive";
}

int severity(const std::string& v) {
  return v == "regression" ? 3 : v == "inconclusive" ? 2 : v == "pass" ? 1 : 0;
}

std::string class_name(LinkClass k) {
  return "n=" + std::to_string(k.first) + " c=" + std::to_string(k.second);
}

// The row of one class: the verdict and numbers of its worst size, the counts of all of them.
void summarise_class(ModelResult& row, const std::vector<const PricedSize*>& sizes,
                     LinkClass k, const Options& opt) {
  const PricedSize* w = sizes.front();
  std::map<std::string, int> count;
  for (const PricedSize* s : sizes) {
    ++count[s->verdict];
    const int sv = severity(s->verdict), sw = severity(w->verdict);
    if (sv > sw || (sv == sw && s->ratio > w->ratio)) w = s;
  }
  char at[64];
  std::snprintf(at, sizeof at, " S_eff=%.0f", w->s_eff);
  row.at = class_name(k) + at;
  row.segment = w->segment;
  row.baseline = w->tb;
  row.candidate = w->tc;
  row.ratio = w->ratio;
  row.ci_lo = w->ci_lo;
  row.ci_hi = w->ci_hi;
  row.verdict = w->verdict;
  const double up = 1 + opt.max_slowdown;
  if (!(w->ratio > 0)) {
    row.reason = "a price is 0 or not finite: no ratio";
  } else {
    row.reason = std::string(w->verdict == "regression" ? "priced time rose: " : "") + "q " +
                 fmt(w->q, "%.2g") + ", CI [" + fmt(w->ci_lo, "%.3f") + ", " +
                 fmt(w->ci_hi, "%.3f") + "] from the price intervals +-" +
                 fmt(100 * w->sigma, "%.1f") + "%" +
                 (w->verdict == "inconclusive" ? " straddles " + fmt(up, "%.3g") : "");
  }
  row.reason += "; " + std::to_string(sizes.size()) + " measured sizes:";
  for (const char* v : {"regression", "inconclusive", "pass", "improvement"})
    if (count[v]) row.reason += " " + std::to_string(count[v]) + " " + v;
}

// The price rows of all matched model pairs, with the FDR step over every priced size.
std::vector<ModelResult> compare_prices(
    const std::vector<std::pair<const calib::Model*, const calib::Model*>>& pairs, double z,
    const Options& opt) {
  std::vector<ModelResult> rows;
  std::vector<PricedSize> sizes;
  std::vector<LinkClass> row_class;
  for (const auto& [bm, cm] : pairs) {
    const auto bc = measured_classes(*bm), cc = measured_classes(*cm);
    for (const auto& [side, mine, other] :
         {std::tuple{"baseline", &bc, &cc}, std::tuple{"candidate", &cc, &bc}})
      for (const LinkClass& k : *mine)
        if (!other->count(k)) {
          ModelResult r = model_identity(*bm);
          r.param = "time_us";
          r.at = class_name(k);
          r.ratio = r.ci_lo = r.ci_hi = NAN;
          r.verdict = "inconclusive";
          r.reason = std::string("link class measured only in the ") + side + " profile";
          rows.push_back(r);
          row_class.push_back(k);
        }
    for (const LinkClass& k : bc) {
      if (!cc.count(k)) continue;
      ModelResult r = model_identity(*bm);
      r.param = "time_us";
      for (double s : class_sizes(*bm, *cm, k)) {
        sizes.push_back(price_size(*bm, *cm, k, s, z));
        sizes.back().row = rows.size();
      }
      rows.push_back(r);
      row_class.push_back(k);
    }
  }
  std::vector<double> ps;
  for (const auto& s : sizes) ps.push_back(s.p);
  const auto qs = opt.fdr == "holm" ? holm(ps) : benjamini_hochberg(ps);
  std::vector<std::vector<const PricedSize*>> per_row(rows.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    sizes[i].q = qs[i];
    decide_size(sizes[i], opt);
    per_row[sizes[i].row].push_back(&sizes[i]);
  }
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (!per_row[i].empty()) summarise_class(rows[i], per_row[i], row_class[i], opt);
    else if (rows[i].verdict.empty()) {
      rows[i].at = class_name(row_class[i]);
      rows[i].verdict = "inconclusive";
      rows[i].reason = "no size to price (the two models' byte domains do not overlap)";
    }
  return rows;
}

}  // namespace

std::vector<ModelResult> compare_profiles(const calib::Profile& bp, const calib::Profile& cp,
                                          const Options& opt) {
  std::vector<ModelResult> out;
  const double z = norm_ppf(1 - opt.alpha / 2);
  auto id = [](const calib::Model& m) {
    return std::string(collective_info(m.collective).name) + " " + link_name(m);
  };
  std::map<std::string, const calib::Model*> cand;
  for (const auto& m : cp.models) cand[id(m)] = &m;
  std::set<std::string> matched;
  std::vector<std::pair<const calib::Model*, const calib::Model*>> pairs;
  for (const auto& bm : bp.models) {
    auto it = cand.find(id(bm));
    if (it == cand.end()) {
      out.push_back(one_sided_model(bm, "baseline"));
      continue;
    }
    matched.insert(it->first);
    const calib::Model& cm = *it->second;
    pairs.emplace_back(&bm, &cm);
    if (bm.segments.size() != cm.segments.size()) {
      out.push_back(segment_count_changed(bm, cm));
      continue;
    }
    const double sigma_fit = std::hypot(rel_uncertainty(bm), rel_uncertainty(cm));
    // Per segment each term with a standard error, the rates (B) first as the gate has always
    // listed them.
    for (std::size_t s = 0; s < bm.segments.size(); ++s)
      for (const bool rates : {true, false})
        for (const calib::TermInfo& t : calib::kTermInfo)
          if (t.se && t.rate == rates)
            out.push_back(judge_parameter(bm, cm, s, t, z, sigma_fit, opt));
  }
  for (const auto& cm : cp.models)
    if (!matched.count(id(cm))) out.push_back(one_sided_model(cm, "candidate"));
  // The prices first: what the planner prices, whatever the segments did.
  std::vector<ModelResult> prices = compare_prices(pairs, z, opt);
  prices.insert(prices.end(), out.begin(), out.end());
  return prices;
}

namespace {

// Options and input kinds a comparison needs; throws Error (bad input).
void check_inputs(const RunData& b, const RunData& c, const Options& opt) {
  if (!(opt.alpha > 0 && opt.alpha < 1))
    throw Error("--alpha " + fmt(opt.alpha) + " must lie in (0, 1), e.g. 0.01");
  if (!(opt.max_slowdown >= 0 && std::isfinite(opt.max_slowdown)))
    throw Error("--max-slowdown " + fmt(opt.max_slowdown) + " must be >= 0, e.g. 0.05 (5%)");
  if (opt.fdr != "benjamini-hochberg" && opt.fdr != "holm")
    throw Error("--fdr \"" + opt.fdr + "\": expected benjamini-hochberg or holm");
  if (opt.min_samples < 2) throw Error("--min-samples must be >= 2");
  if (b.format != c.format)
    throw Error("the baseline " + b.path + " is " + b.format + " and the candidate " + c.path +
                " is " + c.format + "; compare files of the same kind");
}

// The points of both runs, paired by key; the unpaired and the candidate's wrong points go to r.
std::vector<std::pair<const Series*, const Series*>> pair_points(const RunData& b, const RunData& c,
                                                                 Report& r) {
  std::map<std::string, const Series*> cand;
  for (const auto& s : c.points) cand[s.key] = &s;
  std::set<std::string> in_base, c_skipped;
  for (const auto& k : c.skipped) c_skipped.insert(k.key);
  std::vector<std::pair<const Series*, const Series*>> pairs;
  for (const auto& s : b.points) {
    in_base.insert(s.key);
    auto it = cand.find(s.key);
    if (it != cand.end()) {
      pairs.emplace_back(&s, it->second);
      continue;
    }
    // No usable candidate samples: lost coverage. A point the candidate skipped is listed under
    // skipped_candidate (with its reason), not also as only in the baseline.
    r.missing_in_candidate.push_back(s.key);
    if (!c_skipped.count(s.key)) r.only_baseline.push_back(s.key);
  }
  for (const auto& s : c.points)
    if (!in_base.count(s.key)) r.only_candidate.push_back(s.key);
  // Wrong results in the candidate (any of its runs) fail the gate: docs/GATE.md "Coverage".
  std::set<std::string> wrong;
  for (const auto& k : c.skipped)
    if (k.wrong && wrong.insert(k.key).second) r.wrong_results.push_back(k.key);
  return pairs;
}

// Runs that cannot be compared (different stacks, no common point) get verdict "incomparable".
bool incomparable(const RunData& b, const RunData& c, const Options& opt, bool any_pair, Report& r) {
  const bool env_differs = std::any_of(r.env_differences.begin(), r.env_differences.end(),
                                       [](const EnvDifference& e) { return !e.tolerated; });
  if (env_differs && !opt.allow_env_change) {
    r.verdict = "incomparable";
    r.exit_code = 2;
    std::string d;
    for (const auto& e : r.env_differences)
      if (!e.tolerated)
        d += (d.empty() ? "" : "; ") + e.field + ": baseline " + e.baseline.dump() +
             ", candidate " + e.candidate.dump();
    r.incomparable_reason = "the environments differ (" + d +
                            "); timings from different stacks are not comparable. Re-run both "
                            "on the same stack, or pass --allow-env-change to compare anyway "
                            "(the report then says so)";
    return true;
  }
  if (!any_pair && r.wrong_results.empty()) {
    r.verdict = "incomparable";
    r.exit_code = 2;
    r.incomparable_reason =
        "no point is in both files (" + std::to_string(b.points.size()) + " baseline, " +
        std::to_string(c.points.size()) +
        " candidate points; keys include the timing protocol and the config's parameters): run "
        "the same config with the same shardbench timing loop on both sides";
    return true;
  }
  return false;
}

// Per-point tests, the FDR step over all of them, and the verdicts, worst ratio first.
void judge_points(const std::vector<std::pair<const Series*, const Series*>>& pairs,
                  const Options& opt, Report& r) {
  for (const auto& [sb, sc] : pairs) r.points.push_back(judge_point(*sb, *sc, opt));
  std::vector<double> ps;
  for (const auto& p : r.points) ps.push_back(p.p);
  const auto qs = opt.fdr == "holm" ? holm(ps) : benjamini_hochberg(ps);
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    r.points[i].q = qs[i];
    decide(r.points[i], *pairs[i].first, *pairs[i].second, opt);
  }
  std::stable_sort(r.points.begin(), r.points.end(),
                   [](const PointResult& x, const PointResult& y) { return x.ratio > y.ratio; });
}

}  // namespace

Report compare_runs(const RunData& b, const RunData& c, const Options& opt,
                    const calib::Profile* bp, const calib::Profile* cp) {
  check_inputs(b, c, opt);
  Report r;
  r.options = opt;
  r.baseline_path = b.path;
  r.candidate_path = c.path;
  r.baseline_sha256 = b.sha256;
  r.candidate_sha256 = c.sha256;
  r.baseline_runs = b.runs;
  r.candidate_runs = c.runs;
  r.format = b.format;
  r.skipped_baseline = b.skipped;
  r.skipped_candidate = c.skipped;
  r.env_differences = compare_env(b, c);
  {
    // The same file on both sides: an A/A check of the gate, not a comparison of two runs.
    std::set<std::string> bsha;
    std::istringstream bs(b.sha256), cs(c.sha256);
    for (std::string h; std::getline(bs, h, ',');) bsha.insert(h);
    for (std::string h; std::getline(cs, h, ',');)
      if (bsha.count(h))
        r.warnings.push_back("the baseline and the candidate contain the same file (sha256 " + h +
                             "): this compares a run with itself, not two runs");
  }

  const auto pairs = pair_points(b, c, r);
  if (bp && cp) r.models = compare_profiles(*bp, *cp, opt);
  if (incomparable(b, c, opt, !pairs.empty(), r)) return r;
  judge_points(pairs, opt, r);

  bool regression = false, inconclusive = false;
  for (const auto& p : r.points) {
    regression |= p.verdict == "regression";
    inconclusive |= p.verdict == "inconclusive";
  }
  for (const auto& m : r.models) regression |= m.verdict == "regression";
  regression |= !r.wrong_results.empty();
  inconclusive |= !r.missing_in_candidate.empty() && !opt.allow_missing;
  r.verdict = regression ? "regression" : inconclusive ? "inconclusive" : "pass";
  r.exit_code = regression ? 1 : inconclusive ? 3 : 0;
  return r;
}

}  // namespace shardcal::gate

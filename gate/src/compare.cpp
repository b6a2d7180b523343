// The regression gate: reading runs, environment check, per-point and per-model verdicts, report
// rendering (docs/GATE.md).
#include "shardcal/gate/compare.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "shardcal/calibrate/results.hpp"
#include "shardcal/error.hpp"
#include "shardcal/gate/stats.hpp"

namespace shardcal::gate {
namespace {

using nlohmann::json;

constexpr const char* kSweepFormat = "shardcal.sweep.results";
constexpr const char* kGbenchFormat = "google-benchmark";

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

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path +
                ": cannot open (check the path; inputs are `shardbench sweep --out FILE` "
                "results or Google Benchmark --benchmark_out=FILE.json files)");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(path + ": read error");
  return ss.str();
}

void set_env(json& env, const std::string& field, const json& v) {
  if (!env.contains(field)) {
    env[field] = v;
    return;
  }
  json& cur = env[field];
  // Distinct values of several context records: promote to a list of distinct values.
  if (cur == v) return;
  if (cur.is_object() && cur.contains("values_of_several_contexts")) {
    json& arr = cur["values_of_several_contexts"];
    if (std::find(arr.begin(), arr.end(), v) == arr.end()) arr.push_back(v);
  } else {
    cur = json{{"values_of_several_contexts", json::array({cur, v})}};
  }
}

RunData read_gbench(const std::string& path, const json& doc) {
  RunData r;
  r.path = path;
  r.format = kGbenchFormat;
  const json& ctx = doc["context"];
  const json& benches = doc["benchmarks"];
  if (!ctx.is_object() || !benches.is_array())
    throw Error(path +
                ": \"context\" must be an object and \"benchmarks\" an array (Google "
                "Benchmark JSON, --benchmark_format=json)");
  for (const char* k : {"library_build_type", "num_cpus", "library_version"})
    if (ctx.contains(k)) r.env[k] = ctx[k];
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < benches.size(); ++i) {
    const json& b = benches[i];
    const std::string where = path + ": /benchmarks/" + std::to_string(i);
    if (!b.is_object()) throw Error(where + ": not an object");
    // Optional fields of a given type: a wrong type is malformed input naming the field (never
    // nlohmann's type_error, which would be an internal error).
    auto opt_string = [&](const char* f, const char* dflt) {
      if (!b.contains(f)) return std::string(dflt);
      if (!b[f].is_string())
        throw Error(where + ": \"" + f + "\" must be a string, not " + b[f].dump() +
                    " (Google Benchmark JSON, --benchmark_format=json)");
      return b[f].get<std::string>();
    };
    if (opt_string("run_type", "iteration") == "aggregate") continue;
    std::string key;
    if (b.contains("run_name") && b["run_name"].is_string())
      key = b["run_name"].get<std::string>();
    else if (b.contains("name") && b["name"].is_string())
      key = b["name"].get<std::string>();
    else
      throw Error(where + ": no \"run_name\" or \"name\" string");
    if (b.contains("error_occurred") && !b["error_occurred"].is_boolean())
      throw Error(where + ": \"error_occurred\" must be true or false, not " +
                  b["error_occurred"].dump());
    if (b.contains("error_occurred") && b["error_occurred"].get<bool>()) {
      const json& msg = b.contains("error_message") ? b["error_message"] : json("");
      r.skipped.push_back(
          {key, "error_occurred: " + (msg.is_string() ? msg.get<std::string>() : msg.dump())});
      continue;
    }
    if (!b.contains("real_time") || !b["real_time"].is_number())
      throw Error(where + ": \"real_time\" is missing or not a number");
    const std::string unit = opt_string("time_unit", "ns");
    double scale = 0;
    if (unit == "ns")
      scale = 1e-9;
    else if (unit == "us")
      scale = 1e-6;
    else if (unit == "ms")
      scale = 1e-3;
    else if (unit == "s")
      scale = 1;
    else
      throw Error(where + ": unknown time_unit \"" + unit + "\" (expected ns, us, ms or s)");
    const double t = b["real_time"].get<double>() * scale;
    if (!(t > 0) || !std::isfinite(t))
      throw Error(where + ": real_time must be a positive finite number");
    auto [it, fresh] = index.try_emplace(key, r.points.size());
    if (fresh) r.points.push_back({key, key, {}});
    r.points[it->second].samples_s.push_back(t);
  }
  return r;
}

RunData read_sweep(const std::string& path) {
  const calib::ResultSet rs = calib::read_results({path});
  RunData r;
  r.path = path;
  r.format = kSweepFormat;
  for (const json& c : rs.files.at(0).context_records) {
    for (const char* k : {"backend", "memory", "world", "n_hosts", "ranks_per_host"})
      if (c.contains(k)) set_env(r.env, k, c[k]);
    for (const char* group : {"library_versions", "backend_settings"})
      if (c.contains(group) && c[group].is_object())
        for (const auto& [name, v] : c[group].items())
          set_env(r.env, std::string(group) + "." + name, v);
  }
  for (const auto& p : rs.collectives) r.points.push_back({p.key, p.label, p.samples_s});
  for (const auto& t : rs.transitions) r.points.push_back({t.key, t.label, t.samples_s});
  for (const auto& s : rs.skipped)  // reasons: "wrong = N" | "no samples or ..." (results.hpp)
    r.skipped.push_back({s.key, s.reason + " (" + s.where + ")", s.reason.rfind("wrong", 0) == 0});
  return r;
}

std::string fmt(double v, const char* f = "%.4g") {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

RunData read_run(const std::string& path) {
  const std::string text = read_all(path);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw Error(path +
                ": the file is empty; expected sweep results (JSON Lines) or Google "
                "Benchmark JSON");
  RunData r;
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded() && doc.is_object() && doc.contains("benchmarks") &&
      doc.contains("context")) {
    r = read_gbench(path, doc);
  } else if (!doc.is_discarded() && !(doc.is_object() && doc.contains("type"))) {
    throw Error(path +
                ": a JSON document that is neither Google Benchmark JSON (an object with "
                "\"context\" and \"benchmarks\") nor sweep results (JSON Lines whose "
                "first record has \"type\": \"context\")");
  } else {
    r = read_sweep(path);
  }
  std::set<std::string> seen;
  for (const auto& p : r.points)
    if (!seen.insert(p.key).second && r.format == kSweepFormat)
      throw Error(path + ": point key " + p.key +
                  " appears twice; point keys are unique in a "
                  "sweep results file (the file is corrupt)");
  if (r.points.empty() && r.skipped.empty())
    throw Error(path + ": no points (" + r.format + "); nothing to compare");
  r.sha256 = calib::sha256_file(path);
  return r;
}

RunData pool_runs(const std::vector<RunData>& runs, const std::string& side) {
  if (runs.empty()) throw Error("no " + side + " file given");
  if (runs.size() == 1) return runs[0];
  RunData out;
  out.format = runs[0].format;
  out.env = runs[0].env;
  out.runs = 0;
  std::map<std::string, std::size_t> index;
  std::map<std::string, std::string> by_sha;  // sha256 -> first path
  for (const RunData& r : runs) {
    if (auto [it, fresh] = by_sha.try_emplace(r.sha256, r.path); !fresh)
      throw Error("the " + side + " files " + it->second + " and " + r.path +
                  " are the same file (sha256 " + r.sha256 +
                  "); pooling it twice would count its samples twice. Give each run once");
    if (r.format != out.format)
      throw Error("the " + side + " files " + runs[0].path + " (" + runs[0].format + ") and " +
                  r.path + " (" + r.format + ") are of different kinds; pool files of one kind");
    if (r.env != out.env) {
      std::string d;
      for (const auto& e : compare_env(runs[0], r))
        d += (d.empty() ? "" : "; ") + e.field + ": " + e.baseline.dump() + " vs " +
             e.candidate.dump();
      if (d.empty()) d = "fields present in one file only";
      throw Error("the " + side + " files " + runs[0].path + " and " + r.path +
                  " come from different environments (" + d + "); pool only runs of one stack");
    }
    out.path += (out.path.empty() ? "" : " + ") + r.path;
    out.sha256 += (out.sha256.empty() ? "" : ",") + r.sha256;
    out.runs += r.runs;
    for (const Series& s : r.points) {
      auto [it, fresh] = index.try_emplace(s.key, out.points.size());
      if (fresh) {
        out.points.push_back(s);
        out.points.back().run_sizes = {s.samples_s.size()};
      } else {
        Series& p = out.points[it->second];
        p.samples_s.insert(p.samples_s.end(), s.samples_s.begin(), s.samples_s.end());
        p.run_sizes.push_back(s.samples_s.size());
      }
    }
    for (const Skipped& k : r.skipped)
      out.skipped.push_back({k.key, k.reason + " [" + r.path + "]", k.wrong});
  }
  return out;
}

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
                                            opt.seed ^ fnv1a64(b.key), b.run_sizes, c.run_sizes);
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

}  // namespace

std::vector<ModelResult> compare_profiles(const calib::Profile& bp, const calib::Profile& cp,
                                          const Options& opt) {
  std::vector<ModelResult> out;
  const double z = norm_ppf(1 - opt.alpha / 2);
  const double up = 1 + opt.max_slowdown, down = 1 / (1 + opt.max_slowdown);
  auto id = [](const calib::Model& m) {
    return std::string(collective_info(m.collective).name) + " " + link_name(m);
  };
  std::map<std::string, const calib::Model*> cand;
  for (const auto& m : cp.models) cand[id(m)] = &m;
  std::set<std::string> matched;
  for (const auto& bm : bp.models) {
    ModelResult base;
    base.collective = std::string(collective_info(bm.collective).name);
    base.link = link_name(bm);
    auto it = cand.find(id(bm));
    if (it == cand.end()) {
      ModelResult r = base;
      r.param = "segments";
      r.verdict = "inconclusive";
      r.reason = "model only in the baseline profile";
      out.push_back(r);
      continue;
    }
    matched.insert(it->first);
    const calib::Model& cm = *it->second;
    if (bm.segments.size() != cm.segments.size()) {
      ModelResult r = base;
      r.param = "segments";
      r.baseline = double(bm.segments.size());
      r.candidate = double(cm.segments.size());
      r.ratio = r.candidate / r.baseline;
      r.ci_lo = r.ci_hi = r.ratio;
      r.verdict = "inconclusive";
      r.reason = "the number of size segments changed (" + std::to_string(bm.segments.size()) +
                 " -> " + std::to_string(cm.segments.size()) +
                 "): the size regimes moved; compare the points";
      out.push_back(r);
      continue;
    }
    const double sigma_fit = std::hypot(rel_uncertainty(bm), rel_uncertainty(cm));
    for (std::size_t s = 0; s < bm.segments.size(); ++s) {
      for (const char* param : {"bandwidth_GBps", "alpha_us"}) {
        const bool bw = std::string(param) == "bandwidth_GBps";
        const calib::Segment &bs = bm.segments[s], &cs = cm.segments[s];
        ModelResult r = base;
        r.segment = int(s);
        r.param = param;
        r.baseline = bw ? bs.bandwidth_GBps : bs.alpha_us;
        r.candidate = bw ? cs.bandwidth_GBps : cs.alpha_us;
        // sd of log(ratio): the two parameters' relative SEs in quadrature (independent fits;
        // relative SE = sd of the log to first order) when both profiles carry them. alpha and B
        // are fitted jointly and trade off, so a fit with a small time error can still leave
        // alpha uncertain by tens of percent; the fit-error fallback would call that a change.
        const std::optional<double> b_se = bw ? bs.bandwidth_rel_se : bs.alpha_rel_se;
        const std::optional<double> c_se = bw ? cs.bandwidth_rel_se : cs.alpha_rel_se;
        const bool from_se = b_se && c_se;
        const double sigma = from_se ? std::hypot(*b_se, *c_se) : sigma_fit;
        if (!(r.baseline > 0) || !(r.candidate > 0)) {
          r.ratio = r.ci_lo = r.ci_hi = r.baseline == r.candidate ? 1.0 : NAN;
          r.verdict = r.baseline == r.candidate ? "pass" : "inconclusive";
          r.reason = r.baseline == r.candidate ? "both 0" : "one side is 0: no ratio";
          out.push_back(r);
          continue;
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
          r.reason = std::string(bw ? "bandwidth fell" : "latency rose") + ": " + ci;
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
        out.push_back(r);
      }
    }
  }
  for (const auto& cm : cp.models)
    if (!matched.count(id(cm))) {
      ModelResult r;
      r.collective = std::string(collective_info(cm.collective).name);
      r.link = link_name(cm);
      r.param = "segments";
      r.verdict = "inconclusive";
      r.reason = "model only in the candidate profile";
      out.push_back(r);
    }
  return out;
}

Report compare_runs(const RunData& b, const RunData& c, const Options& opt,
                    const calib::Profile* bp, const calib::Profile* cp) {
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

  if (bp && cp) r.models = compare_profiles(*bp, *cp, opt);

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
    return r;
  }
  if (pairs.empty() && r.wrong_results.empty()) {
    r.verdict = "incomparable";
    r.exit_code = 2;
    r.incomparable_reason =
        "no point is in both files (" + std::to_string(b.points.size()) + " baseline, " +
        std::to_string(c.points.size()) +
        " candidate points; keys include the timing protocol and the config's parameters): run "
        "the same config with the same shardbench timing loop on both sides";
    return r;
  }

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

namespace {
json num_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
}  // namespace

json report_to_json(const Report& r) {
  json j;
  j["schema"] = kGateSchema;
  j["version"] = kGateVersion;
  j["verdict"] = r.verdict;
  j["exit_code"] = r.exit_code;
  j["incomparable_reason"] =
      r.incomparable_reason.empty() ? json(nullptr) : json(r.incomparable_reason);
  j["alpha"] = r.options.alpha;
  j["max_slowdown"] = r.options.max_slowdown;
  j["fdr"] = r.options.fdr;
  j["ci_level"] = 1 - r.options.alpha;
  j["ci_method"] = "percentile bootstrap of the ratio of medians";
  j["bootstrap_resamples"] = r.options.resamples;
  j["bootstrap_seed"] = r.options.seed;
  j["min_samples"] = r.options.min_samples;
  j["test"] =
      "Mann-Whitney U, two-sided: exact for untied samples of <= 20 on both sides, else normal "
      "approximation with tie and continuity corrections (per point: p_method)";
  j["format"] = r.format;
  j["baseline"] = {
      {"path", r.baseline_path}, {"sha256", r.baseline_sha256}, {"runs", r.baseline_runs}};
  j["candidate"] = {
      {"path", r.candidate_path}, {"sha256", r.candidate_sha256}, {"runs", r.candidate_runs}};
  if (r.baseline_profile) j["baseline_profile"] = *r.baseline_profile;
  if (r.candidate_profile) j["candidate_profile"] = *r.candidate_profile;
  j["env_differences"] = json::array();
  bool env_differs = false;
  for (const auto& e : r.env_differences) {
    j["env_differences"].push_back({{"field", e.field},
                                    {"baseline", e.baseline},
                                    {"candidate", e.candidate},
                                    {"tolerated", e.tolerated}});
    env_differs |= !e.tolerated;
  }
  j["env_change_allowed"] = env_differs && r.options.allow_env_change;
  j["points"] = json::array();
  for (const auto& p : r.points)
    j["points"].push_back({{"key", p.key},
                           {"label", p.label},
                           {"baseline_median_us", p.baseline_median_us},
                           {"candidate_median_us", p.candidate_median_us},
                           {"ratio", p.ratio},
                           {"ci_lo", p.ci_lo},
                           {"ci_hi", p.ci_hi},
                           {"p", p.p},
                           {"q", p.q},
                           {"p_method", p.p_method},
                           {"n_baseline", p.n_baseline},
                           {"n_candidate", p.n_candidate},
                           {"verdict", p.verdict},
                           {"reason", p.reason}});
  j["only_baseline"] = r.only_baseline;
  j["only_candidate"] = r.only_candidate;
  auto skipped = [](const std::vector<Skipped>& v) {
    json a = json::array();
    for (const auto& s : v) a.push_back({{"key", s.key}, {"reason", s.reason}});
    return a;
  };
  j["skipped_baseline"] = skipped(r.skipped_baseline);
  j["skipped_candidate"] = skipped(r.skipped_candidate);
  j["missing_in_candidate"] = r.missing_in_candidate;
  j["missing_allowed"] = !r.missing_in_candidate.empty() && r.options.allow_missing;
  j["wrong_results"] = r.wrong_results;
  j["warnings"] = r.warnings;
  j["models"] = json::array();
  for (const auto& m : r.models)
    j["models"].push_back({{"collective", m.collective},
                           {"link", m.link},
                           {"segment", m.segment < 0 ? json(nullptr) : json(m.segment)},
                           {"param", m.param},
                           {"baseline", num_or_null(m.baseline)},
                           {"candidate", num_or_null(m.candidate)},
                           {"ratio", num_or_null(m.ratio)},
                           {"ci_lo", num_or_null(m.ci_lo)},
                           {"ci_hi", num_or_null(m.ci_hi)},
                           {"verdict", m.verdict},
                           {"reason", m.reason}});
  j["counts"] = json::object();
  for (const char* v : {"pass", "regression", "improvement", "inconclusive"})
    j["counts"][v] = std::count_if(r.points.begin(), r.points.end(),
                                   [&](const PointResult& p) { return p.verdict == v; });
  return j;
}

void write_text_atomic(const std::string& path, const std::string& text) {
  write_texts_atomic({{path, text}});
}

void write_texts_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  namespace fs = std::filesystem;
  std::vector<fs::path> tmps;
  auto remove_tmps = [&] {
    for (const auto& t : tmps) {
      std::error_code ec;
      fs::remove(t, ec);
    }
  };
  std::random_device rd;
  for (const auto& [path, text] : files) {
    const fs::path target(path);
    std::error_code ec;
    if (fs::is_directory(target, ec)) {
      remove_tmps();
      throw Error(path + ": is a directory; give a file name. Nothing was written");
    }
    fs::path dir = target.parent_path();
    if (dir.empty()) dir = ".";
    const fs::path tmp = dir / ("." + target.filename().string() + ".tmp." +
                                std::to_string(::getpid()) + "." + std::to_string(rd()));
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      const std::string why = std::strerror(errno);
      remove_tmps();
      throw Error(path + ": cannot create a temporary file in " + dir.string() + " (" + why +
                  "); check that the directory exists and is writable. Nothing was written");
    }
    tmps.push_back(tmp);
    out << text;
    out.flush();
    if (!out) {
      remove_tmps();
      throw Error(path + ": write failed (disk full?); nothing was written");
    }
  }
  // Every text is on disk: rename, the first file (the one that records success) last.
  for (std::size_t i = files.size(); i-- > 0;) {
    std::error_code ec;
    fs::rename(tmps[i], files[i].first, ec);
    if (ec) {
      const std::string why = ec.message();
      tmps.resize(i + 1);  // the later ones are in place already
      remove_tmps();
      throw Error(files[i].first + ": cannot rename the temporary file into place (" + why + ")");
    }
  }
}

std::string report_markdown(const Report& r) {
  std::ostringstream o;
  std::map<std::string, int> n;
  for (const auto& p : r.points) ++n[p.verdict];
  o << "## shardbench gate: **" << r.verdict << "** (exit " << r.exit_code << ")\n\n";
  o << "baseline `" << r.baseline_path << "`, candidate `" << r.candidate_path << "`; "
    << r.points.size() << " common points: " << n["regression"] << " regression, "
    << n["inconclusive"] << " inconclusive, " << n["improvement"] << " improvement, " << n["pass"]
    << " pass. alpha " << r.options.alpha << " (" << r.options.fdr << "), max slowdown "
    << fmt(100 * r.options.max_slowdown, "%.3g") << "%, "
    << fmt(100 * (1 - r.options.alpha), "%.3g") << "% bootstrap CI of the median ratio.\n\n";
  if (!r.incomparable_reason.empty()) o << "**Incomparable:** " << r.incomparable_reason << "\n\n";
  for (const auto& w : r.warnings) o << "**Warning:** " << w << "\n\n";
  if (!r.env_differences.empty()) {
    const bool differs = std::any_of(r.env_differences.begin(), r.env_differences.end(),
                                     [](const EnvDifference& e) { return !e.tolerated; });
    o << (!differs ? "**Environment differences (tolerated):**\n\n"
          : r.options.allow_env_change
              ? "**Environment changed (allowed by --allow-env-change):**\n\n"
              : "**Environment differences:**\n\n");
    for (const auto& e : r.env_differences)
      o << "- `" << e.field << "`: baseline " << e.baseline.dump() << ", candidate "
        << e.candidate.dump()
        << (e.tolerated ? " (tolerated: a Google Benchmark context key older releases omit)" : "")
        << "\n";
    o << "\n";
  }
  if (!r.wrong_results.empty()) {
    o << "**Wrong results in the candidate (" << r.wrong_results.size() << "; a regression):**\n\n";
    for (const auto& k : r.wrong_results) o << "- `" << k << "`\n";
    o << "\n";
  }
  if (!r.missing_in_candidate.empty())
    o << "**Coverage lost:** " << r.missing_in_candidate.size()
      << " baseline point(s) have no usable candidate samples (listed below as only in the "
         "baseline or skipped in the candidate); "
      << (r.options.allow_missing ? "allowed by --allow-missing."
                                  : "the run is inconclusive (pass --allow-missing to accept).")
      << "\n\n";
  if (!r.points.empty()) {
    o << "| verdict | ratio | CI | p | q | baseline us | candidate us | n b/c | point | reason |\n"
      << "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& p : r.points)
      o << "| " << p.verdict << " | " << fmt(p.ratio, "%.3f") << " | [" << fmt(p.ci_lo, "%.3f")
        << ", " << fmt(p.ci_hi, "%.3f") << "] | " << fmt(p.p, "%.2g") << " | " << fmt(p.q, "%.2g")
        << " | " << fmt(p.baseline_median_us) << " | " << fmt(p.candidate_median_us) << " | "
        << p.n_baseline << "/" << p.n_candidate << " | " << p.label << " | " << p.reason << " |\n";
    o << "\n";
  }
  auto list = [&](const char* title, const std::vector<std::string>& keys) {
    if (keys.empty()) return;
    o << "**" << title << " (" << keys.size() << "):**\n\n";
    for (const auto& k : keys) o << "- `" << k << "`\n";
    o << "\n";
  };
  list("Only in the baseline", r.only_baseline);
  list("Only in the candidate", r.only_candidate);
  auto skipped = [&](const char* title, const std::vector<Skipped>& v) {
    if (v.empty()) return;
    o << "**" << title << " (" << v.size() << "):**\n\n";
    for (const auto& s : v) o << "- `" << s.key << "`: " << s.reason << "\n";
    o << "\n";
  };
  skipped("Skipped in the baseline (no usable samples)", r.skipped_baseline);
  skipped("Skipped in the candidate (no usable samples)", r.skipped_candidate);
  if (!r.models.empty()) {
    o << "| model verdict | collective | link | segment | param | baseline | candidate | ratio "
         "| CI | reason |\n|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& m : r.models)
      o << "| " << m.verdict << " | " << m.collective << " | " << m.link << " | "
        << (m.segment < 0 ? std::string("-") : std::to_string(m.segment)) << " | " << m.param
        << " | " << fmt(m.baseline) << " | " << fmt(m.candidate) << " | " << fmt(m.ratio, "%.3f")
        << " | [" << fmt(m.ci_lo, "%.3f") << ", " << fmt(m.ci_hi, "%.3f") << "] | " << m.reason
        << " |\n";
    o << "\n";
  }
  return o.str();
}

}  // namespace shardcal::gate

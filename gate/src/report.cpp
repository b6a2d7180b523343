// The gate's report (docs/GATE.md "Report"): JSON for tools, Markdown for people.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "detail.hpp"
#include "shardcal/formats/schemas.hpp"
#include "shardcal/gate/compare.hpp"

namespace shardcal::gate {

using detail::fmt;
using nlohmann::json;

namespace {
json num_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json points_json(const std::vector<PointResult>& points) {
  json a = json::array();
  for (const auto& p : points)
    a.push_back({{"key", p.key},
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
  return a;
}

json models_json(const std::vector<ModelResult>& models) {
  json a = json::array();
  for (const auto& m : models)
    a.push_back({{"collective", m.collective},
                 {"link", m.link},
                 {"segment", m.segment < 0 ? json(nullptr) : json(m.segment)},
                 {"param", m.param},
                 {"at", m.at.empty() ? json(nullptr) : json(m.at)},
                 {"baseline", num_or_null(m.baseline)},
                 {"candidate", num_or_null(m.candidate)},
                 {"ratio", num_or_null(m.ratio)},
                 {"ci_lo", num_or_null(m.ci_lo)},
                 {"ci_hi", num_or_null(m.ci_hi)},
                 {"verdict", m.verdict},
                 {"reason", m.reason}});
  return a;
}

json skipped_json(const std::vector<Skipped>& v) {
  json a = json::array();
  for (const auto& s : v) a.push_back({{"key", s.key}, {"reason", s.reason}});
  return a;
}
}  // namespace

json report_to_json(const Report& r) {
  json j;
  j["schema"] = formats::kGateSchema;
  j["version"] = formats::kGateVersion;
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
  j["points"] = points_json(r.points);
  j["only_baseline"] = r.only_baseline;
  j["only_candidate"] = r.only_candidate;
  j["skipped_baseline"] = skipped_json(r.skipped_baseline);
  j["skipped_candidate"] = skipped_json(r.skipped_candidate);
  j["missing_in_candidate"] = r.missing_in_candidate;
  j["missing_allowed"] = !r.missing_in_candidate.empty() && r.options.allow_missing;
  j["wrong_results"] = r.wrong_results;
  j["warnings"] = r.warnings;
  j["models"] = models_json(r.models);
  j["counts"] = json::object();
  for (const char* v : {"pass", "regression", "improvement", "inconclusive"})
    j["counts"][v] = std::count_if(r.points.begin(), r.points.end(),
                                   [&](const PointResult& p) { return p.verdict == v; });
  return j;
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
        << (m.at.empty() ? "" : " at " + m.at) << " | " << fmt(m.baseline) << " | " << fmt(m.candidate) << " | " << fmt(m.ratio, "%.3f")
        << " | [" << fmt(m.ci_lo, "%.3f") << ", " << fmt(m.ci_hi, "%.3f") << "] | " << m.reason
        << " |\n";
    o << "\n";
  }
  return o.str();
}

}  // namespace shardcal::gate

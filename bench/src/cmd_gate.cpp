// `shardbench gate`: statistical performance-regression gate between two runs (docs/GATE.md).
// A thin shell over gate/ (shardcal_gate): read both runs, compare, print the Markdown table,
// write the JSON / Markdown reports atomically (both or neither), exit 0 pass, 1 regression, 2 bad
// input or incomparable environments, 3 inconclusive (70: an internal error, main.cpp).
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "shardcal/calibrate/loaded_profile.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/atomic_write.hpp"
#include "shardcal/formats/schemas.hpp"
#include "shardcal/gate/compare.hpp"

namespace shardbench {

namespace {

struct GateArgs {
  std::vector<std::string> baseline, candidate;
  std::string json_out, markdown_out;
  std::string baseline_profile, candidate_profile;
  shardcal::gate::Options opt;
  bool quiet = false;
};

int run(const GateArgs& a) {
  namespace g = shardcal::gate;
  if (a.baseline_profile.empty() != a.candidate_profile.empty())
    throw shardcal::Error(
        "--baseline-profile and --candidate-profile go together; give both "
        "(profiles from `shardbench calibrate` of the two runs) or neither");
  std::vector<g::RunData> bs, cs;
  for (const auto& p : a.baseline) bs.push_back(g::read_run(p));
  for (const auto& p : a.candidate) cs.push_back(g::read_run(p));
  const g::RunData b = g::pool_runs(bs, "baseline");
  const g::RunData c = g::pool_runs(cs, "candidate");
  std::shared_ptr<const shardcal::calib::LoadedProfile> bp, cp;
  if (!a.baseline_profile.empty()) {
    bp = shardcal::calib::LoadedProfile::load(a.baseline_profile, "--baseline-profile");
    cp = shardcal::calib::LoadedProfile::load(a.candidate_profile, "--candidate-profile");
  }
  g::Report r =
      g::compare_runs(b, c, a.opt, bp ? &bp->profile() : nullptr, cp ? &cp->profile() : nullptr);
  if (bp) {
    r.baseline_profile = a.baseline_profile;
    r.candidate_profile = a.candidate_profile;
  }
  const std::string md = g::report_markdown(r);
  // Both reports or neither: a failing --markdown must not leave a JSON report saying exit 0.
  std::vector<std::pair<std::string, std::string>> files;
  if (!a.json_out.empty()) files.emplace_back(a.json_out, g::report_to_json(r).dump(1) + "\n");
  if (!a.markdown_out.empty()) files.emplace_back(a.markdown_out, md);
  shardcal::formats::write_texts_atomic(files);
  if (!a.quiet) std::cout << md << std::flush;
  for (const auto& w : r.warnings) std::cerr << ("shardbench: warning: " + w + "\n") << std::flush;
  if (r.verdict == "incomparable")
    std::cerr << ("shardbench: error: " + r.incomparable_reason + "\n") << std::flush;
  return r.exit_code;
}

}  // namespace

Runner add_gate_command(CLI::App& app) {
  auto args = std::make_shared<GateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "gate",
      "Statistical performance-regression gate: compare a candidate run with a baseline run "
      "(sweep results JSON Lines, or Google Benchmark JSON from --benchmark_repetitions=N "
      "--benchmark_out=F.json). Points are matched by key; per point a Mann-Whitney U test "
      "(p, FDR-controlled q) and a bootstrap CI of the ratio of medians. A point is a regression "
      "when q <= alpha AND its CI lies above 1 + max-slowdown; pass when its CI lies at or "
      "below 1 + max-slowdown; otherwise (or with too few / bimodal samples) inconclusive.\n"
      "Exit codes: 0 pass, 1 regression, 2 bad input or incomparable environments (backend, "
      "world, ranks per host, library versions, thread level differ; or no common point), "
      "3 inconclusive (re-run with more samples or on a quieter machine; also baseline points "
      "the candidate lost, unless --allow-missing; wrong results in the candidate are 1), 70 "
      "internal error (a bug). Details: docs/GATE.md");
  cmd->add_option("--baseline", args->baseline,
                  "Baseline run(s) (the reference). Several files (e.g. runs interleaved in time "
                  "with the candidate's) are pooled: a key's samples are concatenated and the CI is "
                  "bootstrapped over runs, then samples, so drift between runs widens the CI "
                  "instead of faking a difference")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--candidate", args->candidate, "Candidate run(s) (the change under test)")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--max-slowdown", args->opt.max_slowdown,
                  "Largest tolerated slowdown as a fraction (0.05 = 5%): a regression's ratio "
                  "CI must lie entirely above 1 + this")
      ->capture_default_str();
  cmd->add_option("--alpha", args->opt.alpha,
                  "Significance level after false-discovery-rate control over all points; the "
                  "ratio CI level is 1 - alpha")
      ->capture_default_str();
  cmd->add_option("--fdr", args->opt.fdr,
                  "Multiple-testing control: benjamini-hochberg (FDR; more power over many "
                  "points) or holm (family-wise error, any dependence)")
      ->check(CLI::IsMember({"benjamini-hochberg", "holm"}))
      ->capture_default_str();
  cmd->add_option("--min-samples", args->opt.min_samples,
                  "Fewer samples on either side make a point inconclusive")
      ->capture_default_str();
  cmd->add_option("--resamples", args->opt.resamples, "Bootstrap resamples per point")
      ->check(CLI::Range(100, 1000000))
      ->capture_default_str();
  cmd->add_option("--seed", args->opt.seed, "Bootstrap seed (verdicts are reproducible)")
      ->capture_default_str();
  cmd->add_flag("--allow-env-change", args->opt.allow_env_change,
                "Compare even when the environments differ; the report lists the differences "
                "and sets env_change_allowed");
  cmd->add_flag("--allow-missing", args->opt.allow_missing,
                "Accept baseline points the candidate has no usable samples for (only in the "
                "baseline, or skipped): listed and flagged (missing_allowed) instead of making "
                "the run inconclusive");
  cmd->add_option("--json", args->json_out,
                  "Write the JSON report (schema " +
                      shardcal::formats::schema_label(shardcal::formats::kGateSchema,
                                                      shardcal::formats::kGateVersion) +
                      ") here, atomically");
  cmd->add_option("--markdown", args->markdown_out, "Write the Markdown report here, atomically");
  cmd->add_option("--baseline-profile", args->baseline_profile,
                  "Profile calibrated from the baseline (`shardbench calibrate`): compare "
                  "alpha and bandwidth per model");
  cmd->add_option("--candidate-profile", args->candidate_profile,
                  "Profile calibrated from the candidate");
  cmd->add_flag("--quiet", args->quiet, "Do not print the Markdown report on stdout");
  return [args] { return run(*args); };
}

}  // namespace shardbench

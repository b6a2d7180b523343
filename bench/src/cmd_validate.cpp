// `shardbench validate`: does the cost-based planner choose well? A cost model is only worth
// having if the plan it prices cheapest is also fast when measured. For every transition point
// of a sweep config: the plan the planner chooses under a calibrated profile, the greedy
// (rule-based) plan and the k cheapest distinct plans, each measured with the sweep's own
// transition timing (runner.cpp measure_transition: PlanWorkspace, barrier, timer, slowest rank
// per sample, output check), interleaved in rounds so that drifting machine noise hits every
// plan alike. Writes the validate file (docs/RESULTS_FORMAT.md, "Validate file") atomically.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <unistd.h>

#include "commands.hpp"
#include "profile_planner.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/atomic_write.hpp"
#include "shardcal/formats/median.hpp"
#include "shardcal/formats/schemas.hpp"
#include "shardcal/mesh_comm.hpp"
#include "shardcal/placement.hpp"
#include "shardcal/topology.hpp"
#include "sweep/config.hpp"
#include "sweep/regret.hpp"
#include "sweep/runner.hpp"
#include "sweep/signals.hpp"
#include "sweep/simulation_env.hpp"
#include "sweep/stats.hpp"
#include "sweep/sweep.hpp"
#include "sweep/transition_planner.hpp"

namespace shardbench {

namespace {

using nlohmann::json;
namespace sw = sweep;

using shardcal::formats::kValidateSchema;
using shardcal::formats::kValidateVersion;
constexpr const char* kSummarySchema = shardcal::formats::kValidateSummarySchema;

struct ValidateCli {
  BackendOptions backend;
  std::string profile, config, out;
  int k = 3;
  int rounds = 5;
  int ranks_per_host = 0;
  bool quiet = false;
};

// One distinct plan of a transition and what it was chosen as.
struct Candidate {
  shardcal::Plan plan;
  std::vector<double> step_us;
  double predicted_us = 0;
  std::string unpriced;            // why the profile cannot price it ("" = priced): greedy only
  std::vector<std::string> roles;  // "chosen", "greedy", "alternative" (one plan may be several)
  int rank = 0;                    // position by predicted cost among the listed plans
  std::vector<double> samples;     // seconds, every round's samples
  std::uint64_t wrong = 0;
  bool checked = false;
};

// Equal signatures = the same steps through the same states.
std::string plan_signature(const shardcal::Plan& p) {
  std::string s;
  for (const auto& st : p.steps)
    s += std::to_string(st.mesh_dim) + ":" + shardcal::step_kind_name(st.kind) + ">" +
         shardcal::state_key(st.after) + ";";
  return s;
}

struct Planned {
  std::vector<Candidate> plans;  // [0] = chosen
  std::size_t states_explored = 0;
};

Planned plan_transition(const shardcal::TensorSpec& from, const shardcal::TensorSpec& to,
                        const CostPlanner& planner, int rph, int k) {
  shardcal::SearchOptions opt;
  opt.k = k;
  const shardcal::SearchResult r = planner.search(from, to, rph, opt);
  Planned out;
  out.states_explored = r.states_explored;
  std::vector<std::string> sigs;
  auto add = [&](const shardcal::Plan& plan, const std::vector<double>& step_us, double total,
                 const std::string& role) {
    const std::string sig = plan_signature(plan);
    const auto it = std::find(sigs.begin(), sigs.end(), sig);
    if (it != sigs.end()) {
      auto& roles = out.plans[std::size_t(it - sigs.begin())].roles;
      if (std::find(roles.begin(), roles.end(), role) == roles.end()) roles.push_back(role);
      return;
    }
    shardcal::validate_plan(plan);
    sigs.push_back(sig);
    Candidate c;
    c.plan = plan;
    c.step_us = step_us;
    c.predicted_us = total;
    c.roles = {role};
    out.plans.push_back(std::move(c));
  };
  if (r.alternatives.empty()) throw shardcal::Error("the cost planner returned no plan");
  add(r.alternatives[0].plan, r.alternatives[0].step_cost, r.alternatives[0].total, "chosen");
  const shardcal::CostedPlan greedy =
      shardcal::price_plan(shardcal::plan_redistribution(from, to), planner.step_cost(rph));
  // The greedy plan may take a step the profile prices +inf (no model for its collective): it is
  // still measured, but has no prediction (left out of the MAPE, counted as unpriced).
  std::string greedy_unpriced;
  for (std::size_t i = 0; i < greedy.plan.steps.size(); ++i) {
    if (std::isfinite(greedy.step_cost[i])) continue;
    const shardcal::StepTraffic t = shardcal::describe_step(greedy.plan.steps[i]);
    const std::string why =
        t.collective
            ? "no model for " + std::string(shardcal::collective_info(*t.collective).name)
            : std::string("no price for ") + shardcal::step_kind_name(greedy.plan.steps[i].kind);
    if (greedy_unpriced.find(why) == std::string::npos)
      greedy_unpriced += (greedy_unpriced.empty() ? "" : "; ") + why;
  }
  for (std::size_t i = 1; i < r.alternatives.size(); ++i)
    add(r.alternatives[i].plan, r.alternatives[i].step_cost, r.alternatives[i].total, "alternative");
  const std::size_t n_alternatives = out.plans.size();
  add(greedy.plan, greedy.step_cost, greedy.total, "greedy");
  if (!greedy_unpriced.empty() && out.plans.size() > n_alternatives)
    out.plans.back().unpriced = greedy_unpriced;
  // Rank: order by predicted cost; the alternatives come sorted, a greedy plan outside them
  // ranks after them.
  for (std::size_t i = 0; i < out.plans.size(); ++i) out.plans[i].rank = int(std::min(i, n_alternatives));
  return out;
}


std::string fmt_us(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us < 10 ? "%.2f us" : us < 1000 ? "%.1f us" : "%.0f us", us);
  return buf;
}

// The transitions of a config, each with its candidate plans: identical on every rank.
struct ValidatePoints {
  std::vector<sw::Point> points;
  std::vector<Planned> planned;  // one per point
  std::size_t skipped_collectives = 0;
  int rph = 1;                   // ranks per host the profile prices with
};

// Phase 1: points and plans; pure, identical on every rank; problems are input errors.
ValidatePoints plan_validate_points(shardcal::Communicator& world, const ValidateCli& cli,
                                    const sw::SweepConfig& cfg, const CostPlanner& planner) {
  ValidatePoints v;
  try {
    for (sw::Point& p : sw::expand_points(cfg, world.size())) {
      if (p.transition) v.points.push_back(std::move(p));
      else ++v.skipped_collectives;
    }
  } catch (const shardcal::Error& e) {
    throw sw::InputError(e.what());
  }
  if (v.points.empty())
    throw sw::InputError(cfg.source + ": the config selects no transition; validate measures "
                         "transitions (\"transitions\": [{\"mesh\": \"2x2\", \"from\": \"S(0),R\", "
                         "\"to\": \"R,S(0)\"}])");
  const shardcal::Topology topo = shardcal::discover_topology(world);
  sw::check_start_clock(world, cfg, topo);  // a window start's clock, before anything runs
  v.rph = planner.resolve_ranks_per_host(topo);
  // Agreed on below: a rank that failed alone must not leave the others waiting.
  std::string plan_error;
  for (const sw::Point& p : v.points) {
    try {
      // The layouts as the config expansion parsed them (sweep/config.hpp: parsed once).
      v.planned.push_back(plan_transition(p.from_spec, p.to_spec, planner, v.rph, cli.k));
    } catch (const shardcal::Error& e) {
      plan_error = "planning " + p.label() + ": " + e.what();
      break;
    }
  }
  sw::agree_on_input(world, plan_error);
  {  // every rank runs the same plans, in the same order (the profile's sha256 agreed already)
    std::string text;
    std::size_t n = 0;
    for (const Planned& pl : v.planned)
      for (const Candidate& c : pl.plans) text += c.plan.to_string() + "\n", ++n;
    sw::check_same_plans(
        world, "validate", text,
        std::to_string(n) + " plan(s) of " + std::to_string(v.planned.size()) + " transition(s)");
  }
  return v;
}

// Phase 2: rank 0 checks the directory now (before minutes of measuring) and opens the temporary
// file renamed over --out at the end; every rank learns the outcome. Whatever ends the run early
// (a signal, a failing collective) destroys the file uncommitted, which removes the temporary file.
std::unique_ptr<shardcal::formats::AtomicFile> open_validate_output(shardcal::Communicator& world,
                                                                   const ValidateCli& cli) {
  std::string status = "ok";
  std::unique_ptr<shardcal::formats::AtomicFile> file;
  if (world.rank() == 0) {
    const auto dir = std::filesystem::path(cli.out).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      status = "--out " + cli.out + ": directory " + dir.string() + " does not exist; create it first";
    else {
      try {
        file = std::make_unique<shardcal::formats::AtomicFile>(cli.out);
      } catch (const shardcal::Error& e) {
        status = std::string("--out ") + e.what();
      }
    }
  }
  world.broadcast_string(status, 0);
  if (status != "ok") throw sw::InputError(status);
  return file;
}

// Measures every plan of one transition in rounds; the order rotates so that no plan always runs
// first (or right after another). Returns the stopping signal, 0 when every round ran.
int measure_rounds(shardcal::MeshCommunicator& mc, std::vector<Candidate>& plans,
                   const sw::SweepConfig& sub, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t j = 0; j < plans.size(); ++j) {
      Candidate& c = plans[(j + std::size_t(round)) % plans.size()];
      const sw::Measurement m = sw::measure_transition(mc, c.plan, sub);
      if (m.abandoned) return m.signal;
      c.samples.insert(c.samples.end(), m.samples.begin(), m.samples.end());
      c.wrong += m.wrong;
      c.checked = c.checked || m.checked;
    }
  }
  return 0;
}

// What the run adds up over its transitions, for the summary record and line.
struct Totals {
  std::vector<double> regrets, speedups, rel_errors;
  std::uint64_t wrong = 0;
  std::size_t n_significant = 0, n_plans = 0, n_unpriced = 0, n_left_out_wrong = 0;
  std::string unpriced_why;  // distinct reasons, for the summary line
  double best_speedup = 0;
  std::string best_speedup_label;
};

// One transition's measured verdict.
struct Verdict {
  std::vector<sw::Stats> st;  // per plan
  double chosen_us = 0, greedy_us = 0, speedup = 1;
  sw::Regret regret;
};

// Statistics, regret. Plans that produced wrong data are no alternative: left out of the best
// measured time (sweep/regret.hpp; they are counted in "wrong").
Verdict judge_transition(const std::vector<Candidate>& plans, double confidence,
                         const std::string& label, Totals& t) {
  Verdict v;
  std::vector<sw::MeasuredPlan> measured;
  for (const Candidate& c : plans) {
    v.st.push_back(sw::compute_stats(c.samples, confidence));
    measured.push_back({v.st.back(), c.wrong > 0});
    t.wrong += c.wrong;
  }
  v.chosen_us = v.st[0].p50 * 1e6;
  for (std::size_t i = 0; i < plans.size(); ++i)
    for (const auto& role : plans[i].roles)
      if (role == "greedy") v.greedy_us = v.st[i].p50 * 1e6;
  // Beyond noise: the chosen plan's median CI lies wholly above a (correct) plan's.
  v.regret = sw::regret_of(measured);
  t.n_significant += v.regret.significant ? 1 : 0;
  t.n_left_out_wrong += v.regret.left_out_wrong;
  v.speedup = v.chosen_us > 0 ? v.greedy_us / v.chosen_us : 1.0;
  t.regrets.push_back(v.regret.regret);
  t.speedups.push_back(v.speedup);
  if (v.speedup > t.best_speedup) t.best_speedup = v.speedup, t.best_speedup_label = label;
  return v;
}

// The "plans" array of a validate record: one entry per role of each plan.
json plans_json(const std::vector<Candidate>& plans, const Verdict& v, Totals& t) {
  json jplans = json::array();
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const Candidate& c = plans[i];
    const sw::Stats& st = v.st[i];
    const double meas_us = st.p50 * 1e6;
    // A plan the profile cannot price (+inf) has no prediction: no rel_error, not in the MAPE.
    const bool priced = std::isfinite(c.predicted_us);
    const double rel = meas_us > 0 ? (c.predicted_us - meas_us) / meas_us : 0.0;
    ++t.n_plans;
    if (priced) {
      t.rel_errors.push_back(std::abs(rel));
    } else {
      ++t.n_unpriced;
      if (t.unpriced_why.find(c.unpriced) == std::string::npos)
        t.unpriced_why += (t.unpriced_why.empty() ? "" : "; ") + c.unpriced;
    }
    json steps = json::array();
    for (const auto& s : c.plan.steps) steps.push_back(sw::step_short(s));
    json step_us = json::array();
    for (double u : c.step_us) step_us.push_back(std::isfinite(u) ? json(u) : json(nullptr));
    for (const auto& role : c.roles) {
      jplans.push_back({{"role", role},
                        {"rank", c.rank},
                        {"steps", steps},
                        {"step_predicted_us", step_us},
                        {"predicted_us", priced ? json(c.predicted_us) : json(nullptr)},
                        {"measured_us", {{"median", meas_us},
                                         {"ci_lo", st.ci_lo * 1e6},
                                         {"ci_hi", st.ci_hi * 1e6},
                                         {"samples", st.n}}},
                        {"rel_error", priced ? json(rel) : json(nullptr)},
                        {"wrong", c.checked ? json(c.wrong) : json(nullptr)}});
      if (!priced) jplans.back()["unpriced"] = c.unpriced.empty() ? "priced +inf" : c.unpriced;
    }
  }
  return jplans;
}

// The transition's record (docs/RESULTS_FORMAT.md "Validate file").
json transition_record(const sw::Point& p, const Planned& planned, const Verdict& v, json jplans,
                       const ValidateCli& cli, const CostPlanner& planner, int rph) {
  return {{"schema", kValidateSchema},
          {"version", kValidateVersion},
          {"profile", planner.profile()},
          {"ranks_per_host", rph},
          {"transition", {{"mesh", p.mesh},
                          {"shape", shardcal::shape_to_string(p.shape)},
                          {"dtype", std::string(shardcal::dtype_name(p.dtype))},
                          {"from", p.from},
                          {"to", p.to},
                          {"from_given", p.from_given},
                          {"to_given", p.to_given},
                          {"distribution", p.dist.name()},
                          {"size", p.size},
                          {"key", p.key()}}},
          {"plans", std::move(jplans)},
          {"regret", v.regret.regret},
          {"regret_significant", v.regret.significant},
          {"greedy_speedup", v.speedup},
          {"search", {{"k", cli.k}, {"states_explored", planned.states_explored}}},
          {"rounds", cli.rounds}};
}

// The progress line of one transition (stdout, rank 0).
std::string transition_line(std::size_t ti, std::size_t n, const sw::Point& p,
                            const std::vector<Candidate>& plans, const Verdict& v) {
  std::ostringstream os;
  os << "[" << ti + 1 << "/" << n << "] " << p.label() << ": chosen " << fmt_us(v.chosen_us)
     << " (predicted " << fmt_us(plans[0].predicted_us) << ", " << plans[0].plan.steps.size() << " steps)";
  if (plans[0].roles.size() > 1) os << " = greedy";
  else os << ", greedy " << fmt_us(v.greedy_us);
  for (const auto& c : plans)
    if (!c.unpriced.empty()) os << " (greedy not priceable: " << c.unpriced << ")";
  char buf[96];
  std::snprintf(buf, sizeof buf, ", %zu plan(s), regret %.3f%s, greedy/chosen %.2fx", plans.size(),
                v.regret.regret, v.regret.significant ? " (beyond the CIs)" : "", v.speedup);
  os << buf;
  std::uint64_t w = 0;
  for (const auto& c : plans) w += c.wrong;
  if (w > 0)
    os << "  WRONG " << w
       << (v.regret.left_out_wrong > 0 ? " (plans with wrong data left out of the regret)" : "");
  return os.str();
}

// The summary record (the file's last line).
json summary_record(std::size_t transitions, const Totals& t, const std::vector<double>& sorted,
                    const json& simulation) {
  double mape = 0;
  for (double e : t.rel_errors) mape += e;
  mape = t.rel_errors.empty() ? 0 : mape / double(t.rel_errors.size());
  json summary = {{"schema", kSummarySchema},
                  {"version", kValidateVersion},
                  {"transitions", transitions},
                  {"plans_measured", t.n_plans},
                  {"plans_unpriced", t.n_unpriced},
                  {"regret", {{"median", shardcal::formats::median_or_zero(sorted)},
                              {"p95", sw::percentile_sorted(sorted, 0.95)},
                              {"max", sorted.back()},
                              {"significant", t.n_significant}}},
                  {"mape", mape},
                  {"greedy_speedup", {{"median", shardcal::formats::median_or_zero(t.speedups)},
                                      {"max", t.best_speedup},
                                      {"max_transition", t.best_speedup_label}}},
                  {"wrong", t.wrong}};
  if (!simulation.is_null()) summary["simulation"] = simulation;
  return summary;
}

// Phase 4 (rank 0): the summary line, the file renamed over --out. Returns "ok" or the error.
std::string finish_validate_output(const ValidateCli& cli, std::size_t transitions,
                                   const Totals& t, const json& simulation,
                                   shardcal::formats::AtomicFile& file) {
  std::vector<double> sorted = t.regrets;
  std::sort(sorted.begin(), sorted.end());
  const json summary = summary_record(transitions, t, sorted, simulation);
  std::string status = "ok";
  file.stream() << summary.dump() << '\n';
  try {
    file.commit();
  } catch (const shardcal::Error& e) {
    status = std::string("--out ") + e.what();  // the message starts with the path
  }
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "validate: %zu transition(s): regret median %.3f, p95 %.3f (max %.3f; %zu beyond the "
                "CIs); prediction MAPE %.1f%% over %zu plan(s); greedy/chosen up to %.2fx",
                transitions, summary["regret"]["median"].get<double>(),
                sw::percentile_sorted(sorted, 0.95),
                sorted.back(), t.n_significant, summary["mape"].get<double>() * 100,
                t.rel_errors.size(), t.best_speedup);
  std::cout << buf << " (" << t.best_speedup_label << ")\n";
  if (t.n_unpriced > 0)
    std::cout << "validate: " << t.n_unpriced << " plan(s) the profile cannot price ("
              << t.unpriced_why << ") were measured but left out of the MAPE\n";
  if (t.n_left_out_wrong > 0)
    std::cout
        << "validate: " << t.n_left_out_wrong
        << " plan(s) that produced wrong data were left out of the best time of the regret\n";
  if (status == "ok") std::cout << "validate: wrote " << cli.out << "\n";
  std::cout.flush();
  return status;
}

// Runs on every rank. Returns the exit code (the same on every rank).
int run_validate_rank(shardcal::Communicator& world, const ValidateCli& cli,
                      const sw::SweepConfig& cfg, const CostPlanner& planner) {
  const bool root = world.rank() == 0;
  ValidatePoints v = plan_validate_points(world, cli, cfg, planner);
  const std::vector<sw::Point>& points = v.points;

  // A simulated run says so, and on what platform (simulation_env.hpp), like a sweep's context;
  // read before measuring, so a malformed description costs nothing.
  const json simulation = sw::simulation_description();

  const std::unique_ptr<shardcal::formats::AtomicFile> file = open_validate_output(world, cli);
  if (root && !cli.quiet) {
    std::fprintf(stderr,
                 "validate: %zu transition(s), profile %s (cluster %s), %d ranks per host, k=%d, "
                 "%d rounds%s\n",
                 points.size(), planner.loaded().path().c_str(),
                 planner.loaded().profile().cluster.c_str(), v.rph, cli.k, cli.rounds,
                 v.skipped_collectives ? (", " + std::to_string(v.skipped_collectives) +
                                          " collective point(s) of the config ignored")
                                             .c_str()
                                       : "");
  }

  // Per round and plan: the config's budget split over the rounds, no early CI stop (every plan
  // gets its share of every round).
  sw::SweepConfig sub = cfg;
  sub.iterations_min = std::max(1, (cfg.iterations_min + cli.rounds - 1) / cli.rounds);
  sub.iterations_max = std::max(sub.iterations_min, cfg.iterations_max / cli.rounds);
  sub.time_budget_s = cfg.time_budget_s / cli.rounds;
  sub.target_rel_ci = 0;

  // Phase 3: every transition, every plan, in rounds; rank 0 writes one record each.
  Totals totals;
  std::unique_ptr<shardcal::MeshCommunicator> mc;
  for (std::size_t ti = 0; ti < points.size(); ++ti) {
    const sw::Point& p = points[ti];
    std::vector<Candidate>& plans = v.planned[ti].plans;
    if (!mc || mc->mesh().to_string() != p.mesh)
      mc = std::make_unique<shardcal::MeshCommunicator>(p.device_mesh, world);
    if (const int signal = measure_rounds(*mc, plans, sub, cli.rounds); signal != 0) {
      if (root) std::fprintf(stderr, "validate: stopped by signal %d; no output written\n", signal);
      return sw::exit_code_for_signal(signal);
    }
    const Verdict verdict = judge_transition(plans, cfg.confidence, p.label(), totals);
    json rec = transition_record(p, v.planned[ti], verdict, plans_json(plans, verdict, totals), cli,
                                 planner, v.rph);
    if (root) {
      file->stream() << rec.dump() << '\n';
      std::cout << transition_line(ti, points.size(), p, plans, verdict) << std::endl;
    }
  }

  std::string status = "ok";
  if (root) status = finish_validate_output(cli, points.size(), totals, simulation, *file);
  world.broadcast_string(status, 0);
  if (status != "ok") throw shardcal::Error(status);
  if (totals.wrong > 0) {
    if (root)
      std::fprintf(stderr, "validate: %llu wrong element(s): some plan produced wrong data (see \"wrong\" in %s)\n",
                   static_cast<unsigned long long>(totals.wrong), cli.out.c_str());
    return 1;
  }
  return 0;
}

// What `shardbench validate` runs once its options are parsed; returns the exit code.
int run_validate(const ValidateCli& cli) {
  return launch_ranks(cli.backend, [&](shardcal::Communicator& world) -> int {
    // Every rank loads its input; the ranks agree on errors (one message everywhere).
    std::string error;
    sw::SweepConfig cfg;
    std::shared_ptr<const CostPlanner> planner;
    try {
      cfg = sw::load_config(cli.config);
      const std::string path = !cli.profile.empty() ? cli.profile : cfg.profile;
      if (path.empty())
        throw shardcal::Error("validate needs --profile FILE (or a \"profile\" key in " + cli.config + ")");
      planner = make_cost_planner(
          path, !cli.profile.empty() ? "--profile" : cli.config + ": /profile", cli.ranks_per_host);
    } catch (const std::exception& e) {
      error = e.what();
    }
    sw::agree_on_input(world, error);
    const std::string mode =
        "validate k=" + std::to_string(cli.k) + " rounds=" + std::to_string(cli.rounds) +
        " profile " + planner->loaded().sha256() + " rph=" + std::to_string(cli.ranks_per_host);
    sw::check_same_job(world, cfg.hash(), mode, "config " + cli.config + " (hash " + cfg.hash() + "), " + mode);
    return run_validate_rank(world, cli, cfg, *planner);
  });
}

}  // namespace

Runner add_validate_command(CLI::App& app) {
  auto cli = std::make_shared<ValidateCli>();
  auto* cmd = app.add_subcommand(
      "validate",
      "Check the cost-based planner against measurement: for every transition of a sweep config,\n"
      "measure the plan chosen under --profile, the greedy plan and up to k distinct plans found\n"
      "by the search, cheapest first (past the chosen one not necessarily the k cheapest; see\n"
      "docs/PLANNER.md \"Search\") with the sweep's transition timing (rounds interleave the\n"
      "plans), and report predicted vs measured time, regret = measured(chosen) / best measured\n"
      "(plans with wrong data left out), and greedy/chosen. A greedy plan the profile cannot\n"
      "price (no model for a collective) is measured but left out of the MAPE.\n"
      "Output (JSON Lines, written atomically): one record per transition, then a summary;\n"
      "docs/RESULTS_FORMAT.md, section \"Validate file\". Config: the sweep's format (its\n"
      "\"transitions\", sizes, dtypes, transition_distributions, timing keys; collectives are\n"
      "ignored). Example config: configs/validate/local.json.\n"
      "Examples:\n"
      "  mpirun -np 4 shardbench validate --backend mpi --profile profile.json \\\n"
      "      --config configs/validate/local.json --out v.jsonl --k 3\n"
      "  shardbench validate --backend sim --world 4 --profile configs/profiles/dtensor-default.json \\\n"
      "      --config configs/validate/local.json --out v.jsonl\n"
      "Exit codes: 0 done, 1 some plan produced wrong data, 2 bad input, 130/143 stopped by\n"
      "SIGINT/SIGTERM (nothing written), 70 internal error (a bug).");
  cli->backend.add_to(*cmd);
  cmd->add_option("--profile", cli->profile,
                  "Calibrated profile that prices the plans (default: the config's \"profile\")");
  cmd->add_option("--config", cli->config, "Sweep config whose transitions are validated")->required();
  cmd->add_option("--out", cli->out, "Output file (JSON Lines), replaced at the end")->required();
  cmd->add_option(
         "--k", cli->k,
         "Distinct plans of the search to measure, cheapest first (the chosen one included; "
         "for k > 1 not necessarily the k cheapest)")
      ->capture_default_str()
      ->check(CLI::Range(1, 20));
  cmd->add_option("--rounds", cli->rounds,
                  "Rounds over the plans of a transition; each round gives every plan 1/rounds of the "
                  "config's iterations and time_budget_s")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--ranks-per-host", cli->ranks_per_host,
                  "Ranks per host the planner assumes (hosts = blocks of consecutive ranks); default "
                  "from the ranks' hostnames (SHARDCAL_HOSTNAME)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--quiet,-q", cli->quiet, "No header line on stderr (the per-transition lines stay)");
  return [cli]() -> int { return run_validate(*cli); };
}

}  // namespace shardbench

// `shardbench plan`: the cost-based plan for one transition under a calibrated profile, each step
// priced, next to the greedy (rule-based, DTensor-order) plan and the k cheapest distinct plans.
// Pure: no communication, runs on any machine. docs/PLANNER.md.
#include <cmath>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "profile_planner.hpp"
#include "shardcal/calibrate/cost_model.hpp"
#include "shardcal/calibrate/step_cost.hpp"
#include "shardcal/error.hpp"
#include "shardcal/plan.hpp"
#include "shardcal/planner.hpp"

namespace shardbench {

namespace {

using json = nlohmann::ordered_json;

struct PlanArgs {
  std::string profile;
  std::string mesh;
  int ranks_per_host = 0;  // 0 = the whole mesh on one host
  std::string shape;
  std::string dtype = "f32";
  std::string from;
  std::string to;
  int k = 3;
  std::size_t max_states = 200000;
  bool json = false;
};

// A tensor dim split by two or more mesh dims (of size > 1).
bool nested(const shardcal::TensorSpec& s) {
  for (int i = 0; i < s.mesh().ndim(); ++i)
    for (int j = i + 1; j < s.mesh().ndim(); ++j) {
      const shardcal::Placement& a = s.placement(i);
      const shardcal::Placement& b = s.placement(j);
      if (s.mesh().extent(i) > 1 && s.mesh().extent(j) > 1 && a.is_shard() && b.is_shard() &&
          a.dim == b.dim)
        return true;
    }
  return false;
}

std::string short_step(const shardcal::Step& s) {
  return "mesh" + std::to_string(s.mesh_dim) + " " + s.before.placement(s.mesh_dim).to_string() +
         "->" + s.after.placement(s.mesh_dim).to_string() + " " + shardcal::step_kind_name(s.kind);
}

struct PricedStep {
  const shardcal::Step* step;
  shardcal::StepTraffic traffic;
  shardcal::calib::StepPrice price;
  std::string unpriced;  // why the step has no finite price ("" = priced)
};

// Each step priced as the search prices it (`cost`: +inf = the profile cannot price it, e.g. no
// model for its collective); finite steps also with price_step's details (model, extrapolated),
// which throws for the others.
std::vector<PricedStep> price_all(const shardcal::calib::Profile& p, const shardcal::Plan& plan,
                                  const shardcal::StepCostFn& cost, int rph) {
  std::vector<PricedStep> out;
  for (const shardcal::Step& s : plan.steps) {
    PricedStep ps{&s, shardcal::describe_step(s), {}, {}};
    if (!std::isfinite(cost(s, ps.traffic))) {
      ps.unpriced = ps.traffic.collective
                        ? "no model for " +
                              std::string(shardcal::collective_info(*ps.traffic.collective).name)
                        : std::string("no price for ") + shardcal::step_kind_name(s.kind);
      ps.price.link = shardcal::calib::mesh_dim_link_class(s.before.mesh(), s.mesh_dim, rph);
    } else {
      ps.price = shardcal::calib::price_step(p, s, ps.traffic, rph);
    }
    out.push_back(std::move(ps));
  }
  return out;
}

// A plan's total and its 95 % interval, the steps' errors taken as independent: each collective
// step's interval half-widths (below and above its price) added in quadrature (copies and local
// steps at their price, no uncertainty). {NaN, NaN} when a step is unpriced.
std::pair<double, double> plan_interval(const std::vector<PricedStep>& steps) {
  double total = 0, lo2 = 0, hi2 = 0;
  for (const PricedStep& ps : steps) {
    if (!ps.unpriced.empty()) return {NAN, NAN};
    const shardcal::calib::Prediction& p = ps.price.prediction;
    total += ps.price.time_us;
    if (p.model) {
      lo2 += (p.time_us - p.lo_us) * (p.time_us - p.lo_us);
      hi2 += (p.hi_us - p.time_us) * (p.hi_us - p.time_us);
    }
  }
  return {std::max(0.0, total - std::sqrt(lo2)), total + std::sqrt(hi2)};
}

// "" when every step is priced, else the distinct reasons, e.g. "no model for all_to_all".
std::string unpriced_reason(const std::vector<PricedStep>& steps) {
  std::string r;
  for (const PricedStep& ps : steps)
    if (!ps.unpriced.empty() && r.find(ps.unpriced) == std::string::npos)
      r += (r.empty() ? "" : "; ") + ps.unpriced;
  return r;
}

// What a step's price extrapolated, briefly: "" when nothing ("link class never measured",
// "size past the sweep", "host count transported"; docs/CALIBRATION.md "Past the measured sizes").
std::string extrapolated_what(const PricedStep& ps) {
  const auto& p = ps.price.prediction;
  if (!ps.unpriced.empty() || !p.extrapolated) return "";
  std::string r;
  auto add = [&](const char* w) { r += (r.empty() ? "" : ", ") + std::string(w); };
  if (p.transport.active) add("host count transported");
  // Structured, not from the note's words: a host-count transport's note is in class_note too.
  if (p.other_side) add("link class never measured");
  else if (!p.class_note.empty() && !p.transport.active) add("nearest measured class");
  if (p.size_octaves != 0) add("size past the sweep");
  if (r.empty()) add("outside the measured range");
  return r;
}

// "" when no step of the plan rests on an extrapolated price, else "step 1: size past the
// sweep; step 3: link class never measured".
std::string extrapolated_steps(const std::vector<PricedStep>& steps) {
  std::string r;
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (const std::string w = extrapolated_what(steps[i]); !w.empty())
      r += (r.empty() ? "" : "; ") + std::string("step ") + std::to_string(i + 1) + ": " + w;
  return r;
}

json steps_json(const std::vector<PricedStep>& steps) {
  json a = json::array();
  for (const PricedStep& ps : steps) {
    const shardcal::Step& s = *ps.step;
    a.push_back({{"mesh_dim", s.mesh_dim},
                 {"from", s.before.placement(s.mesh_dim).to_string()},
                 {"to", s.after.placement(s.mesh_dim).to_string()},
                 {"collective", shardcal::step_kind_name(s.kind)},
                 {"group_size", ps.traffic.group_size},
                 {"hosts", ps.price.link.hosts},
                 {"concurrent_groups", ps.price.link.concurrent_groups},
                 {"bytes", ps.traffic.bytes},
                 {"counts_even", ps.traffic.uniform},
                 {"cost_us", ps.unpriced.empty() ? json(ps.price.time_us) : json(nullptr)},
                 {"extrapolated", ps.price.prediction.extrapolated},
                 {"extrapolated_what", extrapolated_what(ps)},
                 {"text", short_step(s)}});
    if (!ps.unpriced.empty()) a.back()["unpriced"] = ps.unpriced;
  }
  return a;
}

std::string us(double t) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(3) << t << " us";
  return o.str();
}

std::string human_bytes(double b) {
  std::ostringstream o;
  o << std::setprecision(4);
  if (b >= 1 << 30)
    o << b / double(1 << 30) << " GiB";
  else if (b >= 1 << 20)
    o << b / double(1 << 20) << " MiB";
  else if (b >= 1 << 10)
    o << b / double(1 << 10) << " KiB";
  else
    o << b << " B";
  return o.str();
}

void print_steps(std::ostream& o, const std::vector<PricedStep>& steps) {
  int n = 0;
  for (const PricedStep& ps : steps) {
    const shardcal::Step& s = *ps.step;
    // Columns of 14 and 20 characters; a longer entry keeps one blank before the next column
    // ("S(0) -> P(sum) local_embed_partial", not "P(sum)local_embed_partial").
    const std::string change = s.before.placement(s.mesh_dim).to_string() + " -> " +
                               s.after.placement(s.mesh_dim).to_string();
    const std::string kind(shardcal::step_kind_name(s.kind));
    o << "  " << ++n << ". mesh dim " << s.mesh_dim << ": " << std::left << std::setw(14) << change
      << (change.size() >= 14 ? " " : "") << std::setw(20) << kind
      << (kind.size() >= 20 ? " " : "") << std::right;
    if (ps.traffic.collective)
      o << "n=" << ps.traffic.group_size << " hosts=" << ps.price.link.hosts << " "
        << human_bytes(double(ps.traffic.bytes)) << (ps.traffic.uniform ? "" : " (uneven)") << "  ";
    else
      o << "local  ";
    if (!ps.unpriced.empty()) {
      o << "not priceable (" << ps.unpriced << ")\n";
      continue;
    }
    o << us(ps.price.time_us)
      << (ps.price.prediction.extrapolated ? "  (extrapolated: " + ps.price.prediction.note + ")"
                                           : "")
      << "\n";
  }
}

int run(const PlanArgs& a) {
  using namespace shardcal;
  const CostPlanner planner(calib::LoadedProfile::load(a.profile, "--profile"), a.ranks_per_host);
  const calib::Profile& profile = planner.loaded().profile();
  const DeviceMesh mesh = DeviceMesh::parse(a.mesh);
  const TensorMeta meta{parse_shape(a.shape), parse_dtype(a.dtype)};
  auto make = [&](const std::string& text, const char* opt) {
    try {
      return TensorSpec(mesh, parse_placements(text), meta);
    } catch (const Error& e) {
      throw Error(std::string(opt) + " \"" + text + "\" on mesh " + mesh.to_string() + ", shape " +
                  shape_to_string(meta.shape) + ": " + e.what());
    }
  };
  const TensorSpec from = make(a.from, "--from");
  const TensorSpec to = make(a.to, "--to");
  const int rph = a.ranks_per_host > 0 ? a.ranks_per_host : mesh.size();
  const StepCostFn& cost = planner.step_cost(rph);
  const SearchResult r = planner.search(from, to, rph, SearchOptions{a.k, a.max_states});
  const Plan greedy = plan_redistribution(from, to);
  const CostedPlan g = price_plan(greedy, cost);
  const std::vector<PricedStep> best = price_all(profile, r.best.plan, cost, rph);
  const std::vector<PricedStep> gsteps = price_all(profile, greedy, cost, rph);
  // The greedy plan may take a step the profile cannot price (+inf): shown, not priced.
  const std::string greedy_unpriced = unpriced_reason(gsteps);
  const bool greedy_priced = greedy_unpriced.empty() && std::isfinite(g.total);
  const bool is_nested = nested(from) || nested(to);
  // The chosen plan against the runner-up (the second cheapest distinct plan): a two-sided test of
  // their difference at 95 %, the plans' errors taken as independent (sigma = the upper half-width
  // of the chosen plan's interval, the lower of the runner-up's, / 1.96, in quadrature). Both are
  // priced by one profile, so where they share a mispriced link their errors partly cancel and
  // the difference is better known than this says: "indistinguishable" is the cautious answer.
  const std::pair<double, double> best_iv = plan_interval(best);
  const CostedPlan* runner_up = r.alternatives.size() >= 2 ? &r.alternatives[1] : nullptr;
  std::pair<double, double> runner_iv{NAN, NAN};
  if (runner_up) runner_iv = plan_interval(price_all(profile, runner_up->plan, cost, rph));
  const bool indistinct =
      runner_up && std::isfinite(runner_iv.first) && std::isfinite(best_iv.second) &&
      runner_up->total - r.best.total <=
          std::hypot(best_iv.second - r.best.total, runner_up->total - runner_iv.first);

  if (a.json) {
    json j;
    j["schema"] = "shardcal.plan";
    j["version"] = 1;
    j["planner"] = "cost";
    j["profile"] = planner.loaded().identity();
    j["mesh"] = mesh.to_string();
    j["ranks_per_host"] = rph;
    j["shape"] = shape_to_string(meta.shape);
    j["dtype"] = std::string(dtype_name(meta.dtype));
    j["from"] = placements_to_string(from.placements());
    j["to"] = placements_to_string(to.placements());
    j["total_us"] = r.best.total;
    j["interval_us"] = {best_iv.first, best_iv.second};
    j["interval_level"] = shardcal::calib::kIntervalLevel;
    if (runner_up) {
      j["runner_up_total_us"] = runner_up->total;
      j["runner_up_interval_us"] = {runner_iv.first, runner_iv.second};
      j["indistinguishable"] = indistinct;
    }
    j["steps"] = steps_json(best);
    j["rests_on_extrapolated"] = extrapolated_steps(best);
    j["greedy_total_us"] = greedy_priced ? json(g.total) : json(nullptr);
    if (!greedy_priced) j["greedy_unpriced"] = greedy_unpriced;
    j["greedy_steps"] = steps_json(gsteps);
    json alts = json::array();
    for (const CostedPlan& cp : r.alternatives)
      alts.push_back(
          {{"total_us", cp.total}, {"steps", steps_json(price_all(profile, cp.plan, cost, rph))}});
    j["alternatives"] = alts;
    j["states_explored"] = r.states_explored;
    if (is_nested) {
      const RecvReport rc = recv_report(r.best.plan), rg = recv_report(greedy);
      j["recv_bytes"] = {{"max_lower_bound", rc.max_lower_bound},
                         {"max_received", rc.max_received},
                         {"greedy_max_received", rg.max_received}};
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::ostringstream o;
  o << "transition " << placements_to_string(from.placements()) << " -> "
    << placements_to_string(to.placements()) << " on mesh " << mesh.to_string() << ", shape "
    << shape_to_string(meta.shape) << " " << dtype_name(meta.dtype) << ", " << rph
    << " ranks per host\n";
  o << "profile " << a.profile << " (cluster " << profile.cluster << ", sha256 "
    << planner.loaded().sha256().substr(0, 12) << "...)\n\n";
  o << "cost-based plan: " << us(r.best.total) << ", " << r.best.plan.steps.size() << " step"
    << (r.best.plan.steps.size() == 1 ? "" : "s") << " (" << r.states_explored
    << " states explored)\n";
  if (std::isfinite(best_iv.first))
    o << "  95 % interval " << us(best_iv.first) << " .. " << us(best_iv.second) << "\n";
  if (!runner_up)
    o << "  runner-up: " << (a.k < 2 ? "not searched (--k 1)" : "none (no other plan)") << "\n";
  if (runner_up && std::isfinite(runner_iv.first))
    o << "  runner-up " << us(runner_up->total) << " (95 % interval " << us(runner_iv.first) << " .. "
      << us(runner_iv.second) << "): "
      << (indistinct ? "indistinguishable under this profile (the difference is within its 95 % uncertainty)"
                     : "the chosen plan is cheaper beyond the 95 % uncertainty of the difference")
      << "\n";
  if (const std::string ex = extrapolated_steps(best); !ex.empty())
    o << "  the choice rests on extrapolated prices (" << ex
      << "); measure those classes and sizes (shardbench sweep) to firm it up\n";
  print_steps(o, best);
  o << "\ngreedy plan (plan_redistribution): ";
  if (!greedy_priced) {
    o << "not priceable (" << greedy_unpriced << ")";
  } else {
    o << us(g.total);
    if (r.best.total > 0 && g.total > r.best.total * (1 + 1e-12))
      o << " = " << std::fixed << std::setprecision(2) << g.total / r.best.total
        << std::defaultfloat << "x the cost-based plan";
    else
      o << " (same cost)";
  }
  o << "\n";
  print_steps(o, gsteps);
  o << "\n"
    << r.alternatives.size() << " cheapest distinct plan" << (r.alternatives.size() == 1 ? "" : "s")
    << " found (--k " << a.k << (a.k > 1 ? "; past the first, a cheaper plan can be missed" : "")
    << "):\n";
  for (std::size_t i = 0; i < r.alternatives.size(); ++i) {
    const CostedPlan& cp = r.alternatives[i];
    o << "  #" << i + 1 << "  " << std::setw(16) << us(cp.total) << "  ";
    if (cp.plan.steps.empty()) o << "(no steps)";
    for (std::size_t k = 0; k < cp.plan.steps.size(); ++k)
      o << (k ? ", " : "") << short_step(cp.plan.steps[k]);
    o << "\n";
  }
  if (is_nested) {
    const RecvReport rc = recv_report(r.best.plan), rg = recv_report(greedy);
    o << "\nnested sharding: bytes received by the busiest rank: cost plan "
      << human_bytes(double(rc.max_received)) << ", greedy " << human_bytes(double(rg.max_received))
      << "; lower bound (the largest part of a rank's target block its source block lacks) "
      << human_bytes(double(rc.max_lower_bound)) << "\n";
  }
  std::cout << o.str();
  return 0;
}

}  // namespace

Runner add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand(
      "plan",
      "Plan one redistribution with a calibrated profile (no communication): the cheapest plan\n"
      "(Dijkstra over placement states, each step priced by the profile for the bytes and counts "
      "it\n"
      "moves and the link class of its mesh dim), each step's predicted us, the greedy plan\n"
      "(plan_redistribution, DTensor's order) with its cost, and up to k distinct plans, cheapest\n"
      "first (the first is the cheapest; past it, the k-label search can miss a cheaper loop-free\n"
      "plan, see docs/PLANNER.md \"Search\"). A greedy step the profile cannot price (no model\n"
      "for its collective) is shown as not priceable.\n"
      "Ranks are laid out row-major over the mesh, --ranks-per-host consecutive ranks per host.\n"
      "Local steps (slice, partial, embed) are priced as a memory copy at the profile's fitted\n"
      "copy cost (local_copy) or else a stated bandwidth (host 10 GB/s, cuda 1000 GB/s, by the\n"
      "profile's memory); details in docs/PLANNER.md.\n"
      "Example: shardbench plan --profile configs/profiles/dtensor-default.json --mesh 2x4\n"
      "         --ranks-per-host 4 --shape 8192x8192 --dtype bf16 --from \"S(0),S(1)\" --to "
      "\"R,S(0)\" --k 3");
  cmd->add_option("--profile", args->profile, profile_option_help())->required();
  cmd->add_option("--mesh", args->mesh, "Device mesh, e.g. 2x4")->required();
  cmd->add_option("--ranks-per-host", args->ranks_per_host,
                  "Consecutive ranks per host (default: the whole mesh on one host)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--shape", args->shape, "Global tensor shape, e.g. 8192x8192")->required();
  cmd->add_option("--dtype", args->dtype, "f32, f64, f16, bf16, i32, i64, u8")
      ->capture_default_str();
  cmd->add_option("--from", args->from, "Source placements, e.g. \"S(0),S(1)\"")->required();
  cmd->add_option("--to", args->to, "Target placements, e.g. \"R,S(0)\"")->required();
  cmd->add_option("--k", args->k,
                  "How many distinct plans to list, cheapest first (for k > 1 not guaranteed "
                  "to be the k cheapest)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--max-states", args->max_states,
                  "Give up (exit 2) after this many placement states")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t(1), std::size_t(1) << 40));
  cmd->add_flag(
      "--json", args->json,
      "Print one JSON object: total_us, steps[{mesh_dim, from, to, collective, group_size, "
      "bytes, cost_us, ...}], greedy_total_us, alternatives[{total_us, steps}]");
  return [args]() { return run(*args); };
}

}  // namespace shardbench

#pragma once
// Which planner plans a transition point: the rule-based `greedy` planner
// (shardcal::plan_redistribution, DTensor's default order) unless a cost-based planner is set,
// which prices steps with a calibrated profile (shardbench redistribute/sweep --profile, sweep
// config key "profile"). The sweep library knows only this hook; the profile reader and the
// search live in calibrate/ and core and are bound by the CLI (bench/src/profile_planner.cpp).
// docs/RESULTS_FORMAT.md ("Planner").
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardcal/plan.hpp"
#include "shardcal/topology.hpp"

namespace shardbench::sweep {

// A transition's plan; with the cost planner also the predicted time of each step (µs, the
// profile's unit) and their sum.
struct PlannedTransition {
  shardcal::Plan plan;
  std::vector<double> step_us;  // empty for greedy
  double total_us = 0;
};

struct TransitionPlanner {
  std::string name = "greedy";  // "greedy" | "cost"
  nlohmann::json profile;       // cost: {"path": as given, "cluster", "sha256": of the file}
  int ranks_per_host = 0;       // cost: > 0 overrides the discovered topology
  // cost: the cheapest plan for (from, to) when hosts hold `ranks_per_host` consecutive ranks.
  std::function<PlannedTransition(const shardcal::TensorSpec&, const shardcal::TensorSpec&, int)> search;

  bool cost() const { return name == "cost"; }
  // Ranks per host the cost planner assumes: the override, else the discovered topology's
  // largest host (the price model lays hosts out as blocks of consecutive ranks).
  int resolve_ranks_per_host(const shardcal::Topology& topo) const;
  PlannedTransition plan(const shardcal::TensorSpec& from, const shardcal::TensorSpec& to,
                         int ranks_per_host) const;
  // Part of a transition point's key: null for greedy (keys as before this field existed), else
  // {"name": "cost", "profile_sha256", "ranks_per_host"}: a greedy point and a cost point, or
  // cost points planned with different profiles, never share a key.
  nlohmann::json key(int ranks_per_host) const;
  // The "planner" object of results records and of the context record:
  // {"name": "greedy"} or {"name": "cost", "profile": {...}, "ranks_per_host": N}.
  nlohmann::json describe(int ranks_per_host) const;
};

// The step text of validate files and progress lines: "mesh0 S(0)->R all_gather".
std::string step_short(const shardcal::Step& s);

}  // namespace shardbench::sweep

#pragma once
// The planner interface: what plans a transition for redistribute, sweep, validate and plan.
// Implementations: greedy_planner() here (shardcal::plan_redistribution, DTensor's default
// order) and the cost planner (bench/src/profile_planner.hpp: plan_cheapest under a calibrated
// profile bound once, shardcal/calibrate/loaded_profile.hpp). The sweep library knows only this
// interface (no calibrate dependency); the CLI picks the implementation (--profile, sweep config
// key "profile"). A new consumer takes a `const TransitionPlanner&`; a new planner implements it.
// docs/ARCHITECTURE.md "Profiles and planners"; docs/RESULTS_FORMAT.md ("Planner").
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardcal/plan.hpp"
#include "shardcal/topology.hpp"

namespace shardbench::sweep {

// A transition's plan; with a priced planner also the predicted time of each step (µs, the
// profile's unit) and their sum.
struct PlannedTransition {
  shardcal::Plan plan;
  std::vector<double> step_us;  // empty when not priced
  double total_us = 0;
};

// Implementations hold no mutable state a caller can see: on the simulator every rank thread
// plans with one planner at once, so plan() must be thread-safe.
class TransitionPlanner {
 public:
  virtual ~TransitionPlanner() = default;
  // "greedy" | "cost": the planner's name in records, keys and messages.
  virtual std::string name() const = 0;
  // Whether plans depend on prices read from a file (each rank reads its own): then the ranks
  // must check they chose the same plans, and records carry predictions.
  virtual bool priced() const = 0;
  // The plan for (from, to) when hosts hold `ranks_per_host` consecutive ranks; a plan the
  // executor can run, or one clear Error.
  virtual PlannedTransition plan(const shardcal::TensorSpec& from, const shardcal::TensorSpec& to,
                                 int ranks_per_host) const = 0;
  // Ranks per host the planner assumes: an override, else the discovered topology's largest
  // host (the price model lays hosts out as blocks of consecutive ranks).
  virtual int resolve_ranks_per_host(const shardcal::Topology& topo) const;
  // Part of a transition point's key: null for greedy (keys as before this field existed), else
  // {"name", "profile_sha256", "ranks_per_host"}: a greedy point and a cost point, or cost points
  // planned with different profiles, never share a key.
  virtual nlohmann::json key(int ranks_per_host) const = 0;
  // The "planner" object of results records and of the context record:
  // {"name": "greedy"} or {"name": "cost", "profile": {...}, "ranks_per_host": N}.
  virtual nlohmann::json describe(int ranks_per_host) const = 0;
  // The profile's identity {"path", "cluster", "sha256"}; null for an unpriced planner.
  virtual nlohmann::json profile() const { return nullptr; }
};

// The rule-based planner (plan_redistribution); one shared instance.
std::shared_ptr<const TransitionPlanner> greedy_planner();

// The step text of validate files and progress lines: "mesh0 S(0)->R all_gather".
std::string step_short(const shardcal::Step& s);

}  // namespace shardbench::sweep

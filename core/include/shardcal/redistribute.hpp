#pragma once
// Redistribution = a plan (steps, each on one mesh dim and one collective) from a planner, run by
// an executor. The planner here is rule-based (DTensor-style); the cost-based planner of
// calibrate/ produces the same Plan type.
#include <cstdint>
#include <string>
#include <vector>

#include "shardcal/layout.hpp"
#include "shardcal/sharded_tensor.hpp"

namespace shardcal {

enum class StepKind : unsigned char {
  AllGather,      // S -> R           (all_gatherv on the mesh dim)
  AllReduce,      // P -> R           (all_reduce)
  ReduceScatter,  // P -> S           (reduce_scatterv)
  AllToAll,       // S(a) -> S(b), or S(d) -> S(d) with new sizes (all_to_allv)
  LocalSlice,     // R -> S           (no communication)
  LocalPartial,   // R -> P           (no communication: zero off coordinate 0 for sum)
};
std::string step_kind_name(StepKind k);  // "all_gather", "local_slice", ...

struct Step {
  int mesh_dim = 0;
  StepKind kind = StepKind::LocalSlice;
  TensorSpec before;
  TensorSpec after;
  // Largest per-group payload in nccl-tests terms (see DESIGN §4): all_gather output,
  // reduce_scatter input, all_reduce buffer, all_to_all send buffer; 0 for local steps.
  std::int64_t bytes = 0;
  std::string to_string() const;  // "mesh dim 0: S(0)[3,7] -> R  all_gather  280 B"
};

struct Plan {
  TensorSpec from;
  TensorSpec to;
  std::vector<Step> steps;
  std::string to_string() const;
};

// Throws Error when the specs disagree on mesh or tensor meta. Every target spec is reachable.
Plan plan_redistribution(const TensorSpec& from, const TensorSpec& to);

// Runs the plan's steps in order; collective over mc. Returns the tensor in plan.to's layout.
ShardedTensor execute_plan(MeshCommunicator& mc, const Plan& plan, ShardedTensor tensor);
ShardedTensor redistribute(MeshCommunicator& mc, ShardedTensor tensor, const TensorSpec& to);

}  // namespace shardcal

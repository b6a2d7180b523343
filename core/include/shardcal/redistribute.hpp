#pragma once
// Redistribution = a plan (steps, each on one mesh dim and one collective) from a planner, run by
// an executor. This is the umbrella header: the plan data, its checks and the rule-based planner
// live in shardcal/plan.hpp (pure, no communication); the executor is declared here.
// The cost-based planner of calibrate/ produces the same Plan type.
#include <memory>
#include <vector>

#include "shardcal/layout.hpp"
#include "shardcal/plan.hpp"
#include "shardcal/sharded_tensor.hpp"

namespace shardcal {

// Every buffer a plan's execution needs on this rank, allocated once (intermediate blocks, pack
// and receive buffers) together with the per-step counts, displacements and boxes. Built from a
// plan that passes validate_plan (the constructor calls it: an illegal plan throws the same
// Error on every rank before any communication). `prefault` writes every buffer once so that
// first-touch page faults (host) or lazy allocation do not land in a timed run. Construction is
// local (no communication). Reuse it for any number of execute_plan calls on the same
// MeshCommunicator; it must not outlive that communicator's memory space.
class PlanWorkspace {
 public:
  PlanWorkspace(MeshCommunicator& mc, const Plan& plan, bool prefault = true);
  ~PlanWorkspace();
  PlanWorkspace(PlanWorkspace&&) noexcept;
  PlanWorkspace& operator=(PlanWorkspace&&) noexcept;
  PlanWorkspace(const PlanWorkspace&) = delete;
  PlanWorkspace& operator=(const PlanWorkspace&) = delete;

  const Plan& plan() const;
  int rank() const;
  std::size_t bytes() const;  // total bytes held (diagnostics)
  // Bytes this rank packs and unpacks around step `step`'s collective (0 for local steps);
  // equals step_copy_bytes(plan().steps[step], rank()) (tests/planner/test_cost_plans.cpp).
  std::size_t copy_bytes(std::size_t step) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  friend void execute_plan(MeshCommunicator&, PlanWorkspace&, const ShardedTensor&, ShardedTensor&);
};

// Runs ws.plan() from `in` (layout plan.from, left unchanged) into `out` (a tensor of layout
// plan.to whose buffer is written; e.g. made once with make_plan_output). Collective over mc.
// No allocation: a timed call holds communication and pack/unpack only. Steps whose counts
// are even within the group call the plain collective (all_gather, reduce_scatter,
// all_to_all), the others the v-form, on every backend.
void execute_plan(MeshCommunicator& mc, PlanWorkspace& ws, const ShardedTensor& in,
                  ShardedTensor& out);
// An output tensor for ws.plan() on this rank (uninitialised contents).
ShardedTensor make_plan_output(MeshCommunicator& mc, const PlanWorkspace& ws);

// One-shot form: validates the plan, builds a workspace (not pre-faulted), runs it. Returns the
// tensor in plan.to's layout.
ShardedTensor execute_plan(MeshCommunicator& mc, const Plan& plan, ShardedTensor tensor);
ShardedTensor redistribute(MeshCommunicator& mc, ShardedTensor tensor, const TensorSpec& to);

}  // namespace shardcal

#pragma once
// What Slurm says about the job step a sweep runs in, and the cross-check of that against the
// hosts the ranks discover. Slurm sets SLURM_STEP_NUM_TASKS / SLURM_STEP_NUM_NODES /
// SLURM_STEP_TASKS_PER_NODE for srun-launched tasks, and SLURM_NTASKS / SLURM_JOB_NUM_NODES /
// SLURM_TASKS_PER_NODE for the job (SLURM_NTASKS_PER_NODE exists only when --ntasks-per-node was
// given, so it is not used). Pure functions over an environment lookup, so tests fake SLURM_*.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardcal/topology.hpp"

namespace shardbench::sweep {

// Expands Slurm's compressed tasks-per-node list: "4(x2),3" -> {4, 4, 3}. Throws shardcal::Error
// naming `what` (the variable) for malformed text.
std::vector<int> parse_tasks_per_node(const std::string& text, const std::string& what);

struct SlurmStep {
  bool present = false;             // a task count was found (running under Slurm)
  std::string job_id;               // SLURM_JOB_ID ("" if unset)
  int num_tasks = 0;
  int num_nodes = 0;
  std::vector<int> tasks_per_node;  // expanded, in node order
  std::string source;               // "step" (SLURM_STEP_*) or "job" (SLURM_NTASKS, ...)
  std::string description;          // the variables as read, for messages
  nlohmann::json to_json() const;   // the context record's "slurm" field
};

using EnvLookup = std::function<const char*(const char*)>;
// Step variables when set, else the job's. Throws shardcal::Error for malformed values.
SlurmStep read_slurm_env(const EnvLookup& env);
SlurmStep read_slurm_env();  // from the process environment

// "" when the discovered topology agrees with Slurm's (or the check does not apply: not under
// Slurm, or a launcher that starts another number of ranks than Slurm's task count, such as
// mpirun inside an allocation); else the error text: what Slurm says, what the ranks found, how
// to fix it. A world of 1 under a multi-task step is always an error (each task started its own
// MPI world: srun's MPI plugin did not wire them up).
std::string slurm_topology_mismatch(const SlurmStep& step, int world, const shardcal::Topology& topo);

}  // namespace shardbench::sweep

#pragma once
// The per-step traffic fields of a transition record (docs/RESULTS_FORMAT.md, "plan steps"):
// what shardcal::describe_step says one plan step moves, as JSON.
#include <nlohmann/json.hpp>

#include "shardcal/plan.hpp"

namespace shardbench::sweep {

// {"call", "groups", "group_size", "counts", "heaviest_group", "groups_identical", "uniform",
//  "plain_groups", "heaviest_uniform", "elem_size", "bytes", "bytes_convention", "max_send_bytes", "max_recv_bytes", "max_copy_bytes"}
nlohmann::json step_traffic_json(const shardcal::StepTraffic& t);

}  // namespace shardbench::sweep

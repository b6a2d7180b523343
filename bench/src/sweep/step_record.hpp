#pragma once
// The per-step traffic fields of a transition record (docs/RESULTS_FORMAT.md, "plan steps"):
// the results record's writer owns them (formats/results_record.hpp); the validate file uses
// the same fields.
#include "shardcal/formats/results_record.hpp"

namespace shardbench::sweep {

using shardcal::formats::step_traffic_json;

}  // namespace shardbench::sweep

#pragma once
// `shardbench import` of torch.profiler traces (docs/IMPORT.md "torch.profiler traces"): the
// trace reader is formats/ (import_trace.hpp); cmd_import_trace.cpp turns its merged points into
// results records. cmd_import.cpp dispatches here when its inputs are traces.
#include <string>
#include <vector>

namespace shardbench {

struct TraceImportArgs {
  std::vector<std::string> traces;
  std::string out;
  int ranks_per_host = 0;
  std::string command_line;
};

// True when the file's first bytes look like a trace (gzip, or JSON naming traceEvents).
bool is_trace_file(const std::string& path);
// Reads, merges and writes (temp + rename); throws shardcal::Error on bad input, nothing written.
int run_trace_import(const TraceImportArgs& a);

// The timing mode of imported trace points (point.mode, timing.mode): in-job kernel times.
inline constexpr const char* kInJobMode = "in_job";

}  // namespace shardbench

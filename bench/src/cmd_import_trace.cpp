// `shardbench import TRACE.json[.gz]...`: torch.profiler traces -> a results file (docs/IMPORT.md
// "torch.profiler traces"). formats/import_trace.hpp reads and merges; this file writes the
// context record and the point records with the sweep's shape helpers, as cmd_import.cpp does
// for logs.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "import_trace_command.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/atomic_write.hpp"
#include "shardcal/formats/import_trace.hpp"
#include "shardcal/formats/json.hpp"
#include "shardcal/formats/results_record.hpp"
#include "shardcal/formats/utc_time.hpp"
#include "shardcal/hash.hpp"
#include "sweep/config.hpp"
#include "sweep/provenance.hpp"
#include "sweep/stats.hpp"

namespace shardbench {
namespace trace_import {
namespace {

using nlohmann::json;
namespace fm = shardcal::formats;
using shardcal::Error;

std::string line_of(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string ranks_text(const std::vector<int>& r) {
  std::string s;
  for (std::size_t i = 0; i < r.size(); ++i) s += (i ? "," : "") + std::to_string(r[i]);
  return s;
}

json point_params(const fm::TracePoint& p) {
  const auto& info = shardcal::collective_info(p.collective);
  json protocol = {{"tool", "torch.profiler"},
                   {"mode", kInJobMode},
                   {"ops_per_sample", 1},
                   {"warmup", nullptr},
                   {"statistic", p.ranks_merged >= p.group_size ? "min_over_ranks" : "min_over_some_ranks"}};
  if (p.ranks_merged == 1) protocol["statistic"] = "one_rank";
  json params;
  params["kind"] = "collective";
  params["mesh"] = p.groups > 1 ? std::to_string(p.groups) + "x" + std::to_string(p.group_size)
                                : std::to_string(p.group_size);
  params["mesh_dim"] = p.groups > 1 ? 1 : 0;
  params["op"] = std::string(info.name);
  params["dtype"] = std::string(shardcal::dtype_name(p.dtype));
  params["distribution"] = "even";
  params["size"] = p.bytes;
  params["mode"] = kInJobMode;
  params["protocol"] = protocol;
  // The process group is part of the identity: two groups of one mesh dim are two points.
  params["process_group"] = {{"name", p.pg_name}, {"ranks", ranks_text(p.group_ranks)}};
  if (info.reduces) params["redop"] = p.redop.empty() ? "sum" : p.redop;  // from the kernel's name
  if (info.has_root) params["root"] = 0;
  return params;
}

json point_record(const fm::TracePoint& p, std::size_t index) {
  const auto dist = sweep::Distribution::parse("even");
  const sweep::CollectiveShape sh =
      sweep::collective_shape(p.collective, p.dtype, p.bytes, dist, p.group_size);
  fm::PointRecord rec;
  rec.samples_s = p.samples_s;
  sweep::fill_collective_record(rec, p.collective, sh, rec.samples_s);
  rec.index = index;
  rec.point = point_params(p);
  rec.key = rec.point.dump();
  if (shardcal::collective_info(p.collective).has_root) rec.root = 0;
  rec.groups = p.groups;
  rec.hosts_spanned = p.hosts_spanned;
  rec.max_ranks_per_host = p.max_ranks_per_host;
  rec.timing.mode = kInJobMode;
  rec.timing.ops_per_sample = 1;
  rec.timing.buffer_slots = 1;
  rec.timing.barrier = "none (in-job: the kernel waits for the last rank to arrive)";
  rec.timing.timer = "cupti_kernel";
  rec.timing.reduction = p.ranks_merged >= p.group_size
                             ? "min over the group's ranks per call"
                             : (p.ranks_merged == 1 ? "one rank's kernel (an upper bound)"
                                                    : "min over some of the group's ranks per "
                                                      "call (an upper bound)");
  rec.timing.stop_reason = "trace_end";
  rec.wrong = std::nullopt;  // a job's data is not checked
  rec.import = {{"calls", p.samples_s.size()},
                {"ranks_merged", p.ranks_merged},
                {"one_sided", p.ranks_merged < p.group_size},
                {"process_group", {{"name", p.pg_name}, {"desc", p.pg_desc},
                                   {"ranks", p.group_ranks}}},
                {"sizes_from", p.sizes_from},
                {"torch_names", p.torch_names},
                {"statistic", "per call: the shortest NCCL kernel duration over the ranks whose "
                              "traces were given (closest to the collective's own time)"}};
  return fm::to_json(rec);
}

}  // namespace
}  // namespace trace_import

namespace fm = shardcal::formats;
using shardcal::Error;
using nlohmann::json;

bool is_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string head(1 << 20, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(std::size_t(in.gcount()));
  return fm::looks_like_trace(head);
}

int run_trace_import(const TraceImportArgs& a) {
  using trace_import::line_of;
  using trace_import::point_record;
  std::vector<fm::ParsedTrace> traces;
  for (const std::string& path : a.traces) {
    std::error_code ec;
    if (std::filesystem::equivalent(path, a.out, ec))
      throw Error("--out " + a.out + " is one of the traces; write the results to another file");
    traces.push_back(fm::read_trace_file(path));
  }
  int kernels = 0, c10d = 0;
  for (const fm::ParsedTrace& t : traces) kernels += t.nccl_kernels, c10d += t.c10d_ops;
  if (kernels == 0)
    throw Error(
        a.traces.front() + (a.traces.size() > 1 ? " and the other traces" : "") +
        ": no NCCL kernels" +
        (c10d > 0 ? " (" + std::to_string(c10d) +
                        " c10d:: ops, but no kernel times: a gloo/CPU trace, or profiled "
                        "without ProfilerActivity.CUDA)"
                  : "") +
        "; nothing to import (shardcal needs the NCCL kernels' durations)");
  std::size_t calls = 0;
  std::map<std::string, int> skipped_kernels;
  for (const fm::ParsedTrace& t : traces) {
    calls += t.calls.size();
    for (const auto& [k, n] : t.skipped) skipped_kernels[k] += n;
  }
  if (calls == 0) {
    std::string why;
    for (const auto& [k, n] : skipped_kernels) why += (why.empty() ? "" : ", ") + std::to_string(n) + " " + k;
    throw Error(a.traces.front() + ": no NCCL kernels with sizes: was record_shapes on? (" +
                std::to_string(kernels) + " NCCL kernel(s)" + (why.empty() ? "" : ": " + why) +
                "); profile with torch.profiler.profile(record_shapes=True)");
  }
  const fm::MergedTraces m = fm::merge_traces(traces, a.ranks_per_host);

  fm::ContextRecord ctx;
  ctx.date = fm::utc_now_iso8601();
  ctx.command_line = a.command_line;
  ctx.config_path = a.traces.front();
  ctx.config = json::object();
  std::string shas;
  for (const fm::ParsedTrace& t : traces) shas += t.sha256;
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(shardcal::fnv1a64(shas)));
  ctx.config_hash = hash;
  ctx.backend = "nccl";
  ctx.memory = "cuda";
  ctx.world = m.world;
  for (const auto& [name, ranks] : m.hosts) ctx.hosts.push_back({name, ranks});
  if (!traces.front().nccl_version.empty()) ctx.library_versions["NCCL"] = traces.front().nccl_version;
  ctx.shardcal_version = sweep::shardcal_version();
  ctx.git_revision = sweep::git_revision();
  if (sweep::git_dirty() >= 0) ctx.git_dirty = sweep::git_dirty() == 1;
  ctx.points_total = m.points.size();
  ctx.timing_method =
      "in-job kernel times imported from torch.profiler traces (mode in_job): each NCCL kernel's "
      "CUPTI start/end on the GPU, one sample per call; with several ranks' traces a call's "
      "sample is the shortest duration over the group's ranks whose traces were given (a kernel "
      "waits for the last rank to arrive: the shortest is the closest to the collective's own "
      "time); one rank's trace gives an upper bound";
  json sources = json::array(), gpus = json::array();
  for (const fm::ParsedTrace& t : traces) {
    sources.push_back({{"path", t.name},
                       {"sha256", t.sha256},
                       {"bytes", t.file_bytes},
                       {"gzip", t.gzip},
                       {"rank", t.rank ? json(*t.rank) : json(nullptr)},
                       {"host_name", t.host_name},
                       {"nccl_kernels", t.nccl_kernels},
                       {"calls", t.calls.size()},
                       {"record_shapes", t.record_shapes}});
    std::set<int> used;
    for (const fm::TraceCall& c : t.calls) used.insert(c.device);
    for (const auto& [id, name] : t.gpus)
      if (used.count(id))
        gpus.push_back({{"rank", t.rank ? json(*t.rank) : json(nullptr)},
                        {"host", t.host_name},
                        {"device", id},
                        {"name", name}});
  }
  json skipped = json::object();
  for (const auto& [k, n] : m.skipped) skipped[k] = n;
  ctx.import = {{"format", "torch-trace"},
                {"tool", "torch.profiler"},
                {"sources", sources},
                {"world_size", m.world},
                {"backend", traces.front().backend},
                {"topology_from", m.topology_from},
                {"gpus", gpus},
                {"calls", {{"imported", m.calls}, {"skipped", skipped}}},
                {"notes", m.notes}};

  std::string text = line_of(fm::to_json(ctx));
  for (std::size_t i = 0; i < m.points.size(); ++i) text += line_of(point_record(m.points[i], i));
  fm::write_text_atomic(a.out, text);

  int total_skipped = 0;
  for (const auto& [k, n] : m.skipped) total_skipped += n;
  std::cout << "import: " << traces.size() << " trace(s) of a " << m.world << "-rank job ("
            << m.hosts.size() << " host(s), " << m.topology_from << "): " << m.calls
            << " call(s) -> " << m.points.size() << " point(s)";
  if (total_skipped > 0) {
    std::cout << "; skipped " << total_skipped << " NCCL kernel(s): ";
    bool first = true;
    for (const auto& [k, n] : m.skipped) std::cout << (first ? "" : ", ") << n << " " << k, first = false;
  }
  std::cout << "\n";
  for (const std::string& n : m.notes) std::cout << "  " << n << "\n";
  bool one_sided = false;
  for (const fm::TracePoint& p : m.points) one_sided = one_sided || p.ranks_merged < p.group_size;
  if (one_sided)
    std::cout << "  some groups' calls come from fewer ranks than the group has: their samples "
                 "are upper bounds (check judges them one-sided)\n";
  std::cout << "import: wrote " << a.out << " (" << m.points.size() << " point(s), mode "
            << kInJobMode << ")\n";
  return 0;
}

}  // namespace shardbench

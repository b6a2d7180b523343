// `shardbench import`: nccl-tests / OSU logs -> a sweep results file (docs/IMPORT.md). The
// parsing is formats/ (import_logs.hpp, pure text -> rows); this file turns rows into the point
// records a sweep writes (the same type, formats/results_record.hpp, and the same shape helpers:
// collective_shape, compute_stats, bandwidth), so calibrate, gate, predict's checks and the
// report read them like a sweep's.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "commands.hpp"
#include "import_trace_command.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/atomic_write.hpp"
#include "shardcal/formats/import_logs.hpp"
#include "shardcal/formats/json.hpp"
#include "shardcal/formats/results_record.hpp"
#include "shardcal/formats/schemas.hpp"
#include "shardcal/formats/sha256.hpp"
#include "shardcal/formats/utc_time.hpp"
#include "shardcal/hash.hpp"
#include "sweep/config.hpp"
#include "sweep/provenance.hpp"
#include "sweep/stats.hpp"

namespace shardbench {
namespace {

using nlohmann::json;
namespace fm = shardcal::formats;
using shardcal::Collective;
using shardcal::collective_info;
using shardcal::Error;

struct ImportArgs {
  std::vector<std::string> logs;
  std::string out;
  std::string format = "auto";
  std::string collective;
  int hosts = 0;
  int ranks_per_host = 0;
  std::string command_line;
};

// Invalid UTF-8 in a log (host names, command lines) must not stop the write.
std::string dump_line(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

struct Topology {
  std::vector<std::pair<std::string, std::vector<int>>> hosts;  // name, ranks
  int world = 0;
  // The measured groups: one per nccl-tests colour (`Group G`, NCCL_TESTS_SPLIT), all running
  // at once; usually one group of every rank.
  int groups = 1, group_size = 0;
  int hosts_spanned = 1;       // most hosts one group spans
  int max_ranks_per_host = 0;  // most ranks of one group on one host
  std::string from;            // "rank lines" | "--hosts/--ranks-per-host"
};

// The launch line's shape in shardcal's ranks: nccl-tests runs nThread x nGpus ranks per
// process, so `srun -N2 --ntasks-per-node=1 all_reduce_perf -g 8` is 2 hosts x 8 ranks.
// 64-bit: a launch line's shape times nGpus x nThread can exceed an int; the callers refuse a
// world over fm::kMaxImportRanks.
struct LaunchRanks {
  std::optional<std::int64_t> hosts, ranks_per_host, ranks;
};

LaunchRanks launch_ranks(const fm::ParsedLog& log) {
  LaunchRanks r;
  if (!log.launch) return r;
  std::int64_t per_process = 1;
  if (log.format != fm::LogFormat::Osu)
    for (const char* k : {"nGpus", "nThread", "ngpus", "nthreads"})
      if (log.header.contains(k) && log.header[k].is_number_integer()) {
        const auto v = log.header[k].get<std::int64_t>();
        if (v >= 1 && v <= 1024) per_process *= v;
      }
  r.hosts = log.launch->hosts;
  if (log.launch->ranks_per_host) r.ranks_per_host = *log.launch->ranks_per_host * per_process;
  if (log.launch->ranks) r.ranks = *log.launch->ranks * per_process;
  if (r.hosts && r.ranks_per_host && !r.ranks) r.ranks = *r.hosts * *r.ranks_per_host;
  return r;
}

std::string launch_where(const std::string& path, const fm::LaunchShape& l) {
  std::string text = l.text.size() > 120 ? l.text.substr(0, 117) + "..." : l.text;
  return path + ":" + std::to_string(l.line) + " (`" + text + "`)";
}

// Host names: the launch line's when it names as many hosts, else host0, host1, ...
std::vector<std::string> host_names(const fm::ParsedLog& log, int hosts, bool& named) {
  std::vector<std::string> out;
  named = log.launch && int(log.launch->host_names.size()) == hosts;
  for (int h = 0; h < hosts; ++h)
    out.push_back(named ? log.launch->host_names[std::size_t(h)] : "host" + std::to_string(h));
  return out;
}

Topology shape_topology(const fm::ParsedLog& log, int hosts, int rph, const std::string& from) {
  Topology t;
  bool named = false;
  const std::vector<std::string> names = host_names(log, hosts, named);
  for (int h = 0; h < hosts; ++h) {
    std::vector<int> ranks;
    for (int r = 0; r < rph; ++r) ranks.push_back(h * rph + r);
    t.hosts.emplace_back(names[std::size_t(h)], ranks);
  }
  t.world = t.group_size = hosts * rph;
  t.hosts_spanned = hosts;
  t.max_ranks_per_host = rph;
  t.from = from + (named ? "; host names from the launch line"
                         : "; host names not in the log (host0, host1, ...)");
  return t;
}

Topology topology_of(const fm::ParsedLog& log, const std::string& path, const ImportArgs& a) {
  Topology t;
  const LaunchRanks lr = launch_ranks(log);
  if (lr.ranks && *lr.ranks > fm::kMaxImportRanks)
    throw Error(launch_where(path, *log.launch) + ": the launch line runs " +
                std::to_string(*lr.ranks) + " ranks" +
                (log.launch->ranks && *lr.ranks != *log.launch->ranks ? " with the log's nGpus"
                                                                      : std::string()) +
                ", more than the " + std::to_string(fm::kMaxImportRanks) +
                " shardbench import handles; check the log (nothing written)");
  if (a.hosts > 0) {
    const int world = a.hosts * a.ranks_per_host;  // capped in run()
    const std::string given = "--hosts " + std::to_string(a.hosts) + " x --ranks-per-host " +
                              std::to_string(a.ranks_per_host) + " = " + std::to_string(world) +
                              " ranks";
    if (!log.ranks.empty() && int(log.ranks.size()) != world)
      throw Error(path + ": the log lists " + std::to_string(log.ranks.size()) + " ranks but " +
                  given + "; give the shape the benchmark ran on");
    if (!log.ranks.empty()) {
      std::set<std::string> distinct;
      for (const fm::LogRank& r : log.ranks) distinct.insert(r.host);
      if (int(distinct.size()) > a.hosts)
        throw Error(path + ": the rank lines name " + std::to_string(distinct.size()) +
                    " hosts but --hosts says " + std::to_string(a.hosts) +
                    "; drop --hosts/--ranks-per-host to use the rank lines (nothing written)");
    }
    if (log.launch) {
      const bool bad = (lr.hosts && *lr.hosts != a.hosts) ||
                       (lr.ranks_per_host && *lr.ranks_per_host != a.ranks_per_host) ||
                       (lr.ranks && *lr.ranks != world);
      if (bad)
        throw Error(launch_where(path, *log.launch) + ": " + given +
                    " contradicts the log's launch line, which ran " + log.launch->describe() +
                    (lr.ranks && log.launch->ranks && *lr.ranks != *log.launch->ranks
                         ? " (" + std::to_string(*lr.ranks) + " ranks with the log's nGpus)"
                         : std::string()) +
                    "; drop --hosts/--ranks-per-host to take the shape from the log, or correct "
                    "them (nothing written)");
    }
    return shape_topology(log, a.hosts, a.ranks_per_host, "--hosts/--ranks-per-host");
  }
  if (log.ranks.empty()) {
    if (lr.hosts && lr.ranks_per_host)
      return shape_topology(log, int(*lr.hosts), int(*lr.ranks_per_host),
                            "the launch line (line " + std::to_string(log.launch->line) + ")");
    throw Error(path + ": the log names no hosts (" +
                (log.format == fm::LogFormat::Osu
                     ? std::string("OSU prints none")
                     : std::string("no `#  Rank N ... on HOST device` lines")) +
                (log.launch ? "; its launch line (line " + std::to_string(log.launch->line) +
                                  ") gives only " + log.launch->describe() +
                                  (log.launch->inconsistent.empty()
                                       ? std::string()
                                       : " (" + log.launch->inconsistent + ")")
                            : std::string()) +
                (log.launch_ignored.empty() ? std::string() : "; its " + log.launch_ignored) +
                "); pass --hosts H --ranks-per-host R, the nodes and ranks per node the benchmark "
                "ran on (e.g. --hosts 1 --ranks-per-host 2)");
  }
  std::map<std::string, std::size_t> index;
  for (const fm::LogRank& r : log.ranks) {
    auto [it, fresh] = index.try_emplace(r.host, t.hosts.size());
    if (fresh) t.hosts.emplace_back(r.host, std::vector<int>{});
    t.hosts[it->second].second.push_back(r.rank);
  }
  t.world = int(log.ranks.size());
  std::map<int, std::map<std::string, int>> per_group;  // colour -> host -> ranks
  for (const fm::LogRank& r : log.ranks) ++per_group[r.group][r.host];
  t.groups = int(per_group.size());
  t.group_size = t.world / t.groups;
  for (const auto& [colour, hosts] : per_group) {
    int n = 0;
    for (const auto& [host, ranks] : hosts) {
      n += ranks;
      t.max_ranks_per_host = std::max(t.max_ranks_per_host, ranks);
    }
    if (n != t.group_size)
      throw Error(path + ": the rank lines put " + std::to_string(n) + " ranks in group " +
                  std::to_string(colour) + " but " + std::to_string(t.world) + " ranks in " +
                  std::to_string(t.groups) +
                  " groups; shardcal records groups of one size: "
                  "pass --hosts and --ranks-per-host to import it as one group");
    t.hosts_spanned = std::max(t.hosts_spanned, int(hosts.size()));
  }
  t.from = t.groups > 1 ? "rank lines (" + std::to_string(t.groups) + " groups: Group column)"
                        : "rank lines";
  return t;
}

// One imported point: its key parameters and the rows (repeats) that measured it.
struct Pending {
  json params;
  std::vector<const fm::LogRow*> rows;
};

std::string protocol_mode(const fm::ParsedLog& log) {
  return log.format == fm::LogFormat::Osu ? "per_iteration" : "pipelined";
}

json point_params(const fm::ParsedLog& log, const fm::LogRow& row, const Topology& topo) {
  const Collective op = *log.collective;
  const auto& info = collective_info(op);
  json protocol;
  protocol["tool"] = log.tool;
  protocol["mode"] = protocol_mode(log);
  const bool per_iter = !row.samples_us.empty();
  // nccl-tests: iters x agg ops back to back per mean (one op per sample with per-iteration
  // timing); OSU: one op per timed iteration.
  protocol["ops_per_sample"] = log.format == fm::LogFormat::Osu ? 1
                               : per_iter                       ? std::max(1, log.agg_iters)
                                          : std::max(1, log.iters) * std::max(1, log.agg_iters);
  protocol["warmup"] = log.warmup >= 0 ? json(log.warmup) : json(nullptr);
  protocol["statistic"] = per_iter ? "per_iteration" : "mean";
  if (!row.placement.empty()) protocol["placement"] = row.placement;
  json p;
  p["kind"] = "collective";
  // Several groups at once: a 2-D mesh whose dim 1 is the measured group (as a sweep records it).
  p["mesh"] = topo.groups > 1 ? std::to_string(topo.groups) + "x" + std::to_string(topo.group_size)
                              : std::to_string(topo.world);
  p["mesh_dim"] = topo.groups > 1 ? 1 : 0;
  p["op"] = std::string(info.name);
  p["dtype"] = std::string(shardcal::dtype_name(row.dtype));
  p["distribution"] = "even";
  p["size"] = fm::table_bytes(log, row, topo.group_size);
  p["mode"] = protocol_mode(log);
  p["protocol"] = protocol;
  if (info.reduces) p["redop"] = row.redop;
  if (info.has_root) p["root"] = row.root.value_or(0);
  return p;
}

json context_record(const fm::ParsedLog& log, const std::string& path, const std::string& text,
                    const Topology& topo, std::size_t points, const ImportArgs& a) {
  fm::ContextRecord ctx;
  // When the benchmark ran, if the log says (a `date` line, the JSON's start_time); else the
  // import's time, and the import record says so.
  ctx.date = log.run_date.empty() ? fm::utc_now_iso8601() : log.run_date;
  ctx.command_line = a.command_line;
  const std::string sha = fm::sha256_file(path);
  ctx.config_path = path;
  ctx.config = json::object();
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(shardcal::fnv1a64(sha)));
  ctx.config_hash = hash;
  ctx.backend = log.backend;
  ctx.world = topo.world;
  ctx.memory = log.memory;
  for (const auto& [name, ranks] : topo.hosts) ctx.hosts.push_back({name, ranks});
  for (const auto& [k, v] : log.library_versions) ctx.library_versions[k] = v;
  ctx.shardcal_version = sweep::shardcal_version();
  ctx.git_revision = sweep::git_revision();
  if (sweep::git_dirty() >= 0) ctx.git_dirty = sweep::git_dirty() == 1;
  ctx.points_total = points;
  ctx.timing_method =
      log.format == fm::LogFormat::Osu
          ? "imported from OSU micro-benchmarks: per size, each rank times `iterations` calls "
            "(MPI_Wtime around each, barrier between), its mean; the log prints the mean of the "
            "ranks' means (Avg Latency): samples_s holds that one mean"
          : "imported from nccl-tests: per size, iters x agg_iters operations launched back to "
            "back, host clock around the loop, mean per operation averaged over ranks; samples_s "
            "holds that mean (one sample), or the per-iteration times when the JSON has them";
  json gpus = json::array();
  for (const fm::LogRank& r : log.ranks)
    gpus.push_back({{"rank", r.rank}, {"host", r.host}, {"device", r.device}, {"name", r.gpu}});
  json imp;
  imp["source"] = {{"path", path}, {"sha256", sha}, {"bytes", text.size()}};
  imp["format"] = std::string(fm::log_format_name(log.format));
  imp["tool"] = log.tool;
  imp["tool_version"] = log.tool_version;
  imp["benchmark"] = log.benchmark;
  imp["collective_from"] = log.benchmark_from;
  imp["date_from"] =
      !log.run_date.empty()          ? "the log: " + log.run_date_from
      : log.run_date_ignored.empty() ? std::string("the import's time (the log states no date)")
                                     : "the import's time (" + log.run_date_ignored + ")";
  if (log.launch) {
    imp["launch"] = {{"line", log.launch->line}, {"text", log.launch->text},
                     {"shape", log.launch->describe()}};
    if (!log.launch->inconsistent.empty()) imp["launch"]["inconsistent"] = log.launch->inconsistent;
  } else if (!log.launch_ignored.empty()) {
    imp["launch_ignored"] = log.launch_ignored;
  }
  imp["log_command_line"] = log.command_line;
  imp["header"] = log.header;
  imp["topology_from"] = topo.from;
  imp["gpus"] = gpus;
  imp["rows"] = {{"imported", log.rows.size()},
                 {"skipped_zero_size", log.skipped_zero},
                 {"skipped_truncated", log.skipped_truncated},
                 {"skipped_dtype", log.skipped_dtype},
                 {"skipped_na", log.skipped_na}};
  imp["notes"] = log.notes;
  ctx.import = imp;
  return fm::to_json(ctx);
}

json point_record(const fm::ParsedLog& log, const Pending& pt, const Topology& topo,
                  std::size_t index) {
  const Collective op = *log.collective;
  const auto& info = collective_info(op);
  const fm::LogRow& first = *pt.rows.front();
  const std::int64_t S = pt.params["size"].get<std::int64_t>();
  const auto dist = sweep::Distribution::parse("even");
  const sweep::CollectiveShape sh =
      sweep::collective_shape(op, first.dtype, S, dist, topo.group_size);
  fm::PointRecord rec;
  for (const fm::LogRow* r : pt.rows) {
    if (r->samples_us.empty())
      rec.samples_s.push_back(r->time_us * 1e-6);
    else
      for (double u : r->samples_us) rec.samples_s.push_back(u * 1e-6);
  }
  sweep::fill_collective_record(rec, op, sh, rec.samples_s);
  rec.index = index;
  rec.key = pt.params.dump();
  rec.point = pt.params;
  if (info.has_root) rec.root = pt.params["root"].get<std::int64_t>();
  rec.groups = topo.groups;
  rec.hosts_spanned = topo.hosts_spanned;
  rec.max_ranks_per_host = topo.max_ranks_per_host;
  if (pt.rows.size() == 1 && first.min_us && first.max_us)  // OSU -f: the tool's own statistic
    rec.rank_means = {*first.max_us * 1e-6, first.time_us * 1e-6, *first.min_us * 1e-6};
  const bool per_iter = !first.samples_us.empty();
  const json& protocol = pt.params["protocol"];
  rec.timing.mode = protocol_mode(log);
  rec.timing.ops_per_sample = protocol["ops_per_sample"].get<int>();
  if (protocol["warmup"].is_number()) rec.timing.warmup = protocol["warmup"].get<int>();
  rec.timing.buffer_slots = 1;
  rec.timing.barrier = log.format == fm::LogFormat::Osu ? "world, after each iteration" : "none";
  rec.timing.timer = per_iter ? "cuda_event" : "host_clock";
  rec.timing.reduction = per_iter                           ? "max over ranks per iteration"
                         : log.format == fm::LogFormat::Osu ? "mean over ranks of each rank's mean"
                                                            : "mean over ranks of the loop's mean";
  rec.timing.stop_reason = "max_iterations";
  // wrong: the sum over repeats; null when the log did not check (N/A) any of them.
  double wrong = 0;
  for (const fm::LogRow* r : pt.rows)
    if (r->wrong) wrong += *r->wrong, rec.wrong = 0;
  if (rec.wrong) rec.wrong = std::int64_t(wrong);
  json src = json::array();
  for (const fm::LogRow* r : pt.rows) {
    json s = {
        {r->line > 0 ? "line" : "json_pointer", r->line > 0 ? json(r->line) : json(r->pointer)},
        {"size_printed", r->size},
        {"time_us", r->time_us},
        {"type", r->type_name},
        {"redop", r->redop}};
    if (r->count >= 0) s["count"] = r->count;
    if (r->algbw_GBps > 0) s["algbw_GBps"] = r->algbw_GBps;
    if (r->busbw_GBps > 0) s["busbw_GBps"] = r->busbw_GBps;
    if (r->iterations) s["iterations"] = *r->iterations;
    if (!r->placement.empty()) s["placement"] = r->placement;
    if (!r->samples_us.empty()) s["per_iteration_samples"] = r->samples_us.size();
    src.push_back(std::move(s));
  }
  rec.import = {{"rows", src},
                {"statistic", per_iter ? "per-iteration times (slowest rank per iteration)"
                                       : "the tool's mean over its iterations (one sample per "
                                         "row; not a median of samples)"},
                {"iterations_per_sample", protocol["ops_per_sample"]}};
  return fm::to_json(rec);
}

struct LogResult {
  std::string path;
  fm::ParsedLog log;
  Topology topo;
  std::vector<Pending> points;
  std::string text;
};

int run(const ImportArgs& a) {
  // torch.profiler traces (cmd_import_trace.cpp): all inputs traces, or none.
  std::size_t traces = 0;
  if (a.format == "auto" || a.format == "torch-trace")
    for (const std::string& p : a.logs) traces += a.format == "torch-trace" || is_trace_file(p);
  if (traces > 0) {
    if (traces != a.logs.size())
      throw Error("some inputs are torch.profiler traces and some are benchmark logs; import "
                  "them separately (one results file per job)");
    if (a.hosts > 0 || !a.collective.empty())
      throw Error("--hosts and --collective are for benchmark logs; a trace names its "
                  "collectives (give --ranks-per-host alone for its hosts)");
    return run_trace_import({a.logs, a.out, a.ranks_per_host, a.command_line});
  }
  const fm::LogFormat format = fm::parse_log_format(a.format);
  std::optional<Collective> coll;
  if (!a.collective.empty()) {
    coll = shardcal::find_collective_alias(a.collective);
    if (!coll)
      throw Error("--collective \"" + a.collective +
                  "\" is not a collective shardcal knows; expected one of " +
                  shardcal::collective_names_help());
  }
  if ((a.hosts > 0) != (a.ranks_per_host > 0))
    throw Error(
        "--hosts and --ranks-per-host go together (the nodes and ranks per node the "
        "benchmark ran on); give both or neither");
  if (std::int64_t(a.hosts) * a.ranks_per_host > fm::kMaxImportRanks)
    throw Error("--hosts " + std::to_string(a.hosts) + " x --ranks-per-host " +
                std::to_string(a.ranks_per_host) + " = " +
                std::to_string(std::int64_t(a.hosts) * a.ranks_per_host) + " ranks, more than the " +
                std::to_string(fm::kMaxImportRanks) +
                " shardbench import handles; give the nodes and ranks per node the benchmark ran "
                "on");
  for (const std::string& path : a.logs) {
    std::error_code ec;
    if (std::filesystem::equivalent(path, a.out, ec))
      throw Error("--out " + a.out + " is one of the logs; write the results to another file");
  }
  std::vector<LogResult> done;
  std::set<std::string> keys;
  std::map<std::string, std::string> key_owner;
  struct Skip {
    std::string path, why;
    bool undetermined = false;
  };
  std::vector<Skip> skips;
  for (const std::string& path : a.logs) {
    LogResult lr;
    lr.path = path;
    lr.text = fm::read_text_file(path, "the benchmark log",
                                 "check the path (shardbench import LOG... --out R.jsonl)");
    lr.log = fm::parse_log(lr.text, path, format, coll, a.hosts * a.ranks_per_host);
    if (!lr.log.collective) {
      // Said once the outcome is known: with nothing imported, the one error says it instead.
      skips.push_back({path, lr.log.skip_reason, lr.log.undetermined});
      continue;
    }
    lr.topo = topology_of(lr.log, path, a);
    if (lr.topo.group_size < 2)
      throw Error(path + ": the log's groups have 1 rank; a collective needs at least 2");
    std::map<std::string, std::size_t> index;
    for (const fm::LogRow& r : lr.log.rows) {
      json params = point_params(lr.log, r, lr.topo);
      const std::string key = params.dump();
      auto [it, fresh] = index.try_emplace(key, lr.points.size());
      if (fresh) lr.points.push_back({std::move(params), {}});
      lr.points[it->second].rows.push_back(&r);
    }
    for (const Pending& p : lr.points) {
      const std::string key = p.params.dump();
      if (auto it = key_owner.find(key); it != key_owner.end())
        throw Error(path +
                    (p.rows.front()->line > 0 ? ":" + std::to_string(p.rows.front()->line)
                                              : ": " + p.rows.front()->pointer) +
                    ": the same point (" + p.params["op"].get<std::string>() + " " +
                    std::to_string(lr.topo.world) + " ranks, " +
                    std::to_string(p.params["size"].get<std::int64_t>()) + " B) is in " +
                    it->second +
                    "; a results file holds each point once: import these logs into separate "
                    "files (gate and calibrate take several)");
      key_owner[key] = path;
    }
    if (!done.empty() &&
        (done.front().log.backend != lr.log.backend || done.front().log.memory != lr.log.memory))
      throw Error(path + ": backend/memory " + lr.log.backend + "/" + lr.log.memory +
                  " differs from " + done.front().path + " (" + done.front().log.backend + "/" +
                  done.front().log.memory +
                  "); one results file holds one backend on one memory "
                  "space: import them into separate files");
    done.push_back(std::move(lr));
  }
  // Every log skipped: one error that names each log, why, and what to do (no skip lines before
  // it, and no summary that guesses a reason).
  if (done.empty()) {
    bool any_undetermined = false;
    std::string why;
    for (const Skip& k : skips) {
      why += (why.empty() ? "" : "; ") + k.path + ": " + k.why;
      any_undetermined = any_undetermined || k.undetermined;
    }
    const std::string fix =
        skips.size() == 1
            ? (any_undetermined ? ""
                                : "; give a log of a collective shardcal measures (nccl-tests "
                                  "all_reduce_perf, all_gather_perf, ...; OSU osu_allreduce, "
                                  "osu_allgather, ...)")
            : std::string("; give at least one log of a collective shardcal measures") +
                  (any_undetermined ? " (or pass --collective for a log that names none)" : "");
    throw Error("nothing imported: " +
                (skips.size() == 1
                     ? std::string("the log was skipped: ")
                     : "every log (" + std::to_string(skips.size()) + ") was skipped: ") +
                why + fix + "; no file written");
  }
  for (const Skip& k : skips) std::cout << "import: skipping " << k.path << ": " << k.why << "\n";
  std::string text;
  std::size_t index = 0, points = 0;
  for (LogResult& lr : done) {
    // The rows point into lr.log, which stays put from here on.
    text += dump_line(context_record(lr.log, lr.path, lr.text, lr.topo, lr.points.size(), a));
    for (const Pending& p : lr.points) text += dump_line(point_record(lr.log, p, lr.topo, index++));
    points += lr.points.size();
    const fm::ParsedLog& l = lr.log;
    std::cout << "import: " << lr.path << ": " << l.benchmark << " -> "
              << collective_info(*l.collective).name
              << (l.benchmark_from.rfind("--collective", 0) == 0 ? " (--collective)" : "")
              << " on " << lr.topo.world << " ranks ("
              << lr.topo.hosts.size() << " host(s), " << lr.topo.from << "): " << lr.points.size()
              << " point(s) from " << l.rows.size() << " row(s)";
    std::vector<std::string> sk;
    if (l.skipped_zero) sk.push_back(std::to_string(l.skipped_zero) + " size-0");
    if (l.skipped_truncated) sk.push_back(std::to_string(l.skipped_truncated) + " truncated");
    if (l.skipped_dtype) sk.push_back(std::to_string(l.skipped_dtype) + " of an unknown type");
    if (l.skipped_na) sk.push_back(std::to_string(l.skipped_na) + " N/A");
    int wrong = 0;
    for (const fm::LogRow& r : l.rows) wrong += r.wrong && *r.wrong > 0;
    if (wrong)
      sk.push_back(std::to_string(wrong) + " with #wrong > 0 (recorded, excluded by readers)");
    for (std::size_t i = 0; i < sk.size(); ++i) std::cout << (i ? ", " : "; skipped ") << sk[i];
    std::cout << "\n";
    for (const std::string& n : l.notes) std::cout << "  " << n << "\n";
    if (!l.run_date.empty())
      std::cout << "  run date " << l.run_date << " from " << l.run_date_from << "\n";
    else if (!l.run_date_ignored.empty())
      std::cout << "  run date: the import's time; " << l.run_date_ignored << "\n";
  }
  // Moved vectors keep their buffers, so the row pointers above stayed valid.
  fm::write_text_atomic(a.out, text);
  std::cout << "import: wrote " << a.out << " (" << done.size() << " log(s), " << points
            << " point(s)"
            << (skips.empty() ? "" : ", " + std::to_string(skips.size()) + " log(s) skipped")
            << ")\n";
  return 0;
}

}  // namespace

Runner add_import_command(CLI::App& app) {
  auto args = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "import",
      "Turn benchmark logs (nccl-tests text or -J JSON, OSU collective latency tests) into a " +
          fm::schema_label(fm::kResultsSchema, fm::kResultsVersion) +
          " results file that calibrate, gate and the report read like a sweep's "
          "(docs/IMPORT.md).\n"
          "Each log becomes one context record (provenance: path, sha256, tool, version, GPUs) and "
          "one point per (size, dtype, redop, out-of-place/in-place). Time: the tool's mean per "
          "size "
          "(nccl-tests: pipelined mode, iters ops per mean; OSU: per_iteration), one sample per "
          "point, so calibrate fits it and gate calls a comparison of two such files "
          "inconclusive.\n"
          "Skipped and counted: size-0 rows, a cut-short last row, N/A times; rows with #wrong > 0 "
          "are recorded and excluded by readers. Logs of benchmarks outside shardcal's table "
          "(sendrecv_perf, osu_latency, osu_bw, ...) are skipped with a message; exit 2 when "
          "nothing is left to import. Exit 2 on bad input (FILE:LINE: what; what to do), nothing "
          "written.");
  cmd->add_option("logs", args->logs,
                  "Benchmark logs (text or JSON), or torch.profiler traces (.json, .json.gz: "
                  "several ranks' traces of one job are merged)")->required()->expected(1, -1);
  cmd->add_option("--out", args->out, "Results file to write (JSON Lines, written atomically)")
      ->required();
  cmd->add_option("--format", args->format,
                  "auto (detect per log), nccl-tests (text), nccl-tests-json (-J FILE), osu, "
                  "torch-trace (torch.profiler JSON, .json.gz)")
      ->check(CLI::IsMember({"auto", "nccl-tests", "nccl-tests-json", "osu", "torch-trace"}))
      ->capture_default_str();
  cmd->add_option("--hosts", args->hosts,
                  "Nodes the benchmark ran on: needed when the log names none (OSU); overrides "
                  "the log's rank lines (with --ranks-per-host)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--ranks-per-host", args->ranks_per_host,
                  "Ranks (GPUs) per node, with --hosts; for traces alone (hosts are blocks of "
                  "consecutive ranks), needed unless every rank's trace names its host")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--collective", args->collective,
                  "The collective, for a log that does not name its program (no `# Collective "
                  "test starting` line or command); must agree with the log's program and "
                  "table. nccl-tests' and OSU's names work too (alltoall, allreduce, "
                  "osu_allgather, ...)");
  return [args, cmd] {
    std::string cl = "shardbench import";
    for (const std::string& l : args->logs) cl += " " + l;
    cl += " --out " + args->out;
    (void)cmd;
    args->command_line = cl;
    return run(*args);
  };
}

}  // namespace shardbench

// OSU micro-benchmarks output -> ParsedLog (docs/IMPORT.md). OMB prints a title
// `# OSU MPI[-CUDA] <Name> Test vX.Y`, optionally `# Datatype: MPI_CHAR.`, a column header
// `# Size  Avg Latency(us) [Min Latency(us)  Max Latency(us)  Iterations] [Validation]`, then one
// row per size. The average is each rank's mean over the iterations, averaged over ranks.
#include <algorithm>
#include <cctype>

#include "import_text.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/import_logs.hpp"

namespace shardcal::formats {
namespace {

using namespace import_detail;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool has(const std::string& s, const char* w) { return s.find(w) != std::string::npos; }

// The benchmark's title (between "OSU MPI[-X] " and " Test") -> collective, or why not.
std::optional<Collective> osu_collective(const std::string& title, std::string& why) {
  const std::string t = lower(title);
  if (has(t, "non-blocking") || has(t, "nonblocking")) {
    why = "a non-blocking benchmark (it times overlap with computation, not the collective alone)";
    return std::nullopt;
  }
  if (has(t, "allreduce")) return Collective::AllReduce;
  if (has(t, "reduce_scatter_block") || has(t, "reduce scatter block")) {
    why = "reduce_scatter_block sizes are per rank block; import osu_reduce_scatter instead";
    return std::nullopt;
  }
  if (has(t, "reduce_scatter") || has(t, "reduce scatter")) return Collective::ReduceScatter;
  if (has(t, "allgatherv") || has(t, "alltoallv") || has(t, "all-to-allv") || has(t, "gatherv") ||
      has(t, "scatterv")) {
    why = "a v-form benchmark (its counts are not printed)";
    return std::nullopt;
  }
  if (has(t, "allgather")) return Collective::AllGather;
  if (has(t, "all-to-all") || has(t, "alltoall")) return Collective::AllToAll;
  if (has(t, "broadcast") || has(t, "bcast")) return Collective::Broadcast;
  if (has(t, "gather")) return Collective::Gather;
  if (has(t, "scatter")) return Collective::Scatter;
  if (has(t, "reduce")) {
    why = "osu_reduce measures reduce, which shardcal's collective table does not have";
    return std::nullopt;
  }
  if (has(t, "barrier")) {
    why = "a barrier moves no data; shardcal's collective table has no barrier";
    return std::nullopt;
  }
  if (has(t, "latency") || has(t, "bandwidth") || has(t, "message rate") || has(t, "put") ||
      has(t, "get") || has(t, "accumulate")) {
    why = "a point-to-point benchmark (" + title +
          "): shardcal's collective table has no point-to-point entry";
    return std::nullopt;
  }
  why = "\"" + title + "\" is not an OSU collective benchmark shardcal knows";
  return std::nullopt;
}

std::optional<DType> mpi_type(std::string_view t) {
  if (t == "MPI_CHAR" || t == "MPI_SIGNED_CHAR" || t == "MPI_UNSIGNED_CHAR" || t == "MPI_BYTE")
    return DType::U8;
  if (t == "MPI_INT" || t == "MPI_INT32_T") return DType::I32;
  if (t == "MPI_INT64_T" || t == "MPI_LONG_LONG") return DType::I64;
  if (t == "MPI_FLOAT") return DType::F32;
  if (t == "MPI_DOUBLE") return DType::F64;
  return std::nullopt;
}

// Column labels of `# Size  Avg Latency(us) ...`: separated by two or more spaces.
std::vector<std::string> split_labels(std::string_view body) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < body.size()) {
    while (i < body.size() && (body[i] == ' ' || body[i] == '\t')) ++i;
    if (i >= body.size()) break;
    std::size_t j = i;
    while (j < body.size() && !(body[j] == '\t' || (body[j] == ' ' && j + 1 < body.size() &&
                                                    (body[j + 1] == ' ' || body[j + 1] == '\t'))))
      ++j;
    out.emplace_back(trim(body.substr(i, j - i)));
    i = j;
  }
  return out;
}

struct Columns {
  int line = 0;
  std::vector<std::string> labels;
  int avg = -1, min = -1, max = -1, iters = -1, valid = -1;
};

}  // namespace

ParsedLog parse_osu(std::string_view text, const std::string& name) {
  ParsedLog log;
  log.format = LogFormat::Osu;
  log.tool = "osu-micro-benchmarks";
  log.backend = "mpi";
  log.memory = "host";
  std::string title;
  int title_line = 0;
  std::optional<DType> dtype;
  std::optional<Columns> cols;
  TableRows rows(name, "column header");
  bool device_flag = false;
  for_each_line(text, [&](int ln, std::string_view raw) {
    const std::string_view line = trim(strip_launcher_tags(raw));
    if (line.empty()) return;
    if (line[0] == '#') {
      const std::string_view body = trim(line.substr(1));
      if (starts_with(body, "OSU ")) {
        // "OSU MPI-CUDA Allreduce Latency Test v5.9"
        const auto t = split_ws(body);
        std::string mid;
        std::size_t k = 2;  // after "OSU" and the library ("MPI", "MPI-CUDA", "NCCL")
        for (; k < t.size() && t[k] != "Test"; ++k)
          mid += (mid.empty() ? "" : " ") + std::string(t[k]);
        if (!title.empty() && mid != title)
          fail(name, ln,
               "a second benchmark (" + mid + ") after " + title + " (line " +
                   std::to_string(title_line) + "); split the log into one file per benchmark");
        title = mid;
        title_line = ln;
        if (t.size() > 1) {
          const std::string lib = lower(t[1]);
          if (has(lib, "cuda") || has(lib, "rocm")) log.memory = "cuda";
          if (starts_with(lib, "nccl")) log.backend = "nccl";
        }
        if (k + 1 < t.size()) {
          std::string_view v = t[k + 1];
          if (!v.empty() && (v[0] == 'v' || v[0] == 'V')) v = v.substr(1);
          log.tool_version = std::string(v);
        }
        return;
      }
      if (starts_with(body, "Datatype:")) {
        std::string_view v = trim(body.substr(9));
        if (!v.empty() && v.back() == '.') v = v.substr(0, v.size() - 1);
        log.header["datatype"] = std::string(v);
        dtype = mpi_type(v);
        if (!dtype) {
          log.skip_reason = "datatype " + std::string(v) + " has no shardcal dtype";
          log.notes.push_back(name + ":" + std::to_string(ln) + ": " + log.skip_reason);
        }
        return;
      }
      const auto labels = split_labels(body);
      if (!labels.empty() && labels[0] == "Size" && labels.size() >= 2) {
        Columns c;
        c.line = ln;
        c.labels = labels;
        for (std::size_t i = 1; i < labels.size(); ++i) {
          const std::string l = lower(labels[i]);
          if (starts_with(l, "avg latency"))
            c.avg = int(i);
          else if (starts_with(l, "min latency"))
            c.min = int(i);
          else if (starts_with(l, "max latency"))
            c.max = int(i);
          else if (l == "iterations")
            c.iters = int(i);
          else if (l == "validation")
            c.valid = int(i);
        }
        if (cols && cols->labels != c.labels)
          fail(name, ln,
               "a second column header with other columns than line " + std::to_string(cols->line) +
                   "; split the log into one file per run");
        if (!cols) cols = std::move(c);
        return;
      }
      return;
    }
    const auto t = split_ws(line);
    if (t.empty()) return;
    if (!is_uint_token(t[0]) || !cols) {
      consider_launch_line(log, line, ln, name);
      consider_date_line(log, line, ln);
      // The command line: the token naming the benchmark (osu_allreduce), and its options.
      for (std::string_view tok : t) {
        const std::size_t slash = tok.find_last_of('/');
        const std::string_view base = slash == std::string_view::npos ? tok : tok.substr(slash + 1);
        if (starts_with(base, "osu_") && log.command_line.empty()) {
          log.command_line = std::string(line);
          log.benchmark = std::string(base);
        }
      }
      if (!log.command_line.empty() && line == log.command_line) {
        for (std::size_t i = 0; i + 1 < t.size(); ++i)
          if ((t[i] == "-d" || t[i] == "--accelerator") &&
              (t[i + 1] == "cuda" || t[i + 1] == "rocm"))
            device_flag = true;
        for (std::size_t i = 0; i + 2 < t.size(); ++i)
          if (starts_with(t[i], "osu_") || t[i].find("/osu_") != std::string_view::npos)
            if (t[i + 1] == "D" || t[i + 1] == "M") device_flag = true;
      }
      return;
    }
    const Columns& c = *cols;
    if (!rows.accept(ln, t.size(), t.size() == c.labels.size(), c.labels.size(), c.line)) return;
    if (c.avg < 0)
      fail(name, c.line,
           "the column header has no \"Avg Latency(us)\" column: a bandwidth or "
           "message-rate table, not a collective latency test");
    const auto size = to_int(t[0]);
    if (!size || *size < 0)
      fail(name, ln, "the size \"" + std::string(t[0]) + "\" is not a byte count");
    if (*size == 0) {
      ++log.skipped_zero;
      return;
    }
    auto num = [&](int col) {
      const auto v = to_double(t[std::size_t(col)]);
      if (!v || *v < 0)
        fail(name, ln,
             "column " + c.labels[std::size_t(col)] + " is \"" + std::string(t[std::size_t(col)]) +
                 "\", expected a time in us; the row is damaged: repair or delete the line");
      return *v;
    };
    LogRow r;
    r.line = ln;
    r.size = *size;
    r.time_us = num(c.avg);
    if (r.time_us == 0) {
      ++log.skipped_na;
      return;
    }
    if (c.min >= 0) r.min_us = num(c.min);
    if (c.max >= 0) r.max_us = num(c.max);
    if (c.iters >= 0) {
      const auto it = to_int(t[std::size_t(c.iters)]);
      if (it && *it > 0) r.iterations = *it;
    }
    if (c.valid >= 0) {
      const std::string v = lower(t[std::size_t(c.valid)]);
      if (v == "pass")
        r.wrong = 0;
      else if (v == "fail")
        r.wrong = 1;  // OMB prints pass/fail, not a count
    }
    log.rows.push_back(std::move(r));
  });
  finish_launch(log, name);
  if (title.empty())
    throw Error(name +
                ":1: no OSU title line (`# OSU MPI ... Test vX.Y`) in the log; is this "
                "OSU micro-benchmarks output? (--format nccl-tests for nccl-tests logs)");
  log.benchmark_from = "the OSU title (line " + std::to_string(title_line) + ")";
  if (log.benchmark.empty()) log.benchmark = "OSU " + title;
  std::string why;
  log.collective = osu_collective(title, why);
  if (!log.collective) {
    log.skip_reason = why;
    return log;
  }
  if (!log.skip_reason.empty()) {  // a datatype shardcal lacks
    log.collective.reset();
    return log;
  }
  if (device_flag) log.memory = "cuda";
  if (!cols)
    fail(name, title_line,
         "no column header `# Size  Avg Latency(us)` follows the title; "
         "the log is incomplete");
  rows.finish(log, cols->line);
  // OMB before 7 sends MPI_FLOAT in the reducing benchmarks and MPI_CHAR in the others, and
  // prints no Datatype line.
  const bool reduces = collective_info(*log.collective).reduces;
  const DType dt = dtype.value_or(reduces ? DType::F32 : DType::U8);
  if (!dtype)
    log.header["datatype"] = reduces ? "MPI_FLOAT (OMB's default, not printed)"
                                     : "MPI_CHAR (OMB's default, not printed)";
  for (LogRow& r : log.rows) {
    r.dtype = dt;
    r.type_name = log.header["datatype"].get<std::string>();
    r.redop = reduces ? "sum" : "none";
  }
  return log;
}

}  // namespace shardcal::formats

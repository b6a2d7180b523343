// `shardbench import`: format detection and what the parsers share (docs/IMPORT.md).
#include "shardcal/formats/import_logs.hpp"

#include <algorithm>

#include "import_text.hpp"
#include "shardcal/error.hpp"

namespace shardcal::formats {

std::string_view log_format_name(LogFormat f) {
  switch (f) {
    case LogFormat::Auto: return "auto";
    case LogFormat::NcclTests: return "nccl-tests";
    case LogFormat::NcclTestsJson: return "nccl-tests-json";
    case LogFormat::Osu: return "osu";
  }
  return "auto";
}

LogFormat parse_log_format(std::string_view text) {
  for (LogFormat f :
       {LogFormat::Auto, LogFormat::NcclTests, LogFormat::NcclTestsJson, LogFormat::Osu})
    if (text == log_format_name(f)) return f;
  throw Error("unknown log format \"" + std::string(text) +
              "\"; expected auto, nccl-tests, nccl-tests-json or osu");
}

LogFormat detect_log_format(std::string_view text, const std::string& name) {
  using namespace import_detail;
  // JSON: the first non-blank character opens an object.
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') return LogFormat::NcclTestsJson;
  bool nccl = false, osu = false;
  for_each_line(text, [&](int, std::string_view raw) {
    const std::string_view line = trim(strip_launcher_tags(raw));
    if (line.empty() || line[0] != '#') return;
    const std::string_view body = trim(line.substr(1));
    if (starts_with(body, "OSU ")) osu = true;
    if (starts_with(body, "nccl-tests version") || starts_with(body, "nThread ") ||
        starts_with(body, "Collective test starting"))
      nccl = true;
    const auto t = split_ws(body);
    if (t.size() > 4 && t[0] == "size" && t[1] == "count") nccl = true;
  });
  if (nccl && !osu) return LogFormat::NcclTests;
  if (osu && !nccl) return LogFormat::Osu;
  if (nccl && osu)
    throw Error(name +
                ":1: the log holds both nccl-tests and OSU output; split it into one file "
                "per benchmark run");
  throw Error(name +
              ":1: not a benchmark log shardbench can import (no nccl-tests header `# nThread ...` "
              "or table header `#  size  count  type ...`, no OSU title `# OSU MPI ... Test`, not "
              "nccl-tests JSON); import nccl-tests output (text or -J JSON) or an OSU collective "
              "benchmark's output, or name the format with --format");
}

ParsedLog parse_log(std::string_view text, const std::string& name, LogFormat format,
                    std::optional<Collective> collective) {
  if (format == LogFormat::Auto) format = detect_log_format(text, name);
  ParsedLog log;
  switch (format) {
    case LogFormat::NcclTests: log = parse_nccl_tests_text(text, name); break;
    case LogFormat::NcclTestsJson: log = parse_nccl_tests_json(text, name); break;
    case LogFormat::Osu: log = parse_osu(text, name); break;
    case LogFormat::Auto: break;
  }
  if (collective) {
    if (log.collective && *log.collective != *collective)
      throw Error(name + ": the log measures " +
                  std::string(collective_info(*log.collective).name) + " (" + log.benchmark_from +
                  ") but --collective says " + std::string(collective_info(*collective).name) +
                  "; drop --collective or import this log separately");
    if (!log.collective && !log.skip_reason.empty() && !log.benchmark.empty())
      throw Error(name + ": " + log.benchmark + " is not " +
                  std::string(collective_info(*collective).name) + " (" + log.skip_reason +
                  "); drop --collective or import this log separately");
    if (!log.collective) {
      log.collective = collective;
      log.benchmark_from = "--collective";
      log.skip_reason.clear();
    }
  }
  // Not an error: with several logs the others still import; alone, nothing is left (exit 2).
  if (!log.collective && log.skip_reason.empty())
    log.skip_reason = "cannot tell which collective it measured (" + log.benchmark_from +
                      "); pass --collective all_reduce|all_gather|reduce_scatter|all_to_all|"
                      "broadcast|scatter|gather to import it";
  return log;
}

std::int64_t table_bytes(const ParsedLog& log, const LogRow& row, int world) {
  if (log.format != LogFormat::Osu || !log.collective) return row.size;
  // OSU prints the block one rank sends (all_gather, all_to_all to each peer, scatter/gather per
  // rank); the table's S is n such blocks.
  switch (*log.collective) {
    case Collective::AllGather:
    case Collective::AllToAll:
    case Collective::Gather:
    case Collective::Scatter: return row.size * std::int64_t(world);
    default: return row.size;
  }
}

namespace import_detail {

std::string_view strip_launcher_tags(std::string_view line) {
  // srun --label: "12: " (digits, colon, blank). No table row or header starts like that.
  std::size_t digits = 0;
  while (digits < line.size() && digits < 9 && line[digits] >= '0' && line[digits] <= '9') ++digits;
  if (digits > 0 && digits + 1 < line.size() && line[digits] == ':' &&
      (line[digits + 1] == ' ' || line[digits + 1] == '\t'))
    line = line.substr(digits + 2);
  for (int pass = 0; pass < 2; ++pass) {
    if (line.empty() || line[0] != '[') break;
    const std::size_t close = line.find(']');
    if (close == std::string_view::npos) break;
    const std::string_view tag = line.substr(1, close - 1);
    std::size_t skip = close + 1;
    if (tag.find_first_of(" \t") != std::string_view::npos) break;
    // Open MPI --tag-output: [job,rank]<stdout>:
    const bool ompi =
        tag.find(',') != std::string_view::npos && line.substr(skip).substr(0, 8) == "<stdout>";
    const bool ompi_err =
        tag.find(',') != std::string_view::npos && line.substr(skip).substr(0, 8) == "<stderr>";
    if (ompi || ompi_err) {
      skip += 8;
      if (skip < line.size() && line[skip] == ':') ++skip;
    } else if (!tag.empty() && tag.find_first_not_of("0123456789") == std::string_view::npos) {
      // MPICH/Hydra -prepend-rank: "[3] "
    } else if (std::count(tag.begin(), tag.end(), ':') != 1) {
      break;  // [host:pid] has one colon; "[0000:29:00]" (a bus id) or "[x]" is not a tag
    }
    line = line.substr(std::min(skip, line.size()));
  }
  return line;
}

std::optional<DType> nccl_type(std::string_view name) {
  if (name == "float" || name == "float32") return DType::F32;
  if (name == "double" || name == "float64") return DType::F64;
  if (name == "half" || name == "float16") return DType::F16;
  if (name == "bfloat16") return DType::BF16;
  if (name == "int32" || name == "int") return DType::I32;
  if (name == "int64") return DType::I64;
  if (name == "uint8") return DType::U8;
  return std::nullopt;
}

std::optional<Collective> nccl_program(std::string_view program, std::string& why) {
  const std::size_t slash = program.find_last_of('/');
  if (slash != std::string_view::npos) program = program.substr(slash + 1);
  if (program == "all_reduce_perf") return Collective::AllReduce;
  if (program == "all_gather_perf") return Collective::AllGather;
  if (program == "reduce_scatter_perf") return Collective::ReduceScatter;
  if (program == "alltoall_perf") return Collective::AllToAll;
  if (program == "broadcast_perf") return Collective::Broadcast;
  if (program == "scatter_perf") return Collective::Scatter;
  if (program == "gather_perf") return Collective::Gather;
  if (program == "sendrecv_perf")
    why = "sendrecv_perf is point-to-point: shardcal's collective table has no send/recv entry";
  else if (program == "reduce_perf")
    why = "reduce_perf measures reduce, which shardcal's collective table does not have";
  else
    why = std::string(program) +
          " is not one of the collectives in shardcal's table "
          "(all_reduce, all_gather, reduce_scatter, alltoall, broadcast, scatter, gather)";
  return std::nullopt;
}

}  // namespace import_detail
}  // namespace shardcal::formats

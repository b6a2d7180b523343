#pragma once
// Parsers of other tools' benchmark logs for `shardbench import` (docs/IMPORT.md): nccl-tests
// text output, nccl-tests JSON output (`-J FILE`) and the OSU micro-benchmarks' collective
// latency tests. Pure functions of the text (no I/O), so a libFuzzer target can call them; the
// command (bench/src/cmd_import.cpp) turns what they return into results records.
//
// Errors are shardcal::Error "NAME:LINE: what is wrong; what to do". A log that is readable but
// measures nothing shardcal's collective table has (osu_latency, sendrecv_perf) is not an error:
// ParsedLog::skip_reason says why.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardcal/collectives.hpp"
#include "shardcal/dtype.hpp"

namespace shardcal::formats {

enum class LogFormat { Auto, NcclTests, NcclTestsJson, Osu };

// "auto", "nccl-tests", "nccl-tests-json", "osu"; parse_log_format throws Error on other text.
std::string_view log_format_name(LogFormat f);
LogFormat parse_log_format(std::string_view text);

// What the text looks like; throws Error ("NAME:1: ...") when it is none of the formats.
LogFormat detect_log_format(std::string_view text, const std::string& name);

// One rank's device line (`#  Rank N Group G Pid P on HOST device D [bus] NAME`).
struct LogRank {
  int rank = 0;
  std::string host;
  int group = 0;  // nccl-tests' communicator colour (NCCL_TESTS_SPLIT): one group per colour
  int device = -1;
  std::string gpu;  // the device name as printed ("NVIDIA H100 80GB HBM3")
};

// One measured (size, dtype, redop, placement) of the table.
struct LogRow {
  int line = 0;             // 1-based line of the log (0 for JSON rows: see pointer)
  std::string pointer;      // JSON rows: "/results/3"
  std::int64_t size = 0;    // bytes as the tool prints them (table_bytes converts)
  std::int64_t count = -1;  // the count column (nccl-tests), -1 when absent
  DType dtype = DType::F32;
  std::string type_name;                  // the tool's spelling ("float", "MPI_CHAR")
  std::string redop;                      // "sum", ... ; "none" for collectives that do not reduce
  std::optional<int> root;                // the root column when the table has one (-1: none)
  std::string placement;                  // "out_of_place" | "in_place" (nccl-tests); "" (OSU)
  double time_us = 0;                     // the tool's mean
  double algbw_GBps = 0, busbw_GBps = 0;  // as printed (nccl-tests), 0 when absent
  std::optional<double> wrong;            // #wrong; nullopt when not checked (N/A) or not printed
  std::vector<double> samples_us;  // per-iteration times when the log has them (nccl-tests -J -I)
  std::optional<double> min_us, max_us;    // OSU -f: min/max over ranks of each rank's mean
  std::optional<std::int64_t> iterations;  // OSU -f: iterations of this size
};

struct ParsedLog {
  LogFormat format = LogFormat::NcclTests;
  std::string tool;                      // "nccl-tests" | "osu-micro-benchmarks"
  std::string tool_version;              // "2.17.9", "5.9"; "" when the log does not say
  std::string benchmark;                 // "all_reduce_perf", "osu_allreduce", or the OSU title
  std::string benchmark_from;            // where the benchmark's name came from, for provenance
  std::optional<Collective> collective;  // set unless skip_reason is
  std::string skip_reason;               // non-empty: nothing in the log maps to shardcal's table
  std::string command_line;              // the command as the log shows it, if it does
  std::vector<LogRank> ranks;            // nccl-tests device lines (empty for OSU)
  std::map<std::string, std::string> library_versions;  // "NCCL" -> "2.26.2+cuda12.4", ...
  std::string memory = "cuda";                          // "cuda" (device buffers) | "host"
  std::string backend;                                  // "nccl" | "mpi"
  // The timing protocol the tool states: iterations per reported mean, warm-up iterations, ...
  int warmup = -1, iters = -1, agg_iters = 1;
  nlohmann::json header = nlohmann::json::object();  // the tool's run parameters as printed
  std::vector<LogRow> rows;   // measured rows, in log order (size-0 and truncated rows excluded)
  int skipped_zero = 0;       // size-0 rows (nothing moves)
  int skipped_truncated = 0;  // a last row cut short
  int skipped_dtype = 0;      // rows of a type shardcal has no dtype for (int8, fp8, ...)
  int skipped_na = 0;         // variants whose time is N/A
  std::vector<std::string> notes;  // "NAME:LINE: what was skipped and why", for the report
};

// Parses `text` (named `name` in messages) as `format` (Auto: detect_log_format). A collective
// that the log does not name can be given (`collective`); one that it names and that differs is
// an error. Throws shardcal::Error "NAME:LINE: ...; fix".
ParsedLog parse_log(std::string_view text, const std::string& name, LogFormat format,
                    std::optional<Collective> collective = std::nullopt);

// The parsers behind parse_log (exposed for tests).
ParsedLog parse_nccl_tests_text(std::string_view text, const std::string& name);
ParsedLog parse_nccl_tests_json(std::string_view text, const std::string& name);
ParsedLog parse_osu(std::string_view text, const std::string& name);

// The collective table's S of one row: the tool's size column converted (OSU prints the per-rank
// block of all_gather / all_to_all / gather / scatter, shardcal counts n blocks).
std::int64_t table_bytes(const ParsedLog& log, const LogRow& row, int world);

namespace import_detail {
// Removes launcher tags from the start of a log line: Open MPI's `[1,0]<stdout>:`, `[host:pid]`
// and `[host:pid] ` style prefixes. Leaves other text alone.
std::string_view strip_launcher_tags(std::string_view line);
// nccl-tests type names -> shardcal dtypes (float f32, half f16, bfloat16 bf16, double f64,
// int32 i32, int64 i64, uint8 u8); nullopt for types shardcal lacks.
std::optional<DType> nccl_type(std::string_view name);
// nccl-tests program names -> collectives: "all_reduce_perf" -> AllReduce; nullopt with `why`
// set for programs outside the table (sendrecv_perf, reduce_perf, hypercube_perf, ...).
std::optional<Collective> nccl_program(std::string_view program, std::string& why);
}  // namespace import_detail

}  // namespace shardcal::formats

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

// The job shape the log's launch line states (`srun -N2 --ntasks-per-node=4 ...`, `mpirun -np 8
// -H a:4,b:4 ...`, `mpirun_rsh -np 2 a100-01 a100-01 ...`): evidence for the topology.
struct LaunchShape {
  int line = 0;                   // 1-based line of the log
  std::string launcher;           // "srun", "mpirun", "mpiexec", "mpirun_rsh", ...
  std::string text;               // the line as printed
  std::optional<int> hosts;       // nodes
  std::optional<int> ranks;       // all ranks
  std::optional<int> ranks_per_host;
  std::vector<std::string> host_names;  // distinct, in order of first appearance (when named)
  // The program the launcher runs: the first token naming a benchmark (osu_*, *_perf), as its
  // base name; "" when the line runs something else (nvidia-smi, a script): not the benchmark's
  // shape.
  std::string program;
  // Non-empty when the line contradicts itself (the stated rank count against hosts x ranks
  // per host from the other options, or two options giving different hosts or ranks per host:
  // `-ppn 4 --map-by ppr:2:node`): what was dropped. The stated rank count is kept.
  std::string inconsistent;
  std::string describe() const;   // "2 host(s) x 4 rank(s) per host" / "8 rank(s)" ...
};

// The most ranks an imported job may have (the results record lists every rank's count).
inline constexpr std::int64_t kMaxImportRanks = std::int64_t(1) << 20;

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
  // No program name and the table did not tell one collective: `--collective` would import it
  // (not a collective outside shardcal's table). `candidates`: those the table fits.
  bool undetermined = false;
  std::vector<Collective> candidates;
  // The table also fits sendrecv_perf (all_reduce on 2 ranks: sum, count = size, factor 1), which
  // shardcal cannot import: the advice must not send a point-to-point log in as all_reduce.
  bool sendrecv_lookalike = false;
  std::string evidence;  // the table's signature: redop, count rule, busbw/algbw on n ranks, line
  // The launch line that runs the benchmark, when the log shows one. Launch lines of other
  // programs are not used; several benchmark launch lines with different shapes: none is, and
  // launch_ignored says why (also in notes).
  std::optional<LaunchShape> launch;
  std::string launch_ignored;
  // When the benchmark ran: UTC ISO 8601 "...Z", or as written without a zone
  // ("2026-11-27T10:00:00", nccl-tests JSON start_time); "" when the log says not.
  std::string run_date;
  std::string run_date_from;     // where run_date came from ("line 3 (`...`)", ...)
  std::string run_date_ignored;  // a date the log states that was not used, and why
};

// Parses `text` (named `name` in messages) as `format` (Auto: detect_log_format). A collective
// that the log does not name can be given (`collective`); one that it names and that differs is
// an error. Throws shardcal::Error "NAME:LINE: ...; fix".
// `group_size_hint` (--hosts x --ranks-per-host) is the group size for reading the table when
// the log has no rank lines. A `collective` the table contradicts (redop, count column,
// busbw/algbw against nccl-tests' factors) is refused with the evidence.
ParsedLog parse_log(std::string_view text, const std::string& name, LogFormat format,
                    std::optional<Collective> collective = std::nullopt, int group_size_hint = 0);

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
// The job shape of a launch line (srun, mpirun/mpiexec/orterun, mpirun_rsh, aprun); nullopt
// when the line starts no launcher or states nothing about the shape.
std::optional<LaunchShape> parse_launch_line(std::string_view line, int line_no);
// A line that is only a date: `date`'s output ("Thu Mar  5 22:00:43 UTC 2026") or ISO 8601
// ("2026-03-05T22:00:43Z", "2026-03-05 22:00:43+01:00"), as UTC "YYYY-MM-DDTHH:MM:SSZ"; nullopt
// for other text and for zones it cannot convert (names other than UTC/GMT).
std::optional<std::string> date_line_utc(std::string_view line);
// A line that is a date date_line_utc cannot convert: without a zone, or with a zone name other
// than UTC/GMT. `local`: "YYYY-MM-DDTHH:MM:SS" as written; `zone`: the zone name ("" when none).
struct UnconvertedDate {
  std::string local, zone;
};
std::optional<UnconvertedDate> date_line_unconverted(std::string_view line);
// Considers one log line as the benchmark's launch line (parse_launch_line; lines that run
// another program are ignored). Throws Error "NAME:LINE: ..." for a shape of more than
// kMaxImportRanks ranks. finish_launch: several benchmark launch lines that disagree leave none.
void consider_launch_line(ParsedLog& log, std::string_view line, int line_no,
                          const std::string& name);
void finish_launch(ParsedLog& log, const std::string& name);
// Considers one log line as the run's date (date_line_utc); a date it cannot convert is noted
// in run_date_ignored.
void consider_date_line(ParsedLog& log, std::string_view line, int line_no);
}  // namespace import_detail

}  // namespace shardcal::formats

#pragma once
// Results as JSON Lines (docs/RESULTS_FORMAT.md, configs/schema/results.schema.json): a context
// record, then one record per point (--resume-anyway may append further context records; each
// point belongs to the context before it). Only rank 0 writes; each record is one write of one
// complete line followed by a flush, so an interrupted run leaves whole lines only.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace shardbench::sweep {

inline constexpr const char* kResultsSchema = "shardcal.sweep.results";
// 2: transition keys use canonical placements (the user's text is kept in from_given/to_given),
// every point carries its timing protocol (also part of its key), the context records git_dirty.
inline constexpr int kResultsVersion = 2;

// Values the context record needs from outside the sweep library.
struct RunInfo {
  std::string config_path;
  std::string command_line;
  std::string backend;
  int world = 0;
  std::vector<int> rank_host;            // host index of each world rank
  std::vector<std::string> host_names;   // per host index
  std::vector<std::pair<std::string, std::string>> library_versions;
};

std::string utc_now_iso8601();
std::string process_command_line();  // /proc/self/cmdline, shell-quoted where needed
// `git describe --always --abbrev=12` of the source tree at BUILD time (every build re-reads it;
// "unknown" outside git), and whether tracked files differed from that commit: 1 dirty, 0 clean,
// -1 unknown.
std::string git_revision();
int git_dirty();
std::string shardcal_version();

class ResultsFile {
 public:
  ResultsFile() = default;
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;
  ~ResultsFile();
  // Truncates/creates `path`. Throws Error naming the path and the OS reason.
  void create(const std::string& path);
  // Appends after the first `keep_bytes` bytes (drops a partial last line).
  void append(const std::string& path, std::uintmax_t keep_bytes);
  void write(const nlohmann::json& record);  // one line + flush
  void close();
  bool is_open() const { return f_ != nullptr; }

 private:
  std::FILE* f_ = nullptr;
  std::string path_;
};

// What --resume found in an existing file.
struct ResumeState {
  nlohmann::json context;          // the LAST context record: the one new points would belong to
  std::size_t contexts = 0;        // context records in the file (several after --resume-anyway)
  std::set<std::string> done_keys;
  std::uintmax_t keep_bytes = 0;   // bytes of complete, valid lines
  bool dropped_partial = false;    // a trailing partial line (killed mid-write) was found
  std::size_t records = 0;
};
// Reads and checks a results file for resuming. Throws Error ("--resume FILE: line N: reason;
// fix") when it is unreadable, has no context record first, holds a line that is not a JSON
// object or a record field of the wrong type, is corrupt before its last line, or any of its
// context records was produced by a different config (hash), backend or world size. Later
// context records (appended by --resume-anyway) are allowed; each point belongs to the context
// before it.
ResumeState read_for_resume(const std::string& path, const std::string& config_hash,
                            const std::string& backend, int world);

// What differs between the context record of a results file and this run's, in the fields that
// make measurements comparable (hosts' shape and ranks per host, library versions, shardcal version, git
// revision); one "field: file X, this run Y" entry per difference, empty when none. Backend,
// world and config are checked by read_for_resume (they can never be mixed).
std::vector<std::string> context_differences(const nlohmann::json& file_context,
                                             const nlohmann::json& this_run);
// Hosts compare by shape (the ranks each host holds, in host order), not by name: a resume on a
// new allocation (other hostnames, same hosts x ranks per host) is comparable. The renamed hosts,
// one "host I: \"old\" -> \"new\"" entry each; empty when the names are the same (or the
// shapes differ, which context_differences reports).
std::vector<std::string> host_renames(const nlohmann::json& file_context,
                                      const nlohmann::json& this_run);

}  // namespace shardbench::sweep

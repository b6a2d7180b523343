#pragma once
// Writer of sweep results (the reader for tools is results_reader.hpp): results as JSON Lines (docs/RESULTS_FORMAT.md, configs/schema/results.schema.json): a context
// record, then one record per point (--resume-anyway may append further context records; each
// point belongs to the context before it). Only rank 0 writes; each record is one write of one
// complete line followed by a flush, so an interrupted run leaves whole lines only.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "shardcal/formats/schemas.hpp"

namespace shardcal::formats {


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

}  // namespace shardcal::formats

#include "sweep/results.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "shardcal/error.hpp"

#ifndef SHARDCAL_GIT_REVISION
#define SHARDCAL_GIT_REVISION "unknown"
#endif
#ifndef SHARDCAL_VERSION
#define SHARDCAL_VERSION "unknown"
#endif

namespace shardbench::sweep {

using nlohmann::json;
using shardcal::Error;

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string process_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out, arg;
  auto flush = [&] {
    const bool plain = !arg.empty() && arg.find_first_of(" \t\"'\\$`;&|<>()*?[]{}") == std::string::npos;
    if (!out.empty()) out += ' ';
    if (plain) {
      out += arg;
    } else {  // single quotes, with ' written as '\''
      out += '\'';
      for (char ch : arg) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
      out += '\'';
    }
    arg.clear();
  };
  for (char ch : raw) {
    if (ch == '\0') flush();
    else arg += ch;
  }
  if (!arg.empty()) flush();
  return out;
}

std::string git_revision() { return SHARDCAL_GIT_REVISION; }
std::string shardcal_version() { return SHARDCAL_VERSION; }

ResultsFile::~ResultsFile() { close(); }

void ResultsFile::create(const std::string& path) {
  close();
  f_ = std::fopen(path.c_str(), "wb");
  if (f_ == nullptr)
    throw Error("cannot create results file " + path + ": " + std::strerror(errno) +
                " (does its directory exist and is it writable?)");
  path_ = path;
}

void ResultsFile::append(const std::string& path, std::uintmax_t keep_bytes) {
  close();
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) != keep_bytes && !ec) {
    std::filesystem::resize_file(path, keep_bytes, ec);
    if (ec) throw Error("cannot drop the partial last line of " + path + ": " + ec.message());
  }
  f_ = std::fopen(path.c_str(), "ab");
  if (f_ == nullptr) throw Error("cannot append to results file " + path + ": " + std::strerror(errno));
  path_ = path;
}

void ResultsFile::write(const json& record) {
  if (f_ == nullptr) throw Error("internal: results file not open");
  // One buffered write of the whole line, then flush: a crash leaves whole lines or one partial
  // last line, which --resume drops.
  const std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0)
    throw Error("cannot write to results file " + path_ + ": " + std::strerror(errno));
}

void ResultsFile::close() {
  if (f_ != nullptr) std::fclose(f_);
  f_ = nullptr;
}

ResumeState read_for_resume(const std::string& path, const std::string& config_hash,
                            const std::string& backend, int world) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("--resume " + path + ": cannot open the file (" + std::strerror(errno) +
                "); to start a new sweep use --out instead");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  ResumeState st;
  std::size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    ++line_no;
    const std::string where = "--resume " + path + ": line " + std::to_string(line_no);
    if (nl == std::string::npos) {  // no newline: the writer was killed mid-line
      st.dropped_partial = true;
      break;
    }
    const std::string line = text.substr(pos, nl - pos);
    json rec;
    try {
      rec = json::parse(line);
    } catch (const json::parse_error& e) {
      if (nl + 1 == text.size()) {  // a complete but cut last line is still just a torn write
        st.dropped_partial = true;
        break;
      }
      throw Error(where + ": not valid JSON (" + e.what() +
                  "); the file is corrupt before its last line, so it cannot be resumed safely");
    }
    const std::string type = rec.value("type", "");
    if (line_no == 1) {
      if (type != "context")
        throw Error(where + ": the first record is not a \"context\" record; not a shardbench "
                            "sweep results file");
      const std::string h = rec.value("config_hash", "");
      if (h != config_hash)
        throw Error("--resume " + path + ": the file was produced by a different config (hash " + h +
                    ", this config " + config_hash +
                    "); resume with the same config file, or start a new sweep with --out");
      if (rec.value("backend", "") != backend)
        throw Error("--resume " + path + ": the file was measured with backend " +
                    rec.value("backend", "?") + ", not " + backend + "; use the same --backend");
      if (rec.value("world", -1) != world)
        throw Error("--resume " + path + ": the file was measured on " +
                    std::to_string(rec.value("world", -1)) + " ranks, this run has " +
                    std::to_string(world) + "; use the same number of ranks");
      st.context = rec;
    } else if (type == "point") {
      if (!rec.contains("key") || !rec["key"].is_string())
        throw Error(where + ": point record without a \"key\"");
      if (!st.done_keys.insert(rec["key"].get<std::string>()).second)
        throw Error(where + ": duplicate point " + rec["key"].get<std::string>());
    }
    ++st.records;
    st.keep_bytes = nl + 1;
    pos = nl + 1;
  }
  if (st.context.is_null())
    throw Error("--resume " + path + ": the file has no context record (empty or cut before its "
                "first line ended); start a new sweep with --out");
  return st;
}

}  // namespace shardbench::sweep

#include "shardcal/formats/results_writer.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "shardcal/error.hpp"
#include "shardcal/formats/json.hpp"
#include "shardcal/formats/json_cursor.hpp"
#include "shardcal/formats/schemas.hpp"

namespace shardcal::formats {

using nlohmann::json;

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

namespace {

// A short rendering of a value for messages (hosts lists of big jobs can be long).
std::string short_dump(const json& j) {
  std::string s = j.dump();
  if (s.size() > 160) s = s.substr(0, 150) + "...(" + std::to_string(s.size()) + " chars)";
  return s;
}

constexpr const char* kNotResumable =
    "; the file is corrupt or not a shardbench sweep results file, so it cannot be resumed "
    "safely (start a new sweep with --out)";
constexpr const char* kMissingContextField =
    "every context record of a shardbench sweep results file has it; the file cannot be resumed "
    "safely (start a new sweep with --out)";

// Checks one context record against this run: config, backend and world must match (points
// measured under another config or world would be mixed in or wrongly skipped).
void check_context(const JsonCursor& rc, const std::string& path,
                   const std::string& config_hash, const std::string& backend, int world) {
  const json& rec = rc.json();
  const std::string h = rc.string_at("config_hash", kMissingContextField);
  // Point keys changed in format version 2 (canonical placements, the timing protocol), so the
  // finished points of an older file cannot be matched to this run's: refuse, say why.
  const auto v = rec.find("version");
  const std::string file_version =
      v == rec.end() ? std::string("none") : v->is_number_integer() ? std::to_string(v->get<std::int64_t>()) : v->dump();
  if (v == rec.end() || !v->is_number_integer() || v->get<std::int64_t>() != kResultsVersion)
    throw Error("--resume " + path + ": the file is results format version " + file_version +
                ", this shardbench writes version " + std::to_string(kResultsVersion) +
                " (point keys now use canonical placements and include the timing protocol), so "
                "its finished points cannot be matched safely; start a new sweep with --out (the "
                "old file stays readable as it is)");
  if (h != config_hash)
    throw Error("--resume " + path + ": the file was produced by a different config (hash " + h +
                ", this config " + config_hash +
                "); resume with the same config file, or start a new sweep with --out");
  const std::string b = rc.string_at("backend", kMissingContextField);
  if (b != backend)
    throw Error("--resume " + path + ": the file was measured with backend " + b + ", not " +
                backend + "; use the same --backend");
  const std::int64_t w = rc.required("world", kMissingContextField).integer();
  if (w != world)
    throw Error("--resume " + path + ": the file was measured on " + std::to_string(w) +
                " ranks, this run has " + std::to_string(world) + "; use the same number of ranks");
}

}  // namespace

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
    // A complete but cut last line is still just a torn write.
    std::optional<json> parsed = parse_json_line(
        line, where, /*may_be_torn=*/nl + 1 == text.size(),
        "the file is corrupt before its last line, so it cannot be resumed safely",
        "the file is corrupt, so it cannot be resumed safely");
    if (!parsed) {
      st.dropped_partial = true;
      break;
    }
    json rec = std::move(*parsed);
    // Every line of a results file is a JSON object with a string "type"; anything else (a
    // number, a list, a wrong-typed field) is reported with its line, never as an internal error.
    try {
      if (!rec.is_object())
        throw Error(where + ": the record is " + json_kind(rec) + ", not a JSON object" +
                    kNotResumable);
      const JsonSource src(where, line);
      const JsonCursor rc(src, rec, {}, kNotResumable + 2);  // without its leading "; "
      const auto t = rc.optional("type");
      const std::string type = t ? t->string() : std::string();
      if (line_no == 1 && type != "context")
        throw Error(where + ": the first record is not a \"context\" record; not a shardbench "
                            "sweep results file");
      if (type == "context") {
        check_context(rc, path, config_hash, backend, world);
        st.context = rec;
        ++st.contexts;
      } else if (type == "point") {
        const std::string key = rc.string_at(
            "key", "every point record of a shardbench sweep results file has it; the file "
                   "cannot be resumed safely (start a new sweep with --out)");
        if (!st.done_keys.insert(key).second) throw Error(where + ": duplicate point " + key);
      }
    } catch (const json::exception& e) {  // defensive: any other JSON access problem
      throw Error(where + ": unexpected record content (" + e.what() + ")" + kNotResumable);
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

namespace {
// Two objects key by key (so the message names what changed), anything else as a whole.
void object_differences(const std::string& name, const json& a, const json& b,
                        std::vector<std::string>& out) {
  if (!a.is_object() || !b.is_object()) {
    if (a != b) out.push_back(name + ": file " + short_dump(a) + ", this run " + short_dump(b));
    return;
  }
  std::set<std::string> keys;
  for (const auto& [k, v] : a.items()) keys.insert(k);
  for (const auto& [k, v] : b.items()) keys.insert(k);
  for (const auto& k : keys) {
    const json va = a.contains(k) ? a[k] : json(), vb = b.contains(k) ? b[k] : json();
    if (va != vb)
      out.push_back(name + "." + k + ": file " + short_dump(va) + ", this run " + short_dump(vb));
  }
}
}  // namespace

std::vector<std::string> context_differences(const json& file_context, const json& this_run) {
  std::vector<std::string> out;
  auto field = [](const json& ctx, const std::string& key) {
    const auto it = ctx.find(key);
    return it == ctx.end() ? json() : *it;
  };
  // Hosts by their shape only (which ranks share a host): a new allocation has other hostnames
  // but comparable points when the shape is the same (host_renames lists the new names).
  auto layout = [](const json& hosts) {
    if (!hosts.is_array()) return hosts;
    json l = json::array();
    for (const auto& h : hosts) l.push_back(h.is_object() && h.contains("ranks") ? h["ranks"] : h);
    return l;
  };
  if (layout(field(file_context, "hosts")) != layout(field(this_run, "hosts")))
    out.push_back("hosts (ranks per host): file " + short_dump(field(file_context, "hosts")) +
                  ", this run " + short_dump(field(this_run, "hosts")));
  for (const char* key : {"n_hosts", "ranks_per_host", "shardcal_version", "git_revision", "git_dirty"}) {
    const json a = field(file_context, key), b = field(this_run, key);
    if (a != b)
      out.push_back(std::string(key) + ": file " + short_dump(a) + ", this run " + short_dump(b));
  }
  // Backend settings (the MPI thread level) change timings like a library version does. Files
  // written before they were recorded lack the field: not a difference by itself (such files
  // also differ in git_revision).
  if (file_context.contains("backend_settings")) {
    const json a = field(file_context, "backend_settings"), b = field(this_run, "backend_settings");
    if (a != b)
      out.push_back("backend_settings: file " + short_dump(a) + ", this run " + short_dump(b));
  }
  // A simulated platform (its file's sha256, SMPI settings, rank count) is part of what was
  // measured: a file from another platform, or a real file resumed in simulation (or back),
  // holds points that must not be mixed. Key by key, so the message names what changed.
  object_differences("simulation", field(file_context, "simulation"), field(this_run, "simulation"), out);
  // Library versions one by one, so the message names the library that changed.
  object_differences("library_versions", field(file_context, "library_versions"),
                     field(this_run, "library_versions"), out);
  return out;
}

std::vector<std::string> host_renames(const json& file_context, const json& this_run) {
  std::vector<std::string> out;
  const auto a = file_context.find("hosts"), b = this_run.find("hosts");
  if (a == file_context.end() || b == this_run.end() || !a->is_array() || !b->is_array() ||
      a->size() != b->size())
    return out;
  for (std::size_t i = 0; i < a->size(); ++i) {
    const json& ha = (*a)[i];
    const json& hb = (*b)[i];
    if (!ha.is_object() || !hb.is_object()) continue;
    const json na = ha.value("name", json()), nb = hb.value("name", json());
    if (na != nb)
      out.push_back("host " + std::to_string(i) + ": " + short_dump(na) + " -> " + short_dump(nb));
  }
  return out;
}

}  // namespace shardcal::formats

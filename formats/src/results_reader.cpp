// Sweep results reader (docs/RESULTS_FORMAT.md, docs/CALIBRATION.md).
#include "shardcal/formats/results_reader.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include "shardcal/error.hpp"
#include "shardcal/formats/json.hpp"
#include "shardcal/formats/link_class.hpp"
#include "shardcal/formats/median.hpp"
#include "shardcal/formats/schemas.hpp"
#include "shardcal/formats/sha256.hpp"
#include "shardcal/layout.hpp"

namespace shardcal::formats {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw Error(where + ": " + what);
}

const json& field(const json& rec, const char* name, const std::string& where) {
  auto it = rec.find(name);
  if (it == rec.end())
    fail(where, std::string("missing field \"") + name +
                    "\"; is this a shardbench sweep results file (docs/RESULTS_FORMAT.md)?");
  return *it;
}

std::string str_field(const json& rec, const char* name, const std::string& where) {
  const json& v = field(rec, name, where);
  if (!v.is_string()) fail(where, std::string("field \"") + name + "\" is not a string");
  return v.get<std::string>();
}

long long int_field(const json& rec, const char* name, const std::string& where) {
  const json& v = field(rec, name, where);
  if (!v.is_number_integer()) fail(where, std::string("field \"") + name + "\" is not an integer");
  return v.get<long long>();
}

int pos_int_field(const json& rec, const char* name, const std::string& where) {
  const long long v = int_field(rec, name, where);
  if (v < 1 || v > (1LL << 30))
    fail(where, std::string("field \"") + name + "\" = " + std::to_string(v) + " is out of range");
  return int(v);
}

double num_field(const json& rec, const char* name, const std::string& where) {
  const json& v = field(rec, name, where);
  if (!v.is_number()) fail(where, std::string("field \"") + name + "\" is not a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < 0)
    fail(where, std::string("field \"") + name + "\" must be finite and >= 0");
  return d;
}

// Only the format this reader understands: version 1 files record the old (wrong) transition
// step bytes, and a later version may change what fields mean.
void check_format(const json& rec, const std::string& where) {
  const auto sc = rec.find("schema");
  if (sc == rec.end() || !sc->is_string() || sc->get<std::string>() != kResultsSchema)
    fail(where, "the context record's schema is " +
                    (sc == rec.end() ? std::string("missing") : sc->dump()) + ", expected \"" +
                    kResultsSchema +
                    "\"; this is not a shardbench sweep results file (docs/RESULTS_FORMAT.md)");
  const auto v = rec.find("version");
  const std::string got = v == rec.end() ? std::string("missing") : v->dump();
  if (v == rec.end() || !v->is_number_integer())
    fail(where, "the context record's version is " + got + ", expected the integer " +
                    std::to_string(kResultsVersion) +
                    "; the file is corrupt or not a sweep results file");
  const auto ver = v->get<std::int64_t>();
  if (ver < kResultsVersion)
    fail(where,
         "results format version " + got +
             " is too old: version 1 files record wrong transition step "
             "bytes, so a fit from them would be wrong; re-run the sweep with this shardbench "
             "(`shardbench sweep --out FILE`, format version " +
             std::to_string(kResultsVersion) + ")");
  if (ver != kResultsVersion)
    fail(where, "results format version " + got +
                    " is unknown to this calibrator (it reads version " +
                    std::to_string(kResultsVersion) +
                    "); calibrate with the shardbench that wrote the file");
}

json context_summary(const json& rec) {
  json out = json::object();
  for (const char* k : {"date", "backend", "memory", "world", "hosts", "n_hosts", "ranks_per_host",
                        "library_versions", "shardcal_version", "git_revision", "config_hash"})
    if (rec.contains(k)) out[k] = rec[k];
  return out;
}

// One line's record; nullopt for a torn last line (kill -9 during a write), which --resume drops
// and so do we.
std::optional<json> parse_record(const std::string& line, const std::string& where, bool last_line,
                                 bool have_ctx) {
  try {
    return json::parse(line);
  } catch (const json::parse_error& e) {
    if (last_line && have_ctx) return std::nullopt;
    fail(where, std::string("not valid JSON (") + e.what() +
                    "); the file is corrupt or not a sweep results file");
  } catch (const json::out_of_range& e) {
    // A number outside a double's range (1e999): valid JSON syntax, but no sweep writes it.
    const JsonLocation loc = find_out_of_range_number(line);
    fail(where, "a number is out of range (field " +
                    (loc.pointer.empty() ? std::string("/") : loc.pointer) + ": " + e.what() +
                    "); the file is corrupt or not a sweep results file");
  }
}

// What one file's reading carries from record to record.
struct FileState {
  ResultsFileInfo info;
  bool have_ctx = false;
  int n_hosts = 1;
};

void read_context(const json& rec, const std::string& where, ResultSet& rs, FileState& f,
                  std::string& first_ctx_where) {
  check_format(rec, where);
  const std::string backend = str_field(rec, "backend", where);
  const std::string memory = str_field(rec, "memory", where);
  f.n_hosts = rec.contains("n_hosts") ? pos_int_field(rec, "n_hosts", where) : 1;
  if (rs.backend.empty()) {
    rs.backend = backend;
    rs.memory = memory;
    first_ctx_where = where;
  } else if (backend != rs.backend || memory != rs.memory) {
    fail(where, "backend/memory \"" + backend + "/" + memory + "\" differs from \"" + rs.backend +
                    "/" + rs.memory + "\" (" + first_ctx_where +
                    "); one profile describes one backend on one memory space: calibrate "
                    "each backend's results separately");
  }
  f.info.contexts.push_back(context_summary(rec));
  f.info.context_records.push_back(rec);
  f.have_ctx = true;
}

// The fields every measured point record has, read before its kind's own fields.
struct PointHead {
  std::string where, key, mode;
  DType dtype{};
  const json* params = nullptr;
  std::vector<double> samples_s;
  double median_s = 0;
};

// Both point kinds carry the head's fields.
template <class Point>
Point point_from(PointHead& h) {
  Point p;
  p.where = h.where;
  p.key = h.key;
  p.dtype = h.dtype;
  p.mode = h.mode;
  p.samples_s = std::move(h.samples_s);
  p.median_s = h.median_s;
  return p;
}

void read_collective_point(const json& rec, PointHead& h, int n_hosts, ResultSet& rs) {
  const std::string& where = h.where;
  const json& params = *h.params;
  CollectivePoint p = point_from<CollectivePoint>(h);
  const std::string op = str_field(rec, "collective", where);
  auto c = find_collective(op);
  if (!c) fail(where, "unknown collective \"" + op + "\"");
  p.op = *c;
  p.distribution = str_field(params, "distribution", where);
  p.group_size = pos_int_field(rec, "group_size", where);
  p.groups = pos_int_field(rec, "groups", where);
  p.hosts_spanned = pos_int_field(rec, "hosts_spanned", where);
  p.max_ranks_per_host = pos_int_field(rec, "max_ranks_per_host", where);
  p.n_hosts = n_hosts;
  p.concurrent_groups = concurrent_groups(p.groups, p.hosts_spanned, n_hosts);
  p.elem_size = pos_int_field(rec, "elem_size", where);
  const json& counts = field(rec, "counts", where);
  if (!counts.is_array()) fail(where, "field \"counts\" is not an array");
  for (const json& x : counts) {
    if (!x.is_number_integer() || x.get<long long>() < 0)
      fail(where, "counts must be non-negative integers");
    p.counts.push_back(x.get<std::int64_t>());
  }
  p.bytes = num_field(rec, "bytes", where);
  p.bytes_total = num_field(rec, "bytes_total", where);
  p.bytes_eff = num_field(rec, "bytes_eff", where);
  p.uneven = !p.counts.empty() && std::adjacent_find(p.counts.begin(), p.counts.end(),
                                                     std::not_equal_to<>()) != p.counts.end();
  p.mesh = str_field(params, "mesh", where);
  p.label = op + " mesh=" + p.mesh +
            " dim=" + std::to_string(int_field(params, "mesh_dim", where)) + " " +
            std::string(dtype_name(h.dtype)) + " " + p.distribution + " " + h.mode + " " +
            std::to_string(std::llround(p.bytes)) + " B";
  rs.collectives.push_back(std::move(p));
}

TransitionStep read_plan_step(const json& st, const std::string& where, int world, int n_hosts) {
  if (!st.is_object()) fail(where, "a plan step is not an object");
  TransitionStep step;
  step.kind = str_field(st, "collective", where);
  step.op = find_collective(step.kind);
  step.mesh_dim = int(int_field(st, "mesh_dim", where));
  step.group_size = pos_int_field(st, "group_size", where);
  step.hosts_spanned = pos_int_field(st, "hosts_spanned", where);
  step.concurrent_groups =
      concurrent_groups(std::max(1, world / step.group_size), step.hosts_spanned, n_hosts);
  step.bytes = num_field(st, "bytes", where);
  if (st.contains("max_out_bytes")) step.out_bytes = num_field(st, "max_out_bytes", where);
  if (!step.op) return step;
  // What the step moves (format version 2): S_eff needs the counts.
  step.elem_size = pos_int_field(st, "elem_size", where);
  const json& b = field(st, "uniform", where);
  if (!b.is_boolean()) fail(where, "plan step field \"uniform\" is not a boolean");
  step.uniform = b.get<bool>();
  if (st.contains("max_copy_bytes")) step.copy_bytes = num_field(st, "max_copy_bytes", where);
  const json& cs = field(st, "counts", where);
  if (!cs.is_array()) fail(where, "plan step field \"counts\" is not an array");
  for (const json& x : cs) {
    if (!x.is_number_integer() || x.get<long long>() < 0)
      fail(where, "plan step counts must be non-negative integers");
    step.counts.push_back(x.get<std::int64_t>());
  }
  const std::size_t m = std::size_t(step.group_size);
  if (step.counts.size() != m &&
      !(*step.op == Collective::AllToAll && step.counts.size() == m * m))
    fail(where, "plan step counts has " + std::to_string(step.counts.size()) +
                    " entries for group size " + std::to_string(m) +
                    " (all_to_all: m x m); the file is corrupt");
  return step;
}

void read_transition_point(const json& rec, PointHead& h, int n_hosts, ResultSet& rs) {
  const std::string& where = h.where;
  const json& params = *h.params;
  TransitionPoint t = point_from<TransitionPoint>(h);
  const json& tr = field(rec, "transition", where);
  if (!tr.is_object()) fail(where, "field \"transition\" is not an object");
  t.label = "mesh " + str_field(params, "mesh", where) + " " + str_field(tr, "from", where) +
            " -> " + str_field(tr, "to", where) + " " + std::string(dtype_name(h.dtype)) + " " +
            std::to_string(std::llround(num_field(rec, "bytes", where))) + " B " +
            str_field(params, "distribution", where);
  Shape mesh;
  try {
    mesh = parse_shape(str_field(params, "mesh", where));
  } catch (const Error& e) {
    fail(where, std::string("field \"mesh\": ") + e.what());
  }
  std::int64_t w = 1;
  for (std::int64_t d : mesh) w *= std::max<std::int64_t>(1, d);
  const json& plan = field(tr, "plan", where);
  if (!plan.is_array()) fail(where, "field \"transition.plan\" is not an array");
  for (const json& st : plan) t.steps.push_back(read_plan_step(st, where, int(w), n_hosts));
  rs.transitions.push_back(std::move(t));
}

// A point record: skipped (wrong results, failed samples) or read by its kind.
void read_point(const json& rec, const std::string& where, int n_hosts, ResultSet& rs) {
  ++rs.point_records;
  PointHead h;
  h.where = where;
  h.key = str_field(rec, "key", where);
  const json& wrong = field(rec, "wrong", where);
  if (wrong.is_number() && wrong.get<double>() > 0) {
    ++rs.skipped_wrong;
    rs.skipped.push_back({where, h.key, "wrong = " + wrong.dump()});
    return;
  }
  const json& params = field(rec, "point", where);
  if (!params.is_object()) fail(where, "field \"point\" is not an object");
  h.params = &params;
  const std::string kind = str_field(params, "kind", where);
  h.mode = str_field(params, "mode", where);
  h.dtype = parse_dtype(str_field(params, "dtype", where));
  const json& samples = field(rec, "samples_s", where);
  if (!samples.is_array()) fail(where, "field \"samples_s\" is not an array");
  bool bad = false;
  for (const json& x : samples) {
    if (!x.is_number()) fail(where, "samples_s holds a non-number");
    const double d = x.get<double>();
    if (!std::isfinite(d) || d <= 0) bad = true;
    h.samples_s.push_back(d);
  }
  if (h.samples_s.empty() || bad) {
    ++rs.skipped_failed;
    rs.skipped.push_back({where, h.key, "no samples or a non-positive sample"});
    return;
  }
  h.median_s = median(h.samples_s);
  if (kind == "collective") read_collective_point(rec, h, n_hosts, rs);
  else if (kind == "transition") read_transition_point(rec, h, n_hosts, rs);
}

void read_file(const std::string& path, ResultSet& rs, std::string& first_ctx_where) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(path + ": cannot open the results file (check the path; results come from "
                       "`shardbench sweep --out FILE`)");
  FileState f;
  f.info.path = path;
  f.info.sha256 = sha256_file(path);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = path + ":" + std::to_string(lineno);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const bool last = in.peek() == std::char_traits<char>::eof();
    const std::optional<json> rec = parse_record(line, where, last, f.have_ctx);
    if (!rec) break;
    if (!rec->is_object()) fail(where, "the record is not a JSON object");
    const std::string type = str_field(*rec, "type", where);
    if (type == "context") {
      read_context(*rec, where, rs, f, first_ctx_where);
    } else if (type == "point") {  // readers ignore unknown record types
      if (!f.have_ctx)
        fail(where, "a point record before any context record; line 1 of a sweep results file "
                    "is its context record");
      read_point(*rec, where, f.n_hosts, rs);
    }
  }
  if (in.bad()) throw Error(path + ": read error");
  if (!f.have_ctx)
    throw Error(path + ": no context record (the file is empty or not a shardbench sweep "
                       "results file); run `shardbench sweep --out FILE` to produce one");
  rs.files.push_back(std::move(f.info));
}

}  // namespace

ResultSet read_results(const std::vector<std::string>& paths) {
  if (paths.empty()) throw Error("no results file given; pass --results FILE.jsonl");
  ResultSet rs;
  std::string first_ctx_where;
  for (const std::string& path : paths) read_file(path, rs, first_ctx_where);
  return rs;
}

}  // namespace shardcal::formats

// Sweep results reader (docs/RESULTS_FORMAT.md, docs/CALIBRATION.md).
#include "shardcal/formats/results_reader.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include "results_fields.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/import_logs.hpp"
#include "shardcal/formats/json.hpp"
#include "shardcal/formats/json_cursor.hpp"
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

constexpr const char* kMissingFix =
    "is this a shardbench sweep results file (docs/RESULTS_FORMAT.md)?";
constexpr const char* kValueFix =
    "the file is corrupt or not a shardbench sweep results file (docs/RESULTS_FORMAT.md)";

// The fields the reader reads, each checked at compile time against formats.json's list
// (results_fields.hpp): P (the point record's own fields), Q (its "point" object), C (the
// context record), each with the kind of point it is read from and the types the reader accepts.
namespace rf = results_fields;
consteval rf::Field P(rf::Kind k, const char* name, std::string_view types) {
  return rf::field(rf::List::Fields, k, name, types);
}
consteval rf::Field Q(rf::Kind k, const char* name, std::string_view types) {
  return rf::field(rf::List::Point, k, name, types);
}
consteval rf::Field C(const char* name, std::string_view types) {
  return rf::field(rf::List::Context, rf::Kind::Any, name, types);
}
constexpr rf::Kind kColl = rf::Kind::Collective, kTrans = rf::Kind::Transition, kAny = rf::Kind::Any;

// The getters of one record (every record is one JSON document on its line, so its messages
// read "FILE:LINE: /field: ...").
std::string str_at(const JsonCursor& rec, const char* key) { return rec.string_at(key, kMissingFix); }
std::string str_at(const JsonCursor& rec, rf::Field f) { return str_at(rec, f.name); }
int pos_int_at(const JsonCursor& rec, const char* key) {
  return int(rec.integer_at(key, kMissingFix, 1, std::int64_t(1) << 30));
}
// An integer field at least its listed least value (1 for counts of ranks and groups).
int int_at(const JsonCursor& rec, rf::Field f) {
  const std::int64_t lo = std::isfinite(f.least) ? std::int64_t(f.least) : -(std::int64_t(1) << 30);
  return int(rec.integer_at(f.name, kMissingFix, lo, std::int64_t(1) << 30));
}
double bytes_at(const JsonCursor& rec, const char* key) { return rec.number_at(key, kMissingFix, 0.0); }
double bytes_at(const JsonCursor& rec, rf::Field f) { return rec.number_at(f.name, kMissingFix, f.least); }
std::vector<std::int64_t> counts_at(const JsonCursor& rec, const char* key = "counts") {
  const JsonCursor cs = rec.required(key, kMissingFix).array();
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < cs.size(); ++i) out.push_back(cs[i].integer(0));
  return out;
}

// Only the format this reader understands: version 1 files record the old (wrong) transition
// step bytes, and a later version may change what fields mean.
void check_format(const json& rec, const std::string& where) {
  const auto sc = rec.find(C("schema", "string").name);
  if (sc == rec.end() || !sc->is_string() || sc->get<std::string>() != kResultsSchema)
    fail(where, "the context record's schema is " +
                    (sc == rec.end() ? std::string("missing") : sc->dump()) + ", expected \"" +
                    kResultsSchema +
                    "\"; this is not a shardbench sweep results file (docs/RESULTS_FORMAT.md)");
  const auto v = rec.find(C("version", "integer").name);
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
  for (const char* k :
       {C("date", "string").name, C("backend", "string").name, C("memory", "string").name,
        C("world", "integer").name, C("hosts", "array").name, C("n_hosts", "integer").name,
        C("ranks_per_host", "integers").name, C("library_versions", "object").name,
        C("shardcal_version", "string").name, C("git_revision", "string").name,
        C("config_hash", "string").name})
    if (rec.contains(k)) out[k] = rec[k];
  return out;
}

// One line's record; nullopt for a torn last line (kill -9 during a write), which --resume drops
// and so do we.
std::optional<json> parse_record(const std::string& line, const std::string& where, bool last_line,
                                 bool have_ctx) {
  // A number outside a double's range (1e999) is valid JSON syntax, but no sweep writes it.
  const std::string fix = "the file is corrupt or not a sweep results file";
  return parse_json_line(line, where, last_line && have_ctx, fix, fix);
}

// What one file's reading carries from record to record.
struct FileState {
  ResultsFileInfo info;
  bool have_ctx = false;
  int n_hosts = 1;
};

void read_context(const JsonCursor& rc, const std::string& where, ResultSet& rs, FileState& f,
                  std::string& first_ctx_where) {
  const json& rec = rc.json();
  check_format(rec, where);
  const std::string backend = str_at(rc, C("backend", "string"));
  const std::string memory = str_at(rc, C("memory", "string"));
  constexpr rf::Field n_hosts = C("n_hosts", "integer");
  f.n_hosts = rec.contains(n_hosts.name) ? int_at(rc, n_hosts) : 1;
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
  std::optional<JsonCursor> params;
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

void read_collective_point(const JsonCursor& rec, PointHead& h, int n_hosts, ResultSet& rs) {
  const JsonCursor& params = *h.params;
  CollectivePoint p = point_from<CollectivePoint>(h);
  const JsonCursor oc = rec.required(P(kColl, "collective", "collective").name, kMissingFix);
  const std::string op = oc.string();
  auto c = find_collective(op);
  if (!c) oc.fail("unknown collective \"" + op + "\"");
  p.op = *c;
  p.distribution = str_at(params, Q(kColl, "distribution", "string"));
  p.group_size = int_at(rec, P(kColl, "group_size", "integer"));
  p.groups = int_at(rec, P(kColl, "groups", "integer"));
  p.hosts_spanned = int_at(rec, P(kColl, "hosts_spanned", "integer"));
  p.max_ranks_per_host = int_at(rec, P(kColl, "max_ranks_per_host", "integer"));
  p.n_hosts = n_hosts;
  p.concurrent_groups = concurrent_groups(p.groups, p.hosts_spanned, n_hosts);
  p.elem_size = int_at(rec, P(kColl, "elem_size", "integer"));
  p.counts = counts_at(rec, P(kColl, "counts", "integers").name);
  p.bytes = bytes_at(rec, P(kColl, "bytes", "integer|number"));
  p.bytes_total = bytes_at(rec, P(kColl, "bytes_total", "integer|number"));
  p.bytes_eff = bytes_at(rec, P(kColl, "bytes_eff", "integer|number"));
  p.uneven = !p.counts.empty() && std::adjacent_find(p.counts.begin(), p.counts.end(),
                                                     std::not_equal_to<>()) != p.counts.end();
  p.mesh = str_at(params, Q(kColl, "mesh", "string"));
  p.label = op + " mesh=" + p.mesh + " dim=" +
            std::to_string(params.required(Q(kColl, "mesh_dim", "integer").name, kMissingFix).integer()) + " " +
            std::string(dtype_name(h.dtype)) + " " + p.distribution + " " + h.mode + " " +
            std::to_string(std::llround(p.bytes)) + " B";
  rs.collectives.push_back(std::move(p));
}

TransitionStep read_plan_step(const JsonCursor& st, int world, int n_hosts) {
  st.object();
  TransitionStep step;
  step.kind = str_at(st, "collective");
  step.op = find_collective(step.kind);
  step.mesh_dim = int(st.integer_at("mesh_dim", kMissingFix, 0, 1 << 20));
  step.group_size = pos_int_at(st, "group_size");
  step.hosts_spanned = pos_int_at(st, "hosts_spanned");
  step.concurrent_groups =
      concurrent_groups(std::max(1, world / step.group_size), step.hosts_spanned, n_hosts);
  step.bytes = bytes_at(st, "bytes");
  if (st.optional("max_out_bytes")) step.out_bytes = bytes_at(st, "max_out_bytes");
  if (!step.op) return step;
  // What the step moves (format version 2): S_eff needs the counts.
  step.elem_size = pos_int_at(st, "elem_size");
  step.uniform = st.required("uniform", kMissingFix).boolean();
  if (st.optional("max_copy_bytes")) step.copy_bytes = bytes_at(st, "max_copy_bytes");
  step.counts = counts_at(st);
  const std::size_t m = std::size_t(step.group_size);
  if (step.counts.size() != m &&
      !(*step.op == Collective::AllToAll && step.counts.size() == m * m))
    st.fail("plan step counts has " + std::to_string(step.counts.size()) +
                    " entries for group size " + std::to_string(m) +
                    " (all_to_all: m x m); the file is corrupt");
  return step;
}

void read_transition_point(const JsonCursor& rec, PointHead& h, int n_hosts, ResultSet& rs) {
  const JsonCursor& params = *h.params;
  TransitionPoint t = point_from<TransitionPoint>(h);
  const JsonCursor tr = rec.required(P(kTrans, "transition", "object").name, kMissingFix).object();
  const JsonCursor mc = params.required(Q(kTrans, "mesh", "string").name, kMissingFix);
  t.label = "mesh " + mc.string() + " " + str_at(tr, "from") + " -> " + str_at(tr, "to") + " " +
            std::string(dtype_name(h.dtype)) + " " +
            std::to_string(std::llround(bytes_at(rec, P(kTrans, "bytes", "integer|number")))) +
            " B " + str_at(params, Q(kTrans, "distribution", "string"));
  Shape mesh;
  try {
    mesh = parse_shape(mc.string());
  } catch (const Error& e) {
    mc.fail(e.what());
  }
  std::int64_t w = 1;
  for (std::int64_t d : mesh) w *= std::max<std::int64_t>(1, d);
  const JsonCursor plan = tr.required("plan", kMissingFix).array();
  for (std::size_t i = 0; i < plan.size(); ++i)
    t.steps.push_back(read_plan_step(plan[i], int(w), n_hosts));
  // A zero sample is a measurement only for a transition of local steps (see read_point).
  const bool communicates =
      std::any_of(t.steps.begin(), t.steps.end(), [](const TransitionStep& s) { return s.op.has_value(); });
  const bool zero = std::any_of(t.samples_s.begin(), t.samples_s.end(), [](double d) { return d == 0; });
  if (zero && communicates) {
    ++rs.skipped_failed;
    rs.skipped.push_back({h.where, h.key, "a zero sample of a transition that communicates"});
    return;
  }
  rs.transitions.push_back(std::move(t));
}

// A point record: skipped (wrong results, failed samples) or read by its kind.
void read_point(const JsonCursor& rec, const std::string& where, int n_hosts, ResultSet& rs) {
  ++rs.point_records;
  PointHead h;
  h.where = where;
  h.key = str_at(rec, P(kAny, "key", "string"));
  const json& wrong = rec.required(P(kAny, "wrong", "integer|null").name, kMissingFix).json();
  if (wrong.is_number() && wrong.get<double>() > 0) {
    ++rs.skipped_wrong;
    rs.skipped.push_back({where, h.key, "wrong = " + wrong.dump()});
    return;
  }
  const JsonCursor params = rec.required(P(kAny, "point", "object").name, kMissingFix).object();
  h.params = params;
  const std::string kind = str_at(params, Q(kAny, "kind", "string"));
  h.mode = str_at(params, Q(kAny, "mode", "string"));
  h.dtype = parse_dtype(str_at(params, Q(kAny, "dtype", "dtype")));
  const JsonCursor samples = rec.required(P(kAny, "samples_s", "numbers").name, kMissingFix).array();
  bool bad = false;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double d = samples[i].number();
    // A transition of local steps only takes 0 s where computation is not timed (SMPI with
    // smpi/simulate-computation:no): a measurement. Anything that communicates takes time
    // (a transition's plan is checked in read_transition_point).
    if (!std::isfinite(d) || d < 0 || (d == 0 && kind != "transition")) bad = true;
    h.samples_s.push_back(d);
  }
  if (h.samples_s.empty() || bad) {
    ++rs.skipped_failed;
    rs.skipped.push_back({where, h.key, "no samples, a negative sample or a zero collective sample"});
    return;
  }
  h.median_s = median(h.samples_s);
  if (kind == "collective") read_collective_point(rec, h, n_hosts, rs);
  else if (kind == "transition") read_transition_point(rec, h, n_hosts, rs);
}

// What a file that is not sweep results is, when it is one of the files users mix up (a profile
// passed as results, a benchmark log not imported yet); "" when it is none of them.
std::string foreign_file_kind(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text(std::size_t(1) << 22, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  text.resize(std::size_t(in.gcount()));
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  if (text[first] == '{') {
    const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) return "";
    const std::string schema = doc.contains("schema") && doc["schema"].is_string()
                                   ? doc["schema"].get<std::string>()
                                   : std::string();
    if (schema == kProfileSchema)
      return std::string("a calibrated profile (") + kProfileSchema +
             "), not sweep results: calibrate reads the measurements a profile is made from "
             "(`shardbench sweep --out R.jsonl` or `shardbench import LOG --out R.jsonl`); a "
             "profile goes to predict, plan, validate or sweep --profile";
    if (schema == kGateSchema)
      return std::string("a gate report (") + kGateSchema +
             "), not sweep results: pass the sweep results files the gate compared";
    if (schema == kValidateSchema || schema == kValidateSummarySchema)
      return std::string("a validate file (") + schema +
             "), not sweep results: calibrate reads `shardbench sweep --out` files";
    if (doc.contains("benchmarks") && doc.contains("context"))
      return "Google Benchmark JSON, not sweep results (shardbench gate reads it)";
    if (doc.contains("results") && doc.contains("config"))
      return "nccl-tests -J JSON, not sweep results: import it first (`shardbench import " + path +
             " --out R.jsonl`), then calibrate R.jsonl";
    if (doc.contains("sweeps") || doc.contains("collectives") || doc.contains("transitions") ||
        doc.contains("$schema"))
      return "a sweep config, not sweep results: run it (`shardbench sweep --config " + path +
             " --out R.jsonl`), then calibrate R.jsonl";
    return "";
  }
  try {
    (void)detect_log_format(text, path);
    return "a benchmark log (nccl-tests or OSU), not sweep results: import it first "
           "(`shardbench import " + path + " --out R.jsonl`), then calibrate R.jsonl";
  } catch (const Error&) {
    return "";
  }
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
    std::optional<json> rec;
    std::string type;
    try {
      rec = parse_record(line, where, last, f.have_ctx);
      if (!rec) break;
      const JsonSource src(where, line);
      type = str_at(JsonCursor(src, *rec, {}, kValueFix).object(), P(kAny, "type", "string"));
      if (!f.have_ctx && type == "point")
        fail(where, "a point record before any context record; line 1 of a sweep results file "
                    "is its context record");
    } catch (const Error&) {
      // Not sweep results at all: say what the file is instead of where its JSON broke.
      if (!f.have_ctx)
        if (const std::string kind = foreign_file_kind(path); !kind.empty())
          throw Error(path + ": this is " + kind);
      throw;
    }
    const JsonSource src(where, line);
    const JsonCursor rc = JsonCursor(src, *rec, {}, kValueFix).object();
    if (type == "context") {
      read_context(rc, where, rs, f, first_ctx_where);
    } else if (type == "point") {  // readers ignore unknown record types
      if (!f.have_ctx)
        fail(where, "a point record before any context record; line 1 of a sweep results file "
                    "is its context record");
      read_point(rc, where, f.n_hosts, rs);
    } else if (type == "warning") {
      f.info.warnings.push_back(*rec);
    }
  }
  if (in.bad()) throw Error(path + ": read error");
  if (!f.have_ctx)
    if (const std::string kind = foreign_file_kind(path); !kind.empty())
      throw Error(path + ": this is " + kind);
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

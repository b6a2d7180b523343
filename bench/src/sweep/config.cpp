#include "sweep/config.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "shardcal/error.hpp"
#include "shardcal/formats/json.hpp"
#include "shardcal/formats/json_cursor.hpp"
#include "shardcal/hash.hpp"
#include "shardcal/mesh.hpp"
#include "shardcal/placement.hpp"

namespace shardbench::sweep {

using nlohmann::json;
using shardcal::DType;
using shardcal::Error;

std::string_view mode_name(Mode m) {
  return m == Mode::PerIteration ? "per_iteration" : "pipelined";
}

namespace {

using shardcal::formats::json_kind;
using shardcal::formats::JsonCursor;
using shardcal::formats::JsonSource;

// Every object of a config may also carry "$schema", "comment" and "description" (for editors
// and for the people who read the file).
void expect_keys(const JsonSource& c, const json& obj, const std::string& where,
                 std::initializer_list<const char*> allowed) {
  JsonCursor(c, obj, where).expect_keys(allowed, {}, {"$schema", "comment", "description"});
}

std::string collective_list() {
  std::string s;
  for (const auto& info : kCollectives) s += (s.empty() ? "" : ", ") + std::string(info.name);
  return s;
}

Distribution parse_distribution(const JsonSource& c, const json& v, const std::string& where) {
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
  } else if (v.is_object()) {  // {"kind": "zipf", "s": 1.1} etc. -> the canonical text form
    expect_keys(c, v, where, {"kind", "s", "ratio", "seed"});
    if (!v.contains("kind")) c.fail(where + "/kind", "missing; e.g. {\"kind\": \"zipf\", \"s\": 1.1}");
    text = JsonCursor(c, v["kind"], where + "/kind").string();
    auto param = [&](const char* key) {
      if (!v.contains(key)) c.fail(where + "/" + key, std::string("missing; ") + text + " needs \"" + key + "\"");
      text += "(" + v[key].dump() + ")";
    };
    if (text == "zipf") param("s");
    else if (text == "linear") param("ratio");
    else if (text == "random") param("seed");
  } else {
    c.fail(where, "expected a distribution name like \"zipf(1.1)\", got " + json_kind(v));
  }
  try {
    return Distribution::parse(text);
  } catch (const Error& e) {
    c.fail(where, e.what());
  }
}

std::vector<Distribution> parse_distributions(const JsonSource& c, const json& v, const std::string& where) {
  std::vector<Distribution> out;
  const json& arr = JsonCursor(c, v, where).array(true).json();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    Distribution d = parse_distribution(c, arr[i], where + "/" + std::to_string(i));
    if (std::find(out.begin(), out.end(), d) != out.end())
      c.fail(where + "/" + std::to_string(i), "duplicate distribution \"" + d.name() + "\"");
    out.push_back(d);
  }
  return out;
}

}  // namespace

std::string SweepConfig::hash() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(shardcal::fnv1a64(json.dump())));
  return buf;
}

namespace {

constexpr std::int64_t kMaxBytes = std::int64_t(1) << 40;  // largest size or rotation, bytes

// "meshes": a list of meshes, or {"factorizations": true, "max_dims": N}.
void parse_meshes(const JsonSource& c, const json& j, SweepConfig& cfg) {
  if (!j.contains("meshes"))
    c.fail("/meshes", "missing (required); e.g. \"meshes\": [\"4\", \"2x2\"] or "
                      "{\"factorizations\": true, \"max_dims\": 3}");
  const json& m = j["meshes"];
  if (m.is_object()) {
    expect_keys(c, m, "/meshes", {"factorizations", "max_dims"});
    if (!m.contains("factorizations") || m["factorizations"] != true)
      c.fail("/meshes/factorizations", "must be true for the object form (or give a list of meshes)");
    cfg.mesh_factorizations = true;
    if (m.contains("max_dims")) cfg.mesh_max_dims = int(JsonCursor(c, m["max_dims"], "/meshes/max_dims").whole_number(1, 3));
  } else {
    const json& arr = JsonCursor(c, m, "/meshes").array(true).json();
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const std::string where = "/meshes/" + std::to_string(i);
      const std::string text = JsonCursor(c, arr[i], where).string();
      try {
        const auto mesh = shardcal::DeviceMesh::parse(text);
        if (mesh.ndim() > 3) c.fail(where, "mesh \"" + text + "\" has more than 3 dims");
        if (std::find(cfg.meshes.begin(), cfg.meshes.end(), mesh.to_string()) != cfg.meshes.end())
          c.fail(where, "duplicate mesh \"" + text + "\"");
        cfg.meshes.push_back(mesh.to_string());
      } catch (const Error& e) {
        if (std::string(e.what()).rfind(c.origin() + ": ", 0) == 0) throw;
        c.fail(where, std::string("bad mesh \"") + text + "\": " + e.what());
      }
    }
  }
}

// "collectives": names, or {"op": NAME, "dims": [..] | "all"} objects.
void parse_collectives(const JsonSource& c, const json& collectives, SweepConfig& cfg) {
  const json& arr = JsonCursor(c, collectives, "/collectives").array(false).json();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string where = "/collectives/" + std::to_string(i);
    CollectiveSelection sel;
    sel.where = where;
    std::string name;
    std::string name_where = where;
    if (arr[i].is_object()) {
      expect_keys(c, arr[i], where, {"op", "dims"});
      if (!arr[i].contains("op")) c.fail(where + "/op", "missing; e.g. {\"op\": \"all_gather\", \"dims\": [0]}");
      name_where = where + "/op";
      name = JsonCursor(c, arr[i]["op"], name_where).string();
      if (arr[i].contains("dims")) {
        const json& d = arr[i]["dims"];
        if (d == "all") {
          sel.all_dims = true;
        } else {
          const json& da = JsonCursor(c, d, where + "/dims").array(true).json();
          sel.all_dims = false;
          for (std::size_t k = 0; k < da.size(); ++k)
            sel.dims.push_back(int(JsonCursor(c, da[k], where + "/dims/" + std::to_string(k)).whole_number(0, 2)));
        }
      }
    } else {
      name = JsonCursor(c, arr[i], where).string();
    }
    const auto op = find_collective(name);
    if (!op)
      c.fail(name_where, "unknown collective \"" + name + "\"; expected one of " + collective_list());
    sel.op = *op;
    cfg.collectives.push_back(std::move(sel));
  }
}

// One entry of "transitions": a mesh ("all" by default), an optional tensor shape, and either
// from/to placements or all_single_dim.
TransitionSelection parse_transition(const JsonSource& c, const json& t, const std::string& where) {
  if (!t.is_object())
    c.fail(where, "expected an object {\"mesh\": \"2x2\", \"from\": \"S(0),R\", \"to\": \"R,R\"}");
  expect_keys(c, t, where, {"mesh", "from", "to", "all_single_dim", "shape"});
  TransitionSelection sel;
  sel.where = where;
  sel.mesh = t.contains("mesh") ? JsonCursor(c, t["mesh"], where + "/mesh").string() : "all";
  if (sel.mesh != "all") {
    try {
      sel.mesh = shardcal::DeviceMesh::parse(sel.mesh).to_string();
    } catch (const Error& e) {
      c.fail(where + "/mesh", "bad mesh \"" + sel.mesh + "\": " + e.what());
    }
  }
  if (t.contains("shape")) {
    const std::string text = JsonCursor(c, t["shape"], where + "/shape").string();
    try {
      sel.shape = shardcal::parse_shape(text);
    } catch (const Error& e) {
      c.fail(where + "/shape", e.what());
    }
    if (sel.shape.empty() || shardcal::numel(sel.shape) == 0)
      c.fail(where + "/shape", "the tensor must have at least one element, e.g. \"64x32\"");
  }
  if (t.contains("all_single_dim")) {
    if (t["all_single_dim"] != true)
      c.fail(where + "/all_single_dim", "must be true when present");
    if (t.contains("from") || t.contains("to"))
      c.fail(where, "give either all_single_dim or from/to, not both");
    sel.all_single_dim = true;
  } else {
    for (const char* key : {"from", "to"}) {
      if (!t.contains(key))
        c.fail(where + "/" + key, "missing; a transition needs \"from\" and \"to\" placements, e.g. \"S(0),R\"");
      std::string text = JsonCursor(c, t[key], where + "/" + key).string();
      try {
        (void)shardcal::parse_placements(text);
      } catch (const Error& e) {
        c.fail(where + "/" + key, std::string("bad placement: ") + e.what());
      }
      (std::string_view(key) == "from" ? sel.from : sel.to) = text;
    }
  }
  return sel;
}

// "transitions": "all_single_dim" or a list of entries.
void parse_transitions(const JsonSource& c, const json& t, SweepConfig& cfg) {
  if (t.is_string()) {
    if (t != "all_single_dim")
      c.fail("/transitions", "unknown value " + t.dump() +
                                 "; expected \"all_single_dim\" or a list of {\"mesh\", \"from\", \"to\"}");
    cfg.transitions.push_back({"all", true, "", "", {}, "/transitions"});
    return;
  }
  const json& arr = JsonCursor(c, t, "/transitions").array(false).json();
  for (std::size_t i = 0; i < arr.size(); ++i)
    cfg.transitions.push_back(parse_transition(c, arr[i], "/transitions/" + std::to_string(i)));
}

// "sizes": a list of byte counts, or {"min", "max", "factor"}.
void parse_sizes(const JsonSource& c, const json& j, SweepConfig& cfg) {
  if (!j.contains("sizes"))
    c.fail("/sizes", "missing (required); e.g. \"sizes\": {\"min\": 8, \"max\": 1048576, \"factor\": 4}");
  const json& s = j["sizes"];
  if (s.is_array()) {
    JsonCursor(c, s, "/sizes").array(true).json();
    for (std::size_t i = 0; i < s.size(); ++i) {
      const std::int64_t v = JsonCursor(c, s[i], "/sizes/" + std::to_string(i)).whole_number(1, kMaxBytes);
      if (!cfg.sizes.empty() && v <= cfg.sizes.back())
        c.fail("/sizes/" + std::to_string(i), "sizes must be strictly increasing (" +
                                                   std::to_string(v) + " after " +
                                                   std::to_string(cfg.sizes.back()) + ")");
      cfg.sizes.push_back(v);
    }
  } else if (s.is_object()) {
    expect_keys(c, s, "/sizes", {"min", "max", "factor"});
    for (const char* key : {"min", "max", "factor"})
      if (!s.contains(key))
        c.fail(std::string("/sizes/") + key, "missing; sizes needs min, max (bytes) and factor");
    const std::int64_t lo = JsonCursor(c, s["min"], "/sizes/min").whole_number(1, kMaxBytes);
    const std::int64_t hi = JsonCursor(c, s["max"], "/sizes/max").whole_number(1, kMaxBytes);
    const std::int64_t f = JsonCursor(c, s["factor"], "/sizes/factor").whole_number(2, 1 << 20);
    if (lo > hi)
      c.fail("/sizes", "min (" + std::to_string(lo) + ") is greater than max (" +
                           std::to_string(hi) + "); swap them");
    for (std::int64_t v = lo; v <= hi; v *= f) {
      cfg.sizes.push_back(v);
      if (v > hi / f) break;
    }
  } else {
    c.fail("/sizes", "expected {\"min\", \"max\", \"factor\"} or a list of byte counts, got " + json_kind(s));
  }
}

void parse_dtypes(const JsonSource& c, const json& dtypes, SweepConfig& cfg) {
  cfg.dtypes.clear();
  const json& arr = JsonCursor(c, dtypes, "/dtypes").array(true).json();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string where = "/dtypes/" + std::to_string(i);
    const std::string text = JsonCursor(c, arr[i], where).string();
    try {
      const DType t = shardcal::parse_dtype(text);
      if (std::find(cfg.dtypes.begin(), cfg.dtypes.end(), t) != cfg.dtypes.end())
        c.fail(where, "duplicate dtype \"" + text + "\"");
      cfg.dtypes.push_back(t);
    } catch (const Error& e) {
      if (std::string(e.what()).rfind(c.origin() + ": ", 0) == 0) throw;
      c.fail(where, e.what());
    }
  }
}

// "mode": one timing mode or a list of them.
void parse_modes(const JsonSource& c, const json& mv, SweepConfig& cfg) {
  json arr = mv.is_string() ? json::array({mv}) : mv;
  const std::string base = mv.is_string() ? "/mode" : "/mode/";
  JsonCursor(c, arr, "/mode").array(true).json();
  cfg.modes.clear();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string where = mv.is_string() ? base : base + std::to_string(i);
    const std::string text = JsonCursor(c, arr[i], where).string();
    Mode md;
    if (text == "per_iteration") md = Mode::PerIteration;
    else if (text == "pipelined") md = Mode::Pipelined;
    else c.fail(where, "unknown mode \"" + text + "\"; expected per_iteration or pipelined");
    if (std::find(cfg.modes.begin(), cfg.modes.end(), md) != cfg.modes.end())
      c.fail(where, "duplicate mode \"" + text + "\"");
    cfg.modes.push_back(md);
  }
}

// The timing protocol: warmup, iterations, time budget, adaptive stopping, check, modes,
// pipeline depth and buffer rotation.
void parse_protocol(const JsonSource& c, const json& j, SweepConfig& cfg) {
  if (j.contains("warmup")) cfg.warmup = int(JsonCursor(c, j["warmup"], "/warmup").whole_number(0, 1000000));
  if (j.contains("iterations")) {
    const json& it = j["iterations"];
    if (!it.is_object()) c.fail("/iterations", "expected {\"min\": N, \"max\": M}, got " + json_kind(it));
    expect_keys(c, it, "/iterations", {"min", "max"});
    if (it.contains("min")) cfg.iterations_min = int(JsonCursor(c, it["min"], "/iterations/min").whole_number(1, 100000000));
    if (it.contains("max")) cfg.iterations_max = int(JsonCursor(c, it["max"], "/iterations/max").whole_number(1, 100000000));
    if (cfg.iterations_min > cfg.iterations_max)
      c.fail("/iterations", "min (" + std::to_string(cfg.iterations_min) + ") is greater than max (" +
                                std::to_string(cfg.iterations_max) + "); swap them");
  }
  if (j.contains("time_budget_s"))
    cfg.time_budget_s = JsonCursor(c, j["time_budget_s"], "/time_budget_s").number(0.0, 1e6, true);
  if (j.contains("adaptive")) {
    const json& a = j["adaptive"];
    if (!a.is_object()) c.fail("/adaptive", "expected {\"target_rel_ci\": 0.02, \"confidence\": 0.95}");
    expect_keys(c, a, "/adaptive", {"target_rel_ci", "confidence"});
    if (a.contains("target_rel_ci"))
      cfg.target_rel_ci = JsonCursor(c, a["target_rel_ci"], "/adaptive/target_rel_ci").number(0.0, 10.0, false);
    if (a.contains("confidence"))
      cfg.confidence = JsonCursor(c, a["confidence"], "/adaptive/confidence").number(0.5, 0.999, false);
  }
  if (j.contains("check")) {
    if (!j["check"].is_boolean()) c.fail("/check", "expected true or false, got " + j["check"].dump());
    cfg.check = j["check"].get<bool>();
  }
  if (j.contains("mode")) parse_modes(c, j["mode"], cfg);
  if (j.contains("pipeline_depth"))
    cfg.pipeline_depth = int(JsonCursor(c, j["pipeline_depth"], "/pipeline_depth").whole_number(1, 100000));
  if (j.contains("start")) {
    const std::string k = JsonCursor(c, j["start"], "/start").string();
    if (k != "barrier" && k != "window")
      c.fail("/start", "expected \"barrier\" (an untimed world barrier before every sample) or "
                       "\"window\" (every rank starts at a time rank 0 sets on a shared clock), got \"" +
                           k + "\"");
    cfg.window_start = k == "window";
  }
  if (j.contains("start_window_us")) {
    if (!cfg.window_start)
      c.fail("/start_window_us", "only with \"start\": \"window\"; add it or drop this key");
    cfg.start_window_us = JsonCursor(c, j["start_window_us"], "/start_window_us").number(1.0, 1e6, false);
  }
  if (j.contains("buffer_rotation")) {
    const json& r = j["buffer_rotation"];
    if (!r.is_object()) c.fail("/buffer_rotation", "expected {\"bytes\": 33554432, \"max_slots\": 1024}");
    expect_keys(c, r, "/buffer_rotation", {"bytes", "max_slots"});
    if (r.contains("bytes")) cfg.rotation_bytes = JsonCursor(c, r["bytes"], "/buffer_rotation/bytes").whole_number(0, kMaxBytes);
    if (r.contains("max_slots"))
      cfg.rotation_max_slots = int(JsonCursor(c, r["max_slots"], "/buffer_rotation/max_slots").whole_number(1, 1 << 20));
  }
}

SweepConfig parse_config_doc(const json& j, const std::string& source, std::string_view text) {
  const JsonSource c(source, text);
  SweepConfig cfg;
  cfg.source = source;
  cfg.json = j;
  cfg.text = std::string(text);
  if (!j.is_object()) c.fail("", "the config must be a JSON object, got " + json_kind(j));
  expect_keys(c, j, "",
              {"name", "meshes", "collectives", "transitions", "transition_distributions", "sizes",
               "dtypes", "distributions", "warmup", "iterations", "time_budget_s", "adaptive",
               "check", "mode", "pipeline_depth", "start", "start_window_us", "buffer_rotation",
               "profile"});
  if (j.contains("name")) JsonCursor(c, j["name"], "/name").string();
  if (j.contains("profile")) {
    cfg.profile = JsonCursor(c, j["profile"], "/profile").string();
    if (cfg.profile.empty())
      c.fail("/profile", "empty path; give a profile file (e.g. configs/profiles/dtensor-default.json) "
                         "or leave the key out for the greedy planner");
  }

  parse_meshes(c, j, cfg);
  if (j.contains("collectives")) parse_collectives(c, j["collectives"], cfg);
  if (j.contains("transitions")) parse_transitions(c, j["transitions"], cfg);
  if (cfg.collectives.empty() && cfg.transitions.empty())
    c.fail("", "nothing to run: give \"collectives\" and/or \"transitions\"");
  if (j.contains("transition_distributions"))
    cfg.transition_distributions =
        parse_distributions(c, j["transition_distributions"], "/transition_distributions");
  parse_sizes(c, j, cfg);
  if (j.contains("dtypes")) parse_dtypes(c, j["dtypes"], cfg);
  if (j.contains("distributions"))
    cfg.distributions = parse_distributions(c, j["distributions"], "/distributions");
  parse_protocol(c, j, cfg);
  return cfg;
}

}  // namespace

SweepConfig parse_config(const json& j, const std::string& source) {
  return parse_config_doc(j, source, {});
}

SweepConfig parse_config_text(const std::string& text, const std::string& source) {
  return parse_config_doc(shardcal::formats::parse_json(text, source, ""), source, text);
}

SweepConfig load_config(const std::string& path) {
  return parse_config_text(
      shardcal::formats::read_text_file(
          path, "the sweep config", "does the file exist? configs/local.json is the default quick sweep"),
      path);
}

CollectiveShape collective_shape(Collective op, DType t, std::int64_t size_bytes,
                                 const Distribution& d, int n) {
  CollectiveShape s;
  s.n = n;
  s.elem = std::int64_t(shardcal::dtype_size(t));
  const std::int64_t elems = std::max<std::int64_t>(1, size_bytes / s.elem);
  const auto& info = collective_info(op);
  if (!info.has_v_form) {  // one buffer, the same on every rank
    s.uniform = true;
    s.counts.assign(std::size_t(n), elems);
    s.bytes = s.bytes_total = s.bytes_max_rank = s.bytes_eff = elems * s.elem;
    return s;
  }
  s.uniform = d.uniform();
  s.counts = d.split(elems, n);
  std::int64_t sum = 0, mx = 0;
  for (std::int64_t c : s.counts) sum += c, mx = std::max(mx, c);
  s.bytes = s.bytes_total = sum * s.elem;
  s.bytes_max_rank = mx * s.elem;
  s.bytes_eff = std::int64_t(n) * mx * s.elem;
  return s;
}

shardcal::Shape transition_shape(std::int64_t size_bytes, DType t) {
  const std::int64_t elems = std::max<std::int64_t>(1, size_bytes / std::int64_t(shardcal::dtype_size(t)));
  std::int64_t rows = std::max<std::int64_t>(1, std::int64_t(std::sqrt(double(elems))));
  while (rows > 1 && rows * rows > elems) --rows;
  return {rows, std::max<std::int64_t>(1, elems / rows)};
}

json Protocol::to_json() const {
  json p;
  p["mode"] = std::string(mode_name(mode));
  p["ops_per_sample"] = ops_per_sample;
  p["warmup"] = warmup;
  // Collectives and transitions rotate their buffers by the same rule. (Transitions used to run
  // on one hot set and recorded null here: those keys no longer match, see sweep.cpp's resume.)
  p["buffer_rotation"] = json{{"bytes", rotation_bytes}, {"max_slots", rotation_max_slots}};
  p["timing_loop"] = timing_loop;
  // The kind and its loop's version, not the window: the window is a tuning (it adapts,
  // timing.start records it), and a larger start_window_us must still --resume the file.
  // retry 1: a sample whose start time reached a rank after it had passed is run again
  // (before, kept with its lateness: such keys no longer match, a barrier start's are unchanged).
  if (window_start) p["start"] = json{{"kind", "window"}, {"retry", 1}};
  return p;
}

json Point::params() const {
  json p;
  p["kind"] = transition ? "transition" : "collective";
  p["mesh"] = mesh;
  p["dtype"] = std::string(shardcal::dtype_name(dtype));
  p["distribution"] = dist.name();
  p["size"] = size;
  p["mode"] = std::string(mode_name(mode));
  p["protocol"] = protocol.to_json();
  if (transition) {
    p["from"] = from_canonical;
    p["to"] = to_canonical;
    p["shape"] = shardcal::shape_to_string(shape);
    if (!planner.is_null()) p["planner"] = planner;
  } else {
    p["op"] = std::string(collective_info(op).name);
    p["mesh_dim"] = mesh_dim;
  }
  return p;
}

std::string Point::label() const {
  std::string s = transition ? from_given + " -> " + to_given : std::string(collective_info(op).name);
  s += " mesh " + mesh;
  if (!transition) s += " dim " + std::to_string(mesh_dim);
  s += " " + std::string(shardcal::dtype_name(dtype)) + " " + dist.name() + " " +
       std::to_string(size) + " B";
  if (mode == Mode::Pipelined) s += " pipelined";
  return s;
}

namespace {

void factorize(int rest, int max_dims, std::vector<int>& cur, std::vector<std::string>& out) {
  if (rest == 1) {
    if (!cur.empty()) out.push_back(shardcal::DeviceMesh(cur).to_string());
    return;
  }
  if (int(cur.size()) == max_dims) return;
  for (int f = 2; f <= rest; ++f) {
    if (rest % f) continue;
    cur.push_back(f);
    factorize(rest / f, max_dims, cur, out);
    cur.pop_back();
  }
}

// Apply a distribution to every S(d) placement that is the only one sharding tensor dim d
// (nested sharding keeps chunk sizes: explicit inner sizes cannot fit every outer piece).
std::vector<shardcal::Placement> apply_distribution(std::vector<shardcal::Placement> ps,
                                                    const shardcal::DeviceMesh& mesh,
                                                    const shardcal::Shape& shape,
                                                    const Distribution& d) {
  if (d.kind == Distribution::Kind::Even || d.kind == Distribution::Kind::Chunk) return ps;
  for (std::size_t md = 0; md < ps.size(); ++md) {
    auto& p = ps[md];
    if (!p.is_shard() || !p.sizes.empty() || p.dim < 0 || p.dim >= int(shape.size())) continue;
    int sharders = 0;
    for (const auto& q : ps) sharders += q.is_shard(p.dim) ? 1 : 0;
    if (sharders == 1) p.sizes = d.split(shape[std::size_t(p.dim)], mesh.extent(int(md)));
  }
  return ps;
}

}  // namespace

// Ordered factorisations of `world` into extents >= 2, fewer dims first: "8", "2x4", "4x2", ...
std::vector<std::string> factorizations(int world, int max_dims) {
  if (world == 1) return {"1"};
  std::vector<std::string> out;
  std::vector<int> cur;
  factorize(world, max_dims, cur, out);
  std::stable_sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), 'x') < std::count(b.begin(), b.end(), 'x');
  });
  return out;
}

std::vector<std::string> resolve_meshes(const SweepConfig& cfg, int world) {
  return cfg.mesh_factorizations ? factorizations(world, cfg.mesh_max_dims) : cfg.meshes;
}

namespace {

// Every configured mesh must hold exactly the world's ranks.
void check_meshes_fit(const JsonSource& c, const std::vector<std::string>& meshes, int world) {
  for (std::size_t i = 0; i < meshes.size(); ++i) {
    const auto mesh = shardcal::DeviceMesh::parse(meshes[i]);
    if (mesh.size() != world) {
      const std::vector<std::string> fits = factorizations(world, 3);
      std::string hint;
      for (std::size_t k = 0; k < fits.size() && k < 4; ++k) hint += (k ? ", " : "") + ("\"" + fits[k] + "\"");
      c.fail("/meshes/" + std::to_string(i),
             "mesh \"" + meshes[i] + "\" has " + std::to_string(mesh.size()) +
                 " ranks but the world has " + std::to_string(world) +
                 "; use meshes whose extents multiply to " + std::to_string(world) +
                 (hint.empty() ? std::string() : " (e.g. " + hint + ")") +
                 " or {\"factorizations\": true}");
    }
  }
}

// The collective points: mesh x selected dim x dtype x distribution x mode x size. A selection
// that produces none is a config mistake, not a silent no-op.
std::vector<Point> collective_points(const JsonSource& c, const SweepConfig& cfg,
                                     const std::vector<std::string>& meshes) {
  std::vector<Point> pts;
  for (const std::string& mesh_text : meshes) {
    const auto mesh = shardcal::DeviceMesh::parse(mesh_text);
    for (const auto& sel : cfg.collectives) {
      const auto& info = collective_info(sel.op);
      std::vector<int> dims;
      if (sel.all_dims) {
        for (int d = 0; d < mesh.ndim(); ++d) dims.push_back(d);
      } else {
        for (int d : sel.dims)
          if (d < mesh.ndim()) dims.push_back(d);
      }
      for (int d : dims) {
        if (mesh.extent(d) < 2) continue;  // a group of one moves no data
        for (DType t : cfg.dtypes)
          for (const auto& dist : cfg.distributions) {
            // Single-buffer collectives have no shard distribution: run them once, as "even".
            if (!info.has_v_form && dist.kind != Distribution::Kind::Even) {
              bool has_even = false;
              for (const auto& e : cfg.distributions) has_even = has_even || e.kind == Distribution::Kind::Even;
              if (has_even || !(dist == cfg.distributions.front())) continue;
            }
            for (Mode md : cfg.modes)
              for (std::int64_t size : cfg.sizes) {
                Point p;
                p.mesh = mesh_text;
                p.device_mesh = mesh;
                p.op = sel.op;
                p.mesh_dim = d;
                p.dtype = t;
                p.dist = info.has_v_form ? dist : Distribution{};
                p.size = size;
                p.mode = md;
                pts.push_back(std::move(p));
              }
          }
      }
    }
  }
  for (const auto& sel : cfg.collectives) {
    bool any = false;
    for (const auto& p : pts) any = any || (!p.transition && p.op == sel.op);
    if (!any)
      c.fail(sel.where, std::string("collective \"") + std::string(collective_info(sel.op).name) +
                            "\" selects no mesh dim of size >= 2 on any configured mesh; check \"dims\" "
                            "against the meshes");
  }
  return pts;
}

// The meshes a transition selection runs on: its own, or every configured mesh its placements fit.
std::vector<std::string> transition_meshes(const JsonSource& c, const TransitionSelection& sel,
                                           const std::vector<std::string>& meshes, int world) {
  std::vector<std::string> on;
  if (sel.mesh == "all") {
    on = meshes;
  } else {
    const auto mesh = shardcal::DeviceMesh::parse(sel.mesh);
    if (mesh.size() != world)
      c.fail(sel.where + "/mesh", "mesh \"" + sel.mesh + "\" has " + std::to_string(mesh.size()) +
                                      " ranks but the world has " + std::to_string(world));
    on = {sel.mesh};
  }
  // "all" means every configured mesh the pair fits (one placement per mesh dim), so one
  // config serves several world sizes; a pair that fits none is an error.
  if (sel.mesh == "all" && !sel.all_single_dim) {
    const std::size_t dims = shardcal::parse_placements(sel.from).size();
    std::erase_if(on, [&](const std::string& m) {
      return std::size_t(shardcal::DeviceMesh::parse(m).ndim()) != dims;
    });
    if (on.empty()) {
      std::string list;
      for (const auto& m : meshes) list += (list.empty() ? "" : ", ") + m;
      c.fail(sel.where + "/from", "\"" + sel.from + "\" has " + std::to_string(dims) +
                                       " placements but no configured mesh has " +
                                       std::to_string(dims) + " dims (meshes: " + list + ")");
    }
  }
  return on;
}

// The (from, to) pairs of a selection on one mesh: its own pair, or with all_single_dim every
// pair of distinct single-dim placements.
std::vector<std::pair<std::string, std::string>> transition_pairs(const TransitionSelection& sel,
                                                                  const shardcal::DeviceMesh& mesh) {
  std::vector<std::pair<std::string, std::string>> pairs;
  if (sel.all_single_dim) {
    const char* kinds[] = {"S(0)", "S(1)", "R", "P"};
    for (int d = 0; d < mesh.ndim(); ++d) {
      if (mesh.extent(d) < 2) continue;
      for (const char* a : kinds)
        for (const char* b : kinds) {
          if (std::string_view(a) == b) continue;
          std::string fa, fb;
          for (int k = 0; k < mesh.ndim(); ++k) {
            fa += (k ? "," : "") + std::string(k == d ? a : "R");
            fb += (k ? "," : "") + std::string(k == d ? b : "R");
          }
          pairs.emplace_back(fa, fb);
        }
    }
  } else {
    pairs.emplace_back(sel.from, sel.to);
  }
  return pairs;
}

// One transition point; its placements are checked on the mesh and the tensor.
Point transition_point(const JsonSource& c, const TransitionSelection& sel,
                       const shardcal::DeviceMesh& mesh, const std::string& mesh_text,
                       const std::string& fa, const std::string& fb, DType t,
                       const Distribution& dist, std::int64_t size) {
  Point p;
  p.transition = true;
  p.mesh = mesh_text;
  p.device_mesh = mesh;
  p.dtype = t;
  p.dist = dist;
  p.size = size;
  p.from_given = fa;
  p.to_given = fb;
  p.shape = sel.shape.empty() ? transition_shape(size, t) : sel.shape;
  const shardcal::TensorMeta meta{p.shape, t};
  for (int side = 0; side < 2; ++side) {
    const std::string& text = side == 0 ? fa : fb;
    const std::string where = sel.where + (sel.all_single_dim ? "" : side == 0 ? "/from" : "/to");
    try {
      std::vector<shardcal::Placement> given = shardcal::parse_placements(text);
      (side == 0 ? p.from_canonical : p.to_canonical) = shardcal::placements_to_string(given);
      shardcal::TensorSpec& spec = side == 0 ? p.from_spec : p.to_spec;
      spec = shardcal::TensorSpec(mesh, apply_distribution(std::move(given), mesh, p.shape, dist),
                                  meta);  // validates
      (side == 0 ? p.from : p.to) = shardcal::placements_to_string(spec.placements());
    } catch (const Error& e) {
      c.fail(where, "bad placement \"" + text + "\" on mesh " + mesh_text + " for a " +
                        shardcal::shape_to_string(p.shape) + " tensor: " + e.what());
    }
  }
  return p;
}

}  // namespace

std::vector<Point> expand_points(const SweepConfig& cfg, int world) {
  const JsonSource c(cfg.source, cfg.text);
  const std::vector<std::string> meshes = resolve_meshes(cfg, world);
  check_meshes_fit(c, meshes, world);
  std::vector<Point> pts = collective_points(c, cfg, meshes);
  for (const auto& sel : cfg.transitions)
    for (const auto& mesh_text : transition_meshes(c, sel, meshes, world)) {
      const auto mesh = shardcal::DeviceMesh::parse(mesh_text);
      for (const auto& [fa, fb] : transition_pairs(sel, mesh))
        for (DType t : cfg.dtypes)
          for (const auto& dist : cfg.transition_distributions)
            for (std::int64_t size : sel.shape.empty() ? cfg.sizes : std::vector<std::int64_t>{
                     shardcal::numel(sel.shape) * std::int64_t(shardcal::dtype_size(t))})
              pts.push_back(transition_point(c, sel, mesh, mesh_text, fa, fb, t, dist, size));
    }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    pts[i].index = i;
    Protocol& pr = pts[i].protocol;
    pr.mode = pts[i].mode;
    pr.ops_per_sample = pts[i].mode == Mode::Pipelined ? cfg.pipeline_depth : 1;
    pr.warmup = cfg.warmup;
    pr.rotation_bytes = cfg.rotation_bytes;
    pr.rotation_max_slots = cfg.rotation_max_slots;
    pr.window_start = cfg.window_start;
    if (!seen.insert(pts[i].key()).second)
      c.fail("", "the config selects the point " + pts[i].key() + " twice; remove the duplicate entry");
  }
  return pts;
}

}  // namespace shardbench::sweep

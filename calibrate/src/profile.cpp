// Reader, writer and predictor of calibrated cost-model profiles (shardcal.profile v1).
// Format: docs/PROFILE_FORMAT.md; JSON Schema: configs/schema/profile.schema.json. The Python
// module calibrate/python/shardcal/profile.py implements the same predict() rule, operation for
// operation, and a ctest compares the two.
#include "shardcal/calibrate/profile.hpp"

#include "shardcal/calibrate/cost_model.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "shardcal/error.hpp"
#include "shardcal/formats/atomic_write.hpp"
#include "shardcal/formats/json.hpp"
#include "shardcal/formats/json_cursor.hpp"

namespace shardcal::calib {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr int kMaxDepth = 32;          // deepest nesting accepted (extra objects included)
constexpr std::int64_t kMaxInt = 1 << 24;  // hosts, group sizes, points, ...

using formats::json_quote;
using formats::JsonCursor;

constexpr const char* kMissingFix =
    "add it (see docs/PROFILE_FORMAT.md) or regenerate the profile with shardbench calibrate";
constexpr const char* kUnknownKeyFix =
    "remove it or fix its spelling; free-form data belongs under an \"extra\" object";
constexpr const char* kValueFix =
    "fix the value (docs/PROFILE_FORMAT.md) or regenerate the profile with shardbench calibrate";
constexpr double kInf = std::numeric_limits<double>::infinity();

// Reads one profile document; every error goes through a JsonCursor, so it names the file, the
// JSON pointer and its line.
struct Reader {
  [[noreturn]] static void fail(const JsonCursor& at, const std::string& what, const std::string& fix) {
    at.fail(what + "; " + fix);
  }

  static Range range(const JsonCursor& v, double min_lo, bool integral) {
    if (!v.json().is_array() || v.size() != 2)
      fail(v, "expected [lo, hi] (hi may be null for unbounded), got " + json_quote(v.json()), "fix the value");
    auto bound = [&](const JsonCursor& b) {
      return integral ? double(b.integer(std::int64_t(min_lo), kMaxInt)) : b.number(min_lo);
    };
    Range r;
    r.lo = bound(v[0]);
    if (!v[1].is_null()) {
      r.hi = bound(v[1]);
      if (*r.hi < r.lo) fail(v, "upper bound below lower bound", "swap or fix the bounds");
    }
    return r;
  }

  static Domain domain(const JsonCursor& v) {
    v.expect_keys({"hosts", "concurrent_groups", "group_size", "bytes", "classes"}, kUnknownKeyFix);
    Domain d;
    d.hosts = range(v.required("hosts", kMissingFix), 1, true);
    d.concurrent_groups = range(v.required("concurrent_groups", kMissingFix), 1, true);
    d.group_size = range(v.required("group_size", kMissingFix), 1, true);
    d.bytes = range(v.required("bytes", kMissingFix), 0, false);
    if (auto cl = v.optional("classes")) {
      if (!cl->json().is_array()) fail(*cl, "expected an array of [group size, concurrent groups]", "fix the value");
      for (std::size_t i = 0; i < cl->size(); ++i) {
        const JsonCursor e = (*cl)[i];
        if (!e.json().is_array() || e.size() != 2)
          fail(e, "expected [group size, concurrent groups]", "fix the value");
        d.classes.push_back({int(e[0].integer(1, kMaxInt)), int(e[1].integer(1, kMaxInt))});
      }
    }
    return d;
  }

  static Segment segment(const JsonCursor& v) {
    v.expect_keys({"s_lo", "s_hi", "alpha_us", "alpha_step_us", "bandwidth_GBps", "alpha_rel_se",
                   "bandwidth_rel_se", "contention"},
                  kUnknownKeyFix);
    Segment s;
    s.s_lo = v.number_at("s_lo", kMissingFix, 0.0);
    const JsonCursor hi = v.required("s_hi", kMissingFix);
    if (!hi.is_null()) s.s_hi = hi.number(0.0);
    s.alpha_us = v.number_at("alpha_us", kMissingFix, 0.0);
    s.alpha_step_us = v.number_at("alpha_step_us", kMissingFix, 0.0);
    s.bandwidth_GBps = v.required("bandwidth_GBps", kMissingFix).number(0.0, kInf, true);
    // Optional: absent = unknown. Present means a number (null is not "unknown": omit the key).
    if (auto x = v.optional("alpha_rel_se")) s.alpha_rel_se = x->number(0.0);
    if (auto x = v.optional("bandwidth_rel_se")) s.bandwidth_rel_se = x->number(0.0);
    if (auto x = v.optional("contention")) s.contention = x->number(0.0);
    return s;
  }

  static Profile::LocalCopy local_copy(const JsonCursor& v) {
    v.object();
    v.expect_keys({"ns_per_byte", "se_ns_per_byte", "transitions"}, kUnknownKeyFix);
    Profile::LocalCopy c;
    const JsonCursor ns = v.required("ns_per_byte", kMissingFix);
    c.ns_per_byte = ns.number(0.0);
    if (c.ns_per_byte > Profile::kMaxCopyNsPerByte)
      fail(ns, "copy cost " + json_quote(ns.json()) + " ns/B is slower than 0.1 GB/s (at most " +
                   json_quote(json(Profile::kMaxCopyNsPerByte)) + ")",
           "refit with shardbench calibrate or remove local_copy");
    c.se_ns_per_byte = v.number_at("se_ns_per_byte", kMissingFix, 0.0);
    c.transitions = int(v.integer_at("transitions", kMissingFix, 1, kMaxInt));
    return c;
  }

  // A number >= 0, or null (not measured).
  static std::optional<double> optional_number(const JsonCursor& v) {
    if (v.is_null()) return std::nullopt;
    return v.number(0.0);
  }

  static FitQuality quality(const JsonCursor& v) {
    v.expect_keys({"points", "mape", "max_rel_error", "holdout_mape", "leave_group_out_mape",
                   "leave_mesh_out_mape", "leave_concurrency_out_mape", "leave_size_out_mape"},
                  kUnknownKeyFix);
    FitQuality q;
    q.points = int(v.integer_at("points", kMissingFix, 0, kMaxInt));
    q.mape = v.number_at("mape", kMissingFix, 0.0);
    q.max_rel_error = v.number_at("max_rel_error", kMissingFix, 0.0);
    q.holdout_mape = optional_number(v.required("holdout_mape", kMissingFix));
    q.leave_group_out_mape = optional_number(v.required("leave_group_out_mape", kMissingFix));
    // Optional keys (absent = not measured).
    if (auto x = v.optional("leave_mesh_out_mape")) q.leave_mesh_out_mape = optional_number(*x);
    if (auto x = v.optional("leave_concurrency_out_mape"))
      q.leave_concurrency_out_mape = optional_number(*x);
    if (auto x = v.optional("leave_size_out_mape")) q.leave_size_out_mape = optional_number(*x);
    return q;
  }

  static void group_sizes(const JsonCursor& gs, Model& m) {
    if (!gs.json().is_array())
      fail(gs, "expected an array of group sizes, got " + json_quote(gs.json()), "fix the value");
    for (std::size_t i = 0; i < gs.size(); ++i) {
      const JsonCursor g = gs[i];
      const int n = int(g.integer(1, kMaxInt));
      if (n % m.hosts != 0)
        fail(g, "group size " + std::to_string(n) + " is not a multiple of hosts=" + std::to_string(m.hosts),
             "a group spanning h hosts has the same number of ranks on each; fix the value");
      if (!m.group_sizes.empty() && n <= m.group_sizes.back())
        fail(g, "group sizes must be sorted ascending without repeats", "sort them and drop duplicates");
      m.group_sizes.push_back(n);
    }
  }

  static void segments(const JsonCursor& segs, Model& m) {
    if (!segs.json().is_array() || segs.size() == 0)
      fail(segs, "expected a non-empty array of segments, got " + json_quote(segs.json()), "fix the value");
    for (std::size_t i = 0; i < segs.size(); ++i) {
      const JsonCursor sc = segs[i];
      Segment s = segment(sc);
      if (i == 0 && s.s_lo != 0)
        fail(sc.required("s_lo", kMissingFix), "the first segment must start at 0 bytes",
             "set s_lo of the first segment to 0");
      if (i > 0) {
        const Segment& prev = m.segments.back();
        if (!prev.s_hi)
          fail(sc, "segment follows an unbounded one (s_hi null): segments overlap",
               "only the last segment may have s_hi null; sort segments by s_lo");
        if (s.s_lo != *prev.s_hi)
          fail(sc.required("s_lo", kMissingFix),
               std::string(s.s_lo < *prev.s_hi ? "segments overlap or are unsorted" : "gap between segments") +
                   ": s_lo " + json_quote(json(s.s_lo)) + " != previous s_hi " + json_quote(json(*prev.s_hi)),
               "segments must be sorted by s_lo and contiguous (each s_lo equal to the previous s_hi)");
      }
      if (s.s_hi && *s.s_hi <= s.s_lo)
        fail(sc.required("s_hi", kMissingFix), "segment is empty or reversed (s_hi <= s_lo)",
             "make s_hi greater than s_lo");
      m.segments.push_back(s);
    }
    if (m.segments.back().s_hi)
      fail(segs[segs.size() - 1].required("s_hi", kMissingFix),
           "the last segment must be unbounded (s_hi null) so every size has a model",
           "set the last segment's s_hi to null");
  }

  // A list of finite numbers (each >= lo).
  static std::vector<double> numbers(const JsonCursor& v, double lo) {
    if (!v.json().is_array()) fail(v, "expected an array of numbers, got " + json_quote(v.json()), "fix the value");
    std::vector<double> out;
    for (std::size_t i = 0; i < v.size(); ++i) out.push_back(v[i].number(lo));
    return out;
  }

  static MeasuredCurve curve(const JsonCursor& v, const Model& m) {
    v.object();
    v.expect_keys({"group_size", "concurrent_groups", "bytes", "log_ratio", "kappa", "kappa_scale", "noise",
                   "shrink", "weight"},
                  kUnknownKeyFix);
    MeasuredCurve c;
    const JsonCursor gs = v.required("group_size", kMissingFix);
    c.group_size = int(gs.integer(1, kMaxInt));
    if (c.group_size % m.hosts != 0)
      fail(gs, "group size " + std::to_string(c.group_size) + " is not a multiple of hosts=" + std::to_string(m.hosts),
           "fix the value or regenerate the profile");
    c.concurrent_groups = int(v.integer_at("concurrent_groups", kMissingFix, 1, kMaxInt));
    const JsonCursor by = v.required("bytes", kMissingFix);
    c.bytes = numbers(by, 1.0);
    if (c.bytes.size() < 2) fail(by, "a curve needs at least 2 measured sizes", "fix the value or drop the curve");
    for (std::size_t i = 1; i < c.bytes.size(); ++i)
      if (!(c.bytes[i] > c.bytes[i - 1]))
        fail(by[i], "sizes must be strictly ascending", "sort them and drop duplicates");
    const double lim = -kInf;
    const JsonCursor lr = v.required("log_ratio", kMissingFix);
    c.log_ratio = numbers(lr, lim);
    const JsonCursor ka = v.required("kappa", kMissingFix);
    c.kappa = numbers(ka, 0.0);
    for (std::size_t i = 0; i < c.kappa.size(); ++i)
      if (c.kappa[i] > kCurveMaxKappa)
        fail(ka[i], "kappa above " + json_quote(json(kCurveMaxKappa)), "regenerate the profile");
    if (c.log_ratio.size() != c.bytes.size())
      fail(lr, "has " + std::to_string(c.log_ratio.size()) + " entries, bytes has " + std::to_string(c.bytes.size()),
           "give one log ratio per measured size");
    if (c.kappa.size() != c.bytes.size())
      fail(ka, "has " + std::to_string(c.kappa.size()) + " entries, bytes has " + std::to_string(c.bytes.size()),
           "give one kappa per measured size");
    for (std::size_t i = 0; i < c.log_ratio.size(); ++i)
      if (std::abs(c.log_ratio[i]) > 50)
        fail(lr[i], "a log ratio beyond +-50 (a factor e^50 between measurement and model)", "regenerate the profile");
    c.kappa_scale = v.number_at("kappa_scale", kMissingFix, 0.0, kCurveMaxKappa);
    c.noise = v.number_at("noise", kMissingFix, 0.0, kCurveMaxNoise);
    const JsonCursor sh = v.required("shrink", kMissingFix);
    c.shrink = sh.number(0.0);
    if (c.shrink > 1) fail(sh, "shrink above 1", "shrink is in [0, 1]");
    const JsonCursor we = v.required("weight", kMissingFix);
    c.weight = we.number(0.0);
    if (c.weight > 1) fail(we, "weight above 1", "weight is in [0, 1]");
    for (const MeasuredCurve& o : m.curves)
      if (o.group_size == c.group_size && o.concurrent_groups == c.concurrent_groups)
        fail(v, "a second curve for the same group size and concurrent groups", "keep one curve per class");
    return c;
  }

  static Model model(const JsonCursor& v) {
    v.expect_keys({"collective", "hosts", "concurrent_groups", "dtype", "group_sizes", "effective_size",
                   "segments", "quality", "domain", "curves", "extra"},
                  kUnknownKeyFix);
    Model m;
    const JsonCursor cc = v.required("collective", kMissingFix);
    const std::string cname = cc.string();
    auto c = find_collective(cname);
    if (!c) {
      std::string names;
      for (const auto& info : kCollectives) names += std::string(names.empty() ? "" : ", ") + std::string(info.name);
      fail(cc, "unknown collective '" + cname + "'", "use one of: " + names);
    }
    m.collective = *c;
    m.hosts = int(v.integer_at("hosts", kMissingFix, 1, kMaxInt));
    m.concurrent_groups = int(v.integer_at("concurrent_groups", kMissingFix, 1, kMaxInt));
    const JsonCursor dt = v.required("dtype", kMissingFix);
    if (!dt.is_null()) {
      const std::string name = dt.string();
      bool found = false;
      for (DType t : kAllDTypes)
        if (dtype_name(t) == name) m.dtype = t, found = true;
      if (!found) fail(dt, "unknown dtype '" + name + "'", "use null (pooled) or f32, f64, f16, bf16, i32, i64, u8");
    }
    group_sizes(v.required("group_sizes", kMissingFix), m);
    const JsonCursor ec = v.required("effective_size", kMissingFix);
    const std::string es = ec.string();
    auto e = parse_effective_size(es);
    if (!e) fail(ec, "unknown effective-size rule '" + es + "'", "use \"total\" or \"n_times_max\"");
    m.effective_size = *e;
    segments(v.required("segments", kMissingFix), m);
    m.quality = quality(v.required("quality", kMissingFix));
    if (auto d = v.optional("domain")) m.domain = domain(*d);
    if (auto cs = v.optional("curves")) {
      if (!cs->json().is_array()) fail(*cs, "expected an array of curves", "fix the value");
      for (std::size_t i = 0; i < cs->size(); ++i) m.curves.push_back(curve((*cs)[i], m));
    }
    if (auto x = v.optional("extra")) m.json_extra = x->object().json().dump();
    return m;
  }

  // Schema and version first: a file of another kind or version gets that message, not a
  // complaint about some field it happens to lack.
  static void check_format(const JsonCursor& v) {
    const JsonCursor sc = v.required("schema", kMissingFix);
    const std::string schema = sc.string();
    if (schema != kProfileSchema)
      fail(sc, "unknown schema '" + schema + "'",
           std::string("this reader reads \"") + kProfileSchema + "\" files (is this a results or sweep file?)");
    const JsonCursor ver = v.required("version", kMissingFix);
    if (!ver.json().is_number_integer() || ver.json().get<std::int64_t>() != kProfileVersion)
      fail(ver, "unsupported version " + json_quote(ver.json()),
           "this reader reads version " + std::to_string(kProfileVersion) +
               "; use the shardcal that wrote the file or regenerate it with this one");
  }

  static Profile profile(const JsonCursor& v) {
    v.object();
    check_format(v);
    v.expect_keys({"schema", "version", "cluster", "created", "shardcal_version", "backend", "memory",
                   "models", "local_copy", "provenance", "fit_method", "extra"},
                  kUnknownKeyFix);
    Profile p;
    const JsonCursor cl = v.required("cluster", kMissingFix);
    p.cluster = cl.string();
    if (p.cluster.empty()) fail(cl, "cluster name is empty", "give the cluster a name (--name)");
    const JsonCursor cr = v.required("created", kMissingFix);
    p.created = cr.string();
    static const std::regex iso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z)");
    if (p.created.size() > 40 || !std::regex_match(p.created, iso))
      fail(cr, "'" + p.created.substr(0, 40) + "' is not an ISO 8601 UTC time", "write it like 2026-11-23T16:00:00Z");
    p.shardcal_version = v.string_at("shardcal_version", kMissingFix);
    const JsonCursor be = v.required("backend", kMissingFix);
    p.backend = be.string();
    if (p.backend != "mpi" && p.backend != "nccl" && p.backend != "sim" && p.backend != "model")
      fail(be, "unknown backend '" + p.backend + "'", "use mpi, nccl, sim or model");
    const JsonCursor me = v.required("memory", kMissingFix);
    p.memory = me.string();
    if (p.memory != "host" && p.memory != "cuda") fail(me, "unknown memory '" + p.memory + "'", "use host or cuda");
    json extra = json::object();
    for (const char* k : {"provenance", "fit_method", "extra"})
      if (auto x = v.optional(k)) extra[k] = x->object().json();
    if (!extra.empty()) p.json_extra = extra.dump();
    if (auto x = v.optional("local_copy")) p.local_copy = local_copy(*x);
    const JsonCursor models = v.required("models", kMissingFix);
    if (!models.json().is_array())
      fail(models, "expected an array of models, got " + json_quote(models.json()), "fix the value");
    std::set<std::tuple<int, int, int, int>> seen;
    for (std::size_t i = 0; i < models.size(); ++i) {
      Model m = model(models[i]);
      auto key = std::make_tuple(int(m.collective), m.hosts, m.concurrent_groups, m.dtype ? int(*m.dtype) : -1);
      if (!seen.insert(key).second)
        fail(models[i], "a second model for the same collective, hosts, concurrent_groups and dtype",
             "keep one model per class (merge or delete the duplicate)");
      p.models.push_back(std::move(m));
    }
    return p;
  }
};

ojson range_json(const Range& r, bool integral) {
  auto num = [&](double x) { return integral ? ojson(std::int64_t(x)) : ojson(x); };
  ojson a = ojson::array();
  a.push_back(num(r.lo));
  if (r.hi) a.push_back(num(*r.hi)); else a.push_back(nullptr);
  return a;
}

ojson opt(const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); }

// Log-free distance of x to a range, as a factor >= 1 (1 = inside). Mirrored in Python.
double factor_distance(double x, const Range& r) {
  if (x < r.lo) return r.lo / x;
  if (r.hi && x > *r.hi) return x / *r.hi;
  return 1.0;
}

std::string fmt(double x) { return json(x).dump(); }

}  // namespace

std::string_view effective_size_name(EffectiveSize e) {
  return e == EffectiveSize::Total ? "total" : "n_times_max";
}

std::optional<EffectiveSize> parse_effective_size(std::string_view name) {
  if (name == "total") return EffectiveSize::Total;
  if (name == "n_times_max") return EffectiveSize::NTimesMax;
  return std::nullopt;
}

bool between_measured_classes(const std::vector<std::pair<int, int>>& classes, int n, int c) {
  bool c_lo = false, c_hi = false, n_lo = false, n_hi = false;
  for (const auto& [mn, mc] : classes) {
    if (mn == n) c_lo = c_lo || mc <= c, c_hi = c_hi || mc >= c;
    if (mc == c) n_lo = n_lo || mn <= n, n_hi = n_hi || mn >= n;
  }
  return (c_lo && c_hi) || (n_lo && n_hi);
}

std::string_view latency_law_name(LatencyLaw law) {
  switch (law) {
    case LatencyLaw::RingSteps: return "ring-steps";
    case LatencyLaw::TreeDepth: return "tree-depth";
    case LatencyLaw::LogRanks: return "log2-ranks";
    case LatencyLaw::Flat: return "flat";
  }
  return "?";
}

std::string_view bandwidth_law_name(BandwidthLaw law) {
  return law == BandwidthLaw::HostShare ? "host-share" : "bus-factor";
}

Domain effective_domain(const Model& m) {
  if (m.domain) return *m.domain;
  Domain d;
  d.hosts = {double(m.hosts), double(m.hosts)};
  d.concurrent_groups = {double(m.concurrent_groups), double(m.concurrent_groups)};
  if (!m.group_sizes.empty()) d.group_size = {double(m.group_sizes.front()), double(m.group_sizes.back())};
  return d;
}

Profile parse_profile(const std::string& json_text, const std::string& origin) {
  const formats::JsonSource src(origin, json_text);
  const json doc = formats::parse_json(
      json_text, origin,
      "the profile is not valid JSON: it may be truncated or corrupt; regenerate it with "
      "shardbench calibrate",
      kMaxDepth, "a profile holds finite numbers only: regenerate it with shardbench calibrate");
  return Reader::profile(JsonCursor(src, doc, {}, kValueFix));
}

Profile read_profile(const std::string& path) {
  const std::string text = formats::read_text_file(
      path, "profile", "check the path (built-in profiles are in configs/profiles/)");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw Error(path + ": the profile file is empty; regenerate it with shardbench calibrate");
  return parse_profile(text, path);
}

// The writer's json_extra members: text that must parse to a JSON object.
static ojson parse_json_extra(const std::string& text, const char* what) {
  ojson v;
  try {
    v = ojson::parse(text);
  } catch (const ojson::exception& e) {
    throw Error(std::string("profile_to_json: ") + what + " is not valid JSON: " + e.what());
  }
  if (!v.is_object()) throw Error(std::string("profile_to_json: ") + what + " must be a JSON object");
  return v;
}

std::string profile_to_json(const Profile& p) {
  ojson j;
  j["schema"] = kProfileSchema;
  j["version"] = kProfileVersion;
  j["cluster"] = p.cluster;
  j["created"] = p.created;
  j["shardcal_version"] = p.shardcal_version;
  j["backend"] = p.backend;
  j["memory"] = p.memory;
  if (p.local_copy) {
    const Profile::LocalCopy& c = *p.local_copy;
    if (!std::isfinite(c.ns_per_byte) || c.ns_per_byte < 0 || c.ns_per_byte > Profile::kMaxCopyNsPerByte ||
        !std::isfinite(c.se_ns_per_byte) ||
        c.se_ns_per_byte < 0 || c.transitions < 1)
      throw Error("profile_to_json: local_copy needs finite ns_per_byte, se_ns_per_byte >= 0 and transitions >= 1");
    j["local_copy"] = {{"ns_per_byte", c.ns_per_byte}, {"se_ns_per_byte", c.se_ns_per_byte},
                       {"transitions", c.transitions}};
  }
  if (!p.json_extra.empty()) {
    const ojson extra = parse_json_extra(p.json_extra, "Profile::json_extra");
    for (auto it = extra.begin(); it != extra.end(); ++it)
      if (it.key() != "provenance" && it.key() != "fit_method" && it.key() != "extra")
        throw Error("profile_to_json: Profile::json_extra member '" + it.key() +
                    "' is not allowed; use provenance, fit_method or extra");
    for (const char* k : {"provenance", "fit_method", "extra"}) {  // canonical order
      auto it = extra.find(k);
      if (it == extra.end()) continue;
      if (!it->is_object())
        throw Error(std::string("profile_to_json: Profile::json_extra member '") + k + "' must be an object");
      j[k] = *it;
    }
  }
  ojson models = ojson::array();
  for (const Model& m : p.models) {
    ojson jm;
    jm["collective"] = std::string(collective_info(m.collective).name);
    jm["hosts"] = m.hosts;
    jm["concurrent_groups"] = m.concurrent_groups;
    jm["dtype"] = m.dtype ? ojson(std::string(dtype_name(*m.dtype))) : ojson(nullptr);
    jm["group_sizes"] = m.group_sizes;
    jm["effective_size"] = std::string(effective_size_name(m.effective_size));
    ojson segs = ojson::array();
    for (const Segment& s : m.segments) {
      ojson js;
      js["s_lo"] = s.s_lo;
      js["s_hi"] = opt(s.s_hi);
      js["alpha_us"] = s.alpha_us;
      js["alpha_step_us"] = s.alpha_step_us;
      js["bandwidth_GBps"] = s.bandwidth_GBps;
      if (s.alpha_rel_se) js["alpha_rel_se"] = *s.alpha_rel_se;  // NaN: refused by the self-check
      if (s.bandwidth_rel_se) js["bandwidth_rel_se"] = *s.bandwidth_rel_se;
      if (s.contention) js["contention"] = *s.contention;
      segs.push_back(std::move(js));
    }
    jm["segments"] = std::move(segs);
    ojson q;
    q["points"] = m.quality.points;
    q["mape"] = m.quality.mape;
    q["max_rel_error"] = m.quality.max_rel_error;
    q["holdout_mape"] = opt(m.quality.holdout_mape);
    q["leave_group_out_mape"] = opt(m.quality.leave_group_out_mape);
    if (m.quality.leave_mesh_out_mape) q["leave_mesh_out_mape"] = *m.quality.leave_mesh_out_mape;
    if (m.quality.leave_concurrency_out_mape)
      q["leave_concurrency_out_mape"] = *m.quality.leave_concurrency_out_mape;
    if (m.quality.leave_size_out_mape) q["leave_size_out_mape"] = *m.quality.leave_size_out_mape;
    jm["quality"] = std::move(q);
    if (m.domain) {
      ojson d;
      d["hosts"] = range_json(m.domain->hosts, true);
      d["concurrent_groups"] = range_json(m.domain->concurrent_groups, true);
      d["group_size"] = range_json(m.domain->group_size, true);
      d["bytes"] = range_json(m.domain->bytes, false);
      if (!m.domain->classes.empty()) {
        ojson cls = ojson::array();
        for (const auto& [n, c] : m.domain->classes) cls.push_back(ojson::array({n, c}));
        d["classes"] = std::move(cls);
      }
      jm["domain"] = std::move(d);
    }
    if (!m.curves.empty()) {
      ojson cs = ojson::array();
      for (const MeasuredCurve& c : m.curves) {
        ojson jc;
        jc["group_size"] = c.group_size;
        jc["concurrent_groups"] = c.concurrent_groups;
        jc["bytes"] = c.bytes;
        jc["log_ratio"] = c.log_ratio;
        jc["kappa"] = c.kappa;
        jc["kappa_scale"] = c.kappa_scale;
        jc["noise"] = c.noise;
        jc["shrink"] = c.shrink;
        jc["weight"] = c.weight;
        cs.push_back(std::move(jc));
      }
      jm["curves"] = std::move(cs);
    }
    if (!m.json_extra.empty()) {
      jm["extra"] = parse_json_extra(m.json_extra, "Model::json_extra");
    }
    models.push_back(std::move(jm));
  }
  j["models"] = std::move(models);
  std::string text = j.dump(2);
  // Refuse to write what we could not read back (a fitter bug must not produce a file that
  // every reader rejects later).
  parse_profile(text, "profile_to_json (self-check)");
  return text + "\n";
}

void write_profile_atomic(const Profile& p, const std::string& path) {
  formats::write_text_atomic(path, profile_to_json(p));
}

namespace {

void check_counts(Collective c, std::span<const std::int64_t> counts, int elem_size) {
  if (elem_size < 1) throw Error("element size must be >= 1 byte, got " + std::to_string(elem_size));
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i] < 0)
      throw Error("counts[" + std::to_string(i) + "] = " + std::to_string(counts[i]) +
                  " is negative; counts are elements per group position");
  const CollectiveInfo& info = collective_info(c);
  if (!info.has_v_form)
    for (std::size_t i = 1; i < counts.size(); ++i)
      if (counts[i] != counts[0])
        throw Error(
            std::string(info.name) + " has no v-form: its count is the buffer, the same at every " +
            "group position, but counts[" + std::to_string(i) + "] = " + std::to_string(counts[i]) +
            " != counts[0] = " + std::to_string(counts[0]) + "; give equal counts (or --bytes)");
}

// The length of one row of counts for group size n: all_to_all takes n entries (one row every
// rank sends) or n x n (the send matrix); every other collective n entries.
std::size_t row_length(Collective c, std::size_t size, int n) {
  if (n < 1) throw Error("group size must be >= 1, got " + std::to_string(n));
  const auto m = std::size_t(n);
  if (size == m) return m;
  if (c == Collective::AllToAll && size == m * m) return m;
  throw Error("counts has " + std::to_string(size) + " entries but the group size is " +
              std::to_string(n) + "; give one count per group position" +
              (c == Collective::AllToAll
                   ? std::string(" (all_to_all: or n x n, the send matrix row-major)")
                   : std::string()));
}

}  // namespace

double table_bytes(Collective c, std::span<const std::int64_t> counts, int elem_size,
                   int group_size) {
  if (counts.empty()) throw Error("table_bytes: counts is empty");
  // The table's S is the `total` rule: the largest row's sum (the buffer for no-v-form ops).
  return effective_bytes(c, EffectiveSize::Total, 0, counts, elem_size, group_size);
}

double effective_bytes(Collective c, EffectiveSize rule, double bytes,
                       std::span<const std::int64_t> counts, int elem_size, int group_size) {
  if (counts.empty()) {
    if (!std::isfinite(bytes) || bytes < 0)
      throw Error("bytes must be finite and >= 0, got " + fmt(bytes));
    return bytes;
  }
  check_counts(c, counts, elem_size);
  const std::size_t row = row_length(c, counts.size(), group_size);
  const double es = elem_size;
  // No v-form (all_reduce, broadcast): the count is the buffer, S_eff = S under either rule
  // (the sweep records bytes_eff = bytes_total = the buffer for these).
  if (!collective_info(c).has_v_form) return double(counts[0]) * es;
  // The rule per row (all_to_all: per sending rank; others: the one row), the largest result.
  double best = 0;
  for (std::size_t r = 0; r < counts.size(); r += row) {
    double total = 0, largest = 0;
    for (std::size_t i = r; i < r + row; ++i) {
      total += double(counts[i]);
      largest = std::max(largest, double(counts[i]));
    }
    best = std::max(best, rule == EffectiveSize::Total ? total * es : double(row) * largest * es);
  }
  return best;
}

bool non_decreasing_in_size(const Model& m, int n, double rel_tol) {
  for (std::size_t i = 0; i + 1 < m.segments.size(); ++i) {
    if (!m.segments[i].s_hi) return true;
    const double b = *m.segments[i].s_hi;
    const double left = segment_time_us(m, i, n, b);  // the limit from below (linear segment)
    const double right = segment_time_us(m, i + 1, n, b);
    if (right < left * (1.0 - rel_tol)) return false;
  }
  return true;
}

namespace {

// The host-count transport for a query (cost_model.hpp "Host-count transport"): when the query
// spans hosts the chosen model did not measure, the structure from its count to the query's, and
// the test of that structure against a second measured inter-host model of the collective (same
// dtype and concurrency, domain derived from measurements) nearest the chosen one. None when the
// query or the chosen model is intra-host.
HostTransport host_transport(const Profile& p, const Model& best, const LinkClass& lc) {
  HostTransport t;
  if (lc.hosts <= 1 || best.hosts <= 1 || best.hosts == lc.hosts || best.domain) return t;
  double other_d = 0;
  for (const Model& m : p.models) {
    if (&m == &best || m.collective != best.collective || m.hosts <= 1 || m.hosts == best.hosts ||
        m.domain || m.dtype != best.dtype || m.concurrent_groups != best.concurrent_groups)
      continue;
    const double d = std::abs(std::log(double(m.hosts) / best.hosts));
    if (!t.other || d < other_d || (d == other_d && m.hosts > t.other->hosts)) t.other = &m, other_d = d;
  }
  const int c = lc.concurrent_groups, rph = lc.ranks_per_host;
  const Collective op = best.collective;
  t.active = true;
  t.n_model = best.hosts * rph;
  t.n_query = lc.group_size;
  t.doublings = std::abs(std::log2(double(lc.hosts) / best.hosts));
  t.law = default_latency_law(op, p.backend);
  t.bw_law = default_bandwidth_law(op);
  t.step_log_sigma = kHostTransportLogSigma;
  if (t.other) {
    // The test: the other count's prices carried to the chosen count by each law, at the sizes
    // both measured (their curves' knots inside both domains; else a grid over the overlap).
    const Model& a = *t.other;
    t.n_other = a.hosts * rph;
    t.test_doublings = std::abs(std::log2(double(best.hosts) / a.hosts));
    // At the largest ranks per host both counts measured (else the query's), so the laws chosen
    // do not depend on the query's ranks per host.
    int trph = 0;
    for (int g : best.group_sizes)
      if (g % best.hosts == 0)
        for (int ga : a.group_sizes)
          if (ga % a.hosts == 0 && ga / a.hosts == g / best.hosts) trph = std::max(trph, g / best.hosts);
    if (trph == 0) trph = rph;
    const int nb = best.hosts * trph, na = a.hosts * trph;
    const MeasuredCurve* cb = curve_for(best, nb, c);
    const MeasuredCurve* ca = curve_for(a, na, c);
    std::vector<double> sizes;
    if (cb && ca && !cb->bytes.empty() && !ca->bytes.empty()) {
      const double lo = std::max(cb->bytes.front(), ca->bytes.front());
      const double hi = std::min(cb->bytes.back(), ca->bytes.back());
      for (const MeasuredCurve* cv : {cb, ca})
        for (double k : cv->bytes)
          if (k >= lo && k <= hi) sizes.push_back(k);
    } else {
      // Backbones only (no measured sizes recorded): every octave from 1 B to 1 GiB.
      for (int i = 0; i <= 30; ++i) sizes.push_back(std::ldexp(1.0, i));
    }
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    const auto [slo, shi] = known_switch(op, p.backend, a.hosts, best.hosts);
    const double la = price_time_us(a, na, c, 1.0);
    // Per pair of laws, the miss per size: log(t_b / structure's t_b), 0 inside a switch's
    // range; the pair that misses least (ties: the defaults, listed first). Across a known
    // switch the pair is special by construction (NCCL's two-node tree): it chooses nothing, the
    // defaults stand and only its miss widens. NCCL runs rings and trees: its bandwidth law is
    // the bus factors' (all_to_all the host share's), never chosen.
    t.test_switch = slo != shi;
    const int n_lat = t.test_switch ? 1 : 5, n_bw = t.test_switch || p.backend == "nccl" ? 1 : 3;
    const LatencyLaw lat_laws[] = {t.law, LatencyLaw::RingSteps, LatencyLaw::TreeDepth, LatencyLaw::LogRanks,
                                   LatencyLaw::Flat};
    const BandwidthLaw bw_laws[] = {t.bw_law, BandwidthLaw::BusFactor, BandwidthLaw::HostShare};
    double best_score = 0, default_score = 0;
    bool first = true;
    for (int ib = 0; ib < n_bw; ++ib) {
      const BandwidthLaw bw = bw_laws[ib];
      const double f = bandwidth_growth(bw, op, na, a.hosts, nb, best.hosts);
      for (int il = 0; il < n_lat; ++il) {
        const LatencyLaw law = lat_laws[il];
        const double r = latency_growth(law, na, a.hosts, nb, best.hosts);
        std::vector<double> miss;
        double score = 0;
        for (double k : sizes) {
          const double ta = price_time_us(a, na, c, k), tb = price_time_us(best, nb, c, k);
          if (!(ta > 0) || !(tb > 0)) {
            miss.push_back(0.0);
            continue;
          }
          const double p_lo = ta * transport_factor(la, r, f * slo, ta);
          const double p_hi = ta * transport_factor(la, r, f * shi, ta);
          const double d = tb < p_lo ? std::log(tb / p_lo) : tb > p_hi ? std::log(tb / p_hi) : 0.0;
          miss.push_back(d);
          score += std::abs(d);
        }
        if (first) default_score = score;
        if (first || score < best_score - 1e-9 * std::max(1.0, best_score)) {
          first = false;
          best_score = score;
          t.law = law;
          t.bw_law = bw;
          t.miss_log = std::move(miss);
        }
      }
    }
    t.miss_bytes = sizes;
    if (sizes.empty()) t.miss_log.clear();
    t.law_tested = !sizes.empty();
    // Discriminating: the chosen pair beat the defaults (else they merely held or tied).
    t.law_discriminated = t.law_tested && best_score < default_score - 1e-9 * std::max(1.0, default_score);
    if (t.law_tested) t.step_log_sigma = kHostTransportTestedLogSigma;
  }
  t.latency_us = price_time_us(best, t.n_model, c, 1.0);
  t.latency_ratio = latency_growth(t.law, t.n_model, best.hosts, lc.group_size, lc.hosts);
  const double f = bandwidth_growth(t.bw_law, op, t.n_model, best.hosts, lc.group_size, lc.hosts);
  // A known switch's range: priced at its geometric middle, the range the 95 % interval.
  const auto [klo, khi] = known_switch(op, p.backend, best.hosts, lc.hosts);
  const double mid = std::sqrt(klo * khi);
  double lo = klo, hi = khi;
  if (!t.law_tested && p.backend == "mpi" && t.bw_law == BandwidthLaw::BusFactor) {
    // Whether MPI runs a ring or an algorithm whose every rank's bytes cross the NIC (recursive
    // doubling / halving, Rabenseifner) is not known from one count: priced as a ring, the
    // interval reaching the host share's price.
    const double other = bandwidth_growth(BandwidthLaw::HostShare, op, t.n_model, best.hosts, lc.group_size,
                                          lc.hosts) / f;
    lo *= std::min(1.0, other);
    hi *= std::max(1.0, other);
    t.algorithm_unknown = other != 1.0;
  }
  t.two_node_switch = klo != khi;
  t.bus_ratio = f * mid;
  t.switch_lo_log_sigma = std::log(mid / lo) / kIntervalZ;
  t.switch_hi_log_sigma = std::log(hi / mid) / kIntervalZ;
  return t;
}

std::string transport_note(const HostTransport& t, const Model& best, const LinkClass& lc) {
  std::ostringstream o;
  o << "hosts=" << lc.hosts << " transported from the measured hosts=" << best.hosts << " ("
    << std::setprecision(3) << t.doublings << (t.doublings == 1.0 ? " doubling" : " doublings") << ", "
    << latency_law_name(t.law) << " latency, " << bandwidth_law_name(t.bw_law) << " bandwidth";
  if (t.other && !t.law_tested)
    o << ", untested by hosts=" << t.other->hosts << " (no common measured sizes)";
  else if (t.other && t.test_switch)
    o << "; hosts=" << t.other->hosts << " across NCCL's two-node tree: defaults kept, its miss widens";
  else if (t.other)
    o << (t.law_discriminated ? " chosen by" : " consistent with") << " hosts=" << t.other->hosts;
  if (t.two_node_switch) o << "; NCCL's two-node all_reduce tree in between: priced at its middle, widened";
  if (t.algorithm_unknown) o << "; MPI's algorithm untested: widened toward host-share bandwidth";
  o << ")";
  return o.str();
}

}  // namespace

Prediction predict(const Profile& p, Collective c, const LinkClass& lc, double bytes,
                   std::span<const std::int64_t> counts, int elem_size, std::optional<DType> dtype) {
  const std::string cname(collective_info(c).name);
  if (lc.group_size < 1 || lc.hosts < 1 || lc.ranks_per_host < 1 || lc.concurrent_groups < 1)
    throw Error("link class: group size, hosts, ranks per host and concurrent groups must all be >= 1");
  if (lc.hosts * std::int64_t(lc.ranks_per_host) != lc.group_size)
    throw Error("link class: group size " + std::to_string(lc.group_size) + " != hosts " +
                std::to_string(lc.hosts) + " x ranks per host " + std::to_string(lc.ranks_per_host) +
                "; a group spanning h hosts has the same number of ranks on each");
  if (!counts.empty()) row_length(c, counts.size(), lc.group_size);  // throws on a wrong length

  // Nearest measured class, lexicographic (docs/PROFILE_FORMAT.md "Choosing a model").
  const Model* best = nullptr;
  std::tuple<int, double, int, double, double, int> best_key;
  for (const Model& m : p.models) {
    if (m.collective != c) continue;
    const Domain d = effective_domain(m);
    const bool inter = lc.hosts > 1;
    const int side = inter ? (d.hosts.hi && *d.hosts.hi <= 1 ? 1 : 0) : (d.hosts.lo > 1 ? 1 : 0);
    int dscore = 0;
    if (dtype) dscore = m.dtype == dtype ? 0 : (!m.dtype ? 1 : 2);
    else dscore = m.dtype ? 2 : 0;
    // Equally far host counts: the larger (small counts are often special cases).
    auto key = std::make_tuple(side, factor_distance(lc.hosts, d.hosts), -m.hosts,
                               factor_distance(lc.concurrent_groups, d.concurrent_groups),
                               factor_distance(lc.group_size, d.group_size), dscore);
    if (!best || key < best_key) best = &m, best_key = key;
  }
  if (!best) {
    std::set<std::string> have;
    for (const Model& m : p.models) have.insert(std::string(collective_info(m.collective).name));
    std::string list;
    for (const auto& h : have) list += (list.empty() ? "" : ", ") + h;
    throw Error("profile '" + p.cluster + "' has no model for " + cname + " (it has: " +
                (list.empty() ? "none" : list) + "); calibrate from a sweep that measures " + cname);
  }
  Prediction out;
  out.model = best;
  const double s_eff =
      effective_bytes(c, best->effective_size, bytes, counts, elem_size, lc.group_size);
  const Domain d = effective_domain(*best);
  std::string note;
  auto add = [&](const std::string& what) { note += (note.empty() ? "" : "; ") + what; };
  [[maybe_unused]] const auto& [side, dh, neg_hosts, dc, dn, ds] = best_key;
  out.transport = host_transport(p, *best, lc);
  const HostTransport& tr = out.transport;
  if (tr.active) {
    // Each model is priced at its hosts x these ranks per host: a group size it did not measure
    // is a class extrapolation of its own.
    auto outside = [](const Model& m, int n) {
      return factor_distance(n, effective_domain(m).group_size) != 1.0;
    };
    if (outside(*best, tr.n_model) || (tr.other && outside(*tr.other, tr.n_other)))
      add(std::to_string(lc.ranks_per_host) + " ranks per host: group sizes " +
          std::to_string(tr.n_model) + (tr.other ? " and " + std::to_string(tr.n_other) : std::string()) +
          " outside the measured ones at hosts=" + std::to_string(best->hosts) +
          (tr.other ? " and " + std::to_string(tr.other->hosts) : std::string()));
  }
  const bool transport_class_extrapolated = !note.empty();
  if (tr.active) {
    add(transport_note(tr, *best, lc));
    if (dc != 1.0)
      add("nearest measured class: concurrent_groups=" + std::to_string(best->concurrent_groups));
  } else if (side != 0 || dh != 1.0 || dc != 1.0)
    add("nearest measured class: hosts=" + std::to_string(best->hosts) +
        " concurrent_groups=" + std::to_string(best->concurrent_groups));
  // (Transported: each model's own group size was checked above.)
  if (!tr.active && dn != 1.0)
    add("group size " + std::to_string(lc.group_size) + " outside the measured range");
  else if (!tr.active && dc == 1.0 && !d.classes.empty() &&
           !between_measured_classes(d.classes, lc.group_size, lc.concurrent_groups))
    add("group size " + std::to_string(lc.group_size) + " with " +
        std::to_string(lc.concurrent_groups) +
        " concurrent groups neither measured nor between measured pairs at the same group size "
        "or concurrency");
  if (ds == 2) add("dtype model " + (best->dtype ? std::string(dtype_name(*best->dtype)) : std::string("pooled")) +
                   " used for " + (dtype ? std::string(dtype_name(*dtype)) : std::string("an unspecified dtype")));
  // The class is extrapolated when the model's choice was (the size alone is not: the curve
  // widens the interval for sizes beyond the measured ones itself).
  const double class_sigma =
      tr.active ? (dc != 1.0 || ds == 2 || !tr.other || transport_class_extrapolated
                       ? kExtrapolatedClassLogSigma : 0.0)
      : side != 0 ? kOtherSideLogSigma : (!note.empty() ? kExtrapolatedClassLogSigma : 0.0);
  if (!d.bytes.contains(s_eff)) add("size " + fmt(s_eff) + " B outside the measured range");
  out.extrapolated = !note.empty();
  out.note = note;
  const Priced pr = tr.active ? price_transported(*best, tr, lc.concurrent_groups, s_eff, class_sigma)
                             : price(*best, lc.group_size, lc.concurrent_groups, s_eff, class_sigma);
  out.segment = int(pr.segment);
  out.time_us = pr.time_us;
  out.lo_us = pr.lo_us;
  out.hi_us = pr.hi_us;
  out.basis = !pr.curve ? "backbone" : pr.curve_exact ? "measured curve" : "nearest class's curve";
  if (tr.active)
    out.basis = "hosts=" + std::to_string(best->hosts) + " transported to hosts=" + std::to_string(lc.hosts) +
                (tr.other && tr.law_tested ? ", tested by hosts=" + std::to_string(tr.other->hosts) : ", untested") +
                " (" + out.basis + ")";
  if (pr.switch_gap) out.basis += ", switch in the gap";
  if (pr.beyond_measured) out.basis += ", beyond the measured sizes";
  return out;
}

}  // namespace shardcal::calib

// The profile reader (shardcal.profile v1): parse_profile / read_profile check every field and name
// the JSON pointer, its line and a fix for every defect; the profile's small data helpers
// (effective_domain, between_measured_classes, the effective-size rule's names) beside it.
// Format: docs/PROFILE_FORMAT.md; JSON Schema: configs/schema/profile.schema.json. Python reads
// through it (shardcal._core); the test oracle is tests/calibrate/oracle/profile_read.py.
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "shardcal/calibrate/cost_model.hpp"
#include "shardcal/calibrate/profile_io.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/json.hpp"
#include "shardcal/formats/json_cursor.hpp"

namespace shardcal::calib {

namespace {

using json = nlohmann::json;

constexpr int kMaxDepth = 32;              // deepest nesting accepted (extra objects included)
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
  [[noreturn]] static void fail(const JsonCursor& at, const std::string& what,
                                const std::string& fix) {
    at.fail(what + "; " + fix);
  }

  static Range range(const JsonCursor& v, double min_lo, bool integral) {
    if (!v.json().is_array() || v.size() != 2)
      fail(v, "expected [lo, hi] (hi may be null for unbounded), got " + json_quote(v.json()),
           "fix the value");
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
      if (!cl->json().is_array())
        fail(*cl, "expected an array of [group size, concurrent groups]", "fix the value");
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
    static const std::vector<const char*> keys = [] {
      std::vector<const char*> k{"s_lo", "s_hi"};
      for (const TermMember& m : kSegmentTermMembers) k.push_back(m.key());
      return k;
    }();
    v.expect_keys(keys, kUnknownKeyFix);
    Segment s;
    s.s_lo = v.number_at("s_lo", kMissingFix, 0.0);
    const JsonCursor hi = v.required("s_hi", kMissingFix);
    if (!hi.is_null()) s.s_hi = hi.number(0.0);
    // The terms (cost_model.hpp kTermInfo), in the canonical order. Standard errors and optional
    // terms: absent = unknown / 0; present means a number (null is not "unknown": omit the key).
    for (const TermMember& m : kSegmentTermMembers) {
      const TermInfo& t = *m.info;
      if (m.is_se) {
        if (auto x = v.optional(t.se_key)) s.*t.se = x->number(0.0);
      } else if (t.optional) {
        if (auto x = v.optional(t.key)) t.set(s, x->number(0.0, kInf, t.positive));
      } else {
        t.set(s, v.required(t.key, kMissingFix).number(0.0, kInf, t.positive));
      }
    }
    return s;
  }

  static Profile::LocalCopy local_copy(const JsonCursor& v) {
    v.object();
    v.expect_keys({"ns_per_byte", "se_ns_per_byte", "transitions"}, kUnknownKeyFix);
    Profile::LocalCopy c;
    const JsonCursor ns = v.required("ns_per_byte", kMissingFix);
    c.ns_per_byte = ns.number(0.0);
    if (c.ns_per_byte > Profile::kMaxCopyNsPerByte)
      fail(ns,
           "copy cost " + json_quote(ns.json()) + " ns/B is slower than 0.1 GB/s (at most " +
               json_quote(json(Profile::kMaxCopyNsPerByte)) + ")",
           "refit with shardbench calibrate or remove local_copy");
    c.se_ns_per_byte = v.number_at("se_ns_per_byte", kMissingFix, 0.0);
    c.transitions = int(v.integer_at("transitions", kMissingFix, 1, kMaxInt));
    return c;
  }

  // docs/PROFILE_FORMAT.md "link_ceiling": {"GBps": x, "host_GBps": y (optional), "gpus": [NAME,
  // ...], "source": TEXT}.
  static Profile::LinkCeilingInfo link_ceiling(const JsonCursor& v) {
    v.object();
    v.expect_keys({"GBps", "host_GBps", "gpus", "source"}, kUnknownKeyFix);
    Profile::LinkCeilingInfo c;
    // Below 1 MB/s no GPU link exists (and the floor would overflow); above 1e6 GB/s neither.
    c.GBps = v.required("GBps", kMissingFix).number(1e-3, 1e6);
    // The host link is one of the GPU's links: at most the whole ceiling.
    if (auto h = v.optional("host_GBps")) c.host_GBps = h->number(1e-3, c.GBps);
    if (auto n = v.optional("gpus")) {
      n->array();
      for (std::size_t i = 0; i < n->size(); ++i) c.gpus.push_back((*n)[i].string());
    }
    if (auto s = v.optional("source")) c.source = s->string();
    return c;
  }

  // docs/PROFILE_FORMAT.md "ring_routes": {"source": TEXT, "rings": [{"hosts": H, "latency_us": x,
  // "share_GBps": y}, ...]}, ascending hosts >= 2, each once.
  static Profile::RingRoutes ring_routes(const JsonCursor& v) {
    v.object();
    v.expect_keys({"source", "hosts_order", "rings", "loopback_latency_us", "loopback_GBps"}, kUnknownKeyFix);
    Profile::RingRoutes r;
    if (auto s = v.optional("source")) r.source = s->string();
    if (auto l = v.optional("loopback_latency_us")) r.loopback_latency_us = l->number(0.0, 1e6);
    // (as share_GBps: below 1 MB/s is a unit mistake)
    if (auto b = v.optional("loopback_GBps")) r.loopback_GBps = b->number(1e-3, 1e6);
    if (auto h = v.optional("hosts_order")) {
      h->array();
      for (std::size_t i = 0; i < h->size(); ++i) r.hosts_order.push_back((*h)[i].string());
    }
    const JsonCursor rings = v.required("rings", kMissingFix);
    rings.array();
    if (rings.size() == 0) fail(rings, "no host counts", "give the table ring-routes wrote (hosts 2 and up)");
    for (std::size_t i = 0; i < rings.size(); ++i) {
      const JsonCursor e = rings[i];
      e.object();
      e.expect_keys({"hosts", "latency_us", "share_GBps", "share_skew_us", "hop_latency_us"}, kUnknownKeyFix);
      Profile::RingRoute x;
      x.hosts = int(e.integer_at("hosts", kMissingFix, 2, kMaxInt));
      // Two hosts are never 0 us apart (a route ring-routes found none for); a route of more
      // than a second, or a link below 1 MB/s, is a unit mistake.
      x.latency_us = e.required("latency_us", kMissingFix).number(1e-6, 1e6);
      x.share_GBps = e.required("share_GBps", kMissingFix).number(1e-3, 1e6);
      // 0: the flows sharing that link take routes of one latency. At most the longest route.
      if (auto k = e.optional("share_skew_us")) {
        x.share_skew_us = k->number(0.0, 1e6);
        if (*x.share_skew_us > x.latency_us * (1 + 1e-9))
          fail(*k, "share_skew_us " + json_quote(k->json()) + " exceeds latency_us " + json_quote(json(x.latency_us)),
               "two routes cannot differ by more than the longest (ring-routes writes it so)");
      }
      if (auto h = e.optional("hop_latency_us")) {
        h->array();
        if (h->size() != std::size_t(x.hosts))
          fail(*h, std::to_string(h->size()) + " hop latencies for a ring of " + std::to_string(x.hosts) +
                       " hosts",
               "give one per step, host i to host i+1 (ring-routes writes them so)");
        double longest = 0;
        for (std::size_t k = 0; k < h->size(); ++k) {
          x.hop_latency_us.push_back((*h)[k].number(1e-6, 1e6));
          longest = std::max(longest, x.hop_latency_us.back());
        }
        // The ring's longest route is its longest step (a hand-edited table that disagrees
        // would price the same ring two ways).
        if (std::abs(longest - x.latency_us) > 1e-6 * x.latency_us)
          fail(*h, "the longest hop latency " + json_quote(json(longest)) + " is not latency_us " +
                       json_quote(json(x.latency_us)),
               "make latency_us the largest hop latency (ring-routes writes them so)");
        // Two of the ring's flows differ by at most its hops' spread (2e-6: each rounded to 1e-6).
        const double spread = longest - *std::min_element(x.hop_latency_us.begin(), x.hop_latency_us.end());
        if (x.share_skew_us && *x.share_skew_us > spread + 2e-6)
          fail(e.required("share_skew_us", kMissingFix),
               "share_skew_us " + json_quote(json(*x.share_skew_us)) + " exceeds the hops' spread " +
                   json_quote(json(spread)),
               "two of the ring's flows cannot differ by more than its hops do (ring-routes writes it so)");
      }
      if (!r.rings.empty() && x.hosts <= r.rings.back().hosts)
        fail(e, "hosts " + std::to_string(x.hosts) + " after " + std::to_string(r.rings.back().hosts),
             "list each host count once, ascending (ring-routes writes them so)");
      r.rings.push_back(x);
    }
    return r;
  }

  // docs/PROFILE_FORMAT.md "mpi_selector": {"selector": NAME, "forced": {COLLECTIVE: ALGORITHM}}.
  static Profile::MpiSelector mpi_selector(const JsonCursor& v) {
    v.object();
    v.expect_keys({"selector", "forced"}, kUnknownKeyFix);
    Profile::MpiSelector s;
    const JsonCursor name = v.required("selector", kMissingFix);
    s.selector = name.string();
    if (s.selector.empty()) fail(name, "selector name is empty", "remove mpi_selector or name it");
    if (auto f = v.optional("forced")) {
      f->object();
      for (auto it = f->json().begin(); it != f->json().end(); ++it) {
        if (!find_collective(it.key()))
          fail(*f, "unknown collective '" + it.key() + "'", "use a collective table name");
        if (!it->is_string())
          fail(*f, "algorithm of '" + it.key() + "' is not a string", "fix the value");
        s.forced[it.key()] = it->get<std::string>();
      }
    }
    return s;
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
        fail(g,
             "group size " + std::to_string(n) +
                 " is not a multiple of hosts=" + std::to_string(m.hosts),
             "a group spanning h hosts has the same number of ranks on each; fix the value");
      if (!m.group_sizes.empty() && n <= m.group_sizes.back())
        fail(g, "group sizes must be sorted ascending without repeats",
             "sort them and drop duplicates");
      m.group_sizes.push_back(n);
    }
  }

  static void segments(const JsonCursor& segs, Model& m) {
    if (!segs.json().is_array() || segs.size() == 0)
      fail(segs, "expected a non-empty array of segments, got " + json_quote(segs.json()),
           "fix the value");
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
               std::string(s.s_lo < *prev.s_hi ? "segments overlap or are unsorted"
                                               : "gap between segments") +
                   ": s_lo " + json_quote(json(s.s_lo)) + " != previous s_hi " +
                   json_quote(json(*prev.s_hi)),
               "segments must be sorted by s_lo and contiguous (each s_lo equal to the previous "
               "s_hi)");
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
    if (!v.json().is_array())
      fail(v, "expected an array of numbers, got " + json_quote(v.json()), "fix the value");
    std::vector<double> out;
    for (std::size_t i = 0; i < v.size(); ++i) out.push_back(v[i].number(lo));
    return out;
  }

  static MeasuredCurve curve(const JsonCursor& v, const Model& m) {
    v.object();
    v.expect_keys({"group_size", "concurrent_groups", "bytes", "log_ratio", "kappa", "kappa_scale",
                   "noise", "shrink", "weight"},
                  kUnknownKeyFix);
    MeasuredCurve c;
    const JsonCursor gs = v.required("group_size", kMissingFix);
    c.group_size = int(gs.integer(1, kMaxInt));
    if (c.group_size % m.hosts != 0)
      fail(gs,
           "group size " + std::to_string(c.group_size) +
               " is not a multiple of hosts=" + std::to_string(m.hosts),
           "fix the value or regenerate the profile");
    c.concurrent_groups = int(v.integer_at("concurrent_groups", kMissingFix, 1, kMaxInt));
    const JsonCursor by = v.required("bytes", kMissingFix);
    c.bytes = numbers(by, 1.0);
    if (c.bytes.size() < 2)
      fail(by, "a curve needs at least 2 measured sizes", "fix the value or drop the curve");
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
      fail(lr,
           "has " + std::to_string(c.log_ratio.size()) + " entries, bytes has " +
               std::to_string(c.bytes.size()),
           "give one log ratio per measured size");
    if (c.kappa.size() != c.bytes.size())
      fail(ka,
           "has " + std::to_string(c.kappa.size()) + " entries, bytes has " +
               std::to_string(c.bytes.size()),
           "give one kappa per measured size");
    for (std::size_t i = 0; i < c.log_ratio.size(); ++i)
      if (std::abs(c.log_ratio[i]) > 50)
        fail(lr[i], "a log ratio beyond +-50 (a factor e^50 between measurement and model)",
             "regenerate the profile");
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
        fail(v, "a second curve for the same group size and concurrent groups",
             "keep one curve per class");
    return c;
  }

  static Model model(const JsonCursor& v) {
    v.expect_keys({"collective", "hosts", "concurrent_groups", "dtype", "group_sizes",
                   "effective_size", "segments", "quality", "domain", "curves", "extra"},
                  kUnknownKeyFix);
    Model m;
    const JsonCursor cc = v.required("collective", kMissingFix);
    const std::string cname = cc.string();
    auto c = find_collective(cname);
    if (!c) {
      std::string names;
      for (const auto& info : kCollectives)
        names += std::string(names.empty() ? "" : ", ") + std::string(info.name);
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
      if (!found)
        fail(dt, "unknown dtype '" + name + "'",
             "use null (pooled) or f32, f64, f16, bf16, i32, i64, u8");
    }
    group_sizes(v.required("group_sizes", kMissingFix), m);
    const JsonCursor ec = v.required("effective_size", kMissingFix);
    const std::string es = ec.string();
    auto e = parse_effective_size(es);
    if (!e)
      fail(ec, "unknown effective-size rule '" + es + "'", "use \"total\" or \"n_times_max\"");
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
           std::string("this reader reads \"") + kProfileSchema +
               "\" files (is this a results or sweep file?)");
    const JsonCursor ver = v.required("version", kMissingFix);
    if (!ver.json().is_number_integer() || ver.json().get<std::int64_t>() != kProfileVersion)
      fail(ver, "unsupported version " + json_quote(ver.json()),
           "this reader reads version " + std::to_string(kProfileVersion) +
               "; use the shardcal that wrote the file or regenerate it with this one");
  }

  static Profile profile(const JsonCursor& v) {
    v.object();
    check_format(v);
    v.expect_keys(
        {"schema", "version", "cluster", "created", "shardcal_version", "backend", "memory",
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
      fail(cr, "'" + formats::utf8_prefix(p.created, 40) + "' is not an ISO 8601 UTC time",
           "write it like 2026-11-23T16:00:00Z");
    p.shardcal_version = v.string_at("shardcal_version", kMissingFix);
    const JsonCursor be = v.required("backend", kMissingFix);
    p.backend = be.string();
    if (p.backend != "mpi" && p.backend != "nccl" && p.backend != "sim" && p.backend != "model")
      fail(be, "unknown backend '" + p.backend + "'", "use mpi, nccl, sim or model");
    const JsonCursor me = v.required("memory", kMissingFix);
    p.memory = me.string();
    if (p.memory != "host" && p.memory != "cuda")
      fail(me, "unknown memory '" + p.memory + "'", "use host or cuda");
    json extra = json::object();
    for (const char* k : {"provenance", "fit_method", "extra"})
      if (auto x = v.optional(k)) extra[k] = x->object().json();
    if (!extra.empty()) p.json_extra = extra.dump();
    if (auto x = v.optional("local_copy")) p.local_copy = local_copy(*x);
    // Under "extra" (free-form), so that readers older than the field still read the profile.
    if (auto x = v.optional("extra"))
      if (auto s = x->optional("mpi_selector")) p.mpi_selector = mpi_selector(*s);
    if (auto x = v.optional("extra"))
      if (auto s = x->optional("link_ceiling")) p.link_ceiling = link_ceiling(*s);
    if (auto x = v.optional("extra"))
      if (auto s = x->optional("ring_routes")) p.ring_routes = ring_routes(*s);
    const JsonCursor models = v.required("models", kMissingFix);
    if (!models.json().is_array())
      fail(models, "expected an array of models, got " + json_quote(models.json()),
           "fix the value");
    std::set<std::tuple<int, int, int, int>> seen;
    for (std::size_t i = 0; i < models.size(); ++i) {
      Model m = model(models[i]);
      auto key = std::make_tuple(int(m.collective), m.hosts, m.concurrent_groups,
                                 m.dtype ? int(*m.dtype) : -1);
      if (!seen.insert(key).second)
        fail(models[i],
             "a second model for the same collective, hosts, concurrent_groups and dtype",
             "keep one model per class (merge or delete the duplicate)");
      if (p.link_ceiling) {
        m.link_ceiling_GBps = p.link_ceiling->GBps;
        m.host_link_GBps = p.link_ceiling->host_GBps;
      }
      m.channel_ramp = p.backend == "nccl";
      p.models.push_back(std::move(m));
    }
    return p;
  }
};

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

Domain effective_domain(const Model& m) {
  if (m.domain) return *m.domain;
  Domain d;
  d.hosts = {double(m.hosts), double(m.hosts)};
  d.concurrent_groups = {double(m.concurrent_groups), double(m.concurrent_groups)};
  if (!m.group_sizes.empty())
    d.group_size = {double(m.group_sizes.front()), double(m.group_sizes.back())};
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

Profile::RingRoutes read_ring_routes(const std::string& path) {
  const std::string text = formats::read_text_file(
      path, "ring routes", "give the routes.json that ring-routes (or host-series.sh) wrote");
  const formats::JsonSource src(path, text);
  const json doc = formats::parse_json(
      text, path, "the routes file is not valid JSON: regenerate it with ring-routes", kMaxDepth,
      "a routes file holds finite numbers only: regenerate it with ring-routes");
  const JsonCursor v(src, doc, {}, kValueFix);
  v.object();
  v.expect_keys({"format", "source", "hosts_order", "rings", "loopback_latency_us", "loopback_GBps"},
                "remove the key (a routes file holds format, source, hosts_order, rings, "
                "loopback_latency_us and loopback_GBps)");
  const JsonCursor f = v.required("format", "add \"format\": \"shardcal-ring-routes/1\"");
  if (f.string() != "shardcal-ring-routes/1")
    Reader::fail(f, "format " + json_quote(f.json()) + " is not shardcal-ring-routes/1",
         "give a file that ring-routes wrote (docs/PROFILE_FORMAT.md \"ring_routes\")");
  json inner = json::object();
  if (auto s = v.optional("source")) inner["source"] = s->string();
  if (auto h = v.optional("hosts_order")) inner["hosts_order"] = h->json();
  inner["rings"] = v.required("rings", kMissingFix).json();
  if (auto l = v.optional("loopback_latency_us")) inner["loopback_latency_us"] = l->json();
  if (auto b = v.optional("loopback_GBps")) inner["loopback_GBps"] = b->json();
  return Reader::ring_routes(JsonCursor(src, inner, {},
                                        "fix the value or regenerate the file with ring-routes "
                                        "(docs/PROFILE_FORMAT.md \"ring_routes\")"));
}

Profile read_profile(const std::string& path) {
  const std::string text = formats::read_text_file(
      path, "profile", "check the path (built-in profiles are in configs/profiles/)");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw Error(path + ": the profile file is empty; regenerate it with shardbench calibrate");
  return parse_profile(text, path);
}

}  // namespace shardcal::calib

// The profile writer (shardcal.profile v1): profile_to_json's canonical text, which it reads back
// before returning it, and write_profile_atomic. Format: docs/PROFILE_FORMAT.md.
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "shardcal/calibrate/cost_model.hpp"
#include "shardcal/calibrate/profile_io.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/atomic_write.hpp"

namespace shardcal::calib {

namespace {

using ojson = nlohmann::ordered_json;

ojson range_json(const Range& r, bool integral) {
  auto num = [&](double x) { return integral ? ojson(std::int64_t(x)) : ojson(x); };
  ojson a = ojson::array();
  a.push_back(num(r.lo));
  if (r.hi)
    a.push_back(num(*r.hi));
  else
    a.push_back(nullptr);
  return a;
}

ojson opt(const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); }

}  // namespace

// The writer's json_extra members: text that must parse to a JSON object.
static ojson parse_json_extra(const std::string& text, const char* what) {
  ojson v;
  try {
    v = ojson::parse(text);
  } catch (const ojson::exception& e) {
    throw Error(std::string("profile_to_json: ") + what + " is not valid JSON: " + e.what());
  }
  if (!v.is_object())
    throw Error(std::string("profile_to_json: ") + what + " must be a JSON object");
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
    if (!std::isfinite(c.ns_per_byte) || c.ns_per_byte < 0 ||
        c.ns_per_byte > Profile::kMaxCopyNsPerByte || !std::isfinite(c.se_ns_per_byte) ||
        c.se_ns_per_byte < 0 || c.transitions < 1)
      throw Error(
          "profile_to_json: local_copy needs finite ns_per_byte, se_ns_per_byte >= 0 and "
          "transitions >= 1");
    j["local_copy"] = {{"ns_per_byte", c.ns_per_byte},
                       {"se_ns_per_byte", c.se_ns_per_byte},
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
        throw Error(std::string("profile_to_json: Profile::json_extra member '") + k +
                    "' must be an object");
      j[k] = *it;
    }
  }
  // extra.mpi_selector (docs/PROFILE_FORMAT.md): under "extra", which readers older than the field
  // accept as free-form; the typed value wins over a copy read back into json_extra.
  if (p.mpi_selector) {
    ojson sel;
    sel["selector"] = p.mpi_selector->selector;
    if (!p.mpi_selector->forced.empty()) {
      ojson forced = ojson::object();
      for (const auto& [k, a] : p.mpi_selector->forced) forced[k] = a;
      sel["forced"] = forced;
    }
    if (!j.contains("extra")) j["extra"] = ojson::object();
    j["extra"].erase("mpi_selector");  // last, whatever order a reader kept (a stable round trip)
    j["extra"]["mpi_selector"] = sel;
  } else if (j.contains("extra")) {
    j["extra"].erase("mpi_selector");
  }
  // extra.link_ceiling, likewise under "extra".
  if (p.link_ceiling) {
    ojson c;
    c["GBps"] = p.link_ceiling->GBps;
    if (p.link_ceiling->host_GBps > 0) c["host_GBps"] = p.link_ceiling->host_GBps;
    c["gpus"] = p.link_ceiling->gpus;
    c["source"] = p.link_ceiling->source;
    if (!j.contains("extra")) j["extra"] = ojson::object();
    j["extra"].erase("link_ceiling");
    j["extra"]["link_ceiling"] = c;
  } else if (j.contains("extra")) {
    j["extra"].erase("link_ceiling");
  }
  // extra.ring_routes, likewise.
  if (j.contains("extra")) j["extra"].erase("ring_routes");
  if (p.ring_routes) {
    ojson r;
    r["source"] = p.ring_routes->source;
    if (!p.ring_routes->hosts_order.empty()) r["hosts_order"] = p.ring_routes->hosts_order;
    ojson rings = ojson::array();
    for (const auto& x : p.ring_routes->rings) {
      ojson e;
      e["hosts"] = x.hosts;
      e["latency_us"] = x.latency_us;
      e["share_GBps"] = x.share_GBps;
      if (x.share_skew_us) e["share_skew_us"] = *x.share_skew_us;
      if (!x.hop_latency_us.empty()) e["hop_latency_us"] = x.hop_latency_us;
      rings.push_back(e);
    }
    r["rings"] = rings;
    if (p.ring_routes->loopback_latency_us) r["loopback_latency_us"] = *p.ring_routes->loopback_latency_us;
    if (p.ring_routes->loopback_GBps) r["loopback_GBps"] = *p.ring_routes->loopback_GBps;
    if (!j.contains("extra")) j["extra"] = ojson::object();
    j["extra"]["ring_routes"] = r;
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
      // The terms (cost_model.hpp kTermInfo) in the canonical order; an absent SE or optional
      // term is left out (NaN: refused by the self-check).
      for (const TermMember& mb : kSegmentTermMembers) {
        const std::optional<double> v = mb.is_se ? s.*mb.info->se : mb.info->get(s);
        if (v) js[mb.key()] = *v;
      }
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

}  // namespace shardcal::calib

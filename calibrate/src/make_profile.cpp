// The profile a calibration writes: models, provenance, fit method, decisions and comparisons
// (docs/PROFILE_FORMAT.md, docs/CALIBRATION.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "fit_text.hpp"
#include "shardcal/calibrate/fit.hpp"
#include "shardcal/calibrate/link_ceiling.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/utc_time.hpp"

namespace shardcal::calib {

using nlohmann::json;
using fit_text::eff_name;
using fit_text::fmt;

// Which algorithms the MPI library chooses (Profile::mpi_selector), where every context of an
// MPI sweep says so alike: SimGrid SMPI's "simulation" cfg smpi/coll-selector:NAME, and the
// collectives forced to one algorithm there (smpi/allgather:NTSLR). A real MPI's choice (Open MPI's
// version, its coll_tuned MCA parameters) is not recorded by the sweep: none.
static std::optional<Profile::MpiSelector> mpi_selector_of(const ResultSet& rs) {
  if (rs.backend != "mpi") return std::nullopt;
  static const std::map<std::string, std::string> smpi_names = {
      {"allgather", "all_gather"},
      {"allreduce", "all_reduce"},
      {"reduce_scatter", "reduce_scatter"},
      {"alltoall", "all_to_all"},
      {"bcast", "broadcast"},
      {"gather", "gather"},
      {"scatter", "scatter"}};
  std::optional<Profile::MpiSelector> out;
  bool first = true;
  for (const auto& f : rs.files)
    for (const auto& c : f.context_records) {
      std::optional<Profile::MpiSelector> s;
      if (c.is_object() && c.contains("simulation") && c["simulation"].is_object() &&
          c["simulation"].contains("cfg") && c["simulation"]["cfg"].is_array()) {
        Profile::MpiSelector sel;
        for (const auto& e : c["simulation"]["cfg"]) {
          if (!e.is_string()) continue;
          const std::string kv = e.get<std::string>();
          const auto colon = kv.find(':');
          if (kv.rfind("smpi/", 0) != 0 || colon == std::string::npos) continue;
          const std::string key = kv.substr(5, colon - 5), val = kv.substr(colon + 1);
          if (key == "coll-selector")
            sel.selector = val;
          else if (auto it = smpi_names.find(key); it != smpi_names.end())
            sel.forced[it->second] = val;
        }
        if (!sel.selector.empty()) s = sel;
      }
      if (first)
        out = s;
      else if (!s || !out || s->selector != out->selector || s->forced != out->forced)
        return std::nullopt;
      first = false;
    }
  return out;
}

// The GPUs' link ceiling (Profile::link_ceiling): where every context record names its GPUs
// (imported logs and traces: import.gpus) and the table knows each, the slowest GPU's (every
// rank is bounded by its own links). Refuted -- none, and `why` says so -- when a measured point
// ran faster than the floor it implies (a GPU the table underrates, or a log's wrong size unit).
static std::optional<Profile::LinkCeilingInfo> link_ceiling_of(const ResultSet& rs, std::string& why) {
  std::set<std::string> names;
  for (const auto& f : rs.files)
    for (const auto& c : f.context_records) {
      std::size_t named = 0;
      if (c.is_object() && c.contains("import") && c["import"].is_object() &&
          c["import"].contains("gpus") && c["import"]["gpus"].is_array())
        for (const json& g : c["import"]["gpus"])
          if (g.is_object() && g.contains("name") && g["name"].is_string() &&
              !g["name"].get<std::string>().empty()) {
            names.insert(g["name"].get<std::string>());
            ++named;
          }
      if (named == 0) return std::nullopt;  // a context without GPU names: not known
    }
  if (names.empty()) return std::nullopt;
  std::optional<Profile::LinkCeilingInfo> out;
  double host = std::numeric_limits<double>::infinity();  // the slowest host link; 0: none bounds
  for (const auto& name : names) {
    const auto c = gpu_link_ceiling(name);
    if (!c) return std::nullopt;
    if (!out || c->GBps < out->GBps) out = Profile::LinkCeilingInfo{c->GBps, {}, c->source};
    host = std::min(host, c->host_GBps);
  }
  out->host_GBps = host;
  out->gpus.assign(names.begin(), names.end());
  for (const auto& p : rs.collectives) {
    if (p.samples_s.empty()) continue;
    const double fastest_us = *std::min_element(p.samples_s.begin(), p.samples_s.end()) * 1e6;
    // At bytes_eff (n x the largest shard), the size a model prices an uneven point at: a point
    // faster than that floor would be priced above its own measurement.
    const double floor_us =
        link_floor_us(collective_info(p.op).link_floor_factor(p.group_size), p.bytes_eff, out->GBps);
    if (fastest_us < floor_us) {
      why = "link ceiling " + fmt("%.4g", out->GBps) + " GB/s (" + out->source + ") dropped: " + p.label +
            " ran in " + fmt("%.4g", fastest_us) + " us, below the " + fmt("%.4g", floor_us) + " us it allows (" +
            p.where + ")";
      return std::nullopt;
    }
  }
  // The host link's floor, for points whose group spans hosts (r ranks on its least-populated
  // host, n / hosts at the most): refuted alone, the rest of the ceiling stands.
  for (const auto& p : rs.collectives) {
    if (p.samples_s.empty() || out->host_GBps <= 0 || p.hosts_spanned <= 1) continue;
    const double fastest_us = *std::min_element(p.samples_s.begin(), p.samples_s.end()) * 1e6;
    const double floor_us = link_floor_us(
        collective_info(p.op).host_floor_factor(p.group_size, p.group_size / p.hosts_spanned), p.bytes_eff,
        out->host_GBps);
    if (fastest_us < floor_us) {
      why = "host-link floor " + fmt("%.4g", out->host_GBps) + " GB/s dropped (the rest of the ceiling kept): " +
            p.label + " ran in " + fmt("%.4g", fastest_us) + " us, below the " + fmt("%.4g", floor_us) +
            " us it allows across hosts (" + p.where + "; GPUs whose NVLink spans hosts?)";
      out->host_GBps = 0;
      break;
    }
  }
  return out;
}

Profile make_profile(const ResultSet& rs, const Calibration& cal, const std::string& cluster) {
  Profile p;
  p.cluster = cluster;
  p.created = formats::utc_now_iso8601();
  p.backend = rs.backend;
  p.memory = rs.memory;
  p.shardcal_version = "unknown";
  for (const auto& f : rs.files)
    for (const auto& c : f.contexts)
      if (c.contains("shardcal_version") && c["shardcal_version"].is_string())
        p.shardcal_version = c["shardcal_version"].get<std::string>();
  p.models = cal.models;  // (channel_ramp set by the fitter from the same backend)
  p.mpi_selector = mpi_selector_of(rs);
  std::string ceiling_refuted;
  p.link_ceiling = link_ceiling_of(rs, ceiling_refuted);
  if (p.link_ceiling)
    for (Model& m : p.models) {
      m.link_ceiling_GBps = p.link_ceiling->GBps;
      m.host_link_GBps = p.link_ceiling->host_GBps;
    }
  if (cal.local_copy.used)
    p.local_copy = Profile::LocalCopy{cal.local_copy.ns_per_byte, cal.local_copy.se_ns_per_byte,
                                      cal.local_copy.transitions};
  const FitOptions& o = cal.options;
  json extra;
  json files = json::array();
  for (const auto& f : rs.files)
    files.push_back({{"path", f.path}, {"sha256", f.sha256}, {"contexts", f.contexts}});
  extra["provenance"] = {{"results", files},
                         {"point_records", rs.point_records},
                         {"excluded_wrong", rs.skipped_wrong},
                         {"excluded_failed", rs.skipped_failed},
                         {"other_mode", cal.points_other_mode},
                         // The timing mode the models describe, and what it means for a mode
                         // that is not a benchmark's (imported torch.profiler traces).
                         {"timing_mode", o.mode}};
  if (o.mode == "in_job")
    extra["provenance"]["timing_mode_note"] =
        "in-job NCCL kernel times imported from torch.profiler traces: per call the shortest "
        "kernel over the ranks whose traces were given (docs/IMPORT.md)";
  extra["fit_method"] = {
      {"method",
       "backbone: piecewise ring model t = alpha + alpha_step*steps(n) + S_eff*f(n)/B per size "
       "segment (+ S_eff*f(n)*(c-1)*contention/B where classes of several concurrencies c "
       "pool); weighted least squares of relative residuals with active-set bounds (alpha, "
       "alpha_step >= 0, B finite); Huber IRLS; segment ends by dynamic programming, boundaries "
       "per boundary_rule; non-decreasing across boundaries except where every measured series "
       "drops by observed_drop_min; segment count by k-fold held-out error over sizes. Measured "
       "curves: per measured class the log ratio of measured time to backbone at each measured "
       "size (spikes replaced, shrunk towards the backbone by signal-to-noise, pooled to stay "
       "non-decreasing), interpolated in log size along the backbone's shape (across a switch: "
       "the log-log line); 95 % intervals from measurement noise, leave-one-size-out "
       "interpolation errors, shrinkage misfit and the distance between backbone shape and "
       "log-log line (docs/CALIBRATION.md \"The model\", \"Prediction intervals\", \"Model and "
       "fit (the backbone)\")"},
      {"timing_mode", o.mode},
      {"y", "median of the slowest-rank samples (imported logs: the tool's mean per size)"},
      {"huber_k", o.huber_k},
      {"folds", o.folds},
      {"max_segments", o.max_segments},
      {"min_sizes", o.min_sizes},
      {"min_sizes_per_segment", o.min_sizes_per_segment},
      {"more_segments_gain", o.more_segments_gain},
      {"observed_drop_min", o.observed_drop_min},
      {"boundary_at_power_of_two", o.boundary_at_power_of_two},
      {"boundary_rule",
       "lines crossing inside the gap (either steeper; the crossing that keeps every measured "
       "group size monotone): there; else a power of two inside the gap if "
       "boundary_at_power_of_two; else the geometric middle"}};
  json eff = json::array();
  for (const auto& e : cal.effective_size) {
    json j = {{"collective", collective_info(e.collective).name},
              {"points", e.points},
              {"chosen", eff_name(e.chosen)},
              {"measured", e.measured}};
    if (e.measured) {
      j["mape_total"] = e.mape_total;
      j["mape_n_times_max"] = e.mape_n_max;
    }
    eff.push_back(j);
  }
  json more;
  more["effective_size_comparison"] = eff;
  json dts = json::array();
  for (const auto& d : cal.dtypes) {
    json names = json::array();
    for (DType t : d.dtypes) names.push_back(std::string(dtype_name(t)));
    dts.push_back({{"collective", collective_info(d.collective).name},
                   {"hosts", d.hosts},
                   {"concurrent_groups", d.concurrent_groups},
                   {"dtypes", names},
                   {"pooled", d.pooled},
                   {"detail", d.detail}});
  }
  more["dtype_pooling"] = dts;
  json cls = json::array();
  for (const auto& d : cal.class_pooling) {
    json res = json::array();
    for (const auto& r : d.class_residuals)
      res.push_back({{"group_size", r.group_size},
                     {"concurrent_groups", r.concurrent_groups},
                     {"median_rel_residual", r.median},
                     {"se", std::isfinite(r.se) ? json(r.se) : json(nullptr)},
                     {"differs", r.differs}});
    cls.push_back({{"collective", collective_info(d.collective).name},
                   {"hosts", d.hosts},
                   {"test", "per class (group size, concurrent groups) with >= 3 points: median "
                            "relative residual under the pooled fit, SE from the pooled robust "
                            "scale; split when > " +
                                fmt("%.0f%%", o.class_bias_min * 100) + " and > 3 SE"},
                   {"pooled", d.pooled},
                   {"contention", d.contention},
                   {"contention_z", d.contention_z},
                   {"contention_effect", d.contention_effect},
                   {"classes", res},
                   {"split_off", d.split_off},
                   {"detail", d.detail}});
    if (!d.contention_fallback.empty()) cls.back()["contention_fallback"] = d.contention_fallback;
    if (d.holdout_pooled && d.holdout_separate) {
      cls.back()["holdout_pooled"] = *d.holdout_pooled;
      cls.back()["holdout_separate"] = *d.holdout_separate;
    }
  }
  more["class_pooling"] = cls;
  json unf = json::array();
  for (const auto& u : cal.unfitted)
    unf.push_back({{"collective", collective_info(u.collective).name},
                   {"hosts", u.hosts},
                   {"concurrent_groups", u.concurrent_groups},
                   {"dtype", u.dtype ? json(std::string(dtype_name(*u.dtype))) : json(nullptr)},
                   {"group_sizes", u.group_sizes},
                   {"sizes", u.sizes},
                   {"reason", u.reason}});
  more["unfitted_models"] = unf;
  const LocalCopyFit& lc = cal.local_copy;
  json tr = {{"count", cal.transitions.size()},
             {"mape", cal.composition_mape ? json(*cal.composition_mape) : json(nullptr)},
             {"copy_cost",
              {{"local_only_transitions", lc.transitions},
               {"fitted", lc.fitted},
               {"adopted", lc.used},
               {"alpha_us", lc.fitted ? json(lc.alpha_us) : json(nullptr)},
               {"ns_per_byte", lc.fitted ? json(lc.ns_per_byte) : json(nullptr)},
               {"se_ns_per_byte", lc.fitted ? json(lc.se_ns_per_byte) : json(nullptr)},
               {"clamped", lc.clamped},
               {"built_in_ns_per_byte", lc.default_ns_per_byte},
               {"mape_at_built_in",
                lc.composition_mape_default ? json(*lc.composition_mape_default) : json(nullptr)},
               {"mape_at_fitted",
                lc.composition_mape_fitted ? json(*lc.composition_mape_fitted) : json(nullptr)}}}};
  json items = json::array();
  for (const auto& t : cal.transitions)
    items.push_back({{"transition", t.label},
                     {"comm_steps", t.comm_steps},
                     {"measured_us", t.measured_us},
                     {"predicted_us", t.predicted_us},
                     {"rel_error", t.rel_error},
                     {"extrapolated", t.extrapolated}});
  tr["items"] = items;
  more["transition_composition"] = tr;
  if (!ceiling_refuted.empty()) more["link_ceiling_dropped"] = ceiling_refuted;
  extra["extra"] = more;
  p.json_extra = extra.dump();
  return p;
}

}  // namespace shardcal::calib

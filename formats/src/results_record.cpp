// The one writer of the results file's point record (results_record.hpp, docs/RESULTS_FORMAT.md).
#include "shardcal/formats/results_record.hpp"

#include "shardcal/collectives.hpp"
#include "shardcal/formats/schemas.hpp"

namespace shardcal::formats {

using nlohmann::json;

json SampleStats::to_json() const {
  return {{"n", n},
          {"min", min},
          {"p10", p10},
          {"p50", p50},
          {"p90", p90},
          {"p99", p99},
          {"max", max},
          {"mean", mean},
          {"stddev", stddev},
          {"median_ci", {{"lo", ci_lo}, {"hi", ci_hi}, {"level", ci_level}, {"coverage", ci_coverage},
                         {"method", "order_statistics_binomial"}}},
          {"rel_ci_halfwidth", rel_ci_halfwidth()}};
}

json step_traffic_json(const StepTraffic& t) {
  json j;
  if (t.collective) {
    const auto& info = collective_info(*t.collective);
    // The call the executor makes, chosen per group: the plain collective in every group whose
    // counts are even, else the v-form; "mixed" when the groups differ (plain_groups says how
    // many make the plain call).
    j["call"] = t.plain_groups == t.groups ? std::string(info.name)
                : t.plain_groups == 0      ? std::string(info.name) + "v"
                                           : std::string("mixed");
    j["bytes_convention"] = std::string(info.bytes_convention);
  } else {
    j["call"] = "none";
    j["bytes_convention"] = "nothing moves (local step)";
  }
  j["groups"] = t.groups;
  j["group_size"] = t.group_size;
  j["counts"] = t.counts;
  j["heaviest_group"] = t.heaviest_group;
  j["groups_identical"] = t.groups_identical;
  j["uniform"] = t.uniform;
  j["plain_groups"] = t.collective ? t.plain_groups : 0;
  j["heaviest_uniform"] = t.heaviest_uniform;
  j["elem_size"] = t.elem_size;
  j["bytes"] = t.bytes;
  j["max_send_bytes"] = t.max_send_bytes;
  j["max_recv_bytes"] = t.max_recv_bytes;
  j["max_copy_bytes"] = t.max_copy_bytes;
  j["max_out_bytes"] = t.max_out_bytes;
  return j;
}

namespace {

template <class T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json transition_json(const TransitionRecord& t) {
  json steps = json::array();
  for (const PlanStepRecord& s : t.plan) {
    json step = {{"mesh_dim", s.mesh_dim}, {"collective", s.collective}, {"from", s.from}, {"to", s.to}};
    step.update(step_traffic_json(s.traffic));
    step["hosts_spanned"] = s.hosts_spanned;
    if (s.predicted_us) step["predicted_us"] = *s.predicted_us;
    steps.push_back(std::move(step));
  }
  json j = {{"from", t.from}, {"to", t.to}, {"from_given", t.from_given}, {"to_given", t.to_given},
            {"shape", t.shape}, {"plan", steps}, {"planner", t.planner}};
  if (t.predicted_us) j["predicted_us"] = *t.predicted_us;
  return j;
}

json timing_json(const PointTiming& t) {
  json j = {{"mode", t.mode},
          {"ops_per_sample", t.ops_per_sample},
          {"warmup", or_null(t.warmup)},
          {"buffer_slots", t.buffer_slots},
          {"barrier", t.barrier},
          {"timer", t.timer},
          {"reduction", t.reduction},
          {"stop_reason", t.stop_reason},
          {"elapsed_s", or_null(t.elapsed_s)}};
  if (t.start_window_us)
    j["start"] = {{"kind", "window"}, {"window_us", *t.start_window_us},
                  {"late_samples", t.late_samples.value_or(0)},
                  {"retried_samples", t.retried_samples.value_or(0)}};
  return j;
}

}  // namespace

json to_json(const ContextRecord& c) {
  json ctx;
  ctx["type"] = "context";
  ctx["schema"] = kResultsSchema;
  ctx["version"] = kResultsVersion;
  ctx["date"] = c.date;
  ctx["command_line"] = c.command_line;
  ctx["config_path"] = c.config_path;
  ctx["config_hash"] = c.config_hash;
  ctx["config"] = c.config;
  ctx["backend"] = c.backend;
  ctx["world"] = c.world;
  ctx["memory"] = c.memory;
  json hosts = json::array(), per_host = json::array();
  for (const HostRecord& h : c.hosts) {
    hosts.push_back({{"name", h.name}, {"ranks", h.ranks}});
    per_host.push_back(h.ranks.size());
  }
  ctx["hosts"] = hosts;
  ctx["n_hosts"] = c.hosts.size();
  ctx["ranks_per_host"] = per_host;
  ctx["library_versions"] = c.library_versions;
  ctx["backend_settings"] = c.backend_settings;
  ctx["shardcal_version"] = c.shardcal_version;
  ctx["git_revision"] = c.git_revision;
  ctx["git_dirty"] = or_null(c.git_dirty);
  ctx["points_total"] = c.points_total;
  if (!c.planner.is_null()) ctx["planner"] = c.planner;
  ctx["timing_method"] = c.timing_method;
  if (!c.slurm.is_null()) ctx["slurm"] = c.slurm;
  if (!c.simulation.is_null()) ctx["simulation"] = c.simulation;
  if (!c.shard.is_null()) ctx["shard"] = c.shard;
  if (!c.import.is_null()) ctx["import"] = c.import;
  return ctx;
}

json to_json(const PointRecord& r) {
  json rec;
  rec["type"] = "point";
  rec["index"] = r.index;
  rec["key"] = r.key;
  rec["point"] = r.point;
  if (r.transition) {
    rec["transition"] = transition_json(*r.transition);
  } else {
    rec["collective"] = r.collective;
    rec["variant"] = r.variant;
    if (r.root) rec["root"] = *r.root;
    rec["counts"] = r.counts;
    rec["bytes_eff"] = r.bytes_eff;
    rec["algbw_eff_GBps"] = r.algbw_eff_GBps;
  }
  rec["group_size"] = r.group_size;
  rec["groups"] = r.groups;
  rec["hosts_spanned"] = r.hosts_spanned;
  rec["max_ranks_per_host"] = r.max_ranks_per_host;
  rec["elem_size"] = r.elem_size;
  rec["bytes"] = r.bytes;
  rec["bytes_convention"] = r.bytes_convention;
  rec["bytes_total"] = r.bytes_total;
  rec["bytes_max_rank"] = r.bytes_max_rank;
  rec["stats"] = r.stats.to_json();
  if (r.rank_means)
    rec["stats"]["rank_means"] = {
        {"max", r.rank_means->max}, {"mean", r.rank_means->mean}, {"min", r.rank_means->min}};
  rec["algbw_GBps"] = r.algbw_GBps;
  // A plan mixes collectives: no single bus factor.
  rec["busbw_GBps"] = r.transition ? json(nullptr) : json(r.busbw_GBps);
  rec["busbw_factor"] = r.transition ? json(nullptr) : json(r.busbw_factor);
  rec["timing"] = timing_json(r.timing);
  rec["samples_s"] = r.samples_s;
  rec["wrong"] = or_null(r.wrong);
  if (!r.import.is_null()) rec["import"] = r.import;
  return rec;
}

}  // namespace shardcal::formats

#include "sweep/sweep.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <cstdlib>
#include <cstdio>
#include <set>
#include <sstream>

#include "shardcal/check.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/floor_check.hpp"
#include "shardcal/formats/results_record.hpp"
#include "shardcal/formats/results_writer.hpp"
#include "shardcal/formats/schemas.hpp"
#include "shardcal/formats/utc_time.hpp"
#include "shardcal/hash.hpp"
#include "shardcal/launch.hpp"
#include "shardcal/mesh_comm.hpp"
#include "shardcal/placement.hpp"
#include "shardcal/redistribute.hpp"
#include "shardcal/topology.hpp"
#include "sweep/progress.hpp"
#include "sweep/provenance.hpp"
#include "sweep/runner.hpp"
#include "sweep/signals.hpp"
#include "sweep/simulation_env.hpp"
#include "sweep/slurm_env.hpp"
#include "sweep/stats.hpp"

namespace shardbench::sweep {

using nlohmann::json;
using shardcal::Communicator;
using shardcal::Error;
using shardcal::fnv1a64;
using shardcal::formats::context_differences;
using shardcal::formats::host_renames;
using shardcal::formats::PointRecord;
using shardcal::formats::read_for_resume;
using shardcal::formats::ResultsFile;
using shardcal::formats::ResumeState;

namespace {

// Hosts and ranks per host of the groups along `dims` (the link class of the calibrator): the
// most hosts any group spans, and the most ranks one host holds in such a group.
shardcal::GroupSpan dims_span(const shardcal::DeviceMesh& mesh, const std::vector<int>& dims,
                              const shardcal::Topology& topo) {
  shardcal::GroupSpan most;
  for (int r = 0; r < mesh.size(); ++r) {
    if (mesh.group_position(r, dims) != 0) continue;  // one visit per group
    const shardcal::GroupSpan g = shardcal::group_span(topo, mesh.group(r, dims));
    most.hosts = std::max(most.hosts, g.hosts);
    most.max_ranks_per_host = std::max(most.max_ranks_per_host, g.max_ranks_per_host);
  }
  return most;
}

shardcal::formats::PointTiming point_timing(const SweepConfig& cfg, const Point& p,
                                            const Measurement& m) {
  shardcal::formats::PointTiming t;
  t.mode = std::string(mode_name(p.mode));
  t.ops_per_sample = m.depth;
  t.warmup = cfg.warmup;
  t.buffer_slots = m.slots;
  if (cfg.window_start) {
    t.barrier = "none: window start (rank 0 broadcasts a start time on a clock every rank shares, "
                "each rank waits until it; a sample runs from that start)";
    t.start_window_us = m.start_window_us;
    t.late_samples = m.late_samples;
    t.retried_samples = m.retried_samples;
  } else {
    t.barrier = "world, untimed, before every sample";
  }
  t.timer = m.timer;
  t.reduction = "max over ranks per sample";
  t.stop_reason = m.stop_reason;
  t.elapsed_s = m.elapsed_s;
  return t;
}

std::string human_time(double s) {
  char buf[32];
  if (s < 1e-3) std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  else if (s < 1.0) std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

// The context record of this run (line 1 of a new file; appended on --resume-anyway).
shardcal::formats::ContextRecord make_context(const SweepJob& job, Communicator& world,
                                              const shardcal::Topology& topo,
                                              std::size_t points_total) {
  const SweepConfig& cfg = job.config;
  shardcal::formats::ContextRecord ctx;
  ctx.date = shardcal::formats::utc_now_iso8601();
  ctx.command_line = job.command_line;
  ctx.config_path = job.config_path;
  ctx.config_hash = cfg.hash();
  ctx.config = cfg.json;
  ctx.backend = world.backend();
  ctx.world = world.size();
  ctx.memory = world.memory().kind() == shardcal::MemoryKind::Cuda ? "cuda" : "host";
  for (int hi = 0; hi < topo.num_hosts; ++hi) {
    shardcal::formats::HostRecord h;
    for (std::size_t r = 0; r < topo.host_of_rank.size(); ++r)
      if (topo.host_of_rank[r] == hi) {
        if (h.ranks.empty()) h.name = topo.hostnames[r];
        h.ranks.push_back(int(r));
      }
    ctx.hosts.push_back(std::move(h));
  }
  for (const auto& [k, v] : job.library_versions) {
    std::string text = v;  // some libraries report a trailing NUL or newline: keep it clean
    while (!text.empty() && (text.back() == '\0' || std::isspace(static_cast<unsigned char>(text.back()))))
      text.pop_back();
    ctx.library_versions[k] = text;
  }
  for (const auto& [k, v] : shardcal::backend_settings(world.backend())) ctx.backend_settings[k] = v;
  ctx.shardcal_version = shardcal_version();
  ctx.git_revision = git_revision();
  if (git_dirty() >= 0) ctx.git_dirty = git_dirty() == 1;
  ctx.points_total = points_total;
  ctx.planner = job.planner->describe(job.planner->resolve_ranks_per_host(topo));
  ctx.timing_method =
      std::string(cfg.window_start
                      ? "per sample: window start (rank 0 broadcasts a start time on a clock every "
                        "rank shares, each rank waits until it, untimed), timer start, op (x "
                        "ops_per_sample), timer stop; sample = (lateness + elapsed)/ops_per_sample "
                        "per rank; "
                      : "per sample: untimed world barrier, timer start, op (x ops_per_sample), "
                        "timer stop; sample = elapsed/ops_per_sample per rank; ") +
      "reduced by max over ranks; stats over samples; "
      "stats.rank_means: each rank's mean over its samples, then max/mean/min over ranks (OSU); "
      "timer per point in timing.timer (host_clock: steady clock, stop after "
      "memory().synchronize(); cuda_event: CUDA events on the communicator's stream)";
  return ctx;
}

}  // namespace

void agree_on_input(Communicator& world, const std::string& local_error) {
  // 0 = no error; otherwise a hash of the message (never 0), so equal messages group together.
  const std::uint64_t mine = local_error.empty() ? 0 : (fnv1a64(local_error) | 1u);
  const std::vector<std::uint64_t> all = world.all_gather_u64(mine);
  std::vector<std::uint64_t> kinds;  // distinct errors, in order of their lowest rank
  std::vector<std::vector<int>> holders;
  std::vector<int> fine;
  for (int r = 0; r < int(all.size()); ++r) {
    const std::uint64_t v = all[std::size_t(r)];
    if (v == 0) {
      fine.push_back(r);
      continue;
    }
    std::size_t k = 0;
    while (k < kinds.size() && kinds[k] != v) ++k;
    if (k == kinds.size()) kinds.push_back(v), holders.emplace_back();
    holders[k].push_back(r);
  }
  if (kinds.empty()) return;
  // Each distinct message travels from the lowest rank holding it: every rank throws one text.
  std::vector<std::string> texts;
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    std::string t = world.rank() == holders[k].front() ? local_error : std::string();
    world.broadcast_string(t, holders[k].front());
    texts.push_back(t);
  }
  if (kinds.size() == 1 && fine.empty()) throw InputError(texts.front());  // the usual case
  auto ranks = [](const std::vector<int>& rs) {
    return (rs.size() == 1 ? "rank " : "ranks ") + shardcal::format_rank_list(rs);
  };
  std::string msg = "input error on some ranks only (every rank must be given the same, valid "
                    "input): ";
  for (std::size_t k = 0; k < kinds.size(); ++k)
    msg += (k > 0 ? "; " : "") + ranks(holders[k]) + ": " + texts[k];
  if (!fine.empty()) msg += "; " + ranks(fine) + ": no error";
  throw InputError(msg);
}

void check_same_job(Communicator& world, const std::string& config_hash, const std::string& mode,
                    const std::string& description) {
  try {
    shardcal::check_same_spec(world, "sweep: every rank must load the same config and mode",
                              fnv1a64(config_hash + "|" + mode), description);
  } catch (const InputError&) {
    throw;
  } catch (const Error& e) {
    throw InputError(std::string(e.what()) +
                     "; start every rank with the same --config file contents and options");
  }
}

void check_same_plans(Communicator& world, const std::string& what, const std::string& plans_text,
                      const std::string& summary) {
  const std::uint64_t h = fnv1a64(plans_text);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  try {
    shardcal::check_same_spec(world, what + ": every rank must execute the same plans", h,
                              summary + " (plan hash " + hex + ")");
  } catch (const InputError&) {
    throw;
  } catch (const Error& e) {
    throw InputError(std::string(e.what()) +
                     "; give every rank the same profile file (and the same build), or plan "
                     "without --profile");
  }
}

namespace {

// The points of the config this run owns, and how many the config has in all.
struct OwnedPoints {
  std::vector<Point> points;
  std::size_t in_config = 0;
};

// Phase 1: pure validation and expansion, identical on every rank; no communication yet.
OwnedPoints plan_points(const SweepJob& job, int world_size) {
  OwnedPoints owned;
  try {
    owned.points = expand_points(job.config, world_size);
  } catch (const Error& e) {
    throw InputError(e.what());
  }
  // --shard I/N (Slurm array tasks): this run owns the points with index % N == I.
  if (job.shard_count < 1 || job.shard_index < 0 || job.shard_index >= job.shard_count)
    throw InputError("--shard " + std::to_string(job.shard_index) + "/" +
                     std::to_string(job.shard_count) + ": expected I/N with 0 <= I < N");
  owned.in_config = owned.points.size();
  if (job.shard_count > 1) {
    std::vector<Point> mine;
    for (const auto& p : owned.points)
      if (p.index % std::size_t(job.shard_count) == std::size_t(job.shard_index)) mine.push_back(p);
    owned.points = std::move(mine);
  }
  return owned;
}

// Transitions are planned before any file is touched (pure, identical on every rank), so a plan
// that cannot be made is an input error; the planner is part of each point's key.
std::map<std::size_t, PlannedTransition> plan_transitions(Communicator& world, const SweepJob& job,
                                                          std::vector<Point>& points, int rph) {
  std::map<std::size_t, PlannedTransition> plans;
  // Agreed on below: a rank that failed alone must not leave the others waiting.
  std::string plan_error;
  for (Point& p : points) {
    if (!p.transition) continue;
    p.planner = job.planner->key(rph);
    try {
      plans.emplace(p.index, job.planner->plan(p.from_spec, p.to_spec, rph));
    } catch (const Error& e) {
      plan_error =
          "planning " + p.label() + " with the " + job.planner->name() + " planner: " + e.what();
      break;
    }
  }
  agree_on_input(world, plan_error);
  if (job.planner->priced()) {  // greedy plans are a pure function of the (checked) config
    std::string text;
    for (const auto& [index, pt] : plans)
      text += std::to_string(index) + ":" + pt.plan.to_string() + "\n";
    check_same_plans(world, "sweep", text, std::to_string(plans.size()) + " transition plan(s)");
  }
  return plans;
}

// The context record of this run with what only rank 0 checks: the Slurm allocation, the
// simulated platform, the shard.
json run_context(const SweepJob& job, Communicator& world, const shardcal::Topology& topo,
                 const OwnedPoints& owned) {
  shardcal::formats::ContextRecord ctx = make_context(job, world, topo, owned.points.size());
  // Under Slurm, the hosts the ranks found must be the ones Slurm allocated (slurm_env.hpp).
  const SlurmStep slurm = read_slurm_env();
  if (const std::string bad = slurm_topology_mismatch(slurm, world.size(), topo); !bad.empty())
    throw Error(bad);
  if (slurm.present) ctx.slurm = slurm.to_json();
  // A simulated run says so, and on what platform (simulation_env.hpp).
  ctx.simulation = simulation_description();
  if (job.shard_count > 1)
    ctx.shard = {{"index", job.shard_index}, {"count", job.shard_count},
                 {"points_in_config", owned.in_config}};
  return shardcal::formats::to_json(ctx);
}

// A transition point key with "buffer_rotation": null was timed on one hot buffer set, by a
// shardbench from before transitions rotated their buffers like collectives. Its key matches
// none of this run's points, so resuming would measure that transition again under the rotating
// protocol and leave both in one file (a calibration would read both); refuse instead.
void refuse_unrotated_transitions(const std::string& path, const std::set<std::string>& done_keys,
                                  const std::map<std::string, std::size_t>& by_key) {
  std::size_t n = 0;
  for (const auto& k : done_keys) {
    if (by_key.count(k)) continue;
    const json key = json::parse(k, nullptr, /*allow_exceptions=*/false);
    if (!key.is_object() || key.value("kind", json()) != "transition") continue;
    const json proto = key.value("protocol", json());
    if (proto.is_object() && proto.contains("buffer_rotation") && proto["buffer_rotation"].is_null()) ++n;
  }
  if (n > 0)
    throw Error("--resume " + path + ": " + std::to_string(n) + " transition point(s) in the file " +
                "were timed on one hot buffer set (\"buffer_rotation\": null in their key, written " +
                "by a shardbench from before transitions followed the collectives' buffer-rotation " +
                "rule); this run's transition keys record the config's rotation instead, so it would " +
                "time them again and the file would hold both records; start a new sweep with --out");
}

// --resume (rank 0): checks the file belongs to this run, reopens it for appending and returns
// the indices of the points it already holds.
std::set<std::size_t> resume_results(const SweepJob& job, Communicator& world,
                                     const std::vector<Point>& points, const json& ctx,
                                     ResultsFile& file) {
  const ResumeState st =
      read_for_resume(job.out_path, job.config.hash(), world.backend(), world.size());
  // Records measured by another build or on another topology must not be mixed in
  // silently: refuse, or with --resume-anyway start a new context for the new points.
  const std::vector<std::string> diffs = context_differences(st.context, ctx);
  const json file_shard = st.context.value("shard", json()), run_shard = ctx.value("shard", json());
  if (file_shard != run_shard)
    throw Error("--resume " + job.out_path + ": the file holds shard " +
                file_shard.dump() + " of the config's points, this run shard " +
                run_shard.dump() + "; resume with the same --shard I/N");
  // A new allocation (requeue, resubmission): other hostnames, same shape -> comparable;
  // a new context record names the new hosts and the points from here on belong to it.
  const std::vector<std::string> renamed = host_renames(st.context, ctx);
  if (!diffs.empty() && !job.resume_anyway) {
    std::string list;
    for (const auto& d : diffs) list += "\n  " + d;
    throw Error("--resume " + job.out_path + ": the file's context differs from this run's "
                "(another build or library, or another host shape); its records would be mixed with "
                "this run's:" + list +
                "\nresume on the same build and host shape, start a new sweep with --out, or pass "
                "--resume-anyway to append a new context record and continue");
  }
  // Transitions planned by another planner or profile are other points; never mixed.
  const json file_planner = st.context.value("planner", json{{"name", "greedy"}});
  if (file_planner != ctx["planner"])
    throw Error("--resume " + job.out_path + ": the file's transitions were planned by " +
                file_planner.dump() + ", this run's by " + ctx["planner"].dump() +
                "; resume with the same --profile (or config \"profile\") and ranks per host, "
                "or start a new sweep with --out");
  std::set<std::size_t> done;
  std::map<std::string, std::size_t> by_key;
  for (const auto& p : points) by_key.emplace(p.key(), p.index);
  refuse_unrotated_transitions(job.out_path, st.done_keys, by_key);
  for (const auto& k : st.done_keys) {
    auto it = by_key.find(k);
    if (it != by_key.end()) done.insert(it->second);
  }
  file.append(job.out_path, st.keep_bytes);
  if (st.dropped_partial && !job.quiet)
    std::fprintf(stderr, "sweep: dropped a partial last line of %s (interrupted write)\n",
                 job.out_path.c_str());
  if (diffs.empty() && !renamed.empty()) {
    file.write(ctx);
    if (!job.quiet) {
      std::string list;
      for (const auto& r : renamed) list += "\n  " + r;
      std::fprintf(stderr, "sweep: --resume on new hosts of the same shape (hosts x ranks "
                   "per host): appended context record %zu to %s:%s\n",
                   st.contexts + 1, job.out_path.c_str(), list.c_str());
    }
  }
  if (!diffs.empty()) {
    file.write(ctx);  // the points appended from here on belong to this context
    if (!job.quiet)
      std::fprintf(stderr, "sweep: --resume-anyway: appended context record %zu to %s "
                   "(%zu difference(s) from the previous one)\n",
                   st.contexts + 1, job.out_path.c_str(), diffs.size());
  }
  return done;
}

// Phase 2: rank 0 creates or resumes the file; everyone learns the outcome. Returns, on every
// rank, which points the file already holds.
std::vector<bool> open_results(Communicator& world, const SweepJob& job,
                               const shardcal::Topology& topo, const OwnedPoints& owned,
                               ResultsFile& file) {
  std::string status;
  if (world.rank() == 0) {
    try {
      const json ctx = run_context(job, world, topo, owned);
      std::set<std::size_t> done;
      if (job.resume) {
        done = resume_results(job, world, owned.points, ctx, file);
      } else {
        // Only rank 0 writes, so only its --out matters (other ranks may not see the path).
        const auto dir = std::filesystem::path(job.out_path).parent_path();
        if (!dir.empty() && !std::filesystem::is_directory(dir))
          throw Error("--out " + job.out_path + ": directory " + dir.string() +
                      " does not exist; create it first");
        file.create(job.out_path);
        file.write(ctx);
      }
      std::ostringstream os;
      os << "ok";
      for (std::size_t i : done) os << ' ' << i;
      status = os.str();
    } catch (const std::exception& e) {  // never leave the other ranks waiting in the broadcast
      file.close();
      status = std::string("error ") + e.what();
    }
  }
  world.broadcast_string(status, 0);
  if (status.rfind("error ", 0) == 0) throw InputError(status.substr(6));
  // Indexed by the point's index in the config: with --shard I/N the owned points keep theirs.
  std::vector<bool> done(owned.in_config, false);
  std::istringstream is(status.substr(2));
  std::size_t i;
  while (is >> i)
    if (i < done.size()) done[i] = true;
  return done;
}

// Times one collective point and fills its record; false when a stop signal abandoned it.
bool run_collective_point(shardcal::MeshCommunicator& mc, const Point& p, const SweepConfig& cfg,
                          const shardcal::Topology& topo, int world_size, PointRecord& rec,
                          Measurement& m) {
  const auto& info = collective_info(p.op);
  const int n = mc.mesh().extent(p.mesh_dim);
  const CollectiveShape sh = collective_shape(p.op, p.dtype, p.size, p.dist, n);
  m = measure_collective(mc, p, cfg);
  if (m.abandoned) return false;
  fill_collective_record(rec, p.op, sh, m.samples, cfg.confidence);
  if (info.has_root) rec.root = 0;
  rec.groups = world_size / n;
  const shardcal::GroupSpan span = dims_span(mc.mesh(), {p.mesh_dim}, topo);
  rec.hosts_spanned = span.hosts;
  rec.max_ranks_per_host = span.max_ranks_per_host;
  return true;
}

// Times one transition point (its plan made in phase 1) and fills its record; false when a stop
// signal abandoned it.
bool run_transition_point(shardcal::MeshCommunicator& mc, const Point& p,
                          const PlannedTransition& planned, const SweepJob& job, int rph,
                          const shardcal::Topology& topo, PointRecord& rec, Measurement& m) {
  const SweepConfig& cfg = job.config;
  const auto& mesh = mc.mesh();
  const shardcal::TensorMeta& meta = p.from_spec.meta();
  const shardcal::Plan& plan = planned.plan;
  m = measure_transition(mc, plan, cfg);
  if (m.abandoned) return false;
  rec.stats = compute_stats(m.samples, cfg.confidence);
  shardcal::formats::TransitionRecord tr;
  for (const auto& s : plan.steps) {
    shardcal::formats::PlanStepRecord step;
    step.mesh_dim = s.mesh_dim;
    step.collective = shardcal::step_kind_name(s.kind);
    step.from = shardcal::placements_to_string(s.before.placements());
    step.to = shardcal::placements_to_string(s.after.placements());
    step.traffic = shardcal::describe_step(s);
    step.hosts_spanned = dims_span(mesh, {s.mesh_dim}, topo).hosts;
    if (!planned.step_us.empty()) step.predicted_us = planned.step_us.at(tr.plan.size());
    tr.plan.push_back(std::move(step));
  }
  std::int64_t max_local = 0;
  for (int r = 0; r < mesh.size(); ++r)
    max_local = std::max({max_local, p.from_spec.local_nbytes(r), p.to_spec.local_nbytes(r)});
  tr.from = p.from;
  tr.to = p.to;
  tr.from_given = p.from_given;
  tr.to_given = p.to_given;
  tr.shape = p.shape;
  tr.planner = job.planner->describe(rph);
  if (job.planner->priced()) tr.predicted_us = planned.total_us;
  rec.transition = std::move(tr);
  rec.group_size = mesh.size();
  rec.groups = 1;
  std::vector<int> all_dims(std::size_t(mesh.ndim()));
  for (int d = 0; d < mesh.ndim(); ++d) all_dims[std::size_t(d)] = d;
  const shardcal::GroupSpan span = dims_span(mesh, all_dims, topo);
  rec.hosts_spanned = span.hosts;
  rec.max_ranks_per_host = span.max_ranks_per_host;
  rec.elem_size = int(shardcal::dtype_size(p.dtype));
  rec.bytes = meta.nbytes();
  rec.bytes_convention = "the logical (global) tensor";
  rec.bytes_total = meta.nbytes();
  rec.bytes_max_rank = max_local;
  rec.algbw_GBps = rec.stats.p50 > 0 ? double(meta.nbytes()) / rec.stats.p50 / 1e9 : 0.0;
  return true;
}

// The progress line's summary of a finished point.
std::string point_summary(const PointRecord& rec, const Measurement& m) {
  std::string summary = "p50 " + human_time(rec.stats.p50);
  if (!rec.transition) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "  busbw %.3g GB/s", rec.busbw_GBps);
    summary += buf;
  }
  if (m.wrong > 0) summary += "  WRONG " + std::to_string(m.wrong);
  return summary;
}

struct RunOutcome {
  std::uint64_t bad_points = 0;  // points with wrong results
  int stop_signal = 0;           // the signal that stopped the run, 0 if none
  std::vector<shardcal::formats::FloorSample> floor;  // rank 0: collective points, for the floor check
};

// Phase 3: every point the file does not hold yet, in order; rank 0 appends each record. Stops
// between points when any rank saw SIGINT/SIGTERM.
RunOutcome run_points(Communicator& world, const SweepJob& job, const std::vector<Point>& points,
                      const std::vector<bool>& done,
                      const std::map<std::size_t, PlannedTransition>& plans, int rph,
                      const shardcal::Topology& topo, ResultsFile& file, Progress& progress) {
  const SweepConfig& cfg = job.config;
  const bool root = world.rank() == 0;
  std::unique_ptr<shardcal::MeshCommunicator> mc;
  RunOutcome out;
  for (const Point& p : points) {
    if (done[p.index]) continue;
    for (auto s : world.all_gather_u64(std::uint64_t(pending_signal())))
      if (s != 0 && out.stop_signal == 0) out.stop_signal = int(s);
    if (out.stop_signal != 0) break;
    if (!mc || mc->mesh() != p.device_mesh)
      mc = std::make_unique<shardcal::MeshCommunicator>(p.device_mesh, world);
    progress.start_point(p.label());

    PointRecord rec;
    rec.index = p.index;
    rec.point = p.params();
    rec.key = rec.point.dump();
    Measurement m;
    const bool measured =
        p.transition ? run_transition_point(*mc, p, plans.at(p.index), job, rph, topo, rec, m)
                     : run_collective_point(*mc, p, cfg, topo, world.size(), rec, m);
    if (!measured) {
      out.stop_signal = m.signal;
      break;
    }
    rec.timing = point_timing(cfg, p, m);
    rec.rank_means = {m.rank_mean_max_s, m.rank_mean_avg_s, m.rank_mean_min_s};
    rec.samples_s = m.samples;
    if (cfg.check) rec.wrong = std::int64_t(m.wrong);
    if (m.wrong > 0) ++out.bad_points;
    if (root && !p.transition)
      out.floor.push_back({std::string(collective_info(p.op).name) + " mesh=" +
                               rec.point.value("mesh", std::string()) +
                               " dim=" + std::to_string(p.mesh_dim),
                           rec.hosts_spanned, double(rec.bytes), rec.stats.p50});
    if (root) {
      file.write(shardcal::formats::to_json(rec));
      progress.finish_point(point_summary(rec, m));
    }
  }
  return out;
}

}  // namespace

void check_start_clock(Communicator& world, const SweepConfig& cfg, const shardcal::Topology& topo) {
  if (!cfg.window_start) return;
  // Every rank reaches the same verdict (the scope, the topology and the gathered readings are
  // the same everywhere), so every rank throws the same error.
  using Scope = Communicator::ClockScope;
  const Scope scope = world.start_clock_scope();
  const std::string fix = "; use \"start\": \"barrier\" (the default)";
  if (scope == Scope::None)
    throw InputError(cfg.source + ": /start: \"window\" needs a clock every rank shares, but the " +
                     world.backend() + " backend has none" +
                     (world.backend() == "nccl" ? " (it times on the device)" : "") + fix);
  if (scope == Scope::Host && topo.num_hosts > 1)
    throw InputError(cfg.source + ": /start: \"window\" needs a clock every rank shares, but the ranks span " +
                     std::to_string(topo.num_hosts) +
                     " hosts, each with its own clock (shardbench does not estimate clock offsets)" + fix);
  if (scope == Scope::Global) return;  // one clock by construction (sim, SMPI)
  // Ranks on one host by their names: do they read one clock? With one clock every reading taken
  // before a barrier precedes every reading taken after it, however the ranks are scheduled;
  // steady clocks of different machines (SHARDCAL_HOSTNAME naming one host for several) are
  // seconds to days apart.
  const double before = world.start_clock_now();
  world.barrier();
  const double after = world.start_clock_now();
  double latest_before = -std::numeric_limits<double>::infinity();
  double earliest_after = std::numeric_limits<double>::infinity();
  const auto b = world.all_gather_u64(std::bit_cast<std::uint64_t>(before));
  const auto a = world.all_gather_u64(std::bit_cast<std::uint64_t>(after));
  for (std::size_t r = 0; r < b.size(); ++r) {
    latest_before = std::max(latest_before, std::bit_cast<double>(b[r]));
    earliest_after = std::min(earliest_after, std::bit_cast<double>(a[r]));
  }
  if (latest_before > earliest_after) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g s", latest_before - earliest_after);
    throw InputError(cfg.source + ": /start: \"window\" needs a clock every rank shares, but the ranks' clocks "
                     "disagree (a reading before a barrier is " + std::string(buf) +
                     " after one taken past it; is SHARDCAL_HOSTNAME naming one host for ranks on several?)" + fix);
  }
}

int run_sweep_rank(Communicator& world, const SweepJob& job) {
  OwnedPoints owned = plan_points(job, world.size());
  const std::vector<Point>& points = owned.points;
  const bool root = world.rank() == 0;
  // Hostnames (or SHARDCAL_HOSTNAME, to emulate hosts) tell which groups cross hosts, and go
  // into the context record.
  const shardcal::Topology topo = shardcal::discover_topology(world);
  check_start_clock(world, job.config, topo);
  const int rph = job.planner->resolve_ranks_per_host(topo);
  const std::map<std::size_t, PlannedTransition> plans =
      plan_transitions(world, job, owned.points, rph);
  ResultsFile file;
  const std::vector<bool> done = open_results(world, job, topo, owned, file);
  const auto n_done = std::size_t(std::count(done.begin(), done.end(), true));

  if (root && !job.quiet && job.planner->priced() && !plans.empty())
    std::fprintf(stderr, "sweep: transitions planned by the cost planner: profile %s (cluster %s, sha256 %.12s), %d ranks per host\n",
                 job.planner->profile().value("path", "").c_str(), job.planner->profile().value("cluster", "").c_str(),
                 job.planner->profile().value("sha256", "").c_str(), rph);
  Progress progress(root && !job.quiet, points.size(), n_done, job.progress_tty);
  const RunOutcome out = run_points(world, job, points, done, plans, rph, topo, file, progress);
  // A small-message floor no link has (the scheduler's time slice on oversubscribed cores):
  // warned here and recorded in the file, where calibrate repeats it.
  std::vector<std::string> floor_warnings;
  if (root)
    for (const auto& w : shardcal::formats::implausible_floors(out.floor)) {
      file.write(w.to_json());
      floor_warnings.push_back("sweep: warning: " + w.message);
    }
  file.close();
  // Stops and wrong results are reported on rank 0 even with --quiet.
  auto notice = [&](const std::string& text) {
    if (!root) return;
    if (job.quiet) std::fprintf(stderr, "%s\n", text.c_str());
    else progress.message(text);
  };
  if (out.stop_signal != 0) {
    notice("sweep: stopped by signal " + std::to_string(out.stop_signal) +
                     "; the results file holds complete records only; continue with --resume " +
                     job.out_path);
    return exit_code_for_signal(out.stop_signal);
  }
  progress.done();
  for (const std::string& w : floor_warnings) std::fprintf(stderr, "%s\n", w.c_str());
  if (out.bad_points > 0) {
    notice("sweep: " + std::to_string(out.bad_points) +
                     " point(s) produced wrong results (see \"wrong\" in " + job.out_path + ")");
    return 1;
  }
  return 0;
}

}  // namespace shardbench::sweep

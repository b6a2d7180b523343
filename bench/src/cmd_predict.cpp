// `shardbench predict`: price one collective on one link class with a calibrated profile
// (docs/PROFILE_FORMAT.md). A thin shell over calibrate/ (shardcal::calib::predict).
#include <charconv>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "commands.hpp"
#include "shardcal/calibrate/cost_model.hpp"
#include "shardcal/calibrate/loaded_profile.hpp"
#include "shardcal/calibrate/profile.hpp"
#include "shardcal/error.hpp"

namespace shardbench {

namespace {

struct PredictArgs {
  std::string profile;
  std::string collective;
  int group_size = 0;
  int hosts = 0;            // 0 = not given (hosts=1 when the profile has it, else required)
  int ranks_per_host = 0;  // 0 = group size / hosts
  int concurrent_groups = 1;
  std::string bytes;
  std::string counts;
  std::string dtype;
  bool json = false;
};

// "1MiB", "4096", "64KiB", "1.5GB", "2e6" -> bytes. Binary suffixes are powers of 1024, decimal
// ones powers of 1000.
double parse_bytes(const std::string& text) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string unit = text.substr(pos);
  static const std::pair<const char*, double> units[] = {
      {"", 1},          {"B", 1},          {"KiB", 1024.0},    {"MiB", 1048576.0}, {"GiB", 1073741824.0},
      {"KB", 1e3},      {"MB", 1e6},       {"GB", 1e9},        {"kB", 1e3}};
  if (pos > 0)
    for (const auto& [name, mult] : units)
      if (unit == name && std::isfinite(v * mult) && v >= 0) return v * mult;
  throw shardcal::Error("--bytes '" + text +
                        "' is not a byte count; write e.g. 4096, 64KiB, 1MiB, 1.5GB (KiB/MiB/GiB = 1024^k, "
                        "KB/MB/GB = 1000^k)");
}

std::vector<std::int64_t> parse_counts(const std::string& text) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    std::int64_t v = -1;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v < 0)
      throw shardcal::Error("--counts: item " + std::to_string(out.size()) + " '" + item +
                            "' is not a non-negative integer; write elements per group position, e.g. 3,5,0,4");
    out.push_back(v);
    start = end + 1;
  }
  return out;
}

int run(const PredictArgs& a) {
  using namespace shardcal;
  const auto loaded = calib::LoadedProfile::load(a.profile, "--profile");
  const calib::Profile& profile = loaded->profile();
  auto c = find_collective_alias(a.collective);
  if (!c)
    throw Error("--collective '" + a.collective + "' is unknown; use one of: " +
                collective_names_help());
  const std::string cname(collective_info(*c).name);
  // Hosts a group spans: the profile cannot tell which the user means. Without --hosts, hosts=1
  // when the profile measured that collective inside a host (said when it also has more);
  // required when it measured it only across hosts.
  std::set<int> measured_hosts;
  for (const calib::Model& m : profile.models)
    if (m.collective == *c) measured_hosts.insert(m.hosts);
  std::string assumed;
  int hosts = a.hosts;
  if (hosts == 0) {
    std::string list;
    for (int h : measured_hosts) list += (list.empty() ? "" : ", ") + std::to_string(h);
    if (!measured_hosts.empty() && !measured_hosts.count(1)) {
      const int h = *measured_hosts.begin();
      throw Error("--hosts is required: the profile (cluster " + profile.cluster + ") measured " +
                  cname + " only across hosts=" + list +
                  ", so hosts=1 would be a guess outside it; pass --hosts H, the hosts one group "
                  "spans, and --ranks-per-host R (e.g. --hosts " + std::to_string(h) +
                  (a.group_size % h == 0
                       ? " --ranks-per-host " + std::to_string(a.group_size / h)
                       : std::string()) +
                  ")");
    }
    hosts = 1;
    if (measured_hosts.size() > 1 || (!measured_hosts.empty() && !measured_hosts.count(1)))
      assumed = "hosts=1 (--hosts not given; the profile measured " + cname + " at hosts=" +
                list + ": pass --hosts for a group across hosts)";
  }
  calib::LinkClass lc;
  lc.group_size = a.group_size;
  lc.hosts = hosts;
  if (a.group_size % hosts != 0 && a.ranks_per_host == 0)
    throw Error("--group-size " + std::to_string(a.group_size) + " is not a multiple of --hosts " +
                std::to_string(hosts) + "; a group has the same number of ranks on each host");
  lc.ranks_per_host = a.ranks_per_host > 0 ? a.ranks_per_host : a.group_size / hosts;
  lc.concurrent_groups = a.concurrent_groups;
  std::optional<DType> dtype;
  if (!a.dtype.empty()) dtype = parse_dtype(a.dtype);
  const int elem_size = dtype ? int(dtype_size(*dtype)) : 1;
  std::vector<std::int64_t> counts;
  if (!a.counts.empty()) counts = parse_counts(a.counts);
  if (a.bytes.empty() && counts.empty()) throw Error("give --bytes (even counts) or --counts (uneven)");
  double bytes = 0;
  if (!a.bytes.empty()) {
    bytes = parse_bytes(a.bytes);
    if (!counts.empty()) {
      // S in the collective table's convention (all_reduce/broadcast: the buffer, counts[0];
      // all_to_all: the largest send buffer; others: the sum).
      const double s = calib::table_bytes(*c, counts, elem_size, lc.group_size);
      if (s != bytes)
        throw Error(
            "--bytes " + a.bytes + " disagrees with --counts (" + cname +
            " S = " + std::to_string(std::int64_t(s)) + " B at " + std::to_string(elem_size) +
            " B per element); give one of them, or matching values (--dtype sets the element "
            "size, default 1 B)");
    }
  }
  const calib::Prediction p = calib::predict(profile, *c, lc, bytes, counts, elem_size, dtype);
  const calib::Model& m = *p.model;
  const double s_eff =
      calib::effective_bytes(*c, m.effective_size, bytes, counts, elem_size, lc.group_size);
  const calib::Segment& seg = m.segments[std::size_t(p.segment)];
  if (a.json) {
    nlohmann::ordered_json j;
    j["profile"] = a.profile;
    j["cluster"] = profile.cluster;
    j["collective"] = cname;
    j["group_size"] = lc.group_size;
    j["hosts"] = lc.hosts;
    j["ranks_per_host"] = lc.ranks_per_host;
    j["concurrent_groups"] = lc.concurrent_groups;
    j["s_eff_bytes"] = s_eff;
    j["time_us"] = p.time_us;
    j["interval_us"] = {p.lo_us, p.hi_us};
    j["interval_level"] = calib::kIntervalLevel;
    j["basis"] = p.basis;
    std::ptrdiff_t index = p.model - profile.models.data();
    j["model"] = {{"index", index},
                  {"pointer", "/models/" + std::to_string(index)},
                  {"hosts", m.hosts},
                  {"concurrent_groups", m.concurrent_groups},
                  {"dtype", m.dtype ? nlohmann::ordered_json(std::string(dtype_name(*m.dtype))) : nullptr},
                  {"effective_size", std::string(calib::effective_size_name(m.effective_size))}};
    j["segment"] = {{"index", p.segment},
                    {"s_lo", seg.s_lo},
                    {"s_hi", seg.s_hi ? nlohmann::ordered_json(*seg.s_hi) : nullptr}};
    for (const calib::TermMember& mb : calib::kSegmentTermMembers)  // the profile's order, no SEs
      if (!mb.is_se)
        if (const std::optional<double> v = mb.info->get(seg)) j["segment"][mb.key()] = *v;
    j["extrapolated"] = p.extrapolated;
    j["note"] = p.note;
    // What was extrapolated, one field (docs/CALIBRATION.md "Past the measured sizes"): the size
    // (how far past the measured sizes), the link class (why another class's model priced it),
    // the host count (transport, below).
    {
      nlohmann::ordered_json ex;
      if (p.size_octaves != 0)
        ex["size"] = {{"direction", p.size_octaves > 0 ? "above" : "below"},
                      // (below 1 B: priced at 1 B, no factor)
                      {"factor", s_eff < 1.0 ? nlohmann::ordered_json(nullptr)
                                             : nlohmann::ordered_json(std::exp2(std::abs(p.size_octaves)))},
                      {"measured_edge_bytes", p.size_edge_bytes}};
      else
        ex["size"] = nullptr;
      ex["class"] = p.class_note.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(p.class_note);
      ex["other_side"] = p.other_side;
      ex["hosts_transported"] = p.transport.active;
      j["extrapolation"] = ex;
    }
    // The GPUs' link ceiling and the floor it puts here (docs/CALIBRATION.md "Link ceilings").
    if (profile.link_ceiling)
      j["link_ceiling"] = {{"GBps", profile.link_ceiling->GBps},
                           {"source", profile.link_ceiling->source},
                           {"host_GBps", profile.link_ceiling->host_GBps > 0
                                             ? nlohmann::ordered_json(profile.link_ceiling->host_GBps)
                                             : nlohmann::ordered_json(nullptr)},
                           {"floor_us", p.link_floor_us},
                           {"binds", p.at_link_floor},
                           {"host_link_binds", p.at_host_link_floor}};
    else
      j["link_ceiling"] = nullptr;
    // Where a host-count transport priced it (docs/CALIBRATION.md "Other host counts").
    if (const calib::HostTransport& t = p.transport; t.active)
      j["transport"] = {{"from_hosts", m.hosts},
                        {"to_hosts", lc.hosts},
                        {"doublings", t.doublings},
                        {"tested_by_hosts", t.other && t.law_tested ? nlohmann::ordered_json(t.other->hosts)
                                                                    : nlohmann::ordered_json(nullptr)},
                        {"laws_chosen_by_test", t.law_discriminated},
                        {"test_across_switch", t.test_switch},
                        {"latency_law", std::string(calib::latency_law_name(t.law))},
                        {"bandwidth_law", std::string(calib::bandwidth_law_name(t.bw_law))},
                        {"latency_floor_us", t.latency_us},
                        {"latency_ratio", t.latency_ratio},
                        {"bandwidth_ratio", t.bus_ratio},
                        {"two_node_switch", t.two_node_switch},
                        {"algorithm_unknown", t.algorithm_unknown},
                        // An MPI ring carried at equal per-step messages: the measured count's
                        // price at measured_bytes (docs/CALIBRATION.md "Other host counts").
                        {"equal_messages", calib::carried_at_equal_messages(t, s_eff)},
                        {"measured_bytes", calib::measured_bytes_at(t, s_eff)}};
    else
      j["transport"] = nullptr;
    // Known algorithms (the SMPI ompi selector's): which runs at each count at this size, and
    // the ratios at this size that replace the laws'.
    if (const calib::HostTransport& t = p.transport; t.active && t.selector) {
      const calib::SelectorStructure ss = calib::selector_structure(
          t.op, t.n_model, t.hosts_model, t.n_query, t.hosts_query, s_eff);
      j["transport"]["latency_ratio"] = ss.latency_ratio;
      j["transport"]["bandwidth_ratio"] = ss.bus_ratio;
      j["transport"]["algorithms"] = {{"selector", "ompi"},
                                      {"measured", std::string(calib::mpi_algorithm_name(ss.from))},
                                      {"query", std::string(calib::mpi_algorithm_name(ss.to))},
                                      {"switch", ss.switched}};
    }
    // The ring routes (docs/CALIBRATION.md "Other host counts"): whether they priced this size.
    if (const calib::HostTransport& t = p.transport; t.active && t.routes) {
      const calib::RouteLatency mode = calib::route_latency(m, t, s_eff);
      j["transport"]["routes"] = {{"applied", calib::route_ring(t, s_eff)},
                                  {"reason", calib::route_ring(t, s_eff)
                                                 ? nlohmann::ordered_json(nullptr)
                                                 : nlohmann::ordered_json("the algorithm priced here is not a neighbour ring")},
                                  // How the route latency is priced (host_transport.hpp
                                  // route_latency): "lock-step", "eager chain" or "middle".
                                  {"latency", std::string(calib::route_latency_name(mode))},
                                  {"chain_extra_us", mode == calib::RouteLatency::Chain
                                                         ? nlohmann::ordered_json(calib::transported_chain_extra(t, s_eff).extra_us)
                                                         : nlohmann::ordered_json(nullptr)},
                                  {"latency_us", {{"measured", t.route_latency_model_us},
                                                  {"query", t.route_latency_query_us}}},
                                  {"share_GBps", {{"measured", t.route_share_model_GBps},
                                                  {"query", t.route_share_query_GBps}}},
                                  // measured / query share: the bandwidth term gains this
                                  // ratio as far as the flows on the shared link overlap
                                  // (routed_time; an eager chain moves each count's messages
                                  // at its own share instead); skew: how far apart they start, and from
                                  // where ("table", "hop spread", "longest route").
                                  {"share_ratio", t.route_bw_ratio},
                                  {"skew_us", t.route_skew_us},
                                  {"skew_source", std::string(calib::skew_source_name(t.route_skew_source))},
                                  {"extra_us_per_step", t.route_step_us},
                                  // The measured count's latency part as the routes split its
                                  // price (latency_floor_us unless an MPI ring moves onto a
                                  // smaller share: then its protocol's, host_transport.hpp).
                                  {"latency_split_us", calib::transported_latency_split_us(
                                                           m, t, lc.concurrent_groups, s_eff)},
                                  {"steps", t.route_steps},
                                  {"source", t.route_source}};
    }
    if (const calib::HostTransport& t = p.transport; t.active && !t.route_skipped.empty())
      j["transport"]["routes"] = {{"applied", false}, {"reason", t.route_skipped}};
    if (!assumed.empty()) j["assumed"] = assumed;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::ostringstream o;
  o << std::setprecision(6);
  o << cname << " n=" << lc.group_size << " hosts=" << lc.hosts << " ranks/host=" << lc.ranks_per_host
    << " concurrent=" << lc.concurrent_groups << " S_eff=" << s_eff << " B: " << p.time_us << " us"
    << " (95 % interval " << p.lo_us << " .. " << p.hi_us << " us; " << p.basis << ")\n";
  o << "  model /models/" << (p.model - profile.models.data()) << " (" << cname << ", hosts=" << m.hosts
    << ", concurrent_groups=" << m.concurrent_groups
    << ", dtype=" << (m.dtype ? std::string(dtype_name(*m.dtype)) : std::string("pooled"))
    << ", effective size " << calib::effective_size_name(m.effective_size) << ")\n";
  o << "  segment " << p.segment << " [" << seg.s_lo << ", " << (seg.s_hi ? std::to_string(std::int64_t(*seg.s_hi)) : "inf")
    << ") B: ";
  for (const calib::TermInfo& t : calib::kTermInfo)
    if (const std::optional<double> v = t.get(seg)) o << t.text_before << *v << t.text_after;
  o << "\n";
  o << "  extrapolated: " << (p.extrapolated ? "yes (" + p.note + ")" : std::string("no")) << "\n";
  if (!assumed.empty()) o << "  assumed: " << assumed << "\n";
  std::cout << o.str();
  return 0;
}

}  // namespace

Runner add_predict_command(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  auto* cmd = app.add_subcommand(
      "predict",
      "Predict one collective's time from a calibrated profile (docs/PROFILE_FORMAT.md): the time,\n"
      "the model and size segment used, and whether the link class or size was extrapolated.\n"
      "Example: shardbench predict --profile configs/profiles/dtensor-default.json --collective all_gather\n"
      "         --group-size 8 --hosts 2 --ranks-per-host 4 --bytes 1MiB");
  cmd->add_option("--profile", args->profile, profile_option_help())->required();
  cmd->add_option("--collective", args->collective,
                  "all_gather, reduce_scatter, all_reduce, all_to_all, ... (nccl-tests' and OSU's "
                  "names too: alltoall, allreduce, ...)")
      ->required();
  cmd->add_option("--group-size", args->group_size, "Ranks in one group (n)")->required()->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--hosts", args->hosts,
                  "Hosts one group spans (default 1 when the profile measured the collective "
                  "inside a host, said when it also measured more; required when it did not)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--ranks-per-host", args->ranks_per_host,
                  "Ranks of one group on each of its hosts (default: group size / hosts)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--concurrent-groups", args->concurrent_groups, "Groups of this mesh dim running at once on a host")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--bytes", args->bytes, "S in the collective table's convention, e.g. 1MiB (even counts)");
  cmd->add_option(
      "--counts", args->counts,
      "Elements per group position, e.g. 3,5,0,4 (all_reduce/broadcast: equal, the buffer; "
      "all_to_all: n or n x n row-major send matrix)");
  cmd->add_option("--dtype", args->dtype, "Element type (sets the element size of --counts; picks a per-dtype model)");
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
  return [args]() { return run(*args); };
}

}  // namespace shardbench

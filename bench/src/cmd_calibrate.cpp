// `shardbench calibrate`: sweep results -> calibrated cost-model profile (docs/CALIBRATION.md).
// A thin shell over calibrate/ (shardcal_calibrate): read, fit, print the quality table, write
// the profile atomically (temp + rename, so a failed run leaves no output file).
#include <algorithm>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "commands.hpp"
#include "shardcal/calibrate/fit.hpp"
#include "shardcal/calibrate/profile.hpp"
#include "shardcal/formats/floor_check.hpp"
#include "shardcal/formats/results_reader.hpp"
#include "shardcal/formats/schemas.hpp"
#include "shardcal/error.hpp"

namespace shardbench {

namespace {

struct CalibrateArgs {
  std::vector<std::string> results;
  std::string out;
  std::string name;
  std::string mode = "auto";
  std::string routes;  // --routes: ring-routes file (empty: none)
  bool allow_mixed = false;
};

using nlohmann::json;

// Which cluster a context record measured: GPU names (imported logs name them), host-name
// families (the letters a host name starts with: "gpu-dp-2jvzl" -> "gpu"), backend.
struct ClusterId {
  std::string where;  // "r.jsonl (log x.txt)"
  std::set<std::string> gpus, hosts, families;
  std::vector<std::string> hosts_by_rank;  // the named hosts ordered by their smallest rank
  bool imported = false;
  std::string text() const {
    auto join = [](const std::set<std::string>& v, std::size_t most) {
      std::string out;
      std::size_t i = 0;
      for (const auto& x : v) {
        if (i++ == most) return out + ", ...";
        out += (out.empty() ? "" : ", ") + x;
      }
      return out;
    };
    std::string out = where + " (";
    if (!gpus.empty()) out += "GPUs " + join(gpus, 3) + "; ";
    out += "hosts " + (hosts.empty() ? std::string("unnamed") : join(hosts, 3)) + ")";
    return out;
  }
  json to_json() const {
    return {{"where", where}, {"gpus", gpus}, {"hosts", hosts}};
  }
};

// The letters a host name starts with ("gpu-dp-2jvzl" -> "gpu"); "" for names that have no
// such prefix to compare: IP addresses (10.0.0.1), digit-led names (4u-gpu1), hex container ids
// (3f2a9c0d1e7b, a3f9c2d1e0b4).
std::string host_family(const std::string& host) {
  const bool hex = host.size() >= 8 && host.find_first_not_of("0123456789abcdefABCDEF") ==
                                           std::string::npos;
  if (hex) return "";
  std::string f;
  for (char c : host) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) break;
    f += char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return f;
}

std::vector<ClusterId> clusters_of(const shardcal::calib::ResultSet& rs) {
  std::vector<ClusterId> out;
  for (const auto& f : rs.files)
    for (const json& c : f.context_records) {
      ClusterId id;
      id.where = f.path;
      const json* imp = c.contains("import") && c["import"].is_object() ? &c["import"] : nullptr;
      id.imported = imp != nullptr;
      bool generic_hosts = false;
      if (imp) {
        if (imp->contains("source") && (*imp)["source"].is_object() &&
            (*imp)["source"].contains("path") && (*imp)["source"]["path"].is_string())
          id.where += " (log " + (*imp)["source"]["path"].get<std::string>() + ")";
        if (imp->contains("gpus") && (*imp)["gpus"].is_array())
          for (const json& g : (*imp)["gpus"])
            if (g.is_object() && g.contains("name") && g["name"].is_string() &&
                !g["name"].get<std::string>().empty())
              id.gpus.insert(g["name"].get<std::string>());
        const std::string from = imp->value("topology_from", std::string());
        generic_hosts = from.find("not in the log") != std::string::npos ||
                        from == "--hosts/--ranks-per-host";
      }
      if (!generic_hosts && c.contains("hosts") && c["hosts"].is_array()) {
        std::vector<std::pair<long long, std::string>> by_rank;
        for (const json& h : c["hosts"])
          if (h.is_object() && h.contains("name") && h["name"].is_string()) {
            id.hosts.insert(h["name"].get<std::string>());
            id.families.insert(host_family(h["name"].get<std::string>()));  // "": none
            long long first = std::numeric_limits<long long>::max();
            if (h.contains("ranks") && h["ranks"].is_array())
              for (const json& r : h["ranks"])
                if (r.is_number_integer()) first = std::min(first, r.get<long long>());
            by_rank.emplace_back(first, h["name"].get<std::string>());
          }
        std::stable_sort(by_rank.begin(), by_rank.end(),
                         [](const auto& x, const auto& y) { return x.first < y.first; });
        for (auto& [r, name] : by_rank) id.hosts_by_rank.push_back(name);
      }
      out.push_back(std::move(id));
    }
  return out;
}

// Whether a and b are different clusters. `refuse`: what says so ("" when nothing does): GPU
// names differ; or, when GPUs do not settle it, imported logs whose hosts share neither a name
// nor a family while every host has one. `warn`: other hosts that do not refuse (the same GPUs
// on other nodes; names without a family to compare: IPs, digit-led, hex container ids).
struct Difference {
  std::string refuse, warn;
};

Difference differ(const ClusterId& a, const ClusterId& b) {
  const bool gpus_named = !a.gpus.empty() && !b.gpus.empty();
  if (gpus_named && a.gpus != b.gpus) return {"other GPUs", ""};
  if (!(a.imported || b.imported) || a.hosts.empty() || b.hosts.empty()) return {};
  for (const auto& h : a.hosts)
    if (b.hosts.count(h)) return {};
  for (const auto& f : a.families)
    if (!f.empty() && b.families.count(f)) return {};
  if (gpus_named) return {"", "the same GPUs on other hosts"};
  if (a.families.count("") || b.families.count(""))
    return {"", "other hosts, named without a letter prefix to compare"};
  return {"other hosts", ""};
}

std::string default_cluster_name(const shardcal::calib::ResultSet& rs) {
  for (const auto& f : rs.files)
    for (const auto& c : f.contexts)
      if (c.contains("hosts") && c["hosts"].is_array() && !c["hosts"].empty() &&
          c["hosts"][0].contains("name") && c["hosts"][0]["name"].is_string())
        return c["hosts"][0]["name"].get<std::string>() +
               (c["hosts"].size() > 1 ? "+" + std::to_string(c["hosts"].size() - 1) : "");
  return "unnamed";
}

// --mode auto: the one timing mode the files hold (imported nccl-tests logs are pipelined, OSU
// and sweeps per_iteration by default, imported torch.profiler traces in_job); per_iteration,
// the sweep's default, when they hold several.
std::string resolve_mode(const std::string& mode, const shardcal::calib::ResultSet& rs) {
  if (mode != "auto") return mode;
  std::set<std::string> modes;
  for (const auto& p : rs.collectives) modes.insert(p.mode);
  for (const auto& t : rs.transitions) modes.insert(t.mode);
  if (modes.size() == 1) return *modes.begin();
  if (modes.size() > 1)
    std::cout << "calibrate: the results hold several timing modes; fitting per_iteration "
                 "(--mode pipelined for the others)\n";
  return "per_iteration";
}

// A routes table describes rings over the first H hosts of its hosts_order, in that order: every
// sweep spanning H >= 2 named hosts must have run on exactly those, ordered by rank (else the
// table prices another placement's rings); where that cannot be checked, and for host counts the
// table skips, a warning.
shardcal::calib::Profile::RingRoutes check_routes(shardcal::calib::Profile::RingRoutes r,
                                                  const std::string& path,
                                                  const std::vector<ClusterId>& clusters) {
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (std::size_t i = 0; i < v.size() && i < 8; ++i) out += (i ? ", " : "") + v[i];
    return v.size() > 8 ? out + ", ... (" + std::to_string(v.size()) + " in all)" : out;
  };
  std::vector<std::string> unchecked;
  for (const ClusterId& c : clusters) {
    if (c.hosts_by_rank.size() < 2) {
      if (c.hosts.empty()) unchecked.push_back(c.where + " (no host names)");
      continue;  // one host: no ring between hosts, no routes used
    }
    if (r.hosts_order.empty()) continue;
    const std::size_t k = c.hosts_by_rank.size();
    if (r.hosts_order.size() < k)
      throw shardcal::Error("--routes " + path + ": " + c.where + " ran on " + std::to_string(k) +
                            " hosts but the table names only " + std::to_string(r.hosts_order.size()) +
                            ": make the table over the whole allocation (ring-routes --hostfile), or leave "
                            "--routes out (nothing written)");
    const std::vector<std::string> first(r.hosts_order.begin(), r.hosts_order.begin() + std::ptrdiff_t(k));
    if (first != c.hosts_by_rank)
      throw shardcal::Error(
          "--routes " + path + ": " + c.where + " ran on " + std::to_string(k) + " hosts in rank order " +
          join(c.hosts_by_rank) + " but the table's first " + std::to_string(k) + " are " + join(first) +
          ": its rings are not the ones the sweep ran; make the table with the hosts in the order the "
          "sweep placed its ranks (ring-routes --hostfile), or leave --routes out (nothing written)");
  }
  if (r.hosts_order.empty())
    std::cerr << "calibrate: warning: --routes " << path << " has no hosts_order: not checked against the "
              << "hosts the sweeps ran on\n";
  else if (!unchecked.empty())
    std::cerr << "calibrate: warning: --routes " << path << ": host order not checked for " << join(unchecked)
              << "\n";
  // Host counts the table skips, as ranges (at most 10).
  std::vector<std::string> gaps;
  int prev = 1;
  for (const auto& x : r.rings) {
    if (x.hosts > prev + 1)
      gaps.push_back(x.hosts - 1 == prev + 1 ? std::to_string(prev + 1)
                                             : std::to_string(prev + 1) + "-" + std::to_string(x.hosts - 1));
    prev = x.hosts;
  }
  if (!gaps.empty()) {
    std::string g;
    for (std::size_t i = 0; i < gaps.size() && i < 10; ++i) g += (i ? ", " : "") + gaps[i];
    if (gaps.size() > 10) g += ", ...";
    std::cerr << "calibrate: warning: --routes " << path << " lists no ring at hosts " << g
              << ": groups spanning those counts are priced without routes\n";
  }
  return r;
}

int run(const CalibrateArgs& a) {
  namespace cb = shardcal::calib;
  const cb::ResultSet rs = cb::read_results(a.results);
  // One profile describes one cluster: results of several are refused unless asked for.
  const std::vector<ClusterId> clusters = clusters_of(rs);
  // The network's ring routes (docs/CALIBRATION.md "Other host counts"), checked before the fit.
  std::optional<cb::Profile::RingRoutes> routes;
  if (!a.routes.empty()) routes = check_routes(cb::read_ring_routes(a.routes), a.routes, clusters);
  std::vector<std::size_t> distinct;  // indices of the first context of each cluster
  std::string mixed_why, hosts_warning;
  for (std::size_t i = 0; i < clusters.size(); ++i) {
    bool fresh = true;
    std::string warn;
    for (std::size_t j : distinct) {
      const Difference d = differ(clusters[i], clusters[j]);
      if (d.refuse.empty()) {
        fresh = false;
        if (!d.warn.empty() && warn.empty())
          warn = clusters[j].text() + " and " + clusters[i].text() + ": " + d.warn;
      }
    }
    if (fresh) {
      if (!distinct.empty() && mixed_why.empty())
        mixed_why = clusters[distinct.front()].text() + " and " + clusters[i].text() + ": " +
                    differ(clusters[i], clusters[distinct.front()]).refuse;
      distinct.push_back(i);
    } else if (!warn.empty() && hosts_warning.empty()) {
      hosts_warning = warn;
    }
  }
  if (distinct.size() > 1 && !a.allow_mixed)
    throw shardcal::Error(
        "the results come from " + std::to_string(distinct.size()) + " different clusters, e.g. " +
        mixed_why +
        "; a profile describes one cluster and a merged fit prices one cluster's sizes with "
        "another's curves: calibrate each cluster's results separately, or pass --allow-mixed "
        "to fit them together on purpose (nothing written)");
  if (distinct.size() > 1)
    std::cout << "calibrate: --allow-mixed: fitting results of " << distinct.size()
              << " clusters together (" << mixed_why
              << "); the profile's provenance lists them\n";
  // The sweep's floor warnings, repeated; files without them (imports, older sweeps) checked
  // here.
  std::vector<std::string> warnings;
  if (!hosts_warning.empty())
    warnings.push_back(hosts_warning +
                       "; fitted as one cluster (calibrate them separately if they are not)");
  std::set<std::string> warned_files;
  for (const auto& f : rs.files)
    for (const json& w : f.warnings) {
      warnings.push_back(f.path + ": " + w.value("message", std::string("(no message)")) +
                         " (recorded by the sweep)");
      warned_files.insert(f.path);
    }
  std::vector<shardcal::formats::FloorSample> floor;
  for (const auto& p : rs.collectives) {
    const std::string file = p.where.substr(0, p.where.rfind(':'));
    if (warned_files.count(file)) continue;
    floor.push_back({file + ": " + std::string(shardcal::collective_info(p.op).name) + " mesh=" +
                         p.mesh + " n=" + std::to_string(p.group_size),
                     p.hosts_spanned, p.bytes, p.median_s});
  }
  for (const auto& w : shardcal::formats::implausible_floors(floor)) warnings.push_back(w.message);
  for (const std::string& w : warnings) std::cerr << "calibrate: warning: " << w << "\n";
  cb::FitOptions opt;
  opt.mode = resolve_mode(a.mode, rs);
  const cb::Calibration cal = cb::calibrate(rs, opt);
  cb::Profile profile =
      cb::make_profile(rs, cal, a.name.empty() ? default_cluster_name(rs) : a.name);
  // Provenance: the clusters that went in, and the warnings.
  json extra = profile.json_extra.empty() ? json::object() : json::parse(profile.json_extra);
  json cl = json::array();
  for (std::size_t i : distinct) cl.push_back(clusters[i].to_json());
  extra["provenance"]["clusters"] = cl;
  extra["provenance"]["mixed_clusters"] = distinct.size() > 1;
  extra["provenance"]["warnings"] = warnings;
  profile.json_extra = extra.dump();
  std::cout << cb::quality_report(rs, cal);
  // The link ceiling bounds prices past the measured sizes (docs/CALIBRATION.md "Link ceilings").
  if (profile.link_ceiling) {
    std::cout << "link ceiling: " << profile.link_ceiling->GBps << " GB/s per GPU and direction ("
              << profile.link_ceiling->source << "): no price below S x the collective's link "
              << "bytes / ceiling";
    if (profile.link_ceiling->host_GBps > 0)
      std::cout << "; across hosts none below S x the bytes each host link must carry / "
                << profile.link_ceiling->host_GBps << " GB/s";
    std::cout << "\n";
  }
  if (extra["extra"].contains("link_ceiling_dropped"))
    std::cout << "calibrate: " << extra["extra"]["link_ceiling_dropped"].get<std::string>() << "\n";
  if (routes) {
    profile.ring_routes = *routes;
    std::cout << "ring routes: " << routes->rings.size() << " host counts (" << routes->source
              << "): host transport adds the route latency a larger ring's steps pay\n";
  }
  cb::write_profile_atomic(profile, a.out);
  std::cout << "profile: " << a.out << " (" << cal.models.size() << " model(s))\n";
  return 0;
}

}  // namespace

Runner add_calibrate_command(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Fit the cost model (docs/CALIBRATION.md) to sweep results: one model per collective and link-class "
      "family, piecewise in size, with holdout error; writes a " +
          shardcal::formats::schema_label(shardcal::formats::kProfileSchema,
                                          shardcal::formats::kProfileVersion) +
          " JSON file");
  cmd->add_option("--results", args->results, "Sweep results files (JSON Lines) of one backend")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--out", args->out, "Profile to write (written atomically)")->required();
  cmd->add_option("--name", args->name, "Cluster name in the profile (default: the first host)");
  cmd->add_option("--mode", args->mode,
                  "Timing mode the models describe; auto: the one mode the results hold "
                  "(per_iteration when they hold several); in_job: kernel times imported from "
                  "torch.profiler traces")
      ->check(CLI::IsMember({"auto", "per_iteration", "pipelined", "in_job"}))
      ->capture_default_str();
  cmd->add_option("--routes", args->routes,
                  "Ring routes of the network (routes.json from ring-routes or "
                  "scripts/simulate/host-series.sh): host counts the sweep did not run are priced "
                  "with the route latency and link share their ring takes "
                  "(docs/CALIBRATION.md \"Other host counts\")");
  cmd->add_flag("--allow-mixed", args->allow_mixed,
                "Fit results of different clusters (other GPU names, or, without GPU names, "
                "imported logs of other hosts) into one profile; refused without it");
  return [args] { return run(*args); };
}

}  // namespace shardbench

// Prices of plan steps from a calibrated profile (shardcal/calibrate/step_cost.hpp,
// docs/PLANNER.md "Costs").
#include "shardcal/calibrate/step_cost.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>

#include "shardcal/error.hpp"
#include "shardcal/formats/link_class.hpp"

namespace shardcal::calib {

LinkClass group_link_class(int group_size, int hosts_spanned, int concurrent_groups) {
  if (group_size < 1 || hosts_spanned < 1 || concurrent_groups < 1)
    throw Error("link class: group size " + std::to_string(group_size) + ", hosts " +
                std::to_string(hosts_spanned) + ", concurrent groups " +
                std::to_string(concurrent_groups) + " must all be >= 1");
  LinkClass lc;
  lc.group_size = group_size;
  lc.hosts = group_size % hosts_spanned == 0 ? hosts_spanned : group_size;
  lc.ranks_per_host = group_size / lc.hosts;
  lc.concurrent_groups = concurrent_groups;
  return lc;
}

Prediction price_collective(const Profile& p, Collective c, const LinkClass& lc, double bytes,
                            std::span<const std::int64_t> counts, int elem_size,
                            std::optional<DType> dtype) {
  return predict(p, c, lc, bytes, counts, elem_size, dtype);
}

LinkClass mesh_dim_link_class(const DeviceMesh& mesh, int mesh_dim, int ranks_per_host) {
  if (ranks_per_host < 1)
    throw Error("ranks per host = " + std::to_string(ranks_per_host) +
                ": must be >= 1 (how many consecutive ranks share a host)");
  if (mesh_dim < 0 || mesh_dim >= mesh.ndim())
    throw Error("mesh dim " + std::to_string(mesh_dim) + " does not exist on mesh " +
                mesh.to_string());
  const int n_hosts = (mesh.size() + ranks_per_host - 1) / ranks_per_host;
  // Row-major ranks: a group is base + k * stride (k < extent) for every base whose coordinate
  // on mesh_dim is 0. Its ranks ascend, so its hosts (rank / ranks_per_host) are counted by
  // their changes, with no per-group set or rank list.
  const int m = mesh.extent(mesh_dim);
  int stride = 1;
  for (int j = mesh_dim + 1; j < mesh.ndim(); ++j) stride *= mesh.extent(j);
  const int groups = mesh.size() / m;
  int max_hosts = 1;
  for (int hi = 0; hi < mesh.size(); hi += m * stride)
    for (int lo = 0; lo < stride; ++lo) {
      int hosts = 1, host = (hi + lo) / ranks_per_host;
      for (int k = 1; k < m; ++k) {
        const int h = (hi + lo + k * stride) / ranks_per_host;
        hosts += h != host, host = h;
      }
      max_hosts = std::max(max_hosts, hosts);
    }
  // The results reader's rule for groups at once per host.
  return group_link_class(mesh.extent(mesh_dim), max_hosts,
                          formats::concurrent_groups(groups, max_hosts, n_hosts));
}

double local_copy_GBps(const Profile& p) {
  return p.memory == "cuda" ? kLocalCopyGBpsCuda : kLocalCopyGBpsHost;
}

bool prices_copies(const Profile& p) { return p.backend != "model"; }

namespace {

StepPrice price_with_link(const Profile& p, const Step& s, const StepTraffic& t,
                          const LinkClass& lc) {
  StepPrice out;
  out.link = lc;
  if (!t.collective) {
    const double bytes = double(t.max_out_bytes);  // what the local step writes
    const double bw = local_copy_GBps(p);
    out.time_us = bytes / (bw * 1e3) + kLocalStepUs;
    out.prediction.time_us = out.time_us;
    out.prediction.note = "local step: " + std::to_string(std::int64_t(bytes)) + " B at " +
                          std::to_string(int(bw)) + " GB/s (" + p.memory + " memory copy) + " +
                          std::to_string(kLocalStepUs) + " us";
    return out;
  }
  out.prediction = price_collective(p, *t.collective, out.link, double(t.bytes), t.counts,
                                    int(t.elem_size), s.before.meta().dtype);
  out.time_us = out.prediction.time_us;
  if (prices_copies(p) && t.max_copy_bytes > 0) {
    // Measured on 4 local MPI ranks (docs/PERFORMANCE.md, "pack/unpack in the prices"): without
    // this, S(0),R -> R,S(0) on 2x2 chose all_to_all + all_gather on S(1) + all_to_all,
    // predicted 3% cheaper than all_gather + slice and measured 4x slower.
    const double bw = local_copy_GBps(p);
    const double copy_us = double(t.max_copy_bytes) / (bw * 1e3);
    out.time_us += copy_us;
    if (!out.prediction.note.empty()) out.prediction.note += "; ";
    out.prediction.note += "+ pack/unpack " + std::to_string(t.max_copy_bytes) + " B at " +
                           std::to_string(int(bw)) + " GB/s";
  }
  return out;
}

// Link classes per (mesh, mesh dim), computed once per cost function.
struct LinkMemo {
  std::mutex mu;
  std::map<std::pair<std::vector<int>, int>, LinkClass> map;
  LinkClass get(const DeviceMesh& mesh, int dim, int rph) {
    std::lock_guard<std::mutex> lock(mu);
    auto key = std::make_pair(mesh.shape(), dim);
    auto it = map.find(key);
    if (it != map.end()) return it->second;
    const LinkClass lc = mesh_dim_link_class(mesh, dim, rph);
    map.emplace(std::move(key), lc);
    return lc;
  }
};

}  // namespace

StepPrice price_step(const Profile& p, const Step& s, const StepTraffic& t, int ranks_per_host) {
  return price_with_link(p, s, t, mesh_dim_link_class(s.before.mesh(), s.mesh_dim, ranks_per_host));
}

StepCostFn profile_step_cost(const Profile& p, int ranks_per_host) {
  if (ranks_per_host < 1)
    throw Error("ranks per host = " + std::to_string(ranks_per_host) +
                ": must be >= 1 (how many consecutive ranks share a host)");
  auto prof = std::make_shared<const Profile>(p);
  auto memo = std::make_shared<LinkMemo>();
  return [prof, memo, ranks_per_host](const Step& s, const StepTraffic& t) -> double {
    if (t.collective && std::none_of(prof->models.begin(), prof->models.end(),
                                     [&](const Model& m) { return m.collective == *t.collective; }))
      return std::numeric_limits<double>::infinity();
    return price_with_link(*prof, s, t, memo->get(s.before.mesh(), s.mesh_dim, ranks_per_host))
        .time_us;
  };
}

}  // namespace shardcal::calib

// Prices of plan steps from a calibrated profile (shardcal/calibrate/step_cost.hpp,
// docs/PLANNER.md "Costs").
#include "shardcal/calibrate/step_cost.hpp"

#include "shardcal/calibrate/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

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
  lc.spanned_hosts = hosts_spanned;
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
  if (p.local_copy) {  // learned by calibrate; 0 ns per byte = free (infinite bandwidth)
    const double ns = p.local_copy->ns_per_byte;
    return ns > 0 ? 1.0 / ns : std::numeric_limits<double>::infinity();
  }
  return p.memory == "cuda" ? kLocalCopyGBpsCuda : kLocalCopyGBpsHost;
}

std::string copy_bandwidth_text(const Profile& p) {
  const double bw = local_copy_GBps(p);
  char num[32];
  std::snprintf(num, sizeof num, "%.4g", bw);
  std::string s = std::isinf(bw) ? std::string("no cost") : std::string(num) + " GB/s";
  return s + (p.local_copy ? " (fitted)" : " (" + p.memory + " memory copy)");
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
                          copy_bandwidth_text(p) + " + " + std::to_string(kLocalStepUs) + " us";
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
                           copy_bandwidth_text(p);
  }
  return out;
}

// The collectives plan steps run (StepKind): all_gather, reduce_scatter, all_reduce,
// all_to_all, the first four of the table.
constexpr std::size_t kStepCollectives = std::size_t(Collective::AllToAll) + 1;

// What a profile's price needs beyond a step's traffic on one (mesh, dtype): per mesh dim its
// link class and, per collective, the model predict() chooses (its choice depends on the link
// class and dtype only, not on what moves); null when the profile has no model for the
// collective (the step is priced +inf). Filled on first use of each (mesh dim, collective).
struct MeshPrices {
  struct Slot {
    bool ready = false;
    LinkClass lc;
    const Model* model = nullptr;
    HostTransport transport;  // predict()'s host-count transport for the class, if any
  };
  std::vector<int> shape;
  DType dtype;
  std::vector<Slot> slots;  // [mesh dim * kStepCollectives + collective]
};

// One per cost function, shared by its searches (and threads).
struct PriceMemo {
  std::mutex mu;
  std::vector<std::shared_ptr<MeshPrices>> meshes;
};

// The profile's price of a step from its traffic on one (mesh, dtype), for one search: the
// memo's answers are copied into per-search slots on first use, so per step, after that first
// use, pricing takes no lock, builds no string and allocates nothing (construction locks and
// allocates, once per search). Not thread-safe: one per search/thread. Same arithmetic as
// price_with_link (the planner's prices and `shardbench plan`'s explanations agree to the bit).
class TrafficPricer {
 public:
  TrafficPricer(std::shared_ptr<const Profile> prof, std::shared_ptr<PriceMemo> memo,
                const DeviceMesh& mesh, DType dtype, int ranks_per_host)
      : prof_(std::move(prof)),
        memo_(std::move(memo)),
        rph_(ranks_per_host),
        bw_(local_copy_GBps(*prof_)),
        copies_(prices_copies(*prof_)),
        slots_(std::size_t(mesh.ndim()) * kStepCollectives) {
    std::lock_guard<std::mutex> lock(memo_->mu);
    for (const auto& m : memo_->meshes)
      if (m->dtype == dtype && m->shape == mesh.shape()) mesh_ = m;
    if (!mesh_) {
      mesh_ = std::make_shared<MeshPrices>(MeshPrices{mesh.shape(), dtype, slots_});
      memo_->meshes.push_back(mesh_);
    }
  }

  double operator()(const StepTraffic& t) {
    if (!t.collective) return double(t.max_out_bytes) / (bw_ * 1e3) + kLocalStepUs;
    const MeshPrices::Slot& sl = slot(t.mesh_dim, *t.collective);
    if (!sl.model) return std::numeric_limits<double>::infinity();
    const Model& m = *sl.model;
    // predict()'s arithmetic for the chosen model (calibrate/src/predict.cpp).
    const double s_eff = effective_bytes(*t.collective, m.effective_size, double(t.bytes),
                                         t.counts, int(t.elem_size), sl.lc.group_size);
    double time_us =
        sl.transport.active
            ? price_transported_time_us(m, sl.transport, sl.lc.concurrent_groups, s_eff)
            : price_time_us(m, sl.lc.group_size, sl.lc.concurrent_groups, s_eff, floor_hosts(sl.lc));
    if (copies_ && t.max_copy_bytes > 0) time_us += double(t.max_copy_bytes) / (bw_ * 1e3);
    return time_us;
  }

 private:
  const MeshPrices::Slot& slot(int dim, Collective c) {
    if (std::size_t(c) >= kStepCollectives)
      throw Error("step price: collective " + std::string(collective_info(c).name) +
                  " is not one a plan step runs");
    const std::size_t k = std::size_t(dim) * kStepCollectives + std::size_t(c);
    if (dim < 0 || k >= slots_.size())
      throw Error("step price: mesh dim " + std::to_string(dim) + " out of range for the " +
                  std::to_string(slots_.size() / kStepCollectives) +
                  "-dim mesh this price was bound to (bind the cost for the step's mesh)");
    MeshPrices::Slot& sl = slots_[k];
    if (sl.ready) return sl;
    std::lock_guard<std::mutex> lock(memo_->mu);
    MeshPrices::Slot& shared = mesh_->slots[k];
    if (!shared.ready) {
      // The link class is the mesh dim's, whichever collective asked first.
      const MeshPrices::Slot* known = nullptr;
      for (std::size_t q = 0; q < kStepCollectives; ++q)
        if (mesh_->slots[std::size_t(dim) * kStepCollectives + q].ready)
          known = &mesh_->slots[std::size_t(dim) * kStepCollectives + q];
      shared.lc = known ? known->lc
                        : mesh_dim_link_class(DeviceMesh(mesh_->shape), dim, rph_);
      const bool any = std::any_of(prof_->models.begin(), prof_->models.end(),
                                   [&](const Model& m) { return m.collective == c; });
      if (any) {
        const Prediction pr = predict(*prof_, c, shared.lc, 0.0, {}, 1, mesh_->dtype);
        shared.model = pr.model;
        shared.transport = pr.transport;
      }
      shared.ready = true;
    }
    sl = shared;
    return sl;
  }

  std::shared_ptr<const Profile> prof_;
  std::shared_ptr<PriceMemo> memo_;
  std::shared_ptr<MeshPrices> mesh_;
  int rph_;
  double bw_;
  bool copies_;
  std::vector<MeshPrices::Slot> slots_;
};

}  // namespace

StepPrice price_step(const Profile& p, const Step& s, const StepTraffic& t, int ranks_per_host) {
  return price_with_link(p, s, t, mesh_dim_link_class(s.before.mesh(), s.mesh_dim, ranks_per_host));
}

StepCostFn profile_step_cost(const Profile& p, int ranks_per_host) {
  return profile_step_cost(std::make_shared<const Profile>(p), ranks_per_host);
}

StepCostFn profile_step_cost(std::shared_ptr<const Profile> prof, int ranks_per_host) {
  if (!prof) throw Error("profile_step_cost: no profile");
  if (ranks_per_host < 1)
    throw Error("ranks per host = " + std::to_string(ranks_per_host) +
                ": must be >= 1 (how many consecutive ranks share a host)");
  auto memo = std::make_shared<PriceMemo>();
  return StepCostFn::from_traffic(
      [prof, memo, ranks_per_host](const DeviceMesh& mesh, DType dtype) -> TrafficCostFn {
        return TrafficPricer(prof, memo, mesh, dtype, ranks_per_host);
      });
}

}  // namespace shardcal::calib

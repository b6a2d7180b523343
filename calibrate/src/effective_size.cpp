// Uneven shards: which effective size (total bytes, or n x the largest shard) predicts the
// v-form collectives' times best (docs/CALIBRATION.md "Uneven shards: effective size").
#include "effective_size.hpp"

#include <algorithm>
#include <cmath>

namespace shardcal::calib::fitter {
namespace {

// The model that prices a point of op: of its dtype (or dtype-pooled), nearest in hosts, then in
// concurrency; *exact: same hosts and the concurrency inside the model's measured range.
const Model* find_model(const std::vector<Model>& models, Collective op, int hosts, int conc,
                        DType dt, bool* exact) {
  const Model* best = nullptr;
  double best_d = INFINITY;
  for (const Model& m : models) {
    if (m.collective != op) continue;
    if (m.dtype && *m.dtype != dt) continue;
    // A model pooled over concurrencies covers its measured range.
    const Range cr = effective_domain(m).concurrent_groups;
    const double cd = cr.contains(conc) ? 0.0
                      : conc < cr.lo    ? std::log2(cr.lo / conc)
                                        : std::log2(conc / cr.hi.value_or(conc));
    const double d = 10.0 * std::abs(std::log2(double(m.hosts) / hosts)) + cd;
    if (d < best_d) {
      best_d = d;
      best = &m;
    }
  }
  if (exact) *exact = best && best_d == 0;
  return best;
}

}  // namespace

void choose_effective_sizes(const std::vector<const CollectivePoint*>& uneven, Calibration& cal) {
  for (const auto& info : kCollectives) {
    if (!info.has_v_form) continue;
    EffectiveSizeComparison e;
    e.collective = info.op;
    double st = 0, sn = 0;
    for (const CollectivePoint* p : uneven) {
      if (p->op != info.op) continue;
      bool exact = false;
      const Model* m =
          find_model(cal.models, p->op, p->hosts_spanned, p->concurrent_groups, p->dtype, &exact);
      if (!m || !exact) continue;
      const double y = p->median_s * 1e6;
      const int conc = p->concurrent_groups;
      st += std::abs(model_time_us(*m, p->bytes_total, p->group_size, nullptr, conc) - y) / y;
      sn += std::abs(model_time_us(*m, p->bytes_eff, p->group_size, nullptr, conc) - y) / y;
      ++e.points;
    }
    if (e.points > 0) {
      e.measured = true;
      e.mape_total = st / e.points;
      e.mape_n_max = sn / e.points;
      e.chosen = e.mape_total < e.mape_n_max ? EffectiveSize::Total : EffectiveSize::NTimesMax;
    }
    for (Model& m : cal.models)
      if (m.collective == info.op) m.effective_size = e.chosen;
    bool any_model = std::any_of(cal.models.begin(), cal.models.end(),
                                 [&](const Model& m) { return m.collective == info.op; });
    if (any_model) cal.effective_size.push_back(e);
  }
}

}  // namespace shardcal::calib::fitter

#include "sweep/regret.hpp"

#include <algorithm>
#include <optional>

namespace shardbench::sweep {

Regret regret_of(const std::vector<MeasuredPlan>& plans) {
  Regret r;
  if (plans.empty()) return r;
  const Stats& chosen = plans[0].stats;
  std::optional<double> best;  // unset until a plan counts (a median of 0 is a valid time)
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const MeasuredPlan& p = plans[i];
    if (i > 0 && p.wrong) {
      ++r.left_out_wrong;
      continue;
    }
    if (p.stats.n == 0) continue;
    best = best ? std::min(*best, p.stats.p50) : p.stats.p50;
    r.significant = r.significant || chosen.ci_lo > p.stats.ci_hi;
  }
  if (best && *best > 0) r.regret = std::max(1.0, chosen.p50 / *best);
  return r;
}

}  // namespace shardbench::sweep

#pragma once
// The regret of `shardbench validate` (docs/RESULTS_FORMAT.md, "Validate file"): measured median
// of the chosen plan over the best measured median among the plans of a transition.
#include <cstddef>
#include <vector>

#include "sweep/stats.hpp"

namespace shardbench::sweep {

struct MeasuredPlan {
  Stats stats;         // over the pooled slowest-rank samples
  bool wrong = false;  // produced wrong data (already counted in "wrong")
};

struct Regret {
  double regret = 1.0;             // chosen median / best median (>= 1)
  bool significant = false;        // chosen's median CI wholly above a counted plan's
  std::size_t left_out_wrong = 0;  // plans other than the chosen one left out: wrong data
};

// plans[0] is the chosen plan. The best median is the smallest over the chosen plan and every
// other plan that produced correct data: a plan that produced wrong data is no alternative (a
// fast wrong plan would inflate the regret), so it is left out, as it is of `significant`. The
// chosen plan always counts (its own wrong data is reported in "wrong", not as regret). A best
// median of 0 (below the timer's resolution) gives no finite ratio: regret 1.
Regret regret_of(const std::vector<MeasuredPlan>& plans);

}  // namespace shardbench::sweep

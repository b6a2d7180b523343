#pragma once
// A family's model (family_fit.cpp): the segment count by k-fold held-out error over sizes, the
// piecewise fit (segmentation.hpp), its quality and measured curves. Internal to calibrate/src.
#include <compare>
#include <optional>
#include <variant>
#include <vector>

#include "fit_kernel.hpp"
#include "segmentation.hpp"
#include "shardcal/calibrate/fit.hpp"

namespace shardcal::calib::fitter {

// What one model is fitted for (with its dtype where dtypes are split).
struct FamilyKey {
  Collective op;
  int hosts, conc;
  auto operator<=>(const FamilyKey&) const = default;
};

struct FamilyFit {
  Piecewise p;
  int K = 1;                      // segments
  std::optional<double> holdout;  // k-fold holdout MAPE over sizes at K
};

// The piecewise fit with the segment count chosen by held-out error (none: no count fits).
std::optional<FamilyFit> fit_best(const std::vector<Obs>& obs, Collective op, const FitOptions& opt,
                                  bool contention);

// The model of one family (dt: the dtype of a dtype-split family), or why none was fitted (fewer
// than opt.min_sizes distinct sizes, or the fit failed).
std::variant<Model, UnfittedModel> fit_family(const std::vector<Obs>& obs, const FamilyKey& key,
                                              std::optional<DType> dt, const FitOptions& opt,
                                              bool contention);

}  // namespace shardcal::calib::fitter

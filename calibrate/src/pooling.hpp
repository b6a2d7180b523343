#pragma once
// Pooling (pooling.cpp): which link classes of a collective and hosts pattern share one model
// (with or without the contention term) and which dtypes of a family do. Internal to
// calibrate/src.
#include <map>
#include <utility>
#include <vector>

#include "family_fit.hpp"
#include "fit_kernel.hpp"
#include "shardcal/calibrate/fit.hpp"

namespace shardcal::calib::fitter {

// The even-shard points of each (collective, hosts spanned).
using ObsByHosts = std::map<std::pair<Collective, int>, std::vector<Obs>>;

// What one model (or one per dtype) is fitted to.
struct Family {
  FamilyKey key;
  std::vector<Obs> obs;
  bool contention = false;  // the model carries the contention term
};

// Families: one per (collective, hosts) where its classes pool (with the contention term where
// the data show one), else one per concurrency as well; the classes a residual test finds at odds
// are split off one at a time, worst first. The decision of every (collective, hosts) with >= 2
// concurrencies is appended to `decisions`.
std::vector<Family> pool_link_classes(const ObsByHosts& by_hosts, const FitOptions& opt,
                                      std::vector<ClassPoolingDecision>& decisions);

// Fits each family, one model over its dtypes unless a dtype's mean relative residual under the
// pooled fit exceeds opt.dtype_bias_min and 3 SE (then one per dtype); appends to cal.models,
// cal.unfitted and cal.dtypes.
void fit_with_dtype_pooling(const std::vector<Family>& fams, const FitOptions& opt,
                            Calibration& cal);

}  // namespace shardcal::calib::fitter

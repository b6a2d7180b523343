// The fitter: sweep points -> piecewise ring models per (collective, link-class family).
// calibrate() is the orchestration; its steps live beside it (calibrate/src): the kernel
// (fit_kernel.cpp: robust least squares of one segment), segmentation.cpp (the piecewise fit),
// family_fit.cpp (segment count, quality, curves), pooling.cpp (link classes, contention,
// dtypes), effective_size.cpp (uneven shards), copy_cost.cpp (transitions, copy cost).
// Method and citations: docs/CALIBRATION.md.
#include "shardcal/calibrate/fit.hpp"

#include <string>
#include <vector>

#include "copy_cost.hpp"
#include "effective_size.hpp"
#include "fit_text.hpp"
#include "pooling.hpp"
#include "shardcal/error.hpp"

namespace shardcal::calib {

using fit_text::key_name;

Calibration calibrate(const ResultSet& rs, const FitOptions& options) {
  FitOptions opt = options;
  opt.channel_ramp = rs.backend == "nccl";  // (FitOptions::channel_ramp: not the caller's to set)
  Calibration cal;
  cal.options = opt;
  // Even points -> fit observations per family; uneven points kept for the S_eff comparison.
  fitter::ObsByHosts by_hosts;  // (collective, hosts)
  std::vector<const CollectivePoint*> uneven;
  for (const CollectivePoint& p : rs.collectives) {
    if (p.mode != opt.mode) {
      ++cal.points_other_mode;
      continue;
    }
    ++cal.points_used;
    if (p.uneven) {
      uneven.push_back(&p);
      continue;
    }
    by_hosts[{p.op, p.hosts_spanned}].push_back(
        fitter::Obs{p.bytes, p.group_size, p.median_s * 1e6, p.dtype, p.concurrent_groups, p.mesh});
  }
  for (const TransitionPoint& t : rs.transitions)
    if (t.mode == opt.mode)
      ++cal.points_used;
    else
      ++cal.points_other_mode;
  if (cal.points_used == 0)
    throw Error("no usable point: " + std::to_string(rs.point_records) + " point record(s), " +
                std::to_string(rs.skipped_wrong) + " with wrong > 0, " +
                std::to_string(rs.skipped_failed) + " failed, " +
                std::to_string(cal.points_other_mode) + " in a timing mode other than " + opt.mode +
                "; rerun the sweep (with check on, every point correct)");

  // Families (link classes pooled where they agree), then their models (dtypes pooled likewise).
  const std::vector<fitter::Family> fams =
      fitter::pool_link_classes(by_hosts, opt, cal.class_pooling);
  fitter::fit_with_dtype_pooling(fams, opt, cal);
  if (cal.models.empty()) {
    std::string why;
    for (const auto& u : cal.unfitted)
      why += (why.empty() ? "" : "; ") +
             key_name(u.collective, u.hosts, u.concurrent_groups, u.dtype) + ": " + u.reason;
    throw Error("no model could be fitted (" +
                (why.empty() ? std::string("no even-shard collective point") : why) +
                "); sweep >= " + std::to_string(opt.min_sizes) + " sizes per collective");
  }

  // Uneven shards: which effective size predicts the v-form times best, per collective.
  fitter::choose_effective_sizes(uneven, cal);

  // Transitions: their composition error with the fitted models, and the copy cost.
  fitter::compose_transitions(rs, opt, cal);
  return cal;
}

}  // namespace shardcal::calib

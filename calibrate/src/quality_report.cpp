// The human-readable quality table and decisions `shardbench calibrate` prints
// (docs/CALIBRATION.md "Quality table").
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "fit_kernel.hpp"
#include "fit_text.hpp"
#include "shardcal/calibrate/fit.hpp"
#include "shardcal/error.hpp"
#include "shardcal/formats/utc_time.hpp"

namespace shardcal::calib {

using nlohmann::json;
using fit_text::eff_name;
using fit_text::fmt;
using fit_text::key_name;
using fit_text::pct;

namespace {
// A fitted B above the plausible bound is the fitter's floor (kInvFloor: a segment without size
// term, "flat"): every other fit beyond it falls back to latency only (fit_kernel.hpp).
constexpr double kMaxPrintedBandwidthGBps = fitter::kMaxPlausibleBandwidthGBps;
}  // namespace

std::string quality_report(const ResultSet& rs, const Calibration& cal) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "calibration: backend %s, memory %s, %zu file(s), %d point record(s): %d used, %d "
                "excluded (wrong > 0), %d failed, %d in another timing mode (models describe %s)\n",
                rs.backend.c_str(), rs.memory.c_str(), rs.files.size(), rs.point_records,
                cal.points_used, rs.skipped_wrong, rs.skipped_failed, cal.points_other_mode,
                cal.options.mode.c_str());
  out += buf;
  // "holdout": the model predict() uses (backbone x measured curves), each size left out in
  // turn; the columns after "|" are the backbone's alone (the fitted lines, no curves).
  std::snprintf(buf, sizeof buf, "%-15s %5s %4s %-6s %-10s %4s %4s %8s | %-38s  %s\n", "", "", "",
                "", "", "", "", "in use", "backbone alone", "");
  out += buf;
  std::snprintf(buf, sizeof buf, "%-15s %5s %4s %-6s %-10s %4s %4s %8s | %7s %7s %7s %7s %7s %7s  %s\n",
                "collective", "hosts", "conc", "dtype", "n", "pts", "segs", "holdout", "MAPE",
                "max", "k-fold", "LOGO", "LOMO", "LOCO",
                "segments: [from) alpha+step us, B GB/s[, contention]");
  out += buf;
  std::string fallbacks;
  for (const Model& m : cal.models) {
    std::string ns;
    for (int n : m.group_sizes) ns += (ns.empty() ? "" : ",") + std::to_string(n);
    std::string segs;
    for (const Segment& s : m.segments) {
      segs += (segs.empty() ? "" : " | ") + fmt("%.0f:", s.s_lo);
      for (const TermInfo& t : kTermInfo)  // cost_model.hpp; an absent optional term: nothing
        if (const std::optional<double> v = t.get(s))
          // A slope at the fitter's floor is a segment without size term (docs/CALIBRATION.md
          // "Degenerate fits"): no bandwidth to print.
          segs += t.rate && *v > kMaxPrintedBandwidthGBps ? std::string(" flat")
                                                           : fmt(t.table_format, *v);
    }
    const Domain dom = effective_domain(m);
    const std::string conc = dom.concurrent_groups.hi && *dom.concurrent_groups.hi > dom.concurrent_groups.lo
                                 ? fmt("%.0f-", dom.concurrent_groups.lo) + fmt("%.0f", *dom.concurrent_groups.hi)
                                 : std::to_string(m.concurrent_groups);
    std::snprintf(buf, sizeof buf, "%-15s %5d %4s %-6s %-10s %4d %4zu %8s | %7s %7s %7s %7s %7s %7s  %s\n",
                  std::string(collective_info(m.collective).name).c_str(), m.hosts,
                  conc.c_str(),
                  m.dtype ? std::string(dtype_name(*m.dtype)).c_str() : "pooled", ns.c_str(),
                  m.quality.points, m.segments.size(), pct(m.quality.leave_size_out_mape).c_str(),
                  pct(m.quality.mape).c_str(), pct(m.quality.max_rel_error).c_str(),
                  pct(m.quality.holdout_mape).c_str(),
                  pct(m.quality.leave_group_out_mape).c_str(),
                  pct(m.quality.leave_mesh_out_mape).c_str(),
                  pct(m.quality.leave_concurrency_out_mape).c_str(), segs.c_str());
    out += buf;
    if (!m.json_extra.empty()) {
      const json extra = json::parse(m.json_extra, nullptr, false);
      if (extra.is_object() && extra.contains("fit_fallbacks") && extra["fit_fallbacks"].is_array())
        for (const json& f : extra["fit_fallbacks"])
          if (f.is_object() && f.contains("why") && f["why"].is_string())
            fallbacks += "fallback " + std::string(collective_info(m.collective).name) +
                         " hosts=" + std::to_string(m.hosts) + " conc " + conc + " n=" + ns +
                         ": segment " + f.value("segment", json(0)).dump() + " from " +
                         fmt("%.0f", f.value("s_lo", 0.0)) + " B: " +
                         f["why"].get<std::string>() + "\n";
    }
  }
  out += "holdout: the model predict uses (backbone x measured curve), each measured size left out "
         "in turn (backbone and curves refitted without it); backbone alone: training MAPE, max "
         "error, k-fold over sizes, leave one group size / mesh / concurrency out\n";
  out += fallbacks;
  for (const auto& u : cal.unfitted)
    out += "not fitted: " + key_name(u.collective, u.hosts, u.concurrent_groups, u.dtype) + ": " +
           u.reason + "\n";
  for (const auto& d : cal.class_pooling) {
    std::string res, split;
    for (const auto& [n, c] : d.split_off)
      split += (split.empty() ? "" : ", ") + std::string("n=") + std::to_string(n) + "/c=" +
               std::to_string(c);
    for (const auto& r : d.class_residuals)
      res += (res.empty() ? "" : ", ") + std::string("n=") + std::to_string(r.group_size) +
             "/c=" + std::to_string(r.concurrent_groups) + " " + fmt("%+.1f%%", r.median * 100) +
             (std::isfinite(r.se) ? " (se " + fmt("%.1f%%", r.se * 100) + ")" : " (untested)") +
             (r.differs ? " differs" : "");
    out += "classes " + std::string(collective_info(d.collective).name) +
           " hosts=" + std::to_string(d.hosts) + ": " +
           (d.pooled ? std::string("pooled")
            : d.split_off.empty()
                ? std::string("not pooled, one model per concurrency")
                : "not pooled: split off " + split + " (one model per concurrency), the rest pooled") +
           (d.pooled && d.contention ? " with contention" : "") + " (contention z " +
           fmt("%.1f", d.contention_z) + ", effect " + fmt("%.1f%%", d.contention_effect * 100) +
           "; median residual per class, split at > " +
           fmt("%.0f%%", cal.options.class_bias_min * 100) + " and > 3 SE: " +
           (d.detail.empty() ? res : d.detail) +
           (d.holdout_pooled && d.holdout_separate
                ? "; holdout pooled " + pct(d.holdout_pooled) + ", one model per concurrency " +
                      pct(d.holdout_separate)
                : std::string()) +
           ")\n";
    if (!d.contention_fallback.empty())
      out += "  contention fits beyond plausible (B > " +
             fmt("%.0f", fitter::kMaxPlausibleBandwidthGBps) +
             " GB/s, or the bandwidth term slowed more than c^2 at c groups at once), fitted "
             "without contention: " + d.contention_fallback + "\n";
  }
  for (const auto& d : cal.dtypes)
    if (d.dtypes.size() >= 2)
      out += "dtypes " + key_name(d.collective, d.hosts, d.concurrent_groups, std::nullopt) + ": " +
             (d.pooled ? "pooled" : "fitted separately") + " (" + d.detail + ")\n";
  out += "uneven shards, effective size (MAPE of v-form points priced with the even-shard model):\n";
  for (const auto& e : cal.effective_size) {
    if (!e.measured)
      out += "  " + std::string(collective_info(e.collective).name) +
             ": no uneven points; default n_times_max\n";
    else
      out += "  " + std::string(collective_info(e.collective).name) + ": " +
             std::to_string(e.points) + " points, total " + pct(e.mape_total) + ", n x max " +
             pct(e.mape_n_max) + " -> " + eff_name(e.chosen) + "\n";
  }
  if (cal.composition_mape) {
    int extr = 0;
    double worst = 0;
    for (const auto& t : cal.transitions) {
      extr += t.extrapolated;
      worst = std::max(worst, std::abs(t.rel_error));
    }
    out += "transitions predicted from their steps: " + std::to_string(cal.transitions.size()) +
           ", composition MAPE " + pct(cal.composition_mape) + ", max " + pct(worst) + " (" +
           std::to_string(extr) + " used an extrapolated model)\n";
    const LocalCopyFit& lc = cal.local_copy;
    char line[256];
    if (lc.fitted && lc.composition_mape_fitted)
      std::snprintf(line, sizeof line,
                    "copy cost: %.4g ns/B (se %.2g%s; fixed %.3g us) from %d local-only transitions; "
                    "composition MAPE at it %s, at the built-in %.4g ns/B %s: %s\n",
                    lc.ns_per_byte, lc.se_ns_per_byte, lc.clamped ? ", clamped" : "", lc.alpha_us,
                    lc.transitions, pct(lc.composition_mape_fitted).c_str(), lc.default_ns_per_byte,
                    pct(lc.composition_mape_default).c_str(),
                    lc.why.c_str());
    else
      std::snprintf(line, sizeof line,
                    "copy cost: built-in %.4g ns/B (%d local-only transitions measured; %d at two "
                    "sizes or more needed to fit it)\n",
                    lc.default_ns_per_byte, lc.transitions, kMinCopyTransitions);
    out += line;
  } else {
    out += "transitions: none to predict\n";
  }
  return out;
}

}  // namespace shardcal::calib

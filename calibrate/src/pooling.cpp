// Pooling: which link classes (group size, concurrent groups) of a collective and hosts pattern
// share one model, with or without the contention term (docs/CALIBRATION.md "Pooling link
// classes and contention"), and which dtypes of a family share one (docs/CALIBRATION.md
// "Dtypes").
#include "pooling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>
#include <utility>

#include "family_fit.hpp"
#include "fit_text.hpp"
#include "segmentation.hpp"
#include "shardcal/formats/median.hpp"

namespace shardcal::calib::fitter {
namespace {

using fit_text::fmt;

constexpr int kMinClassPoints = 3;  // fewer: a class's residual is not tested

// Whether the classes (group size, concurrency) of one collective and hosts pattern can share
// one model (docs/CALIBRATION.md "Pooling link classes"). *contention says whether the pooled
// model carries the contention term.
ClassPoolingDecision decide_pooling(const std::vector<Obs>& obs, Collective op, int hosts,
                                    const FitOptions& opt, bool* contention) {
  ClassPoolingDecision d;
  d.collective = op;
  d.hosts = hosts;
  std::set<std::pair<int, int>> classes;
  for (const Obs& o : obs) classes.insert({o.n, o.c});
  d.classes.assign(classes.begin(), classes.end());
  *contention = false;
  if (int(distinct_sizes(obs).size()) < opt.min_sizes) {
    d.detail = "too few sizes to test; pooled";
    return d;
  }
  const std::vector<int> cs = distinct_cs(obs);
  auto with = fit_best(obs, op, opt, true);
  if (!with) {
    d.detail = "fit failed; pooled";
    return d;
  }
  // Implausible contention fits fell back to none in their segments (fit_segment): said here,
  // since the pooled model may not keep the term at all.
  for (std::size_t k = 0; k < with->p.coef.size(); ++k) {
    const Coef& f = with->p.coef[k];
    if (!f.contention_dropped) continue;
    d.contention_fallback += (d.contention_fallback.empty() ? "" : "; ") + std::string("segment ") +
                             std::to_string(k) + " from " + fmt("%.0f", with->p.lo[k]) +
                             " B: gamma " + fmt("%.4g", f.dropped_gamma) + ", B " +
                             (f.dropped_B_GBps >= 0.999 / (kInvFloor * 1e3)
                                  ? std::string("unresolved")
                                  : fmt("%.4g", f.dropped_B_GBps) + " GB/s");
  }
  // Contention: kept when, in one and the same segment, the term is > 3 standard errors from 0
  // and slows the bandwidth term by more than the minimum effect at the largest measured
  // concurrency (the z and effect printed are that segment's, else the largest of each).
  for (const Coef& k : with->p.coef) {
    const double z = std::isfinite(k.se_kap) && k.se_kap > 0 ? k.kap / k.se_kap : 0.0;
    const double effect = k.kap / k.inv * double(cs.back() - 1);
    const bool sig = z > 3 && effect > opt.class_bias_min;
    if (sig && !*contention)
      d.contention_z = z, d.contention_effect = effect;
    else if (!*contention) {
      d.contention_z = std::max(d.contention_z, z);
      d.contention_effect = std::max(d.contention_effect, effect);
    }
    *contention = *contention || sig;
  }
  d.contention = *contention;
  std::optional<FamilyFit> fit = *contention ? with : fit_best(obs, op, opt, false);
  if (!fit) fit = with;
  d.holdout_pooled = fit->holdout;
  // Per class: the median relative residual under the pooled fit and its standard error against
  // the pooled robust scale (SE of a median = 1.2533 sigma / sqrt(m)). The median needs no
  // clipping to resist a few 2-3x outliers, so a class 2-3x off shows its full offset; a class
  // with fewer than kMinClassPoints points is not tested.
  std::vector<double> r(obs.size()), ar(obs.size());
  for (std::size_t i = 0; i < obs.size(); ++i) {
    r[i] = (obs[i].y - pw_eval(fit->p, obs[i], op)) / obs[i].y;
    ar[i] = std::abs(r[i]);
  }
  const double sigma = std::max(formats::median_or_zero(ar) / 0.6745, 1e-3);
  for (const auto& [n, c] : classes) {
    std::vector<double> v;
    for (std::size_t i = 0; i < obs.size(); ++i)
      if (obs[i].n == n && obs[i].c == c) v.push_back(r[i]);
    const double mid = formats::median_or_zero(v);
    const bool tested = int(v.size()) >= kMinClassPoints;
    const double se = tested ? 1.2533 * sigma / std::sqrt(double(v.size())) : INFINITY;
    const bool differs = tested && std::abs(mid) > opt.class_bias_min && std::abs(mid) > 3 * se;
    d.pooled = d.pooled && !differs;
    d.class_residuals.push_back({n, c, mid, se, differs});
  }
  return d;
}

// A pooled model must also predict held-out sizes as well as the classes' own models (one per
// concurrency, as a split family gets): where the pooled form cannot follow each class's shape
// (e.g. groups sharing a link overlap less at small sizes than one group alone), the residual
// test passes on the medians while the segments are a compromise that misses held-out sizes of
// both. The pooled model (its holdout from decide_pooling) is kept unless the separate models'
// k-fold holdout MAPE, over the same points, is lower by the segment-count gain margin; then
// d.pooled is cleared.
void compare_pooled_holdout(const std::vector<Obs>& all, Collective op, const FitOptions& opt,
                            ClassPoolingDecision& d) {
  if (!d.holdout_pooled) return;
  double sum = 0;
  std::size_t points = 0;
  for (int c : distinct_cs(all)) {
    std::vector<Obs> part;
    for (const Obs& o : all)
      if (o.c == c) part.push_back(o);
    if (int(distinct_sizes(part).size()) < opt.min_sizes) return;
    const auto own = fit_best(part, op, opt, false);
    if (!own || !own->holdout) return;
    sum += *own->holdout * double(part.size());
    points += part.size();
  }
  d.holdout_separate = sum / double(points);
  if (*d.holdout_separate < *d.holdout_pooled * (1.0 - opt.more_segments_gain)) d.pooled = false;
}

// The class most at odds with the others under a pooling decision's fit: the largest
// |median relative residual| (a class far off shows its full offset; see decide_pooling).
std::pair<int, int> worst_class(const ClassPoolingDecision& d) {
  const ClassResidual* w = &d.class_residuals.front();
  for (const ClassResidual& r : d.class_residuals)
    if (std::abs(r.median) > std::abs(w->median)) w = &r;
  return {w->group_size, w->concurrent_groups};
}

}  // namespace

std::vector<Family> pool_link_classes(const ObsByHosts& by_hosts, const FitOptions& opt,
                                      std::vector<ClassPoolingDecision>& decisions) {
  std::vector<Family> fams;
  // Classes not pooled: one family per concurrency (the model key) of obs.
  const auto per_concurrency = [&fams](Collective op, int hosts, const std::vector<Obs>& obs) {
    for (int c : distinct_cs(obs)) {
      Family f{{op, hosts, c}, {}, false};
      for (const Obs& o : obs)
        if (o.c == c) f.obs.push_back(o);
      fams.push_back(std::move(f));
    }
  };
  for (const auto& [hk, all] : by_hosts) {
    const std::vector<int> cs = distinct_cs(all);
    bool contention = false;
    if (cs.size() >= 2) {
      ClassPoolingDecision d = decide_pooling(all, hk.first, hk.second, opt, &contention);
      if (d.pooled) compare_pooled_holdout(all, hk.first, opt, d);
      if (d.pooled) {
        decisions.push_back(d);
        fams.push_back({{hk.first, hk.second, cs.front()}, all, contention});
        continue;
      }
      // Pooled residuals pass, held-out sizes do not: one model per concurrency.
      if (d.holdout_separate) {
        d.contention = false;
        decisions.push_back(d);
        per_concurrency(hk.first, hk.second, all);
        continue;
      }
      // Split off the worst class, one at a time, until the rest pools (or holds one
      // concurrency); the split classes get one model per concurrency.
      std::vector<Obs> rest = all, split;
      bool rest_pooled = false, rest_contention = false;
      ClassPoolingDecision cur = d;
      while (distinct_cs(rest).size() >= 2) {
        bool ct = false;
        if (rest.size() < all.size()) {
          cur = decide_pooling(rest, hk.first, hk.second, opt, &ct);
          if (cur.pooled) {
            rest_pooled = true;
            rest_contention = ct;
            break;
          }
        }
        if (cur.class_residuals.empty()) break;
        const auto k = worst_class(cur);
        d.split_off.push_back(k);
        std::vector<Obs> keep;
        for (const Obs& o : rest) (std::pair{o.n, o.c} == k ? split : keep).push_back(o);
        rest = std::move(keep);
      }
      const std::vector<int> rcs = distinct_cs(rest);
      const std::vector<int> scs = distinct_cs(split);
      const bool clash =
          !rcs.empty() && std::find(scs.begin(), scs.end(), rcs.front()) != scs.end();
      for (ClassResidual& r : d.class_residuals)
        r.differs = std::find(d.split_off.begin(), d.split_off.end(),
                              std::pair{r.group_size, r.concurrent_groups}) != d.split_off.end();
      if (!clash && !rest.empty()) {
        d.contention = rest_pooled && rest_contention;
        decisions.push_back(d);
        fams.push_back({{hk.first, hk.second, rcs.front()}, rest, d.contention});
        per_concurrency(hk.first, hk.second, split);
        continue;
      }
      // A split class shares the rest's concurrency (the model key): one model per concurrency.
      d.split_off.clear();
      d.contention = false;
      decisions.push_back(d);
    }
    per_concurrency(hk.first, hk.second, all);
  }
  return fams;
}

void fit_with_dtype_pooling(const std::vector<Family>& fams, const FitOptions& opt,
                            Calibration& cal) {
  for (const auto& [key, obs, contention] : fams) {
    std::set<DType> dts;
    for (const Obs& o : obs) dts.insert(o.dtype);
    DtypeDecision dd{key.op, key.hosts, key.conc, {dts.begin(), dts.end()}, true, ""};
    auto pooled = fit_family(obs, key, std::nullopt, opt, contention);
    if (dts.size() >= 2 && std::holds_alternative<Model>(pooled)) {
      const Model& pm = std::get<Model>(pooled);
      bool split = false;
      for (DType d : dts) {
        std::vector<double> r;
        for (const Obs& o : obs)
          if (o.dtype == d) r.push_back((o.y - model_time_us(pm, o.s, o.n, nullptr, o.c)) / o.y);
        const double mean = std::accumulate(r.begin(), r.end(), 0.0) / double(r.size());
        double var = 0;
        for (double x : r) var += (x - mean) * (x - mean);
        const double se =
            r.size() > 1 ? std::sqrt(var / double(r.size() - 1) / double(r.size())) : INFINITY;
        const bool differs = std::abs(mean) > opt.dtype_bias_min && std::abs(mean) > 3 * se;
        split = split || differs;
        dd.detail += std::string(dd.detail.empty() ? "" : ", ") + std::string(dtype_name(d)) +
                     " mean residual " + fmt("%+.1f%%", mean * 100) + " (se " +
                     fmt("%.1f%%", se * 100) + ")" + (differs ? " differs" : "");
      }
      if (split) {
        dd.pooled = false;
        for (DType d : dts) {
          std::vector<Obs> sub;
          for (const Obs& o : obs)
            if (o.dtype == d) sub.push_back(o);
          auto r = fit_family(sub, key, d, opt, contention);
          if (auto* m = std::get_if<Model>(&r))
            cal.models.push_back(*m);
          else
            cal.unfitted.push_back(std::get<UnfittedModel>(r));
        }
      }
    } else if (dts.size() == 1) {
      dd.detail = "only " + std::string(dtype_name(*dts.begin())) + " measured";
    }
    if (dd.pooled) {
      if (auto* m = std::get_if<Model>(&pooled))
        cal.models.push_back(*m);
      else
        cal.unfitted.push_back(std::get<UnfittedModel>(pooled));
    }
    cal.dtypes.push_back(dd);
  }
}

}  // namespace shardcal::calib::fitter

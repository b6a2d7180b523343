// The Python package's entry points (pricing_api.hpp): thin wrappers of predict() and the cost
// model, so prices computed from Python are the C++ ones.
#include "shardcal/calibrate/pricing_api.hpp"

#include <utility>

#include "shardcal/calibrate/cost_model.hpp"
#include "shardcal/calibrate/host_transport.hpp"

namespace shardcal::calib {

ClassPricer::ClassPricer(std::shared_ptr<const Profile> p, Collective c, const LinkClass& lc,
                         std::optional<DType> dtype)
    : profile_(std::move(p)), c_(c), lc_(lc) {
  // predict() at 0 bytes chooses the model and the transport (and rejects a bad class).
  const Prediction pr = predict(*profile_, c, lc, 0.0, {}, 1, dtype, false);
  model_ = pr.model;
  transport_ = pr.transport;
}

double ClassPricer::operator()(double bytes) const {
  // predict()'s steps for this class, in its order (step_cost.cpp's hot path does the same).
  const double s_eff = effective_bytes(c_, model_->effective_size, bytes, {}, 1, lc_.group_size);
  return transport_.active
             ? price_transported_time_us(*model_, transport_, lc_.concurrent_groups, s_eff)
             : price_time_us(*model_, lc_.group_size, lc_.concurrent_groups, s_eff, floor_hosts(lc_));
}

MeshDimNumbers mesh_dim_numbers(const Profile& p, Collective c, const LinkClass& lc,
                                std::optional<double> probe, std::optional<DType> dtype) {
  if (!probe) probe = predict(p, c, lc, 0.0, {}, 1, dtype, false).model->segments.back().s_lo;
  const Prediction pr = predict(p, c, lc, *probe, {}, 1, dtype, false);
  const Segment& s = pr.model->segments[std::size_t(pr.segment)];
  MeshDimNumbers out;
  out.bandwidth_GBps = s.contention ? s.bandwidth_GBps / (1.0 + *s.contention *
                                                                    double(lc.concurrent_groups - 1))
                                    : s.bandwidth_GBps;
  out.step_latency_us = segment_coefficient(s, Term::AlphaStep);
  out.base_latency_us = segment_coefficient(s, Term::Alpha);
  out.extrapolated = pr.extrapolated;
  out.note = pr.note;
  return out;
}

}  // namespace shardcal::calib

#pragma once
// What the Python package (calibrate/python/shardcal/_core.cpp) prices through: a link class's
// time-only price function and the per-mesh-dim numbers of DTensor's MeshTopoInfo, both built on
// predict() (predict.hpp) and the cost model (cost_model.hpp), so Python holds no copy of the
// arithmetic (docs/CALIBRATION.md "The model").
#include <memory>
#include <optional>

#include "shardcal/calibrate/predict.hpp"

namespace shardcal::calib {

// predict(p, c, lc, bytes, {}, 1, dtype, check_class = false).time_us as a function of bytes
// alone, bit-identical: the model choice and the host transport depend only on the class, so
// they are resolved once here and a call is effective_bytes' check plus the price (the same
// functions predict() and profile_step_cost call). Holds the profile (the model and transport
// point into it). Throws Error as predict() does.
class ClassPricer {
 public:
  ClassPricer(std::shared_ptr<const Profile> p, Collective c, const LinkClass& lc,
              std::optional<DType> dtype);
  double operator()(double bytes) const;
  const Model& model() const { return *model_; }
  const HostTransport& transport() const { return transport_; }

 private:
  std::shared_ptr<const Profile> profile_;
  Collective c_;
  LinkClass lc_;
  const Model* model_ = nullptr;
  HostTransport transport_;
};

// One mesh dim's numbers in the shape of PyTorch DTensor's MeshTopoInfo: the segment predict()
// prices `probe` bytes in (default: the chosen model's last segment's lower bound), its bandwidth
// shared by the dim's concurrent groups B / (1 + gamma (c - 1)) in GB/s, its per-step and base
// latencies in us, and predict()'s extrapolation flag and note.
struct MeshDimNumbers {
  double bandwidth_GBps = 0, step_latency_us = 0, base_latency_us = 0;
  bool extrapolated = false;
  std::string note;
};
MeshDimNumbers mesh_dim_numbers(const Profile& p, Collective c, const LinkClass& lc,
                                std::optional<double> probe, std::optional<DType> dtype);

}  // namespace shardcal::calib

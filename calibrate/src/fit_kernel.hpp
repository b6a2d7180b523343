#pragma once
// The fitter's kernel (fit_kernel.cpp): one segment's robust weighted least squares over the cost
// model's term columns (cost_model.hpp), and the observation type every piece of the fitter
// shares. Internal to calibrate/src (segmentation, family fit, pooling and fit.cpp use it).
#include <cmath>
#include <string>
#include <vector>

#include "shardcal/calibrate/cost_model.hpp"
#include "shardcal/calibrate/profile.hpp"

namespace shardcal::calib::fitter {

// A segment that shows no growth with S gets this slope (B = 1e6 GB/s): "bandwidth unresolved",
// still finite and positive as the profile requires.
inline constexpr double kInvFloor = 1e-9;  // us per byte

// One even-shard point of a family.
struct Obs {
  double s = 0;  // S_eff, bytes
  int n = 1;     // group size
  double y = 0;  // median time, us
  DType dtype = DType::F32;
  int c = 1;         // concurrent groups per host
  std::string mesh;  // the measured mesh (leave-one-mesh-out)
};

// One segment's coefficients, in the cost model's Term order.
struct Coef {
  double a0 = 0, as = 0, inv = kInvFloor;  // inv: us per byte of S*f(n)
  double kap = 0;  // contention: us per byte of S*f(n) per extra concurrent group
  // Standard errors of a0, inv and kap from the final weighted fit; NaN = unknown (the
  // coefficient is pinned at its bound, N <= free coefficients, or the design is rank-deficient).
  double se_a0 = NAN, se_inv = NAN, se_kap = NAN;
};

// The segment's time (us) at effective size s, group size n, conc concurrent groups.
double eval_coef(const Coef& k, double s, int n, Collective c, int conc = 1);
double eval_obs(const Coef& k, const Obs& o, Collective c);

// Huber M-estimate by iteratively reweighted least squares (Huber 1964; Holland & Welsch 1977)
// of relative residuals, scale from the median absolute relative residual; k: the Huber constant
// in robust-scale units. alpha_step is fitted where o holds >= 2 group sizes; contention: fit the
// contention column where the data hold >= 2 concurrencies. Bounds: alpha0, alpha_step, kappa >=
// 0, slope >= kInvFloor.
Coef irls(const std::vector<const Obs*>& o, Collective c, double k, bool contention);

// The Huber loss of residual r with threshold d (the score that compares breakpoints).
double huber(double r, double d);

// The distinct sizes, group sizes and concurrencies of obs, ascending.
std::vector<double> distinct_sizes(const std::vector<Obs>& obs);
std::vector<int> distinct_ns(const std::vector<Obs>& obs);
std::vector<int> distinct_cs(const std::vector<Obs>& obs);

}  // namespace shardcal::calib::fitter

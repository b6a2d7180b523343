#pragma once
// The fitter's kernel (fit_kernel.cpp): one segment's robust weighted least squares over the cost
// model's term columns (cost_model.hpp), and the observation type every piece of the fitter
// shares. Internal to calibrate/src (segmentation, family fit, pooling and fit.cpp use it).
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "shardcal/calibrate/cost_model.hpp"
#include "shardcal/calibrate/profile.hpp"

namespace shardcal::calib::fitter {

// The slope's floor (us per byte; cost_model.hpp: B = 1e6 GB/s, "bandwidth unresolved").
inline constexpr double kInvFloor = term_info(Term::InvBandwidth).fit_floor;

// Plausibility of a segment's fit (docs/CALIBRATION.md "Degenerate fits"). A bus bandwidth above
// 10 TB/s per rank is beyond any link: NVLink 5 gives a Blackwell GPU 1.8 TB/s (both directions
// together) and its HBM3e 8 TB/s (NVIDIA B200 datasheet), and a rank's share of a collective
// cannot move faster than its memory: such a B is the slope of a segment whose times do not grow
// with S, not a measured link. The contention term's slowdown of the bandwidth term at the largest
// measured concurrency, 1 + gamma (c - 1), beyond c^2: c groups taking turns on a link are c times
// slower, and a factor c more than that is beyond any sharing of the link between them -- the
// term is absorbing something else (on one world size group size and concurrency move together,
// so a slope that does not scale like f(n) can land on it, docs/CALIBRATION.md "Identifiability").
inline constexpr double kMaxPlausibleBandwidthGBps = 1e4;
inline constexpr double kMaxPlausibleInvBandwidth = 1.0 / (kMaxPlausibleBandwidthGBps * 1e3);

// One even-shard point of a family.
struct Obs {
  double s = 0;  // S_eff, bytes
  int n = 1;     // group size
  double y = 0;  // median time, us
  DType dtype = DType::F32;
  int c = 1;         // concurrent groups per host
  std::string mesh;  // the measured mesh (leave-one-mesh-out)
};

// One segment's coefficients, one per cost-model Term (kCoefOf: which is which).
struct Coef {
  double a0 = 0, as = 0, inv = kInvFloor;  // inv: us per byte of S*f(n)
  double kap = 0;  // contention: us per byte of S*f(n) per extra concurrent group
  // Standard errors from the final weighted fit; NaN = unknown (the coefficient is pinned at its
  // bound, N <= free coefficients, or the design is rank-deficient).
  double se_a0 = NAN, se_as = NAN, se_inv = NAN, se_kap = NAN;
  // The fallbacks fit_segment() took (docs/CALIBRATION.md "Degenerate fits"): the contention
  // term dropped (the fit with it had B or gamma beyond the bounds above: those values kept for
  // the note), the size term dropped (latency only: B beyond the bound without contention).
  bool contention_dropped = false, size_term_dropped = false;
  double dropped_B_GBps = 0, dropped_gamma = 0;  // of the rejected contention fit
  double flat_B_GBps = 0;                        // the rejected B of the latency-only fallback
  int c_max = 1;                                 // largest concurrency of the segment's points
};

// Coef's coefficient and standard error of each Term, in Term order: the generic loops (design
// columns, evaluation, the profile's segment) go through these; the named members serve the
// term-specific arithmetic (monotone boundaries, fallbacks).
inline constexpr std::array<double Coef::*, kTerms> kCoefOf{&Coef::a0, &Coef::as, &Coef::inv,
                                                            &Coef::kap};
inline constexpr std::array<double Coef::*, kTerms> kSeOf{&Coef::se_a0, &Coef::se_as,
                                                          &Coef::se_inv, &Coef::se_kap};
// A Term added to cost_model.hpp's table without its Coef member here would leave a null entry
// (std::array value-initialises the rest) and crash the generic loops: refuse to compile instead.
static_assert(std::ranges::none_of(kCoefOf, [](double Coef::* p) { return p == nullptr; }) &&
                  std::ranges::none_of(kSeOf, [](double Coef::* p) { return p == nullptr; }),
              "every cost-model Term needs its coefficient and standard error in kCoefOf/kSeOf");

// A segment's bus bandwidth B (GB/s) and contention gamma.
inline double coef_bandwidth_GBps(const Coef& k) { return 1.0 / (k.inv * 1e3); }
inline double coef_gamma(const Coef& k) { return k.inv > 0 ? k.kap / k.inv : 0.0; }

// The segment's time (us) at effective size s, group size n, conc concurrent groups.
double eval_coef(const Coef& k, double s, int n, Collective c, int conc = 1);
double eval_obs(const Coef& k, const Obs& o, Collective c);

// Huber M-estimate by iteratively reweighted least squares (Huber 1964; Holland & Welsch 1977)
// of relative residuals, scale from the median absolute relative residual; k: the Huber constant
// in robust-scale units. Each term's column is fitted per its FitWhen and kept at or above its
// fit_floor (cost_model.hpp kTermInfo); contention = false leaves that column out.
Coef irls(const std::vector<const Obs*>& o, Collective c, double k, bool contention);

// irls() with the plausibility fallbacks (docs/CALIBRATION.md "Degenerate fits"): a fit with
// contention whose B exceeds kMaxPlausibleBandwidthGBps or whose slowdown at the largest measured
// concurrency exceeds c^2 is refitted without contention; then a B still beyond the bound (and
// above the floor kInvFloor, which is already latency only) is refitted latency only (the slope
// pinned at kInvFloor). The flags and rejected values are kept in the result for the notes.
Coef fit_segment(const std::vector<const Obs*>& o, Collective c, double k, bool contention);

// The Huber loss of residual r with threshold d (the score that compares breakpoints).
double huber(double r, double d);

// The distinct sizes, group sizes and concurrencies of obs, ascending.
std::vector<double> distinct_sizes(const std::vector<Obs>& obs);
std::vector<int> distinct_ns(const std::vector<Obs>& obs);
std::vector<int> distinct_cs(const std::vector<Obs>& obs);

}  // namespace shardcal::calib::fitter

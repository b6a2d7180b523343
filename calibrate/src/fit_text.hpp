#pragma once
// Text helpers shared by the fitter's files (fit.cpp, pooling.cpp, copy_cost.cpp, make_profile.cpp,
// quality_report.cpp).
// Internal to calibrate/src.
#include <cstdio>
#include <optional>
#include <string>

#include "shardcal/calibrate/profile.hpp"

namespace shardcal::calib::fit_text {

inline std::string key_name(Collective op, int hosts, int conc, std::optional<DType> dt) {
  std::string s = std::string(collective_info(op).name) + " hosts=" + std::to_string(hosts) +
                  " concurrent=" + std::to_string(conc);
  if (dt) s += " dtype=" + std::string(dtype_name(*dt));
  return s;
}

inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

inline std::string pct(std::optional<double> v) { return v ? fmt("%.1f%%", *v * 100) : "-"; }

inline std::string eff_name(EffectiveSize e) {
  return e == EffectiveSize::Total ? "total" : "n_times_max";
}

}  // namespace shardcal::calib::fit_text

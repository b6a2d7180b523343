#include "shardcal/formats/floor_check.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace shardcal::formats {

std::string floor_causes() {
  return "likely causes: oversubscribed cores (more ranks than cores: each wait is the "
         "scheduler's time slice), busy-polling ranks starving each other, or a loaded "
         "machine; the fit models the machine, not the link: rerun with at most one rank per "
         "core on a quiet machine";
}

nlohmann::json FloorWarning::to_json() const {
  return {{"type", "warning"},
          {"kind", "implausible_small_message_floor"},
          {"series", series},
          {"hosts_spanned", hosts_spanned},
          {"floor_s", floor_s},
          {"limit_s", limit_s},
          {"max_bytes", max_bytes},
          {"points", points},
          {"message", message}};
}

std::vector<FloorWarning> implausible_floors(const std::vector<FloorSample>& samples) {
  struct Acc {
    std::size_t order = 0;
    int hosts = 1, points = 0, low = 0;
    double floor = 0, max_bytes = 0;
  };
  std::map<std::string, Acc> acc;
  for (const FloorSample& s : samples) {
    if (s.bytes > kSmallMessageBytes || !(s.median_s > 0)) continue;
    auto [it, fresh] = acc.try_emplace(s.series);
    Acc& a = it->second;
    if (fresh) a.order = acc.size(), a.floor = s.median_s;
    a.hosts = std::max(a.hosts, s.hosts_spanned);
    a.floor = std::min(a.floor, s.median_s);
    a.max_bytes = std::max(a.max_bytes, s.bytes);
    ++a.points;
  }
  std::vector<std::pair<std::size_t, FloorWarning>> out;
  for (const auto& [series, a] : acc) {
    const double limit = a.hosts > 1 ? kInterHostFloorLimitS : kIntraHostFloorLimitS;
    if (a.points < 2 || a.floor < limit) continue;
    FloorWarning w;
    w.series = series;
    w.hosts_spanned = a.hosts;
    w.floor_s = a.floor;
    w.limit_s = limit;
    w.max_bytes = a.max_bytes;
    w.points = a.points;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%s (%s): every message up to %.0f B (%d sizes) took at least %.3g ms, "
                  "implausible for %s (a real link: microseconds; limit %.0f ms)",
                  series.c_str(), a.hosts > 1 ? "across hosts" : "inside one host", a.max_bytes,
                  a.points, a.floor * 1e3, a.hosts > 1 ? "a network" : "a link inside a host",
                  limit * 1e3);
    w.message = std::string(buf) + "; " + floor_causes();
    out.emplace_back(a.order, std::move(w));
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<FloorWarning> ws;
  for (auto& [o, w] : out) ws.push_back(std::move(w));
  return ws;
}

}  // namespace shardcal::formats

#pragma once
// The link-class rule shared by the results reader, the cost model and the Python report: how
// many groups of one mesh dim run at once on one host. A mesh dim with `groups` groups, each
// spanning `hosts_spanned` of the world's `n_hosts` hosts, puts round(groups x hosts_spanned /
// n_hosts) groups (at least 1) on every host; they share its links. formats/formats.json carries
// the same rule, with worked examples, for the Python side.
#include <algorithm>
#include <cmath>

namespace shardcal::formats {

inline int concurrent_groups(int groups, int hosts_spanned, int n_hosts) {
  const double c = double(groups) * double(hosts_spanned) / double(std::max(1, n_hosts));
  return std::max(1, int(std::lround(c)));
}

}  // namespace shardcal::formats

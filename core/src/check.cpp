#include "shardcal/check.hpp"

#include <vector>

#include "shardcal/error.hpp"

namespace shardcal {

std::string format_rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

namespace {
std::string spec_label(std::size_t i) {
  return i < 26 ? std::string(1, char('A' + i)) : "#" + std::to_string(i + 1);
}
}  // namespace

void check_same_spec(Communicator& comm, const std::string& what, std::uint64_t hash,
                     const std::string& description) {
  const std::vector<std::uint64_t> hashes = comm.all_gather_u64(hash);
  // Distinct specs in order of their lowest rank; identical on every rank.
  std::vector<std::uint64_t> specs;
  std::vector<std::vector<int>> holders;
  for (int r = 0; r < int(hashes.size()); ++r) {
    std::size_t k = 0;
    while (k < specs.size() && specs[k] != hashes[std::size_t(r)]) ++k;
    if (k == specs.size()) {
      specs.push_back(hashes[std::size_t(r)]);
      holders.emplace_back();
    }
    holders[k].push_back(r);
  }
  if (specs.size() == 1) return;

  std::string msg = what + ": ranks disagree on " + comm.describe() + " (" +
                    std::to_string(specs.size()) + " distinct specs): ";
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const int root = holders[k].front();
    std::string desc = comm.rank() == root ? description : std::string();
    comm.broadcast_string(desc, root);
    if (k > 0) msg += "; ";
    msg += (holders[k].size() == 1 ? "rank " : "ranks ") + format_rank_list(holders[k]) +
           (holders[k].size() == 1 ? " has" : " have") + " spec " + spec_label(k) + ": " + desc;
  }
  throw Error(msg);
}

}  // namespace shardcal

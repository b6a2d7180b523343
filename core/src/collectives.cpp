// The collective table: one entry per collective, everything specific to it in that entry (see
// collectives.hpp). The shared code below the table only walks it.
#include "shardcal/collectives.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "shardcal/communicator.hpp"
#include "shardcal/error.hpp"

namespace shardcal {

namespace {

using C = CollectiveCall;

std::size_t sum_of(const C& c) { return c.counts.empty() ? 0 : c.displs.back() + c.counts.back(); }
std::size_t mine(const C& c) { return c.counts[std::size_t(c.rank)]; }
std::size_t at(const C& c, int q) { return c.counts[std::size_t(q)]; }
// The group position whose block (by displs) holds element k of a concatenation; empty blocks
// are skipped (upper_bound lands on the last block starting at or before k).
int block_of(const C& c, std::int64_t k) {
  return int(std::upper_bound(c.displs.begin(), c.displs.end(), std::size_t(k)) - c.displs.begin()) - 1;
}
double sum_over_sources(const C& c, std::int64_t index) {
  double s = 0;
  for (int j = 0; j < c.n; ++j) s += reduce_pattern_value(j, index, c.n);
  return s;
}
// Element k of a concatenation of every position's pattern block (all_gather, gather at root).
double gathered(const C& c, std::int64_t k) {
  const int j = block_of(c, k);
  return pattern_value(j, k - std::int64_t(c.displs[std::size_t(j)]));
}

// clang-format off
constexpr auto kTable = std::to_array<CollectiveInfo>({
    {Collective::AllGather, "all_gather", "whole output (n x per-rank)",
     /*reduces=*/false, /*has_root=*/false, /*has_v_form=*/true, /*input_in_recv=*/false,
     /*one_way=*/false, /*busbw_share=*/1, /*busbw_flat=*/0, /*ring_rounds=*/1, /*link_share=*/1,
     /*host_bytes_per_rank=*/false,
     [](const C& c, int q) { return BufferElems{at(c, q), sum_of(c)}; },
     [](Communicator& g, const C& c, const void* s, void* r) {
       c.uniform ? g.all_gather(s, r, c.counts[0], c.dtype)
                 : g.all_gatherv(s, mine(c), r, c.counts, c.displs, c.dtype);
     },
     gathered},
    {Collective::ReduceScatter, "reduce_scatter", "whole input of one rank",
     true, false, true, false,
     false, 1, 0, 1, 1, false,
     [](const C& c, int q) { return BufferElems{sum_of(c), at(c, q)}; },
     [](Communicator& g, const C& c, const void* s, void* r) {
       c.uniform ? g.reduce_scatter(s, r, c.counts[0], c.dtype, ReduceOp::Sum)
                 : g.reduce_scatterv(s, r, c.counts, c.dtype, ReduceOp::Sum);
     },
     [](const C& c, std::int64_t k) {
       return sum_over_sources(c, std::int64_t(c.displs[std::size_t(c.rank)]) + k);
     }},
    {Collective::AllReduce, "all_reduce", "one rank's buffer",
     true, false, false, false,
     false, 2, 0, 2, 1, false,
     [](const C& c, int q) { return BufferElems{at(c, q), at(c, q)}; },
     [](Communicator& g, const C& c, const void* s, void* r) {
       g.all_reduce(s, r, c.counts[0], c.dtype, ReduceOp::Sum);
     },
     sum_over_sources},
    {Collective::AllToAll, "all_to_all", "one rank's send buffer",
     false, false, true, false,
     false, 1, 0, 1, 1, true,
     [](const C& c, int q) { return BufferElems{sum_of(c), std::size_t(c.n) * at(c, q)}; },
     [](Communicator& g, const C& c, const void* s, void* r) {
       c.uniform ? g.all_to_all(s, r, c.counts[0], c.dtype)
                 : g.all_to_allv(s, c.counts, c.displs, r, c.recv_counts, c.recv_displs, c.dtype);
     },
     [](const C& c, std::int64_t k) {  // block j came from position j: its slice for us
       const auto m = std::int64_t(std::max<std::size_t>(mine(c), 1));
       return pattern_value(int(k / m), std::int64_t(c.displs[std::size_t(c.rank)]) + k % m);
     }},
    {Collective::Broadcast, "broadcast", "the buffer",
     false, true, false, /*input_in_recv=*/true,
     true, 0, 1, 1, 0, false,
     [](const C& c, int q) { return BufferElems{0, at(c, q)}; },
     [](Communicator& g, const C& c, const void*, void* r) { g.broadcast(r, c.counts[0], c.dtype, 0); },
     [](const C&, std::int64_t k) { return pattern_value(0, k); }},
    {Collective::Scatter, "scatter", "whole buffer at root",
     false, true, true, false,
     true, 1, 0, 1, 1, false,
     [](const C& c, int q) { return BufferElems{q == 0 ? sum_of(c) : 0, at(c, q)}; },
     [](Communicator& g, const C& c, const void* s, void* r) {
       c.uniform ? g.scatter(s, r, c.counts[0], c.dtype, 0)
                 : g.scatterv(s, c.counts, c.displs, r, mine(c), c.dtype, 0);
     },
     [](const C& c, std::int64_t k) {
       return pattern_value(0, std::int64_t(c.displs[std::size_t(c.rank)]) + k);
     }},
    {Collective::Gather, "gather", "whole buffer at root",
     false, true, true, false,
     true, 1, 0, 1, 1, false,
     [](const C& c, int q) { return BufferElems{at(c, q), q == 0 ? sum_of(c) : 0}; },
     [](Communicator& g, const C& c, const void* s, void* r) {
       c.uniform ? g.gather(s, r, c.counts[0], c.dtype, 0)
                 : g.gatherv(s, mine(c), r, c.counts, c.displs, c.dtype, 0);
     },
     gathered},
});
// clang-format on

constexpr bool table_in_enum_order() {
  for (std::size_t i = 0; i < kTable.size(); ++i)
    if (static_cast<std::size_t>(kTable[i].op) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "kTable entries must follow the Collective enum order");

}  // namespace

constinit const std::span<const CollectiveInfo> kCollectives{kTable};

const CollectiveInfo& collective_info(Collective c) {
  const auto i = static_cast<std::size_t>(c);
  if (i >= kTable.size()) throw Error("collective_info: unknown collective id " + std::to_string(i));
  return kTable[i];
}

std::optional<Collective> find_collective(std::string_view name) {
  for (const auto& info : kTable)
    if (info.name == name) return info.op;
  return std::nullopt;
}

std::optional<Collective> find_collective_alias(std::string_view name) {
  if (auto c = find_collective(name)) return c;
  // Lower case, without the tools' decorations (osu_, _perf, a path), '-' and '_' dropped:
  // "osu_allreduce", "all_reduce_perf", "All-to-All", "reducescatter" all meet the table's name
  // spelled the same way.
  std::string s;
  for (char ch : name) s += char(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  if (const std::size_t slash = s.find_last_of('/'); slash != std::string::npos) s = s.substr(slash + 1);
  if (s.rfind("osu_", 0) == 0) s = s.substr(4);
  if (s.size() > 5 && s.compare(s.size() - 5, 5, "_perf") == 0) s.resize(s.size() - 5);
  auto squash = [](std::string_view v) {
    std::string out;
    for (char ch : v)
      if (ch != '_' && ch != '-' && ch != ' ') out += ch;
    return out;
  };
  const std::string key = squash(s);
  if (key == "bcast") return Collective::Broadcast;
  for (const auto& info : kTable)
    if (squash(info.name) == key) return info.op;
  return std::nullopt;
}

std::string collective_names_help() {
  std::string names;
  for (const auto& info : kTable) names += (names.empty() ? "" : ", ") + std::string(info.name);
  return names +
         " (the tools' names are accepted too: alltoall, allreduce, allgather, reducescatter, "
         "bcast, all_reduce_perf, osu_allreduce, ...)";
}

std::int64_t CollectiveCall::footprint_bytes(std::int64_t align) const {
  const auto es = std::int64_t(dtype_size(dtype));
  const std::int64_t a = std::max<std::int64_t>(align, 1);
  auto up = [&](std::size_t elems) { return (std::max<std::int64_t>(std::int64_t(elems) * es, 1) + a - 1) / a * a; };
  std::int64_t worst = 0;
  const auto& info = collective_info(op);
  for (int q = 0; q < n; ++q) {
    const BufferElems b = info.buffers(*this, q);
    worst = std::max(worst, up(b.send) + up(b.recv));
  }
  return worst;
}

CollectiveCall make_collective_call(Collective op, DType t, std::span<const std::int64_t> counts,
                                    int rank) {
  const auto& info = collective_info(op);
  const std::string where = "make_collective_call(" + std::string(info.name) + ")";
  if (counts.empty()) throw Error(where + ": no group positions (counts is empty); pass one count per rank of the group");
  const int n = int(counts.size());
  if (rank < 0 || rank >= n)
    throw Error(where + ": rank " + std::to_string(rank) + " is outside the group of " + std::to_string(n));
  CollectiveCall c;
  c.op = op;
  c.dtype = t;
  c.n = n;
  c.rank = rank;
  c.counts.resize(std::size_t(n));
  for (int q = 0; q < n; ++q) {
    if (counts[std::size_t(q)] < 0)
      throw Error(where + ": count of position " + std::to_string(q) + " is negative (" +
                  std::to_string(counts[std::size_t(q)]) + ")");
    c.counts[std::size_t(q)] = std::size_t(counts[std::size_t(q)]);
  }
  c.uniform = std::all_of(c.counts.begin(), c.counts.end(), [&](std::size_t x) { return x == c.counts[0]; });
  if (!c.uniform && !info.has_v_form)
    throw Error(where + ": uneven counts, but " + std::string(info.name) +
                " has no v-form; give every position the same count");
  c.displs.assign(c.counts.size(), 0);
  for (std::size_t i = 1; i < c.counts.size(); ++i) c.displs[i] = c.displs[i - 1] + c.counts[i - 1];
  const std::size_t m = c.counts[std::size_t(rank)];
  c.recv_counts.assign(c.counts.size(), m);
  c.recv_displs.resize(c.counts.size());
  for (std::size_t j = 0; j < c.recv_displs.size(); ++j) c.recv_displs[j] = j * m;
  const BufferElems b = info.buffers(c, rank);
  c.send_elems = b.send;
  c.recv_elems = b.recv;
  return c;
}

void run_collective(Communicator& g, const CollectiveCall& c, const void* send, void* recv) {
  collective_info(c.op).call(g, c, send, recv);
}

double pattern_value(int src, std::int64_t index) {
  // Values 0..250: exact in u8, f16 and bf16 (integers up to 256 are exact in bf16).
  return double((std::int64_t(src) * 37 + index * 7 + 1) % 251);
}

double reduce_pattern_value(int src, std::int64_t index, int group_size) {
  // Keep every partial and final sum <= 250 so reductions are exact in every dtype, in any
  // summation order: at most 250 contributors, each <= 250 / min(n, 250).
  const int m = std::max(1, 250 / std::max(1, std::min(group_size, 250)));
  return src < 250 ? double((std::int64_t(src) + index) % (m + 1)) : 0.0;
}

double reference_input(const CollectiveCall& c, int src, std::int64_t index) {
  return collective_info(c.op).reduces ? reduce_pattern_value(src, index, c.n) : pattern_value(src, index);
}

double reference_output(const CollectiveCall& c, std::int64_t k) {
  return collective_info(c.op).reference(c, k);
}

}  // namespace shardcal

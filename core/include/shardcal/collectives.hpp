#pragma once
// The collective table of DESIGN §4, in one place (core) for the harness, the calibrator and the
// planner's cost model. Definitions follow nccl-tests (doc/PERFORMANCE.md and the *GetBw
// functions in src/*.cu): algbw = S / t, busbw = algbw * factor(n), where S is the byte count
// named in `bytes_convention` and n the group size. Header-only and dependency-free on purpose.
#include <array>
#include <optional>
#include <string_view>

namespace shardcal {

enum class Collective : unsigned char {
  AllGather,
  ReduceScatter,
  AllReduce,
  AllToAll,
  Broadcast,
  Scatter,
  Gather,
};

struct CollectiveInfo {
  Collective op;
  std::string_view name;              // config/record spelling
  std::string_view bytes_convention;  // what S counts
  bool reduces;                       // combines values (needs a reduction op)
  bool has_root;                      // broadcast/scatter/gather: root = group position 0
  bool has_v_form;                    // per-rank counts can be uneven (all_gatherv, ...)
  // busbw/algbw ratio (n = group size). n <= 1 gives 0: no data crosses a link.
  double busbw_factor(int n) const {
    if (n <= 1) return 0.0;
    const double nn = n;
    switch (op) {
      case Collective::AllReduce: return 2.0 * (nn - 1.0) / nn;
      case Collective::Broadcast: return 1.0;
      default: return (nn - 1.0) / nn;
    }
  }
  // Sequential steps of the ring algorithm (the α_step multiplier of DESIGN §6).
  int ring_steps(int n) const {
    if (n <= 1) return 0;
    return op == Collective::AllReduce ? 2 * (n - 1) : n - 1;
  }
};

inline constexpr std::array<CollectiveInfo, 7> kCollectives{{
    {Collective::AllGather, "all_gather", "whole output (n x per-rank)", false, false, true},
    {Collective::ReduceScatter, "reduce_scatter", "whole input of one rank", true, false, true},
    {Collective::AllReduce, "all_reduce", "one rank's buffer", true, false, false},
    {Collective::AllToAll, "all_to_all", "one rank's send buffer", false, false, true},
    {Collective::Broadcast, "broadcast", "the buffer", false, true, false},
    {Collective::Scatter, "scatter", "whole buffer at root", false, true, true},
    {Collective::Gather, "gather", "whole buffer at root", false, true, true},
}};

inline const CollectiveInfo& collective_info(Collective c) {
  return kCollectives[static_cast<std::size_t>(c)];
}

inline std::optional<Collective> find_collective(std::string_view name) {
  for (const auto& info : kCollectives)
    if (info.name == name) return info.op;
  return std::nullopt;
}

}  // namespace shardcal

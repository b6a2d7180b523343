#pragma once
// The collective table, in one place (core) for the harness, the calibrator and the
// planner's cost model. ONE entry per collective (core/src/collectives.cpp) holds everything
// specific to it: name, bytes convention, bus-bandwidth factor, ring steps, whether it reduces,
// its v-form, how to size the send/receive buffers of a call, how to issue the call on a
// Communicator (plain or v-form), and the reference output a check compares against. Everything
// else (the sweep's timing loop, buffer rotation, checking, the conformance test) is a shared
// harness over these entries, the nccl-tests model (one small file per collective over common
// code).
//
// Bandwidth definitions follow nccl-tests (doc/PERFORMANCE.md and the *GetBw functions in
// src/*.cu): algbw = S / t, busbw = algbw * factor(n), where S is the byte count named in
// `bytes_convention` and n the group size.
//
// Adding a collective: docs/DEVELOPING.md, "Adding a collective". The table is also written out
// as data (`shardbench info --collectives --json`, checked in as
// calibrate/python/shardcal/collectives.json) for the Python side and the JSON schemas; a test
// keeps them equal to this table.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "shardcal/dtype.hpp"

namespace shardcal {

class Communicator;

enum class Collective : unsigned char {
  AllGather,
  ReduceScatter,
  AllReduce,
  AllToAll,
  Broadcast,
  Scatter,
  Gather,
};

// One call of a collective on a group of n ranks, as seen from group position `rank` (root =
// position 0). counts[q] is the block of position q in the entry's convention (all_gather: what
// q contributes; reduce_scatter/scatter: what q receives; all_to_all: what every rank sends to
// q; all_reduce/broadcast: the buffer, the same at every position). Built by
// make_collective_call; all fields are derived and consistent.
struct CollectiveCall {
  Collective op = Collective::AllGather;
  DType dtype = DType::F32;
  int n = 1;
  int rank = 0;
  bool uniform = true;               // every count equal: the plain call; else the v-form
  std::vector<std::size_t> counts;   // elements per group position (n entries)
  std::vector<std::size_t> displs;   // exclusive prefix sums of counts
  // What this rank receives from each position when every position sends it counts[rank]
  // (the receive side of all_to_allv), and where: n x counts[rank], contiguous.
  std::vector<std::size_t> recv_counts, recv_displs;
  std::size_t send_elems = 0;        // this rank's send buffer (elements)
  std::size_t recv_elems = 0;        // this rank's receive buffer (elements)
  // The largest send + receive bytes of any position, each rounded up to `align` bytes (so
  // every rank of a group can size rotation slots identically without communicating).
  std::int64_t footprint_bytes(std::int64_t align) const;
};

struct BufferElems {
  std::size_t send = 0, recv = 0;
};

struct CollectiveInfo {
  Collective op;
  std::string_view name;              // config/record spelling
  std::string_view bytes_convention;  // what S counts
  bool reduces;                       // combines values (needs a reduction op)
  bool has_root;                      // broadcast/scatter/gather: root = group position 0
  bool has_v_form;                    // per-rank counts can be uneven (all_gatherv, ...)
  bool input_in_recv;                 // in place: the root's input is the receive buffer
  // All data flows between the root and the others, one direction over each link (broadcast,
  // scatter, gather); the emulated-cluster check measures the link with these.
  bool one_way;
  // busbw/algbw = busbw_share * (n - 1) / n + busbw_flat (nccl-tests' factors), and ring steps
  // = ring_rounds * (n - 1): plain numbers, so the table can be written out as data.
  double busbw_share;
  double busbw_flat;
  int ring_rounds;
  // The fewest bytes one rank's links must carry in one direction, per byte of S, by any
  // algorithm: link_share * (n - 1) / n + busbw_flat. The busbw factor, except all_reduce's 1
  // (not 2): with in-network reduction (NVLS, SHARP) a rank sends and receives each byte once.
  // With a link's peak bandwidth it bounds the time from below (docs/CALIBRATION.md "Link
  // ceilings").
  double link_share;
  // Across hosts: the bytes a host's links must carry are each rank's own (all_to_all: a host
  // sends r x its ranks' remote blocks), not the group's data once (gathered, reduced or
  // replicated bytes a host's ranks can share over the host's own fabric). See host_floor_factor.
  bool host_bytes_per_rank;
  // Send/receive buffer sizes (elements) of group position q.
  BufferElems (*buffers)(const CollectiveCall& c, int q);
  // Issues the call on g (plain form when c.uniform, else the v-form). Sum for reductions.
  void (*call)(Communicator& g, const CollectiveCall& c, const void* send, void* recv);
  // Value of element k of c.rank's receive buffer when every position's input is
  // reference_input().
  double (*reference)(const CollectiveCall& c, std::int64_t k);

  // busbw/algbw ratio for n >= 2 (n may be a large real, for the limit).
  constexpr double busbw(double n) const { return busbw_share * (n - 1.0) / n + busbw_flat; }
  // busbw/algbw ratio (n = group size). n <= 1 gives 0: no data crosses a link.
  double busbw_factor(int n) const { return n <= 1 ? 0.0 : busbw(double(n)); }
  // Sequential steps of the ring algorithm (the latency-per-step multiplier of the cost model).
  int ring_steps(int n) const { return n <= 1 ? 0 : ring_rounds * (n - 1); }
  // Bytes through one rank's links (one direction) per byte of S at the least (n <= 1: 0).
  double link_floor_factor(int n) const {
    return n <= 1 ? 0.0 : link_share * (double(n) - 1.0) / double(n) + busbw_flat;
  }
  // Bytes through each host link (a GPU's PCIe or C2C: the only way off its host) one direction
  // per byte of S at the least, for a group of n across hosts with at most r ranks on its
  // least-populated host (0 inside one host: r >= n; r = n / hosts is safe for any split, as the
  // bound falls with r). That host must receive (or send) the other hosts' part of S, (n - r)/n
  // of it by link_share, over its r ranks' host links; all_to_all's remote blocks are its r ranks'
  // own, so r times as many over r links (docs/CALIBRATION.md "Link ceilings").
  // Not for broadcast, scatter and gather: which host binds depends on where the root sits and
  // how many ranks share its host, which a link class does not say.
  double host_floor_factor(int n, int r) const {
    if (has_root || n <= 1 || r < 1 || r >= n) return 0.0;
    const double f = link_share * double(n - r) / double(n) + busbw_flat;
    return host_bytes_per_rank ? f : f / double(r);
  }
};

// The table, in `Collective` order.
extern const std::span<const CollectiveInfo> kCollectives;

const CollectiveInfo& collective_info(Collective c);
std::optional<Collective> find_collective(std::string_view name);
// A collective as a user may type it on the command line: the table's name, or the field's
// names for it (nccl-tests' `alltoall`, `all_reduce_perf`; OSU's `osu_allreduce`, `bcast`;
// `allgather`, `reducescatter`, `all-to-all`), case-insensitive. Files keep find_collective's
// exact names.
std::optional<Collective> find_collective_alias(std::string_view name);
// "all_gather, reduce_scatter, ... (aliases: alltoall, allreduce, osu_allgather, ...)".
std::string collective_names_help();

// A call of `op` with per-position counts (elements; see CollectiveCall) for group position
// `rank` of n = counts.size(). Collectives without a v-form use counts[0] everywhere. Throws
// Error when counts is empty, rank is out of range, or counts are uneven for a collective
// without a v-form.
CollectiveCall make_collective_call(Collective op, DType t, std::span<const std::int64_t> counts,
                                    int rank);
// Runs the call on g (g.size() must be c.n and g.rank() c.rank).
void run_collective(Communicator& g, const CollectiveCall& c, const void* send, void* recv);

// Reference data (exact in every dtype; reductions of any group size stay <= 250).
double pattern_value(int src, std::int64_t index);
double reduce_pattern_value(int src, std::int64_t index, int group_size);
// Element `index` of group position src's input for this call (send buffer, or the receive
// buffer for in-place collectives at the root).
double reference_input(const CollectiveCall& c, int src, std::int64_t index);
// Element k of c.rank's output after the call on reference inputs.
double reference_output(const CollectiveCall& c, std::int64_t k);

}  // namespace shardcal

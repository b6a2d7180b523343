#pragma once
// Guards against ranks that silently disagree on metadata (mesh, placements, shapes, sizes):
// with real backends a disagreement would otherwise show up as a hang or as garbage data.
#include <cstdint>
#include <string>
#include <vector>

#include "shardcal/communicator.hpp"

namespace shardcal {

// Collective over comm. Every rank passes a hash of its spec and a human-readable description
// of it. If the hashes differ, throws Error on EVERY rank, naming which ranks hold which spec:
//   "<what>: ranks disagree on <comm> (2 distinct specs): ranks 0,1,3 have spec A: <desc>;
//    rank 2 has spec B: <desc>"
// Descriptions travel from the lowest rank holding each spec, so all ranks throw the same text.
void check_same_spec(Communicator& comm, const std::string& what, std::uint64_t hash,
                     const std::string& description);

// "0-2,5,7,8" for a sorted list of ranks (runs of three or more become ranges).
std::string format_rank_list(const std::vector<int>& ranks);

}  // namespace shardcal

#pragma once
// In-process rank simulator: each rank is a thread running the same SPMD code a real backend
// runs. Deterministic: reductions combine contributions in rank order, whatever the thread
// schedule. A rank that throws cancels the others (PeerFailure naming it); a wait longer than
// timeout_s raises PeerFailure naming the ranks that never arrived.
//
// Semantics chosen to catch code that would hang or misbehave on mpi/nccl:
//   - every collective checks that all ranks called the same operation with consistent
//     arguments (op, dtype, counts, root) and throws the same Error on every rank if not; the
//     communicator stays usable after such an Error;
//   - send is synchronous: it returns once the matching recv has taken the data (like
//     MPI_Ssend / ncclSend), so send-before-recv rings deadlock here as they would on nccl;
//     sending to oneself is an Error for the same reason;
//   - a rank whose body returns while a peer still waits for it in a collective or recv makes
//     that peer fail at once (PeerFailure) instead of waiting for the timeout;
//   - split() colors must be >= 0 (no MPI_UNDEFINED equivalent in the interface).
#include <functional>

#include "shardcal/communicator.hpp"

namespace shardcal::sim {

struct Options {
  double timeout_s = 300.0;
};

// Runs body on `world` rank threads; rethrows the root-cause exception of the first failing rank
// (the first one that failed with something other than PeerFailure; else the first PeerFailure).
// A shardcal::Error of exactly that type is rethrown with "rank R failed: " prepended when
// world > 1; other exception types are rethrown unchanged.
void run(int world, const Options& opts, const std::function<void(Communicator&)>& body);

}  // namespace shardcal::sim

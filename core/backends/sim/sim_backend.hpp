#pragma once
// In-process rank simulator: each rank is a thread running the same SPMD code a real backend
// runs. Deterministic: reductions combine contributions in rank order, whatever the thread
// schedule. A rank that throws cancels the others (PeerFailure naming it); a wait longer than
// timeout_s raises PeerFailure naming the ranks that never arrived.
#include <functional>

#include "shardcal/communicator.hpp"

namespace shardcal::sim {

struct Options {
  double timeout_s = 300.0;
};

// Runs body on `world` rank threads; rethrows the root-cause exception of the first failing rank.
void run(int world, const Options& opts, const std::function<void(Communicator&)>& body);

}  // namespace shardcal::sim

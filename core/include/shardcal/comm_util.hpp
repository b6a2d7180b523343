#pragma once
// Small collective helpers built only on the Communicator interface (work on every backend,
// also with device memory).
#include <string>
#include <vector>

#include "shardcal/communicator.hpp"

namespace shardcal {

// Every rank's string, in rank order, on `root` (empty vector elsewhere).
std::vector<std::string> gather_strings(Communicator& comm, const std::string& mine, int root);
// Every rank's string, in rank order, on every rank.
std::vector<std::string> all_gather_strings(Communicator& comm, const std::string& mine);

}  // namespace shardcal

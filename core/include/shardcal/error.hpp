#pragma once
// One exception type for every user-facing failure: the message says what is wrong, where, and
// (when we know) how to fix it. Backends add the rank, collective and group to the message.
#include <stdexcept>
#include <string>

namespace shardcal {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Raised on every surviving rank when a peer failed or a collective timed out, so that a dead
// rank never leaves the others blocked forever.
class PeerFailure : public Error {
 public:
  explicit PeerFailure(const std::string& what) : Error(what) {}
};

}  // namespace shardcal

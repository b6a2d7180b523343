#include "shardcal/communicator.hpp"

#include <chrono>

namespace shardcal {

double Communicator::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace shardcal

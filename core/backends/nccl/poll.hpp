#pragma once
// Deadline-bounded polling, the one way this backend waits: for NCCL operations, CUDA streams and
// MPI control-plane requests alike. Waiting by polling (instead of a blocking call) is what lets
// a rank whose peer died give up after the timeout instead of hanging.
#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>

namespace shardcal::nccl {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Deadline(double seconds)
      : seconds_(seconds),
        end_(Clock::now() +
             std::chrono::duration_cast<Clock::duration>(
                 std::chrono::duration<double>(std::min(seconds, 1e7)))) {}
  bool expired() const { return Clock::now() >= end_; }
  double seconds() const { return seconds_; }

 private:
  double seconds_;
  Clock::time_point end_;
};

// Calls done() until it returns true (then returns true) or the deadline passes (returns false).
// The first milliseconds only yield, so short collectives are not delayed by a sleep granularity
// (this matters for the latency the benchmarks measure); longer waits sleep briefly between polls
// so a rank blocked for minutes does not burn a core that NCCL's proxy thread may need.
// "300", "0.5": seconds as a person would write them in an error message.
inline std::string seconds_text(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

template <class Done>
bool poll_until(const Deadline& deadline, Done&& done) {
  using namespace std::chrono;
  const auto start = steady_clock::now();
  while (true) {
    if (done()) return true;
    if (deadline.expired()) return done();
    if (steady_clock::now() - start < milliseconds(5))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(microseconds(50));
  }
}

}  // namespace shardcal::nccl

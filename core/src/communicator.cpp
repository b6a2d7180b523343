#include "shardcal/communicator.hpp"

#include <chrono>

#include "shardcal/error.hpp"

namespace shardcal {

double Communicator::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

// Host steady clock around the operations; stop() waits for the memory space first, so work a
// device backend left outstanding is inside the interval.
class HostClockTimer final : public OpTimer {
 public:
  // Host memory has nothing outstanding: skip its (virtual, empty) synchronize inside the timed
  // interval, where parity.sh's 0.25 us calls see every call.
  explicit HostClockTimer(MemorySpace& mem) : mem_(mem), sync_(mem.kind() != MemoryKind::Host) {}

  void start() override {
    started_ = true;
    stopped_ = false;
    t0_ = Clock::now();
  }
  void stop() override {
    if (!started_) throw Error("internal: OpTimer::stop() without start()");
    if (sync_) mem_.synchronize();
    t1_ = Clock::now();
    stopped_ = true;
  }
  double elapsed_s() override {
    if (!stopped_) throw Error("internal: OpTimer::elapsed_s() before start() and stop()");
    return std::chrono::duration<double>(t1_ - t0_).count();
  }
  std::string method() const override { return "host_clock"; }

 private:
  using Clock = std::chrono::steady_clock;
  MemorySpace& mem_;
  bool sync_;
  Clock::time_point t0_{}, t1_{};
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace

std::unique_ptr<OpTimer> Communicator::make_op_timer() {
  return std::make_unique<HostClockTimer>(memory());
}

}  // namespace shardcal

#pragma once
// The timing runner (docs/RESULTS_FORMAT.md). Per sample: untimed world barrier -> timer start ->
// operation(s) -> timer stop -> elapsed, with the communicator's make_op_timer() (host clock
// after memory().synchronize(); CUDA events on NCCL). Each rank keeps its own times; at
// checkpoints they are all-gathered and reduced to the slowest rank per sample, and every rank
// takes the same stop decision from the same gathered numbers (so no rank runs an extra
// collective).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardcal/collectives.hpp"
#include "shardcal/mesh_comm.hpp"
#include "shardcal/redistribute.hpp"
#include "sweep/config.hpp"

namespace shardbench::sweep {

// The longest stretch of samples between two stop-signal checks in a point, in seconds (unless
// one sample alone takes longer): bounds how late a SIGTERM/SIGUSR1 (Slurm's time limit) is
// noticed during a long point. docs/SLURM.md ("Signals") states the whole bound.
inline constexpr double kStopPollS = 1.0;

struct Measurement {
  bool abandoned = false;        // a rank got SIGINT/SIGTERM: the point is dropped
  int signal = 0;                // the signal when abandoned
  std::vector<double> samples;   // slowest-rank seconds per sample (per op in pipelined mode)
  std::uint64_t wrong = 0;       // wrong elements summed over ranks (0 when check is off)
  bool checked = false;
  std::string stop_reason;       // "ci_target" | "max_iterations" | "time_budget"
  int slots = 1;                 // buffer sets rotated through
  int depth = 1;                 // ops per timed sample (pipelined mode)
  double elapsed_s = 0;          // wall time of the point on the slowest rank
  std::string timer;             // OpTimer::method() of the samples: "host_clock" | "cuda_event"
  // Window start only (SweepConfig::window_start): the largest window used (it doubles while the
  // start reaches ranks after it passed), the samples in which some rank started over 1 us
  // after the common start (exact; that lateness is inside the sample), and the samples run
  // again because the start time reached some rank after it had passed (not in `samples`).
  double start_window_us = 0;
  int late_samples = 0;
  int retried_samples = 0;
  // Each rank's mean over its own samples, then the largest / mean / smallest across ranks: the
  // OSU and IMB latency statistic (samples above are per sample the slowest rank instead).
  double rank_mean_max_s = 0, rank_mean_avg_s = 0, rank_mean_min_s = 0;
};

// One collective point over mc.dim(p.mesh_dim); all groups along that dim run concurrently.
Measurement measure_collective(shardcal::MeshCommunicator& mc, const Point& p,
                               const SweepConfig& cfg);
// One transition point: execute_plan(plan) each sample, reading an untouched input and writing
// an output tensor. Whole (input, workspace, output) sets rotate between runs under the same rule
// as a collective point's buffers (rotation_slots() of their footprint; m.slots). With
// cfg.check, every slot's output starts as a sentinel, the one a sample writes is reset to it
// (untimed) before every timed sample a stop decision follows, and the check run's output and,
// after the last timed sample, every slot the runs used are checked (OutputCheck).
Measurement measure_transition(shardcal::MeshCommunicator& mc, const shardcal::Plan& plan,
                               const SweepConfig& cfg);

// The correctness check of a transition's local output. arm() fills the output with a sentinel
// value no reference pattern produces; wrong() counts the elements that differ from `want` (all
// of them, plus one, when the size differs). So a run between arm() and wrong() that writes
// nothing, or only part of the output, is counted wrong.
class OutputCheck {
 public:
  OutputCheck(shardcal::MemorySpace& mem, shardcal::DType t, std::vector<std::byte> want);
  // out: `bytes` bytes in mem (normally want's size; any other size is filled too, and wrong()
  // then counts every element).
  void arm(void* out, std::size_t bytes);
  std::uint64_t wrong(const std::vector<std::byte>& got) const;
  const std::vector<std::byte>& sentinel() const { return sentinel_; }

 private:
  shardcal::MemorySpace& mem_;
  shardcal::DType t_;
  std::size_t es_;
  std::vector<std::byte> want_, sentinel_;
};

// Reference data used for checking now lives with the collective table (core).
using shardcal::pattern_value;
using shardcal::reduce_pattern_value;

// The sample count of the next checkpoint (gather + stop decision) after one at n samples taken
// in elapsed_s (slowest rank): n + ~25%, or iterations_min (min_n) while below it, capped at
// max_n and at kStopPollS worth of samples (at least one more sample). runs: the samples run so
// far, kept or not (a window start runs again the samples its start time reached late), which
// set the time per sample; 0: n. min_sample_s: a floor on the time per sample (a window start's
// window: every sample waits at least that long).
std::size_t next_checkpoint(std::size_t n, std::size_t min_n, std::size_t max_n, double elapsed_s,
                            std::size_t runs = 0, double min_sample_s = 0.0);

// A window start's window after a checkpoint at which `short_samples` of the `run` samples since
// the last one got the start time after it had passed (docs/RESULTS_FORMAT.md "Starting a
// sample"): doubled, up to cap_us, where more than a tenth did; else unchanged.
double next_start_window_us(double now_us, double cap_us, std::size_t short_samples, std::size_t run);

// Slot count for buffer rotation (IMB -off_cache style): enough slots of `footprint` bytes to
// cover `rotation_bytes`, at most `max_slots`; 1 when one slot is already that large.
int rotation_slots(std::int64_t footprint, std::int64_t rotation_bytes, int max_slots);

}  // namespace shardbench::sweep

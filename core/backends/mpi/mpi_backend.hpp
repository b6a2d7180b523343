#pragma once
// MPI backend: this process is one rank of a job started by mpirun / srun --mpi=pmix. Buffers
// live in host memory. No MPI header here, so users of this header need not see mpi.h.
//
// Failure handling (no rank is ever left blocked):
//  - every blocking MPI call is watched: one that has not completed after timeout_s prints
//    "<prog> rank R: error: <op> on <group> timed out ..." and the rank ends itself with exit
//    code 124 (the watchdog, a timer signal's handler, never calls MPI); the launcher then ends the whole job
//    (mpirun/mpiexec do so for any rank that exits without MPI_Finalize; with srun use
//    --kill-on-bad-exit=1, otherwise a rank stuck outside MPI stays until the job's time limit);
//  - a body that throws: the ranks meet at the end of run(). If every rank arrives (all threw
//    the same error, or the others had already finished), each rank rethrows its own error and
//    the healthy ones raise PeerFailure naming the failed rank. If the others do not arrive
//    within error_grace_s (they are blocked waiting for this rank), the failing rank prints its
//    error with its rank and calls MPI_Abort so the job ends.
#include <functional>
#include <string>

#include "shardcal/communicator.hpp"

namespace shardcal::mpi {

struct Options {
  double timeout_s = 300;
  // How long a rank whose body threw waits for the others at the end of run() before it aborts
  // the job (capped at timeout_s). Covers the skew of ranks that all throw the same error.
  double error_grace_s = 5;
};

// Initializes MPI on first use and finalizes it at process exit. May be called any number of
// times in a process. Thread level: SHARDCAL_MPI_THREAD_LEVEL = single | funneled | serialized |
// multiple, default single (what OSU's benchmarks run at: the process has one thread, and every
// MPI call is made by the thread that first called run(); any other level turns on Open MPI's
// internal locking, 70-160 ns per small call, see docs/PERFORMANCE.md). An invalid value is an
// Error on every rank.
// expected_world: 0 = any world size; otherwise every rank throws Error if the job differs.
void run(int expected_world, const Options& opts, const std::function<void(Communicator&)>& body);

// The MPI thread level as "single" | "funneled" | "serialized" | "multiple": what
// MPI_Init_thread was asked for and what MPI_Query_thread says it provided. Empty strings before
// MPI is initialized (the first run()). If something else initialized MPI, requested = provided.
struct ThreadLevel {
  std::string requested;
  std::string provided;
};
ThreadLevel thread_level();

// MPI_Get_library_version, first line, e.g. "Open MPI v4.1.4, package: Debian OpenMPI, ...".
std::string library_version();

}  // namespace shardcal::mpi

#pragma once
// The one seam between shardcal and SimGrid SMPI (docs/SIMULATION.md). The SMPI build
// (`cmake --preset smpi`, option SHARDCAL_SMPI) force-includes this header into every
// translation unit, after smpicxx's own force-included <smpi/smpi_helpers.h>; no other build
// sees it, so the real MPI/NCCL builds are unchanged.
//
// 1. smpi_helpers.h defines function-like macros named exit, malloc, calloc, realloc, free,
//    sleep, usleep, nanosleep, gettimeofday, clock_gettime, getopt*, and getpid, meant for C
//    programs. In C++ they rewrite member functions and qualified names (CLI11's App::exit(e),
//    std::free, std::exit) into calls that do not compile. shardcal reads no host clock to time
//    anything under SMPI (the MPI backend times with MPI_Wtime, below), its one simulated sleep
//    (a window start's wait, time_policy.hpp) calls smpi_nanosleep by name, and its buffers need
//    no SMPI shared-malloc folding, so the macros go.
// 2. All simulated ranks live in one process on one real machine, so gethostname() would put
//    them on one host. Here it answers the simulated host the rank runs on (the platform's
//    host names, the hostfile's placement), so topology discovery sees the simulated cluster as
//    it would see a real one. SHARDCAL_HOSTNAME still overrides it (it is read first).
// 3. SHARDCAL_SIMULATED_TIME selects the MPI backend's time policy (time_policy.hpp, the only
//    place that reads it in core): operations are timed with MPI_Wtime instead of the host
//    clock, and the wall-clock watchdog and end-of-run polling are off (real seconds say nothing
//    about a simulated run; SimGrid itself reports a deadlock and ends the simulation). shardbench
//    reads it once more (bench/src/sweep/simulation_env.cpp): only an SMPI build takes
//    SHARDCAL_SIMULATION, the platform description, into its results.
#ifdef SMPI_HELPERS_H
#undef exit
#undef malloc
#undef calloc
#undef realloc
#undef free
#undef sleep
#undef usleep
#undef nanosleep
#undef gettimeofday
#undef clock_gettime
#undef getopt
#undef getopt_long
#undef getopt_long_only
#undef getpid
#endif

#ifdef __cplusplus
#include <unistd.h>  // declared before the macro below renames the calls

#include <simgrid/host.h>

#include <cstring>

inline int shardcal_simulated_gethostname(char* buf, std::size_t len) {
  const char* name = sg_host_get_name(sg_host_self());
  if (len == 0) return -1;
  std::strncpy(buf, name, len - 1);
  buf[len - 1] = '\0';
  return 0;
}
#define gethostname(buf, len) shardcal_simulated_gethostname((buf), (len))
#endif

#define SHARDCAL_SIMULATED_TIME 1

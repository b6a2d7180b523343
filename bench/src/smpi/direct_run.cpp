// What the SMPI build's shardbench does when it is run directly instead of under smpirun.
//
// smpicxx links every program as a shared object (-shared) that smpirun's smpimain dlopens once
// per simulated rank. Executed directly, such a file has no interpreter and no entry point: the
// kernel jumps to the start of the mapping (entry address 0) and the process dies with SIGSEGV, no
// message. This file gives it both, as libc.so.6 does to print its version when run: a .interp
// section (the system's dynamic loader, SHARDCAL_SMPI_INTERP, found by cmake/smpi.cmake) and an
// entry point (linked with -e shardcal_smpi_direct_run) that prints one error line and exits 2.
// dlopen, and so smpirun, ignores both. Compiled only in the SMPI build (bench/CMakeLists.txt).
//
// The entry point runs before main and before this program's own initialization, with only the
// dynamic loader's setup done: it uses nothing but write(2) and _exit(2).
#include <unistd.h>

#include <cstddef>

#ifndef SHARDCAL_SMPI_INTERP
#error "SHARDCAL_SMPI_INTERP (the dynamic loader's path) comes from cmake/smpi.cmake"
#endif

extern "C" {

[[gnu::section(".interp"), gnu::used]] const char shardcal_smpi_interp[] = SHARDCAL_SMPI_INTERP;

// The kernel enters with the stack 16-byte aligned, not 8 past that as after a call: on x86 the
// function realigns it (as _start does in assembly) before anything may spill an SSE register.
#if defined(__x86_64__) || defined(__i386__)
#define SHARDCAL_ENTRY_ATTRIBUTES [[noreturn, gnu::used, gnu::force_align_arg_pointer]]
#else
#define SHARDCAL_ENTRY_ATTRIBUTES [[noreturn, gnu::used]]
#endif
SHARDCAL_ENTRY_ATTRIBUTES void shardcal_smpi_direct_run() {
  static const char msg[] =
      "shardbench: error: this is the SimGrid SMPI build of shardbench, a program only smpirun "
      "can load (one copy per simulated rank); it cannot run by itself. Run it on a simulated "
      "cluster with scripts/simulate/smpirun.sh --platform P --hostfile H --np N -- ARGS "
      "(docs/SIMULATION.md); calibrate, predict, plan, gate and the other commands that need no "
      "simulated network run on a native build's shardbench (e.g. build-release/bin/shardbench "
      "from `cmake --preset release`)\n";
  const char* p = msg;
  std::size_t left = sizeof msg - 1;
  while (left > 0) {
    const ssize_t n = write(2, p, left);
    if (n <= 0) break;  // stderr closed or full: the exit code still says it
    p += n;
    left -= std::size_t(n);
  }
  _exit(2);
}

}  // extern "C"

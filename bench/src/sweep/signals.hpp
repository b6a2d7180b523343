#pragma once
// SIGINT/SIGTERM/SIGUSR1 handling for long sweeps: the handler only records the signal; the sweep polls
// it between points and at its adaptive checkpoints, agrees with every rank to stop, and leaves
// a valid results file (Slurm sends SIGTERM at the time limit).
namespace shardbench::sweep {

// Installs handlers for SIGINT, SIGTERM and SIGUSR1 (Slurm's --signal=USR1@T) (idempotent); the previous handlers come back on
// restore_stop_handlers().
void install_stop_handlers();
void restore_stop_handlers();
// The signal number received on this rank (0 = none yet).
int pending_signal();
// Test hook: pretend a signal arrived.
void request_stop(int signum);
void clear_stop();
// Conventional shell exit code for a run stopped by `signum` (128 + signum: 130, 143, 138).
inline int exit_code_for_signal(int signum) { return 128 + signum; }

}  // namespace shardbench::sweep

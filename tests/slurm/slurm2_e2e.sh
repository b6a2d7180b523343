#!/usr/bin/env bash
# tests/slurm/slurm2_e2e.sh - the two-node Slurm end-to-end test (ctest label "slurm2"): the
# README's multi-node command on `scripts/slurm/local-cluster --nodes 2` (two slurmd, each in
# its own network + UTS namespace of the emulated two-host cluster, the link shaped to RATE):
#   0. a start that fails half way (tc rejects the rate) leaves nothing behind;
#   1. sbatch -N 2 --ntasks-per-node 2 calibrate.sbatch --backend mpi (tests/slurm/two_nodes.json,
#      link shaped to 200 Mbit/s):
#      results naming both nodes, points whose groups span both, every point correct; a valid
#      profile whose inter-host models recover the shaped rate (one-way collectives within 10 %
#      of docs/EMULATION.md's payload rate, all_gather 0.85-1.10 of it); the report;
#   2. calibrate-array.sbatch --array=0-1 across both nodes + the afterok merge job (tiny.json);
#   3. a 1-minute job stopped by its USR1 warning (exit 3), completed by a second job with --resume;
#   4. stop (twice), and nothing of the cluster left: no slurmctld/slurmd/munged of it, no
#      namespace, veth or directory (checked here, independently of local-cluster check-stopped).
# The cluster is started here and stopped by the EXIT trap whatever happens; if ctest kills this
# script (SIGKILL at its TIMEOUT skips the trap) the cleanup fixture slurm2.cluster_stop stops it.
# Needs root (namespaces, slurmd): otherwise it exits 77, which ctest reports as skipped with the
# reason.
# Usage: slurm2_e2e.sh SOURCE_DIR SHARDBENCH WORK_DIR [BUDGET_S]
# Environment (from tests/slurm/CMakeLists.txt): SHARDCAL_SLURM_DIR, SHARDCAL_SLURM_PORT.
set -euo pipefail

NAME=slurm2_e2e SRC=$1 SB=$2 WORK=$3 BUDGET_S=${4:-400}
RATE=200mbit
# shellcheck source=tests/slurm/e2e_lib.sh
source "$SRC/tests/slurm/e2e_lib.sh"
e2e2_setup
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$SRC"

# ---------------------------------------------------------------------------------------------
step "0. a start that fails half way leaves nothing behind"
if "$LC" --nodes 2 --rate 0kbit start >"$WORK/failed-start.log" 2>&1; then
  fail "local-cluster --nodes 2 --rate 0kbit start succeeded"
fi
grep -q "start failed; removing what it started" "$WORK/failed-start.log" ||
  fail "the failed start did not say it cleans up: $(tail -3 "$WORK/failed-start.log")"
[[ -z $(leftovers) ]] || fail "a failed start left behind: $(leftovers)"
echo "ok: failed start (tc rejects 0kbit) removed what it created"

step "start: local-cluster --nodes 2 --rate $RATE"
e2e2_start "$RATE"
JOBS=()

# 4 MPI ranks on a 2-core machine: OpenMPI must yield when idle, or every op waits for a time
# slice. OpenMPI's TCP eager limit raised to 8 MiB (above every message here: no rendezvous):
# with the default rendezvous, two-way collectives stall on the shaped link (all_gather 0.66 x
# the expected busbw, measured; docs/EMULATION.md "Expected bandwidth"); without it all_gather
# measures the link (0.90-0.97 x: the other direction's ACKs take ~5 %).
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_tcp_eager_limit=8388608 \
  OMPI_MCA_btl_tcp_rndv_eager_limit=8388608 OMPI_MCA_btl_tcp_max_send_size=8388608
COMMON=(--shardbench "$SB" --out-base "$WORK" --name slurm2)

# ---------------------------------------------------------------------------------------------
step "1. sbatch -N 2 --ntasks-per-node 2 calibrate.sbatch --backend mpi (tests/slurm/two_nodes.json)"
jid=$(submit -N 2 --ntasks-per-node 2 -o "$WORK/calib-%j.log" scripts/slurm/calibrate.sbatch \
  --backend mpi --config tests/slurm/two_nodes.json "${COMMON[@]}")
JOBS+=("$jid")
read -r state code < <(wait_job "$jid" 120)
log=$WORK/calib-$jid.log
tail -4 "$log" 2>/dev/null || true
[[ $state == COMPLETED && $code == 0 ]] || fail "calibrate job $jid: $state exit $code; log: $log"
grep -q "job $jid: 2 node(s) \[$EMU_NAME-h\[0-1\]\]" "$log" || fail "$log: the job's topology line does not name both nodes"
check_results "$WORK/calib-$jid" tests/slurm/two_nodes.json 1 || fail "calibrate job $jid: outputs invalid"
check_report "$WORK/calib-$jid" "$log"
# The inter-host models against the shaped rate: one-way collectives within 10 % of the payload
# rate (check_profile.py's own checks), all_gather within 0.85-1.10 of it (above it by the same
# 10 % as the one-way checks: tbf's burst lets a share through at line speed; 1.055 was seen in
# a fresh-clone CI run on 2026-11-29, the one-way models at 1.001-1.006 in the same run).
PYTHONPATH="$SRC/calibrate/python${PYTHONPATH:+:$PYTHONPATH}" "$PY" "$SRC/scripts/emulate/check_profile.py" \
  --profile "$WORK/calib-$jid/profile.json" --rate "$RATE" --out "$WORK/check.json" ||
  fail "the profile's inter-host bandwidth does not recover the shaped $RATE (above)"
"$PY" - "$WORK/check.json" <<'EOF' || fail "all_gather's inter-host bandwidth is off the shaped rate"
import json, sys
rows = {r["collective"]: r for r in json.load(open(sys.argv[1]))["collectives"]}
ag = rows.get("all_gather")
if ag is None:
    sys.exit("no inter-host all_gather model in the profile")
if not 0.85 <= ag["ratio"] <= 1.10:
    sys.exit(f"all_gather inter-host busbw {ag['inter_GBps'] * 1e3:.3f} MB/s = {ag['ratio']:.3f} x the "
             f"expected {ag['expected_GBps'] * 1e3:.3f} MB/s, outside 0.85-1.10")
print(f"ok: all_gather inter-host {ag['inter_GBps'] * 1e3:.3f} MB/s = {ag['ratio']:.3f} x expected")
EOF

# ---------------------------------------------------------------------------------------------
step "2. calibrate-array.sbatch --array=0-1 across both nodes + afterok merge job"
# tests/slurm/tiny.json (42 small points, meshes 4 and 2x2): the shards' placement and the
# merge are what is tested here, not bandwidth.
array_and_merge check_results 120 -N 2 --ntasks-per-node 2

# ---------------------------------------------------------------------------------------------
step "3. a 1-minute 2-node job stopped by its USR1 warning, completed by a second job with --resume"
# As slurm_e2e.sh's step 3, with the ranks on two nodes: the stop (scancel --signal=TERM to the
# steps) must reach the ranks on the second node through its slurmd.
time_limit_resume check_results -N 2 --ntasks-per-node 2

# ---------------------------------------------------------------------------------------------
step "4. stop (twice): nothing of the cluster left"
e2e2_stop_and_check
step "all two-node Slurm checks passed"

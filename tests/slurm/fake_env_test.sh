#!/usr/bin/env bash
# tests/slurm/fake_env_test.sh - the sweep under fake SLURM_* environments on 8 MPI ranks with 2
# emulated hosts (SHARDCAL_HOSTNAME per rank; ctest label mpi):
#   1. Slurm says 2 nodes x 4 tasks, the ranks find 2 hosts x 4: accepted, "slurm" in the context;
#   2. Slurm says 2 nodes x 4, every rank reports one hostname: refused (exit 2, clear message);
#   3. --resume of a half-done file on hosts with other names, same shape: accepted, a second
#      context record with the new names, every point once;
#   4. --resume on 4 hosts x 2 ranks (Slurm agreeing): refused, naming the host shape.
# Usage: fake_env_test.sh SHARDBENCH CONFIG WORK_DIR MPIEXEC [MPIEXEC ARGS...]
set -euo pipefail
SB=$1 CFG=$2 WORK=$3
shift 3
MPI=("$@")
fail() {
  echo "fake_env_test: FAIL: $*" >&2
  exit 1
}
rm -rf "$WORK"
mkdir -p "$WORK"
OUT=$WORK/r.jsonl

# The SLURM_* variables go to the ranks only (through sh -c), never to mpirun, which would
# otherwise think it runs inside a Slurm allocation. HOSTS_PER: ranks per emulated host.
sweep() {  # prefix hosts_per slurm_nodes slurm_tasks_per_node sweep-args... -> exit status
  local prefix=$1 per=$2 nodes=$3 tpn=$4
  shift 4
  local rc=0
  # shellcheck disable=SC2016  # expanded by the ranks' sh, on purpose
  FAKE_PREFIX=$prefix FAKE_PER=$per FAKE_NODES=$nodes FAKE_TPN=$tpn timeout 120 "${MPI[@]}" -np 8 sh -c '
    export SHARDCAL_HOSTNAME="$FAKE_PREFIX$((OMPI_COMM_WORLD_RANK / FAKE_PER))"
    export SLURM_JOB_ID=4242 SLURM_STEP_NUM_TASKS=8 SLURM_STEP_NUM_NODES="$FAKE_NODES" SLURM_STEP_TASKS_PER_NODE="$FAKE_TPN"
    exec "$0" "$@"' "$SB" sweep --backend mpi --config "$CFG" --quiet "$@" \
    </dev/null >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
  return "$rc"
}

points() { grep -c '"type":"point"' "$1" || true; }
contexts() { grep -c '"type":"context"' "$1" || true; }

# 1
sweep node 4 2 '4(x2)' --out "$OUT" || fail "2x4 under a matching Slurm step: exit $? ($(cat "$WORK/err.txt"))"
total=$(points "$OUT")
head -1 "$OUT" | grep -q '"slurm":{"job_id":"4242","num_nodes":2,"num_tasks":8,"source":"step","tasks_per_node":\[4,4\]}' ||
  fail "context lacks the slurm record: $(head -c 600 "$OUT")"
head -1 "$OUT" | grep -q '"n_hosts":2' || fail "context does not have 2 hosts"
echo "ok: 8 ranks on 2 emulated hosts under a matching Slurm step: $total points"

# 2
rc=0
sweep same 8 2 '4(x2)' --out "$WORK/bad.jsonl" || rc=$?
[[ $rc == 2 ]] || fail "one hostname under a 2-node step: exit $rc, expected 2"
grep -q "topology mismatch: Slurm says 2 node(s) with \[4,4\] task(s)" "$WORK/err.txt" ||
  fail "no clear mismatch message: $(cat "$WORK/err.txt")"
[[ -e $WORK/bad.jsonl ]] && fail "a refused run created its results file"
echo "ok: a topology mismatch is refused: $(grep -m1 -o 'topology mismatch: Slurm says .\{0,40\}' "$WORK/err.txt")"

# 3: as if the job stopped half-way, then resumed on a new allocation (other hostnames)
keep=$((1 + total / 2))
head -n "$keep" "$OUT" >"$WORK/half.jsonl"
mv "$WORK/half.jsonl" "$OUT"
cp "$OUT" "$WORK/half-copy.jsonl"
sweep newnode 4 2 '4(x2)' --resume "$OUT" || fail "resume on renamed hosts, same shape: exit $? ($(cat "$WORK/err.txt"))"
[[ $(points "$OUT") == "$total" ]] || fail "after resume: $(points "$OUT") points, expected $total"
[[ $(contexts "$OUT") == 2 ]] || fail "after resume: $(contexts "$OUT") context records, expected 2"
sed -n "$((keep + 1))p" "$OUT" | grep -q '"name":"newnode0"' || fail "the new context record does not name the new hosts"
/usr/bin/python3 -c 'import json, sys
k = [r["key"] for r in map(json.loads, open(sys.argv[1])) if r["type"] == "point"]
sys.exit(len(k) != len(set(k)))' "$OUT" || fail "a point appears twice"
echo "ok: resume on new hosts of the same shape accepted; context 2 at line $((keep + 1))"

# 4: another shape (4 hosts x 2 ranks), Slurm agreeing with the ranks
cp "$WORK/half-copy.jsonl" "$OUT"
rc=0
sweep quad 2 4 '2(x4)' --resume "$OUT" || rc=$?
[[ $rc == 2 ]] || fail "resume on 4 hosts x 2: exit $rc, expected 2"
grep -q "hosts (ranks per host): file" "$WORK/err.txt" || fail "refusal does not name the host shape: $(cat "$WORK/err.txt")"
cmp -s "$OUT" "$WORK/half-copy.jsonl" || fail "a refused resume modified the file"
echo "ok: resume on another host shape refused"

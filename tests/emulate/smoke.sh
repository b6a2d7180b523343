#!/usr/bin/env bash
# tests/emulate/smoke.sh - CI smoke test of the emulated two-host cluster (ctest label `emulate`).
# Usage: smoke.sh SHARDBENCH SOURCE_DIR [NAME [WORK_DIR]]
# NAME (the instance) and WORK_DIR come from tests/emulate/CMakeLists.txt, derived from the build
# directory, so the cleanup fixture (emulate.two_hosts_cleanup: `two-hosts --name NAME stop`)
# removes the instance even when ctest's TIMEOUT SIGKILLs this script and its EXIT trap never
# runs. Each mpirun is bounded by `timeout`, well inside ctest's TIMEOUT.
# start (plus two failing starts that must leave nothing behind), a small sweep across the two
# hosts, calibrate, the fitted inter-host bandwidth within a loose tolerance of the shaped rate,
# stop, and nothing of the instance left (`ip netns list`, `ip link`, state dir). Needs root:
# without it, or where the kernel forbids namespaces, the test FAILS with the reason.
set -Euo pipefail
[[ $# -ge 2 && $# -le 4 ]] || { echo "usage: smoke.sh SHARDBENCH SOURCE_DIR [NAME [WORK_DIR]]" >&2; exit 2; }
SB=$1
SRC=$2
EMU=$SRC/scripts/emulate/two-hosts
# Default (run by hand): derived from the binary's path, so it is knowable for a cleanup.
NAME=${3:-sm$(printf '%s' "$SB" | md5sum | cut -c1-6)}
# A second instance for the concurrent-start check: NAME with its 8th character replaced.
if [[ ${NAME: -1} == x ]]; then NAME2=${NAME:0:7}y; else NAME2=${NAME:0:7}x; fi
RATE=400mbit
if [[ -n ${4:-} ]]; then
  WORK=$4
  rm -rf -- "$WORK"
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardcal-emulate-smoke.XXXXXX")
fi
fail() { echo "FAIL: $*" >&2; exit 1; }
leftovers() {
  { ip netns list 2>/dev/null | grep -E "^$NAME-" || true
    ip -o link show 2>/dev/null | grep -E ": $NAME-" || true
    [[ -e /run/shardcal-emulate/$NAME ]] && echo "/run/shardcal-emulate/$NAME"; } | paste -sd, -
}
cleanup() {
  "$EMU" --name "$NAME" stop >/dev/null 2>&1 || true
  "$EMU" --name "$NAME2" stop >/dev/null 2>&1 || true
  rm -rf -- "$WORK"
}
trap cleanup EXIT

[[ $(id -u) == 0 ]] || fail "needs root: network namespaces, veth and tc need CAP_SYS_ADMIN + CAP_NET_ADMIN (CI runs as root; run ctest as root)"

# 1. A start that fails half way (tc rejects the rate after the namespaces and veth exist)
#    must remove what it created.
if "$EMU" --name "$NAME" --rate 0kbit start 2>"$WORK/err0"; then fail "start with rate 0kbit succeeded"; fi
grep -q "start failed, removing" "$WORK/err0" || fail "failed start did not say it cleans up: $(cat "$WORK/err0")"
[[ -z $(leftovers) ]] || fail "a failed start left behind: $(leftovers)"

# 2. Start. A kernel/container without namespaces fails here, with start's reason.
"$EMU" --name "$NAME" --rate "$RATE" start 2>"$WORK/err1" ||
  fail "two-hosts start failed: $(cat "$WORK/err1")"
"$EMU" --name "$NAME" status >/dev/null || fail "status says the instance is not up after start"
# A second start of the same name is refused and must not touch the running instance.
if "$EMU" --name "$NAME" start 2>/dev/null; then fail "a second start of '$NAME' succeeded"; fi
"$EMU" --name "$NAME" status >/dev/null || fail "a refused second start damaged the instance"

# Two concurrent starts of one name: start/stop hold a lock per name, so the second waits, finds
# the instance and is refused; neither tears down the other's objects.
"$EMU" --name "$NAME2" --rate "$RATE" start >"$WORK/race1" 2>&1 &
r1=$!
"$EMU" --name "$NAME2" --rate "$RATE" start >"$WORK/race2" 2>&1 &
r2=$!
c1=0 c2=0
wait "$r1" || c1=$?
wait "$r2" || c2=$?
"$EMU" --name "$NAME2" status >/dev/null ||
  { "$EMU" --name "$NAME2" stop >/dev/null 2>&1 || true
    fail "after two concurrent starts of '$NAME2' (exit $c1, $c2) the instance is not up: $(cat "$WORK/race1" "$WORK/race2")"; }
"$EMU" --name "$NAME2" stop >/dev/null || fail "stop of '$NAME2' failed"
(((c1 == 0) + (c2 == 0) == 1)) ||
  fail "two concurrent starts of '$NAME2': exit $c1 and $c2, expected exactly one success"
grep -q "exists" "$WORK/race1" "$WORK/race2" || fail "the refused concurrent start did not say the instance exists"

# 3. Hostnames: ranks 0,1 on host 0, ranks 2,3 on host 1 (what the sweep's topology sees).
hosts=$(timeout -k 5 30 "$EMU" --name "$NAME" run -- -np 4 hostname </dev/null | sort | uniq -c | awk '{print $1 "x" $2}' | paste -sd' ' -)
[[ $hosts == "2x$NAME-h0 2x$NAME-h1" ]] || fail "expected 2 ranks on each of $NAME-h0/$NAME-h1, got '$hosts'"

# 4. Sweep across the two hosts, calibrate, check the inter-host bandwidth (loose: the recovered
# link +-25%, each one-way collective +-40%: one collective's fit from 4 sizes x 5-10 samples in
# a 13 s smoke was once 1.29x on a loaded CI machine, scatter, with the link median at 1.14x).
timeout -k 10 100 "$EMU" --name "$NAME" run -- -np 4 "$SB" sweep --backend mpi --quiet --timeout 60 \
  --config "$SRC/tests/emulate/smoke.json" --out "$WORK/sweep.jsonl" </dev/null ||
  fail "sweep failed (exit $?; 124 = not done within 100 s)"
grep -q "\"name\":\"$NAME-h1\"" "$WORK/sweep.jsonl" || fail "the results' context does not list host $NAME-h1"
"$SB" calibrate --results "$WORK/sweep.jsonl" --out "$WORK/profile.json" >"$WORK/cal.txt" ||
  fail "calibrate failed: $(cat "$WORK/cal.txt")"
PYTHONPATH="$SRC/calibrate/python${PYTHONPATH:+:$PYTHONPATH}" /usr/bin/python3 "$SRC/scripts/emulate/check_profile.py" --profile "$WORK/profile.json" \
  --rate "$RATE" --tolerance 0.25 --collective-tolerance 0.40 ||
  fail "fitted inter-host bandwidth is not within 25% (each one-way collective 40%) of the shaped $RATE (above)"

# 5. Stop: nothing left; status says so; stop again is harmless.
"$EMU" --name "$NAME" stop || fail "stop failed"
[[ -z $(leftovers) ]] || fail "left behind after stop: $(leftovers)"
if "$EMU" --name "$NAME" status >/dev/null; then fail "status says up after stop"; fi
"$EMU" --name "$NAME" stop >/dev/null || fail "a second stop failed"
echo "PASS: emulated two-host smoke test ($RATE)"

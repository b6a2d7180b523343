#!/usr/bin/env bash
# tests/emulate/smoke.sh - CI smoke test of the emulated two-host cluster (ctest label `emulate`).
# Usage: smoke.sh SHARDBENCH SOURCE_DIR
# start (plus two failing starts that must leave nothing behind), a small sweep across the two
# hosts, calibrate, the fitted inter-host bandwidth within a loose tolerance of the shaped rate,
# stop, and nothing of the instance left (`ip netns list`, `ip link`, state dir). Needs root:
# without it, or where the kernel forbids namespaces, the test FAILS with the reason.
set -Euo pipefail
[[ $# -eq 2 ]] || { echo "usage: smoke.sh SHARDBENCH SOURCE_DIR" >&2; exit 2; }
SB=$1
SRC=$2
EMU=$SRC/scripts/emulate/two-hosts
NAME=sm$(($$ % 100000))   # unique per run: concurrent test runs do not collide
RATE=400mbit
WORK=$(mktemp -d "${TMPDIR:-/tmp}/shardcal-emulate-smoke.XXXXXX")
fail() { echo "FAIL: $*" >&2; exit 1; }
leftovers() {
  { ip netns list 2>/dev/null | grep -E "^$NAME-" || true
    ip -o link show 2>/dev/null | grep -E ": $NAME-" || true
    [[ -e /run/shardcal-emulate/$NAME ]] && echo "/run/shardcal-emulate/$NAME"; } | paste -sd, -
}
cleanup() {
  "$EMU" --name "$NAME" stop >/dev/null 2>&1 || true
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

# 3. Hostnames: ranks 0,1 on host 0, ranks 2,3 on host 1 (what the sweep's topology sees).
hosts=$("$EMU" --name "$NAME" run -- -np 4 hostname </dev/null | sort | uniq -c | awk '{print $1 "x" $2}' | paste -sd' ' -)
[[ $hosts == "2x$NAME-h0 2x$NAME-h1" ]] || fail "expected 2 ranks on each of $NAME-h0/$NAME-h1, got '$hosts'"

# 4. Sweep across the two hosts, calibrate, check the inter-host bandwidth (loose: +-25%).
"$EMU" --name "$NAME" run -- -np 4 "$SB" sweep --backend mpi --quiet --timeout 60 \
  --config "$SRC/tests/emulate/smoke.json" --out "$WORK/sweep.jsonl" </dev/null || fail "sweep failed"
grep -q "\"name\":\"$NAME-h1\"" "$WORK/sweep.jsonl" || fail "the results' context does not list host $NAME-h1"
"$SB" calibrate --results "$WORK/sweep.jsonl" --out "$WORK/profile.json" >"$WORK/cal.txt" ||
  fail "calibrate failed: $(cat "$WORK/cal.txt")"
/usr/bin/python3 "$SRC/scripts/emulate/check_profile.py" --profile "$WORK/profile.json" \
  --rate "$RATE" --tolerance 0.25 || fail "fitted inter-host bandwidth is not within 25% of the shaped $RATE (above)"

# 5. Stop: nothing left; status says so; stop again is harmless.
"$EMU" --name "$NAME" stop || fail "stop failed"
[[ -z $(leftovers) ]] || fail "left behind after stop: $(leftovers)"
if "$EMU" --name "$NAME" status >/dev/null; then fail "status says up after stop"; fi
"$EMU" --name "$NAME" stop >/dev/null || fail "a second stop failed"
echo "PASS: emulated two-host smoke test ($RATE)"

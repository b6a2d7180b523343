#!/usr/bin/env bash
# scripts/emulate/dtensor-two-hosts.sh - DTensor's own redistribute timed with and without a
# shardcal profile (shardcal.torch) on the emulated two-host cluster: 4 torch ranks over gloo/TCP,
# 2 per "host" (dim 0 of the 2x2 mesh inter-host), interleaved per repeat (docs/DTENSOR.md).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

usage() {
  cat <<'USAGE'
Usage: bash scripts/emulate/dtensor-two-hosts.sh --profile P.json [--rate 400mbit] [--repeats 10]
         [--out DIR] [--name NAME] [--help]

Starts the emulated cluster (scripts/emulate/two-hosts, shaped to --rate), runs
scripts/torch/dtensor_emulated.py as 4 ranks (ranks 0,1 in host 0, 2,3 in host 1; gloo,
MASTER_ADDR = host 0's veth address) with .venv/bin/python (bash scripts/python-env.sh --torch),
and writes DIR/times.jsonl and DIR/summary.md (medians per transition, size and mode of a\nredistribute with the plan cached and of the first one after the plan caches were cleared).
Use the profile calibrate-two-hosts.sh fits at the same rate. Needs root. Default --out
out/emulate-dtensor, --name scdt.
USAGE
}
die() { echo "dtensor-two-hosts: $*" >&2; exit 2; }
PROFILE="" RATE=400mbit REPEATS=10 OUT=out/emulate-dtensor NAME=scdt
while [[ $# -gt 0 ]]; do
  case "$1" in
    --profile) PROFILE=${2:-}; shift ;;
    --rate) RATE=${2:-}; shift ;;
    --repeats) REPEATS=${2:-}; shift ;;
    --out) OUT=${2:-}; shift ;;
    --name) NAME=${2:-}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
  shift
done
[[ -f $PROFILE ]] || die "--profile '$PROFILE' not found (calibrate-two-hosts.sh writes one per rate)"
[[ $REPEATS =~ ^[1-9][0-9]*$ ]] || die "--repeats must be a positive integer"
PY=$ROOT/.venv/bin/python
"$PY" -c 'import shardcal.torch, torch' 2>/dev/null || die "$PY lacks torch: bash scripts/python-env.sh --torch"
[[ $(id -u) == 0 ]] || die "needs root (network namespaces)"

SUBNET=10.213.7  # two-hosts' default; host 0 is SUBNET.1
EMU=(scripts/emulate/two-hosts --name "$NAME" --subnet "$SUBNET")
mkdir -p "$OUT"
"${EMU[@]}" --rate "$RATE" start
trap '"${EMU[@]}" stop >/dev/null || echo "dtensor-two-hosts: WARNING: stop failed; run ${EMU[*]} stop" >&2' EXIT
trap 'exit 130' INT TERM
addr=$SUBNET.1
echo "== 4 torch ranks, MASTER_ADDR=$addr, rate $RATE, $REPEATS repeats, $(uptime | sed 's/.*load/load/')"
pids=()
for r in 0 1 2 3; do
  "${EMU[@]}" exec $((r / 2)) -- env RANK=$r WORLD_SIZE=4 MASTER_ADDR="$addr" MASTER_PORT=29531 \
    GLOO_SOCKET_IFNAME="$NAME-v$((r / 2))" "$PY" scripts/torch/dtensor_emulated.py "$(realpath "$PROFILE")" \
    "$(realpath "$OUT")/times.jsonl" "$REPEATS" >"$OUT/rank$r.log" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
((rc == 0)) || die "a rank failed (see $OUT/rank*.log)"
"$PY" - "$OUT/times.jsonl" >"$OUT/summary.md" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = sorted({(r["from"], r["to"], r["bytes"]) for r in rows}, key=lambda k: (k[0], k[1], k[2]))
print("| from → to | bytes | DTensor plan | plan with profile | DTensor (ms) | profile (ms) | speed-up | first call: DTensor (ms) | profile (ms) | speed-up |")
print("|---|---|---|---|---|---|---|---|---|---|")
for k in keys:
    sel = {m: [r for r in rows if (r["from"], r["to"], r["bytes"]) == k and r["mode"] == m] for m in ("dtensor", "profile")}
    med = {m: statistics.median(r["time_s"] for r in v) * 1e3 for m, v in sel.items()}
    fst = {m: statistics.median(r["first_s"] for r in v) * 1e3 for m, v in sel.items()}
    plan = {m: " ".join(f"{d}:{a}→{b}" for d, a, b in v[0]["plan"]) for m, v in sel.items()}
    print(f"| `{k[0]} → {k[1]}` | {k[2]} | {plan['dtensor']} | {plan['profile']} | {med['dtensor']:.1f} | "
          f"{med['profile']:.1f} | {med['dtensor'] / med['profile']:.2f}x | {fst['dtensor']:.1f} | {fst['profile']:.1f} | "
          f"{fst['dtensor'] / fst['profile']:.2f}x |")
PYEOF
cat "$OUT/summary.md"

#!/usr/bin/env bash
# scripts/emulate/calibrate-two-hosts.sh - ground truth for calibration: sweep + calibrate the
# emulated two-host cluster at known link rates and check the fitted inter-host bandwidth
# against each rate (docs/EMULATION.md).
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

usage() {
  cat <<'EOF'
Usage: bash scripts/emulate/calibrate-two-hosts.sh [--rates "100mbit 400mbit"] [--out DIR]
         [--build-dir DIR] [--config FILE] [--tolerance 0.10] [--name NAME] [--help]

For each rate: shapes the emulated two-host cluster (scripts/emulate/two-hosts: 2 hosts x 2
ranks, veth shaped by tc tbf) to that rate, sweeps a 2x2 mesh (dim 0 = inter-host, dim 1 =
intra-host) with FILE, fits a profile (shardbench calibrate) and checks it
(scripts/emulate/check_profile.py): the one-way collectives' inter-host bandwidth within
--tolerance of the rate's expected bus bandwidth (TCP/IP overhead and sharing by the two
concurrent groups accounted, docs/EMULATION.md), and intra-host >= 5x inter-host bandwidth.
Needs root. The emulation is removed at the end, also on failure or Ctrl-C.

Options:
  --rates LIST     tbf rates, tc syntax, space separated (default: "100mbit 400mbit")
  --out DIR        output directory (default: out/emulate)
  --build-dir DIR  where shardbench was built (default: build; uses DIR/bin/shardbench)
  --config FILE    sweep config (default: configs/emulate/two-hosts.json)
  --tolerance X    relative tolerance of the bandwidth check (default: 0.10)
  --name NAME      emulation instance name (default: sccal)
  --help           this help

Outputs, per rate R under DIR/R/: sweep.jsonl (results), profile.json, calibration.txt
(quality table), check.txt / check.json (verdicts); DIR/summary.md (one table over the rates);
DIR/report/ when reports/make_report.py exists. Takes about 1.5 min per rate at 100 Mbit/s
(less at higher rates). Exit 0 every check passed, 1 a check failed, 2 bad input or a failed
step.
EOF
}

PROG=calibrate-two-hosts
# shellcheck source=scripts/emulate/common.sh
source "$ROOT/scripts/emulate/common.sh"
RATES="100mbit 400mbit"
OUT=out/emulate
BUILD_DIR=build
CONFIG=configs/emulate/two-hosts.json
TOL=0.10
NAME=sccal
declare -A OPTS=([--rates]=RATES [--out]=OUT [--build-dir]=BUILD_DIR [--config]=CONFIG
                 [--tolerance]=TOL [--name]=NAME)
parse_options "$@"
need_shardbench sweep calibrate
need_file config "$CONFIG"
need_root
read -r -a rates <<<"$RATES"
[[ ${#rates[@]} -ge 1 ]] || die "--rates is empty"
for r in "${rates[@]}"; do check_rate --rates "$r"; done
"$SB" sweep --backend sim --world 4 --config "$CONFIG" --validate-only >/dev/null ||
  die "sweep config $CONFIG is invalid for 4 ranks (see above)"

emu_start "${rates[0]}"

status=0
for r in "${rates[@]}"; do
  d=$OUT/$r
  mkdir -p "$d"
  "${EMU[@]}" rate "$r"
  echo "== $r: sweep ($CONFIG) on 2 emulated hosts x 2 ranks, $(uptime | sed 's/.*load/load/')"
  t0=$SECONDS
  in_bg "${EMU[@]}" run -- -np 4 "$SB" sweep --backend mpi --quiet --config "$CONFIG" --out "$d/sweep.jsonl" </dev/null ||
    die "sweep at $r failed"
  echo "   sweep took $((SECONDS - t0)) s"
  "$SB" calibrate --results "$d/sweep.jsonl" --out "$d/profile.json" --name "emulated-2hosts-$r" \
    >"$d/calibration.txt" || die "calibrate at $r failed (see $d/calibration.txt)"
  rc=0
  PYTHONPATH=calibrate/python${PYTHONPATH:+:$PYTHONPATH} /usr/bin/python3 scripts/emulate/check_profile.py --profile "$d/profile.json" --rate "$r" \
    --tolerance "$TOL" --out "$d/check.json" >"$d/check.txt" || rc=$?
  cat "$d/check.txt"
  ((rc == 2)) && die "check at $r: bad input (see above)"
  ((rc != 0)) && status=1
done

# One table over the rates (atomically). Its columns come from the collective table (shardcal
# package): the one-way collectives, the link recovered from them, then the two-way ones, each in
# table order, so a new collective gets its column without an edit here.
tmp=$(mktemp "$OUT/.summary.XXXXXX")
PYTHONPATH=calibrate/python${PYTHONPATH:+:$PYTHONPATH} /usr/bin/python3 - "$OUT" "${rates[@]}" >"$tmp" <<'EOF'
import json, sys
from shardcal.profile import COLLECTIVES, ONE_WAY
out, rates = sys.argv[1], sys.argv[2:]
one_way = [k for k in COLLECTIVES if k in ONE_WAY]
two_way = [k for k in COLLECTIVES if k not in ONE_WAY]
cols = ["rate", "expected busbw/group MB/s", *one_way, "recovered (median)", *two_way, "verdict"]
print("| " + " | ".join(cols) + " |")
print("|" + "---|" * len(cols))
for r in rates:
    c = json.load(open(f"{out}/{r}/check.json"))
    by = {x["collective"]: x for x in c["collectives"]}
    cell = lambda k: (f"{by[k]['inter_GBps']*1e3:.2f} ({by[k]['ratio']:.3f}x)" if k in by else "-")
    row = [r, f"{c['expected_GBps']*1e3:.3f}", *map(cell, one_way),
           f"{c['recovered_link_GBps']*1e3:.2f} ({c['recovered_ratio']:.3f}x)", *map(cell, two_way), c["verdict"]]
    print("| " + " | ".join(row) + " |")
EOF
mv -f "$tmp" "$OUT/summary.md"
echo "== summary ($OUT/summary.md)"
cat "$OUT/summary.md"

if [[ -f reports/make_report.py ]]; then
  results=()
  for r in "${rates[@]}"; do results+=("$OUT/$r/sweep.jsonl"); done
  "${SHARDCAL_PYTHON:-.venv/bin/python}" reports/make_report.py --out "$OUT/report" "${results[@]}" \
    --profile "$OUT/${rates[-1]}/profile.json" --title "Emulated two-host cluster (${rates[*]})" ||
    echo "calibrate-two-hosts: report failed (results stay in $OUT)" >&2
else
  echo "report skipped: reports/make_report.py missing"
fi
exit "$status"

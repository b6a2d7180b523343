#!/usr/bin/env bash
# Run shardbench (the SMPI build) on a simulated cluster, with the settings that make simulated
# time ground truth and deterministic, and record them in the results' context.
#
# Usage: smpirun.sh --platform P --hostfile H --np N [--shardbench PATH] [--cfg K:V ...]
#                   -- SHARDBENCH-ARGS...
#   e.g. smpirun.sh --platform sim/platform.xml --hostfile sim/hostfile --np 64 \
#          -- sweep --backend mpi --config configs/simulate/64.json --out r.jsonl
# P and H come from scripts/simulate/make-platform (its platform.json next to P, when present, is
# copied into the context). --shardbench defaults to build-smpi/bin/shardbench. Extra --cfg
# settings are passed to smpirun after ours (and recorded). Settings (docs/SIMULATION.md):
#   smpi/coll-selector:ompi          Open MPI's collective algorithm choices, except:
#   smpi/bcast:binomial_tree         (global: every broadcast) the ompi selector's broadcast gave intra-host
#                                    times that do not grow with the size (0.6 us for 1 and
#                                    4 MiB on 2 ranks) in SimGrid 3.32: not a network's time
#   smpi/simulate-computation:no     CPU time between MPI calls is not simulated (deterministic;
#                                    packing and reductions cost nothing)
#   smpi/bw-factor:0:1, smpi/lat-factor:0:1, smpi/async-small-thresh:0, smpi/wtime:0
#                                    no SMPI correction factors: the platform's numbers are what
#                                    messages see; reading the clock costs nothing
#   network/crosstraffic:0           no TCP ack traffic on the reverse direction
#   network/TCP-gamma:0              no TCP window bound on bandwidth
# Bad input: one error line, exit 2. Otherwise the exit code is smpirun's.
set -euo pipefail

die() { echo "smpirun.sh: error: $*" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
platform="" hostfile="" np="" shardbench="$root/build-smpi/bin/shardbench"
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --platform) [ $# -ge 2 ] || die "--platform needs a file"; platform="$2"; shift 2 ;;
    --hostfile) [ $# -ge 2 ] || die "--hostfile needs a file"; hostfile="$2"; shift 2 ;;
    --np) [ $# -ge 2 ] || die "--np needs a number"; np="$2"; shift 2 ;;
    --shardbench) [ $# -ge 2 ] || die "--shardbench needs a path"; shardbench="$2"; shift 2 ;;
    --cfg) [ $# -ge 2 ] || die "--cfg needs KEY:VALUE"; extra+=("--cfg=$2"); shift 2 ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (options: --platform --hostfile --np --shardbench --cfg, then -- and shardbench's arguments)" ;;
  esac
done
[ -n "$platform" ] || die "--platform is required (make one with scripts/simulate/make-platform)"
[ -n "$hostfile" ] || die "--hostfile is required (make-platform writes DIR/hostfile)"
[ -f "$platform" ] || die "--platform $platform: no such file"
[ -f "$hostfile" ] || die "--hostfile $hostfile: no such file"
[[ "$np" =~ ^[1-9][0-9]*$ ]] || die "--np '$np': expected a positive integer"
[ -x "$shardbench" ] || die "--shardbench $shardbench: not an executable (build it: cmake --preset smpi && cmake --build build-smpi)"
[ $# -gt 0 ] || die "no shardbench arguments after -- (e.g. -- sweep --backend mpi --config C --out R)"
command -v smpirun >/dev/null || die "smpirun not found: install libsimgrid-dev and simgrid (scripts/setup.sh)"
slots=0
while IFS= read -r line || [ -n "$line" ]; do
  [ -z "$line" ] && continue
  n="${line##*:}"; [ "$n" = "$line" ] && n=1
  [[ "$n" =~ ^[0-9]+$ ]] || die "--hostfile $hostfile: line '$line' is not HOST or HOST:RANKS"
  slots=$((slots + n))
done < "$hostfile"
[ "$np" -le "$slots" ] || die "--np $np: the hostfile $hostfile has only $slots rank slots"

cfg=(--cfg=smpi/coll-selector:ompi --cfg=smpi/bcast:binomial_tree --cfg=smpi/simulate-computation:no
     --cfg=smpi/bw-factor:0:1 --cfg=smpi/lat-factor:0:1 --cfg=smpi/async-small-thresh:0
     --cfg=smpi/wtime:0 --cfg=network/crosstraffic:0 --cfg=network/TCP-gamma:0
     "${extra[@]}")
simulator="$(smpirun -version 2>/dev/null | head -1 || true)"
# The description as JSON from Python (paths may hold quotes or backslashes); platform.json next
# to the platform, when present, is copied in.
SHARDCAL_SIMULATION="$(/usr/bin/python3 - "$platform" "$hostfile" "$np" "${simulator:-SimGrid SMPI}" \
  "${cfg[@]}" <<'PY'
import hashlib, json, os, sys
platform, hostfile, np, simulator, *cfg = sys.argv[1:]
pj = os.path.join(os.path.dirname(platform), "platform.json")
params = None
if os.path.isfile(pj):
    with open(pj, encoding="utf-8") as f:
        params = json.load(f)
with open(platform, "rb") as f:
    sha = hashlib.sha256(f.read()).hexdigest()
print(json.dumps({"simulator": simulator, "platform": os.path.realpath(platform),
                  "platform_sha256": sha, "hostfile": os.path.realpath(hostfile), "np": int(np),
                  "platform_params": params, "cfg": [c.removeprefix("--cfg=") for c in cfg]},
                 separators=(",", ":")))
PY
)" || die "cannot describe the platform $platform (is its platform.json valid JSON?)"
export SHARDCAL_SIMULATION
# The simulated ranks find their hosts in the platform: a real allocation's variables (or a
# hostname override) must not leak into the simulated topology or the results' context.
unset SHARDCAL_HOSTNAME
while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep '^SLURM_' || true)
# smpirun unrolls a HOST:N hostfile into smpitmp-hostf* in the current directory and keeps it
# (printing its command line to stdout) when the run fails: unroll it ourselves into a temp
# file, and -quiet.
unrolled="$(mktemp "${TMPDIR:-/tmp}/shardcal-hostfile.XXXXXX")"
trap 'rm -f "$unrolled"' EXIT
while IFS= read -r line || [ -n "$line" ]; do
  [ -z "$line" ] && continue
  n="${line##*:}"; host="${line%:*}"; [ "$n" = "$line" ] && n=1
  for ((i = 0; i < n; i++)); do echo "$host"; done
done < "$hostfile" > "$unrolled"
# --log=root.thr:critical keeps SimGrid's per-run notices off stderr (errors still show). smpirun
# ends a failed run with "Execution failed with code N." on stdout: that goes to stderr.
set +e
smpirun -quiet -np "$np" -platform "$platform" -hostfile "$unrolled" "${cfg[@]}" \
  --log=root.thr:critical "$shardbench" "$@" | {
  while IFS= read -r out || [ -n "$out" ]; do
    if [[ $out == "Execution failed with code "* ]]; then echo "smpirun.sh: $out" >&2
    else printf '%s\n' "$out"; fi
  done
}
status=${PIPESTATUS[0]}
exit "$status"

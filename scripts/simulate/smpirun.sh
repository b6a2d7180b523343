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
#   smpi/bcast:binomial_tree         the ompi selector's broadcast for 0.5-4 MiB gave intra-host
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
params="null"
pj="$(dirname "$platform")/platform.json"
[ -f "$pj" ] && params="$(tr -d '\n' < "$pj")"
cfg_json="$(printf '%s\n' "${cfg[@]}" | sed 's/^--cfg=//; s/"/\\"/g; s/.*/"&"/' | paste -sd, -)"
SHARDCAL_SIMULATION="{\"simulator\":\"$(smpirun -version 2>/dev/null | head -1 || echo SimGrid SMPI)\",\
\"platform\":\"$(readlink -f "$platform")\",\"platform_sha256\":\"$(sha256sum < "$platform" | cut -d' ' -f1)\",\
\"hostfile\":\"$(readlink -f "$hostfile")\",\"np\":$np,\"platform_params\":$params,\"cfg\":[${cfg_json}]}"
export SHARDCAL_SIMULATION
# --log=root.thr:critical keeps SimGrid's per-run notices off stderr (errors still show).
exec smpirun -np "$np" -platform "$platform" -hostfile "$hostfile" "${cfg[@]}" \
  --log=root.thr:critical "$shardbench" "$@"

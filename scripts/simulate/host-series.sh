#!/usr/bin/env bash
# SMPI ground truth at several host counts (issue 42): one platform swept at each host count H
# with 4 ranks per host, so that a profile fitted at some counts can be judged on the others
# (calibrate/scripts/realdata_eval.py --hosts-series DIR). For each topology and H:
# make-platform --hosts H --ranks-per-host 4, intra-host 150 GB/s 1 us (loopback), inter-host
# 25 GB/s per NIC and direction, 3 us end to end; fat-tree: 4 hosts per leaf switch (all H when
# H < 4), 2 top switches, so 8 and 16 hosts cross leaves over 2:1 oversubscribed uplinks. Then
# the sweep configs/simulate/host-series.json: the 1-D mesh of all 4H ranks (one group spanning
# every host), all_reduce/all_gather/reduce_scatter, f32, 64 KiB - 64 MiB, exact simulated time,
# every sample started from a window start (every rank at one simulated instant, not at the
# barrier's uneven release; docs/RESULTS_FORMAT.md "Starting a sample");
# sizes S with ranks x S > 1 GiB are dropped (SMPI holds all ranks' buffers in one process: 32
# ranks stop at 32 MiB, 64 at 16 MiB; peak ~5 GiB).
# Algorithms (--algorithms): `ring` (default) runs every collective as a neighbour ring at every
# host count (SMPI's allgather NTSLR, allreduce lr, reduce_scatter ompi_ring), as NCCL runs its
# rings: the question is pricing one algorithm at host counts it was not measured at. `ompi` is
# SimGrid's copy of Open MPI's tuned selector, which switches algorithm with the communicator
# size (recursive doubling, Rabenseifner, butterfly, a pairwise "ring"; tests/data/smpi-hosts/
# README.md): a switch no measured count shows, reported beside, not a pass/fail gate.
# Output: DIR/<topology>/hosts<H>.jsonl (ring) or DIR/<topology>-ompi/hosts<H>.jsonl (platform
# in .../platform-<H>/), wall times in DIR/walltime.tsv; runs one simulation at a time.
# Before the sweep, DIR/<topology>[-ompi]/routes.json: the routes a ring over the first H hosts
# takes for every H (bench/tools/ring_routes.cpp, SimGrid's Host::route_to: longest route
# latency, smallest link share), the table the host transport reads (docs/CALIBRATION.md "Other
# host counts"). make-platform's platforms: one platform of the largest count with the same
# parameters (in .../platform-routes/), hosts in index order, as the per-count platforms place
# their H hosts (node-0 .. node-(H-1); the fat tree fills leaf switches in index order); --platform:
# that platform and --hostfile. Without the tool: a warning, and no routes.json.
#
# Usage: scripts/simulate/host-series.sh [--out DIR] [--smpi PATH] [--hosts "2 4 8 16"]
#                                        [--topology flat|fat-tree|both] [--algorithms ring|ompi]
#                                        [--platform XML --hostfile FILE [--name NAME]]
#                                        [--ranks-per-host R] [--ring-routes PATH] [--routes-only]
#   --out DIR       default out/simulate-hosts
#   --smpi PATH     the SMPI build of shardbench (default build-smpi/bin/shardbench)
#   --hosts LIST    host counts, space-separated (default "2 4 8 16"); fat-tree needs each to be
#                   below 4 or a multiple of 4
#   --topology T    flat, fat-tree or both (default both)
#   --algorithms A  ring (default) or ompi (see above)
#   --platform XML  your own SimGrid platform instead of make-platform's: each count H runs on
#                   the first H hosts of --hostfile (one host name per line, "name" or
#                   "name:slots"; the slots are ignored), R ranks on each, in the file's order
#                   (list the hosts in the order a scheduler would place a job: small counts
#                   then sit where small jobs would). Results in DIR/NAME[-ompi]/hosts<H>.jsonl;
#                   NAME defaults to the platform file's name without .xml
#   --ranks-per-host R   ranks on each host (default 4; make-platform's platforms too)
#   --ring-routes PATH   the ring-routes tool (default build-release/bin/ring-routes, else
#                   build/bin/ring-routes; built with the release preset when SimGrid is found)
#   --routes-only   write routes.json only (no sweep, no SMPI build needed), e.g. for a series
#                   swept before routes.json existed
# Bad input: one error line, exit 2.
set -euo pipefail
die() { echo "host-series.sh: error: $*" >&2; exit 2; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/out/simulate-hosts" smpi="$root/build-smpi/bin/shardbench" hosts="2 4 8 16" topo=both algs=ring
rph=4 intra_bw=150 intra_lat=1 inter_bw=25 inter_lat=3 per_leaf=4 top=2
config="$root/configs/simulate/host-series.json"
user_platform="" user_hostfile="" user_name="" topo_given=0 routes_only=0
ring_routes="$root/build-release/bin/ring-routes"
[ -x "$ring_routes" ] || ring_routes="$root/build/bin/ring-routes"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || die "--out needs a directory"; out="$2"; shift 2 ;;
    --smpi) [ $# -ge 2 ] || die "--smpi needs a path"; smpi="$2"; shift 2 ;;
    --hosts) [ $# -ge 2 ] || die "--hosts needs a list of host counts (e.g. \"2 4 8 16\")"; hosts="$2"; shift 2 ;;
    --topology) [ $# -ge 2 ] || die "--topology needs flat, fat-tree or both"; topo="$2"; topo_given=1; shift 2 ;;
    --algorithms) [ $# -ge 2 ] || die "--algorithms needs ring or ompi"; algs="$2"; shift 2 ;;
    --platform) [ $# -ge 2 ] || die "--platform needs a SimGrid platform XML file"; user_platform="$2"; shift 2 ;;
    --hostfile) [ $# -ge 2 ] || die "--hostfile needs a file of host names"; user_hostfile="$2"; shift 2 ;;
    --name) [ $# -ge 2 ] || die "--name needs a directory name"; user_name="$2"; shift 2 ;;
    --ranks-per-host) [ $# -ge 2 ] || die "--ranks-per-host needs a number"; rph="$2"; shift 2 ;;
    --ring-routes) [ $# -ge 2 ] || die "--ring-routes needs a path"; ring_routes="$2"; shift 2 ;;
    --routes-only) routes_only=1; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (options: --out --smpi --hosts --topology --algorithms --platform --hostfile --name --ranks-per-host --ring-routes --routes-only; see --help)" ;;
  esac
done
[[ "$rph" =~ ^[1-9][0-9]*$ ]] && [ "$rph" -le 1024 ] || die "--ranks-per-host '$rph': expected a whole number from 1 to 1024"
user_hosts=()
if [ -n "$user_platform$user_hostfile" ]; then
  [ -n "$user_platform" ] && [ -n "$user_hostfile" ] || die "--platform and --hostfile go together (the platform, and its hosts in placement order)"
  [ -f "$user_platform" ] || die "--platform $user_platform: no such file"
  [ -f "$user_hostfile" ] || die "--hostfile $user_hostfile: no such file"
  # One host per line ("name" or "name:slots"), blank lines and # comments skipped, each once.
  # The first word of each line, without ":slots" (SMPI, MPICH) -- Open MPI's "name slots=4" too.
  mapfile -t user_hosts < <(sed -e 's/#.*//' "$user_hostfile" | awk 'NF { h = $1; sub(/:.*/, "", h); if (h != "" && !seen[h]++) print h }')
  [ ${#user_hosts[@]} -gt 0 ] || die "--hostfile $user_hostfile: no host names in it"
  # Every name must be a host of the platform (<host id>, or a <cluster>'s prefix+radical+suffix):
  # a wrong name would otherwise fail inside SMPI halfway through the series.
  missing=$(/usr/bin/python3 - "$user_platform" "${user_hosts[@]}" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (ET.ParseError, OSError) as e:
    print(f"(cannot read the platform: {e})"); sys.exit(0)
names = set()
for el in root.iter():
    if el.tag == "host" and el.get("id"):
        names.add(el.get("id"))
    elif el.tag == "cluster":
        for part in el.get("radical", "").split(","):
            lo, _, hi = part.partition("-")
            if lo.strip().isdigit():
                for i in range(int(lo), int(hi or lo) + 1):
                    names.add(f"{el.get('prefix', '')}{i}{el.get('suffix', '')}")
bad = [h for h in sys.argv[2:] if h not in names]
print(" ".join(bad[:5]) + (" ..." if len(bad) > 5 else ""))
PY
)
  [ -z "$missing" ] || die "--hostfile $user_hostfile: not hosts of $user_platform: $missing"
  [ -n "$user_name" ] || user_name="$(basename "$user_platform" .xml)"
  [[ "$user_name" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "--name '$user_name': a directory name of letters, digits, '.', '_' or '-' (not starting with '.')"
  [ "$topo_given" = 0 ] || die "--topology names make-platform's platforms; with --platform the platform is yours (drop --topology)"
  topo="$user_name"
fi
if [ ${#user_hosts[@]} -gt 0 ]; then
  topos=("$user_name")
else
  case "$topo" in
    flat|fat-tree) topos=("$topo") ;;
    both) topos=(flat fat-tree) ;;
    *) die "--topology '$topo': expected flat, fat-tree or both" ;;
  esac
fi
case "$algs" in
  ring) alg_cfg=(--cfg smpi/allgather:NTSLR --cfg smpi/allreduce:lr --cfg smpi/reduce_scatter:ompi_ring) suffix="" ;;
  ompi) alg_cfg=() suffix="-ompi" ;;
  *) die "--algorithms '$algs': expected ring or ompi" ;;
esac
read -r -a hs <<< "$hosts"
[ ${#hs[@]} -gt 0 ] || die "--hosts '$hosts': no host count given"
for h in "${hs[@]}"; do
  [[ "$h" =~ ^[1-9][0-9]*$ ]] && [ "$h" -le 256 ] || die "--hosts: '$h' is not a host count from 1 to 256"
  if [ ${#user_hosts[@]} -gt 0 ] && [ "$h" -gt ${#user_hosts[@]} ]; then
    die "--hosts: $h hosts, but --hostfile $user_hostfile lists ${#user_hosts[@]}"
  fi
  if [ ${#user_hosts[@]} -eq 0 ] && [[ " ${topos[*]} " == *" fat-tree "* ]] && [ "$h" -gt "$per_leaf" ] && [ $((h % per_leaf)) -ne 0 ]; then
    die "--hosts: $h hosts do not fill fat-tree leaf switches of $per_leaf hosts (use a multiple of $per_leaf)"
  fi
done
if [ "$routes_only" = 0 ]; then
  [ -x "$smpi" ] || die "--smpi $smpi: not an executable (build it: cmake --preset smpi && cmake --build build-smpi --target shardbench)"
  [ -f "$config" ] || die "$config: missing"
fi
mkdir -p "$out" 2>/dev/null || die "--out $out: cannot create it"

# DIR/<topology>[-ompi]/routes.json (see the top): the ring's routes at every host count. Warns
# and goes on when the tool is missing or fails: the sweep is useful without it.
hmax=0
for h in "${hs[@]}"; do [ "$h" -gt "$hmax" ] && hmax=$h; done
routes_warned=0
write_routes() {  # topology directory
  local t=$1 dir=$2 plat hostfile
  # An older series' table must not be priced with this one's results.
  rm -f "$dir/routes.json"
  if [ ! -x "$ring_routes" ]; then
    [ "$routes_warned" = 1 ] || echo "host-series.sh: warning: --ring-routes $ring_routes: not an executable (build it: cmake --preset release && cmake --build build-release --target ring-routes; needs libsimgrid-dev); no routes.json" >&2
    routes_warned=1
    return 0
  fi
  if [ ${#user_hosts[@]} -gt 0 ]; then
    plat="$user_platform" hostfile="$user_hostfile"
  else
    # One platform of the largest count, the per-count platforms' parameters, hosts in index order.
    local d="$dir/platform-routes" topo_args=(--topology "$t")
    if [ "$t" = fat-tree ]; then
      topo_args+=(--hosts-per-switch "$((hmax < per_leaf ? hmax : per_leaf))" --top-switches "$top")
    fi
    "$root/scripts/simulate/make-platform" --hosts "$hmax" --ranks-per-host "$rph" --intra-bw "$intra_bw" \
      --intra-lat "$intra_lat" --inter-bw "$inter_bw" --inter-lat "$inter_lat" "${topo_args[@]}" \
      --out "$d" >/dev/null
    plat="$d/platform.xml" hostfile="$d/hostfile"
  fi
  if "$ring_routes" --platform "$plat" --hostfile "$hostfile" --out "$dir/routes.json"; then
    echo "host-series.sh: $t: ring routes at 2..$( [ ${#user_hosts[@]} -gt 0 ] && echo ${#user_hosts[@]} || echo "$hmax") hosts in $dir/routes.json" >&2
  else
    echo "host-series.sh: warning: $t: ring-routes failed (above); no routes.json" >&2
  fi
}
if [ "$routes_only" = 1 ]; then
  for t in "${topos[@]}"; do
    mkdir -p "$out/$t$suffix"
    write_routes "$t" "$out/$t$suffix"
  done
  exit 0
fi
[ -f "$out/walltime.tsv" ] || printf 'topology\thosts\tranks\tpoints\twall_s\tpeak_rss_MiB\n' > "$out/walltime.tsv"
t_all=$(date +%s.%N)
for t in "${topos[@]}"; do
  mkdir -p "$out/$t$suffix"
  write_routes "$t" "$out/$t$suffix"
  for h in "${hs[@]}"; do
    n=$((h * rph)) d="$out/$t$suffix/platform-$h"
    if [ ${#user_hosts[@]} -gt 0 ]; then
      # The user's platform, its first h hosts with rph ranks each.
      mkdir -p "$d"
      cp "$user_platform" "$d/platform.xml"
      for hn in "${user_hosts[@]:0:$h}"; do echo "$hn:$rph"; done > "$d/hostfile"
    else
      topo_args=(--topology "$t")
      if [ "$t" = fat-tree ]; then
        leaf=$((h < per_leaf ? h : per_leaf))
        topo_args+=(--hosts-per-switch "$leaf" --top-switches "$top")
      fi
      "$root/scripts/simulate/make-platform" --hosts "$h" --ranks-per-host "$rph" --intra-bw "$intra_bw" \
        --intra-lat "$intra_lat" --inter-bw "$inter_bw" --inter-lat "$inter_lat" "${topo_args[@]}" \
        --out "$d" >/dev/null
    fi
    # SMPI holds every rank's buffers in one process (all_reduce: ~4.6 S per rank, measured 2.4 GiB
    # peak at 8 ranks x 64 MiB): sizes S with ranks x S > 1 GiB are dropped (~5 GiB peak).
    cfg="$d/sweep.json"
    /usr/bin/python3 - "$config" "$n" "$cfg" <<'PY'
import json, sys
src, n, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
c = json.load(open(src))
c["sizes"] = [s for s in c["sizes"] if n * s <= 1 << 30]
c.pop("$schema", None)
c["description"] += f" [host-series.sh: {n} ranks, sizes up to {max(c['sizes'])} B]"
json.dump(c, open(dst, "w"), indent=2)
PY
    res="$out/$t$suffix/hosts$h.jsonl"
    echo "host-series.sh: $t, $h hosts x $rph ranks ($n ranks): sweeping into $res" >&2
    rm -f "$res" "$res.part"
    t0=$(date +%s.%N)
    # Into a .part file first: an interrupted run leaves no hosts<H>.jsonl that looks complete.
    /usr/bin/time -v -o "$d/time.txt" "$root/scripts/simulate/smpirun.sh" \
      --platform "$d/platform.xml" --hostfile "$d/hostfile" --np "$n" --shardbench "$smpi" ${alg_cfg[@]+"${alg_cfg[@]}"} \
      -- sweep --backend mpi -q --config "$cfg" --out "$res.part"
    mv "$res.part" "$res"
    wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$d/time.txt")
    points=$(grep -c '"type":"point"' "$res" || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t$suffix" "$h" "$n" "$points" "$wall" "$rss" >> "$out/walltime.tsv"
    echo "host-series.sh: $t, $h hosts: $points points, $wall s, peak $rss MiB (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    # Simulated time is exact: a late sample only happens where the start time could not reach
    # every rank within the window even at its largest; its time then holds that lateness.
    late=$(grep -c '"late_samples":[1-9]' "$res" || true)
    [ "$late" = 0 ] || echo "host-series.sh: warning: $t, $h hosts: $late points hold a sample some rank started late (timing.start.late_samples): their times include the lateness (the start time did not reach every rank within the largest window, 1 s, or a rank woke late)" >&2
  done
done
echo "host-series.sh: done in $(awk -v a="$t_all" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s; results in $out/<topology>/hosts<H>.jsonl" >&2

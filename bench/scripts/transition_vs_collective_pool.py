#!/usr/bin/env python3
"""Pools the per-repetition ratios S(0) -> R / all_gather of several runs of
transition_vs_collective.sh (their OUT dirs, run with the same build dirs in the same order):
per build and size, the ratio of the two points' medians (p50) and of their minima in each
repetition, then over all repetitions their median, quartiles and range, and how many fall in
0.9..1.1. Usage: transition_vs_collective_pool.py OUT_DIR... (standard library only)."""
import glob
import json
import statistics
import sys


def sweep_ratios(path):
    """{size: (p50 ratio, min ratio, "transition slots/collective slots")} of one sweep file."""
    pts = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("type") != "point":
            continue
        if r.get("wrong") not in (0, None):
            sys.exit(f"{path}: wrong results in {r['key']}")
        s = r["stats"]
        pts[(r["point"]["kind"], r["point"]["size"])] = (s["p50"], s["min"], r["timing"]["buffer_slots"])
    out = {}
    for (kind, size), t in pts.items():
        c = pts.get(("collective", size))
        if kind == "transition" and c:
            out[size] = (t[0] / c[0], t[1] / c[1], f"{t[2]}/{c[2]}")
    return out


def main(outs):
    if not outs:
        sys.exit(__doc__)
    builds = sorted({p.split("/")[-1] for o in outs for p in glob.glob(f"{o}/build*")})
    for b in builds:
        per, revision = {}, None
        for o in outs:
            for path in sorted(glob.glob(f"{o}/{b}/sweep_*.jsonl")):
                revision = revision or json.loads(open(path).readline()).get("git_revision")
                for size, v in sweep_ratios(path).items():
                    per.setdefault(size, []).append(v)
        print(f"{b} (git_revision {revision})")
        print("| bytes | slots t/c | reps | p50 ratio: median [p25..p75] (min..max) | in 0.9..1.1 "
              "| min ratio: median [p25..p75] |")
        print("|---:|---:|---:|---|---:|---|")
        for size in sorted(per):
            p50 = sorted(v[0] for v in per[size])
            mins = sorted(v[1] for v in per[size])
            q = statistics.quantiles(p50, n=4, method="inclusive")
            qm = statistics.quantiles(mins, n=4, method="inclusive")
            inside = sum(0.9 <= x <= 1.1 for x in p50)
            print(f"| {size} | {per[size][0][2]} | {len(p50)} | {statistics.median(p50):.2f} "
                  f"[{q[0]:.2f}..{q[2]:.2f}] ({p50[0]:.2f}..{p50[-1]:.2f}) | {inside}/{len(p50)} "
                  f"| {statistics.median(mins):.2f} [{qm[0]:.2f}..{qm[2]:.2f}] |")


if __name__ == "__main__":
    main(sys.argv[1:])

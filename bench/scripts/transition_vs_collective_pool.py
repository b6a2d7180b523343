#!/usr/bin/env python3
"""Pools the per-repetition ratios S(0) -> R / all_gather of several runs of
transition_vs_collective.sh (their OUT dirs, run with the same build dirs in the same order):
per build and size, the ratio of the two points' medians (p50) and of their minima in each
repetition, then over all repetitions their median, quartiles and range, and how many fall in
0.9..1.1 (quartiles "-" where a size has one repetition). Usage:
transition_vs_collective_pool.py OUT_DIR... (standard library only)."""
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "calibrate", "python"))
from shardcal._script import helpers  # noqa: E402

die, _ = helpers("transition_vs_collective_pool.py")

USAGE = "usage: transition_vs_collective_pool.py OUT_DIR... (OUT dirs of transition_vs_collective.sh)"


def read_lines(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except OSError as e:
        die(f"cannot read {path}: {e.strerror}")


def sweep_ratios(path):
    """{size: (p50 ratio, min ratio, "transition slots/collective slots")} of one sweep file."""
    pts = {}
    for n, line in enumerate(read_lines(path), 1):
        try:
            r = json.loads(line)
            if r.get("type") != "point":
                continue
            if r.get("wrong") not in (0, None):
                die(f"{path}: wrong results in {r['key']}; rerun transition_vs_collective.sh")
            s = r["stats"]
            pts[(r["point"]["kind"], r["point"]["size"])] = (s["p50"], s["min"], r["timing"]["buffer_slots"])
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            die(f"{path}:{n}: not a shardbench point record ({type(e).__name__}: {e}); "
                "rerun transition_vs_collective.sh")
    out = {}
    for (kind, size), t in pts.items():
        c = pts.get(("collective", size))
        if kind == "transition" and c:
            out[size] = (t[0] / c[0], t[1] / c[1], f"{t[2]}/{c[2]}")
    return out


def quartiles(xs):
    """'p25..p75', or '-' where one value has no quartiles (statistics.quantiles needs two)."""
    if len(xs) < 2:
        return "-"
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return f"{q[0]:.2f}..{q[2]:.2f}"


def first_revision(path):
    lines = read_lines(path)
    try:
        return json.loads(lines[0]).get("git_revision") if lines else None
    except (ValueError, AttributeError):
        die(f"{path}:1: not a JSON object (the results header); rerun transition_vs_collective.sh")


def main(outs):
    if not outs:
        die(USAGE)
    for o in outs:
        if not os.path.isdir(o):
            die(f"{o}: not a directory; {USAGE}")
        if not glob.glob(f"{o}/build*/sweep_*.jsonl"):
            die(f"{o}: no build*/sweep_*.jsonl (not an OUT dir of transition_vs_collective.sh, or its "
                f"run made no repetition); rerun it with OUT={o}")
    builds = sorted({p.split("/")[-1] for o in outs for p in glob.glob(f"{o}/build*")})
    for b in builds:
        per, revision = {}, None
        for o in outs:
            for path in sorted(glob.glob(f"{o}/{b}/sweep_*.jsonl")):
                revision = revision or first_revision(path)
                for size, v in sweep_ratios(path).items():
                    per.setdefault(size, []).append(v)
        print(f"{b} (git_revision {revision})")
        print("| bytes | slots t/c | reps | p50 ratio: median [p25..p75] (min..max) | in 0.9..1.1 "
              "| min ratio: median [p25..p75] |")
        print("|---:|---:|---:|---|---:|---|")
        for size in sorted(per):
            p50 = sorted(v[0] for v in per[size])
            mins = sorted(v[1] for v in per[size])
            inside = sum(0.9 <= x <= 1.1 for x in p50)
            print(f"| {size} | {per[size][0][2]} | {len(p50)} | {statistics.median(p50):.2f} "
                  f"[{quartiles(p50)}] ({p50[0]:.2f}..{p50[-1]:.2f}) | {inside}/{len(p50)} "
                  f"| {statistics.median(mins):.2f} [{quartiles(mins)}] |")


if __name__ == "__main__":
    main(sys.argv[1:])

#!/usr/bin/env python3
"""S(0) -> R on a 1-D mesh against its own all_gather point, per size: the ratio of their medians
(median of the slowest-rank samples, as `shardbench calibrate` reads them), per results file, and
the median over files. Usage: transition_vs_collective.py LABEL=FILE[,FILE...] ...
Standard library only."""
import json
import statistics
import sys


def medians(path):
    """{size: (transition median s, all_gather median s)} for S(0) -> R and all_gather on mesh 'n'."""
    tr, ag = {}, {}
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a torn last line
            if r.get("type") != "point" or r.get("wrong", 0) or not r.get("samples_s"):
                continue
            p = r["point"]
            if "x" in str(p.get("mesh")) or p.get("dtype") != "f32":
                continue
            med = statistics.median(r["samples_s"])
            if p.get("kind") == "transition" and p.get("from") == "S(0)" and p.get("to") == "R" \
                    and p.get("distribution") == "chunk":
                tr[p["size"]] = med
            elif p.get("kind") == "collective" and p.get("op") == "all_gather" \
                    and p.get("distribution") == "even":
                ag[p["size"]] = med
    return {s: (tr[s], ag[s]) for s in sorted(tr) if s in ag}


def main(argv):
    if not argv:
        sys.exit(__doc__)
    for arg in argv:
        label, _, files = arg.partition("=")
        per_size = {}
        for path in files.split(","):
            for s, (t, a) in medians(path).items():
                per_size.setdefault(s, []).append(t / a)
        for s, ratios in sorted(per_size.items()):
            print(f"{label:10s} {s / 1024:8.0f} KiB  S(0)->R / all_gather: median {statistics.median(ratios):.2f}"
                  f"  runs {' '.join(f'{x:.2f}' for x in ratios)}")


if __name__ == "__main__":
    main(sys.argv[1:])

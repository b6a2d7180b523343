#!/usr/bin/env python3
"""Summarise a profile's held-out error: how many models (and link classes) have a k-fold
holdout MAPE <= the limit, the mean and the worst, and every model above the limit.

Usage: holdout_summary.py PROFILE.json [--limit 0.05]

A model's classes are its domain's (group size, concurrency) pairs when it pools several, else
its group sizes at its concurrency. Models without a holdout figure are counted apart. Exit 0, or
2 on bad input (one line).
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile")
    ap.add_argument("--limit", type=float, default=0.05)
    a = ap.parse_args()
    try:
        with open(a.profile, encoding="utf-8") as f:
            models = json.load(f)["models"]
        rows = []
        for m in models:
            dom = m.get("domain") or {}
            classes = dom.get("classes") or [[n, m["concurrent_groups"]] for n in m["group_sizes"]]
            rows.append((m["collective"], m["hosts"], m["concurrent_groups"], m["group_sizes"],
                         m["quality"].get("holdout_mape"), len(classes)))
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"holdout_summary.py: error: {a.profile}: not a readable profile ({e!r}); "
              "pass a profile written by shardbench calibrate", file=sys.stderr)
        sys.exit(2)
    have = [r for r in rows if r[4] is not None]
    ok = [r for r in have if r[4] <= a.limit]
    print(f"{a.profile}: {len(ok)} of {len(have)} models with holdout <= {a.limit:.0%} "
          f"({sum(r[5] for r in ok)} of {sum(r[5] for r in have)} classes); "
          f"{len(rows) - len(have)} without a holdout figure")
    if have:
        print(f"mean holdout {100 * sum(r[4] for r in have) / len(have):.2f} %, "
              f"max {100 * max(r[4] for r in have):.1f} %")
    for r in sorted(have, key=lambda r: -r[4]):
        if r[4] > a.limit:
            print(f"  above: {r[0]} hosts {r[1]} conc {r[2]} n {r[3]}: {100 * r[4]:.1f} %")


if __name__ == "__main__":
    main()

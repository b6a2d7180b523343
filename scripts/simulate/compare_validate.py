#!/usr/bin/env python3
"""Compare two `shardbench validate` files of the same config on the same simulated platform:
the calibrated profile's choices against another profile's (e.g. dtensor-default).

Usage: compare_validate.py CALIBRATED.jsonl OTHER.jsonl

Simulated time is deterministic, so a plan measured in one file takes exactly the same time in
the other: the ratio OTHER chosen / CALIBRATED chosen is exact. Prints each file's regret median,
p95 and max, then every transition where the chosen plans differ, with both plans and the ratio.
Exit 0, or 2 on bad input.
"""
import json
import sys


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            recs = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        print(f"compare_validate.py: error: {path}: {e}", file=sys.stderr)
        sys.exit(2)
    summary = recs[-1] if recs and "transition" not in recs[-1] else {}
    return {r["transition"]["key"]: r for r in recs if "transition" in r}, summary


def chosen(rec):
    p = next(p for p in rec["plans"] if p["role"] == "chosen")
    return " ; ".join(p["steps"]) if isinstance(p["steps"], list) else str(p["steps"]), p["measured_us"]["median"]


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    a, sa = load(sys.argv[1])
    b, sb = load(sys.argv[2])
    for name, s in ((sys.argv[1], sa), (sys.argv[2], sb)):
        r = s.get("regret", {})
        print(f"{name}: {s.get('transitions', '?')} transitions, regret median {r.get('median', float('nan')):.3f}, "
              f"p95 {r.get('p95', float('nan')):.3f}, max {r.get('max', float('nan')):.3f}, "
              f"prediction MAPE {100 * s.get('mape', float('nan')):.1f}%")
    diffs = 0
    print("\n| transition | mesh | size | calibrated plan | other plan | other / calibrated (measured) |")
    print("|---|---|---:|---|---|---:|")
    for key, ra in a.items():
        if key not in b:
            continue
        pa, ta = chosen(ra)
        pb, tb = chosen(b[key])
        if pa != pb:
            diffs += 1
            t = ra["transition"]
            print(f"| {t['from_given']} -> {t['to_given']} | {t['mesh']} [{t['shape']}] | {t['size']} | "
                  f"{pa} | {pb} | {tb / ta:.3f} |")
    print(f"\n{diffs} of {len(a)} transitions choose differently")
    return 0


if __name__ == "__main__":
    sys.exit(main())

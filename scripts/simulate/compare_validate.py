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
import os
import sys

# The validate file's schema names and version, from formats/formats.json (this script runs under
# the system python, without the shardcal package).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "formats", "formats.json"),
          encoding="utf-8") as _f:
    _SCHEMAS = json.load(_f)["schemas"]
VALIDATE = _SCHEMAS["validate"]["schema"], _SCHEMAS["validate"]["version"]
SUMMARY = _SCHEMAS["validate_summary"]["schema"], _SCHEMAS["validate_summary"]["version"]


def fail(msg):
    print(f"compare_validate.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def chosen(rec):
    p = next(p for p in rec["plans"] if p["role"] == "chosen")
    return " ; ".join(p["steps"]) if isinstance(p["steps"], list) else str(p["steps"]), p["measured_us"]["median"]


def load(path):
    """The transition records by key (each with its chosen plan) and the summary; exit 2 unless
    the file is a complete `shardbench validate` output."""
    try:
        with open(path, encoding="utf-8") as f:
            recs = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    summary = recs[-1] if recs and isinstance(recs[-1], dict) else {}
    if summary.get("schema") != SUMMARY[0]:
        fail(f"{path}: not a complete shardbench validate file (its last line is no "
             f"{SUMMARY[0]} record); pass validate --out files")
    if summary.get("version") != SUMMARY[1]:
        fail(f"{path}: {SUMMARY[0]} version {summary.get('version')!r}; this script reads version {SUMMARY[1]}")
    out = {}
    for i, r in enumerate(recs[:-1], 1):
        try:
            if (r.get("schema"), r.get("version")) != VALIDATE:
                raise ValueError(f"schema {r.get('schema')!r} version {r.get('version')!r}, "
                                 f"expected {VALIDATE[0]!r} version {VALIDATE[1]}")
            chosen(r)
            out[r["transition"]["key"]] = r
        except (AttributeError, KeyError, TypeError, ValueError, StopIteration) as e:
            fail(f"{path}: line {i} is not a validate transition record with a chosen plan "
                 f"({type(e).__name__}: {e})")
    try:
        [summary["regret"][k] for k in ("median", "p95", "max")], summary["transitions"], summary["mape"]
    except (KeyError, TypeError) as e:
        fail(f"{path}: the summary lacks {e}")
    return out, summary


def main():
    if len(sys.argv) != 3:
        fail("expected two arguments: compare_validate.py CALIBRATED.jsonl OTHER.jsonl")
    a, sa = load(sys.argv[1])
    b, sb = load(sys.argv[2])
    for name, s in ((sys.argv[1], sa), (sys.argv[2], sb)):
        r = s["regret"]
        print(f"{name}: {s['transitions']} transitions, regret median {r['median']:.3f}, "
              f"p95 {r['p95']:.3f}, max {r['max']:.3f}, prediction MAPE {100 * s['mape']:.1f}%")
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

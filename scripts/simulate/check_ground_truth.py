#!/usr/bin/env python3
"""Check a profile calibrated on a make-platform cluster against the platform's bandwidths.

Usage: check_ground_truth.py --profile P.json --platform-json DIR/platform.json
                             [--tolerance 0.05] [--out check.json]

Expected bus bandwidth of the one-way collectives (broadcast, scatter, gather) of groups of 2
(docs/SIMULATION.md, "Expected bandwidth"): inside a host every message gets the loopback's
intra_bw (a FATPIPE link), so B = intra_bw; across hosts the G groups of the mesh dim that run at
once all leave (or enter) a host through its NIC, one flow each, and share its inter_bw per
direction fairly, so B = inter_bw / G, where G is the model's concurrent_groups. For n = 2 the
bus bandwidth equals the bytes one rank sends per second. The bandwidth judged is that of the
segment covering the largest sizes. Exit 0 all within tolerance, 1 one is not, 2 bad input.
"""
import argparse
import json
import os
import sys
import tempfile

ONE_WAY = ("broadcast", "scatter", "gather")


def fail_input(msg):
    print(f"check_ground_truth.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail_input(f"{path}: cannot read the {what}: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", required=True)
    ap.add_argument("--platform-json", required=True)
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not 0 < a.tolerance < 1:
        fail_input(f"--tolerance {a.tolerance}: expected a fraction in (0, 1)")
    prof = load(a.profile, "profile")
    plat = load(a.platform_json, "platform description (make-platform writes it)")
    if prof.get("schema") != "shardcal.profile" or not isinstance(prof.get("models"), list):
        fail_input(f"{a.profile}: not a shardcal.profile file")
    try:
        intra, inter = float(plat["intra_bw_GBps"]), float(plat["inter_bw_GBps"])
    except (KeyError, TypeError, ValueError):
        fail_input(f"{a.platform_json}: no intra_bw_GBps / inter_bw_GBps numbers")
    rows, failures = [], []
    for m in prof["models"]:
        sizes = m.get("group_sizes", [m.get("group_size")])
        if m.get("collective") not in ONE_WAY or sizes != [2]:
            continue
        hosts, groups = int(m["hosts"]), int(m["concurrent_groups"])
        expected = intra if hosts == 1 else inter / groups
        got = float(m["segments"][-1]["bandwidth_GBps"])
        ratio = got / expected
        ok = abs(ratio - 1) <= a.tolerance
        rows.append({"collective": m["collective"], "class": "intra" if hosts == 1 else "inter",
                     "concurrent_groups": groups, "expected_GBps": expected, "fitted_GBps": got,
                     "ratio": ratio, "verdict": "pass" if ok else "fail"})
        if not ok:
            failures.append(f"{m['collective']} {rows[-1]['class']}-host (groups {groups}): "
                            f"{got:.5g} GB/s is {ratio:.4f} x the expected {expected:.5g} GB/s")
    classes = {r["class"] for r in rows}
    for c in ("intra", "inter"):
        if c not in classes:
            failures.append(f"no one-way {c}-host model of group size 2 in {a.profile}")
    print(f"{'collective':<10} {'class':<6} {'groups':>6} {'expected GB/s':>13} "
          f"{'fitted GB/s':>12} {'ratio':>7}  verdict")
    for r in rows:
        print(f"{r['collective']:<10} {r['class']:<6} {r['concurrent_groups']:>6} "
              f"{r['expected_GBps']:>13.5g} {r['fitted_GBps']:>12.5g} {r['ratio']:>7.4f}  {r['verdict']}")
    for f in failures:
        print(f"FAIL: {f}")
    if a.out:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(a.out)), prefix=".check.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"tolerance": a.tolerance, "rows": rows, "failures": failures}, f, indent=1)
        os.replace(tmp, a.out)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Check a profile calibrated on a make-platform cluster against the platform's bandwidths.

Usage: check_ground_truth.py --profile P.json --platform-json DIR/platform.json
                             [--tolerance 0.05] [--out check.json]

Expected bus bandwidth of the one-way collectives (broadcast, scatter, gather) of groups of 2
(docs/SIMULATION.md, "Expected bandwidth"): inside a host every message gets the loopback's
intra_bw (a FATPIPE link), so B = intra_bw; across hosts the G groups of the mesh dim that run at
once all leave (or enter) a host through its NIC, one flow each, and share its inter_bw per
direction, so B = inter_bw / G. A group of 2 spanning 2 hosts has one rank per host, so
G = ranks_per_host; inside a host G = ranks_per_host / 2. For n = 2 the bus bandwidth equals the
bytes one rank sends per second. A model may pool several group sizes and concurrencies
(docs/PROFILE_FORMAT.md): it is judged if it covers n = 2 and the measured G, at that G, i.e.
bandwidth_GBps / (1 + contention (G - 1)). The bandwidth judged is that of the segment covering
the largest sizes. Exit 0 all within tolerance, 1 one is not, 2 bad input (one line).
"""
import argparse
import json
import sys

# The collective table (which collectives are one-way, i.e. measure the link), the profile's
# schema name and version and the atomic write come from the shardcal package (calibrate/python):
# callers put it on PYTHONPATH or use the project's .venv.
try:
    from shardcal.formats import identity_problem, write_text_atomic
    from shardcal.profile import ONE_WAY
except ImportError as _e:
    sys.exit(print(f"check_ground_truth.py: error: {_e}; run with PYTHONPATH=calibrate/python", file=sys.stderr) or 2)


def fail_input(msg):
    print(f"check_ground_truth.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail_input(f"{path}: cannot read the {what}: {e}")


def covers(rng, v):
    """Does a domain range [lo, hi] (hi null = unbounded) cover v?"""
    lo, hi = rng
    return int(lo) <= v and (hi is None or v <= int(hi))


def judge(m, measured, intra, inter):
    """The row for one model, or None when it is no one-way model of groups of 2 measured here."""
    if m["collective"] not in ONE_WAY:
        return None
    hosts = int(m["hosts"])
    if hosts not in measured:
        return None
    dom = m.get("domain") or {}
    sizes = m.get("group_sizes", [m.get("group_size")])
    if "group_size" in dom and dom["group_size"][0] is not None:
        has2 = covers(dom["group_size"], 2) and (not sizes or 2 in sizes)
    else:
        has2 = 2 in sizes
    if not has2:
        return None
    g = measured[hosts]
    groups = int(m["concurrent_groups"])
    cg = dom.get("concurrent_groups")
    # a group of 2 across 2 hosts has one rank per host, so ranks_per_host groups leave a host
    # at once (ranks_per_host / 2 inside one): the model must have been measured there
    mismatch = None
    if cg is not None and not covers(cg, g):
        mismatch = f"domain concurrent_groups {cg} does not cover the measured {g}"
    elif cg is None and groups != g:
        mismatch = f"concurrent_groups {groups} != the measured {g}"
    seg = m["segments"][-1]
    gamma = float(seg.get("contention", 0.0))
    got = float(seg["bandwidth_GBps"]) / (1 + gamma * (g - 1))
    expected = intra if hosts == 1 else inter / g
    return {"collective": m["collective"], "class": "intra" if hosts == 1 else "inter",
            "concurrent_groups": g, "contention": gamma, "expected_GBps": expected,
            "fitted_GBps": got, "ratio": got / expected, "mismatch": mismatch}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.error = lambda m: fail_input(f"{m} (see --help)")
    ap.add_argument("--profile", required=True)
    ap.add_argument("--platform-json", required=True)
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not 0 < a.tolerance < 1:
        fail_input(f"--tolerance {a.tolerance}: expected a fraction in (0, 1)")
    prof = load(a.profile, "profile")
    plat = load(a.platform_json, "platform description (make-platform writes it)")
    problem = identity_problem(prof, "profile")
    if problem or not isinstance(prof.get("models"), list):
        fail_input(f"{a.profile}: {problem or 'no models list'}")
    try:
        intra, inter = float(plat["intra_bw_GBps"]), float(plat["inter_bw_GBps"])
    except (KeyError, TypeError, ValueError):
        fail_input(f"{a.platform_json}: no intra_bw_GBps / inter_bw_GBps numbers")
    try:
        rph = int(plat["ranks_per_host"])
    except (KeyError, TypeError, ValueError):
        fail_input(f"{a.platform_json}: no ranks_per_host integer")
    if rph < 2 or rph % 2:
        fail_input(f"{a.platform_json}: ranks_per_host {rph}: expected an even number >= 2")
    measured = {1: rph // 2, 2: rph}  # hosts -> groups of 2 at once per host
    rows, failures = [], []
    for i, m in enumerate(prof["models"]):
        try:
            row = judge(m, measured, intra, inter)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            fail_input(f"{a.profile}: /models/{i} is malformed ({type(e).__name__}: {e}); "
                       "expected a shardcal.profile model (docs/PROFILE_FORMAT.md)")
        if row is None:
            continue
        ok = abs(row["ratio"] - 1) <= a.tolerance and row["mismatch"] is None
        row["verdict"] = "pass" if ok else "fail"
        rows.append(row)
        if row["mismatch"]:
            failures.append(f"{row['collective']} {row['class']}-host: {row['mismatch']}")
        elif not ok:
            failures.append(f"{row['collective']} {row['class']}-host (groups {row['concurrent_groups']}): "
                            f"{row['fitted_GBps']:.5g} GB/s is {row['ratio']:.4f} x the expected "
                            f"{row['expected_GBps']:.5g} GB/s")
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
        write_text_atomic(a.out, json.dumps({"tolerance": a.tolerance, "rows": rows, "failures": failures},
                                            indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

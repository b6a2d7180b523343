#!/usr/bin/python3
"""Check a profile calibrated on the emulated two-host cluster against the shaped link rate.

Usage: check_profile.py --profile P.json --rate 200mbit [--tolerance 0.10] [--collective-tolerance T] [--concurrent-groups 2]
                        [--mtu 1500] [--min-intra-ratio 5] [--out check.json]

Expected inter-host bus bandwidth (docs/EMULATION.md, "Expected bandwidth"): tbf counts whole
frames, so a TCP stream carries payload at
    P = rate * MSS / (MSS + 66),  MSS = MTU - 40 (IPv4 + TCP) - 12 (TCP timestamps option),
    66 = 14 (Ethernet) + 20 (IPv4) + 20 (TCP) + 12 (timestamps)  -> 1448/1514 = 95.6% at MTU 1500,
per direction (the veth is shaped in both directions). On the 2x2 mesh the inter-host dim runs
`concurrent_groups` groups of n = 2 at once over the one link, so each group gets P / groups, and
for n = 2 every collective's bus bandwidth (nccl-tests' busbw, docs/RESULTS_FORMAT.md "point") equals the bytes
one rank sends over the link per second: expected B = P / concurrent_groups.

One-way collectives (broadcast, scatter, gather: all data flows root -> other rank) measure the
link: each must be within --collective-tolerance (default --tolerance), and their median (the
"recovered link bandwidth") within --tolerance. Two-way collectives (all_gather, all_to_all, all_reduce, reduce_scatter) are
reported with their ratio but not judged: OpenMPI's TCP rendezvous protocol stalls when both
sides send large messages at once (docs/EMULATION.md). Every collective with both classes fitted
must have an intra-host bandwidth >= --min-intra-ratio x its inter-host one.
Exit 0 all checks pass, 1 a check failed, 2 bad input.
"""
import argparse
import json
import math
import re
import statistics
import sys

# The collective table (which collectives are one-way, i.e. measure the link), the profile's
# schema name and version and the atomic write come from the shardcal package (calibrate/python):
# callers put it on PYTHONPATH or use the project's .venv.
try:
    from shardcal.formats import identity_problem, write_text_atomic
    from shardcal.profile import COLLECTIVES, ONE_WAY
except ImportError as _e:
    sys.exit(print(f"check_profile.py: error: {_e}; run with PYTHONPATH=calibrate/python", file=sys.stderr) or 2)
HEADERS = 14 + 20 + 20 + 12  # Ethernet + IPv4 + TCP + TCP timestamps option, bytes per frame


def fail_input(msg):
    print(f"check_profile.py: {msg}", file=sys.stderr)
    sys.exit(2)


TWO_WAY = tuple(name for name in COLLECTIVES if name not in ONE_WAY)


def parse_rate(text):
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(kbit|mbit|gbit)", text)
    if not m:
        fail_input(f"--rate '{text}': expected <number>(kbit|mbit|gbit), e.g. 200mbit (tc syntax)")
    scale = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[m.group(2)]
    return float(m.group(1)) * scale  # bits/s (tc: 1mbit = 10^6 bit/s)


def expected_busbw_GBps(rate_bps, mtu, groups):
    mss = mtu - 40 - 12
    payload = rate_bps / 8.0 * mss / (mss + HEADERS)
    return payload / groups / 1e9


def model_bandwidth(model):
    """Bandwidth of the segment that covers the largest sizes (bandwidth-dominated)."""
    return float(model["segments"][-1]["bandwidth_GBps"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", required=True)
    ap.add_argument("--rate", required=True, help="tbf rate the link was shaped to, e.g. 200mbit")
    ap.add_argument("--tolerance", type=float, default=0.10,
                    help="relative, for the recovered link (median of the one-way collectives); default 0.10")
    ap.add_argument("--collective-tolerance", type=float, default=None,
                    help="relative, for each one-way collective on its own; default: --tolerance "
                         "(a short smoke sweep fits one collective from few samples: looser there)")
    ap.add_argument("--concurrent-groups", type=int, default=2,
                    help="groups of the inter-host dim sharing the link (2x2 mesh: 2)")
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--min-intra-ratio", type=float, default=5.0)
    ap.add_argument("--out", help="write the verdicts as JSON here (atomically)")
    a = ap.parse_args()
    rate = parse_rate(a.rate)
    if not (0 < a.tolerance < 1):
        fail_input(f"--tolerance {a.tolerance}: expected a fraction in (0, 1), e.g. 0.10")
    each = a.tolerance if a.collective_tolerance is None else a.collective_tolerance
    if not (0 < each < 1):
        fail_input(f"--collective-tolerance {each}: expected a fraction in (0, 1), e.g. 0.10")
    if a.concurrent_groups < 1 or a.mtu < 576:
        fail_input("--concurrent-groups must be >= 1 and --mtu >= 576")
    try:
        with open(a.profile, encoding="utf-8") as f:
            prof = json.load(f)
    except (OSError, ValueError) as e:
        fail_input(f"{a.profile}: cannot read the profile: {e}; run shardbench calibrate first")
    problem = identity_problem(prof, "profile")
    if problem or not isinstance(prof.get("models"), list):
        fail_input(f"{a.profile}: {problem or 'no models list'}")

    expected = expected_busbw_GBps(rate, a.mtu, a.concurrent_groups)
    inter, intra = {}, {}
    for m in prof["models"]:
        if m.get("dtype") not in (None, "f32"):
            continue
        if m["hosts"] >= 2 and m["concurrent_groups"] == a.concurrent_groups:
            inter[m["collective"]] = model_bandwidth(m)
        elif m["hosts"] == 1:
            intra.setdefault(m["collective"], model_bandwidth(m))

    rows, failures = [], []
    for coll in ONE_WAY + TWO_WAY:
        if coll not in inter:
            if coll in ONE_WAY:
                failures.append(f"{coll}: no inter-host model (hosts >= 2, concurrent_groups "
                                f"{a.concurrent_groups}) in the profile")
            continue
        b = inter[coll]
        ratio = b / expected
        row = {"collective": coll, "direction": "one-way" if coll in ONE_WAY else "two-way",
               "inter_GBps": b, "expected_GBps": expected, "ratio": ratio,
               "intra_GBps": intra.get(coll),
               "intra_over_inter": (intra[coll] / b) if coll in intra else None}
        if coll in ONE_WAY:
            row["verdict"] = "pass" if abs(ratio - 1) <= each else "fail"
            if row["verdict"] == "fail":
                failures.append(f"{coll}: inter-host B {b:.5g} GB/s is {ratio:.3f} x the expected "
                                f"{expected:.5g} GB/s (tolerance +-{each:.0%})")
        else:
            row["verdict"] = "reported"
        if coll in intra and intra[coll] < a.min_intra_ratio * b:
            failures.append(f"{coll}: intra-host B {intra[coll]:.4g} GB/s is not >= "
                            f"{a.min_intra_ratio} x inter-host {b:.4g} GB/s: classes do not differ")
        rows.append(row)

    one_way = [inter[c] for c in ONE_WAY if c in inter]
    link = statistics.median(one_way) if one_way else math.nan
    link_ratio = link / expected
    link_ok = bool(one_way) and abs(link_ratio - 1) <= a.tolerance
    if one_way and not link_ok:
        failures.append(f"recovered link bandwidth {link:.5g} GB/s is {link_ratio:.3f} x expected")

    print(f"rate {a.rate}: expected inter-host busbw per group = {expected * 1e3:.3f} MB/s "
          f"(payload {a.mtu - 52}/{a.mtu + 14} of the rate, / {a.concurrent_groups} groups)")
    print(f"{'collective':<15} {'dir':<8} {'inter MB/s':>10} {'ratio':>7} {'intra GB/s':>10} "
          f"{'intra/inter':>11}  verdict")
    for r in rows:
        intra_s = f"{r['intra_GBps']:.3f}" if r["intra_GBps"] is not None else "-"
        io_s = f"{r['intra_over_inter']:.0f}x" if r["intra_over_inter"] is not None else "-"
        print(f"{r['collective']:<15} {r['direction']:<8} {r['inter_GBps'] * 1e3:>10.3f} "
              f"{r['ratio']:>7.3f} {intra_s:>10} {io_s:>11}  {r['verdict']}")
    print(f"recovered link bandwidth (median of one-way): {link * 1e3:.3f} MB/s = "
          f"{link_ratio:.3f} x expected -> {'pass' if link_ok else 'FAIL'} (tolerance "
          f"+-{a.tolerance:.0%})")
    for f in failures:
        print(f"FAIL: {f}")

    if a.out:
        doc = {"schema": "shardcal.emulate.check", "version": 1, "profile": a.profile,
               "rate": a.rate, "rate_bps": rate, "mtu": a.mtu,
               "concurrent_groups": a.concurrent_groups, "tolerance": a.tolerance,
               "expected_GBps": expected, "recovered_link_GBps": link,
               "recovered_ratio": link_ratio, "collectives": rows, "failures": failures,
               "verdict": "fail" if failures else "pass"}
        write_text_atomic(a.out, json.dumps(doc, indent=1) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

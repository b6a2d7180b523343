#!/usr/bin/python3
"""Compares the gate's statistics (gate/src/stats.cpp, through gate_stats_tool) with scipy:
scipy.stats.mannwhitneyu(method="asymptotic", use_continuity=True, alternative="two-sided"),
the same with method="exact" (untied samples of <= 20 per side),
scipy.stats.false_discovery_control(method="bh") (its definition where scipy is older than
1.11), Holm from its definition, numpy.median.
Cases are generated here at test time (fixed seed): continuous samples, heavy ties, unequal
sizes, tiny samples, shifted and identical samples. Exit 0 when every value agrees (rel 1e-9)."""
import json
import subprocess
import sys

import numpy as np
from scipy import stats


def bh_ref(p):
    """Benjamini-Hochberg adjusted p-values: scipy.stats.false_discovery_control(method="bh")
    where scipy has it (>= 1.11; Debian 12 ships 1.10), else its definition
    q_(i) = min_{j >= i} m p_(j) / j, clipped to 1."""
    if hasattr(stats, "false_discovery_control"):
        return stats.false_discovery_control(p, method="bh")
    p = np.asarray(p, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    q_sorted = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    q = np.empty(m)
    q[order] = q_sorted
    return q


def holm_ref(p):
    p = np.asarray(p, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    q = np.empty(m)
    run = 0.0
    for r, i in enumerate(order):
        run = max(run, min(1.0, (m - r) * p[i]))
        q[i] = run
    return q


def main():
    tool = sys.argv[1]
    rng = np.random.default_rng(20261123)
    cases = []
    for _ in range(200):
        n1, n2 = int(rng.integers(1, 60)), int(rng.integers(1, 60))
        kind = rng.integers(0, 4)
        if kind == 0:    # continuous, lognormal, maybe shifted
            x = rng.lognormal(0, 0.3, n1)
            y = rng.lognormal(rng.uniform(-0.3, 0.3), 0.3, n2)
        elif kind == 1:  # heavy ties (quantised timer)
            x = rng.integers(1, 6, n1).astype(float)
            y = rng.integers(1, 7, n2).astype(float)
        elif kind == 2:  # identical values on both sides
            x = np.full(n1, 2.5)
            y = np.full(n2, 2.5)
        else:            # disjoint
            x = rng.uniform(1, 2, n1)
            y = rng.uniform(3, 4, n2)
        cases.append({"op": "mwu", "x": x.tolist(), "y": y.tolist()})
    for _ in range(150):  # exact p: untied, both sides <= 20 (else the gate declines: null)
        n1, n2 = int(rng.integers(1, 22)), int(rng.integers(1, 22))
        x = rng.lognormal(0, 0.3, n1)
        y = rng.lognormal(rng.uniform(-0.5, 0.5), 0.3, n2)
        cases.append({"op": "mwu_exact", "x": x.tolist(), "y": y.tolist()})
    cases.append({"op": "mwu_exact", "x": [1.0, 2.0, 3.0], "y": [3.0, 4.0]})  # a tie: null
    for _ in range(100):
        m = int(rng.integers(1, 300))
        p = rng.uniform(0, 1, m) ** rng.uniform(0.2, 5)
        if m > 3:
            p[:3] = p[0]  # ties
        cases.append({"op": "bh", "p": p.tolist()})
        cases.append({"op": "holm", "p": p.tolist()})
    for _ in range(50):
        cases.append({"op": "median", "x": rng.normal(0, 1, int(rng.integers(1, 40))).tolist()})

    inp = "".join(json.dumps(c) + "\n" for c in cases)
    out = subprocess.run([tool], input=inp, capture_output=True, text=True, check=True).stdout
    results = [json.loads(l) for l in out.splitlines()]
    assert len(results) == len(cases), (len(results), len(cases))
    bad = 0

    def close(a, b, what, c):
        nonlocal bad
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if a.shape != b.shape or not np.allclose(a, b, rtol=1e-9, atol=1e-12):
            bad += 1
            if bad <= 5:
                print(f"MISMATCH {what}: c++ {a} scipy {b} case {json.dumps(c)[:300]}")

    for c, r in zip(cases, results):
        if c["op"] == "mwu":
            x, y = np.array(c["x"]), np.array(c["y"])
            if np.all(np.concatenate([x, y]) == x[0]):
                # scipy divides by a zero sigma (nan with a warning); the gate defines p = 1.
                close(r["p"], 1.0, "mwu all tied p", c)
                continue
            ref = stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic",
                                     use_continuity=True)
            close(r["u"], ref.statistic, "mwu U", c)
            close(r["p"], ref.pvalue, "mwu p", c)
        elif c["op"] == "mwu_exact":
            x, y = np.array(c["x"]), np.array(c["y"])
            tied = len(np.unique(np.concatenate([x, y]))) < len(x) + len(y)
            if tied or len(x) > 20 or len(y) > 20:
                close(0 if r["p"] is None else 1, 0, "exact declines ties / n > 20", c)
                continue
            ref = stats.mannwhitneyu(x, y, alternative="two-sided", method="exact")
            close(r["u"], ref.statistic, "exact U", c)
            close(r["p"], ref.pvalue, "exact p", c)
        elif c["op"] == "bh":
            close(r["q"], bh_ref(c["p"]), "bh", c)
        elif c["op"] == "holm":
            close(r["q"], holm_ref(c["p"]), "holm", c)
        else:
            close(r["median"], np.median(c["x"]), "median", c)
    print(f"{len(cases)} cases, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

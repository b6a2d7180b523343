#!/usr/bin/env python3
"""Regret of choosers that pick from other launches' measurements (the question: can any chooser hold p95 regret <= 1.20?)

Input: two or more `shardbench validate` output files from separate launches with the same
profile and config, so every launch measured the same plans of the same transitions (the
validate_local.sh repetitions). Regret as validate computes it (bench/src/sweep/regret.cpp):
measured median of a plan / the smallest median among the transition's plans in that launch
(1 when that is 0). Plans that produced wrong data or have no samples are left out of the best
time (as validate does) and, here, are no candidate: a plan wrong or unmeasured in any launch
is left out of every launch.

Three choosers that pick from *measurements of the plans themselves*, not from a profile:
  * one-launch oracle: per transition the plan that measured fastest in launch x, scored in
    launch y (every ordered pair). How reliably one launch's measurements pick the plan that is
    fastest in another launch: when this misses the goal often, one launch of information is
    not enough to meet it reliably (it is not a bound: a chooser that knows more can do better).
  * leave-one-out (3+ launches): per transition the plan with the smallest mean regret over the
    other launches, scored on the held-out launch: what several launches of measurements buy.
  * hindsight minimax: per transition the plan whose worst regret over all launches is
    smallest (chosen knowing every launch). Per transition, a lower bound on any fixed choice's
    worst-launch regret; its p95 per launch is shown for reference, not a bound.
With T transitions the p95 is interpolated between the 2nd and 3rd largest regret (T = 28), so
two or three transitions decide it.

  regret_from_measurements.py [--goal 1.2] [--json] validate_1.jsonl validate_2.jsonl [...]

Ties go to the plan listed first in the file (the chosen one). Exit 0 on success (whatever the
numbers), 2 on bad input (unreadable files, different profiles, transitions or plan sets).
"""
import argparse
import itertools
import json
import math
import os
import signal
import statistics
import sys

# The validate records' schema name, from the formats table the C++ writer is checked against.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "calibrate", "python"))
from shardcal.formats import schema  # noqa: E402
from shardcal._script import helpers  # noqa: E402

die, _ = helpers("regret_from_measurements")

VALIDATE_SCHEMA = schema("validate")[0]


def p95(vals):
    """numpy's default (linear) percentile, as shardbench validate computes its p95: the
    standard library's "inclusive" quantiles are the same interpolation."""
    if len(vals) == 1:
        return vals[0]
    return statistics.quantiles(vals, n=100, method="inclusive")[94]


def load(path):
    """({transition key: {plan id: (median us, wrong, samples)}}, {key: label}, profile sha256).

    A plan id is its rank (position by predicted cost) and its steps: a plan listed twice (one
    plan holding two roles) has one id and the same numbers; two plans whose steps print alike
    have different ranks.
    """
    try:
        with open(path, encoding="utf-8") as f:
            lines = [ln for ln in f if ln.strip()]
    except (OSError, UnicodeDecodeError) as e:
        die(f"{path}: cannot read ({getattr(e, 'strerror', None) or e})")
    out, labels, sha = {}, {}, None
    for i, ln in enumerate(lines, 1):
        where = f"{path}:{i}"
        try:
            r = json.loads(ln)
        except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
            die(f"{where}: not JSON ({getattr(e, 'msg', None) or type(e).__name__}); give shardbench validate output files")
        if not isinstance(r, dict):
            die(f"{where}: not a JSON object; give shardbench validate output files")
        if r.get("schema") != VALIDATE_SCHEMA:
            continue
        try:
            key = r["transition"]["key"]
            t = r["transition"]
            label = f"{t['from']} -> {t['to']} mesh {t['mesh']} {t.get('shape', '')} {t['size']} B"
            this_sha = r["profile"]["sha256"]
            if not isinstance(key, str) or not isinstance(this_sha, str):
                raise TypeError("transition key or profile sha256 (not a string)")
            plans = {}
            for p in r["plans"]:
                rank = p["rank"]
                if not isinstance(rank, int) or isinstance(rank, bool):
                    raise TypeError("plan rank (not an integer)")
                pid = f"{rank}: " + " ; ".join(str(s) for s in p["steps"])
                m = p["measured_us"]
                val = (float(m["median"]), bool(p.get("wrong") or 0), int(m.get("samples", 1)))
                if not math.isfinite(val[0]) or val[0] < 0:
                    die(f"{where}: plan '{pid}' has a measured median of {m['median']}, not a finite time >= 0")
                if pid in plans and plans[pid] != val:
                    die(f"{where}: two different plans with the id '{pid}'")
                plans[pid] = val
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            die(f"{where}: a validate record without a readable {e}; give shardbench validate output files")
        if not plans:
            die(f"{where}: a transition without plans")
        if sha not in (None, this_sha):
            die(f"{where}: records from two profiles in one file")
        if key in out:
            die(f"{where}: the transition {label} appears twice in one file")
        sha = this_sha
        out[key], labels[key] = plans, label
    if not out:
        die(f"{path}: no validate records (schema {VALIDATE_SCHEMA})")
    return out, labels, sha


def regret_table(launches, key, candidates):
    """[launch][plan] regret over the candidates (correct data, samples in every launch)."""
    rows = []
    for launch in launches:
        best = min(launch[key][p][0] for p in candidates)
        rows.append({p: (launch[key][p][0] / best if best > 0 else 1.0) for p in candidates})
    return rows


def analyse(launches, goal):
    keys = list(launches[0])
    n = len(launches)
    tables, skipped = {}, []
    for k in keys:
        order = list(launches[0][k])  # file order: ties go to the first listed (the chosen plan)
        # No candidate: a plan with wrong data, or without samples, in any launch.
        cand = [p for p in order if not any(l[k][p][1] or l[k][p][2] <= 0 for l in launches)]
        if cand:
            tables[k] = (cand, regret_table(launches, k, cand))
        else:
            skipped.append(k)
    if not tables:
        die("every plan of every transition produced wrong data (or has no samples) in some "
            "launch; nothing to compare (see \"wrong\" in the validate files)")
    pairs = []
    for x, y in itertools.permutations(range(n), 2):
        vals = []
        for k, (cand, reg) in tables.items():
            pick = min(cand, key=lambda p: reg[x][p])
            vals.append(reg[y][pick])
        pairs.append({"from": x + 1, "to": y + 1, "p95": p95(vals), "median": statistics.median(vals),
                      "max": max(vals)})
    loo = None
    if n >= 3:
        loo = []
        for y in range(n):
            vals = []
            for k, (cand, reg) in tables.items():
                pick = min(cand, key=lambda p: statistics.fmean(reg[x][p] for x in range(n) if x != y))
                vals.append(reg[y][pick])
            loo.append(p95(vals))
    minimax = [[] for _ in range(n)]
    worst = []
    for k, (cand, reg) in tables.items():
        pick = min(cand, key=lambda p: max(r[p] for r in reg))
        for i in range(n):
            minimax[i].append(reg[i][pick])
        worst.append({"transition": k, "worst_regret": max(r[pick] for r in reg)})
    worst.sort(key=lambda w: -w["worst_regret"])
    return {
        "launches": n,
        "transitions": len(tables),
        "skipped_all_wrong": skipped,
        "goal": goal,
        "one_launch_oracle": pairs,
        "oracle_pairs_over_goal": sum(p["p95"] > goal for p in pairs),
        "leave_one_out_p95": loo,
        "leave_one_out_over_goal": None if loo is None else sum(v > goal for v in loo),
        "hindsight_minimax_p95": [p95(v) for v in minimax],
        "minimax_worst": worst,
    }


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line and exit 2, like every other refusal."""

    def error(self, message):
        die(f"{message} (see --help)")


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `... | head` ends quietly
    ap = OneLineParser(description=__doc__.split("\n\n")[0],
                                 epilog="See docs/PERFORMANCE.md, 'Planner p95: how much is launch-to-launch noise'.")
    ap.add_argument("files", nargs="+", help="shardbench validate outputs, one per launch (>= 2)")
    ap.add_argument("--goal", type=float, default=1.2, help="p95 regret goal to count against (1.2)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    a = ap.parse_args()
    if not math.isfinite(a.goal) or a.goal < 1:
        die(f"--goal {a.goal}: give a regret goal >= 1 (e.g. 1.2)")
    if len(a.files) < 2:
        die("give at least two validate files from separate launches (validate_local.sh REPS>=2)")
    real = [os.path.realpath(f) for f in a.files]
    if len(set(real)) != len(real):
        die("the same file is given twice; give one validate file per launch")
    loaded = [load(f) for f in a.files]
    if len({sha for _, _, sha in loaded}) != 1:
        die("the files were validated with different profiles; the comparison needs the same "
            "plans in every launch (validate_local.sh with one PROFILE, REPS>=2)")
    launches = [l for l, _, _ in loaded]
    labels = loaded[0][1]
    for f, l in zip(a.files[1:], launches[1:]):
        if set(l) != set(launches[0]):
            die(f"{f}: other transitions than {a.files[0]}; validate the same config in every launch")
        for k in launches[0]:
            if set(l[k]) != set(launches[0][k]):
                die(f"{f}: other plans than {a.files[0]} for {labels[k]}")
    res = analyse(launches, a.goal)
    if a.json:
        print(json.dumps(res))
        return
    n, pairs = res["launches"], res["one_launch_oracle"]
    print(f"regret from measurements of the plans themselves, {n} launches, {res['transitions']} "
          f"transitions (same profile and plans), goal p95 <= {a.goal:g}:")
    if res["skipped_all_wrong"]:
        print(f"  ({len(res['skipped_all_wrong'])} transition(s) left out: every plan produced wrong data or has no samples)")
    print("  one-launch oracle (plan fastest in launch x, scored in launch y), p95:")
    print("    " + "  ".join(f"{p['from']}->{p['to']} {p['p95']:.3f}" for p in pairs))
    print(f"    above {a.goal:g} in {res['oracle_pairs_over_goal']} of {len(pairs)} ordered pairs")
    if res["leave_one_out_p95"] is not None:
        print("  leave-one-out (lowest mean regret over the other launches), p95 of the held-out launch:")
        print("    " + "  ".join(f"{i + 1}: {v:.3f}" for i, v in enumerate(res["leave_one_out_p95"])))
        print(f"    above {a.goal:g} in {res['leave_one_out_over_goal']} of {n} launches")
    print("  hindsight minimax (per transition the plan with the best worst launch), p95 per launch:")
    print("    " + "  ".join(f"{i + 1}: {v:.3f}" for i, v in enumerate(res["hindsight_minimax_p95"])))
    shown = [w for w in res["minimax_worst"] if w["worst_regret"] > 1.1]
    print("  transitions whose minimax plan still has a worst-launch regret > 1.1:")
    for w in shown:
        print(f"    {w['worst_regret']:.3f}  {labels[w['transition']]}")
    if not shown:
        print("    (none)")


if __name__ == "__main__":
    main()

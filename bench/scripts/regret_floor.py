#!/usr/bin/env python3
"""How much regret does launch-to-launch noise alone cause? (issue 9, p95 regret <= 1.20)

Input: two or more `shardbench validate` output files from separate launches with the same
profile and config, so every launch measured the same plans of the same transitions (the
validate_local.sh repetitions). Regret, as validate defines it: measured median of a plan /
the smallest measured median among the plans of that transition in that launch.

Two planners that no cost model can beat on the launch they are scored on:
  * previous-launch oracle: for launch y, pick per transition the plan that was fastest in
    launch x (perfect knowledge of one earlier measurement); its regret p95 in y, for every
    ordered pair (x, y). If this exceeds a goal, a planner that decides before measuring
    cannot meet the goal reliably on this machine.
  * hindsight minimax: per transition the one plan whose worst regret over all launches is
    smallest (chosen knowing every launch); its regret p95 per launch. A lower bound on what
    any fixed choice gets in its worst launch, transition by transition.

  regret_floor.py [--goal 1.2] [--json] validate_1.jsonl validate_2.jsonl [...]

Exit 0 on success (whatever the numbers), 2 on bad input (unreadable files, different
profiles or transitions or plan sets between files).
"""
import argparse
import itertools
import json
import sys


def die(msg):
    print(f"regret_floor: {msg}", file=sys.stderr)
    sys.exit(2)


def percentile(sorted_vals, q):
    """numpy's default (linear) percentile, as shardbench validate computes its p95."""
    if len(sorted_vals) == 1:
        return sorted_vals[0]
    pos = q * (len(sorted_vals) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def load(path):
    """{transition key: {plan text: measured median us}} and the profile's sha256."""
    try:
        with open(path) as f:
            lines = [ln for ln in f if ln.strip()]
    except OSError as e:
        die(f"{path}: cannot read ({e.strerror})")
    out, sha = {}, None
    for i, ln in enumerate(lines, 1):
        try:
            r = json.loads(ln)
        except json.JSONDecodeError as e:
            die(f"{path}:{i}: not JSON ({e.msg}); give shardbench validate output files")
        if r.get("schema") != "shardcal.validate":
            continue
        try:
            key = r["transition"]["key"]
            plans = {" ; ".join(p["steps"]): float(p["measured_us"]["median"]) for p in r["plans"]}
            this_sha = r["profile"]["sha256"]
        except (KeyError, TypeError, ValueError) as e:
            die(f"{path}:{i}: a validate record without {e}; give shardbench validate output files")
        if any(v <= 0 for v in plans.values()):
            die(f"{path}:{i}: a plan with a measured median <= 0")
        if sha not in (None, this_sha):
            die(f"{path}:{i}: records from two profiles in one file")
        sha = this_sha
        out[key] = plans
    if not out:
        die(f"{path}: no validate records (schema shardcal.validate)")
    return out, sha


def regrets(plans):
    best = min(plans.values())
    return {p: t / best for p, t in plans.items()}


def analyse(launches):
    keys = list(launches[0])
    per_launch_regret = [{k: regrets(l[k]) for k in keys} for l in launches]
    pairs = []
    for x, y in itertools.permutations(range(len(launches)), 2):
        vals = []
        for k in keys:
            pick = min(launches[x][k], key=launches[x][k].get)
            vals.append(per_launch_regret[y][k][pick])
        vals.sort()
        pairs.append({"from": x + 1, "to": y + 1, "p95": percentile(vals, 0.95),
                      "median": percentile(vals, 0.5), "max": vals[-1]})
    minimax = [[] for _ in launches]
    worst = []
    for k in keys:
        pick = min(launches[0][k], key=lambda p: max(r[k][p] for r in per_launch_regret))
        rs = [r[k][pick] for r in per_launch_regret]
        for i, v in enumerate(rs):
            minimax[i].append(v)
        worst.append((max(rs), json.loads(k) if k.startswith("{") else k))
    minimax_p95 = [percentile(sorted(v), 0.95) for v in minimax]
    worst.sort(key=lambda w: -w[0])
    return pairs, minimax_p95, worst


def label(t):
    if not isinstance(t, dict):
        return str(t)
    return f"{t.get('from')} -> {t.get('to')} mesh {t.get('mesh')} {t.get('shape', '')} {t.get('size')} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See docs/PERFORMANCE.md, 'Planner p95: the noise floor'.")
    ap.add_argument("files", nargs="+", help="shardbench validate outputs, one per launch (>= 2)")
    ap.add_argument("--goal", type=float, default=1.2, help="p95 regret goal to count against (1.2)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    a = ap.parse_args()
    if len(a.files) < 2:
        die("give at least two validate files from separate launches (validate_local.sh REPS>=2)")
    loaded = [load(f) for f in a.files]
    if len({sha for _, sha in loaded}) != 1:
        die("the files were validated with different profiles; the noise floor needs the same "
            "plans in every launch (validate_local.sh with one PROFILE, REPS>=2)")
    launches = [l for l, _ in loaded]
    keys = set(launches[0])
    for f, l in zip(a.files[1:], launches[1:]):
        if set(l) != keys:
            die(f"{f}: other transitions than {a.files[0]}; validate the same config in every launch")
        for k in keys:
            if set(l[k]) != set(launches[0][k]):
                die(f"{f}: other plans than {a.files[0]} for {label(json.loads(k))}")
    pairs, minimax_p95, worst = analyse(launches)
    over = sum(p["p95"] > a.goal for p in pairs)
    if a.json:
        print(json.dumps({"launches": len(launches), "transitions": len(keys), "goal": a.goal,
                          "previous_launch_oracle": pairs, "oracle_pairs_over_goal": over,
                          "hindsight_minimax_p95": minimax_p95}))
        return
    print(f"noise floor over {len(launches)} launches, {len(keys)} transitions (same profile and plans):")
    print("  previous-launch oracle (plan fastest in launch x, scored in launch y), regret p95:")
    print("    " + "  ".join(f"{p['from']}->{p['to']} {p['p95']:.3f}" for p in pairs))
    print(f"    above {a.goal:g} in {over} of {len(pairs)} ordered pairs")
    print("  hindsight minimax (one plan per transition, best worst case over all launches), p95 per launch:")
    print("    " + "  ".join(f"{i + 1}: {v:.3f}" for i, v in enumerate(minimax_p95)))
    print("  transitions whose best fixed plan still has worst-launch regret > 1.1:")
    shown = [w for w in worst if w[0] > 1.1]
    for r, t in shown:
        print(f"    {r:.3f}  {label(t)}")
    if not shown:
        print("    (none)")


if __name__ == "__main__":
    main()

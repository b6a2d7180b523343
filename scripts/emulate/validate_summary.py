#!/usr/bin/python3
"""Summarise `shardbench validate` on the emulated two-host cluster (docs/EMULATION.md).

Usage: validate_summary.py --validate V.jsonl --shardbench SB --profile P.json
           [--baseline configs/profiles/dtensor-default.json] [--ranks-per-host 2]
           [--max-regret 1.05] [--out summary.json]

For every transition of V.jsonl: the chosen plan (cost planner over P) and the greedy plan with
their inter-host bytes (steps on groups spanning 2+ hosts) and intra-host bytes, from
`SB plan --json`; what the planner would choose with the baseline profile (PyTorch DTensor's
built-in model); whether that choice differs; the measured regret (chosen / fastest measured
plan) and greedy/chosen. What it checks: at least one transition whose choice differs
from the baseline's has regret <= --max-regret, and in every transition the chosen plan moves no
more bytes across hosts than the greedy one. Exit 0 met, 1 not met, 2 bad input.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "calibrate", "python"))
from shardcal._script import helpers  # noqa: E402

die, _ = helpers("validate_summary.py")

# The validate file's schema name and version and the atomic write come from the shardcal
# package (calibrate/python): callers put it on PYTHONPATH or use the project's .venv.
try:
    from shardcal.formats import identity_problem, schema, write_text_atomic
except ImportError as _e:
    sys.exit(print(f"validate_summary.py: error: {_e}; run with PYTHONPATH=calibrate/python", file=sys.stderr) or 2)


def plan(sb, profile, t, rph):
    cmd = [sb, "plan", "--profile", profile, "--mesh", t["mesh"], "--ranks-per-host", str(rph),
           "--shape", t["shape"], "--dtype", t["dtype"], "--from", t["from"], "--to", t["to"],
           "--k", "1", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed (exit {r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


def traffic(steps):
    inter = sum(s.get("bytes", 0) for s in steps if s.get("collective") and s.get("hosts", 1) >= 2)
    intra = sum(s.get("bytes", 0) for s in steps if s.get("collective") and s.get("hosts", 1) == 1)
    return inter, intra


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--validate", required=True)
    ap.add_argument("--shardbench", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--baseline", default="configs/profiles/dtensor-default.json")
    ap.add_argument("--ranks-per-host", type=int, default=2)
    ap.add_argument("--max-regret", type=float, default=1.05)
    ap.add_argument("--out")
    a = ap.parse_args()
    try:
        recs = [json.loads(line) for line in open(a.validate, encoding="utf-8") if line.strip()]
    except (OSError, ValueError) as e:
        die(f"{a.validate}: cannot read: {e}; run shardbench validate first")
    validate_schema = schema("validate")[0]
    trans = [r for r in recs if r.get("schema") == validate_schema]
    if not trans:
        die(f"{a.validate}: no {validate_schema} transition records")
    for r in trans:
        if problem := identity_problem(r, "validate"):
            die(f"{a.validate}: {problem}")

    rows = []
    for r in trans:
        t = r["transition"]
        mine = plan(a.shardbench, a.profile, t, a.ranks_per_host)
        base = plan(a.shardbench, a.baseline, t, a.ranks_per_host)
        chosen_text = [s["text"] for s in mine["steps"]]
        base_text = [s["text"] for s in base["steps"]]
        measured_chosen = next(p for p in r["plans"] if p["role"] == "chosen")
        if measured_chosen["steps"] != chosen_text:
            die(f"{t['from']} -> {t['to']} {t['shape']}: plan --json chose {chosen_text}, validate "
                f"measured {measured_chosen['steps']}: different profile or build?")
        ci, ca = traffic(mine["steps"])
        gi, ga = traffic(mine["greedy_steps"])
        rows.append({
            "transition": f"{t['from']} -> {t['to']} mesh {t['mesh']} shape {t['shape']} {t['dtype']}",
            "chosen": chosen_text, "greedy": [s["text"] for s in mine["greedy_steps"]],
            "baseline_choice": base_text, "differs_from_baseline": base_text != chosen_text,
            "chosen_inter_bytes": ci, "chosen_intra_bytes": ca,
            "greedy_inter_bytes": gi, "greedy_intra_bytes": ga,
            "regret": r["regret"], "greedy_speedup": r["greedy_speedup"],
            "chosen_measured_us": measured_chosen["measured_us"]["median"],
            "chosen_predicted_us": measured_chosen["predicted_us"]})

    ok_rows = [x for x in rows if x["differs_from_baseline"] and x["regret"] <= a.max_regret]
    more_inter = [x for x in rows if x["chosen_inter_bytes"] > x["greedy_inter_bytes"]]
    met = bool(ok_rows) and not more_inter
    for x in rows:
        print(f"{x['transition']}: regret {x['regret']:.3f}, greedy/chosen {x['greedy_speedup']:.2f}x, "
              f"inter-host bytes chosen {x['chosen_inter_bytes']} vs greedy {x['greedy_inter_bytes']} "
              f"(intra {x['chosen_intra_bytes']} vs {x['greedy_intra_bytes']}), "
              f"{'differs from' if x['differs_from_baseline'] else 'same as'} the baseline's choice")
        print(f"    chosen:   {'; '.join(x['chosen'])}")
        if x["differs_from_baseline"]:
            print(f"    baseline: {'; '.join(x['baseline_choice'])}")
    print(f"acceptance (a transition whose choice differs from {os.path.basename(a.baseline)} with "
          f"regret <= {a.max_regret}, and no chosen plan with more inter-host bytes than greedy): "
          f"{'met' if met else 'NOT met'} ({len(ok_rows)} such transition(s); "
          f"{len(more_inter)} with more inter-host bytes)")
    if a.out:
        write_text_atomic(a.out, json.dumps({"schema": "shardcal.emulate.validate_summary", "version": 1,
                                             "validate": a.validate, "profile": a.profile,
                                             "baseline": a.baseline, "max_regret": a.max_regret,
                                             "met": met, "transitions": rows}, indent=1) + "\n")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Transition composition error of `shardbench calibrate` profiles (extra.transition_composition),
split by whether the transition's point rotated buffers (timing.buffer_slots > 1 in RESULTS, a
sweep of the same config): MAPE and mean signed error (bias: + = predicted slower than measured)
of all transitions, of the rotated ones and of those on one buffer set.
Usage: composition_by_rotation.py RESULTS.jsonl PROFILE.json... (standard library only)."""
import json
import statistics
import sys


def slots_by_label(path):
    """The calibrator's transition label -> buffer slots, from one results file."""
    out = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("type") == "point" and r["point"]["kind"] == "transition":
            p, t = r["point"], r["transition"]
            label = f"mesh {p['mesh']} {t['from']} -> {t['to']} {p['dtype']} {r['bytes']} B {p['distribution']}"
            out[label] = r["timing"]["buffer_slots"]
    return out


def summary(errors):
    if not errors:
        return "-"
    return (f"MAPE {100 * statistics.mean(abs(e) for e in errors):5.1f}%, "
            f"bias {100 * statistics.mean(errors):+6.1f}% (n={len(errors)})")


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    slots = slots_by_label(argv[0])
    print("| profile | all | rotated (slots > 1) | one slot | max |")
    print("|---|---|---|---|---:|")
    for prof in argv[1:]:
        items = json.load(open(prof))["extra"]["transition_composition"]["items"]
        rotated, one, unmatched = [], [], 0
        for it in items:
            s = slots.get(it["transition"])
            if s is None:
                unmatched += 1
            else:
                (rotated if s > 1 else one).append(it["rel_error"])
        worst = max((abs(it["rel_error"]) for it in items), default=0)
        note = f" ({unmatched} not in {argv[0]})" if unmatched else ""
        print(f"| {prof} | {summary(rotated + one)} | {summary(rotated)} | {summary(one)} "
              f"| {100 * worst:.0f}%{note} |")


if __name__ == "__main__":
    main(sys.argv[1:])

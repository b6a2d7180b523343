#!/usr/bin/env python3
"""Transition composition error of `shardbench calibrate` profiles (extra.transition_composition),
split by whether the transition's point rotated buffers (timing.buffer_slots > 1 in RESULTS, a
sweep of the same config): MAPE and mean signed error (bias: + = predicted slower than measured)
of all transitions, of the rotated ones and of those on one buffer set. A profile's items are
matched to RESULTS points of its own timing mode (fit_method.timing_mode), so per_iteration and
pipelined points of one sweep stay apart.
Usage: composition_by_rotation.py RESULTS.jsonl PROFILE.json... (standard library only)."""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from shardcal._script import helpers  # noqa: E402

die, read_text = helpers("composition_by_rotation.py")

USAGE = "usage: composition_by_rotation.py RESULTS.jsonl PROFILE.json..."
# What `shardbench calibrate --mode` defaults to, for a profile that does not record its mode.
DEFAULT_MODE = "per_iteration"


def slots_by_label(path):
    """(timing mode, the calibrator's transition label) -> buffer slots, from one results file."""
    out = {}
    for n, line in enumerate(read_text(path).splitlines(), 1):
        try:
            r = json.loads(line)
            if r.get("type") == "point" and r["point"]["kind"] == "transition":
                p, t = r["point"], r["transition"]
                label = f"mesh {p['mesh']} {t['from']} -> {t['to']} {p['dtype']} {r['bytes']} B {p['distribution']}"
                out[(p["mode"] if "mode" in p else r["timing"]["mode"], label)] = r["timing"]["buffer_slots"]
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            die(f"{path}:{n}: not a shardbench results record ({type(e).__name__}: {e}); "
                "give the RESULTS.jsonl of a `shardbench sweep`")
    return out


def composition(path):
    """(timing mode, extra.transition_composition.items) of one profile."""
    try:
        prof = json.loads(read_text(path))
    except ValueError as e:
        die(f"{path}: not JSON ({e}); give a profile written by `shardbench calibrate`")
    try:
        items = prof["extra"]["transition_composition"]["items"]
        mode = (prof.get("fit_method") or {}).get("timing_mode", DEFAULT_MODE)
        for it in items:
            it["transition"], float(it["rel_error"])
        return mode, items
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        die(f"{path}: no extra.transition_composition.items with transition and rel_error "
            f"({type(e).__name__}: {e}); give a profile written by `shardbench calibrate` from "
            "a sweep with transitions")


def summary(errors):
    if not errors:
        return "-"
    return (f"MAPE {100 * statistics.mean(abs(e) for e in errors):5.1f}%, "
            f"bias {100 * statistics.mean(errors):+6.1f}% (n={len(errors)})")


def main(argv):
    if len(argv) < 2:
        die(USAGE)
    slots = slots_by_label(argv[0])
    profiles = [(prof, *composition(prof)) for prof in argv[1:]]  # all checked before any output
    print("| profile | mode | all | rotated (slots > 1) | one slot | max |")
    print("|---|---|---|---|---|---:|")
    for prof, mode, items in profiles:
        rotated, one, unmatched = [], [], 0
        for it in items:
            s = slots.get((mode, it["transition"]))
            if s is None:
                unmatched += 1
            else:
                (rotated if s > 1 else one).append(it["rel_error"])
        worst = max((abs(it["rel_error"]) for it in items), default=0)
        note = f" ({unmatched} not in {argv[0]})" if unmatched else ""
        print(f"| {prof} | {mode} | {summary(rotated + one)} | {summary(rotated)} | {summary(one)} "
              f"| {100 * worst:.0f}%{note} |")


if __name__ == "__main__":
    main(sys.argv[1:])

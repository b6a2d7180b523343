#!/usr/bin/env python3
"""The quality table's holdout against a leave-one-size-out recomputation with `shardbench predict`
(issue 43, item 4; docs/CALIBRATION.md "Quality table").

For every benchmark log (imported with `shardbench import`) or results file given: calibrate all
of it, and read each model's held-out error from the table `shardbench calibrate` prints (column
"holdout") and from the profile (quality.leave_size_out_mape). Then, per distinct size, drop every
point of that size, calibrate the rest from scratch (segment count, pooling, curves chosen anew)
and predict the dropped points with `shardbench predict --json`: the mean |predicted / measured - 1|
over all points is the recomputation. --check exits 1 unless, for every model, the table's figure
equals the profile's (to its printed 0.1 %) and lies within 1.5x or 1 percentage point of the
recomputation (either side). Only files whose collectives each have one model and one link class
(imported logs) are compared; others are refused (exit 2); logs the importer has no collective
for (p2p benchmarks) are skipped with its message.

    python3 tests/calibrate/loso_check.py --shardbench build-release/bin/shardbench --check \\
        tests/data/realdata/ncclt-all_reduce-H100-1x8-1.txt
    python3 tests/calibrate/loso_check.py --shardbench B --check --hosts 1 --ranks-per-host 2 \\
        tests/data/realdata/osu-allreduce-A100-1x2-1.txt
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

RATIO = 1.5   # the table's figure within this factor of the recomputation ...
POINTS = 0.01  # ... or within this many (absolute) of it


def fail(msg: str) -> "NoReturn":  # noqa: F821
    print(f"loso_check: {msg}", file=sys.stderr)
    sys.exit(2)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)


# The results reader and the point statistic of the real-log evaluation (one definition).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "calibrate", "scripts"))
from realdata_eval import load_points as load, point_time_s, predict_json, write_results as write  # noqa: E402,E501


def calibrate(sb, results, prof):
    r = run([sb, "calibrate", "--results", results, "--out", prof, "--name", "loso-check"])
    if r.returncode != 0:
        fail(f"calibrate {results} failed: {r.stderr.strip()}")
    with open(prof) as f:
        return r.stdout, json.load(f)


def table_holdouts(table):
    """{(collective, conc, n): the 'holdout' column (fraction or None)} from the quality table."""
    out = {}
    lines = table.splitlines()
    try:
        head = next(i for i, ln in enumerate(lines) if ln.startswith("collective "))
    except StopIteration:
        fail("no quality table header in calibrate's output")
    cols = lines[head].split()
    if cols[:8] != ["collective", "hosts", "conc", "dtype", "n", "pts", "segs", "holdout"]:
        fail(f"unexpected quality table header: {lines[head]}")
    for ln in lines[head + 1:]:
        f = ln.split()
        if len(f) < 8 or f[0] in ("holdout:",) or not f[1].isdigit():
            break
        out[(f[0], f[2], f[4])] = None if f[7] == "-" else float(f[7].rstrip("%")) / 100
    return out


def predict(sb, prof, p):
    return predict_json(sb, prof, p, "the left-out size")["time_us"]


def check_file(sb, path, work, import_args):
    base = os.path.join(work, os.path.basename(path))
    with open(path, encoding="utf-8", errors="replace") as f:
        first = f.readline()
    try:
        is_results = json.loads(first).get("type") == "context"
    except ValueError:
        is_results = False
    results = path
    if not is_results:
        results = base + ".jsonl"
        r = run([sb, "import", path, "--out", results] + import_args)
        if r.returncode != 0 and "nothing imported" in r.stderr:  # p2p benchmarks (sendrecv, osu_latency)
            print(f"skip {os.path.basename(path)}: {r.stderr.strip().splitlines()[-1]}")
            return []
        if r.returncode != 0:
            fail(f"import {path} failed: {r.stderr.strip()}")
    ctx, pts = load(results)
    modes = {p["point"].get("mode") for p in pts}
    if len(modes) != 1:
        fail(f"{path}: points of several timing modes ({sorted(map(str, modes))}); give one")
    table, prof = calibrate(sb, results, base + ".profile.json")
    got = table_holdouts(table)
    rows = []
    for m in prof["models"]:
        op = m["collective"]
        ps = [p for p in pts if p["collective"] == op and p["point"].get("distribution", "even") == "even"]
        classes = {(p["group_size"], p["hosts_spanned"], p["max_ranks_per_host"]) for p in ps}
        if sum(1 for x in prof["models"] if x["collective"] == op) != 1 or len(classes) != 1:
            fail(f"{path}: {op} has several models or link classes; this check compares one model per "
                 "collective (an imported log)")
        key = (op, str(m["concurrent_groups"]), ",".join(map(str, m["group_sizes"])))
        if key not in got:
            fail(f"{path}: no table row for {key}")
        in_profile = m["quality"].get("leave_size_out_mape")
        sizes = sorted({p["bytes"] for p in ps})
        errs = []
        for i, s in enumerate(sizes):
            rest = base + f".{op}.without{i}.jsonl"
            write(rest, ctx, [p for p in pts if not (p["collective"] == op and p["bytes"] == s)])
            calibrate(sb, rest, rest + ".profile.json")
            for p in ps:
                if p["bytes"] == s:
                    t_us = point_time_s(p) * 1e6
                    errs.append(abs(predict(sb, rest + ".profile.json", p) / t_us - 1))
        rows.append({"file": path, "collective": op, "sizes": len(sizes), "table": got[key],
                     "profile": in_profile, "recomputed": sum(errs) / len(errs),
                     "backbone_kfold": m["quality"].get("holdout_mape")})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shardbench", required=True)
    ap.add_argument("--check", action="store_true", help="exit 1 unless every model's figures agree")
    ap.add_argument("--hosts", type=int, help="passed to shardbench import (logs that name no hosts)")
    ap.add_argument("--ranks-per-host", type=int, help="passed to shardbench import, with --hosts")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    if not os.access(a.shardbench, os.X_OK):
        fail(f"{a.shardbench}: not an executable")
    import_args = []
    if a.hosts is not None:
        import_args += ["--hosts", str(a.hosts)]
    if a.ranks_per_host is not None:
        import_args += ["--ranks-per-host", str(a.ranks_per_host)]
    for f in a.files:
        if not os.path.isfile(f):
            fail(f"{f}: no such file")
    bad = 0
    with tempfile.TemporaryDirectory(prefix="loso_check_") as work:
        for f in a.files:
            for r in check_file(a.shardbench, f, work, import_args):
                t, p, c = r["table"], r["profile"], r["recomputed"]
                ok = t is not None and p is not None and abs(t - p) <= 0.0005 + 1e-12 and \
                    (abs(t - c) <= POINTS or (t <= RATIO * c and c <= RATIO * t))
                bad += not ok
                bb = r["backbone_kfold"]
                print(f"{'ok  ' if ok else 'FAIL'} {os.path.basename(r['file'])} {r['collective']}: {r['sizes']} sizes; "
                      f"table holdout {'-' if t is None else f'{t * 100:.1f} %'}, profile "
                      f"{'-' if p is None else f'{p * 100:.2f} %'}, recomputed with predict {c * 100:.2f} % "
                      f"(backbone k-fold {'-' if bb is None else f'{bb * 100:.1f} %'})")
    if a.check and bad:
        print(f"loso_check: {bad} model(s) outside {RATIO}x / {POINTS * 100:.0f} point(s) of the recomputation",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

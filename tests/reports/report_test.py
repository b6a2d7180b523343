#!/usr/bin/python3
"""Report generator test (ctest label `report`): a tiny sim sweep + calibrate, then
reports/make_report.py on it with the hand-made validate and gate fixtures (the formats of
docs/REPORTS.md "Inputs"): files exist, every PNG decodes, index.html references every PNG and
nothing else, summary.md has its sections and key numbers; bad input exits 2 naming the file,
line and field, and leaves no output directory (and no temporary one).

    .venv/bin/python tests/reports/report_test.py SHARDBENCH SOURCE_DIR
"""

import json
import os
import re
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402

SB, SRC = sys.argv[1], sys.argv[2]
MAKE = os.path.join(SRC, "reports", "make_report.py")
FIX = os.path.join(SRC, "tests", "reports", "fixtures")
PY = sys.executable  # the project venv's python: it has the shardcal package
failures = []

TINY = {
    "meshes": ["4", "2x2"],
    "collectives": ["all_gather", "all_reduce", "reduce_scatter"],
    "transitions": [{"mesh": "all", "from": "S(0),R", "to": "R,R"}, {"mesh": "all", "from": "S(0)", "to": "S(1)"},
                    {"mesh": "all", "from": "R", "to": "S(0)"}, {"mesh": "all", "from": "P,R", "to": "S(0),R"}],
    "sizes": {"min": 64, "max": 262144, "factor": 4},
    "distributions": ["even", "zipf(1.2)"],
    "warmup": 1, "iterations": {"min": 5, "max": 8}, "time_budget_s": 0.01,
    "adaptive": {"target_rel_ci": 0, "confidence": 0.95},
    "buffer_rotation": {"bytes": 0, "max_slots": 1},
}


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def report(out, *args):
    return run([PY, MAKE, "--out", out, *args])


def check_report(out, sections, figures):
    for f in ("index.html", "summary.md"):
        check(os.path.isfile(os.path.join(out, f)), f"{out}/{f} exists")
    pngs = sorted(f for f in os.listdir(out) if f.endswith(".png"))
    check(set(figures) <= set(pngs), f"{out}: figures {sorted(set(figures) - set(pngs))} missing")
    for f in pngs:
        img = mpimg.imread(os.path.join(out, f))
        h, w = img.shape[:2]
        check(200 <= h <= 4000 and 300 <= w <= 4000, f"{f}: decodes to a readable size, got {w}x{h}")
        check(img.std() > 0.01, f"{f}: not blank")
    html = open(os.path.join(out, "index.html"), encoding="utf-8").read()
    referenced = set(re.findall(r'<img src="([^"]+)"', html))
    check(referenced == set(pngs), f"index.html embeds every PNG and only those: {sorted(referenced ^ set(pngs))}")
    md = open(os.path.join(out, "summary.md"), encoding="utf-8").read()
    for s in sections:
        check(f"\n## {s}\n" in md, f"summary.md has section '{s}'")
        check(f">{s}</h2>" in html, f"index.html has section '{s}'")
    check(not [f for f in os.listdir(os.path.dirname(out)) if ".tmp-" in f or ".old-" in f],
          "no temporary directories left next to the report")
    return md, html


def expect_bad(tmp, name, args, must_contain):
    out = os.path.join(tmp, f"bad_{name}")
    r = report(out, *args)
    check(r.returncode == 2, f"bad input {name}: exit 2, got {r.returncode} ({r.stderr.strip()[-300:]})")
    lines = [x for x in r.stderr.strip().splitlines() if x]
    check(len(lines) == 1, f"bad input {name}: one error line, got {lines}")
    for s in must_contain:
        check(s in r.stderr, f"bad input {name}: error names {s!r}: {r.stderr.strip()}")
    check(not os.path.exists(out), f"bad input {name}: no output directory")
    check(not [f for f in os.listdir(tmp) if f.startswith(f".bad_{name}")], f"bad input {name}: no temp dir left")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "tiny.json")
        with open(cfg, "w") as f:
            json.dump(TINY, f)
        res = os.path.join(tmp, "r.jsonl")
        prof = os.path.join(tmp, "p.json")
        r = run([SB, "sweep", "--backend", "sim", "--world", "4", "--config", cfg, "--out", res])
        if r.returncode != 0:
            print(r.stdout, r.stderr, file=sys.stderr)
            return 1
        r = run([SB, "calibrate", "--results", res, "--out", prof, "--name", "tiny"])
        if r.returncode != 0:
            print(r.stdout, r.stderr, file=sys.stderr)
            return 1
        val = os.path.join(FIX, "validate.jsonl")
        gate = os.path.join(FIX, "gate.json")

        # Everything given.
        out = os.path.join(tmp, "full", "report")
        r = report(out, res, "--profile", prof, "--validate", val, "--gate", gate, "--title", "test report")
        check(r.returncode == 0, f"full report: exit 0, got {r.returncode}: {r.stderr}")
        check("index.html" in r.stdout, f"full report prints where it is: {r.stdout}")
        figs = ["busbw_all_gather.png", "busbw_all_reduce.png", "busbw_reduce_scatter.png", "residuals.png",
                "uneven.png", "transitions_chunk.png", "validate.png", "gate.png", "gate_models.png"]
        md, html = check_report(out, ["Key numbers", "Inputs", "Sweep", "Calibration fit", "Planner validation",
                                      "Performance gate"], figs)
        check(md.startswith("# test report\n"), "--title is the title")
        summ = [json.loads(x) for x in open(val)][-1]
        check(f"median {summ['regret']['median']:.3f}, p95 {summ['regret']['p95']:.3f}" in md,
              "summary.md has the validate file's regret median and p95")
        check("| gate verdict | regression (exit 1;" in md, "summary.md has the gate verdict")
        check("fit holdout MAPE (over models)" in md, "summary.md has the fit holdout errors")
        check("all_reduce mesh=4 dim=0 1048576 B f32 even" in md, "summary.md lists the gate's worst point")
        check("Omitted" not in md, "nothing omitted when every input is given")
        check("1 without a finite predicted time" in md, "a plan with predicted_us null is counted, not an error")
        check("inconclusive 2," in md, "a gate point with null medians and ratio is counted, not an error")

        # Rerun into the same directory replaces it.
        r = report(out, res)
        check(r.returncode == 0, f"rerun over an existing report: exit 0, got {r.returncode}: {r.stderr}")
        md, _ = check_report(out, ["Sweep", "Calibration fit", "Planner validation", "Performance gate"],
                             ["busbw_all_gather.png", "uneven.png", "transitions_chunk.png"])
        check(not os.path.exists(os.path.join(out, "gate.png")), "a rerun leaves no figure of the previous report")
        for what in ("--profile", "--validate", "--gate"):
            check(f"Omitted: no {what} given" in md, f"absent {what}: its section says so")

        # Two results files (small: all_gather even points only): per-file figure names.
        small = os.path.join(tmp, "small.jsonl")
        with open(res) as f, open(small, "w") as g:
            for line in f:
                rec = json.loads(line)
                if rec["type"] == "context" or (rec.get("collective") == "all_gather"
                                                and rec["point"]["distribution"] == "even"):
                    g.write(line)
        out2 = os.path.join(tmp, "two")
        r = report(out2, small, small)
        check(r.returncode == 0, f"two results files: exit 0, got {r.returncode}: {r.stderr}")
        _, html2 = check_report(out2, ["Inputs"], ["run1_busbw_all_gather.png", "run2_busbw_all_gather.png"])
        check("Transition heatmap omitted" in html2, "a file without transitions says its heatmap is omitted")

        # Bad inputs: exit 2, one line naming file/line/field, no output directory.
        lines = open(res).read().splitlines()
        def write(name, text):
            p = os.path.join(tmp, name)
            with open(p, "w") as f:
                f.write(text)
            return p
        empty = write("empty.jsonl", "")
        expect_bad(tmp, "empty", [empty], ["empty.jsonl", "empty"])
        rec = json.loads(lines[3])
        rec["stats"]["p50"] = "fast"
        broken = write("broken.jsonl", "\n".join(lines[:3] + [json.dumps(rec)] + lines[4:]) + "\n")
        expect_bad(tmp, "field", [broken], ["broken.jsonl", "line 4", "stats.p50"])
        notjson = write("notjson.jsonl", "\n".join(lines[:2] + ["{oops"] + lines[3:]) + "\n")
        expect_bad(tmp, "json", [notjson], ["notjson.jsonl", "line 3", "not valid JSON"])
        expect_bad(tmp, "profile_as_results", [prof], ["p.json", "line 1", "shardcal.profile"])
        expect_bad(tmp, "missing", [os.path.join(tmp, "nope.jsonl")], ["nope.jsonl", "cannot read"])
        p = json.load(open(prof))
        p["models"][0]["segments"][0]["bandwidth_GBps"] = -1
        badprof = write("badprof.json", json.dumps(p))
        expect_bad(tmp, "profile", [res, "--profile", badprof], ["badprof.json", "/models/0/segments/0/bandwidth_GBps"])
        vl = open(val).read().splitlines()
        v = json.loads(vl[1])
        del v["plans"][0]["measured_us"]["median"]
        badval = write("badval.jsonl", "\n".join([vl[0], json.dumps(v)] + vl[2:]) + "\n")
        expect_bad(tmp, "validate", [res, "--validate", badval], ["badval.jsonl", "line 2", "plans[0]",
                                                                  "measured_us.median"])
        g = json.load(open(gate))
        g["points"][2]["verdict"] = "meh"
        badgate = write("badgate.json", json.dumps(g))
        expect_bad(tmp, "gate", [res, "--gate", badgate], ["badgate.json", "points[2]", "verdict"])
        expect_bad(tmp, "gate_as_validate", [res, "--validate", gate], ["gate.json", "line 1"])
        # --out: an existing directory that is not a report is refused and left alone.
        keep = os.path.join(tmp, "keep")
        os.makedirs(keep)
        write("keep/precious.txt", "x")
        r = report(keep, res)
        check(r.returncode == 2 and "not a report" in r.stderr, f"--out over a foreign directory: exit 2 ({r.stderr})")
        check(os.listdir(keep) == ["precious.txt"], "--out over a foreign directory leaves it untouched")
        r = report(os.path.join(tmp, "noargs"))
        check(r.returncode == 2, "no results file: exit 2")
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("report test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

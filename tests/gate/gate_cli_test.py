#!/usr/bin/python3
"""`shardbench gate` end to end on synthetic files generated here (docs/GATE.md;
acceptance): identical -> 0; one point 20% slower -> 1 naming it; all points 1% slower with
--max-slowdown 0.05 -> 0; disjoint points -> 2; different MPI library versions -> 2, and 0 / 1
with --allow-env-change (flagged); heavy noise / bimodal / too few samples -> 3; the same for
Google Benchmark JSON; bad input (missing file, wrong schema, empty, garbage) -> exit 2 with one
clear message and no report file. Usage: gate_cli_test.py SHARDBENCH"""
import json
import math
import os
import random
import subprocess
import sys
import tempfile

SB = sys.argv[1]
TMP = tempfile.mkdtemp(prefix="gate_cli_")
FAILS = []
SIZES = [2 ** k for k in range(3, 23)]  # 20 points


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def samples(seed, n, median_s, sigma=0.03, bimodal=False):
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        v = median_s * math.exp(rnd.gauss(0, sigma))
        if bimodal and i % 2:
            v *= 1.5
        out.append(v)
    return out


def base_time(size):
    return 20e-6 + size / 5e9


def point_key(size, op="all_gather"):
    params = {"distribution": "even", "dtype": "f32", "kind": "collective", "mesh": "4",
              "mesh_dim": 0, "mode": "per_iteration", "op": op,
              "protocol": {"buffer_rotation": None, "mode": "per_iteration",
                           "ops_per_sample": 1, "timing_loop": 2, "warmup": 5},
              "size": size}
    return params, json.dumps(params, sort_keys=True, separators=(",", ":"))


def sweep_file(name, seed, factor=lambda size: 1.0, n=60, sigma=0.02, bimodal=(), op="all_gather",
               mpi="Open MPI v4.1.4", sizes=SIZES):
    ctx = {"type": "context", "schema": "shardcal.sweep.results", "version": 2,
           "date": "2026-11-23T00:00:00Z", "backend": "mpi", "memory": "host", "world": 4,
           "hosts": [{"name": "h0", "ranks": [0, 1, 2, 3]}], "n_hosts": 1, "ranks_per_host": 4,
           "library_versions": {"MPI": mpi}, "backend_settings": {"mpi_thread_level": "funneled"},
           "config_hash": "0", "points_total": len(sizes)}
    lines = [json.dumps(ctx)]
    for i, size in enumerate(sizes):
        params, key = point_key(size, op)
        s = samples(seed * 1000 + i, n, base_time(size) * factor(size), sigma, size in bimodal)
        rec = {"type": "point", "index": i, "key": key, "point": params, "collective": op,
               "group_size": 4, "groups": 1, "hosts_spanned": 1, "max_ranks_per_host": 4,
               "elem_size": 4, "counts": [size // 16] * 4, "bytes": size, "bytes_total": size,
               "bytes_eff": size, "samples_s": s, "wrong": 0}
        lines.append(json.dumps(rec))
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def gbench_file(name, seed, factor=lambda size: 1.0, n=20, sigma=0.01, bimodal=(),
                build="release", prefix="BM_Pack"):
    benches = []
    for i, size in enumerate(SIZES):
        run = f"{prefix}/{size}"
        s = samples(seed * 1000 + i, n, base_time(size) * factor(size), sigma, size in bimodal)
        for r, t in enumerate(s):
            benches.append({"name": run, "run_name": run, "run_type": "iteration",
                            "repetitions": n, "repetition_index": r, "threads": 1,
                            "iterations": 1000, "real_time": t * 1e9, "cpu_time": t * 1e9,
                            "time_unit": "ns"})
        for agg in ("mean", "median", "stddev"):
            benches.append({"name": run + "_" + agg, "run_name": run, "run_type": "aggregate",
                            "aggregate_name": agg, "real_time": 1.0, "cpu_time": 1.0,
                            "time_unit": "ns"})
    doc = {"context": {"date": "2026-11-23", "host_name": "h0", "num_cpus": 2,
                       "library_build_type": build, "library_version": "v1.7.1"},
           "benchmarks": benches}
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def gate(b, c, *extra):
    out = os.path.join(TMP, "report.json")
    if os.path.exists(out):
        os.remove(out)
    p = subprocess.run([SB, "gate", "--baseline", b, "--candidate", c, "--json", out, *extra],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    rep = json.load(open(out)) if os.path.exists(out) else None
    return p.returncode, p.stdout, p.stderr, rep


def verdicts(rep):
    return {v: sum(1 for p in rep["points"] if p["verdict"] == v)
            for v in ("pass", "regression", "improvement", "inconclusive")}


def suite(kind, make):
    slow = SIZES[7]
    a = make(f"{kind}_a", 1)
    a_same = make(f"{kind}_a2", 1)
    b = make(f"{kind}_b", 2)
    rc, out, err, rep = gate(a, a_same)
    check(rc == 0 and rep["verdict"] == "pass" and verdicts(rep)["pass"] == 20,
          f"{kind}: identical -> 0 (rc {rc}, {err.strip()[:200]})")
    rc, out, err, rep = gate(a, b)
    check(rc == 0, f"{kind}: A/A with independent noise -> 0 (rc {rc})")
    c = make(f"{kind}_slow", 3, factor=lambda s: 1.2 if s == slow else 1.0)
    rc, out, err, rep = gate(a, c)
    regs = [p for p in rep["points"] if p["verdict"] == "regression"] if rep else []
    check(rc == 1 and len(regs) == 1 and f"/{slow}" in regs[0]["key"] + regs[0]["label"] + " "
          or (rc == 1 and len(regs) == 1 and f'"size":{slow}' in regs[0]["key"]),
          f"{kind}: one point 20% slower -> 1 naming it (rc {rc}, {len(regs)} regressions)")
    check(rep is not None and rep["points"][0]["verdict"] == "regression",
          f"{kind}: the regression is listed first (worst first)")
    check(str(slow) in out.split("\n| regression")[1] if "\n| regression" in out else False,
          f"{kind}: the Markdown table names the slow point")
    c = make(f"{kind}_1pct", 4, factor=lambda s: 1.01)
    rc, out, err, rep = gate(a, c, "--max-slowdown", "0.05")
    check(rc == 0, f"{kind}: all points 1% slower, --max-slowdown 0.05 -> 0 (rc {rc})")
    c = make(f"{kind}_noise", 5, factor=lambda s: 1.1, sigma=0.8)
    rc, out, err, rep = gate(a, c)
    check(rc == 3 and rep["verdict"] == "inconclusive",
          f"{kind}: heavy noise -> 3 (rc {rc})")
    c = make(f"{kind}_bimodal", 6, bimodal=set(SIZES))
    rc, out, err, rep = gate(a, c)
    check(rc == 3 and all("bimodal" in p["reason"] for p in rep["points"]),
          f"{kind}: bimodal -> 3, reason names it (rc {rc})")
    c = make(f"{kind}_few", 7, n=4)
    rc, out, err, rep = gate(make(f"{kind}_few_a", 8, n=4), c)
    check(rc == 3 and "too few" in rep["points"][0]["reason"], f"{kind}: too few samples -> 3 (rc {rc})")


def sweep_with_wrong(name, seed, wrong_sizes):
    """A sweep file whose points at wrong_sizes failed the correctness check (wrong > 0)."""
    path = sweep_file(name, seed)
    lines = open(path).read().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        rec = json.loads(line)
        if rec["bytes"] in wrong_sizes:
            rec["wrong"] = 3
        out.append(json.dumps(rec))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return path


def review_checks(a):
    """Gate hardening: internal errors, wrong results, lost coverage, report writing, repeated
    files, one-sided environment fields, Google Benchmark field types."""
    # An internal error (a bug) is exit 70, never a verdict's code (3 is inconclusive).
    env = dict(os.environ, SHARDCAL_TEST_INTERNAL_ERROR="1")
    p = subprocess.run([SB, "gate", "--baseline", a, "--candidate", a], capture_output=True,
                       text=True, stdin=subprocess.DEVNULL, env=env)
    check(p.returncode == 70 and "internal error" in p.stderr,
          f"internal error -> 70 (rc {p.returncode}: {p.stderr.strip()[:120]})")
    # Google Benchmark fields of the wrong type: exit 2 naming the file and the field.
    good = gbench_file("types_ok.json", 1)
    for field, value in (("error_occurred", 1), ("run_type", None), ("time_unit", 1000)):
        doc = json.load(open(good))
        doc["benchmarks"][0][field] = value
        path = os.path.join(TMP, f"types_{field}.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        rc, out, err, rep = gate(good, path)
        check(rc == 2 and rep is None and f"/benchmarks/0/{field}: " in err and path in err
              and "internal error" not in err,
              f"gbench: {field} = {value!r} -> 2 naming file and field (rc {rc}: {err.strip()[:160]})")
    # error_occurred: true is skipped with its reason; the lost repetitions leave the benchmark.
    doc = json.load(open(good))
    doc["benchmarks"][0].update({"error_occurred": True, "error_message": "boom"})
    path = os.path.join(TMP, "types_err.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    rc, out, err, rep = gate(good, path)
    check(rep is not None and any("boom" in s["reason"] for s in rep["skipped_candidate"]),
          f"gbench: error_occurred: true -> skipped, reason listed (rc {rc})")

    # A candidate that fails correctness at half its points: a regression, "wrong results".
    w = sweep_with_wrong("wrong_half.jsonl", 2, set(SIZES[::2]))
    rc, out, err, rep = gate(a, w)
    check(rc == 1 and rep["verdict"] == "regression" and len(rep["wrong_results"]) == 10
          and "Wrong results" in out, f"sweep: wrong > 0 at half the points -> 1 (rc {rc})")
    rc, out, err, rep = gate(a, w, "--allow-missing")
    check(rc == 1, f"sweep: wrong results + --allow-missing -> still 1 (rc {rc})")

    # A failing --markdown path writes no JSON report either (both or neither).
    js, md = os.path.join(TMP, "both.json"), os.path.join(TMP, "no_such_dir", "r.md")
    if os.path.exists(js):
        os.remove(js)
    p = subprocess.run([SB, "gate", "--baseline", a, "--candidate", a, "--json", js,
                        "--markdown", md], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    check(p.returncode == 2 and not os.path.exists(js) and "no_such_dir" in p.stderr,
          f"--markdown unwritable -> 2, no JSON report (rc {p.returncode}, json exists "
          f"{os.path.exists(js)})")
    left = [f for f in os.listdir(TMP) if ".tmp." in f]
    check(not left, f"no temporary files left ({left})")

    # The same file twice on one side: refused (its samples would count twice).
    cp = os.path.join(TMP, "copy_of_a.jsonl")
    with open(cp, "w") as f:
        f.write(open(a).read())
    p = subprocess.run([SB, "gate", "--baseline", a, cp, "--candidate", a], capture_output=True,
                       text=True, stdin=subprocess.DEVNULL)
    check(p.returncode == 2 and "copy_of_a.jsonl" in p.stderr and "same file" in p.stderr,
          f"the same file twice on one side -> 2 naming it (rc {p.returncode}: "
          f"{p.stderr.strip()[:160]})")
    # Baseline and candidate the same file: a warning (stderr and report), the verdict stands.
    rc, out, err, rep = gate(a, a)
    check(rc == 0 and "warning" in err and rep["warnings"] and "Warning" in out,
          f"baseline == candidate -> warning (rc {rc}: {err.strip()[:120]})")

    # An environment field on one side only (an older file without backend_settings) differs.
    old = os.path.join(TMP, "no_settings.jsonl")
    lines = open(sweep_file("with_settings.jsonl", 2)).read().splitlines()
    ctx = json.loads(lines[0])
    del ctx["backend_settings"]
    with open(old, "w") as f:
        f.write("\n".join([json.dumps(ctx)] + lines[1:]) + "\n")
    rc, out, err, rep = gate(a, old)
    check(rc == 2 and "backend_settings.mpi_thread_level" in err
          and rep["env_differences"][0]["candidate"] is None,
          f"env field on one side only -> 2 naming it (rc {rc}: {err.strip()[:160]})")
    rc, out, err, rep = gate(a, old, "--allow-env-change")
    check(rc == 0 and rep["env_change_allowed"] is True,
          f"env field on one side only + --allow-env-change -> 0 (rc {rc})")
    # Google Benchmark's optional context keys (library_version) are tolerated, and listed.
    doc = json.load(open(good))
    del doc["context"]["library_version"]
    path = os.path.join(TMP, "no_version.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    rc, out, err, rep = gate(good, path)
    check(rc == 0 and rep["env_differences"] and rep["env_differences"][0]["tolerated"] is True
          and "library_version" in out, f"gbench: library_version on one side -> 0, listed (rc {rc})")


def readme_example():
    """README's copy-paste CI gate example: its config, run twice (sim backend, 4 ranks as threads,
    instead of 4 MPI ranks), gated with the README's options, must never be inconclusive for too
    few samples (configs/local.json stops points at 8 < --min-samples 10: it could never pass)."""
    import re
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    readme = open(os.path.join(root, "README.md")).read()
    section = readme.split("## CI regression gate", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    configs = set(re.findall(r"--config (\S+)", block))
    check(len(configs) == 1, f"README gate example: one config ({configs})")
    config = os.path.join(root, configs.pop())
    cfg = json.load(open(config))
    it = cfg["iterations"]
    check(isinstance(it, dict) and it["min"] >= 10,
          f"README gate example: {config} takes >= 10 (--min-samples) samples per point ({it})")
    runs = []
    for name in ("readme_base.jsonl", "readme_cand.jsonl"):
        out = os.path.join(TMP, name)
        p = subprocess.run([SB, "sweep", "--backend", "sim", "--world", "4", "--config", config,
                            "--out", out], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        check(p.returncode == 0, f"README gate example: sweep {name} (rc {p.returncode}: "
                                 f"{p.stderr.strip()[-200:] if p.returncode else ''})")
        runs.append(out)
    gate_line = [l for l in block.splitlines() if "shardbench gate" in l][0]
    opts = re.findall(r"--(max-slowdown|alpha) (\S+)", block)
    extra = [x for k, v in opts for x in ("--" + k, v)]
    rc, out, err, rep = gate(runs[0], runs[1], *extra, "--quiet")
    few = [q["reason"] for q in rep["points"] if "too few" in q["reason"]] if rep else ["no report"]
    check(rc in (0, 1, 3) and not few and gate_line,
          f"README gate example: exit {rc} ({rep and rep['counts']}), never too few samples "
          f"({few[:2]})")


def pinned_bootstrap():
    # The bootstrap's per-point seeds are part of the gate's promise (the same inputs and --seed
    # give the same intervals in every build): these values were computed by the build before the
    # FNV hash moved to core/hash.hpp, whose standard basis differs from the gate's seed basis.
    a = sweep_file("pin_a.jsonl", 21, sizes=SIZES[:3])
    b = sweep_file("pin_b.jsonl", 22, factor=lambda size: 1.04, sizes=SIZES[:3])
    rep = gate(a, b)[3]
    want = {8: (1.026494043160794, 1.0525784326336363), 16: (1.0290498954077467, 1.0647015351126279),
            32: (1.024588471954997, 1.049414332652224)}
    got = {json.loads(p["key"])["size"]: (p["ci_lo"], p["ci_hi"]) for p in (rep or {}).get("points", [])}
    check(set(got) == set(want) and all(math.isclose(got[k][i], want[k][i], rel_tol=1e-12)
                                        for k in want for i in (0, 1)),
          f"bootstrap intervals pinned (same seeds as every earlier build): {got}")


def main():
    pinned_bootstrap()
    suite("sweep", lambda name, seed, **kw: sweep_file(name + ".jsonl", seed, **kw))
    suite("gbench", lambda name, seed, **kw: gbench_file(name + ".json", seed, **kw))

    # Disjoint points -> 2.
    a = sweep_file("d_a.jsonl", 1)
    d = sweep_file("d_b.jsonl", 2, op="all_reduce")
    rc, out, err, rep = gate(a, d)
    check(rc == 2 and rep["verdict"] == "incomparable" and len(rep["only_candidate"]) == 20
          and "no point is in both" in err, f"sweep: disjoint -> 2 (rc {rc}: {err.strip()[:120]})")
    rc, out, err, rep = gate(gbench_file("d_a.json", 1), gbench_file("d_b.json", 2, prefix="BM_X"))
    check(rc == 2 and "no point is in both" in err, f"gbench: disjoint -> 2 (rc {rc})")
    # Partial overlap: one-sided points are listed; baseline points the candidate lost make the
    # run inconclusive unless --allow-missing (then flagged).
    p = sweep_file("part.jsonl", 2, sizes=SIZES[:15] + [1 << 30])
    rc, out, err, rep = gate(a, p)
    check(rc == 3 and len(rep["only_baseline"]) == 5 and len(rep["only_candidate"]) == 1
          and len(rep["missing_in_candidate"]) == 5 and "Only in the baseline (5)" in out
          and "Coverage lost" in out, f"sweep: lost points -> 3, listed (rc {rc})")
    rc, out, err, rep = gate(a, p, "--allow-missing")
    check(rc == 0 and rep["missing_allowed"] is True and "allowed by --allow-missing" in out,
          f"sweep: lost points + --allow-missing -> 0, flagged (rc {rc})")

    # Different MPI library versions -> 2; --allow-env-change -> 0 / 1, flagged.
    m = sweep_file("mpi_b.jsonl", 2, mpi="MPICH 4.0")
    rc, out, err, rep = gate(a, m)
    check(rc == 2 and "library_versions.MPI" in err and rep["verdict"] == "incomparable"
          and rep["env_differences"][0]["field"] == "library_versions.MPI",
          f"sweep: different MPI -> 2 naming it (rc {rc}: {err.strip()[:160]})")
    rc, out, err, rep = gate(a, m, "--allow-env-change")
    check(rc == 0 and rep["env_change_allowed"] is True and "Environment changed" in out,
          f"sweep: different MPI + --allow-env-change -> 0, flagged (rc {rc})")
    ms = sweep_file("mpi_slow.jsonl", 3, mpi="MPICH 4.0", factor=lambda s: 1.2 if s == 64 else 1)
    rc, out, err, rep = gate(a, ms, "--allow-env-change")
    check(rc == 1 and rep["env_change_allowed"] is True,
          f"sweep: different MPI + slow point + --allow-env-change -> 1, flagged (rc {rc})")
    gd = gbench_file("g_debug.json", 2, build="debug")
    rc, out, err, rep = gate(gbench_file("g_rel.json", 1), gd)
    check(rc == 2 and "library_build_type" in err, f"gbench: debug vs release -> 2 (rc {rc})")

    # Mixed formats, bad input -> 2, one message, no report.
    def bad(path_b, path_c, needle, what, *extra):
        rc, out, err, rep = gate(path_b, path_c, *extra)
        lines = [l for l in err.splitlines() if l.strip()]
        check(rc == 2 and rep is None and len(lines) == 1 and needle in err,
              f"bad input: {what} -> 2, one message, no report (rc {rc}: {err.strip()[:200]})")

    bad(a, gbench_file("mix.json", 1), "compare files of the same kind", "mixed formats")
    bad(a, os.path.join(TMP, "missing.jsonl"), "cannot open", "missing file")
    empty = os.path.join(TMP, "empty.jsonl")
    open(empty, "w").close()
    bad(a, empty, "empty", "empty file")
    wrong = os.path.join(TMP, "wrong.jsonl")
    with open(wrong, "w") as f:
        f.write(json.dumps({"type": "context", "schema": "other.thing", "version": 2}) + "\n")
    bad(a, wrong, "schema", "wrong schema")
    garbage = os.path.join(TMP, "garbage.jsonl")
    with open(garbage, "w") as f:
        f.write("not json\n")
    bad(garbage, a, "garbage.jsonl:1: column 2: invalid JSON", "garbage")
    # A multi-line Google Benchmark file with a bad number or a syntax error: the message names
    # the line (and the field of an out-of-range number), not line 1 of a JSON Lines reading.
    doc = json.load(open(a_gb := gbench_file("ml_ok.json", 1)))
    doc["benchmarks"][0]["real_time"] = 123454321.0
    text = json.dumps(doc, indent=1).replace("123454321.0", "1e999")
    line = text[:text.index("1e999")].count("\n") + 1
    ml = os.path.join(TMP, "ml_range.json")
    with open(ml, "w") as f:
        f.write(text)
    bad(a_gb, ml, f"line {line}: a number is outside the range of a double "
        "(field /benchmarks/0/real_time)", "gbench multi-line 1e999")
    text = json.dumps(doc, indent=1).replace('"run_type"', '"run_type" "x":', 1)
    line = text[:text.index('"run_type"')].count("\n") + 1
    with open(ml, "w") as f:
        f.write(text)
    bad(a_gb, ml, f"line {line}, column", "gbench multi-line syntax error")
    other = os.path.join(TMP, "other.json")
    with open(other, "w") as f:
        json.dump({"hello": 1}, f)
    bad(a, other, "neither Google Benchmark JSON", "an unrelated JSON document")
    bad(a, a, "--alpha", "alpha out of range", "--alpha", "2")

    # Model level: profiles calibrated from the two runs; the candidate's bandwidth is 30% lower.
    def calibrate(results, name):
        prof = os.path.join(TMP, name)
        subprocess.run([SB, "calibrate", "--results", results, "--out", prof], check=True,
                       capture_output=True, stdin=subprocess.DEVNULL)
        return prof
    slow_bw = sweep_file("bw_slow.jsonl", 9,
                         factor=lambda s: (20e-6 + s / 3.5e9) / (20e-6 + s / 5e9))
    pa, pa2, pslow = (calibrate(a, "pa.json"), calibrate(sweep_file("bw_same.jsonl", 2), "pa2.json"),
                      calibrate(slow_bw, "pslow.json"))
    rc, out, err, rep = gate(a, slow_bw, "--baseline-profile", pa, "--candidate-profile", pslow)
    bw = [m for m in rep["models"] if m["param"] == "bandwidth_GBps"]
    check(rc == 1 and len(bw) == 1 and bw[0]["verdict"] == "regression"
          and abs(bw[0]["ratio"] - 0.7) < 0.02 and "model verdict" in out,
          f"models: bandwidth 30% lower -> model regression (rc {rc}, {bw})")
    rc, out, err, rep = gate(a, sweep_file("bw_same.jsonl", 2), "--baseline-profile", pa,
                             "--candidate-profile", pa2)
    check(rc == 0 and rep["models"] and all(m["verdict"] == "pass" for m in rep["models"]),
          f"models: same machine -> models pass (rc {rc})")
    # Model level on prices (issue 45): a profile calibrated from a real nccl-tests log, and two
    # candidates made by editing it -- alpha_step +20 us (all_reduce on 8 ranks: 14 ring steps),
    # and the measured curve 30 % slower at the middle sizes (64 KiB .. 16 MiB). Neither moves a
    # segment's alpha_us or bandwidth_GBps, so only the priced times can see them.
    log = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "realdata",
                       "ncclt-all_reduce-H100-1x8-1.txt")
    real = os.path.join(TMP, "real.jsonl")
    subprocess.run([SB, "import", log, "--out", real], check=True, capture_output=True,
                   stdin=subprocess.DEVNULL)
    preal = calibrate(real, "preal.json")
    doc = json.load(open(preal))
    check(any(cv["bytes"] for m in doc["models"] for cv in m.get("curves", [])),
          "models: the real profile has a measured curve")

    def edited(name, edit):
        d = json.loads(json.dumps(doc))
        for m in d["models"]:
            edit(m)
        path = os.path.join(TMP, name)
        with open(path, "w") as f:
            json.dump(d, f)
        return path

    def more_steps(m):
        for seg in m["segments"]:
            seg["alpha_step_us"] += 20

    def slow_middle(m):
        for cv in m["curves"]:
            cv["log_ratio"] = [lr + math.log(1.3) if 65536 <= b <= 16777216 else lr
                               for b, lr in zip(cv["bytes"], cv["log_ratio"])]
    same = sweep_file("bw_same.jsonl", 2)
    for name, edit, at in (("p_step.json", more_steps, None),
                           ("p_mid.json", slow_middle, (65536, 16777216))):
        rc, out, err, rep = gate(a, same, "--baseline-profile", preal, "--candidate-profile",
                                 edited(name, edit))
        price = [m for m in rep["models"] if m["param"] == "time_us"]
        params = [m for m in rep["models"] if m["param"] in ("alpha_us", "bandwidth_GBps")]
        worst = float(price[0]["at"].split("S_eff=")[1]) if price else 0
        check(rc == 1 and len(price) == 1 and price[0]["verdict"] == "regression"
              and (at is None or at[0] <= worst <= at[1])
              and params and all(m["verdict"] == "pass" for m in params)
              and "time_us at n=8 c=1" in out,
              f"models: {name}: the priced time regresses (exit 1) while alpha_us and B pass "
              f"(rc {rc}, {price})")
    rc, out, err, rep = gate(a, same, "--baseline-profile", preal, "--candidate-profile", preal)
    price = [m for m in rep["models"] if m["param"] == "time_us"]
    check(rc == 0 and len(price) == 1 and all(m["verdict"] == "pass" for m in rep["models"]),
          f"models: the real profile against itself -> every price passes, exit 0 (rc {rc})")
    bad(a, a, "go together", "--baseline-profile without --candidate-profile",
        "--baseline-profile", pa)
    bad(a, a, "cannot open", "missing profile", "--baseline-profile", pa,
        "--candidate-profile", os.path.join(TMP, "nope.json"))

    # Several runs per side are pooled: a slow phase in one run of each side is spread, not a
    # regression; runs of different stacks on one side are refused.
    def gate_multi(bs, cs, *extra):
        args = [SB, "gate", "--baseline", *bs, "--candidate", *cs, "--json",
                os.path.join(TMP, "multi.json"), *extra]
        p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout, p.stderr
    a1, a2 = sweep_file("pool_a1.jsonl", 21), sweep_file("pool_a2.jsonl", 22)
    c1, c2 = sweep_file("pool_c1.jsonl", 23), sweep_file("pool_c2.jsonl", 24)
    rc, out, err = gate_multi([a1, a2], [c1, c2])
    rep = json.load(open(os.path.join(TMP, "multi.json")))
    check(rc == 0 and rep["baseline"]["runs"] == 2 and rep["points"][0]["n_baseline"] == 120,
          f"pooled: 2 + 2 runs of one machine -> 0, samples pooled (rc {rc})")
    slow_a = sweep_file("pool_a_slow.jsonl", 25, factor=lambda s: 1.3)
    slow_c = sweep_file("pool_c_slow.jsonl", 26, factor=lambda s: 1.3)
    rc, out, err = gate_multi([a1], [slow_c])
    check(rc == 1, f"pooled: one slow-phase candidate run alone -> 1 (rc {rc})")
    rc, out, err = gate_multi([a1, slow_a], [c1, slow_c])
    check(rc in (0, 3), f"pooled: slow phases on both sides -> not a regression (rc {rc})")
    rc, out, err = gate_multi([a1, m], [c1])
    check(rc == 2 and "different environments" in err and "library_versions.MPI" in err,
          f"pooled: two stacks on one side -> 2 (rc {rc}: {err.strip()[:150]})")

    review_checks(a)
    readme_example()

    # A bad command line is bad input too: exit 2, not CLI11's own codes.
    p = subprocess.run([SB, "gate", "--baseline", a], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    check(p.returncode == 2 and "--candidate" in p.stderr,
          f"bad input: missing --candidate -> 2 (rc {p.returncode})")

    # The report's schema (docs/GATE.md).
    rc, out, err, rep = gate(a, sweep_file("schema_b.jsonl", 2))
    need = {"schema", "version", "verdict", "exit_code", "alpha", "max_slowdown", "fdr",
            "env_differences", "env_change_allowed", "points", "only_baseline", "only_candidate",
            "models"}
    pneed = {"key", "label", "baseline_median_us", "candidate_median_us", "ratio", "ci_lo",
             "ci_hi", "p", "q", "n_baseline", "n_candidate", "verdict", "reason"}
    check(need <= set(rep) and rep["schema"] == "shardcal.gate" and rep["version"] == 1
          and all(pneed <= set(p) for p in rep["points"])
          and [p["ratio"] for p in rep["points"]] == sorted((p["ratio"] for p in rep["points"]),
                                                            reverse=True),
          "report: schema fields, points worst first")
    # Reproducible: the same inputs give the same report.
    rep2 = gate(a, os.path.join(TMP, "schema_b.jsonl"))[3]
    check(rep2 == rep, "report: reproducible (fixed bootstrap seed)")
    # --markdown writes the same text as stdout.
    md = os.path.join(TMP, "r.md")
    rc, out, err, rep = gate(a, a, "--markdown", md)
    check(open(md).read() == out, "--markdown file == stdout")

    print(f"{len(FAILS)} failure(s)")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())

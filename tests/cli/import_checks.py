#!/usr/bin/python3
"""End-to-end checks of `shardbench import` (docs/IMPORT.md) on the development logs in
tests/data/realdata/ (public logs, see its README) and damaged copies of them.

usage: import_checks.py CHECK SHARDBENCH SOURCE_DIR
Each CHECK exits 0 on success and prints what it compared; non-zero with the reason otherwise.
"""
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

SB = None
DATA = None


def run(args, expect_rc=None):
    p = subprocess.run([SB] + args, capture_output=True, text=True, timeout=120)
    if expect_rc is not None and p.returncode != expect_rc:
        sys.exit(f"FAIL: shardbench {' '.join(args)} exited {p.returncode}, expected {expect_rc}\n"
                 f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def log(name):
    return os.path.join(DATA, "realdata", name)


def table_rows(path):
    """(size, oop time, ip time) of every data row, read independently of the C++ parser."""
    rows = []
    with open(path) as f:
        for line in f:
            t = line.split()
            if len(t) >= 13 and t[0].isdigit() and t[2] in ("float", "half", "bfloat16"):
                rows.append((int(t[0]), float(t[5]), float(t[9])))
    return rows


# log, collective, ranks, hosts, points (2 per non-zero size: out-of-place and in-place)
DEVSET = [
    ("ncclt-all_gather-H100-1x8-1.txt", "all_gather", 8, 1, 54),
    ("ncclt-all_reduce-H100-1x8-1.txt", "all_reduce", 8, 1, 62),
    ("ncclt-all_reduce-H100-2x8-1.txt", "all_reduce", 16, 2, 62),
    ("ncclt-alltoall-RTX2080Ti-1x2-1.txt", "all_to_all", 2, 1, 52),
    ("ncclt-reduce_scatter-H100-1x8-1.txt", "reduce_scatter", 8, 1, 54),
]


def check_devset(tmp):
    for name, coll, world, hosts, npts in DEVSET:
        out = os.path.join(tmp, name + ".jsonl")
        run(["import", log(name), "--out", out], 0)
        recs = records(out)
        ctx, pts = recs[0], recs[1:]
        assert ctx["type"] == "context" and ctx["backend"] == "nccl" and ctx["world"] == world, ctx
        assert ctx["n_hosts"] == hosts and sum(ctx["ranks_per_host"]) == world, ctx
        assert ctx["import"]["source"]["sha256"] and ctx["import"]["tool"] == "nccl-tests"
        assert all(g["name"] for g in ctx["import"]["gpus"]), ctx["import"]["gpus"]
        assert len(pts) == npts, f"{name}: {len(pts)} points, expected {npts}"
        assert len({p["key"] for p in pts}) == npts, f"{name}: point keys are not unique"
        # Size convention and times: every row's size is S, both variants kept with their time.
        want = {}
        for size, t_oop, t_ip in table_rows(log(name)):
            if size:
                want[(size, "out_of_place")] = t_oop
                want[(size, "in_place")] = t_ip
        got = {}
        for p in pts:
            assert p["collective"] == coll and p["group_size"] == world, p["collective"]
            assert p["bytes"] == p["point"]["size"] and p["elem_size"] * sum(p["counts"]) == (
                p["bytes"] if coll not in ("all_reduce",) else p["bytes"] * world), p
            assert p["point"]["mode"] == "pipelined" and p["stats"]["n"] == 1, p["point"]
            got[(p["bytes"], p["point"]["protocol"]["placement"])] = p["samples_s"][0] * 1e6
        assert set(got) == set(want), f"{name}: sizes differ from the log's"
        bad = [k for k in want if abs(got[k] - want[k]) > 1e-9 * want[k]]
        assert not bad, f"{name}: times differ from the log at {bad[:3]}"
    # The 2-node all_reduce log names no program: inferred from the table, and said so.
    ctx = records(os.path.join(tmp, "ncclt-all_reduce-H100-2x8-1.txt.jsonl"))[0]
    assert "inferred from the table" in ctx["import"]["collective_from"], ctx["import"]
    # Every nccl-tests log at once: the sendrecv logs are skipped with a message, the rest go
    # into one file that calibrate reads (--mode auto: pipelined).
    out = os.path.join(tmp, "nccl.jsonl")
    names = sorted(n for n in os.listdir(os.path.join(DATA, "realdata")) if n.startswith("ncclt-"))
    p = run(["import"] + [log(n) for n in names] + ["--out", out], 0)
    assert p.stdout.count("import: skipping") == 2 and "sendrecv_perf is point-to-point" in p.stdout, p.stdout
    assert sum(r["type"] == "context" for r in records(out)) == 5
    # Logs of three clusters (H100 pod, GCP A3 nodes, an RTX 2080 Ti box): one profile only on
    # purpose (issue 44, trap 5).
    p = run(["calibrate", "--results", out, "--out", os.path.join(tmp, "all.profile.json")], 2)
    assert "different clusters" in p.stderr and "--allow-mixed" in p.stderr, p.stderr
    assert not os.path.exists(os.path.join(tmp, "all.profile.json"))
    run(["calibrate", "--results", out, "--out", os.path.join(tmp, "all.profile.json"), "--allow-mixed"], 0)
    # OSU: no hosts in the log -> --hosts/--ranks-per-host; p2p -> skipped; alone -> exit 2.
    osu = log("osu-allreduce-A100-1x2-1.txt")
    out = os.path.join(tmp, "osu.jsonl")
    run(["import", osu, "--hosts", "1", "--ranks-per-host", "2", "--out", out], 0)
    recs = records(out)
    assert recs[0]["backend"] == "mpi" and recs[0]["memory"] == "cuda" and len(recs) == 20, recs[0]
    assert recs[1]["point"]["mode"] == "per_iteration" and recs[1]["bytes"] == 4, recs[1]
    assert abs(recs[1]["samples_s"][0] - 1.98e-6) < 1e-15
    # Alone: one error on stderr that says what, where and what to do; no skip line before it.
    lat = log("osu-latency-GH200-2x1-1.txt")
    p = run(["import", lat, "--out", out + ".2"], 2)
    one_error(p, "nothing imported: the log was skipped: " + lat + ": ", "point-to-point",
              "give a log of a collective shardcal measures", "no file written")
    assert "import: skipping" not in p.stdout and not os.path.exists(out + ".2"), p.stdout
    print(f"devset: {len(DEVSET)} collective logs imported (sizes, times, variants match the log), "
          "sendrecv/osu_latency skipped, OSU allreduce with --hosts")


def damaged_cases(tmp):
    src = log("ncclt-all_reduce-H100-1x8-1.txt")
    lines = open(src).read().splitlines(keepends=True)
    first_row = next(i for i, l in enumerate(lines) if re.match(r"^\s+8\s+2\s+float", l))
    last_row = max(i for i, l in enumerate(lines) if re.match(r"^\s+\d+\s+\d+\s+float", l))

    def write(name, text):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def drop_col(line, k):
        t = line.split()
        return "  ".join(t[:k] + t[k + 1:]) + "\n" if t and t[0].isdigit() else line

    cases = [
        # name, text, expected message (regex), line the message names (None: no line)
        ("cut-before-rows", "".join(lines[:first_row]), r"the table has no rows", first_row - 1),
        ("junk-row", "".join(lines[:first_row + 3] + ["12 garbage ##!!\n"] + lines[first_row + 3:]),
         r"the row has 3 fields where the table header .* has 13, and more rows follow", first_row + 4),
        ("missing-column", "".join(drop_col(l, 7) if i >= first_row else l for i, l in enumerate(lines)),
         r"the row has 12 fields where the table header .* has 13", first_row + 1),
        ("bad-number", "".join(l.replace("35.58", "35.5x") for l in lines), r"column time is \"35.5x\"", first_row + 1),
        ("no-hosts", "".join(l for l in lines if "Rank" not in l), r"names no hosts.*--hosts H --ranks-per-host R", None),
        ("not-a-log", "hello\nworld\n", r"not a benchmark log shardbench can import", 1),
        ("broken-json", '{"version": 3, "results": [', r"invalid JSON", None),
    ]
    return src, lines, first_row, last_row, [(n, write(n + ".txt", t), m, l) for n, t, m, l in cases]


def check_damaged(tmp):
    src, lines, first_row, last_row, cases = damaged_cases(tmp)
    for name, path, message, line in cases:
        out = os.path.join(tmp, name + ".jsonl")
        p = run(["import", path, "--out", out], 2)
        err = p.stderr.strip().splitlines()
        assert len(err) == 1, f"{name}: expected one error line, got {err}"
        prefix = f"shardbench: error: {path}" + (f":{line}:" if line else ":")
        assert err[0].startswith(prefix), f"{name}: {err[0]!r} does not start with {prefix!r}"
        assert re.search(message, err[0]), f"{name}: {err[0]!r} lacks {message!r}"
        assert not os.path.exists(out), f"{name}: {out} was written"
    # A last row cut short (a killed job): skipped, counted, reported; the rest imported.
    cut = lines[:last_row] + [lines[last_row][:40] + "\n"]
    path = os.path.join(tmp, "cut-last-row.txt")
    open(path, "w").write("".join(cut))
    out = os.path.join(tmp, "cut-last-row.jsonl")
    p = run(["import", path, "--out", out], 0)
    assert f"{path}:{last_row + 1}:" in p.stdout and "cut short; skipped" in p.stdout, p.stdout
    assert len(records(out)) == 1 + 60 and records(out)[0]["import"]["rows"]["skipped_truncated"] == 1
    # Messy but valid: NCCL INFO lines, Open MPI and [host:pid] tags, a #wrong > 0, N/A columns.
    messy = []
    for i, l in enumerate(lines):
        if i == first_row + 2:
            messy.append("gpu-node:1583987:1584001 [0] NCCL INFO Channel 00/24 : 0 1 2 3 4 5 6 7\n")
            l = re.sub(r"(\s)0(\s+\S+\s+\S+\s+\S+\s+)0\s*$", r"\g<1>5\g<2>N/A\n", l)
        messy.append(["[1,0]<stdout>:", "[gpu-node:1583987] ", "0: ", "[0] "][i % 4] + l)
    path = os.path.join(tmp, "messy.txt")
    open(path, "w").write("".join(messy))
    out = os.path.join(tmp, "messy.jsonl")
    run(["import", path, "--out", out], 0)
    pts = records(out)[1:]
    assert len(pts) == 62, len(pts)
    wrong = [p for p in pts if p["wrong"] not in (0, None)]
    na = [p for p in pts if p["wrong"] is None]
    assert len(wrong) == 1 and wrong[0]["wrong"] == 5 and len(na) == 1, (wrong, na)
    cal = run(["calibrate", "--results", out, "--out", os.path.join(tmp, "messy.profile.json")], 0)
    assert "1 excluded (wrong > 0)" in cal.stdout, cal.stdout
    # nccl-tests -N 2 (run_cycles) prints the table twice: one point per size, one sample per cycle.
    path = os.path.join(tmp, "cycles.txt")
    open(path, "w").write("".join(lines[:last_row + 1] + lines[first_row:last_row + 1] + lines[last_row + 1:]))
    out = os.path.join(tmp, "cycles.jsonl")
    run(["import", path, "--out", out], 0)
    pts = records(out)[1:]
    assert len(pts) == 62 and all(p["stats"]["n"] == 2 for p in pts), [p["stats"]["n"] for p in pts]
    assert [r["line"] for r in pts[0]["import"]["rows"]] == [first_row + 1, last_row + 2], pts[0]["import"]
    # NCCL_TESTS_SPLIT: two colours of 4 ranks (the Group column) -> 2 concurrent groups of 4.
    path = os.path.join(tmp, "split.txt")
    open(path, "w").write(re.sub(r"Rank  ([4-7]) Group  0", r"Rank  \1 Group  1", "".join(lines)))
    out = os.path.join(tmp, "split.jsonl")
    run(["import", path, "--out", out], 0)
    p = records(out)[1]
    assert (p["point"]["mesh"], p["point"]["mesh_dim"], p["group_size"], p["groups"]) == ("2x4", 1, 4, 2), p["point"]
    assert p["busbw_factor"] == 1.5 and len(p["counts"]) == 4, p
    print(f"damaged: {len(cases)} damaged copies exit 2 with one FILE:LINE line and no file; a cut "
          "last row is skipped; NCCL INFO lines, launcher tags, #wrong and N/A are handled")


def check_calibrate(tmp):
    out = os.path.join(tmp, "ar.jsonl")
    prof = os.path.join(tmp, "ar.profile.json")
    run(["import", log("ncclt-all_reduce-H100-1x8-1.txt"), "--out", out], 0)
    p = run(["calibrate", "--results", out, "--out", prof], 0)
    assert "62 used" in p.stdout and "models describe pipelined" in p.stdout, p.stdout
    profile = json.load(open(prof))
    colls = [m["collective"] for m in profile["models"]]
    assert colls == ["all_reduce"], colls
    # The profile predicts the log's own large sizes within a few percent (the fit saw them).
    p = run(["predict", "--profile", prof, "--collective", "all_reduce", "--group-size", "8",
             "--bytes", "1073741824", "--json"], 0)
    t = json.loads(p.stdout)["time_us"]
    assert abs(t / 5212.28 - 1) < 0.1, t
    print(f"calibrate: imported all_reduce H100 1x8 -> profile; predicts 1 GiB at {t:.0f} us "
          "(log: 5212 us)")


def check_gate(tmp):
    # Two imported runs hold one mean per size: the gate must never call a verdict from them.
    base = os.path.join(tmp, "base.jsonl")
    cand = os.path.join(tmp, "cand.jsonl")
    slow = os.path.join(tmp, "slow.txt")
    text = open(log("ncclt-all_reduce-H100-1x8-1.txt")).read()
    # The candidate 50 % slower at every size.
    def slower(m):
        return m.group(1) + "%.2f" % (float(m.group(2)) * 1.5)
    rows = re.sub(r"^(\s+\d+\s+\d+\s+float\s+sum\s+-1\s+)([\d.]+)", slower, text, flags=re.M)
    open(slow, "w").write(rows)
    run(["import", log("ncclt-all_reduce-H100-1x8-1.txt"), "--out", base], 0)
    run(["import", slow, "--out", cand], 0)
    p = run(["gate", "--baseline", base, "--candidate", cand, "--quiet",
             "--json", os.path.join(tmp, "gate.json")], 3)
    rep = json.load(open(os.path.join(tmp, "gate.json")))
    verdicts = {pt["verdict"] for pt in rep["points"]}
    assert verdicts == {"inconclusive"}, verdicts
    assert all("too few samples" in pt["reason"] for pt in rep["points"]), rep["points"][0]
    print(f"gate: two imported runs (candidate 1.5x slower) -> exit 3, {len(rep['points'])} points "
          "inconclusive (one mean per size), no false verdict")


def check_json(tmp):
    src = os.path.join(DATA, "import", "ncclt-json-all_reduce-synthetic-2x2.json")
    out = os.path.join(tmp, "json.jsonl")
    p = run(["import", src, "--out", out], 0)
    recs = records(out)
    ctx, pts = recs[0], recs[1:]
    assert ctx["import"]["format"] == "nccl-tests-json" and ctx["library_versions"] == {"NCCL": "2.26.2"}
    assert ctx["n_hosts"] == 2 and ctx["ranks_per_host"] == [2, 2], ctx
    assert len(pts) == 9, len(pts)  # 5 sizes x 2 variants, minus one "nan" in-place
    per_iter = [p for p in pts if p["stats"]["n"] > 1]
    assert len(per_iter) == 1 and per_iter[0]["stats"]["n"] == 19, [p["stats"]["n"] for p in per_iter]
    assert per_iter[0]["timing"]["timer"] == "cuda_event"
    assert [p["wrong"] for p in pts if p["wrong"]] == [3]
    assert "1 N/A" in p.stdout and "1 size-0" in p.stdout, p.stdout
    # start_time "2026-11-27 10:00:00" has no zone: recorded as written, and said so.
    assert ctx["date"] == "2026-11-27T10:00:00", ctx["date"]
    assert ctx["import"]["date_from"] == "the log: the log's start_time, zone not stated", ctx["import"]
    print("json: nccl-tests -J file imported: hosts from devices, per-iteration times as samples "
          "(first skipped as the tool does), nwrong and nan handled")


# -- issue 44: the newcomer's traps ------------------------------------------------------------

UNNAMED = "ncclt-alltoall-unnamed-H20-1x4.txt"  # all_to_all table, no program name, 4 ranks
OSU_SRUN = "osu-allgather-srun-2x4.txt"        # OSU allgather after `srun -N2 --ntasks-per-node=4`


def synth(name):
    return os.path.join(DATA, "import", name)


def one_error(p, *words):
    """Exactly one error line holding every word; no traceback."""
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("shardbench: error: "), err
    for w in words:
        assert w in err[0], f"{w!r} not in {err[0]!r}"
    return err[0]


def check_unnamed(tmp):
    """Trap 1: a table without its program's name: the candidates it fits, and --collective."""
    out = os.path.join(tmp, "u.jsonl")
    p = run(["import", synth(UNNAMED), "--out", out], 2)
    assert not os.path.exists(out)
    # Every log skipped: one error (no skip lines, no second line) naming the log, why, the fix.
    assert "import: skipping" not in p.stdout, p.stdout
    err = one_error(p, "nothing imported: the log was skipped: " + synth(UNNAMED),
                    "busbw/algbw 0.750 on 4 ranks", "fits all_gather and all_to_all",
                    "pass --collective all_gather or --collective all_to_all", "no file written")
    assert "outside shardcal's collective table" not in err, err  # it is not outside the table
    assert "give a log of a collective" not in err, err  # --collective is the fix here
    # Two logs, both skipped (one undetermined, one point-to-point): one error naming each.
    lat = os.path.join(DATA, "realdata", "osu-latency-GH200-2x1-1.txt")
    p = run(["import", synth(UNNAMED), lat, "--out", out], 2)
    assert "import: skipping" not in p.stdout and not os.path.exists(out), p.stdout
    err = one_error(p, "nothing imported: every log (2) was skipped: ", synth(UNNAMED) + ": ",
                    "pass --collective all_gather", lat + ": ", "point-to-point",
                    "give at least one log of a collective shardcal measures",
                    "(or pass --collective for a log that names none)", "no file written")
    assert "outside shardcal's collective table" not in err, err
    # nccl-tests' own name for it, and OSU's, are accepted; the summary names what it used.
    for name in ("alltoall", "all_to_all", "osu_alltoall", "alltoall_perf"):
        p = run(["import", synth(UNNAMED), "--collective", name, "--out", out], 0)
        line = p.stdout.splitlines()[0]
        assert "an unnamed nccl-tests table -> all_to_all (--collective) on 4 ranks" in line, line
        assert records(out)[1]["collective"] == "all_to_all"
    ctx = records(out)[0]
    assert ctx["import"]["collective_from"].startswith("--collective all_to_all"), ctx["import"]
    # A name that is no collective: the list, with the aliases.
    os.remove(out)
    p = run(["import", synth(UNNAMED), "--collective", "alltoallw", "--out", out], 2)
    one_error(p, "alltoallw", "all_to_all", "alltoall")
    assert not os.path.exists(out)
    print("unnamed: the all_to_all table without a program name lists all_gather/all_to_all and "
          "--collective; alltoall/osu_alltoall/alltoall_perf accepted")


def check_contradiction(tmp):
    """Traps 2 and 3: a collective or a topology the log contradicts is refused with the evidence."""
    out = os.path.join(tmp, "c.jsonl")
    for coll, why in (("all_reduce", "it reduces"), ("allreduce", "it reduces"),
                      ("broadcast", "count column")):
        p = run(["import", synth(UNNAMED), "--collective", coll, "--out", out], 2)
        one_error(p, "contradicts the table", "busbw/algbw 0.750 on 4 ranks", why,
                  "--collective all_gather or --collective all_to_all")
        assert not os.path.exists(out)
    # The rank count read from --hosts x --ranks-per-host when the rank lines are gone: at 8 ranks
    # the ratio 0.75 is no collective's.
    lines = open(synth(UNNAMED)).read().splitlines(keepends=True)
    norank = os.path.join(tmp, "norank.txt")
    open(norank, "w").write("".join(l for l in lines if "Rank" not in l))
    p = run(["import", norank, "--collective", "all_gather", "--hosts", "2", "--ranks-per-host", "4",
             "--out", out], 2)
    one_error(p, "contradicts the table", "0.750 on 8 ranks", "its count column is size / (ranks x element size)")
    run(["import", norank, "--collective", "all_gather", "--hosts", "1", "--ranks-per-host", "4",
         "--out", out], 0)
    os.remove(out)
    # OSU: the srun line says 2 nodes x 4 tasks; --hosts 3 --ranks-per-host 4 would make every
    # size 12 x the block.
    p = run(["import", synth(OSU_SRUN), "--hosts", "3", "--ranks-per-host", "4", "--out", out], 2)
    one_error(p, f"{synth(OSU_SRUN)}:2", "srun -N2 --ntasks-per-node=4", "contradicts",
              "2 host(s) x 4 rank(s) per host", "drop --hosts/--ranks-per-host")
    assert not os.path.exists(out)
    for flags in (["--hosts", "2", "--ranks-per-host", "8"], ["--hosts", "4", "--ranks-per-host", "2"]):
        run(["import", synth(OSU_SRUN)] + flags + ["--out", out], 2)
        assert not os.path.exists(out)
    # Agreeing flags, or none: the launch line's shape; bytes = 8 ranks x the block.
    for flags in ([], ["--hosts", "2", "--ranks-per-host", "4"]):
        run(["import", synth(OSU_SRUN)] + flags + ["--out", out], 0)
        recs = records(out)
        assert recs[0]["world"] == 8 and recs[0]["n_hosts"] == 2, recs[0]
        assert recs[1]["bytes"] == 8 * 8 and recs[1]["group_size"] == 8, recs[1]
    # Other launchers' spellings of ranks per host (issue 44's leftovers): the same 2 x 4 shape,
    # so --hosts 3 --ranks-per-host 4 is refused and no flags import 8 ranks; two options that
    # disagree are no evidence (flags asked for).
    body = open(synth(OSU_SRUN)).read().splitlines(keepends=True)[2:]
    path = os.path.join(tmp, "spelled.txt")
    os.remove(out)
    for launch in ("srun -N2 --tasks-per-node=4 ./osu_allgather",
                   "mpiexec.hydra -n 8 -ppn 4 ./osu_allgather",
                   "mpirun -np 8 -perhost 4 ./osu_allgather",
                   "mpirun -np 8 --map-by ppr:4:node:PE=2 ./osu_allgather"):
        open(path, "w").write(launch + "\n" + "".join(body))
        p = run(["import", path, "--hosts", "3", "--ranks-per-host", "4", "--out", out], 2)
        one_error(p, "contradicts the log's launch line", "2 host(s) x 4 rank(s) per host")
        assert not os.path.exists(out)
        run(["import", path, "--out", out], 0)
        recs = records(out)
        assert recs[0]["world"] == 8 and recs[0]["n_hosts"] == 2, (launch, recs[0])
        os.remove(out)
    open(path, "w").write("mpirun -np 8 -ppn 4 --map-by ppr:2:node ./osu_allgather\n" + "".join(body))
    p = run(["import", path, "--out", out], 2)
    one_error(p, "names no hosts", "-ppn gives 4 rank(s) per host but --map-by gives 2",
              "--hosts H --ranks-per-host R")
    assert not os.path.exists(out)
    # A launch line that contradicts itself: the stated rank count wins, the rest is not evidence.
    # `-np 8 -H node1:8,node2:8` (slots are capacity) ran 8 ranks, not 2 x 8; `-np 16 -N 8 -H
    # a,b,c,d` ran 16, not 4 x 8.
    body = open(synth(OSU_SRUN)).read().splitlines(keepends=True)[2:]
    out = os.path.join(tmp, "c2.jsonl")
    for launch, ranks, truth, wrong in (
            ("mpirun -np 8 -H node1:8,node2:8 ./osu_allgather", 8, ("1", "8"), ("2", "8")),
            ("mpirun -np 16 -N 8 -H a,b,c,d ./osu_allgather", 16, ("2", "8"), ("4", "8"))):
        path = os.path.join(tmp, "selfcontra.txt")
        open(path, "w").write(launch + "\n" + "".join(body))
        # Without flags: not imported as the line's hosts x slots; the flags are asked for.
        p = run(["import", path, "--out", out], 2)
        one_error(p, "names no hosts", f"gives only {ranks} rank(s)", f"states {ranks} ranks",
                  "--hosts H --ranks-per-host R")
        assert not os.path.exists(out)
        # The true shape is accepted, bytes = ranks x the block.
        run(["import", path, "--hosts", truth[0], "--ranks-per-host", truth[1], "--out", out], 0)
        recs = records(out)
        assert recs[0]["world"] == ranks and recs[0]["n_hosts"] == int(truth[0]), recs[0]
        assert recs[1]["bytes"] == 8 * ranks and recs[1]["group_size"] == ranks, recs[1]
        assert "states %d ranks" % ranks in recs[0]["import"]["launch"]["inconsistent"], recs[0]["import"]
        os.remove(out)
        # The line's own hosts x slots contradict the stated rank count: refused.
        p = run(["import", path, "--hosts", wrong[0], "--ranks-per-host", wrong[1], "--out", out], 2)
        one_error(p, "contradicts the log's launch line", f"which ran {ranks} rank(s)")
        assert not os.path.exists(out)
    # Launch lines of other programs are not the benchmark's shape; two benchmark launch lines of
    # different shapes: neither is used, and the summary says so.
    for pre, rc in (("+ srun -N1 -n1 nvidia-smi -L\nGPU 0: NVIDIA H100\n"
                     "+ srun -N2 --ntasks-per-node=4 ./osu_allgather\n", 0),
                    ("srun -N2 --ntasks-per-node=4 ./osu_allgather\n"
                     "srun -N1 --ntasks-per-node=8 ./osu_allgather\n", 2)):
        path = os.path.join(tmp, "launches.txt")
        open(path, "w").write(pre + "".join(body))
        p = run(["import", path, "--out", out], rc)
        if rc == 0:
            recs = records(out)
            assert recs[0]["world"] == 8 and recs[0]["n_hosts"] == 2, recs[0]
            assert recs[0]["import"]["launch"]["line"] == 3, recs[0]["import"]["launch"]
            os.remove(out)
        else:
            one_error(p, "names no hosts", "lines 1 (", "different shapes; neither is used")
            assert not os.path.exists(out)
            p = run(["import", path, "--hosts", "1", "--ranks-per-host", "8", "--out", out], 0)
            assert "different shapes; neither is used" in p.stdout, p.stdout
            assert "neither is used" in records(out)[0]["import"]["launch_ignored"]
            os.remove(out)
    # Huge shapes: refused with one line, exit 2, no abort and no file.
    for launch in ("srun -N 4096 --ntasks-per-node=4096 ./osu_allgather",
                   "srun -N 100000 --ntasks-per-node=100000 ./osu_allgather",
                   "mpirun -np 2000000 ./osu_allgather"):
        path = os.path.join(tmp, "huge.txt")
        open(path, "w").write(launch + "\n" + "".join(body))
        p = run(["import", path, "--out", out], 2)
        one_error(p, f"{path}:1:", "more than the 1048576", "nothing written")
        assert not os.path.exists(out)
    p = run(["import", synth(OSU_SRUN), "--hosts", "100000", "--ranks-per-host", "100000",
             "--out", out], 2)
    one_error(p, "10000000000 ranks, more than the 1048576")
    assert not os.path.exists(out)
    # The rank lines are evidence too: they name more hosts than --hosts.
    out = os.path.join(tmp, "c.jsonl")
    two = log("ncclt-all_reduce-H100-2x8-1.txt")
    p = run(["import", two, "--hosts", "1", "--ranks-per-host", "16", "--out", out + ".2"], 2)
    one_error(p, "rank lines name 2 hosts", "--hosts says 1")
    assert not os.path.exists(out + ".2")
    print("contradiction: --collective all_reduce/allreduce/broadcast on an all_to_all table, "
          "all_gather at 8 ranks, OSU --hosts 3/2x8/4x2 against `srun -N2 --ntasks-per-node=4`, "
          "--hosts 1 against two hosts' rank lines: refused with the evidence, nothing written; "
          "self-contradicting launch lines (-np 8 -H n1:8,n2:8; -np 16 -N 8 -H a,b,c,d) keep the "
          "rank count and take the true flags; nvidia-smi's srun line ignored; disagreeing "
          "benchmark launch lines unused and said; huge shapes refused")


def check_provenance(tmp):
    """Trap 10: the run's date and the host names from the log when it has them."""
    out = os.path.join(tmp, "p.jsonl")
    run(["import", synth(OSU_SRUN), "--out", out], 0)
    ctx = records(out)[0]
    assert ctx["date"] == "2025-11-04T10:15:02Z", ctx["date"]  # `date` printed before the run
    assert "line 1" in ctx["import"]["date_from"], ctx["import"]
    assert "srun -N2" in ctx["import"]["launch"]["text"], ctx["import"]
    # mpirun_rsh -np 2 a100-01 a100-01: one host named a100-01, 2 ranks on it.
    run(["import", log("osu-allreduce-A100-1x2-1.txt"), "--out", out], 0)
    ctx = records(out)[0]
    assert [h["name"] for h in ctx["hosts"]] == ["a100-01"] and ctx["world"] == 2, ctx["hosts"]
    assert "host names from the launch line" in ctx["import"]["topology_from"], ctx["import"]
    assert "states no date" in ctx["import"]["date_from"], ctx["import"]  # said, not pretended
    # A date with an offset is converted to UTC; a zone name shardbench cannot convert is not
    # used: the date is the import's time, and date_from names the line and why.
    text = open(synth(OSU_SRUN)).read().splitlines(keepends=True)
    for first, want in (("2025-11-04 11:15:02+01:00\n", "2025-11-04T10:15:02Z"),
                        ("Tue Nov  4 11:15:02 CET 2025\n", None)):
        path = os.path.join(tmp, "dated.txt")
        open(path, "w").write(first + "".join(text[1:]))
        before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        p = run(["import", path, "--out", out], 0)
        after = datetime.datetime.now(datetime.timezone.utc)
        ctx = records(out)[0]
        if want:
            assert ctx["date"] == want, ctx["date"]
            assert "line 1 (`2025-11-04 11:15:02+01:00`)" in ctx["import"]["date_from"], ctx["import"]
        else:
            got = datetime.datetime.fromisoformat(ctx["date"].replace("Z", "+00:00"))
            assert before <= got <= after, (ctx["date"], before, after)  # the import's time
            df = ctx["import"]["date_from"]
            assert df.startswith("the import's time (line 1 (`Tue Nov  4 11:15:02 CET 2025`)"), df
            assert "names the zone CET, which shardbench does not convert" in df and "not used" in df, df
            assert "states no date" not in df, df
            assert "names the zone CET" in p.stdout, p.stdout
    print("provenance: run date from a `date` line (UTC, offsets converted), host names from the "
          "launch line (mpirun_rsh), `states no date` said when the log has none")


def main():
    global SB, DATA
    check, SB, source = sys.argv[1], sys.argv[2], sys.argv[3]
    DATA = os.path.join(source, "tests", "data")
    with tempfile.TemporaryDirectory() as tmp:
        globals()["check_" + check](tmp)


if __name__ == "__main__":
    main()

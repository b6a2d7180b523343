#!/usr/bin/env python3
"""Issue 44, the newcomer's traps after import: calibrate, predict, the profile module and the
README, each with a wrong or contradictory input (copies of tests/data logs made to the formats).

usage: newcomer_test.py CHECK SHARDBENCH SOURCE_DIR [PYTHON]
  results_kind    trap 4: a profile, a log or a sweep config given as --results is named as such
  mixed           trap 5: logs of different clusters are not merged without --allow-mixed
  predict_hosts   trap 6: predict requires --hosts when it cannot price hosts=1, says what it assumed
  floor           trap 11: an implausible small-message floor is warned and recorded
  profile_module  trap 8: python -m shardcal.profile: no traceback for a user's mistake (PYTHON: the venv's)
  readme          trap 9: the README's report command is the one that works
  plan_text       trap 7 (its CLI half): `plan` on a profile without all_gather prints its detour readably
  series_names    realdata_eval.py --hosts-series takes a log's host count from the log, not its
                  name; a hosts<H>/<H>nodes name over ranks that all name one host is an error
Each check exits 0 after printing what it compared, non-zero with the reason otherwise.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SB = SRC = PY = None


def run(args, rc=None, exe=None, cwd=None, env=None):
    p = subprocess.run((exe or [SB]) + args, capture_output=True, text=True, timeout=300,
                       stdin=subprocess.DEVNULL, cwd=cwd, env=env)
    if rc is not None and p.returncode != rc:
        sys.exit(f"FAIL: {' '.join((exe or [SB]) + args)} exited {p.returncode}, expected {rc}\n"
                 f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def one_line(p, prefix, *words):
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(prefix), err
    assert "Traceback" not in p.stderr
    for w in words:
        assert w in err[0], f"{w!r} not in {err[0]!r}"
    return err[0]


def data(*parts):
    return os.path.join(SRC, "tests", "data", *parts)


def records(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


UNNAMED = None  # the all_to_all table without a program name (tests/data/import), set in main


def cluster_copy(tmp, name, gpu, host):
    """The H20 all_to_all log as if run on another cluster: its GPU and host names replaced."""
    text = open(UNNAMED).read().replace("NVIDIA H20", gpu).replace("h20-node07", host)
    path = os.path.join(tmp, name + ".txt")
    open(path, "w").write(text)
    out = os.path.join(tmp, name + ".jsonl")
    run(["import", path, "--collective", "alltoall", "--out", out], 0)
    return out


def check_results_kind(tmp):
    out = os.path.join(tmp, "p.json")
    res = os.path.join(tmp, "r.jsonl")
    run(["import", UNNAMED, "--collective", "alltoall", "--out", res], 0)
    run(["calibrate", "--results", res, "--out", out], 0)
    bad = os.path.join(tmp, "bad.json")
    cases = [(out, ["a calibrated profile (shardcal.profile)", "not sweep results", "--profile"]),
             (UNNAMED, ["a benchmark log", "shardbench import " + UNNAMED]),
             (os.path.join(SRC, "configs", "local.json"), ["a sweep config", "shardbench sweep --config"])]
    # The profile written on one line (json.dumps) reads as a JSON line without a "type": same.
    one = os.path.join(tmp, "oneline.json")
    open(one, "w").write(json.dumps(json.load(open(out))) + "\n")
    cases.append((one, ["a calibrated profile"]))
    for path, words in cases:
        p = run(["calibrate", "--results", path, "--out", bad], 2)
        line = one_line(p, f"shardbench: error: {path}: this is ", *words)
        assert "invalid JSON" not in line and "column" not in line.split(":")[2], line
        assert not os.path.exists(bad)
    # Real results still read (the check only runs when a file is not results).
    run(["calibrate", "--results", res, "--out", bad], 0)
    print(f"results_kind: a profile (pretty and one-line), a log and a sweep config as --results are "
          f"named as such, exit 2, nothing written")


def check_mixed(tmp):
    h20 = cluster_copy(tmp, "h20", "NVIDIA H20", "h20-node07")
    gh = cluster_copy(tmp, "gh200", "NVIDIA GH200 480GB", "nid001234")
    a100 = cluster_copy(tmp, "a100", "NVIDIA A100-SXM4-80GB", "dgx-a100-03")
    same = cluster_copy(tmp, "h20b", "NVIDIA H20", "h20-node08")   # another node of the H20 cluster
    other_hosts = cluster_copy(tmp, "h20c", "NVIDIA H20", "gpu-pod-x7q2")  # same GPU, other hosts
    prof = os.path.join(tmp, "mixed.json")
    p = run(["calibrate", "--results", h20, gh, a100, "--out", prof], 2)
    one_line(p, "shardbench: error: ", "3 different clusters", "NVIDIA H20", "NVIDIA GH200 480GB",
             "other GPUs", "--allow-mixed", "nothing written")
    assert not os.path.exists(prof)
    # The same GPUs on hosts of another name (or named by IP, digit-led, a container's hex id):
    # host names alone never refuse when both name matching GPUs; one warning line says so.
    hexed = cluster_copy(tmp, "h20hex", "NVIDIA H20", "3f2a9c0d1e7b")
    for other, host in ((other_hosts, "gpu-pod-x7q2"), (hexed, "3f2a9c0d1e7b")):
        p = run(["calibrate", "--results", h20, other, "--out", prof], 0)
        warn = [l for l in p.stderr.splitlines() if l.startswith("calibrate: warning: ")]
        assert len(warn) == 1, p.stderr
        for w in ("h20-node07", host, "the same GPUs on other hosts", "fitted as one cluster"):
            assert w in warn[0], (w, warn[0])
        pv = json.load(open(prof))["provenance"]
        assert pv["mixed_clusters"] is False and len(pv["clusters"]) == 1, pv["clusters"]
        assert any("the same GPUs on other hosts" in w for w in pv["warnings"]), pv["warnings"]
        os.remove(prof)
    # Logs without GPU names (OSU): host-name families decide when every name has a letter
    # prefix (node-a* vs gpu-x*: refused); IP-named and digit-led hosts of one cluster have no
    # family to compare: accepted with a warning.
    body = open(data("import", "osu-allgather-srun-2x4.txt")).read().splitlines(keepends=True)[2:]

    def osu(name, hosts):
        path = os.path.join(tmp, name + ".txt")
        open(path, "w").write(f"mpirun -np 4 -H {hosts} ./osu_allgather\n" + "".join(body))
        out = os.path.join(tmp, name + ".jsonl")
        run(["import", path, "--out", out], 0)
        assert [h["name"] for h in records(out)[0]["hosts"]] == hosts.split(","), records(out)[0]
        return out
    p = run(["calibrate", "--results", osu("na", "node-a1,node-a2"), osu("gx", "gpu-x1,gpu-x2"),
             "--out", prof], 2)
    one_line(p, "shardbench: error: ", "2 different clusters", "other hosts", "node-a1", "gpu-x1")
    assert not os.path.exists(prof)
    for a, b in (("10.0.0.1,10.0.0.2", "10.0.0.3,10.0.0.4"), ("4u-gpu1,4u-gpu2", "4u-gpu3,4u-gpu4")):
        p = run(["calibrate", "--results", osu("a", a), osu("b", b), "--out", prof], 0)
        warn = [l for l in p.stderr.splitlines() if l.startswith("calibrate: warning: ")]
        assert len(warn) == 1 and "named without a letter prefix" in warn[0], p.stderr
        assert a.split(",")[0] in warn[0] and b.split(",")[0] in warn[0], warn[0]
        assert json.load(open(prof))["provenance"]["mixed_clusters"] is False
        os.remove(prof)
    # Asked for: fitted, and the provenance lists the clusters that went in.
    p = run(["calibrate", "--results", h20, gh, a100, "--out", prof, "--allow-mixed"], 0)
    assert "--allow-mixed: fitting results of 3 clusters" in p.stdout, p.stdout
    pv = json.load(open(prof))["provenance"]
    assert pv["mixed_clusters"] is True and len(pv["clusters"]) == 3, pv["clusters"]
    assert {g for c in pv["clusters"] for g in c["gpus"]} == {"NVIDIA H20", "NVIDIA GH200 480GB",
                                                               "NVIDIA A100-SXM4-80GB"}
    # Two nodes of one cluster are one cluster.
    one = os.path.join(tmp, "one.json")
    run(["calibrate", "--results", h20, same, "--out", one], 0)
    pv = json.load(open(one))["provenance"]
    assert pv["mixed_clusters"] is False and len(pv["clusters"]) == 1, pv["clusters"]
    # Different GPU names are refused whatever the hosts are called.
    ip_gh = cluster_copy(tmp, "gh200ip", "NVIDIA GH200 480GB", "10.0.0.9")
    ip_h20 = cluster_copy(tmp, "h20ip", "NVIDIA H20", "10.0.0.8")
    ipprof = os.path.join(tmp, "ip.json")
    p = run(["calibrate", "--results", ip_h20, ip_gh, "--out", ipprof], 2)
    one_line(p, "shardbench: error: ", "2 different clusters", "other GPUs", "10.0.0.8", "10.0.0.9",
             "--allow-mixed")
    assert not os.path.exists(ipprof)
    print("mixed: H20 + GH200 + A100 refused (other GPUs, also on IP-named hosts), H20 on other "
          "or hex-named hosts accepted with a warning, OSU logs of node-a*/gpu-x* hosts refused, "
          "IP-named and digit-led hosts of one cluster accepted with a warning, --allow-mixed "
          "fits and lists 3 clusters, two H20 nodes calibrate together")


def check_predict_hosts(tmp):
    # A profile measured across 2 hosts only (the 2x8 H100 log).
    res = os.path.join(tmp, "two.jsonl")
    prof = os.path.join(tmp, "two.json")
    run(["import", data("realdata", "ncclt-all_reduce-H100-2x8-1.txt"), "--out", res], 0)
    run(["calibrate", "--results", res, "--out", prof], 0)
    base = ["predict", "--profile", prof, "--collective", "all_reduce", "--group-size", "16", "--bytes", "3MiB"]
    p = run(base, 2)
    one_line(p, "shardbench: error: --hosts is required", "only across hosts=2", "--hosts 2 --ranks-per-host 8")
    assert p.stdout == ""
    p = run(base + ["--hosts", "2", "--json"], 0)
    j = json.loads(p.stdout)
    assert j["hosts"] == 2 and "assumed" not in j and not j["extrapolated"], j
    # nccl-tests' name works here too.
    run(["predict", "--profile", prof, "--collective", "allreduce", "--group-size", "16", "--hosts", "2",
         "--bytes", "3MiB"], 0)
    # A profile with hosts=1 and hosts=2 models: hosts=1, and the output says it was assumed.
    dflt = os.path.join(SRC, "configs", "profiles", "dtensor-default.json")
    q = ["predict", "--profile", dflt, "--collective", "all_gather", "--group-size", "8", "--bytes", "1MiB"]
    p = run(q, 0)
    assert "assumed: hosts=1 (--hosts not given" in p.stdout and "hosts=1, 2" in p.stdout, p.stdout
    j = json.loads(run(q + ["--json"], 0).stdout)
    assert j["hosts"] == 1 and j["assumed"].startswith("hosts=1"), j
    p = run(q + ["--hosts", "2"], 0)
    assert "assumed" not in p.stdout, p.stdout
    print("predict_hosts: a hosts=2-only profile requires --hosts (exit 2, the command to type); "
          "a hosts=1,2 profile prices hosts=1 and says it assumed it")


def floor_copy(tmp, name, floor_us):
    """The OSU allreduce log (A100, one host) with every size under 64 KiB at `floor_us`."""
    src = data("realdata", "osu-allreduce-A100-1x2-1.txt")
    out = []
    for line in open(src):
        m = re.match(r"^(\d+)(\s+)([\d.]+)\s*$", line)
        if m and int(m.group(1)) <= 65536 and floor_us:
            line = f"{m.group(1)}{m.group(2)}{floor_us + int(m.group(1)) / 1e4:.2f}\n"
        out.append(line)
    path = os.path.join(tmp, name + ".txt")
    open(path, "w").write("".join(out))
    res = os.path.join(tmp, name + ".jsonl")
    run(["import", path, "--out", res], 0)
    return res


def check_floor(tmp):
    slow = floor_copy(tmp, "slow", 8000.0)    # ~8 ms: the scheduler's time slice
    prof = os.path.join(tmp, "slow.json")
    p = run(["calibrate", "--results", slow, "--out", prof], 0)
    warn = [l for l in p.stderr.splitlines() if l.startswith("calibrate: warning:")]
    assert len(warn) == 1, p.stderr
    for w in ("all_reduce", "inside one host", "at least 8", "implausible", "oversubscribed cores",
              "busy-polling"):
        assert w in warn[0], (w, warn[0])
    assert json.load(open(prof))["provenance"]["warnings"] == [warn[0][len("calibrate: warning: "):]]
    # The log as measured (2-15 us small messages): no warning.
    fine = floor_copy(tmp, "fine", 0)
    p = run(["calibrate", "--results", fine, "--out", os.path.join(tmp, "fine.json")], 0)
    assert "warning" not in p.stderr, p.stderr
    assert json.load(open(os.path.join(tmp, "fine.json")))["provenance"]["warnings"] == []
    # A sweep on this machine (sim: microseconds) writes no warning record; a warning record as a
    # sweep writes it is repeated by calibrate, once (the file's own points are not checked again).
    res = os.path.join(tmp, "sim.jsonl")
    p = run(["sweep", "--backend", "sim", "--world", "4", "--config",
             os.path.join(SRC, "tests", "calibrate", "configs", "cli.json"), "--out", res], 0)
    assert "sweep: warning" not in p.stderr and all(r["type"] != "warning" for r in records(res)), p.stderr
    rec = {"type": "warning", "kind": "implausible_small_message_floor", "series": "all_gather mesh=4 dim=0",
           "hosts_spanned": 1, "floor_s": 0.0081, "limit_s": 0.001, "max_bytes": 32768, "points": 5,
           "message": "all_gather mesh=4 dim=0 (inside one host): every message up to 32768 B (5 sizes) "
                      "took at least 8.1 ms, implausible; likely causes: oversubscribed cores"}
    try:  # the record as the schema describes it (Debian's python3-jsonschema, when present)
        import jsonschema
        jsonschema.validate(rec, json.load(open(os.path.join(SRC, "configs", "schema", "results.schema.json"))))
    except ImportError:
        pass
    with open(res, "a") as f:
        f.write(json.dumps(rec) + "\n")
    p = run(["calibrate", "--results", res, "--out", os.path.join(tmp, "sim.json")], 0)
    warn = [l for l in p.stderr.splitlines() if l.startswith("calibrate: warning:")]
    assert len(warn) == 1 and "8.1 ms" in warn[0] and "(recorded by the sweep)" in warn[0], p.stderr
    print("floor: an 8 ms floor inside a host warns (causes named) and is kept in the profile's "
          "provenance; the measured log and a sim sweep do not; a sweep's warning record is repeated")


def check_profile_module(tmp):
    prof = os.path.join(SRC, "configs", "profiles", "dtensor-default.json")
    exe = [PY, "-m", "shardcal.profile"]
    p = run([prof, "all_reduce", "8", "2", "3MiB"], 0, exe=exe)
    assert re.match(r"^[\d.]+ us \(95 % interval ", p.stdout), p.stdout
    p2 = run([prof, "allreduce", "8", "2", "3145728"], 0, exe=exe)
    assert p2.stdout == p.stdout, (p.stdout, p2.stdout)     # 3MiB = 3145728 B; alias = name
    bad = [([prof, "all_reduce", "8", "2", "3 pages"], ["BYTES '3 pages'", "3MiB"]),
           ([prof, "all_reduce", "eight", "2", "1MiB"], ["GROUP_SIZE 'eight'"]),
           ([prof, "all_reduce", "8", "3", "1MiB"], ["not a multiple of HOSTS 3"]),
           ([prof, "hypercube", "8", "2", "1MiB"], ["unknown collective 'hypercube'"]),
           ([os.path.join(tmp, "missing.json"), "all_reduce", "8", "2", "1MiB"], ["cannot read the profile"]),
           ([os.path.join(SRC, "README.md"), "all_reduce", "8", "2", "1MiB"], ["not valid JSON"]),
           ([prof, "all_reduce"], ["expected 5 arguments", "usage"])]
    for args, words in bad:
        p = run(args, 2, exe=exe)
        one_line(p, "shardcal.profile: error: ", *words)
        assert p.stdout == ""
    print(f"profile_module: 3MiB and 3145728, all_reduce and allreduce agree; {len(bad)} mistakes: one "
          "line, exit 2, no traceback")


def check_readme(tmp):
    readme = open(os.path.join(SRC, "README.md")).read()
    docs = [readme] + [open(os.path.join(SRC, "docs", f)).read() for f in sorted(os.listdir(os.path.join(SRC, "docs")))
                       if f.endswith(".md")]
    # Every command line that runs the report uses the venv's python (which has the package).
    interp = re.compile(r"(\S*python\S*|\$\{?\w+\}?)\s+reports/make_report\.py")
    runs = [m.group(1) for d in docs for l in d.splitlines() for m in interp.finditer(l)]
    assert runs, "no make_report.py command in README/docs"
    wrong = [r for r in runs if r.strip("`") not in (".venv/bin/python", "$SHARDCAL_PYTHON", "${SHARDCAL_PYTHON}")]
    assert not wrong, wrong
    # The Reports section says which interpreter: not Debian's plain python3.
    sec = readme.split("\n## Reports", 1)[1].split("\n## ", 1)[0]
    assert ".venv/bin/python" in sec and "Use\nDebian's `/usr/bin/python3`" not in sec, sec[-400:]
    assert not re.search(r"Use\s+Debian's\s+`/usr/bin/python3`", sec), sec[-400:]
    # What the README says is true: Debian's python3 lacks the package (exit 2 and says so), the
    # venv's runs the report's --help.
    mr = os.path.join(SRC, "reports", "make_report.py")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    # -I: no user site-packages, no PYTHONPATH (a python without the package, as the README says).
    p = run([mr, "--help"], exe=["/usr/bin/python3", "-I"], cwd=tmp, env=env)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "not installed" in p.stderr and ".venv/bin/python" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    p = run([mr, "--help"], 0, exe=[PY], cwd=tmp)
    assert "--profile" in p.stdout
    print(f"readme: {len(runs)} report command(s) in README/docs use the venv's python; the Reports "
          "section names it; it runs the report")


def check_plan_text(tmp):
    res = os.path.join(tmp, "noag.jsonl")
    prof = os.path.join(tmp, "noag.json")
    run(["import", data("realdata", "ncclt-all_reduce-H100-1x8-1.txt"),
         data("realdata", "ncclt-reduce_scatter-H100-1x8-1.txt"), "--out", res], 0)
    run(["calibrate", "--results", res, "--out", prof], 0)
    p = run(["plan", "--profile", prof, "--mesh", "8", "--ranks-per-host", "8", "--shape", "1024x1024",
             "--from", "S(0)", "--to", "R"], 0)
    steps = [l for l in p.stdout.splitlines() if re.match(r"^\s+\d+\. mesh dim", l)]
    assert any("S(0) -> P(sum) local_embed_partial" in l for l in steps), p.stdout
    # Every step line: "N. mesh dim D: CHANGE KIND ..." with the change and the kind apart.
    for l in steps:
        assert re.match(r"^\s+\d+\. mesh dim \d+: \S+ -> \S+ +[a-z_]+ ", l), l
    assert "P(sum)local" not in p.stdout, p.stdout
    print("plan_text: the all_gather-less profile's detour S(0) -> P(sum) local_embed_partial, all_reduce "
          "prints with its columns apart")


def check_series_names(tmp):
    ev = os.path.join(SRC, "calibrate", "scripts", "realdata_eval.py")
    series = os.path.join(tmp, "series")
    os.mkdir(series)
    # The synthetic 2- and 4-node all_reduce logs under names without a usable count: one none,
    # one whose "8x2" reads as 8 hosts (its rank lines name 4), and a note that is no log.
    shutil.copy(data("scaling", "synth-all_reduce-2x8.txt"), os.path.join(series, "ar-run-a.txt"))
    shutil.copy(data("scaling", "synth-all_reduce-4x8.txt"), os.path.join(series, "ar-8x2.txt"))
    open(os.path.join(series, "notes.txt"), "w").write("runs of 2026-11-29\n")
    # A one-node log named GPUs x nodes: "8x1" reads as 8 hosts, its ranks name one: warned, not refused.
    shutil.copy(data("realdata", "ncclt-all_reduce-H100-1x8-1.txt"), os.path.join(series, "ar-h100-8x1.txt"))
    p = run([ev, "--shardbench", SB, "--hosts-series", series, "--json", os.path.join(tmp, "r.json")], 0,
            exe=[sys.executable])
    r = json.load(open(os.path.join(tmp, "r.json")))
    assert sorted(r["hosts"]) == ["1", "2", "4"], r["hosts"]
    assert [(x["fit"], x["target"]) for x in r["rows"]] == [([2], 4)], r["rows"]
    assert "ar-8x2.txt: the name says 8 hosts, the log's host names 4: taken as 4" in p.stderr, p.stderr
    assert "ar-h100-8x1.txt: the name says 8 hosts, the log's host names 1: taken as 1" in p.stderr, p.stderr
    assert "ignored: notes.txt (" in p.stderr, p.stderr
    # --hosts would give every log one count: refused with the series.
    p = run([ev, "--shardbench", SB, "--hosts-series", series, "--hosts", "2"], 2, exe=[sys.executable])
    one_line(p, "realdata_eval: --hosts-series DIR takes each log's host count from the log")
    # A 2-node log whose ranks all name one host (containers with one hostname): an error that
    # says how to import it, not a 1-host series.
    text = open(data("scaling", "synth-all_reduce-2x8.txt")).read()
    os.remove(os.path.join(series, "ar-run-a.txt"))
    open(os.path.join(series, "ar-2nodes.txt"), "w").write(re.sub(r" on node\d+ ", " on node ", text))
    p = run([ev, "--shardbench", SB, "--hosts-series", series], 2, exe=[sys.executable])
    one_line(p, "realdata_eval: --hosts-series:", "ar-2nodes.txt", "one host", "--hosts 2")
    # The same as 2x8 (hosts x GPUs, or GPUs x hosts: two hosts or more either way): refused too.
    os.rename(os.path.join(series, "ar-2nodes.txt"), os.path.join(series, "ar-2x8-h100.txt"))
    p = run([ev, "--shardbench", SB, "--hosts-series", series], 2, exe=[sys.executable])
    one_line(p, "realdata_eval: --hosts-series:", "ar-2x8-h100.txt", "one host", "--hosts H")
    print("series_names: host counts from the logs (1, 2, 4), the misleading names warned, the note "
          "ignored, --hosts refused, a one-hostname 2-node log refused with the import to run")


def main():
    global SB, SRC, PY
    check, SB, SRC = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    PY = os.path.abspath(sys.argv[4]) if len(sys.argv) > 4 else sys.executable
    globals()["UNNAMED"] = data("import", "ncclt-alltoall-unnamed-H20-1x4.txt")
    with tempfile.TemporaryDirectory() as tmp:
        globals()["check_" + check](tmp)


if __name__ == "__main__":
    main()

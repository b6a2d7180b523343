#!/usr/bin/env python3
"""The simulated-cluster tests (label `simulate`, docs/SIMULATION.md).

Usage: simulate_test.py determinism|ground_truth|bad_input|direct_run|eager_ring|window_start SHARDBENCH_SMPI SOURCE_DIR WORK_DIR

On a make-platform cluster of 2 hosts x 4 ranks (8 ranks, flat network; mesh 2x2x2: groups of 2 only):
  determinism   the same sweep twice gives identical timing samples, and the results' context
                records the simulation and the simulated hosts (node-0, node-1, 4 ranks each)
  ground_truth  the calibrated bandwidths of the one-way collectives of groups of 2 are within
                +-5 % of what the platform implies (scripts/simulate/check_ground_truth.py), and a
                simulated validate records the simulation in its summary
  bad_input     make-platform, smpirun.sh and the check scripts reject bad input with exit 2
                and one error line; a run failing inside smpirun leaves no temp files
  direct_run    the SMPI build run by itself (not under smpirun) says to use smpirun.sh or a
                native build, in one error line, and exits 2 (not SIGSEGV); no platform needed
  eager_ring    (its own flat platforms: 8 and 16 hosts x 4 ranks and 4 hosts x 1, 25 GB/s 3 us,
                loopback 150 GB/s 1 us) scripts/simulate/eager_ring_probe.c, Open MPI's
                reduce_scatter ring's eager message pattern, built with smpicc and run by
                smpirun.sh: an event simulation of the ring replaying each rank's entry time (when
                it left the barrier) gives SMPI's time within 0.5 %; on 16 x 4 the ranks enter over
                more than 1 us (4 us seen) and every rank entering at once is >= 10 % low, likewise
                on 4 x 1 (3 us seen), on 8 x 4 they enter together; started at one agreed time (the
                probe's `window`) all three enter together (calibrate/scripts/eager_ring.py,
                docs/CALIBRATION.md "Other host counts", "Barrier skew")
  window_start  (its own flat platform: 4 hosts x 1 rank, 25 GB/s 3 us) shardbench's sweep of
                a 64 KiB ring all_gather/reduce_scatter (16 KiB blocks): with "start": "window"
                every rank starts together and the time is the ring's 3 x (3 us + 16 KiB / 25 GB/s)
                within 0.5 %, no sample late; with a 1 us window, too short for the start time
                to arrive, the sample is run again (the window doubled) and the time is the same;
                with the barrier start rank 0 leaves the barrier early and the time is > 1 us
                more (docs/RESULTS_FORMAT.md "Starting a sample")
calibrate runs natively when SHARDCAL_NATIVE_SHARDBENCH names a shardbench, else the SMPI
build runs it as one simulated rank (calibrate does no communication).
"""
import json
import os
import shutil
import subprocess
import sys

MODE, SB, SRC, WORK = sys.argv[1:5]
SIM = os.path.join(SRC, "scripts", "simulate")
CONFIG = os.path.join(SRC, "configs", "simulate", "ground-truth-8.json")
PLAT = os.path.join(WORK, "platform")


# The checking scripts read the collective table through the shardcal package (calibrate/python).
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    p for p in (os.path.join(SRC, "calibrate", "python"), os.environ.get("PYTHONPATH")) if p))


def run(cmd, expect=0, cwd=None):
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=cwd, env=ENV)
    if p.returncode != expect and not (expect is None and p.returncode != 0):
        sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode} (expected {expect})\n"
                 f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def make_platform(out=PLAT, hosts=2, intra=("100", "0.5"), inter=("10", "2"), rph=4):
    """A make-platform flat cluster of `hosts` x `rph` ranks; intra/inter: (GB/s, us)."""
    run([os.path.join(SIM, "make-platform"), "--hosts", str(hosts), "--ranks-per-host", str(rph),
         "--intra-bw", intra[0], "--intra-lat", intra[1], "--inter-bw", inter[0], "--inter-lat", inter[1],
         "--out", out])


def smpirun(np, exe=SB, plat=PLAT):
    """smpirun.sh's command line up to `--` on the platform in `plat`."""
    return [os.path.join(SIM, "smpirun.sh"), "--platform", os.path.join(plat, "platform.xml"),
            "--hostfile", os.path.join(plat, "hostfile"), "--np", str(np), "--shardbench", exe, "--"]


def sweep(out):
    if os.path.exists(out):
        os.remove(out)
    run(smpirun(8) + ["sweep", "--backend", "mpi", "--config", CONFIG, "--out", out])
    with open(out, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def determinism():
    a, b = sweep(os.path.join(WORK, "a.jsonl")), sweep(os.path.join(WORK, "b.jsonl"))
    ctx = a[0]
    assert ctx["type"] == "context", ctx["type"]
    sim = ctx.get("simulation")
    assert sim and sim["np"] == 8 and "smpi/coll-selector:ompi" in sim["cfg"], sim
    assert sim["platform_params"]["inter_bw_GBps"] == 10.0, sim
    hosts = [(h["name"], len(h["ranks"])) for h in ctx["hosts"]]
    assert hosts == [("node-0", 4), ("node-1", 4)], hosts
    pa = {r["key"]: r["samples_s"] for r in a[1:] if "samples_s" in r}
    pb = {r["key"]: r["samples_s"] for r in b[1:] if "samples_s" in r}
    assert len(pa) == 36 and pa.keys() == pb.keys(), (len(pa), len(pb))
    diff = [k for k in pa if pa[k] != pb[k]]
    assert not diff, f"{len(diff)} point(s) differ between two runs, e.g. {diff[0]}: {pa[diff[0]]} vs {pb[diff[0]]}"
    assert all(s > 0 for v in pa.values() for s in v)
    print(f"determinism: {len(pa)} points, identical samples in two runs; hosts {hosts}")


def ground_truth():
    sweep(os.path.join(WORK, "gt.jsonl"))
    prof = os.path.join(WORK, "profile.json")
    native = os.environ.get("SHARDCAL_NATIVE_SHARDBENCH", "")
    cal = ["calibrate", "--results", os.path.join(WORK, "gt.jsonl"), "--out", prof, "--name", "sim8"]
    if native:
        run([native] + cal)
    else:
        run(smpirun(1) + cal)
    p = run([sys.executable, os.path.join(SIM, "check_ground_truth.py"), "--profile", prof,
             "--platform-json", os.path.join(PLAT, "platform.json"), "--tolerance", "0.05"])
    print(p.stdout)
    assert p.stdout.count(" pass") == 6, "expected 6 judged models (3 one-way x intra/inter)"
    validate_says_simulated()


def validate_says_simulated():
    """validate's summary carries the same simulation block as a sweep's context."""
    cfg, out = os.path.join(WORK, "validate.json"), os.path.join(WORK, "v.jsonl")
    with open(cfg, "w", encoding="utf-8") as f:
        json.dump({"name": "sim8-validate", "meshes": ["2x4"],
                   "transitions": [{"mesh": "2x4", "from": "S(0),R", "to": "R,R"}],
                   "sizes": [262144], "dtypes": ["f32"], "warmup": 1,
                   "iterations": {"min": 2, "max": 2}, "time_budget_s": 0.001,
                   "buffer_rotation": {"bytes": 0, "max_slots": 1}}, f)
    run(smpirun(8) + [
         "validate", "--backend", "mpi", "--profile",
         os.path.join(SRC, "configs", "profiles", "dtensor-default.json"), "--config", cfg, "--out", out])
    with open(out, encoding="utf-8") as f:
        summary = [json.loads(line) for line in f if line.strip()][-1]
    sim = summary.get("simulation")
    assert summary["schema"] == "shardcal.validate.summary" and sim, summary
    with open(os.path.join(WORK, "gt.jsonl"), encoding="utf-8") as f:
        ctx = json.loads(f.readline())
    assert sim == ctx["simulation"], (sim, ctx["simulation"])
    print(f"validate: summary records the simulation (platform_sha256 {sim.get('platform_sha256')})")


def bad_input():
    mp = os.path.join(SIM, "make-platform")
    bad_profile, not_validate = os.path.join(WORK, "bad-profile.json"), os.path.join(WORK, "nv.jsonl")
    with open(bad_profile, "w", encoding="utf-8") as f:
        json.dump({"schema": "shardcal.profile", "models": [{"collective": "broadcast"}]}, f)
    with open(not_validate, "w", encoding="utf-8") as f:
        f.write('{"type": "context"}\n{"type": "point", "key": "k"}\n')
    cases = [
        [mp, "--hosts", "0", "--ranks-per-host", "8", "--intra-bw", "1", "--intra-lat", "1",
         "--inter-bw", "1", "--inter-lat", "1", "--out", os.path.join(WORK, "x")],
        [mp, "--hosts", "2", "--ranks-per-host", "8", "--intra-bw", "-1", "--intra-lat", "1",
         "--inter-bw", "1", "--inter-lat", "1", "--out", os.path.join(WORK, "x")],
        [mp, "--hosts", "3", "--ranks-per-host", "8", "--intra-bw", "1", "--intra-lat", "1",
         "--inter-bw", "1", "--inter-lat", "1", "--topology", "fat-tree", "--hosts-per-switch", "2",
         "--out", os.path.join(WORK, "x")],
        [os.path.join(SIM, "smpirun.sh"), "--platform", os.path.join(PLAT, "platform.xml"),
         "--hostfile", os.path.join(PLAT, "hostfile"), "--np", "9", "--shardbench", SB, "--", "info"],
        [os.path.join(SIM, "smpirun.sh"), "--platform", "/nonexistent.xml", "--hostfile",
         os.path.join(PLAT, "hostfile"), "--np", "2", "--", "info"],
        [sys.executable, os.path.join(SIM, "check_ground_truth.py"), "--profile", bad_profile,
         "--platform-json", os.path.join(PLAT, "platform.json")],
        [sys.executable, os.path.join(SIM, "check_ground_truth.py"), "--profile"],
        [sys.executable, os.path.join(SIM, "compare_validate.py"), not_validate, not_validate],
        [sys.executable, os.path.join(SIM, "compare_validate.py"), not_validate],
    ]
    for c in cases:
        p = run(c, expect=2)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        assert len(lines) == 1 and "error:" in lines[0], p.stderr
    assert not os.path.exists(os.path.join(WORK, "x", "platform.xml"))
    # a run that fails inside the simulation leaves no smpirun temp files and nothing on stdout
    cwd = os.path.join(WORK, "cwd")
    os.makedirs(cwd)
    p = run(smpirun(2) + [
             "sweep", "--backend", "mpi", "--config", "/nonexistent.json", "--out", "r.jsonl"],
            expect=None, cwd=cwd)
    assert os.listdir(cwd) == [], os.listdir(cwd)
    assert "Execution failed" not in p.stdout and "smpitmp" not in p.stdout, p.stdout
    print(f"bad input: {len(cases)} cases, exit 2 with one error line each")


def direct_run():
    """The shared object smpirun loads, executed directly: a message and exit 2, never a signal."""
    for args in (["calibrate", "--results", os.path.join(WORK, "r.jsonl"), "--out",
                  os.path.join(WORK, "p.json")], ["--help"], []):
        p = subprocess.run([SB] + args, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           cwd=WORK)
        assert p.returncode == 2, f"{SB} {' '.join(args)}: exit {p.returncode} (negative: a signal), expected 2\n{p.stderr[-2000:]}"
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        assert len(lines) == 1 and lines[0].startswith("shardbench: error: ") and \
            "scripts/simulate/smpirun.sh" in lines[0] and "native build" in lines[0], p.stderr
        assert p.stdout == "", p.stdout
    assert os.listdir(WORK) == [], os.listdir(WORK)  # nothing written
    print(f"direct run: exit 2 and one line: {lines[0][:100]}...")


def eager_ring():
    probe = os.path.join(WORK, "eager_ring_probe")
    run(["smpicc", "-O1", "-o", probe, os.path.join(SIM, "eager_ring_probe.c")])
    msg = 16384
    # (hosts, ranks per host, staggered, the probe's start argument): 4 x 1 is the barrier skew
    # that the 1-rank-per-host host series' 4-host latency carries (rank 0 leaves 3 us early;
    # docs/CALIBRATION.md "Barrier skew"). A common start (`window`) removes the skew: every rank
    # enters together and the at-once simulation is SMPI's time (the probe exits 1 if a rank
    # started late).
    for hosts, rph, skewed, start in ((8, 4, False, []), (16, 4, True, []), (4, 1, True, []),
                                      (8, 4, False, ["window"]), (16, 4, False, ["window"]),
                                      (4, 1, False, ["window"])):
        plat = os.path.join(WORK, f"flat-{hosts}x{rph}")
        if not os.path.isdir(plat):
            make_platform(plat, hosts, intra=("150", "1"), inter=("25", "3"), rph=rph)
        p = run(smpirun(rph * hosts, probe, plat) + [str(msg)] + start)
        out = os.path.join(WORK, f"probe-{hosts}x{rph}{''.join('-' + a for a in start)}.txt")
        with open(out, "w", encoding="utf-8") as f:
            f.write(p.stdout)
        q = run(["/usr/bin/python3", os.path.join(SRC, "calibrate", "scripts", "eager_ring.py"),
                 "probe", out, "--hosts", str(hosts), "--ranks-per-host", str(rph),
                 "--message", str(msg), "--check"])
        print(q.stdout.strip())
        what = f"{hosts} hosts x {rph}, {' '.join(start) or 'barrier'} start"
        res = [l for l in q.stdout.splitlines() if l.startswith("result ")]
        assert len(res) == 1, f"{what}: no 'result k=v ...' line in\n{q.stdout}"
        kv = dict(item.split("=", 1) for item in res[0].split()[1:])
        spread, at_once = float(kv["spread_us"]), float(kv["at_once_err_pct"])
        if skewed:
            assert spread > 1.0 and at_once <= -10.0, f"{what}: expected the entry stagger to matter: {res[0]}"
        else:
            assert spread < 1e-3 and abs(at_once) <= 0.5, f"{what}: expected no entry stagger: {res[0]}"


def window_start():
    plat = os.path.join(WORK, "flat-4x1")
    make_platform(plat, 4, intra=("150", "1"), inter=("25", "3"), rph=1)
    ring = ["--cfg", "smpi/allgather:NTSLR", "--cfg", "smpi/reduce_scatter:ompi_ring"]
    expect_us = 3 * (3.0 + 16384 / 25e3)  # 3 steps of a 16 KiB block over 25 GB/s, 3 us
    times = {}
    # "short": a 1 us window, which the start time (an all_gather over 3 us links) cannot meet:
    # each point's sample is run again with the window doubled until it arrives in time, so the
    # time kept is the ring's, not the start's delivery (docs/RESULTS_FORMAT.md).
    for start in ("barrier", "window", "short"):
        cfg = {"meshes": ["4"], "collectives": ["all_gather", "reduce_scatter"], "sizes": [65536],
               "dtypes": ["f32"], "distributions": ["even"], "warmup": 1,
               "iterations": {"min": 1, "max": 1}, "time_budget_s": 0.001,
               "buffer_rotation": {"bytes": 0, "max_slots": 1},
               "start": "barrier" if start == "barrier" else "window"}
        if start == "short":
            cfg["start_window_us"] = 1
        path = os.path.join(WORK, f"{start}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        out = os.path.join(WORK, f"{start}.jsonl")
        cmd = smpirun(4, plat=plat)
        cmd[-1:-1] = ring  # smpirun.sh's options go before `--`
        run(cmd + ["sweep", "--backend", "mpi", "-q", "--config", path, "--out", out])
        with open(out, encoding="utf-8") as f:
            pts = [r for r in map(json.loads, f) if r.get("type") == "point"]
        assert len(pts) == 2, f"{start}: {len(pts)} points"
        for p in pts:
            times[(start, p["collective"])] = t = p["stats"]["p50"] * 1e6
            print(f"{start:8s} {p['collective']:15s} {t:8.3f} us (ring at once {expect_us:.3f})")
            if start != "barrier":
                st = p["timing"]["start"]
                assert st["late_samples"] == 0, p["timing"]
                assert p["stats"]["n"] == 1, p["stats"]
                if start == "short":
                    assert st["retried_samples"] >= 1 and st["window_us"] > 1, p["timing"]
    for op in ("all_gather", "reduce_scatter"):
        w, b = times[("window", op)], times[("barrier", op)]
        assert abs(w / expect_us - 1) <= 0.005, f"{op}: window start {w:.3f} us, expected {expect_us:.3f}"
        s_ = times[("short", op)]
        assert abs(s_ / expect_us - 1) <= 0.005, f"{op}: 1 us window {s_:.3f} us, expected {expect_us:.3f}"
        assert b - w > 1.0, f"{op}: barrier start {b:.3f} us is not > 1 us above the window's {w:.3f}"


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
if MODE not in ("direct_run", "eager_ring", "window_start"):
    make_platform()
{"determinism": determinism, "ground_truth": ground_truth, "bad_input": bad_input,
 "direct_run": direct_run, "eager_ring": eager_ring, "window_start": window_start}[MODE]()

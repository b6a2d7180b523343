#!/usr/bin/env python3
"""End-to-end tests of `shardbench sweep` (driven by ctest, see tests/harness/CMakeLists.txt).

  e2e       run a sweep, then check every configured point is present exactly once, wrong == 0,
            busbw == algbw * factor (factor from the collective table's data,
            calibrate/python/shardcal/collectives.json), stats consistent
  resume    interrupt with SIGINT, resume, interrupt with SIGTERM, tear the last line, resume to
            the end; the set of point keys must equal an uninterrupted run's, with no duplicates
  badconfig bad configs fail with exit code 2, one clear message per rank, and no output file
  mismatch  (MPI, MPMD launches) ranks given different input: a --out directory missing on ranks
            other than 0 is fine (only rank 0 writes); a different config, a config missing on
            some ranks, or a different mode fails fast with exit 2, the same message on every
            rank and no output file
  resumecheck  malformed --resume files are input errors (exit 2, file and line named, on every
            rank); a file from another build/hosts is refused unless --resume-anyway, which
            appends a second context record
  window    "start": "window" (docs/RESULTS_FORMAT.md "Starting a sample"): every point records the
            window start in its key and timing block; under MPI, ranks on two emulated hosts
            (SHARDCAL_HOSTNAME; no global clock) are refused: exit 2, the message on every rank,
            no output file
  schema    validate configs against the sweep schema and a results file against the results
            schema (skipped with code 77 when the jsonschema module is missing)

Synchronisation with the child sweep is by polling the results file, never by fixed sleeps.
"""
import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def sweep_cmd(args, config, extra):
    base = [args.shardbench, "sweep", "--backend", args.backend, "--config", config, "-q"]
    if args.backend == "sim":
        base += ["--world", str(args.world)]
    if args.sweep_timeout:
        base += ["--timeout", str(args.sweep_timeout)]
    base += extra
    if args.mpiexec:
        return args.mpiexec.split(";") + ["-np", str(args.world)] + base
    return base


def read_records(path):
    """All lines must be complete JSON objects (an interrupted run leaves whole lines only)."""
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        fail(f"{path}: last line is not terminated (torn write)")
    recs = []
    for i, line in enumerate(data.decode().splitlines(), 1):
        try:
            recs.append(json.loads(line))
        except json.JSONDecodeError as e:
            fail(f"{path}:{i}: invalid JSON: {e}")
    return recs


# The collective table's bus-bandwidth factors (docs/RESULTS_FORMAT.md), as data.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "calibrate", "python",
                       "shardcal", "collectives.json"), encoding="utf-8") as _f:
    TABLE = {row["name"]: row for row in json.load(_f)["collectives"]}


def busbw_factor(op, n):
    if op not in TABLE:
        fail(f"collective {op!r} is not in calibrate/python/shardcal/collectives.json")
    if n <= 1:
        return 0.0
    row = TABLE[op]
    return row["busbw_share"] * (n - 1.0) / n + row["busbw_flat"]


def check_results(path, expect_points=None, contexts=1):
    """Returns the first context and the point records; each point belongs to the context
    record before it (--resume-anyway appends more than one)."""
    recs = read_records(path)
    if not recs or recs[0].get("type") != "context":
        fail(f"{path}: first record is not the context")
    ctx = recs[0]
    ctxs = [r for r in recs if r.get("type") == "context"]
    pts = [r for r in recs if r.get("type") == "point"]
    if len(ctxs) != contexts:
        fail(f"{path}: {len(ctxs)} context records, expected {contexts}")
    for c in ctxs[1:]:
        for k in ("config_hash", "backend", "world", "points_total"):
            if c[k] != ctx[k]:
                fail(f"{path}: context records differ in {k}")
    # The MPI thread level the run used: single unless SHARDCAL_MPI_THREAD_LEVEL says.
    # The last context record is this program's last run (tests edit the first one).
    settings = ctxs[-1].get("backend_settings")
    if ctx["backend"] == "sim":
        if settings != {}:
            fail(f"{path}: sim context has backend_settings {settings!r}, expected {{}}")
    else:
        want = (os.environ.get("SHARDCAL_MPI_THREAD_LEVEL")
                or ("funneled" if ctx["backend"] == "nccl" else "single")).lower()
        want = want[len("mpi_thread_"):] if want.startswith("mpi_thread_") else want
        got = (settings or {}).get("mpi_thread_level_requested")
        if got != want or not (settings or {}).get("mpi_thread_level"):
            fail(f"{path}: backend_settings {settings!r}, expected mpi_thread_level_requested "
                 f"{want!r} and the provided level")
    total = ctx["points_total"]
    if expect_points is not None and total != expect_points:
        fail(f"context says {total} points, --validate-only said {expect_points}")
    keys = [p["key"] for p in pts]
    if len(keys) != len(set(keys)):
        fail(f"{path}: duplicate point keys")
    if sorted(p["index"] for p in pts) != list(range(total)):
        fail(f"{path}: {len(pts)} point records, expected indices 0..{total - 1}")
    # The communicator's OpTimer: CUDA events on NCCL, the host clock elsewhere.
    timer = "cuda_event" if ctx["backend"] == "nccl" else "host_clock"
    for p in pts:
        where = f"{path}: point {p['index']} {p['key']}"
        if p["timing"].get("timer") != timer:
            fail(f"{where}: timing.timer {p['timing'].get('timer')!r}, expected {timer!r}")
        if p["key"] != json.dumps(p["point"], sort_keys=True, separators=(",", ":")):
            fail(f"{where}: key is not the canonical JSON of its parameters")
        if p["wrong"] != 0:
            fail(f"{where}: wrong = {p['wrong']}")
        # One buffer-rotation rule for collectives and transitions: recorded in the key, and
        # the slots used within it (one when rotation is off).
        rot = p["point"]["protocol"]["buffer_rotation"]
        if not isinstance(rot, dict):
            fail(f"{where}: protocol.buffer_rotation {rot!r}, expected {{bytes, max_slots}}")
        slots = p["timing"]["buffer_slots"]
        if not 1 <= slots <= max(1, rot["max_slots"]) or (rot["bytes"] == 0 and slots != 1):
            fail(f"{where}: {slots} buffer slots under rotation {rot}")
        st = p["stats"]
        s = sorted(p["samples_s"])
        if st["n"] != len(s) or st["n"] < 1:
            fail(f"{where}: stats.n {st['n']} != {len(s)} samples")
        if not (st["min"] <= st["p10"] <= st["p50"] <= st["p90"] <= st["p99"] <= st["max"]):
            fail(f"{where}: percentiles out of order")
        mid = (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2
        if not math.isclose(st["p50"], mid, rel_tol=1e-12):
            fail(f"{where}: p50 {st['p50']} != median {mid}")
        ci = st["median_ci"]
        if not (ci["lo"] <= st["p50"] <= ci["hi"]):
            fail(f"{where}: median outside its CI")
        rm = st["rank_means"]  # OSU's statistic: each rank's mean, then across ranks
        if not (0 < rm["min"] <= rm["mean"] * (1 + 1e-12) and rm["mean"] <= rm["max"] * (1 + 1e-12)
                and rm["max"] <= st["mean"] * (1 + 1e-12)):
            fail(f"{where}: stats.rank_means {rm} not 0 < min <= mean <= max <= stats.mean {st['mean']}")
        if not math.isclose(p["algbw_GBps"], p["bytes"] / st["p50"] / 1e9, rel_tol=1e-9):
            fail(f"{where}: algbw != bytes / p50")
        if p["point"]["kind"] == "collective":
            f = busbw_factor(p["collective"], p["group_size"])
            if not math.isclose(p["busbw_factor"], f, rel_tol=1e-12):
                fail(f"{where}: busbw factor {p['busbw_factor']} != table {f}")
            if not math.isclose(p["busbw_GBps"], p["algbw_GBps"] * f, rel_tol=1e-9, abs_tol=1e-15):
                fail(f"{where}: busbw != algbw * factor")
            if len(p["counts"]) != p["group_size"]:
                fail(f"{where}: {len(p['counts'])} counts for a group of {p['group_size']}")
            if p["bytes_max_rank"] != max(p["counts"]) * p["elem_size"]:
                fail(f"{where}: bytes_max_rank inconsistent with counts")
        else:
            if p["busbw_GBps"] is not None:
                fail(f"{where}: a transition has no busbw")
    return ctx, pts


def validate_only_count(args, config):
    out = subprocess.run(sweep_cmd(args, config, ["--validate-only"]), capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"--validate-only failed: {out.stderr}")
    return int(out.stdout.split("ok, ")[1].split()[0])


def cmd_e2e(args):
    expect = validate_only_count(args, args.config)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.jsonl")
        t0 = time.time()
        r = subprocess.run(sweep_cmd(args, args.config, ["--out", out]), capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"sweep exited {r.returncode}: {r.stderr[-3000:]}")
        ctx, pts = check_results(out, expect)
        if ctx["backend"] != args.backend or ctx["world"] != args.world:
            fail("context backend/world mismatch")
        kinds = {}
        for p in pts:
            kinds[p["point"]["kind"]] = kinds.get(p["point"]["kind"], 0) + 1
        # A small transition under rotation rotates (and its every slot checked out right).
        rotating = [p for p in pts if p["point"]["kind"] == "transition"
                    and p["point"]["protocol"]["buffer_rotation"]["bytes"] > 0]
        if rotating and max(p["timing"]["buffer_slots"] for p in rotating) < 2:
            fail("no transition rotated its buffers although the config rotates")
        print(f"ok: {len(pts)} points {kinds} in {time.time() - t0:.1f}s, all wrong == 0, "
              f"busbw == algbw * factor")


def wait_for_lines(path, proc, n, what):
    """Poll until `path` has at least n complete lines; fail if the child ends first."""
    deadline = time.time() + 120
    while time.time() < deadline:
        if os.path.exists(path):
            with open(path, "rb") as f:
                if f.read().count(b"\n") >= n:
                    return
        if proc.poll() is not None:
            fail(f"{what}: the sweep ended (rc {proc.returncode}) before {n} records appeared; "
                 "make the resume config longer")
        time.sleep(0.005)
    fail(f"{what}: timed out waiting for {n} records")


def interrupt(args, extra, path, lines, sig, expect_rc):
    """Signal the sweep after `lines` records. Under mpirun the launcher turns SIGINT/SIGTERM
    into SIGTERM for the ranks and exits with its own code, so only "non-zero" is checked."""
    proc = subprocess.Popen(sweep_cmd(args, args.config, extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    wait_for_lines(path, proc, lines, f"signal {sig}")
    # mpirun forwards SIGINT/SIGTERM to its ranks; in sim the process is the job.
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    if args.mpiexec:
        if proc.returncode == 0 or "sweep: stopped by signal" not in err:
            fail(f"after signal {sig}: exit code {proc.returncode}, stderr {err[-2000:]!r}")
    elif proc.returncode != expect_rc:
        fail(f"after signal {sig}: exit code {proc.returncode}, expected {expect_rc}: {err[-2000:]}")
    recs = read_records(path)
    print(f"signal {int(sig)} after >= {lines} lines: rc {proc.returncode}, {len(recs)} records kept")
    return len(recs)


def cmd_resume(args):
    with tempfile.TemporaryDirectory() as d:
        ref = os.path.join(d, "ref.jsonl")
        r = subprocess.run(sweep_cmd(args, args.config, ["--out", ref]), capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"reference sweep failed: {r.stderr}")
        _, ref_pts = check_results(ref)
        ref_keys = {p["key"] for p in ref_pts}

        out = os.path.join(d, "r.jsonl")
        n1 = interrupt(args, ["--out", out], out, 20, signal.SIGINT, 130)
        if n1 - 1 >= len(ref_keys):
            fail("the first interruption came too late to test anything")
        n2 = interrupt(args, ["--resume", out], out, n1 + 15, signal.SIGTERM, 143)
        if n2 <= n1:
            fail("the resumed run added no records before SIGTERM")
        with open(out, "ab") as f:  # as if killed mid-write
            f.write(b'{"type":"point","index":3,"key":"{\\"dist')
        # A different config must be refused without touching the file.
        other = os.path.join(d, "other.json")
        with open(args.config) as f:
            cfg = json.load(f)
        cfg["warmup"] = cfg.get("warmup", 5) + 1
        with open(other, "w") as f:
            json.dump(cfg, f)
        before = open(out, "rb").read()
        r = subprocess.run(sweep_cmd(args, other, ["--resume", out]), capture_output=True, text=True)
        if r.returncode != 2 or "produced by a different config" not in r.stderr:
            fail(f"resume with another config: rc {r.returncode}, stderr {r.stderr!r}")
        if open(out, "rb").read() != before:
            fail("a refused resume modified the file")
        r = subprocess.run(sweep_cmd(args, args.config, ["--resume", out]), capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"final resume failed: {r.stderr}")
        _, pts = check_results(out)
        keys = [p["key"] for p in pts]
        if set(keys) != ref_keys or len(keys) != len(ref_keys):
            fail(f"resumed file has {len(keys)} points ({len(set(keys))} distinct), "
                 f"uninterrupted run {len(ref_keys)}; missing {len(ref_keys - set(keys))}")
        print(f"ok: interrupted at {n1 - 1} and {n2 - 1} points, resumed to {len(keys)} == "
              f"uninterrupted set, no duplicates, torn line dropped")


TINY_CONFIG = {"meshes": ["4"], "collectives": ["all_reduce", "all_gather"], "sizes": [8, 64],
               "warmup": 1, "iterations": {"min": 3, "max": 3}, "buffer_rotation": {"bytes": 0}}


def mpmd_cmd(args, first, rest):
    """mpirun PREFIX -np 1 <rank 0 command> : -np N-1 <command of ranks 1..N-1>."""
    def app(extra_cfg):
        config, extra = extra_cfg
        return sweep_cmd(argparse.Namespace(**{**vars(args), "mpiexec": ""}), config, extra)
    return (args.mpiexec.split(";") + ["-np", "1"] + app(first) + [":", "-np", str(args.world - 1)]
            + app(rest))


def run_bounded(cmd, what, cwd=None):
    """Runs cmd; a hang is a failure well before ctest's TIMEOUT."""
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd,
                           timeout=4 * args_timeout() + 30)
    except subprocess.TimeoutExpired:
        fail(f"{what}: hung (no result within {4 * args_timeout() + 30}s)")
    return r, time.time() - t0


_ARGS = None


def args_timeout():
    return _ARGS.sweep_timeout or 300


def expect_input_error(r, elapsed, what, message, ranks, out=None):
    """Exit 2, `message` exactly once per rank, never an internal error, fast, no new file."""
    if r.returncode != 2:
        fail(f"{what}: exit code {r.returncode}, expected 2; stderr {r.stderr[-3000:]!r}")
    if "internal error" in r.stderr:
        fail(f"{what}: reported as an internal error: {r.stderr[-3000:]!r}")
    count = r.stderr.count(message)
    if count != ranks:
        fail(f"{what}: message {message!r} appears {count} times, expected once per rank "
             f"({ranks}); stderr: {r.stderr[-3000:]!r}")
    errors = [l for l in r.stderr.splitlines() if l.startswith("shardbench: error:")]
    if len(set(errors)) != 1:
        fail(f"{what}: ranks reported different errors: {sorted(set(errors))}")
    if _ARGS.sweep_timeout and elapsed >= _ARGS.sweep_timeout:
        fail(f"{what}: took {elapsed:.1f}s, not faster than the {_ARGS.sweep_timeout}s timeout "
             "(a rank waited for a peer instead of failing together)")
    if out is not None and os.path.exists(out):
        fail(f"{what}: an output file was created")
    print(f"ok: {what}: rc 2 in {elapsed:.1f}s, {count} x {message!r}")


def cmd_mismatch(args):
    if not args.mpiexec or args.world < 2:
        fail("mismatch needs --mpiexec and --world >= 2")
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "tiny.json")
        with open(cfg, "w") as f:
            json.dump(TINY_CONFIG, f)
        other = os.path.join(d, "other.json")
        with open(other, "w") as f:
            json.dump({**TINY_CONFIG, "warmup": 2}, f)
        out = os.path.join(d, "r.jsonl")
        elsewhere = os.path.join(d, "missing-dir", "r.jsonl")

        # Only rank 0 writes: a --out directory that does not exist on the other ranks is fine.
        r, el = run_bounded(mpmd_cmd(args, (cfg, ["--out", out]), (cfg, ["--out", elsewhere])),
                            "missing --out dir on ranks 1..")
        if r.returncode != 0:
            fail(f"missing --out dir on ranks 1..: exit code {r.returncode}: {r.stderr[-3000:]}")
        _, pts = check_results(out)
        if os.path.exists(os.path.dirname(elsewhere)):
            fail("a rank other than 0 created its --out directory")
        print(f"ok: --out directory missing on ranks 1..{args.world - 1} only: rc 0 in {el:.1f}s, "
              f"{len(pts)} points")
        os.remove(out)

        # Different configs: one message on every rank naming who has which, no file.
        r, el = run_bounded(mpmd_cmd(args, (cfg, ["--out", out]), (other, ["--out", out])),
                            "different configs")
        expect_input_error(r, el, "different configs",
                           f"ranks disagree on mpi world (2 distinct specs): rank 0 has spec A: "
                           f"config {cfg} (hash ", args.world, out)
        if f"have spec B: config {other} (hash " not in r.stderr:
            fail(f"different configs: ranks 1.. not named with their config: {r.stderr[-2000:]!r}")

        # The config missing on ranks 1.. only: the error travels to rank 0 as well.
        missing = os.path.join(d, "nosuch.json")
        r, el = run_bounded(mpmd_cmd(args, (cfg, ["--out", out]), (missing, ["--out", out])),
                            "config missing on ranks 1..")
        expect_input_error(r, el, "config missing on ranks 1..",
                           f"input error on some ranks only (every rank must be given the same, "
                           f"valid input): ranks 1-{args.world - 1}: {missing}: cannot open the "
                           f"sweep config", args.world, out)

        # A different mode (rank 0 only validates, the others would sweep) must not hang either.
        r, el = run_bounded(mpmd_cmd(args, (cfg, ["--validate-only"]), (cfg, ["--out", out])),
                            "different modes")
        expect_input_error(r, el, "different modes", "rank 0 has spec A: config " + cfg,
                           args.world, out)


def edit_first_context(path, change):
    with open(path) as f:
        lines = f.read().splitlines(keepends=True)
    ctx = json.loads(lines[0])
    change(ctx)
    lines[0] = json.dumps(ctx, separators=(",", ":")) + "\n"
    with open(path, "w") as f:
        f.writelines(lines)


def expect_refused_resume(args, config, path, what, message, ranks):
    """--resume of path: refused as bad input with `message`, advising a new sweep, file untouched."""
    content = open(path).read()
    r, el = run_bounded(sweep_cmd(args, config, ["--resume", path]), what)
    expect_input_error(r, el, what, message, ranks)
    if "start a new sweep with --out" not in r.stderr:
        fail(f"{what}: no advice in {r.stderr[-2000:]!r}")
    if open(path).read() != content:
        fail(f"{what}: the file was modified")


def cmd_resumecheck(args):
    ranks = args.world if args.mpiexec else 1
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "tiny.json")
        with open(cfg, "w") as f:
            json.dump(TINY_CONFIG, f)

        # Malformed files: valid JSON of the wrong shape is bad input naming file and line.
        for name, content, message in [
            ("a number", "42\n", ": line 1: the record is a number, not a JSON object"),
            ("wrong-typed config_hash", '{"type":"context","config_hash":5}\n',
             ": line 1: /config_hash: expected a string, got a number (5)"),
            ("wrong-typed point key", None,
             ": line 2: /key: expected a string, got a number (5)"),
            ("a number outside a double's range", '{"type":"context","n_hosts":1e999}\n[1]\n',
             ": line 1: a number is outside the range of a double (field /n_hosts)"),
        ]:
            path = os.path.join(d, "bad.jsonl")
            if content is None:  # a real context line, then a broken point record
                r = subprocess.run(sweep_cmd(args, cfg, ["--out", path]), capture_output=True, text=True)
                if r.returncode != 0:
                    fail(f"sweep failed: {r.stderr[-3000:]}")
                with open(path) as f:
                    content = f.readline() + '{"type":"point","key":5}\n' + "[1]\n"
            with open(path, "w") as f:
                f.write(content)
            r, el = run_bounded(sweep_cmd(args, cfg, ["--resume", path]), name)
            expect_input_error(r, el, f"malformed --resume file ({name})",
                               f"--resume {path}{message}", ranks)
            if open(path).read() != content:
                fail(f"malformed --resume file ({name}): the file was modified")

        # A file of results format 1 (keys by placement text, no protocol): refused, saying why.
        path = os.path.join(d, "v1.jsonl")
        r = subprocess.run(sweep_cmd(args, cfg, ["--out", path]), capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"sweep failed: {r.stderr[-3000:]}")
        edit_first_context(path, lambda ctx: ctx.__setitem__("version", 1))
        expect_refused_resume(args, cfg, path, "--resume of a format 1 file",
                              f"--resume {path}: the file is results format version 1, this "
                              "shardbench writes version 2", ranks)

        # A file whose transitions were timed on one hot buffer set (keys with
        # "buffer_rotation": null, from before transitions rotated like collectives): refused,
        # rather than timed again under rotation next to the old points.
        tcfg = os.path.join(d, "tiny_transition.json")
        with open(tcfg, "w") as f:
            json.dump({**TINY_CONFIG, "transitions": [{"mesh": "4", "from": "S(0)", "to": "R"}],
                       "buffer_rotation": {"bytes": 4096, "max_slots": 4}}, f)
        path = os.path.join(d, "hot.jsonl")
        r = subprocess.run(sweep_cmd(args, tcfg, ["--out", path]), capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"sweep failed: {r.stderr[-3000:]}")
        recs = read_records(path)
        for rec in recs:
            if rec.get("type") == "point" and rec["point"]["kind"] == "transition":
                rec["point"]["protocol"]["buffer_rotation"] = None
                rec["key"] = json.dumps(rec["point"], sort_keys=True, separators=(",", ":"))
        with open(path, "w") as f:
            f.writelines(json.dumps(rec, separators=(",", ":")) + "\n" for rec in recs)
        expect_refused_resume(args, tcfg, path, "--resume of a file with unrotated transitions",
                              f"--resume {path}: 2 transition point(s) in the file were timed on "
                              "one hot buffer set", ranks)

        # A file measured by another build on other hosts: refused, listing the differences.
        out = os.path.join(d, "r.jsonl")
        r = subprocess.run(sweep_cmd(args, cfg, ["--out", out]), capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"sweep failed: {r.stderr[-3000:]}")
        _, ref_pts = check_results(out)
        ref_keys = {p["key"] for p in ref_pts}
        with open(out) as f:
            lines = f.readlines()
        keep = 1 + len(ref_pts) // 2  # as if interrupted half-way
        with open(out, "w") as f:
            f.writelines(lines[:keep])

        def other_build(ctx):
            ctx["git_revision"] = "0123abc-elsewhere"
            ctx["hosts"][0]["name"] = "another-node"
            ctx["hosts"][0]["ranks"] = ctx["hosts"][0]["ranks"][:-1]  # another shape (a rename alone is fine)
            ctx["library_versions"]["FakeLib"] = "9.9"
            ctx["backend_settings"]["fake_setting"] = "x"
        edit_first_context(out, other_build)
        before = open(out).read()
        r, el = run_bounded(sweep_cmd(args, cfg, ["--resume", out]), "resume, other context")
        expect_input_error(r, el, "resume of a file from another build and hosts",
                           f"--resume {out}: the file's context differs from this run's", ranks)
        for item in ('git_revision: file "0123abc-elsewhere", this run ',
                     'hosts (ranks per host): file [{"name":"another-node"', 'library_versions.FakeLib: file "9.9"',
                     'backend_settings: file {', "--resume-anyway"):
            if r.stderr.count(item) != ranks:
                fail(f"refused resume: {item!r} not listed on every rank: {r.stderr[-3000:]!r}")
        if open(out).read() != before:
            fail("a refused resume modified the file")

        # --resume-anyway: accepted, a second context record, the rest of the points after it.
        r = subprocess.run(sweep_cmd(args, cfg, ["--resume", out, "--resume-anyway"]),
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"--resume-anyway failed: {r.stderr[-3000:]}")
        _, pts = check_results(out, contexts=2)
        keys = [p["key"] for p in pts]
        if set(keys) != ref_keys or len(keys) != len(ref_keys):
            fail(f"after --resume-anyway: {len(keys)} points, expected {len(ref_keys)} distinct")
        recs = read_records(out)
        if recs[keep].get("type") != "context" or recs[keep]["git_revision"] == "0123abc-elsewhere":
            fail(f"after --resume-anyway: record {keep + 1} is not this run's context")
        if args.schemas:  # every record of a two-context file is a valid results record
            try:
                import jsonschema
            except ImportError:
                jsonschema = None
                print("note: jsonschema not available, two-context file not schema-checked")
            if jsonschema is not None:
                with open(os.path.join(args.schemas, "results.schema.json")) as f:
                    v = jsonschema.Draft202012Validator(json.load(f))
                for i, rec in enumerate(recs, 1):
                    errors = sorted(v.iter_errors(rec), key=lambda e: list(e.path))
                    if errors:
                        fail(f"two-context file, record {i}: {errors[0].message} at {list(errors[0].path)}")
                print(f"ok: all {len(recs)} records of the two-context file match results.schema.json")
        # Resuming again matches the last context: accepted, nothing appended.
        before = open(out).read()
        r = subprocess.run(sweep_cmd(args, cfg, ["--resume", out]), capture_output=True, text=True)
        if r.returncode != 0 or open(out).read() != before:
            fail(f"resume of a complete two-context file: rc {r.returncode}, "
                 f"changed {open(out).read() != before}: {r.stderr[-3000:]}")
        print(f"ok: other build/hosts refused on {ranks} rank(s); --resume-anyway appended context 2 "
              f"at line {keep + 1} and {len(ref_pts) - keep + 1} points")

        # A complete shard (--shard I/N keeps the config's point indices, which run past the
        # shard's own point count): resuming it measures nothing again.
        out = os.path.join(d, "shard.jsonl")
        r = subprocess.run(sweep_cmd(args, cfg, ["--out", out, "--shard", "1/2"]),
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"sharded sweep failed: {r.stderr[-3000:]}")
        before = open(out).read()
        r = subprocess.run(sweep_cmd(args, cfg, ["--resume", out, "--shard", "1/2"]),
                           capture_output=True, text=True)
        if r.returncode != 0 or open(out).read() != before:
            after = open(out).read()
            fail(f"resume of a complete shard 1/2: rc {r.returncode}, lines appended "
                 f"{after.count(chr(10)) - before.count(chr(10))}: {r.stderr[-3000:]}")
        print("ok: resuming a complete shard 1/2 appends nothing")


BAD_CONFIGS = [
    ("unknown collective",
     {"meshes": ["4"], "collectives": ["all_gather", "allgather"], "sizes": [8]},
     'x.json: /collectives/1: unknown collective "allgather"; expected one of all_gather,'),
    ("mesh not matching the world",
     {"meshes": ["2x4"], "collectives": ["all_gather"], "sizes": [8]},
     'x.json: /meshes/0: mesh "2x4" has 8 ranks but the world has 4;'),
    ("sizes inverted",
     {"meshes": ["4"], "collectives": ["all_gather"], "sizes": {"min": 1024, "max": 8, "factor": 2}},
     "x.json: /sizes: min (1024) is greater than max (8); swap them"),
    ("bad placement",
     {"meshes": ["2x2"], "transitions": [{"mesh": "2x2", "from": "S(0),X", "to": "R,R"}], "sizes": [64]},
     "x.json: /transitions/0/from: bad placement:"),
    ("placement dim out of range",
     {"meshes": ["2x2"], "transitions": [{"mesh": "2x2", "from": "S(3),R", "to": "R,R"}], "sizes": [64]},
     'x.json: /transitions/0/from: bad placement "S(3),R" on mesh 2x2'),
    ("invalid JSON", '{"meshes": ["4"],\n "sizes": [8,]}', "x.json: line 2, column 14: invalid JSON"),
    ("number out of double range", '{"meshes": ["4"],\n "collectives": ["all_gather"],\n "sizes": [1e999]}',
     "x.json: line 3: a number is outside the range of a double"),
]


WINDOW_CONFIG = {"meshes": ["4"], "collectives": ["all_reduce", "all_gather"], "sizes": [1024, 65536],
                 "dtypes": ["f32"], "distributions": ["even"], "warmup": 1,
                 "iterations": {"min": 5, "max": 10}, "time_budget_s": 0.2,
                 "start": "window", "start_window_us": 200}


def cmd_window(args):
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "w.json")
        with open(cfg, "w") as f:
            json.dump({**WINDOW_CONFIG, "meshes": [str(args.world)]}, f)
        out = os.path.join(d, "r.jsonl")
        r, elapsed = run_bounded(sweep_cmd(args, cfg, ["--out", out]), "window start")
        if r.returncode != 0:
            fail(f"window start: exit {r.returncode}: {r.stderr[-3000:]}")
        ctx, pts = check_results(out, 4)
        if "window start" not in ctx["timing_method"]:
            fail(f"context timing_method does not say window start: {ctx['timing_method']!r}")
        for p in pts:
            start = p["timing"].get("start")
            key_start = p["point"]["protocol"].get("start")
            if key_start != {"kind": "window", "retry": 1}:
                fail(f"point {p['index']}: protocol.start {key_start!r}")
            if (not start or start["kind"] != "window" or start["window_us"] < 200
                    or not isinstance(start["late_samples"], int)
                    or not 0 <= start["late_samples"] <= p["stats"]["n"]):
                fail(f"point {p['index']}: timing.start {start!r}")
            if not p["timing"]["barrier"].startswith("none: window start"):
                fail(f"point {p['index']}: timing.barrier {p['timing']['barrier']!r}")
        print(f"ok: window start: {len(pts)} points in {elapsed:.1f}s, late samples "
              f"{[p['timing']['start']['late_samples'] for p in pts]}")
        if not args.mpiexec:
            # A 1 us window: the start time cannot reach a thread woken through the simulator
            # in time, so the window must widen and those samples be run again.
            with open(cfg, "w") as f:
                json.dump({**WINDOW_CONFIG, "meshes": [str(args.world)], "start_window_us": 1}, f)
            r, elapsed = run_bounded(sweep_cmd(args, cfg, ["--out", out]), "1 us window")
            if r.returncode != 0:
                fail(f"1 us window: exit {r.returncode}: {r.stderr[-3000:]}")
            _, pts = check_results(out, 4)
            for p in pts:
                st = p["timing"]["start"]
                if st["window_us"] <= 1 or st.get("retried_samples", 0) < 1:
                    fail(f"1 us window: point {p['index']}: the window did not widen or no sample "
                         f"was run again: {st!r}")
            print(f"ok: 1 us window widened to {[p['timing']['start']['window_us'] for p in pts]} us")
            return
        # Two emulated hosts: MPI ranks start on their host's steady clock, which no two hosts share.
        out = os.path.join(d, "two.jsonl")
        solo = argparse.Namespace(**{**vars(args), "mpiexec": ""})
        cmd = (args.mpiexec.split(";") + ["-np", "1", "env", "SHARDCAL_HOSTNAME=node-a"]
               + sweep_cmd(solo, cfg, ["--out", out]) + [":", "-np", str(args.world - 1), "env",
               "SHARDCAL_HOSTNAME=node-b"] + sweep_cmd(solo, cfg, ["--out", out]))
        r, elapsed = run_bounded(cmd, "window start on two hosts")
        expect_input_error(r, elapsed, "window start on two hosts",
                           "needs a clock every rank shares, but the ranks span 2 hosts",
                           args.world, out)
        # --validate-only refuses it too (the real run would, after the job has queued).
        check_only = [("--validate-only" if a == out else a) for a in cmd if a != "--out"]
        r, elapsed = run_bounded(check_only, "--validate-only on two hosts")
        expect_input_error(r, elapsed, "--validate-only on two hosts",
                           "needs a clock every rank shares, but the ranks span 2 hosts", args.world)


def cmd_badconfig(args):
    ranks = args.world if args.mpiexec else 1
    with tempfile.TemporaryDirectory() as d:
        for name, cfg, message in BAD_CONFIGS:
            path = os.path.join(d, "x.json")
            with open(path, "w") as f:
                f.write(cfg if isinstance(cfg, str) else json.dumps(cfg))
            out = os.path.join(d, "r.jsonl")
            r = subprocess.run(sweep_cmd(args, "x.json", ["--out", out]), capture_output=True,
                               text=True, cwd=d)
            if r.returncode == 0:
                fail(f"{name}: exit code 0")
            if not args.mpiexec and r.returncode != 2:
                fail(f"{name}: exit code {r.returncode}, expected 2")
            count = r.stderr.count(message)
            if count != ranks:
                fail(f"{name}: message {message!r} appears {count} times, expected once per rank "
                     f"({ranks}); stderr: {r.stderr!r}")
            if os.path.exists(out):
                fail(f"{name}: an output file was created")
            print(f"ok: {name}: rc {r.returncode}, {count} x {message!r}, no file")


def cmd_schema(args):
    try:
        import jsonschema
    except ImportError:
        print("SKIP: python module jsonschema not available for " + sys.executable)
        sys.exit(SKIP)
    with open(os.path.join(args.schemas, "sweep.schema.json")) as f:
        sweep_schema = json.load(f)
    with open(os.path.join(args.schemas, "results.schema.json")) as f:
        results_schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(sweep_schema)
    jsonschema.Draft202012Validator.check_schema(results_schema)
    for cfg in args.configs:
        with open(cfg) as f:
            jsonschema.validate(json.load(f), sweep_schema, cls=jsonschema.Draft202012Validator)
        print(f"ok: {cfg} matches sweep.schema.json")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.jsonl")
        r = subprocess.run(sweep_cmd(args, args.config, ["--out", out]), capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"sweep failed: {r.stderr}")
        v = jsonschema.Draft202012Validator(results_schema)
        recs = read_records(out)
        for i, rec in enumerate(recs, 1):
            errors = sorted(v.iter_errors(rec), key=lambda e: list(e.path))
            if errors:
                fail(f"record {i}: {errors[0].message} at {list(errors[0].path)}")
        print(f"ok: {len(recs)} records match results.schema.json")
        # e2e.json's 7x3 S(0),S(0) -> S(0),R on 2x4 gathers 1,1,1,1 in one group (plain call) and
        # 1,1,1,0 in the other (v-form): the step must say so, not claim all_gatherv.
        mixed = [s for rec in recs for s in (rec.get("transition") or {}).get("plan", []) if s["call"] == "mixed"]
        if args.config.endswith("e2e.json"):
            if not mixed:
                fail("no plan step with call 'mixed' (groups that differ) in the e2e results")
            for s in mixed:
                if not 0 < s["plain_groups"] < s["groups"]:
                    fail(f"mixed step with plain_groups {s['plain_groups']} of {s['groups']}")
            print(f"ok: {len(mixed)} mixed plan steps")
        bad = json.loads(json.dumps(recs[1]))
        bad["timing"]["timer"] = "wall_clock"
        if v.is_valid(bad):
            fail("results.schema.json accepts an unknown timing.timer")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["e2e", "resume", "badconfig", "schema", "mismatch", "resumecheck",
                                        "window"])
    ap.add_argument("--shardbench", required=True)
    ap.add_argument("--config")
    ap.add_argument("--backend", default="sim")
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--mpiexec", default="", help="launcher prefix, ';'-separated (e.g. mpirun;--oversubscribe)")
    ap.add_argument("--sweep-timeout", type=float, default=0,
                    help="pass --timeout S to every sweep (bounds a hang; error runs must beat it)")
    ap.add_argument("--schemas")
    ap.add_argument("--validate", nargs="*", default=[], dest="configs",
                    help="schema: config files to check against sweep.schema.json")
    args = ap.parse_args()
    global _ARGS
    _ARGS = args
    {"e2e": cmd_e2e, "resume": cmd_resume, "badconfig": cmd_badconfig, "schema": cmd_schema,
     "mismatch": cmd_mismatch, "resumecheck": cmd_resumecheck, "window": cmd_window}[args.command](args)


if __name__ == "__main__":
    main()

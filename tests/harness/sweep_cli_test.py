#!/usr/bin/env python3
"""End-to-end tests of `shardbench sweep` (driven by ctest, see tests/harness/CMakeLists.txt).

  e2e       run a sweep, then check every configured point is present exactly once, wrong == 0,
            busbw == algbw * factor (factor recomputed here from DESIGN §4), stats consistent
  resume    interrupt with SIGINT, resume, interrupt with SIGTERM, tear the last line, resume to
            the end; the set of point keys must equal an uninterrupted run's, with no duplicates
  badconfig bad configs fail with exit code 2, one clear message per rank, and no output file
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


def busbw_factor(op, n):
    if n <= 1:
        return 0.0
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op == "broadcast":
        return 1.0
    return (n - 1) / n


def check_results(path, expect_points=None):
    recs = read_records(path)
    if not recs or recs[0].get("type") != "context":
        fail(f"{path}: first record is not the context")
    ctx, pts = recs[0], recs[1:]
    if any(r.get("type") == "context" for r in pts):
        fail(f"{path}: more than one context record")
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
]


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
        bad = json.loads(json.dumps(recs[1]))
        bad["timing"]["timer"] = "wall_clock"
        if v.is_valid(bad):
            fail("results.schema.json accepts an unknown timing.timer")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["e2e", "resume", "badconfig", "schema"])
    ap.add_argument("--shardbench", required=True)
    ap.add_argument("--config")
    ap.add_argument("--backend", default="sim")
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--mpiexec", default="", help="launcher prefix, ';'-separated (e.g. mpirun;--oversubscribe)")
    ap.add_argument("--schemas")
    ap.add_argument("--validate", nargs="*", default=[], dest="configs",
                    help="schema: config files to check against sweep.schema.json")
    args = ap.parse_args()
    {"e2e": cmd_e2e, "resume": cmd_resume, "badconfig": cmd_badconfig, "schema": cmd_schema}[args.command](args)


if __name__ == "__main__":
    main()

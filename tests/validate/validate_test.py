#!/usr/bin/env python3
"""End-to-end tests of the cost-based planner in use, driven by ctest
(tests/validate/CMakeLists.txt).

  validate   `shardbench validate` on a small config: exit 0; one record per transition of the
             config plus a summary; every record lists the chosen and the greedy plan (and no
             plan twice unless it holds both roles); every plan's output was checked and exact
             (wrong == 0); regret = measured(chosen) / min measured >= 1, recomputed here;
             greedy_speedup, rel_error, the summary's median/p95 regret and MAPE recomputed
  badinput   no profile, an unreadable profile, a config without transitions, a missing --out
             directory: exit 2, one message, no output file
  unpriced   a profile without all_to_all models: the greedy plan's prediction is null with a
             reason, left out of the MAPE, counted in plans_unpriced
  plan_agreement (MPI) ranks given different profile files: redistribute exits with one error
             naming the ranks whose plans differ
  planned    `redistribute --profile` verifies against the reference and names the planner and
             profile; `sweep` with config key "profile" records the planner in the context, in
             every transition record and in its key; --resume with another profile is refused
             (exit 2, the message names both planners)
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROFILE = os.path.join(ROOT, "configs", "profiles", "dtensor-default.json")


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)

def check_schema(recs):
    """Every validate output record matches configs/schema/validate.schema.json (when jsonschema is there)."""
    try:
        import jsonschema
    except ImportError:
        print("note: jsonschema not available, validate output not schema-checked")
        return
    v = jsonschema.Draft202012Validator(json.load(open(os.path.join(ROOT, "configs", "schema",
                                                                    "validate.schema.json"))))
    for i, rec in enumerate(recs, 1):
        errs = sorted(v.iter_errors(rec), key=str)
        if errs:
            fail(f"validate output line {i} does not match validate.schema.json: {errs[0].message}")



def cmd(args, sub, extra):
    base = [args.shardbench, sub, "--backend", args.backend] + extra
    if args.backend == "sim":
        base += ["--world", "4"]
    if args.mpiexec:
        return args.mpiexec.split(";") + ["-np", "4"] + base
    return base


def run(c, **kw):
    return subprocess.run(c, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=ROOT,
                          timeout=kw.pop("timeout", 600), **kw)


def percentile(sorted_vals, q):
    """numpy's default (linear) percentile, as the C++ side computes it."""
    if len(sorted_vals) == 1:
        return sorted_vals[0]
    pos = q * (len(sorted_vals) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def check_validate(args):
    cfg_path = os.path.join(HERE, "configs", "small.json")
    cfg = json.load(open(cfg_path))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "v.jsonl")
        r = run(cmd(args, "validate", ["--profile", PROFILE, "--config", cfg_path, "--out", out,
                                       "--k", "3", "--rounds", "3"]))
        if r.returncode != 0:
            fail(f"validate exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        leftovers = [f for f in os.listdir(tmp) if f != "v.jsonl"]
        if leftovers:
            fail(f"temporary files left next to the output: {leftovers}")
        lines = open(out).read().splitlines()
        recs = [json.loads(l) for l in lines]
    check_schema(recs)
    n_trans = len(cfg["transitions"])  # one size and dtype; explicit shapes give one point each
    if len(recs) != n_trans + 1:
        fail(f"{len(recs)} records, expected {n_trans} transitions + 1 summary")
    sha = hashlib.sha256(open(PROFILE, "rb").read()).hexdigest()
    regrets, errors = [], []
    n_sig = 0
    seen = set()
    for rec in recs[:-1]:
        if rec.get("schema") != "shardcal.validate" or rec.get("version") != 1:
            fail(f"bad schema/version: {rec.get('schema')} {rec.get('version')}")
        if rec["profile"] != {"path": PROFILE, "cluster": "dtensor-default", "sha256": sha}:
            fail(f"profile identity {rec['profile']}")
        t = rec["transition"]
        for k in ("mesh", "shape", "dtype", "from", "to", "distribution", "key"):
            if k not in t:
                fail(f"transition without {k}: {t}")
        seen.add((t["mesh"], t["from"], t["to"]))
        plans = rec["plans"]
        roles = [p["role"] for p in plans]
        if roles.count("chosen") != 1 or roles.count("greedy") != 1:
            fail(f"{t['from']} -> {t['to']}: roles {roles}")
        if plans[0]["role"] != "chosen" or plans[0]["rank"] != 0:
            fail(f"first plan must be the chosen one with rank 0: {plans[0]}")
        # A plan listed twice holds two roles and was measured once (identical numbers).
        by_steps = {}
        for p in plans:
            key = json.dumps(p["steps"])
            if key in by_steps:
                q = by_steps[key]
                if "greedy" not in (p["role"], q["role"]):
                    fail(f"plan {p['steps']} listed twice as {q['role']} and {p['role']}")
                if p["measured_us"] != q["measured_us"]:
                    fail("the same plan listed twice must carry one measurement")
            by_steps[key] = p
        mins = []
        for p in plans:
            m = p["measured_us"]
            if p.get("wrong") != 0:
                fail(f"{t['from']} -> {t['to']} plan {p['steps']} ({p['role']}): wrong = {p.get('wrong')}")
            if not (m["samples"] >= 1 and 0 < m["ci_lo"] <= m["median"] <= m["ci_hi"]):
                fail(f"measured_us inconsistent: {m}")
            if abs(sum(p["step_predicted_us"]) - p["predicted_us"]) > 1e-9 * max(1.0, p["predicted_us"]):
                fail(f"step predictions {p['step_predicted_us']} do not sum to {p['predicted_us']}")
            if len(p["step_predicted_us"]) != len(p["steps"]):
                fail("one predicted time per step expected")
            if not close(p["rel_error"], (p["predicted_us"] - m["median"]) / m["median"]):
                fail(f"rel_error {p['rel_error']} != (pred - meas) / meas")
            mins.append(m["median"])
        chosen = plans[0]["measured_us"]["median"]
        greedy = next(p for p in plans if p["role"] == "greedy")
        if not close(rec["regret"], chosen / min(mins)):
            fail(f"regret {rec['regret']} != {chosen} / {min(mins)}")
        if rec["regret"] < 1.0:
            fail(f"regret {rec['regret']} < 1")
        if not close(rec["greedy_speedup"], greedy["measured_us"]["median"] / chosen):
            fail(f"greedy_speedup {rec['greedy_speedup']}")
        # The chosen plan is predicted no dearer than greedy under the same profile.
        if plans[0]["predicted_us"] > greedy["predicted_us"] * (1 + 1e-12):
            fail(f"chosen predicted {plans[0]['predicted_us']} > greedy {greedy['predicted_us']}")
        sig = any(plans[0]["measured_us"]["ci_lo"] > p["measured_us"]["ci_hi"] for p in plans)
        if rec["regret_significant"] != sig:
            fail(f"regret_significant {rec['regret_significant']} != recomputed {sig}")
        n_sig += sig
        regrets.append(rec["regret"])
        uniq = {json.dumps(p["steps"]): p for p in plans}
        errors += [abs(p["rel_error"]) for p in uniq.values()]
    if len(seen) != n_trans:
        fail(f"{len(seen)} distinct transitions, expected {n_trans}")
    s = recs[-1]
    if s.get("schema") != "shardcal.validate.summary" or s["transitions"] != n_trans:
        fail(f"bad summary {s}")
    rs = sorted(regrets)
    if not close(s["regret"]["median"], percentile(rs, 0.5)) or not close(s["regret"]["p95"], percentile(rs, 0.95)):
        fail(f"summary regret {s['regret']} != recomputed {percentile(rs, 0.5)}, {percentile(rs, 0.95)}")
    if not close(s["mape"], sum(errors) / len(errors)) or s["plans_measured"] != len(errors):
        fail(f"summary mape {s['mape']} over {s['plans_measured']} != {sum(errors) / len(errors)} over {len(errors)}")
    if s["regret"]["significant"] != n_sig:
        fail(f"summary regret.significant {s['regret']['significant']} != {n_sig}")
    if s["wrong"] != 0:
        fail("summary wrong != 0")
    print(f"ok   validate ({args.backend}): {n_trans} transitions, regret median {s['regret']['median']:.3f} "
          f"p95 {s['regret']['p95']:.3f}, MAPE {s['mape']:.2f}, greedy/chosen max {s['greedy_speedup']['max']:.2f}")


def expect_input_error(args, c, out, what, needle):
    r = run(c, timeout=120)
    if r.returncode != 2:
        fail(f"{what}: exit {r.returncode}, expected 2\n{r.stdout}\n{r.stderr}")
    if needle not in r.stderr:
        fail(f"{what}: message does not mention '{needle}':\n{r.stderr}")
    if out and os.path.exists(out):
        fail(f"{what}: output file written")
    print(f"ok   {what}: {r.stderr.strip().splitlines()[0][:150]}")


def check_badinput(args):
    cfg = os.path.join(HERE, "configs", "small.json")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "v.jsonl")
        expect_input_error(args, cmd(args, "validate", ["--config", cfg, "--out", out]), out,
                           "no profile", "--profile")
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write('{"schema": "shardcal.profile", "version": 1')
        expect_input_error(args, cmd(args, "validate", ["--profile", bad, "--config", cfg, "--out", out]), out,
                           "truncated profile", bad)
        nt = os.path.join(tmp, "collectives_only.json")
        with open(nt, "w") as f:
            json.dump({"meshes": ["4"], "collectives": ["all_gather"], "sizes": [64]}, f)
        expect_input_error(args, cmd(args, "validate", ["--profile", PROFILE, "--config", nt, "--out", out]), out,
                           "config without transitions", "no transition")
        missing = os.path.join(tmp, "nodir", "v.jsonl")
        expect_input_error(args, cmd(args, "validate", ["--profile", PROFILE, "--config", cfg, "--out", missing]),
                           missing, "missing --out directory", "does not exist")


def write_profile_without(tmp, collective):
    """dtensor-default without the models of one collective: the planner prices it +inf."""
    p = json.load(open(PROFILE))
    p["models"] = [m for m in p["models"] if m["collective"] != collective]
    path = os.path.join(tmp, f"no-{collective}.json")
    with open(path, "w") as f:
        json.dump(p, f)
    return path


def check_unpriced(args):
    """A greedy plan the profile cannot price (no all_to_all model): measured, its prediction
    null with a reason, left out of the MAPE and counted in plans_unpriced; never an inf MAPE."""
    cfg = {"name": "validate-test-unpriced", "meshes": ["4"],
           "transitions": [{"mesh": "4", "from": "S(0)", "to": "S(1)"}, {"mesh": "4", "from": "P", "to": "R"}],
           "sizes": [4096], "dtypes": ["f32"], "warmup": 1, "iterations": {"min": 4, "max": 12},
           "time_budget_s": 0.02, "check": True}
    with tempfile.TemporaryDirectory() as tmp:
        prof = write_profile_without(tmp, "all_to_all")
        cfg_path = os.path.join(tmp, "cfg.json")
        json.dump(cfg, open(cfg_path, "w"))
        out = os.path.join(tmp, "v.jsonl")
        r = run(cmd(args, "validate", ["--profile", prof, "--config", cfg_path, "--out", out, "--k", "2",
                                       "--rounds", "2", "-q"]))
        if r.returncode != 0:
            fail(f"validate with a profile lacking all_to_all: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        if "inf%" in r.stdout or "nan" in r.stdout.lower():
            fail(f"non-finite MAPE printed:\n{r.stdout}")
        if "cannot price (no model for all_to_all)" not in r.stdout:
            fail(f"the summary must say which plans were left out of the MAPE and why:\n{r.stdout}")
        recs = [json.loads(l) for l in open(out)]
    check_schema(recs)
    a2a = recs[0]
    greedy = next(p for p in a2a["plans"] if p["role"] == "greedy")
    if greedy["predicted_us"] is not None or greedy["rel_error"] is not None \
            or greedy.get("unpriced") != "no model for all_to_all" or None not in greedy["step_predicted_us"]:
        fail(f"greedy all_to_all plan: {greedy}")
    if greedy["wrong"] != 0 or greedy["measured_us"]["samples"] < 1:
        fail(f"the unpriced greedy plan must still be measured and checked: {greedy}")
    chosen = a2a["plans"][0]
    if chosen["predicted_us"] is None or any("all_to_all" in s for s in chosen["steps"]):
        fail(f"chosen plan must avoid all_to_all and be priced: {chosen}")
    errors = []
    n_plans = n_unpriced = 0
    for rec in recs[:-1]:
        for p in {json.dumps(p["steps"]): p for p in rec["plans"]}.values():
            n_plans += 1
            if p["rel_error"] is None:
                n_unpriced += 1
            else:
                errors.append(abs(p["rel_error"]))
    s = recs[-1]
    if s["plans_unpriced"] != n_unpriced or n_unpriced != 1 or s["plans_measured"] != n_plans:
        fail(f"summary plans_measured {s['plans_measured']} / plans_unpriced {s['plans_unpriced']}, "
             f"expected {n_plans} / {n_unpriced} (1)")
    if s["mape"] is None or not close(s["mape"], sum(errors) / len(errors)):
        fail(f"summary mape {s['mape']} != {sum(errors) / len(errors)} over the priced plans")
    print(f"ok   unpriced greedy plan: measured, left out of the MAPE ({s['mape']:.3f} over {len(errors)} plans)")


def check_plan_agreement(args):
    """MPI only: ranks given different profile files choose different plans; redistribute must
    stop with one error naming the ranks that differ (not hang or corrupt data)."""
    if not args.mpiexec:
        print("skip plan agreement: needs --mpiexec")
        return
    with tempfile.TemporaryDirectory() as tmp:
        # dtensor-default plans S(0) -> S(1) as all_gather + slice; without all_gather, all_to_all.
        prof = write_profile_without(tmp, "all_gather")
        mpi = args.mpiexec.split(";")
        common = ["redistribute", "--backend", "mpi", "--mesh", "4", "--shape", "64x64", "--from", "S(0)",
                  "--to", "S(1)"]
        c = mpi + ["-np", "2", args.shardbench] + common + ["--profile", PROFILE] + \
            [":", "-np", "2", args.shardbench] + common + ["--profile", prof]
        r = run(c, timeout=120)
        if r.returncode == 0 or "every rank must execute the same plans" not in r.stderr \
                or "ranks 0,1" not in r.stderr or "ranks 2,3" not in r.stderr:
            fail(f"redistribute with different profiles per rank: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        print("ok   different plans per rank refused: " + next(
            l for l in r.stderr.splitlines() if "same plans" in l)[:200])


def check_planned(args):
    sb = args.shardbench
    # redistribute: the cost plan runs and is verified against the reference.
    r = run(cmd(args, "redistribute", ["--mesh", "2x2", "--shape", "10x7", "--from", "S(0)[7,3],P",
                                       "--to", "R,S(1)", "--profile", PROFILE]), timeout=120)
    if r.returncode != 0 or "OK:" not in r.stdout or "planner: cost" not in r.stdout or "dtensor-default" not in r.stdout:
        fail(f"redistribute --profile: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    print("ok   redistribute --profile: " + [l for l in r.stdout.splitlines() if l.startswith("planner:")][0])
    # Ranks per host: the override, and (MPI) the hostnames the ranks report (two emulated hosts).
    r = run(cmd(args, "redistribute", ["--mesh", "2x2", "--shape", "10x7", "--from", "P,R", "--to", "R,S(0)",
                                       "--profile", PROFILE, "--ranks-per-host", "1"]), timeout=120)
    if r.returncode != 0 or "1 ranks per host" not in r.stdout:
        fail(f"redistribute --ranks-per-host 1: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
    if args.mpiexec:
        env = dict(os.environ)
        wrapped = args.mpiexec.split(";") + ["-np", "4", "/bin/sh", "-c",
                  'SHARDCAL_HOSTNAME=host$(( ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}} / 2 )) exec "$0" "$@"',
                  sb, "redistribute", "--backend", "mpi", "--mesh", "2x2", "--shape", "10x7", "--from", "P,R",
                  "--to", "R,S(0)", "--profile", PROFILE]
        r = run(wrapped, timeout=120, env=env)
        if r.returncode != 0 or "2 ranks per host" not in r.stdout:
            fail(f"redistribute on two emulated hosts must plan with 2 ranks per host\n{r.stdout}\n{r.stderr}")
        print("ok   ranks per host from the ranks' hostnames (2 emulated hosts): 2")
    r = run([sb, "redistribute", "--mesh", "2x2", "--shape", "10x7", "--from", "S(0),R", "--to", "R,S(0)"], timeout=60)
    if r.returncode != 0 or "planner: greedy" not in r.stdout:
        fail(f"redistribute without a profile must say planner: greedy\n{r.stdout}\n{r.stderr}")
    cfg = os.path.join(HERE, "configs", "sweep_profile.json")
    sha = hashlib.sha256(open(PROFILE, "rb").read()).hexdigest()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.jsonl")
        r = run(cmd(args, "sweep", ["--config", cfg, "--out", out, "-q"]))
        if r.returncode != 0:
            fail(f"sweep with a profile: exit {r.returncode}\n{r.stderr}")
        recs = [json.loads(l) for l in open(out)]
        ctx = recs[0]
        pl = ctx.get("planner", {})
        if pl.get("name") != "cost" or pl.get("profile", {}).get("sha256") != sha or pl.get("ranks_per_host", 0) < 1:
            fail(f"context planner {pl}")
        pts = [x for x in recs if x.get("type") == "point"]
        if len(pts) != 2:
            fail(f"{len(pts)} points, expected 2")
        for p in pts:
            if p["transition"]["planner"] != pl:
                fail(f"record planner {p['transition']['planner']} != context {pl}")
            kp = json.loads(p["key"]).get("planner")
            if kp != {"name": "cost", "profile_sha256": sha, "ranks_per_host": pl["ranks_per_host"]}:
                fail(f"key planner {kp}")
            if p["wrong"] != 0:
                fail("wrong elements in a cost-planned transition")
            steps = p["transition"]["plan"]
            if abs(sum(s["predicted_us"] for s in steps) - p["transition"]["predicted_us"]) > 1e-6:
                fail("step predictions do not sum to the plan's")
        # Records and config against the JSON Schemas (when the module is there).
        try:
            import jsonschema
        except ImportError:
            jsonschema = None
            print("note: jsonschema not available, cost-planned results not schema-checked")
        if jsonschema is not None:
            schemas = os.path.join(ROOT, "configs", "schema")
            rv = jsonschema.Draft202012Validator(json.load(open(os.path.join(schemas, "results.schema.json"))))
            for i, rec in enumerate(recs, 1):
                errs = sorted(rv.iter_errors(rec), key=str)
                if errs:
                    fail(f"{out} line {i} does not match results.schema.json: {errs[0].message}")
            sv = jsonschema.Draft202012Validator(json.load(open(os.path.join(schemas, "sweep.schema.json"))))
            for c in (cfg, os.path.join(ROOT, "configs", "validate", "local.json"),
                      os.path.join(HERE, "configs", "small.json")):
                errs = list(sv.iter_errors(json.load(open(c))))
                if errs:
                    fail(f"{c} does not match sweep.schema.json: {errs[0].message}")
            print("ok   schemas: cost-planned results and the validate configs")
        # Another profile (same models, other bytes) must not resume this file.
        other = os.path.join(tmp, "other.json")
        shutil.copy(PROFILE, other)
        with open(other, "a") as f:
            f.write("\n")
        r = run(cmd(args, "sweep", ["--config", cfg, "--resume", out, "--profile", other, "-q"]), timeout=120)
        if r.returncode != 2 or "planned by" not in r.stderr:
            fail(f"--resume with another profile: exit {r.returncode}, expected 2 naming the planners\n{r.stderr}")
        print("ok   resume with another profile refused: " + r.stderr.strip().splitlines()[0][:160])
        # The greedy planner's keys carry no planner field (unchanged from before).
        out2 = os.path.join(tmp, "g.jsonl")
        plain = os.path.join(tmp, "plain.json")
        c = json.load(open(cfg))
        del c["profile"]
        json.dump(c, open(plain, "w"))
        r = run(cmd(args, "sweep", ["--config", plain, "--out", out2, "-q"]))
        if r.returncode != 0:
            fail(f"greedy sweep: exit {r.returncode}\n{r.stderr}")
        g = [json.loads(l) for l in open(out2)]
        if g[0]["planner"] != {"name": "greedy"} or any("planner" in json.loads(x["key"]) for x in g[1:]):
            fail("greedy sweep: context planner must be greedy and keys without a planner")
        if {x["key"] for x in g[1:]} & {x["key"] for x in pts}:
            fail("a greedy point and a cost point share a key")
        print("ok   sweep: planner in context, records and keys; greedy keys unchanged")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=["validate", "badinput", "planned", "unpriced", "plan_agreement"])
    ap.add_argument("--shardbench", required=True)
    ap.add_argument("--backend", default="sim")
    ap.add_argument("--mpiexec", default="")
    args = ap.parse_args()
    {"validate": check_validate, "badinput": check_badinput, "planned": check_planned,
     "unpriced": check_unpriced, "plan_agreement": check_plan_agreement}[args.check](args)


if __name__ == "__main__":
    main()

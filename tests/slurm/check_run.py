#!/usr/bin/env python3
"""tests/slurm/check_run.py - the Slurm end-to-end tests' check of a finished run directory
(tests/slurm/e2e_lib.sh: check_run, check_results).

Usage: check_run.py DIR CONFIG SOURCE_DIR SHARDBENCH MIN_CONTEXTS [HOST0 HOST1]

DIR/results.jsonl: every record valid against configs/schema/results.schema.json, at least
MIN_CONTEXTS context records, every point of CONFIG exactly once (the count `shardbench sweep
--validate-only` gives for the run's world) and none wrong; DIR/profile.json valid against
profile.schema.json. Without hosts: the first context's `slurm` record matches its world and ranks
per host. With HOST0 HOST1 (the two-node cluster): every context names HOST0 with ranks 0,1 and
HOST1 with ranks 2,3, its `slurm` record says 2 nodes and 4 tasks, and some point's group spans
both hosts. Exit 0 with one "ok:" line, else a message naming the file and what is wrong.
"""
import json
import subprocess
import sys

import jsonschema


def main(argv):
    if len(argv) not in (6, 8):
        sys.exit(__doc__)
    d, cfg, src, sb, min_ctx = argv[1], argv[2], argv[3], argv[4], int(argv[5])
    hosts = argv[6:8]

    def schema(name):
        with open(f"{src}/configs/schema/{name}") as f:
            return jsonschema.Draft202012Validator(json.load(f))

    rs = schema("results.schema.json")
    with open(f"{d}/results.jsonl") as f:
        recs = [json.loads(line) for line in f]
    for i, r in enumerate(recs, 1):
        errs = list(rs.iter_errors(r))
        if errs:
            sys.exit(f"{d}/results.jsonl record {i}: {errs[0].message}")
    ctx = [r for r in recs if r["type"] == "context"]
    pts = [r for r in recs if r["type"] == "point"]
    if len(ctx) < min_ctx:
        sys.exit(f"{d}: {len(ctx)} context record(s), expected at least {min_ctx}")
    if hosts:
        h0, h1 = hosts
        for c in ctx:
            found = {h["name"]: sorted(h["ranks"]) for h in c["hosts"]}
            if found != {h0: [0, 1], h1: [2, 3]}:
                sys.exit(f"{d}: context hosts {found}, expected {h0}: ranks 0,1 and {h1}: ranks 2,3")
            s = c.get("slurm") or {}
            if s.get("num_nodes") != 2 or s.get("num_tasks") != 4:
                sys.exit(f"{d}: context slurm record {s}: expected 2 nodes, 4 tasks")
    else:
        s = ctx[0].get("slurm")
        if not s or s["num_tasks"] != ctx[0]["world"] or s["tasks_per_node"] != ctx[0]["ranks_per_host"]:
            sys.exit(f"{d}: the context's slurm record {s} does not match world/ranks_per_host")
    out = subprocess.run([sb, "sweep", "--validate-only", "--backend", "sim", "--world",
                          str(ctx[0]["world"]), "--config", cfg], capture_output=True, text=True,
                         check=True).stdout
    want = int(out.split("ok, ")[1].split()[0])
    keys = [p["key"] for p in pts]
    if len(keys) != want or len(set(keys)) != want:
        sys.exit(f"{d}: {len(keys)} points ({len(set(keys))} distinct), the config has {want}")
    if any(p["wrong"] for p in pts):
        sys.exit(f"{d}: some points have wrong results")
    spanning = ""
    if hosts:
        n = sum(p.get("hosts_spanned") == 2 for p in pts)
        if n == 0:
            sys.exit(f"{d}: no point has a group spanning both nodes (hosts_spanned 2)")
        spanning = f" ({n} across {hosts[0]} and {hosts[1]})"
    with open(f"{d}/profile.json") as f:
        prof = json.load(f)
    errs = list(schema("profile.schema.json").iter_errors(prof))
    if errs:
        sys.exit(f"{d}/profile.json: {errs[0].message}")
    print(f"ok: {d}: {len(pts)} points{spanning} in {len(ctx)} context(s), "
          f"slurm job {ctx[0]['slurm']['job_id']}, profile valid")


if __name__ == "__main__":
    main(sys.argv)

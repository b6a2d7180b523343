#!/usr/bin/python3
"""tests/slurm/merge_shards_test.py - scripts/slurm/merge_shards.py on synthetic shard files
(ctest slurm.merge_shards, label "slurm"; no Slurm needed). Each case writes two shard files of a
4-point config, changes one thing, and checks the exit status and the error line.
Usage: merge_shards_test.py SOURCE_DIR
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

SRC = sys.argv[1]
MERGE = os.path.join(SRC, "scripts", "slurm", "merge_shards.py")

CTX = {
    "type": "context", "config_hash": "abc", "backend": "mpi", "world": 4,
    "hosts": [{"name": "node-a", "ranks": [0, 1]}, {"name": "node-b", "ranks": [2, 3]}],
    "n_hosts": 2, "ranks_per_host": [2, 2], "git_revision": "0123456789ab", "git_dirty": False,
    "library_versions": {"MPI": "Open MPI v4.1.4"},
}


def shard(i, n=2, points=4):
    ctx = copy.deepcopy(CTX)
    ctx["shard"] = {"index": i, "count": n, "points_in_config": points}
    pts = [{"type": "point", "index": k, "key": f"p{k}"} for k in range(points) if k % n == i]
    return [ctx] + pts


def run(case, files, expect_rc, expect_text=""):
    with tempfile.TemporaryDirectory() as d:
        for name, recs in files.items():
            with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                f.write("".join(json.dumps(r) + "\n" for r in recs))
        p = subprocess.run([sys.executable, MERGE, "--out", os.path.join(d, "results.jsonl"), d],
                           capture_output=True, text=True)
        out = p.stdout + p.stderr
        if p.returncode != expect_rc or expect_text not in out:
            sys.exit(f"FAIL {case}: exit {p.returncode} (expected {expect_rc}), output:\n{out}"
                     f"expected to contain: {expect_text!r}")
        if expect_rc == 0 and not os.path.exists(os.path.join(d, "results.jsonl")):
            sys.exit(f"FAIL {case}: exit 0 but no merged file")
        print(f"ok: {case}")


def two(mod0=None, mod1=None):
    a, b = shard(0), shard(1)
    if mod0:
        mod0(a)
    if mod1:
        mod1(b)
    return {"results.shard-0-of-2.jsonl": a, "results.shard-1-of-2.jsonl": b}


def ctx_set(key, value):
    def f(recs):
        recs[0][key] = value
    return f


run("two good shards", two(), 0, "every point of the config once")
run("other host names, same shape (array tasks on other nodes)",
    two(mod1=ctx_set("hosts", [{"name": "node-q", "ranks": [0, 1]}, {"name": "node-r", "ranks": [2, 3]}])),
    0, "4 points")
run("another shape (1 host x 4)",
    two(mod1=lambda r: r[0].update(hosts=[{"name": "n", "ranks": [0, 1, 2, 3]}], n_hosts=1,
                                   ranks_per_host=[4])),
    2, "shape (n_hosts, ranks_per_host, ranks of each host)")
run("same counts, other rank placement",
    two(mod1=ctx_set("hosts", [{"name": "a", "ranks": [0, 2]}, {"name": "b", "ranks": [1, 3]}])),
    2, "shape")
run("another git revision", two(mod1=ctx_set("git_revision", "fedcba987654")), 2,
    "shards measured by different builds")
run("other library versions", two(mod1=ctx_set("library_versions", {"MPI": "Open MPI v5.0.0"})), 2,
    "library_versions")
run("a point without index", two(mod1=lambda r: r[1].pop("index")), 2, 'has no valid "index"')
run("points_in_config differs",
    {"results.shard-0-of-2.jsonl": shard(0, points=4), "results.shard-1-of-2.jsonl": shard(1, points=6)},
    2, "points_in_config 6, other files 4")
run("a second context (resume on new hosts of the same shape) accepted",
    two(mod1=lambda r: r.insert(2, dict(r[0], hosts=[{"name": "x", "ranks": [0, 1]},
                                                       {"name": "y", "ranks": [2, 3]}]))),
    0, "4 points")
run("a second context of another build refused",
    two(mod1=lambda r: r.insert(2, dict(r[0], git_revision="ffffffffffff"))), 2, "git_revision")
run("a missing shard", {"results.shard-0-of-2.jsonl": shard(0)}, 2, "shards [1] of 2 are missing")
print("PASS: merge_shards")

#!/usr/bin/env python3
"""`shardbench calibrate` end to end: a small sim sweep calibrates into a profile whose provenance
holds the file's sha256; bad inputs (empty file, only wrong points, mixed backends, missing file)
exit 2 with one clear message and leave no output file."""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def expect_bad(sb, results, out, needle, what):
    r = run([sb, "calibrate", "--results", *results, "--out", out])
    msg = r.stderr.strip()
    if r.returncode != 2:
        sys.exit(f"FAIL {what}: exit {r.returncode}, expected 2\nstdout: {r.stdout}\nstderr: {msg}")
    if needle not in msg or len(msg.splitlines()) != 1:
        sys.exit(f"FAIL {what}: expected one line containing {needle!r}, got:\n{msg}")
    if os.path.exists(out):
        sys.exit(f"FAIL {what}: {out} was written")
    leftovers = [f for f in os.listdir(os.path.dirname(out)) if f.startswith(os.path.basename(out))]
    if leftovers:
        sys.exit(f"FAIL {what}: temp files left: {leftovers}")
    print(f"ok   {what}: {msg}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shardbench", required=True)
    ap.add_argument("--config", required=True)
    a = ap.parse_args()
    sb = a.shardbench
    with tempfile.TemporaryDirectory() as d:
        res = os.path.join(d, "r.jsonl")
        r = run([sb, "sweep", "--backend", "sim", "--world", "4", "--config", a.config, "--out", res])
        if r.returncode != 0:
            sys.exit(f"FAIL sweep: exit {r.returncode}\n{r.stderr}")
        outdir = os.path.join(d, "out")
        os.mkdir(outdir)
        prof = os.path.join(outdir, "profile.json")
        r = run([sb, "calibrate", "--results", res, "--out", prof, "--name", "testcluster"])
        if r.returncode != 0:
            sys.exit(f"FAIL calibrate: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        for needle in ("holdout", "all_gather", "all_reduce", "effective size", "transitions"):
            if needle not in r.stdout:
                sys.exit(f"FAIL quality table lacks {needle!r}:\n{r.stdout}")
        p = json.load(open(prof))
        if p.get("schema") != "shardcal.profile" or p.get("version") != 1:
            sys.exit(f"FAIL profile schema/version: {p.get('schema')} {p.get('version')}")
        if p.get("cluster") != "testcluster" or p.get("backend") != "sim":
            sys.exit(f"FAIL profile cluster/backend: {p.get('cluster')} {p.get('backend')}")
        sha = hashlib.sha256(open(res, "rb").read()).hexdigest()
        files = p["provenance"]["results"]
        if [f["sha256"] for f in files] != [sha]:
            sys.exit(f"FAIL provenance sha256 {files} != {sha}")
        ops = {m["collective"] for m in p["models"]}
        if not {"all_gather", "all_reduce"} <= ops:
            sys.exit(f"FAIL models: {ops}")
        print(f"ok   calibrate: {len(p['models'])} models, sha256 {sha[:12]}...")
        os.remove(prof)

        empty = os.path.join(d, "empty.jsonl")
        open(empty, "w").close()
        expect_bad(sb, [empty], prof, "no context record", "empty file")

        lines = [json.loads(x) for x in open(res)]
        wrong = os.path.join(d, "wrong.jsonl")
        with open(wrong, "w") as f:
            for rec in lines:
                if rec["type"] == "point":
                    rec = dict(rec, wrong=3)
                f.write(json.dumps(rec) + "\n")
        expect_bad(sb, [wrong], prof, "no usable point", "only wrong points")

        mixed = os.path.join(d, "mixed.jsonl")
        with open(mixed, "w") as f:
            for rec in lines:
                if rec["type"] == "context":
                    rec = dict(rec, backend="mpi")
                f.write(json.dumps(rec) + "\n")
        expect_bad(sb, [res, mixed], prof, "one profile describes one backend", "mixed backends")

        expect_bad(sb, [os.path.join(d, "missing.jsonl")], prof, "cannot open", "missing file")

        garbage = os.path.join(d, "garbage.jsonl")
        with open(garbage, "w") as f:
            f.write(open(res).readline())
            f.write("{not json\n")
            f.write(open(res).readlines()[1])
        expect_bad(sb, [garbage], prof, "invalid JSON", "corrupt line")

        # Valid JSON syntax, but a number no double holds: a clean error, not an internal one.
        huge = os.path.join(d, "huge.jsonl")
        with open(huge, "w") as f:
            first, second = open(res).readlines()[:2]
            f.write(first)
            f.write(second.replace('"samples_s":[', '"samples_s":[1e999,', 1))
            f.write(second)
        expect_bad(sb, [huge], prof, "huge.jsonl:2: a number is outside the range of a double (field /samples_s/0)", "number 1e999")
    print("PASS")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Merge the shard results of a Slurm array sweep (scripts/slurm/calibrate-array.sbatch).

Reads DIR/results.shard-<i>-of-<N>.jsonl (written by `shardbench sweep --shard i/N`), checks
that they belong together (every context record: same config hash, backend, world, shard count
and points_in_config; the same shape, i.e. n_hosts, ranks_per_host and the ranks each host holds
in host order, host names may differ since array tasks run on other nodes; the same build:
git_revision, git_dirty, library_versions; shard indexes 0..N-1 each exactly once), that every
point of the config is present exactly once (every point has an "index" and index % N == the
file's shard; distinct keys; their number == the config's point count recorded in the context's
"shard" record), and writes their concatenation (each file's context record before its
points: a multi-context results file, docs/RESULTS_FORMAT.md) to --out atomically.
Exit 0 merged, 2 with one error line per problem.
"""
import argparse
import glob
import json
import os
import re
import sys
import tempfile


# What every context record of every shard must share, and why (the error's reason).
IDENT_WHY = {
    "config hash/backend/world": "shards of different sweeps",
    "shape (n_hosts, ranks_per_host, ranks of each host)":
        "array tasks of different shapes cannot be calibrated together (other link classes)",
    "build (git_revision, git_dirty, library_versions)": "shards measured by different builds",
}


def context_identity(rec: dict) -> dict:
    keys = list(IDENT_WHY)
    return {
        keys[0]: [rec.get("config_hash"), rec.get("backend"), rec.get("world")],
        keys[1]: [rec.get("n_hosts"), rec.get("ranks_per_host"),
                  [h.get("ranks") for h in rec.get("hosts") or []]],
        keys[2]: [rec.get("git_revision"), rec.get("git_dirty"), rec.get("library_versions")],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="run directory holding results.shard-*-of-*.jsonl")
    ap.add_argument("--out", required=True, help="merged results file to write")
    a = ap.parse_args()
    errors = []
    files = sorted(glob.glob(os.path.join(a.dir, "results.shard-*-of-*.jsonl")))
    if not files:
        print(f"merge_shards: error: no results.shard-*-of-*.jsonl in {a.dir}; did the array tasks run "
              "(sbatch --array=0-<N-1> scripts/slurm/calibrate-array.sbatch)?", file=sys.stderr)
        return 2
    seen_shards = {}
    keys = {}
    ident = None
    ident_at = None
    count = None
    in_config = None
    chunks = []
    for path in files:
        m = re.search(r"results\.shard-(\d+)-of-(\d+)\.jsonl$", path)
        idx, n = int(m.group(1)), int(m.group(2))
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        else:  # a torn last line: the shard did not finish
            errors.append(f"{path}: the last line is incomplete (the task was killed mid-write); resume that shard")
            continue
        shard_idx = None
        for no, line in enumerate(lines, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                errors.append(f"{path}:{no}: not valid JSON ({e})")
                break
            if rec.get("type") == "context":
                this = context_identity(rec)
                if ident is None:
                    ident, ident_at = this, f"{path}:{no}"
                else:
                    for what, (mine, first) in ((w, (this[w], ident[w])) for w in this):
                        if mine != first:
                            errors.append(f"{path}:{no}: {what} {json.dumps(mine)} differs from "
                                          f"{json.dumps(first)} ({ident_at}): {IDENT_WHY[what]}")
                sh = rec.get("shard") or {"index": 0, "count": 1, "points_in_config": rec.get("points_total")}
                if (sh["index"], sh["count"]) != (idx, n):
                    errors.append(f"{path}:{no}: the context says shard {sh['index']}/{sh['count']}, "
                                  f"the file name {idx}/{n}")
                shard_idx = sh["index"]
                count = sh["count"] if count is None else count
                if sh["count"] != count:
                    errors.append(f"{path}:{no}: shard count {sh['count']}, other files {count}")
                if in_config is None:
                    in_config = sh["points_in_config"]
                elif sh["points_in_config"] != in_config:
                    errors.append(f"{path}:{no}: points_in_config {sh['points_in_config']}, other files "
                                  f"{in_config}: shards of different configs")
            elif rec.get("type") == "point":
                k = rec.get("key")
                if shard_idx is None:
                    errors.append(f"{path}:{no}: a point before any context record")
                    break
                if not isinstance(rec.get("index"), int) or rec["index"] < 0:
                    errors.append(f"{path}:{no}: point {k} has no valid \"index\" ({rec.get('index')!r}): "
                                  "cannot check its shard")
                elif rec["index"] % count != shard_idx:
                    errors.append(f"{path}:{no}: point index {rec.get('index')} does not belong to shard "
                                  f"{shard_idx}/{count}")
                if k in keys:
                    errors.append(f"{path}:{no}: point {k} is also in {keys[k]}")
                keys[k] = f"{path}:{no}"
        if idx in seen_shards:
            errors.append(f"{path}: shard {idx} is also in {seen_shards[idx]}")
        seen_shards[idx] = path
        chunks.append(text)
    if count is not None:
        missing = sorted(set(range(count)) - set(seen_shards))
        if missing:
            errors.append(f"shards {missing} of {count} are missing in {a.dir}; rerun those array indexes")
    if in_config is not None and len(keys) != in_config:
        errors.append(f"{len(keys)} distinct points in the shards, the config has {in_config}: "
                      f"{in_config - len(keys)} missing (resume the shards that stopped early)")
    if errors:
        for e in errors:
            print(f"merge_shards: error: {e}", file=sys.stderr)
        return 2
    fd, tmp = tempfile.mkstemp(prefix=".merge.", dir=os.path.dirname(os.path.abspath(a.out)) or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("".join(chunks))
        os.replace(tmp, a.out)
    except BaseException:
        os.unlink(tmp)
        raise
    print(f"merge_shards: {len(files)} shard(s), {len(keys)} points (every point of the config once) -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

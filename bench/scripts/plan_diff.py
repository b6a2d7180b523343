"""Compares `shardbench plan --json --k 3` of two builds over random transitions (plans, prices,
alternatives, errors): a change meant to keep plans must print `0 differ`.

usage: /usr/bin/python3 bench/scripts/plan_diff.py SHARDBENCH_A SHARDBENCH_B [N] [SEED]
(run from the repository root: it reads configs/profiles/dtensor-default.json)
"""
import random
import subprocess
import sys

if len(sys.argv) < 3:
    sys.exit(__doc__)
bins = sys.argv[1:3]
n_cases = int(sys.argv[3]) if len(sys.argv) > 3 else 300
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 22)
meshes = ["4", "2x4", "2x2x2", "2x2x2x2", "3x5", "8x16x8", "4x4x4",
          "1x4", "4x1x2", "2x1x3", "1x2x1x2x1", "2x1x2x1x2", "2x2x2x1x2"]
partials = ["P", "P(max)", "P(min)", "P(avg)"]


def explicit_sizes(total, parts):
    """Random sizes summing to `total`, often with empty shards (all on one rank 30 % of the time)."""
    s = [0] * parts
    if rng.random() < 0.3:
        s[rng.randrange(parts)] = total
        return s
    for _ in range(min(total, 64)):
        s[rng.randrange(parts)] += 1
    s[rng.randrange(parts)] += total - sum(s)
    return s


def placements(shape, mesh_extents):
    out, explicit = [], set()
    for e in mesh_extents:
        k = rng.randrange(7)
        if k == 0:
            out.append("R")
        elif k == 1:
            out.append(rng.choice(partials))
        else:
            d = rng.randrange(len(shape))
            # Explicit sizes on the first mesh dim that shards d (they split the whole extent).
            if k >= 5 and d not in explicit and all(f"S({d})" not in p for p in out):
                out.append(f"S({d})[{','.join(map(str, explicit_sizes(shape[d], e)))}]")
                explicit.add(d)
            else:
                out.append(f"S({d})")
    return ",".join(out)


planned = differ = 0
for _ in range(n_cases):
    mesh = rng.choice(meshes)
    nd_t = rng.randrange(1, 4)
    dims = [rng.choice([1, 3, 7, 10, 64, 1000, 8192]) for _ in range(nd_t)]
    shape = "x".join(map(str, dims))
    dtype = rng.choice(["f32", "bf16", "i32"])
    extents = [int(x) for x in mesh.split("x")]
    a, b = placements(dims, extents), placements(dims, extents)
    args = ["plan", "--profile", "configs/profiles/dtensor-default.json", "--mesh", mesh,
            "--ranks-per-host", "4", "--shape", shape, "--dtype", dtype, "--from", a, "--to", b,
            "--k", "3", "--json"]
    r = [subprocess.run([x] + args, capture_output=True, text=True) for x in bins]
    planned += r[1].returncode == 0
    if (r[0].stdout, r[0].returncode) != (r[1].stdout, r[1].returncode):
        differ += 1
        print("DIFF", mesh, shape, dtype, a, "->", b)
print(f"{n_cases} transitions ({planned} planned), {differ} differ")
sys.exit(1 if differ else 0)

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
meshes = ["4", "2x4", "2x2x2", "2x2x2x2", "3x5", "8x16x8", "4x4x4"]


def placements(nd_t, nd_m):
    out = []
    for _ in range(nd_m):
        k = rng.randrange(5)
        out.append("R" if k == 0 else "P" if k == 1 else f"S({rng.randrange(nd_t)})")
    return ",".join(out)


planned = differ = 0
for _ in range(n_cases):
    mesh = rng.choice(meshes)
    nd_t = rng.randrange(1, 4)
    shape = "x".join(str(rng.choice([1, 3, 7, 10, 64, 1000, 8192])) for _ in range(nd_t))
    dtype = rng.choice(["f32", "bf16", "i32"])
    a, b = placements(nd_t, mesh.count("x") + 1), placements(nd_t, mesh.count("x") + 1)
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

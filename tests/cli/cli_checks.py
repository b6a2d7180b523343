#!/usr/bin/python3
"""End-to-end checks of the shardbench CLI, verified independently of the C++ layout code.

usage: cli_checks.py CHECK SHARDBENCH [MPIEXEC]
Each CHECK exits 0 on success and prints what it compared; non-zero with the reason otherwise.
"""
import json
import math
import subprocess
import sys


def run(cmd, expect_rc=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if expect_rc is not None and p.returncode != expect_rc:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode}, expected {expect_rc}\n"
                 f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def chunk(extent, parts):
    """torch.chunk sizes padded with empty shards (what DTensor does)."""
    c = -(-extent // parts) if parts else 0
    return [max(0, min(c, extent - c * k)) for k in range(parts)]


def check_dump_sim(sb, _mpiexec=None):
    # The README's example: mesh 2x4, 10x7 f32, S(0)[3,7],S(1) -> R,S(0).
    cmd = [sb, "redistribute", "--backend", "sim", "--world", "8", "--mesh", "2x4", "--shape",
           "10x7", "--dtype", "f32", "--from", "S(0)[3,7],S(1)", "--to", "R,S(0)", "--dump"]
    lines = run(cmd, 0).stdout.strip().splitlines()
    assert len(lines) == 8, f"expected 8 lines, got {len(lines)}"
    rows = chunk(10, 4)  # R on mesh dim 0, S(0) chunked over mesh dim 1
    for r, line in enumerate(lines):
        obj = json.loads(line)
        assert obj["rank"] == r, obj
        assert obj["coord"] == [r // 4, r % 4], obj
        k = r % 4
        assert obj["local_shape"] == [rows[k], 7], obj
        assert obj["offset"] == [sum(rows[:k]) if rows[k] else min(10, 3 * k), 0], obj
        want = [((obj["offset"][0] + i) * 7 + j) % 251 for i in range(rows[k]) for j in range(7)]
        assert obj["values"] == want, f"rank {r}: values differ"
    print(f"dump_sim: 8 ranks, shapes/offsets/values match an independent computation")


def check_verify_modes(sb, _mpiexec=None):
    cases = [("2x4", "10x7", "f32", "S(0)[3,7],S(1)", "R,S(0)"),
             ("2x4", "10x7", "bf16", "P(sum),S(1)", "S(1),R"),
             ("2x2", "8x3", "i64", "S(0),S(0)", "R,S(1)"),
             ("8", "5x3", "f16", "S(0)[0,0,5,0,0,0,0,0]", "S(1)"),
             ("2x2x2", "6x5x4", "u8", "S(2),P(max),S(0)[1,5]", "R,S(0),P(min)")]
    for mesh, shape, dtype, frm, to in cases:
        world = str(math.prod(int(x) for x in mesh.split("x")))
        out = run([sb, "redistribute", "--backend", "sim", "--world", world, "--mesh", mesh,
                   "--shape", shape, "--dtype", dtype, "--from", frm, "--to", to], 0).stdout
        assert out.startswith("OK:") and " 0 wrong element(s)" in out, out
    print(f"verify_modes: {len(cases)} transitions verified OK")


BAD = [
    (["--from", "S(0)[3,6],S(1)"], "sizes sum to 9 but tensor dim 0 has extent 10"),
    (["--from", "S(0)[3,x],S(1)"], "at character 8: expected a shard size"),
    (["--from", "S(5),R"], "shards tensor dim 5, out of range"),
    (["--from", "P(prod),R"], "unknown Partial op 'prod'"),
    (["--from", "S(0)"], "give 1 placement(s) but mesh 2x4 has 2 dim(s)"),
    (["--dtype", "f8"], "unknown dtype 'f8'"),
    (["--world", "6"], "mesh 2x4 has 8 ranks but the sim world has 6"),
    (["--shape", "10x-7"], "bad tensor shape"),
]


def check_bad_input(sb, _mpiexec=None):
    base = {"--backend": "sim", "--world": "8", "--mesh": "2x4", "--shape": "10x7",
            "--dtype": "f32", "--from": "S(0),R", "--to": "R,S(1)"}
    for override, message in BAD:
        args = dict(base)
        args.update(dict(zip(override[::2], override[1::2])))
        cmd = [sb, "redistribute"] + [x for kv in args.items() for x in kv]
        p = run(cmd)
        assert p.returncode == 2, f"{override}: exit {p.returncode}, stderr {p.stderr}"
        assert message in p.stderr, f"{override}: message {message!r} not in {p.stderr!r}"
        assert p.stderr.count("error:") == 1, f"{override}: expected one error line: {p.stderr!r}"
    print(f"bad_input: {len(BAD)} invalid inputs each gave one clear error and exit 2")


def check_dump_mpi_equals_sim(sb, mpiexec):
    args = ["redistribute", "--mesh", "2x4", "--shape", "10x7", "--dtype", "f32",
            "--from", "S(0)[3,7],S(1)", "--to", "R,S(0)", "--dump"]
    sim = run([sb] + args + ["--backend", "sim", "--world", "8"], 0).stdout
    mpi = run([mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "8", sb] + args +
              ["--backend", "mpi"], 0).stdout
    assert sim == mpi, f"sim and mpi dumps differ:\n{sim}\n---\n{mpi}"
    print("dump_mpi_equals_sim: identical 8-line dumps")


def check_metadata_mismatch_mpi(sb, mpiexec):
    """Ranks launched with different placements get one clear error each, fast, never a hang."""
    common = ["redistribute", "--backend", "mpi", "--mesh", "2x2", "--shape", "8x4",
              "--to", "R,R", "--timeout", "30"]
    cmd = [mpiexec, "--allow-run-as-root", "--oversubscribe",
           "-np", "1", sb] + common + ["--from", "S(0),R"] + [
           ":", "-np", "3", sb] + common + ["--from", "S(1),R"]
    p = run(cmd)
    assert p.returncode != 0, f"mismatched ranks must fail:\n{p.stdout}\n{p.stderr}"
    lines = [l for l in p.stderr.splitlines() if "ranks disagree" in l]
    assert len(lines) == 4, f"expected the error on all 4 ranks, got:\n{p.stderr}"
    assert all("rank 0 has spec A" in l and "ranks 1-3 have spec B" in l for l in lines), lines
    print("metadata_mismatch_mpi: every rank named the disagreeing ranks and exited non-zero")


def check_plan_traffic(sb, _mpiexec=None):
    # --plan prints what each step moves: S(0)[5,3,4,4] -> S(0) of 16x1024 f32 on 4
    # ranks moves the rows each rank's block gains: counted here from the two row splits.
    old, new, row = [5, 3, 4, 4], chunk(16, 4), 1024 * 4
    starts = lambda sizes: [sum(sizes[:k]) for k in range(len(sizes))]
    so, sn = starts(old), starts(new)
    moved = [[len(set(range(so[s], so[s] + old[s])) & set(range(sn[d], sn[d] + new[d])))
              for d in range(4)] for s in range(4)]
    send = max(sum(moved[s][d] for d in range(4) if d != s) for s in range(4)) * row
    recv = max(sum(moved[s][d] for s in range(4) if s != d) for d in range(4)) * row
    out = run([sb, "redistribute", "--mesh", "4", "--shape", "16x1024", "--from", "S(0)[5,3,4,4]",
               "--to", "S(0)", "--plan"], 0).stdout
    assert "all_to_all" in out and "v-form" in out, out
    assert f"max send {send // 1024} KiB, max recv {recv // 1024} KiB" in out, (send, recv, out)
    matrix = "; ".join(",".join(str(moved[s][d] * 1024) for d in range(4)) for s in range(4))
    assert f"[{matrix}]" in out, (matrix, out)
    # No step on a mesh dim of size 1: every placement there is the same data.
    out = run([sb, "redistribute", "--mesh", "1x4", "--shape", "8x3", "--from", "S(0),R", "--to",
               "R,R", "--plan"], 0).stdout
    assert "(0 steps)" in out, out
    print(f"plan_traffic: max send {send} B, max recv {recv} B, send matrix [{matrix}]; size-1 dim: no step")


if __name__ == "__main__":
    globals()["check_" + sys.argv[1]](*sys.argv[2:])

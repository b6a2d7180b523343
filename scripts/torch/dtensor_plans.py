"""DTensor's redistribution plans with and without a shardcal profile, and `shardbench plan`'s, for
a set of transitions (2-D and 3-D meshes, uneven shapes, nested sharding); one process, torch's
fake process group (no communication). Prints a Markdown table: each plan's steps and its
communication cost under the profile (local steps cost 0, as DTensor counts them).

    .venv/bin/python scripts/torch/dtensor_plans.py --shardbench build/bin/shardbench \
        [--profile configs/profiles/dtensor-default.json] [--ranks-per-host 4]
"""
import argparse
import json
import subprocess

import torch
import torch.distributed as dist
import torch.distributed.tensor._redistribute as rd
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta
from torch.testing._internal.distributed.fake_pg import FakeStore

import shardcal.torch as st

# mesh, shape (bf16), from, to
TRANSITIONS = [
    ("2x4", "8192x8192", "S(0),S(1)", "R,S(0)"),
    ("2x4", "8192x8192", "S(0),R", "R,S(0)"),
    ("2x4", "8192x8192", "P,P", "R,R"),
    ("2x4", "8192x8192", "P,S(0)", "S(1),R"),
    ("2x4", "8192x8192", "S(0),S(0)", "R,R"),
    ("2x4", "8192x8192", "S(0),S(0)", "S(1),S(1)"),
    ("2x4", "8192x8192", "R,P", "S(0),S(1)"),
    ("2x4", "8191x8190", "S(0),S(1)", "S(1),S(0)"),
    ("2x4", "1000x30", "S(1),S(0)", "R,R"),
    ("2x4", "4096x2048", "P,S(1)", "R,S(0)"),
    ("4x2", "8192x8192", "S(0),S(1)", "R,S(0)"),
    ("4x2", "8192x8192", "P,P", "R,R"),
    ("4x2", "8192x8192", "S(0),R", "R,S(0)"),
    ("4x2", "8193x4097", "P,S(0)", "S(0),S(1)"),
    ("2x2x2", "8192x8192", "S(0),S(1),R", "R,S(0),S(1)"),
    ("2x2x2", "8192x8192", "P,S(0),S(1)", "S(1),R,S(0)"),
    ("2x2x2", "8192x8192", "P,P,P", "R,R,R"),
    ("2x2x2", "8192x8192", "S(0),S(0),S(0)", "R,R,R"),
    ("2x2x2", "8192x8192", "S(0),S(0),S(1)", "S(1),S(1),S(0)"),
    ("2x2x2", "1023x517", "S(0),S(1),P", "R,R,S(0)"),
    ("2x2x2", "512x512x64", "S(2),P,S(0)", "S(0),S(1),R"),
    ("2x2x2", "8192x8192", "R,P,S(1)", "S(0),R,R"),
]


def placements(text):
    return tuple(Replicate() if p == "R" else Partial() if p == "P" else Shard(int(p[2:-1]))
                 for p in text.split(","))


def show(p):
    return "R" if p.is_replicate() else "P" if p.is_partial() else f"S({p.dim})"


def dtensor_plan(src, dst, pricer, graph):
    rd._gen_transform_infos.cache_clear()
    rd.clear_redistribute_planner_cache()
    infos = rd._gen_transform_infos_non_cached(src, dst, graph)
    meta = src.tensor_meta
    cost, steps = 0.0, []
    for i in infos:
        a, b = i.src_dst_placements
        cost += pricer.step_us(src.mesh, i.mesh_dim, a, b, i.logical_shape, meta.dtype.itemsize, "bf16")
        steps.append(f"{i.mesh_dim}:{show(a)}→{show(b)}")
    return cost, steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shardbench", required=True)
    ap.add_argument("--profile", default="configs/profiles/dtensor-default.json")
    ap.add_argument("--ranks-per-host", type=int, default=4)
    a = ap.parse_args()
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=8)
    print(f"torch {torch.__version__}; profile `{a.profile}`, {a.ranks_per_host} ranks per host; bf16; "
          "priced as on NCCL (S(a)→S(b) an all-to-all); steps as mesh dim:from→to; cost = communication "
          "under the profile (us)\n")
    print("| mesh | shape | from → to | DTensor, no profile (greedy) | DTensor graph, no profile | "
          "DTensor + profile | shardbench plan | shardcal cheaper: its steps DTensor lacks |")
    print("|---|---|---|---|---|---|---|---|")
    for mesh_s, shape_s, frm, to in TRANSITIONS:
        shape = tuple(int(x) for x in shape_s.split("x"))
        mesh = init_device_mesh("cpu", tuple(int(x) for x in mesh_s.split("x")))
        stride = [1] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            stride[i] = stride[i + 1] * shape[i + 1]
        meta = TensorMeta(torch.Size(shape), tuple(stride), torch.bfloat16)
        src = DTensorSpec(mesh, placements(frm), tensor_meta=meta)
        dst = DTensorSpec(mesh, placements(to), tensor_meta=meta)
        pricer = st.Pricer(st._load_profile(a.profile), a.ranks_per_host, "nccl", "cuda")
        greedy = dtensor_plan(src, dst, pricer, False)
        graph = dtensor_plan(src, dst, pricer, True)
        with st.use_profile(a.profile, ranks_per_host=a.ranks_per_host, backend="nccl", device_type="cuda"):
            mine = dtensor_plan(src, dst, pricer, True)
        r = subprocess.run([a.shardbench, "plan", "--profile", a.profile, "--mesh", mesh_s, "--ranks-per-host",
                            str(a.ranks_per_host), "--shape", shape_s, "--dtype", "bf16", "--from", frm, "--to", to,
                            "--json"], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise SystemExit(f"shardbench plan {mesh_s} {frm} -> {to}: {r.stderr}")
        j = json.loads(r.stdout)
        sc_steps = [f"{s['mesh_dim']}:{s['from']}→{s['to']}".replace("P(sum)", "P") for s in j["steps"]]
        sc_cost = sum(s["cost_us"] for s in j["steps"] if not s["collective"].startswith("local"))
        lacks = ""
        if sc_cost < mine[0] * 0.995:  # cheaper by more than rounding of uneven counts
            extra = [s for s in sc_steps if s not in mine[1]]
            lacks = ", ".join(extra) or "(same steps, other order)"

        def cell(c):
            return f"{' '.join(c[1]) or '—'} ({c[0]:.0f})"
        print(f"| {mesh_s} | {shape_s} | `{frm} → {to}` | {cell(greedy)} | {cell(graph)} | {cell(mine)} | "
              f"{cell((sc_cost, sc_steps))} | {lacks} |")


if __name__ == "__main__":
    main()

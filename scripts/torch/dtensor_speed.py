"""Planning speed of DTensor with and without a shardcal profile (shardcal.torch), one process,
torch's fake process group, CPU time: the graph planner's plan time (caches cleared before each
plan), the first redistribute_cost of a pair (caches cleared: it plans) and redistribute_cost per
call after that (plans cached, as sharding propagation calls it again and again), interleaved
with/without, median of repeats. Prints a Markdown table.

    .venv/bin/python scripts/torch/dtensor_speed.py [--profile P] [--repeats N]
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torch.distributed.tensor._collective_utils as cu
import torch.distributed.tensor._redistribute as rd
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta
from torch.testing._internal.distributed.fake_pg import FakeStore

import shardcal.torch as st

CASES = [  # mesh, from, to (8192 x 8192 bf16)
    ((2, 2, 2), "S(0),S(1),R", "R,S(0),S(1)"),
    ((2, 2, 2), "P,S(0),S(1)", "S(1),R,S(0)"),
    ((2, 2, 2, 2), "S(0),S(0),S(1),S(1)", "S(1),R,S(0),S(0)"),
]


def placements(text):
    out = []
    for p in text.split(","):
        out.append(Replicate() if p == "R" else Partial() if p == "P" else Shard(int(p[2:-1])))
    return tuple(out)


def cpu_us(fn, n):
    t = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - t) / n * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="configs/profiles/dtensor-default.json")
    ap.add_argument("--repeats", type=int, default=15)
    a = ap.parse_args()
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=16)
    meta = TensorMeta(torch.Size((8192, 8192)), (8192, 1), torch.bfloat16)
    print(f"torch {torch.__version__}, profile {a.profile}, median of {a.repeats} interleaved repeats, CPU time")
    print()
    print("| mesh | transition | plan, DTensor (ms) | plan, profile (ms) | first redistribute_cost, DTensor (ms) "
          "| first, profile (ms) | redistribute_cost, DTensor (us/call) | redistribute_cost, profile (us/call) |")
    print("|---|---|---|---|---|---|---|---|")
    for shape, frm, to in CASES:
        mesh = init_device_mesh("cpu", shape)
        src = DTensorSpec(mesh, placements(frm), tensor_meta=meta)
        dst = DTensorSpec(mesh, placements(to), tensor_meta=meta)

        def plan():
            rd._gen_transform_infos.cache_clear()
            rd.clear_redistribute_planner_cache()
            rd._gen_transform_infos_non_cached(src, dst, True)

        def cost():
            cu.redistribute_cost(src, dst)

        res = {k: [] for k in ("plan0", "plan1", "cold0", "cold1", "cost0", "cost1")}
        for _ in range(a.repeats):
            with rd.use_min_cost_redistribution_plan(True):
                res["plan0"].append(cpu_us(plan, 1) / 1e3)
                rd._gen_transform_infos.cache_clear()
                rd.clear_redistribute_planner_cache()
                res["cold0"].append(cpu_us(cost, 1) / 1e3)
                res["cost0"].append(cpu_us(cost, 200))
            with st.use_profile(a.profile, ranks_per_host=1):  # entering clears every cache
                res["cold1"].append(cpu_us(cost, 1) / 1e3)
                res["plan1"].append(cpu_us(plan, 1) / 1e3)
                cost()
                res["cost1"].append(cpu_us(cost, 200))
        m = {k: statistics.median(v) for k, v in res.items()}
        print(f"| {'x'.join(map(str, shape))} | `{frm} -> {to}` | {m['plan0']:.2f} | {m['plan1']:.2f} | "
              f"{m['cold0']:.2f} | {m['cold1']:.2f} | {m['cost0']:.1f} | {m['cost1']:.1f} |")


if __name__ == "__main__":
    main()

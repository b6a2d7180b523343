"""First redistribute call on real gloo ranks: DTensor's default vs a profile installed with
`install(P, mesh=mesh)` (no assertions). Run as 4 ranks, e.g. on one machine:

    torchrun --nproc-per-node 4 scripts/torch/dtensor_first_call_gloo.py [--profile P] [--repeats N]

2x2 CPU mesh, 2 ranks per host as the profile is told (dim 0 "inter-host"; on one machine nothing is
shaped: use scripts/emulate/dtensor-two-hosts.sh for a real slow link). For each pair whose plan is
DTensor's default plan, every repeat times the first `redistribute` after the plan caches were
cleared, once as shipped and once with the profile (order alternating), and each rank records its
own planning time (`_gen_transform_infos_non_cached`) and its wall time; the table (rank 0) gives
medians: the slowest rank's call time (what a program waits for), and the per-rank planning time.
The profile is the program's: made once (what install(P, ranks_per_host=2, mesh=mesh) makes) and
applied around each timed call, its price cache cleared so every price is new. Both modes clear the
caches install() clears (plans, planners, op shardings) and collect garbage (gc.collect) before the
barrier that starts the timed call.
"""
import argparse
import gc
import statistics
import time

import torch
import torch.distributed as dist
import torch.distributed.tensor._redistribute as rd
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

import shardcal.profile
import shardcal.torch as st

CASES = [("R,S(1)", "R,R"), ("R,P", "R,R")]  # plans the profile does not change (docs/PERFORMANCE.md)
SIZES = [256 << 10, 1 << 20, 4 << 20]  # bytes of the global f32 tensor


def placements(text):
    return [Replicate() if p == "R" else Partial() if p == "P" else Shard(int(p[2:-1])) for p in text.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="tests/data/emulate/two-hosts-400mbit.profile.json")
    ap.add_argument("--repeats", type=int, default=30)
    a = ap.parse_args()
    prof = shardcal.profile.load(a.profile)
    dist.init_process_group("gloo")
    if dist.get_world_size() != 4:
        raise SystemExit("run with 4 ranks (torchrun --nproc-per-node 4 ...)")
    mesh = init_device_mesh("cpu", (2, 2))
    adapter = st._make_adapter(prof, 2, None, mesh, None, True)  # what install(prof, 2, mesh=mesh) makes
    plan_s = []

    def timed_gen(*args, **kw):  # wraps whichever planner is installed
        t = time.perf_counter()
        out = timed_gen.inner(*args, **kw)
        plan_s.append(time.perf_counter() - t)
        return out

    rows = []
    for frm, to in CASES:
        for nbytes in SIZES:
            full = torch.arange(nbytes // 4, dtype=torch.float32).reshape(-1, 256)
            pl = placements(frm)
            x = distribute_tensor(full, mesh, [Replicate() if p.is_partial() else p for p in pl])
            x = DTensor.from_local(x.to_local(), mesh, pl, run_check=False)
            tp = placements(to)
            x.redistribute(mesh, tp)  # warm-up: allocations, gloo connections
            res = {m: ([], []) for m in ("default", "profile")}
            for rep in range(a.repeats):
                for mode in (("default", "profile") if rep % 2 == 0 else ("profile", "default")):
                    if mode == "profile":  # the profile a program installed once, applied again
                        st._push(adapter)
                        adapter.pricer._times.clear()  # every price of the plan new
                    st._clear_caches(rd, DTensor)  # what install() clears: plans, planners, op shardings
                    timed_gen.inner = rd._gen_transform_infos_non_cached
                    rd._gen_transform_infos_non_cached = timed_gen
                    plan_s.clear()
                    try:
                        gc.collect()  # install()'s garbage is not collected inside the timed call
                        dist.barrier()
                        t = time.perf_counter()
                        x.redistribute(mesh, tp).to_local().sum().item()
                        el = torch.tensor([time.perf_counter() - t], dtype=torch.float64)
                    finally:
                        rd._gen_transform_infos_non_cached = timed_gen.inner
                        if mode == "profile":
                            st._remove(adapter)
                    dist.all_reduce(el, op=dist.ReduceOp.MAX)
                    res[mode][0].append(el.item())
                    res[mode][1].append(sum(plan_s))
            med = {m: (statistics.median(v[0]) * 1e3, statistics.median(v[1]) * 1e3) for m, v in res.items()}
            rows.append((frm, to, nbytes, med))
    if dist.get_rank() == 0:
        print(f"torch {torch.__version__}; profile {a.profile}; 4 gloo ranks, 2x2 mesh, 2 per host; medians of "
              f"{a.repeats} interleaved repeats; ms")
        print()
        print("| from → to | bytes | first call, slowest rank: default / profile | ratio | planning on rank 0: "
              "default / profile |")
        print("|---|---|---|---|---|")
        for frm, to, nbytes, med in rows:
            d, p = med["default"], med["profile"]
            print(f"| `{frm} → {to}` | {nbytes} | {d[0]:.2f} / {p[0]:.2f} | {d[0] / p[0]:.2f}× | "
                  f"{d[1]:.3f} / {p[1]:.3f} |")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

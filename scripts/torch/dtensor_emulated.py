"""One rank of the measured-benefit run (scripts/emulate/dtensor-two-hosts.sh): DTensor's own
`redistribute` on a 2x2 CPU mesh over gloo, with and without a shardcal profile, interleaved.

Environment: RANK, WORLD_SIZE (4), MASTER_ADDR, MASTER_PORT (torch's env:// rendezvous).
    dtensor_emulated.py PROFILE OUT.jsonl REPEATS
Rank 0 writes one JSON line per (transition, size, mode, repeat) with the slowest rank's time of
two back-to-back redistributes after DTensor's plan caches were cleared: "first_s" plans (the
profile's graph planner or DTensor's default greedy one), "time_s" reuses the cached plan. The
profile is a program's: made once (what install(P, ranks_per_host=2, mesh=mesh) makes) and applied
around each repeat, its price cache cleared; both modes clear the caches install() clears and
collect garbage before the first call.
"""
import gc
import json
import sys
import time

import torch
import torch.distributed as dist
import torch.distributed.tensor._redistribute as rd
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

import shardcal.profile
import shardcal.torch as st
from shardcal.formats import write_text_atomic

CASES = [  # from, to: two across the hosts, more where the choice differs, and two intra-host ones
    ("P,P", "R,R"),
    ("S(0),R", "R,S(0)"),
    ("S(0),S(1)", "R,S(0)"),
    ("P,S(0)", "S(1),R"),
    ("S(1),R", "R,R"),
    ("R,S(1)", "R,R"),
    ("R,P", "R,R"),
]
SIZES = [256 << 10, 1 << 20, 4 << 20]  # bytes of the global f32 tensor


def placements(text):
    return [Replicate() if p == "R" else Partial() if p == "P" else Shard(int(p[2:-1])) for p in text.split(",")]


def make(mesh, nbytes, frm):
    rows = nbytes // 4 // 256
    full = torch.arange(rows * 256, dtype=torch.float32).reshape(rows, 256)
    pl = placements(frm)
    # Partial inputs: start replicated-as-partial (each rank holds the full value; sum = 4x).
    start = [Replicate() if p.is_partial() else p for p in pl]
    dt = distribute_tensor(full, mesh, start)
    if any(p.is_partial() for p in pl):
        dt = DTensor.from_local(dt.to_local(), mesh, pl, run_check=False)
    return dt


def timed(dt, to):
    dist.barrier()
    t = time.perf_counter()
    out = dt.redistribute(dt.device_mesh, to)
    out.to_local().sum().item()
    el = torch.tensor([time.perf_counter() - t], dtype=torch.float64)
    dist.all_reduce(el, op=dist.ReduceOp.MAX)
    return el.item(), out


def main():
    prof_path, out_path, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
    prof = shardcal.profile.load(prof_path)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (2, 2))
    # what install(prof, ranks_per_host=2, mesh=mesh) makes (link classes, price functions, state
    # graphs): made once, as a program installs once
    adapter = st._make_adapter(prof, 2, None, mesh, None, True)
    lines = []
    for frm, to in CASES:
        for nbytes in SIZES:
            dt = make(mesh, nbytes, frm)
            tp = placements(to)
            timed(dt, tp)  # warm-up (allocations, gloo connections)
            for rep in range(repeats):
                for mode in (("dtensor", "profile") if rep % 2 == 0 else ("profile", "dtensor")):
                    if mode == "profile":  # the profile a program installed once, applied again
                        st._push(adapter)
                        adapter.pricer._times.clear()  # every price of the first plan new
                    # what install() clears (plans, planners, op shardings), in both modes
                    st._clear_caches(rd, DTensor)
                    try:
                        gc.collect()  # the same heap state for both modes' timed first call
                        first, out = timed(dt, tp)  # plans
                        steady, out = timed(dt, tp)  # plan cached
                        plan = [(i.mesh_dim, str(i.src_dst_placements[0]), str(i.src_dst_placements[1]))
                                for i in rd._gen_transform_infos(dt._spec, out._spec)]
                    finally:
                        if mode == "profile":
                            st._remove(adapter)
                    if rank == 0:
                        lines.append({"from": frm, "to": to, "bytes": nbytes, "mode": mode, "rep": rep,
                                      "first_s": first, "time_s": steady, "plan": plan})
    if rank == 0:
        write_text_atomic(out_path, "".join(json.dumps(ln) + "\n" for ln in lines))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

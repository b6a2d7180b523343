"""Times PyTorch DTensor's graph-based redistribute planner (Dijkstra, `DTensorRedistributePlanner`)
on one transition, cold (planner cache cleared every call) and warm (planner reused, plan cache
bypassed), on a fake process group (no communication). Prints one JSON line.

usage: python dtensor_plan_time.py MESH FROM TO [--shape 8192x8192] [--repeats 15]
  MESH "2x2x2"; FROM/TO shardcal spelling "S(0),S(1),R" (S(d), R, P = P(sum) only).
"""
import argparse
import json
import statistics
import sys
import time
import warnings


def parse_placements(text, Shard, Replicate, Partial):
    out = []
    for item in text.split(","):
        item = item.strip()
        if item == "R":
            out.append(Replicate())
        elif item in ("P", "P(sum)"):
            out.append(Partial())
        elif item.startswith("S(") and item.endswith(")"):
            out.append(Shard(int(item[2:-1])))
        else:
            sys.exit(f"dtensor_plan_time.py: placement '{item}' not supported (S(d), R, P)")
    return tuple(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mesh")
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--shape", default="8192x8192")
    ap.add_argument("--repeats", type=int, default=15)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Partial, Replicate, Shard
    from torch.distributed.tensor import _redistribute as rd
    from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta
    from torch.testing._internal.distributed.fake_pg import FakeStore

    mesh_shape = tuple(int(x) for x in a.mesh.split("x"))
    world = 1
    for e in mesh_shape:
        world *= e
    if not dist.is_initialized():
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    mesh = init_device_mesh("cpu", mesh_shape)
    shape = torch.Size(int(x) for x in a.shape.split("x"))
    meta = TensorMeta(shape, torch.empty(shape, device="meta", dtype=torch.bfloat16).stride(),
                      torch.bfloat16)
    src = DTensorSpec(mesh, parse_placements(a.src, Shard, Replicate, Partial), tensor_meta=meta)
    dst = DTensorSpec(mesh, parse_placements(a.dst, Shard, Replicate, Partial), tensor_meta=meta)

    def run(cold):
        times = []
        for _ in range(a.repeats):
            if cold:
                rd.clear_redistribute_planner_cache()
            t0 = time.process_time()
            infos = rd._gen_transform_infos_non_cached(src, dst, use_graph_based_transform=True)
            times.append((time.process_time() - t0) * 1e6)
        return statistics.median(times), len(infos)

    run(True)  # imports and first-call setup out of the way
    cold_us, steps = run(True)
    warm_us, _ = run(False)
    print(json.dumps({"mesh": a.mesh, "from": a.src, "to": a.dst, "torch": torch.__version__,
                      "cold_cpu_us": round(cold_us, 1), "warm_cpu_us": round(warm_us, 1),
                      "steps": steps, "repeats": a.repeats}))


if __name__ == "__main__":
    main()

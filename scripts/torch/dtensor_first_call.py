"""First-call planning time: DTensor's default planner vs DTensor with a shardcal profile.

What a redistribute pays on the first call of a (spec, spec) pair is one `_gen_transform_infos`
(its plan cache is empty). One process, torch's fake process group, CPU wall time
(`time.perf_counter`), the two interleaved in every repeat (default first in odd repeats, the
profile first in even ones), plan caches cleared before each timed call, medians. Prints a
Markdown table: both plans, both times, and default / profile (>= 1 means the profile is not
slower). "mesh known": the mesh's link classes computed before the timed call (what a
use_profile(mesh=...) that warmed them would save).

    .venv/bin/python scripts/torch/dtensor_first_call.py [--profile P] [--repeats N]
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torch.distributed.tensor._redistribute as rd
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta
from torch.testing._internal.distributed.fake_pg import FakeStore

import shardcal.torch as st

# mesh, ranks per host, from, to: the emulated two-host rows of docs/PERFORMANCE.md (2x2, 2 per
# host) and 2x4 / 2x2x2 cases on 4-rank hosts
CASES = [((2, 2), 2, "R,P", "R,R"), ((2, 2), 2, "R,S(1)", "R,R"), ((2, 2), 2, "P,P", "R,R"),
         ((2, 2), 2, "S(0),R", "R,S(0)"), ((2, 2), 2, "S(1),R", "R,R"),
         ((2, 4), 4, "R,S(0)", "R,R"), ((2, 4), 4, "S(0),R", "R,R"), ((2, 2, 2), 4, "S(0),S(1),R", "R,S(0),S(1)")]


def placements(text):
    return tuple(Replicate() if p == "R" else Partial() if p == "P" else Shard(int(p[2:-1])) for p in text.split(","))


def plan_text(infos):
    return " ".join(f"{i.mesh_dim}:{i.src_dst_placements[0]}→{i.src_dst_placements[1]}" for i in infos)


def first_call(src, dst):
    rd._gen_transform_infos.cache_clear()
    rd.clear_redistribute_planner_cache()
    t = time.perf_counter()
    infos = rd._gen_transform_infos(src, dst)
    return (time.perf_counter() - t) * 1e3, infos


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="configs/profiles/dtensor-default.json")
    ap.add_argument("--repeats", type=int, default=31)
    ap.add_argument("--shape", default="1024x1024", help="global tensor shape (f32)")
    a = ap.parse_args()
    try:
        shape = tuple(int(x) for x in a.shape.split("x"))
    except ValueError:
        ap.error(f"--shape {a.shape!r}: write e.g. 1024x1024")
    if min(shape) < 1 or a.repeats < 1:
        ap.error("--shape sizes and --repeats must be >= 1")
    try:
        st.runtime_estimator(a.profile)  # reads and checks the profile (and torch) once, before timing
    except st.ShardcalTorchError as e:
        ap.error(str(e))
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=8)
    meta = TensorMeta(torch.Size(shape), tuple(torch.empty(shape, device="meta").stride()), torch.float32)
    print(f"torch {torch.__version__}; profile {a.profile}; {a.shape} f32; median of {a.repeats} interleaved "
          "repeats; ms of wall time for the first _gen_transform_infos of a pair")
    print()
    print("| mesh | ranks/host | from → to | DTensor default plan | plan with profile | same | default (ms) "
          "| profile (ms) | profile, mesh known (ms) | default / profile |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mesh_shape, rph, frm, to in CASES:
        mesh = init_device_mesh("cpu", mesh_shape)
        src = DTensorSpec(mesh, placements(frm), tensor_meta=meta)
        dst = DTensorSpec(mesh, placements(to), tensor_meta=meta)
        times = {"default": [], "profile": [], "warm": []}
        plans = {}
        for r in range(a.repeats):
            for which in (("default", "profile", "warm") if r % 2 else ("warm", "profile", "default")):
                if which == "default":
                    ms, infos = first_call(src, dst)
                else:
                    with st.use_profile(a.profile, ranks_per_host=rph) as pricer:
                        if which == "warm":  # the mesh's link classes and backends known before
                            pricer.mesh_info(mesh)
                        ms, infos = first_call(src, dst)
                times[which].append(ms)
                plans[which] = plan_text(infos)
        d, p, w = (statistics.median(times[k]) for k in ("default", "profile", "warm"))
        same = "yes" if plans["default"] == plans["profile"] else "no"
        print(f"| {'x'.join(map(str, mesh_shape))} | {rph} | `{frm} → {to}` | {plans['default']} | "
              f"{plans['profile']} | {same} | {d:.3f} | {p:.3f} | {w:.3f} | {d / p:.2f}× |")


if __name__ == "__main__":
    main()

"""torch.compile's collective estimates beside a shardcal profile's, and the hook's cost per call.

One process, torch's fake process group (no GPU, no communication): traces the functional
collectives (all_gather, reduce_scatter, all_reduce, all_to_all) on every dim of --mesh at each
size with make_fx, then prints a Markdown table: torch's own analytical estimate
(`comm_analysis.estimate_nccl_collective_runtime_from_fx_node`, what the overlap scheduler uses
without the hook) beside `shardcal.torch.runtime_estimator`'s, and (--speed) the hook's cost per
call: the first call for a node, a repeated call (cached), and a new node of an already priced
shape, medians of --repeats.

    .venv/bin/python scripts/torch/compile_estimates.py --profile P --mesh 2x2 --ranks-per-host 2 [--speed]
"""
import argparse
import statistics
import time
import warnings

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch._inductor.comm_analysis import estimate_nccl_collective_runtime_from_fx_node
from torch.distributed.device_mesh import init_device_mesh
from torch.fx.experimental.proxy_tensor import make_fx
from torch.testing._internal.distributed.fake_pg import FakeStore

import shardcal.torch as st

warnings.filterwarnings("ignore", category=FutureWarning)


def trace(mesh, d, coll, table_bytes):
    """A graph with one collective on mesh dim d moving table_bytes (the table's convention), f32."""
    n = int(mesh.shape[d])
    numel = table_bytes // 4
    if coll == "all_gather":
        x = torch.ones(numel // n)
        f = lambda t: funcol.all_gather_tensor(t, 0, (mesh, d))
    elif coll == "reduce_scatter":
        x = torch.ones(numel)
        f = lambda t: funcol.reduce_scatter_tensor(t, "sum", 0, (mesh, d))
    elif coll == "all_reduce":
        x = torch.ones(numel)
        f = lambda t: funcol.all_reduce(t, "sum", (mesh, d))
    else:
        x = torch.ones(numel)
        f = lambda t: funcol.all_to_all_single(t, None, None, (mesh, d))
    gm = make_fx(f, tracing_mode="fake")(x)
    return next(nd for nd in gm.graph.nodes if nd.op == "call_function" and "wait" not in str(nd.target))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="configs/profiles/dtensor-default.json")
    ap.add_argument("--mesh", default="2x8", help="mesh shape over the fake world (default 2x8)")
    ap.add_argument("--ranks-per-host", type=int, default=8)
    ap.add_argument("--sizes", default="65536,1048576,8388608,67108864", help="bytes, the table's convention")
    ap.add_argument("--speed", action="store_true", help="also time the hook per call")
    ap.add_argument("--repeats", type=int, default=20001)
    a = ap.parse_args()
    try:
        shape = tuple(int(x) for x in a.mesh.split("x"))
        sizes = [int(x) for x in a.sizes.split(",")]
    except ValueError:
        ap.error(f"--mesh {a.mesh!r} / --sizes {a.sizes!r}: write e.g. --mesh 2x8 --sizes 65536,1048576")
    if min(shape) < 1 or min(sizes) < 16 or a.repeats < 1:
        ap.error("mesh sizes must be >= 1, sizes >= 16 bytes, --repeats >= 1")
    try:
        est = st.runtime_estimator(a.profile, ranks_per_host=a.ranks_per_host)
    except st.ShardcalTorchError as e:
        ap.error(str(e))
    world = 1
    for s in shape:
        world *= s
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    mesh = init_device_mesh("cpu", shape)
    print(f"torch {torch.__version__}; profile {a.profile}; mesh {a.mesh} over {world} fake ranks, "
          f"{a.ranks_per_host} per host; f32; ms")
    print()
    print("| collective | mesh dim (group of rank 0) | link class | bytes | torch analytical (ms) | profile (ms) "
          "| torch / profile |")
    print("|---|---|---|---|---|---|---|")
    nodes = []
    for coll in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all"):
        for d in range(len(shape)):
            for size in sizes:
                node = trace(mesh, d, coll, size)
                nodes.append(node)
                ours = est(node, None)
                torch_ms = estimate_nccl_collective_runtime_from_fx_node(node)
                q = est.query(node)
                lc = q[1]
                ranks = dist.get_process_group_ranks(mesh.get_group(d))
                link = f"{lc['hosts']} host(s) x {lc['ranks_per_host']}, {lc['concurrent_groups']} at once"
                ratio = f"{torch_ms / ours:.3g}" if ours else "-"
                print(f"| {coll} | {d} ({ranks}) | {link} | {size} | {torch_ms:.4f} | "
                      f"{'-' if ours is None else f'{ours:.4f}'} | {ratio} |")
    if not a.speed:
        return
    print()
    # First call of a node (a fresh estimator each time: group lookup, bytes, predict), a repeated
    # call (the per-node cache), a new node of a priced shape (bytes again, the price cache).
    first, cached, new_node = [], [], []
    node = nodes[0]
    twins = [trace(mesh, 0, "all_gather", sizes[0]) for _ in range(200)]
    for _ in range(min(a.repeats, 101)):
        e = st.runtime_estimator(a.profile, ranks_per_host=a.ranks_per_host)
        t = time.perf_counter()
        e(node, None)
        first.append(time.perf_counter() - t)
        t = time.perf_counter()
        for tw in twins:
            e(tw, None)
        new_node.append((time.perf_counter() - t) / len(twins))
    for _ in range(a.repeats):
        t = time.perf_counter()
        est(node, None)
        cached.append(time.perf_counter() - t)
    us = lambda v: statistics.median(v) * 1e6
    print(f"hook cost per call (median, us): first call of a node {us(first):.1f}; a new node of a priced shape "
          f"{us(new_node):.1f}; a repeated call {us(cached):.2f} ({len(cached)} calls)")


if __name__ == "__main__":
    main()

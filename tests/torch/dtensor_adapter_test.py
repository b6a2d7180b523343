"""shardcal.torch against real torch (from PyPI), in one process on torch's fake process group
(no communication). Usage: dtensor_adapter_test.py SHARDBENCH REPO CASE

  default     configs/profiles/dtensor-default.json with DTensor's devices per host: every S->R,
              P->R and P->S edge the graph planner expands equals unpatched DTensor's (1e-9 rel)
  calibrated  a profile from `shardbench calibrate` (a sim sweep) and dtensor-default: every edge
              equals `shardbench predict` for the collective DTensor runs, its padded bytes and
              the mesh dim's link class (1e-6 rel); redistribute_cost is the sum of its plan's steps
  errors      bad profiles, ranks per host, an unsupported torch and an unpriceable mesh raise one
              ShardcalTorchError with DTensor untouched; exit restores everything (also after an
              exception) and clears the plan caches
"""
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.distributed.tensor._collective_utils as cu
import torch.distributed.tensor._ops.utils as ops_utils
import torch.distributed.tensor._redistribute as rd
import torch.distributed.tensor._utils as tutils
from torch.distributed.device_mesh import _mesh_resources, init_device_mesh
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta
from torch.testing._internal.distributed.fake_pg import FakeStore

import shardcal.torch as st

WORLD = 8
MESHES = [(8,), (2, 4), (4, 2), (2, 2, 2)]


def fail(msg):
    sys.exit(f"FAIL: {msg}")


def meta(shape, dtype):
    stride = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        stride[i] = stride[i + 1] * shape[i + 1]
    return TensorMeta(torch.Size(shape), tuple(stride), dtype)


def states(ndim, tensor_dims):
    """Every source placement tuple over R, S(t), P with the default shard order."""
    opts = [Replicate(), Partial()] + [Shard(t) for t in range(tensor_dims)]
    for pl in itertools.product(opts, repeat=ndim):
        order = DTensorSpec.compute_default_shard_order(pl)
        yield rd.DTensorRedistributePlanner.DistState(tuple(pl), order)


def edges(planner, src):
    """{dst_state: cost} the planner expands from src (its own cost_function)."""
    return planner.get_next_state(src.placements, src.tensor_dim_to_mesh_dim)


def changed(src, dst):
    for d, (a, b) in enumerate(zip(src.placements, dst.placements)):
        if a != b:
            return d, a, b
    return None


def kind(a, b):
    if a.is_shard() and b.is_replicate():
        return "S->R"
    if a.is_partial() and b.is_replicate():
        return "P->R"
    if a.is_partial() and b.is_shard():
        return "P->S"
    if a.is_shard() and b.is_shard():
        return "S->S"
    return None


def fresh_planner(mesh, m):
    rd.clear_redistribute_planner_cache()
    return rd.get_redistribute_planner(mesh, m)


def case_default(repo):
    prof = os.path.join(repo, "configs", "profiles", "dtensor-default.json")
    checked = {"S->R": 0, "P->R": 0, "P->S": 0}
    worst = 0.0
    for rph in (1, 2, 4, 8):
        # DTensor reads devices per host from the device count; the test sets it for the baseline.
        orig = _mesh_resources.num_devices_per_host
        _mesh_resources.num_devices_per_host = staticmethod(lambda _t, r=rph: r)
        cu.MeshTopoInfo.build_from_mesh.cache_clear()
        try:
            for shape in MESHES:
                mesh = init_device_mesh("cpu", shape)
                for tshape, dtype in (((64, 32), torch.bfloat16), ((16, 8, 32), torch.float32)):
                    m = meta(tshape, dtype)
                    base = {}
                    planner = fresh_planner(mesh, m)
                    for src in states(len(shape), len(tshape)):
                        for dst, c in edges(planner, src).items():
                            base[(src, dst)] = c
                    with st.use_profile(prof, ranks_per_host=rph):
                        planner = fresh_planner(mesh, m)
                        for (src, dst), want in base.items():
                            d, a, b = changed(src, dst)
                            k = kind(a, b)
                            if k not in checked:
                                continue
                            got = planner.cost_function(src, dst)
                            rel = abs(got - want) / abs(want)
                            worst = max(worst, rel)
                            if rel > 1e-9:
                                fail(f"mesh {shape} rph {rph} {tshape} {dtype}: {src} -> {dst}: adapter {got} us, "
                                     f"DTensor {want} us (rel {rel:.3g})")
                            checked[k] += 1
        finally:
            _mesh_resources.num_devices_per_host = orig
            cu.MeshTopoInfo.build_from_mesh.cache_clear()
    if min(checked.values()) < 50:
        fail(f"too few edges checked: {checked}")
    # The check can fail: other devices per host than DTensor's give other prices on a 2x4 mesh.
    mesh = init_device_mesh("cpu", (2, 4))
    m = meta((64, 32), torch.float32)
    src = next(s for s in states(2, 2) if s.placements == (Shard(0), Replicate()))
    base = {k: v for k, v in edges(fresh_planner(mesh, m), src).items()}
    with st.use_profile(prof, ranks_per_host=4):
        other = edges(fresh_planner(mesh, m), src)
    if all(abs(other[k] - v) <= 1e-9 * abs(v) for k, v in base.items()):
        fail("4 ranks per host priced the same as DTensor's 1 device per host")
    print(f"default: {sum(checked.values())} edges equal DTensor's ({checked}), worst relative difference "
          f"{worst:.3g}")


def calibrated_profile(sb, repo, tmp):
    res = os.path.join(tmp, "r.jsonl")
    out = os.path.join(tmp, "calibrated.json")
    cfg = os.path.join(repo, "tests", "torch", "calibrate.json")
    for cmd in ([sb, "sweep", "--backend", "sim", "--world", str(WORLD), "--config", cfg, "--out", res],
                [sb, "calibrate", "--results", res, "--out", out, "--name", "torch-test"]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            fail(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return out


def expected_query(shape, d, a, b, logical, itemsize):
    """What DTensor runs on a CPU mesh with the fake (non-gloo) backend, and its bytes in the
    collective table's convention (torch.chunk sizes padded to the largest shard)."""
    n = shape[d]
    ls = list(logical)
    if a.is_shard() and b.is_replicate():
        ls[a.dim] = math.ceil(ls[a.dim] / n)
        return "all_gather", n * math.prod(ls) * itemsize
    if a.is_shard() and b.is_shard():  # CPU mesh: all-gather + local chunk
        ls[a.dim] = math.ceil(ls[a.dim] / n)
        ls[b.dim] = math.ceil(ls[b.dim] / n) * n
        return "all_gather", n * math.prod(ls) * itemsize
    if a.is_partial() and b.is_replicate():
        return "all_reduce", math.prod(ls) * itemsize
    if a.is_partial() and b.is_shard():
        ls[b.dim] = math.ceil(ls[b.dim] / n) * n
        return "reduce_scatter", math.prod(ls) * itemsize
    return None


def link_class(shape, d, rph):
    """Hosts a group of mesh dim d spans (row-major ranks, host = rank // rph), its ranks per
    host, and the groups of this dim that share a host."""
    n, later = shape[d], math.prod(shape[d + 1:])
    group = [k * later for k in range(n)]  # the group holding rank 0
    hosts = len({r // rph for r in group})
    group_rph = n // hosts
    return n, hosts, group_rph, max(1, min(rph, math.prod(shape)) // group_rph)


def predict_cli(sb, prof, coll, n, hosts, rph, conc, nbytes, dtype, memo):
    key = (prof, coll, n, hosts, rph, conc, nbytes, dtype)
    if key not in memo:
        r = subprocess.run([sb, "predict", "--profile", prof, "--collective", coll, "--group-size", str(n),
                            "--hosts", str(hosts), "--ranks-per-host", str(rph), "--concurrent-groups", str(conc),
                            "--bytes", str(nbytes), "--dtype", dtype, "--json"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            fail(f"shardbench predict {key}: exit {r.returncode}: {r.stderr}")
        memo[key] = json.loads(r.stdout)["time_us"]
    return memo[key]


def case_calibrated(sb, repo):
    memo = {}
    with tempfile.TemporaryDirectory() as tmp:
        profiles = [calibrated_profile(sb, repo, tmp), os.path.join(repo, "configs", "profiles", "dtensor-default.json")]
        n_edges = 0
        worst = 0.0
        for prof, rph in itertools.product(profiles, (1, 2, 4)):
            for shape in MESHES:
                mesh = init_device_mesh("cpu", shape)
                # Uneven on purpose: 37 rows, 10 columns (padding), and an even one.
                for tshape, dtype, dname in (((37, 10), torch.float32, "f32"), ((64, 64), torch.bfloat16, "bf16")):
                    m = meta(tshape, dtype)
                    with st.use_profile(prof, ranks_per_host=rph):
                        planner = fresh_planner(mesh, m)
                        for src in states(len(shape), len(tshape)):
                            for dst, got in edges(planner, src).items():
                                d, a, b = changed(src, dst)
                                logical = planner.get_logical_shape(src, d, tshape)
                                q = expected_query(shape, d, a, b, logical, dtype.itemsize)
                                if q is None:
                                    if got not in (0.0, float("inf")):
                                        fail(f"{src} -> {dst}: a local step priced {got}")
                                    continue
                                want = predict_cli(sb, prof, q[0], *link_class(shape, d, rph), q[1], dname, memo)
                                rel = abs(got - want) / abs(want)
                                worst = max(worst, rel)
                                if rel > 1e-6:
                                    fail(f"{os.path.basename(prof)} mesh {shape} rph {rph} {tshape}: {src} -> {dst} "
                                         f"({q}): adapter {got} us, shardbench predict {want} us")
                                n_edges += 1
                        # redistribute_cost = the sum of its (profile-priced) plan's steps.
                        src = DTensorSpec(mesh, tuple([Partial()] + [Shard(0)] * (len(shape) - 1)), tensor_meta=m)
                        dst = DTensorSpec(mesh, tuple([Shard(1)] + [Replicate()] * (len(shape) - 1)), tensor_meta=m)
                        plan = rd._gen_transform_infos(src, dst)
                        total = 0.0
                        for i in plan:
                            q = expected_query(shape, i.mesh_dim, *i.src_dst_placements, i.logical_shape,
                                               dtype.itemsize)
                            if q is not None:
                                total += predict_cli(sb, prof, q[0], *link_class(shape, i.mesh_dim, rph), q[1],
                                                     dname, memo)
                        got = cu.redistribute_cost(src, dst)
                        if abs(got - total) > 1e-6 * total or ops_utils.redistribute_cost is not cu.redistribute_cost:
                            fail(f"redistribute_cost {got} != the sum of its plan's steps {total} ({plan})")
        if n_edges < 500:
            fail(f"only {n_edges} edges checked")
        print(f"calibrated: {n_edges} edges equal shardbench predict ({len(memo)} distinct queries), worst relative "
              f"difference {worst:.3g}")


PATCHED = [(rd.DTensorRedistributePlanner, "setup_cost_callbacks"), (rd, "_FORCE_MIN_COST_REDISTRIBUTION_PLAN"),
           (cu, "redistribute_cost"), (tutils, "redistribute_cost"), (ops_utils, "redistribute_cost")]


def snapshot():
    return [getattr(o, n) for o, n in PATCHED]


def expect_error(what, fn, needle, before):
    try:
        fn()
    except st.ShardcalTorchError as e:
        msg = str(e)
        if needle not in msg or "\n" in msg:
            fail(f"{what}: message {msg!r} lacks {needle!r} (or is not one line)")
    else:
        fail(f"{what}: no ShardcalTorchError")
    if any(a is not b for a, b in zip(snapshot(), before)):
        fail(f"{what}: DTensor left patched")
    print(f"  ok {what}: {msg}")


def case_errors(repo):
    prof = os.path.join(repo, "configs", "profiles", "dtensor-default.json")
    before = snapshot()
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            f.write('{"schema": "shardcal.profile", "version": 1, "models": [')
        expect_error("missing profile", lambda: st.install(os.path.join(tmp, "nope.json")), "nope.json", before)
        expect_error("malformed profile", lambda: st.install(bad), "not valid JSON", before)
        expect_error("wrong profile type", lambda: st.install(3), "profile must be", before)
        expect_error("ranks_per_host 0", lambda: st.install(prof, ranks_per_host=0), "ranks_per_host", before)
        doc = json.load(open(prof))
        doc["models"] = [m for m in doc["models"] if m["collective"] != "all_reduce"]
        expect_error("unpriceable mesh", lambda: st.install(doc, mesh=init_device_mesh("cpu", (2, 4))),
                     "cannot price all_reduce", before)
        real = torch.__version__
        try:
            torch.__version__ = "2.14.1"
            expect_error("unsupported torch", lambda: st.install(prof), "supports torch >= 2.15, < 2.16", before)
        finally:
            torch.__version__ = real
    # Caches cleared on enter and exit; everything restored after an exception in the block.
    mesh = init_device_mesh("cpu", (2, 4))
    m = meta((64, 32), torch.float32)
    src = DTensorSpec(mesh, (Shard(0), Shard(1)), tensor_meta=m)
    dst = DTensorSpec(mesh, (Replicate(), Shard(0)), tensor_meta=m)
    rd._gen_transform_infos(src, dst)
    try:
        with st.use_profile(prof, ranks_per_host=4):
            if rd._gen_transform_infos.cache_info().currsize != 0 or rd._planner_cache:
                fail("plan caches not cleared on enter")
            if rd._FORCE_MIN_COST_REDISTRIBUTION_PLAN is not True or cu.redistribute_cost is before[2]:
                fail("not patched inside the block")
            rd._gen_transform_infos(src, dst)
            raise KeyError("boom")
    except KeyError:
        pass
    if any(a is not b for a, b in zip(snapshot(), before)):
        fail("DTensor left patched after an exception in the block")
    if rd._gen_transform_infos.cache_info().currsize != 0 or rd._planner_cache:
        fail("plan caches not cleared on exit")
    st.install(prof)
    expect_error("second install", lambda: st.install(prof), "already installed", snapshot())
    st.uninstall()
    st.uninstall()  # a no-op
    if any(a is not b for a, b in zip(snapshot(), before)):
        fail("uninstall did not restore DTensor")
    print("errors: ok")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sb, repo, case = sys.argv[1:]
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=WORLD)
    {"default": lambda: case_default(repo), "calibrated": lambda: case_calibrated(sb, repo),
     "errors": lambda: case_errors(repo)}[case]()


if __name__ == "__main__":
    main()

"""shardcal.torch.runtime_estimator (torch.compile's custom_runtime_estimation hook) against real
torch on CPU, torch's fake process group (16 ranks), no GPU. Usage:
inductor_estimator_test.py SHARDBENCH REPO CASE

  parity   seeded random traced graphs (make_fx of the functional collectives: all_gather,
           reduce_scatter, all_reduce, all_to_all even and uneven, broadcast, the _coalesced forms,
           random shapes and dtypes) on meshes 16, 2x8, 4x4, 8x2, 2x2x4 and a transposed 8x2 at
           ranks 0 and 11 (separate processes), 8 and 4 ranks per host; then torch's own bucketing
           passes merge them (all_gather_into_tensor_out buckets). Every collective node priced as
           `shardbench predict --json` prices the same collective, group size, hosts, ranks per
           host, concurrent groups and bytes, worked out here from the shapes traced and the
           group's rank list (1e-6 rel), also with override_size (0 and torch's bytes); other
           nodes None
  hook     use_profile sets custom_runtime_estimation and restores the previous value on exit,
           nested, after an exception, with compile_hook=False; install/uninstall; an unsupported
           torch is one error naming the supported versions; the overlap scheduler reads the hook
           from the config; a node it cannot resolve falls back (None) with one warning
  overlap  torch's overlap scheduler (schedule_overlap_bucketing, compute priced by a fixed 1 ms
           per matmul, analytical: no GPU) on one traced graph with two inter-host all_gathers:
           the built-in DTensor profile prices them cheap and they are bucketed into one; a slow
           inter-host profile prices each above the compute that hides it and they stay apart
"""
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import warnings

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.fx.experimental.proxy_tensor import make_fx
from torch.testing._internal.distributed.fake_pg import FakeStore

import shardcal.torch as st

WORLD = 16
DTYPES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16", torch.float64: "f64",
          torch.int32: "i32"}
warnings.filterwarnings("ignore", category=FutureWarning)  # funcol's renamed entry points


def fail(msg):
    sys.exit(f"FAIL: {msg}")


def link_class(ranks, groups, rph):
    """By hand from global ranks (host = rank // rph): group size, hosts spanned, ranks per host
    (one when the group does not split evenly over its hosts), groups of the dim at once on one
    host = round(groups x hosts spanned / hosts covered)."""
    hosts = len({r // rph for r in ranks})
    n_hosts = len({r // rph for g in groups for r in g})
    conc = max(1, int(math.floor(len(groups) * hosts / n_hosts + 0.5)))
    if len(ranks) % hosts:
        return len(ranks), len(ranks), 1, conc
    return len(ranks), hosts, len(ranks) // hosts, conc


def mesh_dim_groups(mesh_ranks, d):
    """Every group of mesh dim d of a mesh given as a nested rank list (torch tensor)."""
    t = mesh_ranks.movedim(d, -1)
    return t.reshape(-1, t.shape[-1]).tolist()


class Predict:
    """shardbench predict --json, memoized."""

    def __init__(self, sb):
        self.sb = sb
        self.memo = {}

    def __call__(self, prof, coll, lc, nbytes=None, dtype=None, counts=None):
        key = (prof, coll, lc, nbytes, dtype, counts)
        if key not in self.memo:
            n, hosts, rph, conc = lc
            cmd = [self.sb, "predict", "--profile", prof, "--collective", coll, "--group-size", str(n),
                   "--hosts", str(hosts), "--ranks-per-host", str(rph), "--concurrent-groups", str(conc), "--json"]
            cmd += ["--counts", ",".join(map(str, counts))] if counts else ["--bytes", str(nbytes)]
            cmd += ["--dtype", dtype] if dtype else []
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                fail(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr}")
            self.memo[key] = json.loads(r.stdout)["time_us"] / 1e3
        return self.memo[key]


def nbytes(shape, dtype):
    return math.prod(shape) * torch.empty((), dtype=dtype).element_size()


def random_program(rng, mesh, ndims):
    """A function of fresh inputs issuing random functional collectives on random mesh dims, and
    what each must be priced as: (op, mesh dim, table bytes, torch's in+out bytes, dtype, counts)."""
    ops = []
    inputs = []
    shape_of = lambda n: [n * rng.randint(1, 6)] + [rng.choice([1, 3, 16, 64, 100]) for _ in range(rng.randint(0, 2))]
    # Random collectives, then an FSDP-like run of all_gathers and reduce_scatters of one dtype on
    # one mesh dim, which torch's bucketing passes merge.
    fsdp_dim, fsdp_dtype = rng.randrange(ndims), rng.choice(list(DTYPES))
    plan = [(rng.randrange(ndims), rng.choice(["all_gather", "reduce_scatter", "all_reduce", "all_to_all",
                                                "all_to_all_uneven", "broadcast", "ag_coalesced", "rs_coalesced",
                                                "ar_coalesced"]), rng.choice(list(DTYPES)))
            for _ in range(rng.randint(5, 8))]
    plan += [(fsdp_dim, k, fsdp_dtype) for k in ["all_gather"] * rng.randint(2, 3) + ["reduce_scatter"] * 2]
    for d, kind, dtype in plan:
        n = int(mesh.shape[d])
        if kind.endswith("coalesced"):
            shapes = [shape_of(n) for _ in range(rng.randint(2, 3))]
            dts = [dtype, rng.choice([dtype, torch.float32])][:len(shapes)] + [dtype] * (len(shapes) - 2)
        else:
            shapes, dts = [shape_of(n)], [dtype]
        idx = list(range(len(inputs), len(inputs) + len(shapes)))
        inputs += [(s, t) for s, t in zip(shapes, dts)]
        b = [nbytes(s, t) for s, t in zip(shapes, dts)]
        one_dtype = DTYPES[dts[0]] if len(set(dts)) == 1 else None
        splits = None
        counts = None
        if kind in ("all_gather", "ag_coalesced"):
            table, torch_b = n * sum(b), (n + 1) * sum(b)
        elif kind in ("reduce_scatter", "rs_coalesced"):
            table, torch_b = sum(b), sum(b) + sum(x // n for x in b)
        elif kind == "all_to_all_uneven":
            rows = shapes[0][0]
            cut = sorted(rng.sample(range(rows + 1), n - 1)) if rows + 1 >= n - 1 else []
            bounds = [0] + cut + [rows]
            splits = [bounds[i + 1] - bounds[i] for i in range(n)]
            if len(set(splits)) == 1:
                splits[0] += 1
                splits[-1] -= 1
            row = math.prod(shapes[0][1:])
            counts = tuple(s * row for s in splits)
            table, torch_b = sum(b), 2 * sum(b)
        else:
            table, torch_b = sum(b), 2 * sum(b)
        ops.append((kind, d, idx, splits, table, torch_b, one_dtype, counts))

    def program(*xs):
        outs = []
        for kind, d, idx, splits, *_ in ops:
            g = (mesh, d)
            x = [xs[i] for i in idx]
            if kind == "all_gather":
                outs.append(funcol.all_gather_tensor(x[0], 0, g))
            elif kind == "reduce_scatter":
                outs.append(funcol.reduce_scatter_tensor(x[0], "sum", 0, g))
            elif kind == "all_reduce":
                outs.append(funcol.all_reduce(x[0], "sum", g))
            elif kind == "all_to_all":
                outs.append(funcol.all_to_all_single(x[0], None, None, g))
            elif kind == "all_to_all_uneven":
                outs.append(funcol.all_to_all_single(x[0], splits, splits, g))
            elif kind == "broadcast":
                outs.append(funcol.broadcast(x[0], 0, g))
            elif kind == "ag_coalesced":
                outs += funcol.all_gather_into_tensor_coalesced(x, g)
            elif kind == "rs_coalesced":
                outs += funcol.reduce_scatter_tensor_coalesced(x, "sum", [0] * len(x), g)
            else:
                outs += funcol.all_reduce_coalesced(x, "sum", g)
        return outs

    args = [torch.ones(s, dtype=t) for s, t in inputs]
    return program, args, ops


def is_collective(node):
    return node.op == "call_function" and str(node.target).startswith("_c10d_functional") and \
        "wait_tensor" not in str(node.target)


def case_parity_rank(sb, repo, rank, profiles):
    dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=WORLD)
    predict = Predict(sb)
    rng = random.Random(1234 + rank)
    checked = {"nodes": 0, "override": 0, "bucketed": 0, "merged": 0, "other": 0}
    kinds = set()
    transposed = torch.arange(WORLD).reshape(2, 8).T.contiguous()  # 8x2, column-major ranks
    cases = [((16,), 8, None), ((2, 8), 8, None), ((4, 4), 8, None), ((8, 2), 4, None), ((2, 2, 4), 4, None),
             ((8, 2), 8, transposed), ((2, 8), 4, None)]
    for shape, rph, ranks in cases:
        mesh = DeviceMesh("cpu", ranks) if ranks is not None else init_device_mesh("cpu", shape)
        mesh_ranks = mesh.mesh
        for prof in profiles:
            for trial in range(2):
                program, args, ops = random_program(rng, mesh, len(shape))
                gm = make_fx(program, tracing_mode="fake")(*args)
                est = st.runtime_estimator(prof, ranks_per_host=rph, meshes=[mesh] if ranks is not None else ())
                nodes = [n for n in gm.graph.nodes if is_collective(n)]
                if len(nodes) != len(ops):
                    fail(f"{shape}: traced {len(nodes)} collectives for {len(ops)} issued")
                for node, (kind, d, _, _, table, torch_b, dtype, counts) in zip(nodes, ops):
                    groups = mesh_dim_groups(mesh_ranks, d)
                    mine = next(g for g in groups if rank in g)
                    lc = link_class(mine, groups, rph)
                    coll = {"ag": "all_gather", "rs": "reduce_scatter", "ar": "all_reduce"}.get(kind[:2], kind)
                    coll = "all_to_all" if coll.startswith("all_to_all") else coll
                    priceable = any(m.collective == coll for m in est.profile.models)
                    want = predict(prof, coll, lc, table, dtype, counts) if priceable else None
                    got = est(node, None)
                    what = f"rank {rank} mesh {shape}{' transposed' if ranks is not None else ''} rph {rph} " \
                           f"{os.path.basename(prof)}: {node.target} ({kind}, dim {d}, {table} B, {dtype}, link {lc})"
                    if want is None:  # the profile has no model for it: torch's own estimate
                        if got is not None:
                            fail(f"{what}: the profile has no {coll}, yet the estimator priced it {got} ms")
                        kinds.add(f"unpriceable {coll}")
                        continue
                    if got is None or abs(got - want) > 1e-6 * want:
                        fail(f"{what}: estimator {got} ms, shardbench predict {want} ms")
                    if est(node, None) != got:
                        fail(f"{what}: a second call (cached) gave {est(node, None)}")
                    kinds.add(str(node.target))
                    checked["nodes"] += 1
                    # override_size is torch's convention (inputs + outputs): 0 = the fixed latency,
                    # torch's own bytes = the node itself, half of it = half the table bytes.
                    for over, tb in ((0, 0), (torch_b, table), (torch_b // 2, round(torch_b // 2 * table / torch_b))):
                        w = predict(prof, coll, lc, tb, dtype)
                        g = est(node, over)
                        if g is None or abs(g - w) > 1e-6 * max(w, 1e-12):
                            fail(f"{what}: override_size {over}: estimator {g} ms, shardbench predict of {tb} B {w} ms")
                        checked["override"] += 1
                for node in gm.graph.nodes:
                    if not is_collective(node):
                        if est(node, None) is not None:
                            fail(f"{node.target}: priced {est(node, None)}, want None (not a collective)")
                        checked["other"] += 1
                # Torch's bucketing passes merge collectives of one group and dtype: each bucket is
                # priced at its own bytes, and the buckets of a (collective, group) carry the bytes issued.
                from torch._inductor.fx_passes.bucketing import bucket_all_gather, bucket_all_reduce, \
                    bucket_reduce_scatter
                issued = {}
                for node, (kind, d, _, _, table, _, _, _) in zip(nodes, ops):
                    if kind in ("all_gather", "reduce_scatter", "all_reduce"):
                        issued[(kind, d)] = issued.get((kind, d), 0) + table
                mode = ("default", "custom_ops")[trial % 2]  # custom_ops: all_gather_into_tensor_out buckets
                bucket_all_gather(gm, lambda _: 1000.0, mode)
                bucket_reduce_scatter(gm, lambda _: 1000.0, mode)
                bucket_all_reduce(gm, lambda _: 1000.0)
                gm.recompile()
                names = {mesh._dim_group_names[d]: d for d in range(len(shape))}
                got_bytes = {}
                for node in gm.graph.nodes:
                    if not is_collective(node) or "coalesced" in str(node.target) or "broadcast" in str(node.target) \
                            or "all_to_all" in str(node.target):
                        continue
                    q = est.query(node)
                    coll, link, b, _, _, dtype = q
                    d = names[node.args[3] if coll == "reduce_scatter" else node.args[2]]
                    groups = mesh_dim_groups(mesh_ranks, d)
                    lc = link_class(next(g for g in groups if rank in g), groups, rph)
                    want = predict(prof, coll, lc, b, dtype)
                    got = est(node, None)
                    if got is None or abs(got - want) > 1e-6 * want:
                        fail(f"bucketed {node.target} on mesh {shape} dim {d}: estimator {got}, predict {want}")
                    got_bytes[(coll, d)] = got_bytes.get((coll, d), 0) + b
                    checked["bucketed"] += 1
                    checked["merged"] -= 1
                    kinds.add(f"bucketed {node.target}")
                checked["merged"] += sum(1 for k, *_ in ops if k in ("all_gather", "reduce_scatter", "all_reduce"))
                if got_bytes != issued:
                    fail(f"mesh {shape}: bucketed collectives carry {got_bytes} B, the program issued {issued}")
    print(json.dumps({"checked": checked, "kinds": sorted(kinds), "queries": len(predict.memo)}))


def calibrated_profile(sb, repo, tmp):
    """A profile from `shardbench calibrate` of a sim sweep (with broadcast)."""
    cfg = json.load(open(os.path.join(repo, "tests", "torch", "calibrate.json")))
    cfg["collectives"] = cfg["collectives"] + ["broadcast"]
    cfg_path, res, out = (os.path.join(tmp, x) for x in ("sweep.json", "r.jsonl", "calibrated.json"))
    json.dump(cfg, open(cfg_path, "w"))
    for cmd in ([sb, "sweep", "--backend", "sim", "--world", "8", "--config", cfg_path, "--out", res],
                [sb, "calibrate", "--results", res, "--out", out, "--name", "torch-compile-test"]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            fail(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return out


def case_parity(sb, repo):
    with tempfile.TemporaryDirectory() as tmp:
        profiles = [calibrated_profile(sb, repo, tmp),
                    os.path.join(repo, "configs", "profiles", "dtensor-default.json")]
        procs = {r: subprocess.Popen([sys.executable, __file__, sb, repo, f"parity:{r}:{','.join(profiles)}"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in (0, 11)}
        results = {}
        for r, p in procs.items():
            out, err = p.communicate(timeout=800)
            if p.returncode != 0:
                fail(f"rank {r}: exit {p.returncode}: {(out + err)[-3000:]}")
            results[r] = json.loads(out.strip().splitlines()[-1])
    for r, res in results.items():
        c = res["checked"]
        if c["nodes"] < 200 or c["bucketed"] < 20 or c["merged"] < 20 or c["other"] < 100:
            fail(f"rank {r}: too few checked: {c}")
        need = ["all_gather_into_tensor.default", "reduce_scatter_tensor.default", "all_reduce.default",
                "all_to_all_single.default", "broadcast.default", "all_gather_into_tensor_coalesced",
                "reduce_scatter_tensor_coalesced", "all_reduce_coalesced",
                "bucketed _c10d_functional.all_gather_into_tensor_out"]
        missing = [k for k in need if not any(k in x for x in res["kinds"])]
        if missing:
            fail(f"rank {r}: never saw {missing} (saw {res['kinds']})")
        print(f"parity rank {r}: {c['nodes']} collective nodes, {c['override']} override_size queries and "
              f"{c['bucketed']} bucketed nodes (merging {c['merged']} collectives away) priced as shardbench "
              f"predict ({res['queries']} distinct queries); "
              f"{c['other']} other nodes None")


def case_hook(repo):
    import torch._inductor.config as ic
    from shardcal.inductor import RuntimeEstimator
    prof = os.path.join(repo, "configs", "profiles", "dtensor-default.json")
    opts = ic.aten_distributed_optimizations

    def mine(node, override):
        return None

    opts.custom_runtime_estimation = mine
    with st.use_profile(prof, ranks_per_host=8):
        outer = opts.custom_runtime_estimation
        if not isinstance(outer, RuntimeEstimator):
            fail(f"inside use_profile the hook is {outer!r}")
        with st.use_profile(prof, ranks_per_host=4):
            inner = opts.custom_runtime_estimation
            if not isinstance(inner, RuntimeEstimator) or inner is outer or inner.ranks_per_host != 4:
                fail(f"nested use_profile: hook {inner!r}")
        if opts.custom_runtime_estimation is not outer:
            fail("after the nested block the outer block's hook is not back")
        try:
            with st.use_profile(prof, ranks_per_host=2):
                raise KeyError("boom")
        except KeyError:
            pass
        if opts.custom_runtime_estimation is not outer:
            fail("after an exception in a nested block the outer hook is not back")
        with st.use_profile(prof, ranks_per_host=2, compile_hook=False):
            if opts.custom_runtime_estimation is not outer:
                fail("compile_hook=False changed the hook")
    if opts.custom_runtime_estimation is not mine:
        fail(f"after use_profile the hook is {opts.custom_runtime_estimation!r}, not the one set before")
    st.install(prof, ranks_per_host=8)
    if not isinstance(opts.custom_runtime_estimation, RuntimeEstimator):
        fail("install() did not set the hook")
    with st.use_profile(prof, ranks_per_host=4):  # inside an install: nests
        pass
    if not isinstance(opts.custom_runtime_estimation, RuntimeEstimator):
        fail("a use_profile block inside install() left the hook unset")
    st.uninstall()
    if opts.custom_runtime_estimation is not mine:
        fail("uninstall() did not restore the hook")
    # Blocks exited out of order (other threads): the survivor's patches and hook stay in place.
    a, b = st.use_profile(prof, ranks_per_host=8), st.use_profile(prof, ranks_per_host=4)
    a.__enter__()
    b.__enter__()
    hook_b = opts.custom_runtime_estimation
    a.__exit__(None, None, None)
    if opts.custom_runtime_estimation is not hook_b:
        fail("exiting the outer block first dropped the inner block's hook")
    b.__exit__(None, None, None)
    if opts.custom_runtime_estimation is not mine:
        fail("after out-of-order exits the original hook is not back")
    opts.custom_runtime_estimation = None
    # Unsupported torch: one error naming the supported versions, nothing set.
    real = torch.__version__
    try:
        torch.__version__ = "2.16.0"
        for what, fn in (("runtime_estimator", lambda: st.runtime_estimator(prof, ranks_per_host=8)),
                         ("use_profile", lambda: st.use_profile(prof).__enter__())):
            try:
                fn()
            except st.ShardcalTorchError as e:
                if "torch >= 2.15, < 2.16" not in str(e) or "2.16.0" not in str(e):
                    fail(f"{what} on torch 2.16.0: message {e}")
            else:
                fail(f"{what} on torch 2.16.0: no error")
            if opts.custom_runtime_estimation is not None:
                fail(f"{what} on torch 2.16.0 set the hook")
    finally:
        torch.__version__ = real
    for bad in (0, -1, True, 2.0):
        try:
            st.runtime_estimator(prof, ranks_per_host=bad)
        except st.ShardcalTorchError:
            pass
        else:
            fail(f"ranks_per_host={bad!r}: no error")
    # The scheduler takes the hook from the config: inside use_profile it prices with the profile.
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=WORLD)
    mesh = init_device_mesh("cpu", (2, 8))
    gm = make_fx(lambda x: torch.mm(funcol.all_gather_tensor(x, 0, (mesh, 0)), x.T),
                 tracing_mode="fake")(torch.ones(64, 64))
    from torch._inductor.fx_passes.overlap_scheduling import schedule_overlap_bucketing_from_inductor_configs
    with st.use_profile(prof, ranks_per_host=8):
        est = opts.custom_runtime_estimation
        before = opts.compute_estimator
        opts.compute_estimator = "analytical"  # no GPU to benchmark matmuls on
        try:
            schedule_overlap_bucketing_from_inductor_configs(gm)
        finally:
            opts.compute_estimator = before
        asked = [n for n in gm.graph.nodes if is_collective(n) and n in est._by_node]
    if not asked:
        fail("the overlap scheduler did not ask the hook set by use_profile about the all_gather")
    # Sibling groups: from the DeviceMesh when given (exact), else the group's rank pattern
    # repeated over the world, which this permuted mesh's dim 0 ([0, 9], [1, 8], ...) does not tile.
    perm = DeviceMesh("cpu", torch.tensor([list(range(8)), [9, 8, 11, 10, 13, 12, 15, 14]]))
    g2 = make_fx(lambda x: funcol.all_gather_tensor(x, 0, (perm, 0)), tracing_mode="fake")(torch.ones(8))
    ag = next(n for n in g2.graph.nodes if is_collective(n))
    with_mesh = st.runtime_estimator(prof, ranks_per_host=8, meshes=[perm]).query(ag)[1]
    without = st.runtime_estimator(prof, ranks_per_host=8).query(ag)[1]
    if (with_mesh["hosts"], with_mesh["concurrent_groups"]) != (2, 8) or \
            (without["hosts"], without["concurrent_groups"]) != (2, 1):
        fail(f"permuted 2x8 mesh, dim 0: link class {with_mesh} with meshes=, {without} without; want 2 hosts with "
             "8 groups at once from the mesh, 1 (this group alone) from the rank pattern")
    # A node the hook cannot resolve (a group name no process group has) falls back to torch's
    # estimate with one warning instead of aborting the compile.
    est = st.runtime_estimator(prof, ranks_per_host=8)
    node = next(n for n in gm.graph.nodes if is_collective(n))
    node.args = (node.args[0], node.args[1], "no-such-group")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = [est(node, None), est(node, None)]
    ours = [x for x in w if "shardcal.torch" in str(x.message)]
    if got != [None, None] or len(ours) != 1 or "no-such-group" not in str(ours[0].message):
        fail(f"unresolvable group: priced {got}, warnings {[str(x.message) for x in w]}")
    print("hook: set inside use_profile (nested, after exceptions, out of order, install/uninstall), the previous "
          "value back after; unsupported torch and bad ranks_per_host rejected; the scheduler used it")


def slow_inter_host(repo):
    doc = json.load(open(os.path.join(repo, "configs", "profiles", "dtensor-default.json")))
    doc["cluster"] = "slow-inter-host"
    for m in doc["models"]:
        if m["hosts"] > 1:
            for s in m["segments"]:
                s["bandwidth_GBps"] = 0.4  # ~3 Gbit/s between hosts
    return doc


def case_overlap(repo):
    from torch._inductor.fx_passes.overlap_scheduling import schedule_overlap_bucketing
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=WORLD)
    mesh = init_device_mesh("cpu", (2, 8))

    def program(x, w, v):  # two inter-host all_gathers (mesh dim 0, 2 hosts of 8), a chain of matmuls
        y = x
        for i in range(6):
            y = torch.mm(y, x)
            if i == 2:
                y = y + funcol.all_gather_tensor(w, 0, (mesh, 0))[:512, :512].sum()
            if i == 4:
                y = y + funcol.all_gather_tensor(v, 0, (mesh, 0))[:512, :512].sum()
        return y

    args = (torch.ones(512, 512), torch.ones(512, 1024), torch.ones(512, 1024))  # 4 MiB gathered each
    runs = {}
    for name, prof in (("dtensor-default", os.path.join(repo, "configs", "profiles", "dtensor-default.json")),
                       ("slow-inter-host", slow_inter_host(repo))):
        gm = make_fx(program, tracing_mode="fake")(*args)
        est = st.runtime_estimator(prof, ranks_per_host=8)
        ag = [n for n in gm.graph.nodes if is_collective(n)]
        ms = [est(n, None) for n in ag]

        def hook(node, override):  # the profile for collectives, 1 ms per matmul (no GPU to time it)
            t = est(node, override)
            return t if t is not None else (1.0 if node.target is torch.ops.aten.mm.default else None)

        out = schedule_overlap_bucketing(gm, collective_bucketing=True, compute_estimator="analytical",
                                         custom_runtime_estimation=hook, pre_bucketing_fsdp_collectives=False)
        order = [n.name for n in out.graph.nodes if is_collective(n) or n.target is torch.ops.aten.mm.default]
        runs[name] = (ms, [n for n in order if not n.startswith("mm")], order)
    fast_ms, fast_colls, fast_order = runs["dtensor-default"]
    slow_ms, slow_colls, slow_order = runs["slow-inter-host"]
    # The direction the costs say: cheap collectives (well under the 1 ms a matmul hides) share one
    # bucket, paying the fixed latency once; each slow one (above the compute between them) would
    # lose its overlap in a bucket, so they stay two.
    if not (max(fast_ms) < 0.5 and min(slow_ms) > 2.0):
        fail(f"profiles price the all_gathers {fast_ms} / {slow_ms} ms; the test needs cheap vs slow")
    if len(fast_colls) != 1 or len(slow_colls) != 2:
        fail(f"collectives after scheduling: dtensor-default {fast_order}, slow-inter-host {slow_order}; "
             "want one bucket with the cheap profile and two collectives with the slow one")
    print(f"overlap: dtensor-default prices each all_gather at {fast_ms[0]:.3f} ms -> one bucket ({fast_order}); "
          f"slow-inter-host at {slow_ms[0]:.3f} ms -> kept apart ({slow_order})")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sb, repo, case = sys.argv[1:]
    if case.startswith("parity:"):
        _, rank, profiles = case.split(":", 2)
        return case_parity_rank(sb, repo, int(rank), profiles.split(","))
    {"parity": lambda: case_parity(sb, repo), "hook": lambda: case_hook(repo),
     "overlap": lambda: case_overlap(repo)}[case]()


if __name__ == "__main__":
    main()

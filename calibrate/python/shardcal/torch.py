"""Price PyTorch DTensor's redistribution planning with a shardcal calibration profile.

    import shardcal.torch
    with shardcal.torch.use_profile("profile.json", ranks_per_host=8):
        y = x.redistribute(mesh, [Replicate(), Shard(0)])

While active, DTensor's graph planner (Dijkstra over placement states) plans every redistribution
whose placements are all plain Shard/Replicate/Partial (others keep DTensor's greedy path), and its
edges and `redistribute_cost` (which sharding propagation uses to choose op strategies) are
priced from the profile instead of DTensor's hard-coded constants: the collective DTensor will
actually run for the step on the mesh's backend, with the bytes it actually moves (shards padded
to the largest, as DTensor pads them), in the link class of that mesh dim (hosts its groups span,
ranks per host, groups at once, from the mesh's global ranks with host = rank // ranks_per_host).
`install()` / `uninstall()` do the same for long-running programs. Both also set torch.compile's
collective estimates (`torch._inductor.config.aten_distributed_optimizations.custom_runtime_estimation`)
to `runtime_estimator(profile, ...)` (shardcal/inductor.py; compile_hook=False leaves it alone), and
use_profile() blocks nest: on exit each restores what was there when it entered.

Everything patched is restored on exit (also after an exception) and DTensor's plan and sharding
propagation caches are cleared on enter and exit (sharding propagation's Python cache is per thread:
only the thread that enters and exits has its cache cleared; other threads should install before
their first DTensor op). Supported: the torch releases in SUPPORTED_TORCH; other versions get
one ShardcalTorchError naming the range, and nothing is patched.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
import weakref
from typing import Any, Optional, Union

from . import dtensor_plan as _dtensor_plan
# What a step costs (Pricer and its helpers) is dtensor_pricer.py's; these names stay importable here.
from .dtensor_pricer import Pricer, ShardcalTorchError, _dtype_name, _largest_logical, _load_profile

SUPPORTED_TORCH = ((2, 15), (2, 15))  # (major, minor) inclusive: the releases this was verified on
SUPPORTED_TEXT = "torch >= 2.15, < 2.16"


def _torch_modules():
    try:
        import torch
    except ImportError as e:
        raise ShardcalTorchError(f"shardcal.torch needs PyTorch ({SUPPORTED_TEXT}): pip install "
                                 f"'shardcal[torch]' ({e})") from None
    ver = torch.__version__.split("+")[0].split(".")
    try:
        mm = (int(ver[0]), int(ver[1]))
    except (IndexError, ValueError):
        mm = None
    if mm is None or not SUPPORTED_TORCH[0] <= mm <= SUPPORTED_TORCH[1]:
        raise ShardcalTorchError(f"shardcal.torch supports {SUPPORTED_TEXT}; this is torch {torch.__version__} "
                                 "(its DTensor planner internals differ): install a supported torch")
    import torch.distributed.tensor._collective_utils as cu
    import torch.distributed.tensor._ops.utils as ops_utils
    import torch.distributed.tensor._redistribute as rd
    import torch.distributed.tensor._utils as tutils
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.placement_types import Partial, Replicate, Shard
    return torch, cu, rd, tutils, ops_utils, DTensor, (Shard, Replicate, Partial)


def _graph_planned(rd, src_spec, dst_spec, use_graph_based_transform) -> bool:
    """Whether DTensor's `_gen_transform_infos_non_cached` takes its graph planner for these plain
    placements: a non-default shard order forces it, else the global flag of
    `use_min_cost_redistribution_plan`, else the argument."""
    force = rd._FORCE_MIN_COST_REDISTRIBUTION_PLAN
    if force is None and use_graph_based_transform:  # the order check cannot change the answer
        return True
    from torch.distributed.tensor._dtensor_spec import DTensorSpec
    if not all(DTensorSpec.is_default_device_order(o) for o in (src_spec.shard_order, dst_spec.shard_order)):
        return True
    force = rd._FORCE_MIN_COST_REDISTRIBUTION_PLAN
    return bool(force if force is not None else use_graph_based_transform)


def _is_plain(p) -> bool:
    # Exact types: subclasses (_MaskPartial of vocab-parallel embedding, _StridedShard, ...) have
    # their own reductions and layouts that DTensor's graph planner does not model.
    return type(p).__name__ in ("Shard", "Replicate", "Partial")


class _Adapter:
    """The patches of one activation; apply() and restore() are all-or-nothing."""

    def __init__(self, pricer: Pricer, estimator=None):
        self.pricer = pricer
        self.estimator = estimator  # torch.compile's custom_runtime_estimation while active
        self.saved: list = []

    def apply(self):
        torch, cu, rd, tutils, ops_utils, DTensor, placement_types = _torch_modules()
        import torch._inductor.config as inductor_config
        pricer = self.pricer
        # DTensor's own functions, also under an outer use_profile block (its patches name them):
        # this block's fallbacks must not reach the outer block's prices
        orig_setup = _original(rd.DTensorRedistributePlanner.setup_cost_callbacks)
        orig_redistribute_cost = _original(cu.redistribute_cost)
        orig_gen = _original(rd._gen_transform_infos_non_cached)

        plain_types = frozenset(placement_types)  # exact Shard, Replicate, Partial (see _is_plain)
        partial_type = placement_types[2]
        plan = _dtensor_plan.plan
        from torch.distributed._functional_collectives import _are_we_tracing
        planners = rd._planner_cache
        if not isinstance(planners, dict):
            raise ShardcalTorchError(f"torch {torch.__version__}: DTensor's planner cache is not a dict; "
                                     f"shardcal.torch supports {SUPPORTED_TEXT}")

        def gen_transform_infos(src_spec, dst_spec, use_graph_based_transform=None):
            # The graph planner (the priced one) for plain placements only: DTensor's greedy path
            # handles the rest (the graph planner finds no path to a _MaskPartial). Lean: a first
            # redistribute pays for every line here (docs/PERFORMANCE.md).
            plain = True
            partial = False
            for p in (*src_spec.placements, *dst_spec.placements):
                t = type(p)
                if t not in plain_types:
                    plain = False
                    break
                partial = partial or t is partial_type
            if use_graph_based_transform is None and plain:
                use_graph_based_transform = True
            infos = None
            if plain and pricer.fast_plan and (
                    (use_graph_based_transform and rd._FORCE_MIN_COST_REDISTRIBUTION_PLAN is None) or
                    _graph_planned(rd, src_spec, dst_spec, use_graph_based_transform)):
                meta = src_spec.tensor_meta
                mesh = src_spec.mesh
                if meta is not None and mesh._is_current_rank_part_of_mesh():
                    # DTensor's graph plan, step for step, at a fraction of its cost (dtensor_plan.py;
                    # symbolic shapes go to DTensor's planner)
                    # DTensor's planner for (mesh, meta) keeps the reduce ops of the Partials it
                    # has planned for (which R -> P edges exist). Without a Partial here a plan
                    # neither reads nor adds any when no planner exists yet: an empty set, and
                    # no planner made (a tracing DTensor makes a fresh one per plan: empty too).
                    if partial:
                        planner = rd.get_redistribute_planner(mesh, meta)
                    elif _are_we_tracing():
                        planner = None
                    else:
                        planner = planners.get((weakref.ref(mesh), meta))
                    dt = meta.dtype
                    infos = plan(pricer, rd, planner, src_spec, dst_spec, dt.itemsize, _dtype_name(dt))
            if infos is None:
                infos = orig_gen(src_spec, dst_spec, use_graph_based_transform)
                pricer.plans["dtensor"] += 1
            else:
                pricer.plans["fast"] += 1
            if pricer.unpriceable and use_graph_based_transform:
                pricer.check_plan(src_spec.mesh, infos, src_spec.tensor_meta.dtype.itemsize)
            return infos

        def setup_cost_callbacks(planner):
            orig_setup(planner)
            # The profile's cost_function, built when DTensor's own search first asks for a price:
            # a plan by shardcal.dtensor_plan never does, and a first plan pays for the planner
            # DTensor makes per (mesh, tensor meta).
            dtensor_cost = planner.cost_function  # (DTensor's: _StridedShard edges)

            built = []

            def first_cost(src_state, dst_state):
                if not built:  # (a search may hold this function: built once either way)
                    built.append(priced_cost_function(planner, dtensor_cost))
                    if planner.cost_function is first_cost:
                        planner.cost_function = built[0]
                return built[0](src_state, dst_state)

            planner.cost_function = first_cost

        def priced_cost_function(planner, dtensor_cost):
            meta = planner.dtensor_meta
            mesh = planner.device_mesh
            itemsize = meta.dtype.itemsize
            dtype = _dtype_name(meta.dtype)
            full = tuple(meta.shape)
            edges: dict = {}
            shapes: dict = {}

            mesh_shape = tuple(int(x) for x in mesh.shape)

            def logical(state, d):  # a state's edges on one mesh dim share it
                ls = shapes.get((state, d))
                if ls is None:
                    ls = shapes[(state, d)] = _largest_logical(full, state.placements, d, mesh_shape)
                return ls

            def cost_function(src_state, dst_state):
                key = (src_state, dst_state)
                c = edges.get(key)
                if c is None:
                    c = None
                    for d, (a, b) in enumerate(zip(src_state.placements, dst_state.placements)):
                        if a != b:
                            if not (_is_plain(a) and _is_plain(b)):  # _StridedShard: DTensor's own price
                                c = dtensor_cost(src_state, dst_state)
                            else:
                                c = pricer.step_us(mesh, d, a, b, lambda: logical(src_state, d), itemsize, dtype)
                            break
                    if c is None:
                        c = 0.0
                    edges[key] = c
                return c

            return cost_function

        costs: dict = {}  # (current, target) -> us; specs hash their mesh, placements, meta, order

        def redistribute_cost(current_spec, target_spec):
            key = (current_spec, target_spec)
            c = costs.get(key)
            if c is None:
                from torch.distributed._functional_collectives import _are_we_tracing
                if _are_we_tracing():  # symbolic shapes: no cache
                    return priced_cost(current_spec, target_spec, rd._gen_transform_infos_non_cached)
                c = costs[key] = priced_cost(current_spec, target_spec, rd._gen_transform_infos)
            return c

        def priced_cost(current_spec, target_spec, gen):
            # DTensor's own rules for what is free or impossible, then each planned step priced.
            if current_spec.mesh != target_spec.mesh:
                return float("inf")
            if current_spec.is_replicated():
                return 0.0
            if current_spec.placements == target_spec.placements and \
                    current_spec.shard_order == target_spec.shard_order:
                return 0.0
            if not current_spec.mesh._is_current_rank_part_of_mesh():
                return 0.0
            if current_spec.shard_order is None or target_spec.shard_order is None:
                return float("inf")
            if not all(_is_plain(p) for p in (*current_spec.placements, *target_spec.placements)):
                return orig_redistribute_cost(current_spec, target_spec)
            meta = current_spec.tensor_meta
            itemsize = meta.dtype.itemsize
            dtype = _dtype_name(meta.dtype)
            cost = 0.0
            mesh = current_spec.mesh
            mesh_shape = tuple(int(x) for x in mesh.shape)
            placements = list(current_spec.placements)  # the state before each step
            for info in gen(current_spec, target_spec):
                src, dst = info.src_dst_placements
                ls = _largest_logical(meta.shape, placements, info.mesh_dim, mesh_shape)
                c = pricer.step_us(mesh, info.mesh_dim, src, dst, ls, itemsize, dtype)
                if c == float("inf"):
                    return c
                cost += c
                placements[info.mesh_dim] = dst
            return cost

        targets = [(rd.DTensorRedistributePlanner, "setup_cost_callbacks", setup_cost_callbacks),
                   (rd, "_gen_transform_infos_non_cached", gen_transform_infos),
                   (cu, "redistribute_cost", redistribute_cost),
                   (tutils, "redistribute_cost", redistribute_cost),
                   (ops_utils, "redistribute_cost", redistribute_cost)]
        if self.estimator is not None:
            targets.append((inductor_config.aten_distributed_optimizations, "custom_runtime_estimation",
                            self.estimator))
        for obj, name, _ in targets:
            if not hasattr(obj, name):
                raise ShardcalTorchError(f"torch {torch.__version__}: {getattr(obj, '__name__', obj)}.{name} is "
                                         f"missing; shardcal.torch supports {SUPPORTED_TEXT}")
        self.saved = [(obj, name, obj.__dict__[name] if name in getattr(obj, "__dict__", {}) else getattr(obj, name))
                      for obj, name, _ in targets]
        setup_cost_callbacks.__shardcal_original__ = orig_setup
        gen_transform_infos.__shardcal_original__ = orig_gen
        redistribute_cost.__shardcal_original__ = orig_redistribute_cost
        for obj, name, value in targets:
            setattr(obj, name, value)
        _clear_caches(rd, DTensor)

    def restore(self):
        if not self.saved:
            return
        _, _, rd, _, _, DTensor, _ = _torch_modules()
        for obj, name, value in reversed(self.saved):
            setattr(obj, name, value)
        self.saved = []
        _clear_caches(rd, DTensor)


def _original(func):
    """DTensor's function behind an adapter's patch (the patch names it), else func itself."""
    return getattr(func, "__shardcal_original__", func)


def _clear_caches(rd, DTensor) -> None:
    import torch
    rd._gen_transform_infos.cache_clear()
    rd.clear_redistribute_planner_cache()
    # Op strategies chosen with the old prices live in two caches: the C++ dispatch cache and a
    # Python LRU that is per thread (threading.local), so only the calling thread's is cleared.
    clear_cpp = getattr(torch._C, "_clear_DTensor_sharding_propagator_cache", None)
    if clear_cpp is not None:
        clear_cpp()
    prop = DTensor._op_dispatcher.sharding_propagator
    prop.propagate_op_sharding.cache_clear()


_lock = threading.Lock()
# Active adapters, innermost last: use_profile() nests (each block restores what the one outside it
# set); install() refuses while anything is active.
_stack: list = []
_installed: Optional[_Adapter] = None  # the one from install(), until uninstall()


def _check_rph(ranks_per_host) -> None:
    if ranks_per_host is not None and (isinstance(ranks_per_host, bool) or not isinstance(ranks_per_host, int)
                                       or ranks_per_host < 1):
        raise ShardcalTorchError(f"ranks_per_host must be a positive integer, got {ranks_per_host!r}")


def runtime_estimator(profile: Union[str, os.PathLike, dict, Any], ranks_per_host: Optional[int] = None,
                      backend: Optional[str] = None, meshes=()):
    """A callable for torch.compile's overlap scheduler,
    `torch._inductor.config.aten_distributed_optimizations.custom_runtime_estimation`:
    `(fx.Node, override_size) -> ms | None`, each functional collective node priced by the
    profile in the link class of its group's global ranks (host = rank // ranks_per_host), None
    for every other node (torch's own estimate). meshes: DeviceMeshes whose groups the graph uses,
    for the groups of a mesh dim at once (default: the group's rank pattern repeated over the
    world). docs/TORCH_COMPILE.md."""
    _check_rph(ranks_per_host)
    _torch_modules()
    from . import inductor
    return inductor.RuntimeEstimator(_load_profile(profile), ranks_per_host, backend, inductor.mesh_groups(meshes))


def _make_adapter(profile, ranks_per_host, backend, mesh, device_type, compile_hook, strict=False) -> _Adapter:
    _check_rph(ranks_per_host)
    _torch_modules()
    pricer = Pricer(_load_profile(profile), ranks_per_host, backend, device_type, strict=strict)
    if mesh is not None:
        ctx = _dtensor_plan.mesh_context(pricer, mesh)  # the mesh's link classes
        for d in range(len(ctx.shape)):  # the collectives DTensor runs on this dim's backend
            for coll in ctx.collectives(d):
                pricer.time_us(mesh, d, coll, 1 << 20, None)  # strict: raises; else warns now
        if len(ctx.shape) <= 3:  # the state graphs of this many mesh dims, built once per process (~30 ms for 3)
            _dtensor_plan.warm(len(ctx.shape))
        ctx.bind_usual()  # their price functions for the usual dtypes
    estimator = None
    if compile_hook:
        from . import inductor
        estimator = inductor.RuntimeEstimator(pricer.profile, ranks_per_host, backend,
                                              inductor.mesh_groups([mesh] if mesh is not None else []))
    return _Adapter(pricer, estimator)


def _push(adapter: _Adapter) -> None:
    try:
        adapter.apply()
    except BaseException:
        adapter.restore()
        raise
    _stack.append(adapter)


def _remove(adapter: _Adapter) -> None:
    """Takes an adapter off the stack; one that is not innermost (blocks exited out of order, from
    other threads) is unwound with those inside it, which are then applied again on top."""
    if adapter not in _stack:
        return
    i = _stack.index(adapter)
    above = _stack[i + 1:]
    for a in reversed(_stack[i:]):
        a.restore()
    del _stack[i:]
    for a in above:
        _push(a)


def install(profile: Union[str, os.PathLike, dict, Any], ranks_per_host: Optional[int] = None,
            backend: Optional[str] = None, mesh=None, device_type: Optional[str] = None,
            compile_hook: bool = True, strict: bool = False) -> None:
    """Price DTensor's planning from `profile` until uninstall(). ranks_per_host: devices per host
    (default: torchrun's LOCAL_WORLD_SIZE, else DTensor's device count per host); backend: the
    process group's backend ("nccl", "gloo", ...; default: each mesh dim's group's backend for the
    mesh's device type); mesh: a DeviceMesh whose collectives on every dim are priced now (a
    missing one is warned about on entry instead of at the first plan); strict: a collective the
    profile cannot price raises ShardcalTorchError (on entry with mesh=, else when a plan asks)
    instead of being priced by a stand-in with one warning per collective and link class: a
    related collective's curve from the profile (all_gather <-> reduce_scatter, all_reduce = both,
    all_to_all ~ all_gather), else DTensor's own cost model; only when neither exists is the step
    avoided by the planner (ShardcalTorchError if no plan can); device_type: price
    as if meshes were on this device type ("cuda": all-to-all for S(a)->S(b); for planning offline
    on a fake process group); compile_hook: also set torch.compile's
    custom_runtime_estimation to runtime_estimator(profile, ...) (restored on uninstall)."""
    global _installed
    adapter = _make_adapter(profile, ranks_per_host, backend, mesh, device_type, compile_hook, strict)
    with _lock:
        if _stack:
            raise ShardcalTorchError("a profile is already installed; call shardcal.torch.uninstall() first"
                                     if _installed is not None else
                                     "a use_profile() block is active; install() outside it")
        _push(adapter)
        _installed = adapter


def uninstall() -> None:
    """Restore DTensor's own pricing and the compile hook (a no-op when nothing is installed)."""
    global _installed
    with _lock:  # restored before another install can patch: no interleaving of the two
        adapter, _installed = _installed, None
        if adapter is not None:
            _remove(adapter)


@contextlib.contextmanager
def use_profile(profile, ranks_per_host: Optional[int] = None, backend: Optional[str] = None, mesh=None,
                device_type: Optional[str] = None, compile_hook: bool = True, strict: bool = False):
    """Context manager form of install()/uninstall() that nests (an inner block prices with its
    profile, and on exit what the outer one set is back); yields the Pricer. Also sets
    torch.compile's custom_runtime_estimation (compile_hook=False: leave it alone). strict: as
    install()'s."""
    adapter = _make_adapter(profile, ranks_per_host, backend, mesh, device_type, compile_hook, strict)
    with _lock:
        _push(adapter)
    try:
        yield adapter.pricer
    finally:
        with _lock:
            _remove(adapter)

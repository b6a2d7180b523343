"""torch.compile's collective runtimes from a shardcal profile: the hook
`torch._inductor.config.aten_distributed_optimizations.custom_runtime_estimation`.

    import shardcal.torch
    est = shardcal.torch.runtime_estimator("profile.json", ranks_per_host=8)
    torch._inductor.config.aten_distributed_optimizations.custom_runtime_estimation = est
    # or: with shardcal.torch.use_profile("profile.json", ranks_per_host=8): ...  (sets and restores it)

torch 2.15's overlap scheduler (torch/_inductor/fx_passes/overlap_scheduling.py) calls the hook as
`hook(node, override_size)` for every node and takes a float (milliseconds) or None (its own
estimate). This prices each functional collective node (`_c10d_functional` and
`_c10d_functional_autograd`: all_gather_into_tensor[_out|_coalesced], reduce_scatter_tensor[_coalesced],
all_reduce[_][_coalesced[_]], all_to_all_single, broadcast[_]) with `Profile.predict`, the same
call the DTensor adapter prices a step with, and returns None for every other node:

* bytes in the collective table's convention (all_gather: the gathered output = group size x the
  input; reduce_scatter: the input; all_reduce, broadcast: the buffer; all_to_all: what this rank
  sends, with its per-destination counts when the splits are uneven; `_coalesced`: the sum over its
  tensors, priced as one collective);
* `override_size` is in torch's own convention (`comm_analysis.estimate_fx_collective_size`: the
  inputs' plus the outputs' bytes; the scheduler passes 0 to ask for a collective's fixed latency,
  which bucketing saves): the node's table bytes scaled by override_size / torch's bytes, rounded to
  whole bytes;
* the link class from the group's global ranks (host = rank // ranks_per_host): hosts it spans,
  its ranks per host, and the groups at once on one host by formats.json's rule
  (shardcal.formats.groups_link_class, as the DTensor adapter and `shardbench plan`). The group's
  siblings come from the DeviceMesh that made it when one is known (`meshes=`, or use_profile's
  `mesh=`), else from its rank pattern repeated over the world (what init_device_mesh builds for
  every mesh dim of a mesh over the whole world); a pattern that does not tile the world counts as
  one group;
* on a gloo group a reduce_scatter is priced as the all-reduce gloo runs (the adapter's rule).

A collective the profile cannot price returns None (torch's estimate) with one RuntimeWarning per
collective and link class. Prices are cached per node (checked against its args, so a rewritten
node is priced again) and per (collective, link class, bytes, dtype).
"""

from __future__ import annotations

import os
import warnings
import weakref
from typing import Optional

from . import _torch_common as _common
from . import formats as _formats
from . import profile as _profile

# op name -> (collective, position of group_name, "gather" = group size x the inputs | "input")
_OPS = {
    "all_gather_into_tensor": ("all_gather", 2, "gather"),
    "all_gather_into_tensor_out": ("all_gather", 2, "gather"),
    "all_gather_into_tensor_coalesced": ("all_gather", 2, "gather"),
    "reduce_scatter_tensor": ("reduce_scatter", 3, "input"),
    "reduce_scatter_tensor_coalesced": ("reduce_scatter", 3, "input"),
    "all_reduce": ("all_reduce", 2, "input"),
    "all_reduce_": ("all_reduce", 2, "input"),
    "all_reduce_coalesced": ("all_reduce", 2, "input"),
    "all_reduce_coalesced_": ("all_reduce", 2, "input"),
    "all_to_all_single": ("all_to_all", 3, "input"),
    "broadcast": ("broadcast", 2, "input"),
    "broadcast_": ("broadcast", 2, "input"),
}


def _op_table(torch) -> dict:
    """{OpOverload: (collective, group_name position, bytes rule, op name)} for the ops this torch has."""
    out = {}
    for ns_name in ("_c10d_functional", "_c10d_functional_autograd"):
        ns = getattr(torch.ops, ns_name, None)
        if ns is None:
            continue
        for name, spec in _OPS.items():
            try:
                packet = getattr(ns, name)
            except (AttributeError, RuntimeError):
                continue
            for overload in packet.overloads():
                out[getattr(packet, overload)] = (*spec, f"{ns_name}.{name}")
    return out


def _tiling_groups(ranks: list, world: int) -> list:
    """The translates of a group's rank pattern that tile ranks 0..world-1 (every mesh dim of a
    mesh over the whole world, row-major or transposed), or [ranks] when they do not."""
    groups, seen = [], set()
    base = ranks[0]
    for r in range(world):
        if r in seen:
            continue
        g = [r + x - base for x in ranks]
        if max(g) >= world or min(g) < 0 or seen.intersection(g):
            return [list(ranks)]
        groups.append(g)
        seen.update(g)
    return groups if any(sorted(g) == sorted(ranks) for g in groups) else [list(ranks)]


class RuntimeEstimator:
    """`(fx.Node, int | None) -> float | None` (ms) for custom_runtime_estimation; see the module doc."""

    def __init__(self, profile: _profile.Profile, ranks_per_host: Optional[int] = None,
                 backend: Optional[str] = None, mesh_groups: Optional[dict] = None):
        import torch
        self.profile = profile
        self.ranks_per_host = ranks_per_host
        self.backend = backend
        # group name -> every group (global ranks) of the mesh dim it belongs to
        self.mesh_groups = dict(mesh_groups or {})
        # By id: OpOverload.__hash__ is Python code (~1 us); the table's values keep the ops alive.
        self._ops = {id(op): (*spec, op) for op, spec in _op_table(torch).items()}
        self._by_node: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self._by_shape: dict = {}
        self._prices: dict = {}
        self._links: dict = {}
        self.unpriceable: dict = {}  # (collective, link class) -> why the profile cannot price it
        self.failed: dict = {}  # op -> the unexpected error that made it fall back

    # Pickled by value (the profile's JSON, plain data): inductor's FX graph cache hashes its
    # config, this hook included, so compiled graphs are keyed on the profile that priced them.
    def __reduce__(self):
        return (_rebuild, (self.profile.doc, self.ranks_per_host, self.backend, self.mesh_groups))

    def __call__(self, node, override_size: Optional[int] = None) -> Optional[float]:
        spec = self._ops.get(id(node.target))
        if spec is None or spec[4] is not node.target:
            return None
        per_node = self._by_node.get(node)
        if per_node is not None:
            hit = per_node.get(override_size)
            if hit is not None and hit[0] is node.args:
                return hit[1]
        else:
            per_node = self._by_node[node] = {}
        # A new node of a shape already priced: one key from its inputs' shapes and dtypes.
        try:
            inputs = node.args[0] if node.args else None
            vals = tuple((v.shape, v.dtype, v.device.type) for v in (
                x.meta["val"] for x in (inputs if isinstance(inputs, (list, tuple)) else (inputs,))))
            shape_key = (spec[3], node.args[1:], tuple(node.kwargs.items()), override_size, vals)
            ms = self._by_shape.get(shape_key, False)
        except (TypeError, KeyError, AttributeError):  # symbolic sizes, unusual args: no shape cache
            shape_key, ms = None, False
        if ms is False:
            try:
                ms = self._price(node, spec, override_size)
            except Exception as e:  # never abort a compile: torch's own estimate, one warning per op
                if spec[3] not in self.failed:
                    self.failed[spec[3]] = f"{type(e).__name__}: {e}"
                    warnings.warn(f"shardcal.torch: cannot price {spec[3]} node {node.name} "
                                  f"({type(e).__name__}: {e}); torch.compile uses its own estimate for it",
                                  RuntimeWarning, stacklevel=2)
                ms = None
            if shape_key is not None:
                self._by_shape[shape_key] = ms
        per_node[override_size] = (node.args, ms)
        return ms

    # -- one node -----------------------------------------------------------------------------
    def query(self, node, override_size: Optional[int] = None):
        """(collective, link class dict, bytes, counts, elem_size, dtype) this node is priced as,
        or None when it is not a functional collective this prices (for tests and reports)."""
        spec = self._ops.get(id(node.target))
        return None if spec is None or spec[4] is not node.target else self._query(node, spec, override_size)

    def _query(self, node, spec, override_size):
        import torch
        from torch._inductor.comm_analysis import estimate_fx_collective_size, get_fx_node_size_numel
        collective, group_pos, rule = spec[:3]
        group_arg = node.args[group_pos] if len(node.args) > group_pos else node.kwargs.get("group_name")
        inputs = node.args[0] if node.args else node.kwargs.get("input", node.kwargs.get("inputs"))
        vals = [x.meta.get("val") if hasattr(x, "meta") else None
                for x in (inputs if isinstance(inputs, (list, tuple)) else [inputs])]
        if not vals or any(not isinstance(v, torch.Tensor) for v in vals) or group_arg is None:
            return None
        link, backend = self._group(group_arg, vals[0].device.type)
        if link is None:
            return None
        n = link["group_size"]
        nbytes = sum(get_fx_node_size_numel(v.size()) * v.element_size() for v in vals)
        if rule == "gather":
            nbytes *= n
        dtypes = {v.dtype for v in vals}
        dtype = _dtype_name(next(iter(dtypes))) if len(dtypes) == 1 else None
        elem_size = vals[0].element_size()
        counts = ()
        if collective == "all_to_all":
            splits = node.args[2] if len(node.args) > 2 else node.kwargs.get("input_split_sizes")
            v = vals[0]
            if splits and all(isinstance(s, int) for s in splits) and len(set(splits)) > 1 and len(splits) == n:
                row = get_fx_node_size_numel(v.size()[1:]) if v.dim() > 1 else 1
                counts = tuple(int(s) * row for s in splits)
        if collective == "reduce_scatter" and backend == "gloo":  # clone + all-reduce + copy
            collective = "all_reduce"
        if override_size is not None:
            torch_bytes = estimate_fx_collective_size(node)
            if torch_bytes <= 0:
                return None
            nbytes = int(round(int(override_size) * nbytes / torch_bytes))
            counts = ()
        return collective, link, int(nbytes), counts, elem_size, dtype

    def _price(self, node, spec, override_size) -> Optional[float]:
        q = self._query(node, spec, override_size)
        if q is None:
            return None
        collective, lc, nbytes, counts, elem_size, dtype = q
        key = (collective, lc["group_size"], lc["hosts"], lc["ranks_per_host"], lc["concurrent_groups"], nbytes,
               counts, elem_size if counts else 0, dtype, lc.get("spanned_hosts", 0))
        ms = self._prices.get(key, False)
        if ms is False:
            try:
                ms = self.profile.predict(collective, lc["group_size"], lc["hosts"], lc["ranks_per_host"],
                                          nbytes=0.0 if counts else float(nbytes), counts=counts,
                                          elem_size=elem_size, dtype=dtype,
                                          concurrent_groups=lc["concurrent_groups"],
                                          _check_class=False,
                                          spanned_hosts=lc.get("spanned_hosts", 0)).time_us / 1e3
            except _profile.ProfileError as e:
                cls = key[:5]
                if cls not in self.unpriceable:
                    self.unpriceable[cls] = str(e)
                    warnings.warn(f"shardcal.torch: the profile cannot price {collective} on group size "
                                  f"{lc['group_size']}, {lc['hosts']} host(s): {e}; torch.compile uses its own "
                                  "estimate for it", RuntimeWarning, stacklevel=3)
                ms = None
            self._prices[key] = ms
        return ms

    def _group(self, group_arg, device_type: str):
        """(link class, backend) of a collective's group: a group name, or (compile-on-one-rank
        graphs) a node whose value is the ProcessGroup."""
        import torch.distributed as dist
        from torch.distributed.distributed_c10d import _resolve_process_group
        if isinstance(group_arg, str):
            name = group_arg
            pg = None
        else:
            pg = getattr(group_arg, "meta", {}).get("val")
            name = getattr(pg, "group_name", None)
            if name is None:
                return None, None
        key = (name, device_type)
        hit = self._links.get(key)
        if hit is not None:
            return hit
        if pg is None:
            pg = _resolve_process_group(name)
        ranks = dist.get_process_group_ranks(pg)
        groups = self.mesh_groups.get(name) or _tiling_groups(ranks, dist.get_world_size())
        rph = self.ranks_per_host or _default_rph(device_type)
        link = _formats.groups_link_class(groups, rph)
        backend = self.backend or _common.group_backend(dist, pg, device_type)
        self._links[key] = (link, backend)
        return link, backend


def _rebuild(doc, ranks_per_host, backend, mesh_groups):
    return RuntimeEstimator(_profile.Profile(doc, "<pickled>"), ranks_per_host, backend, mesh_groups)


def _dtype_name(dtype) -> Optional[str]:
    return _common.DTYPES.get(str(dtype).replace("torch.", ""))


def _default_rph(device_type: str) -> int:
    env = os.environ.get("LOCAL_WORLD_SIZE")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    from torch.distributed.device_mesh import _mesh_resources
    return max(1, _mesh_resources.num_devices_per_host(device_type))


def mesh_groups(meshes) -> dict:
    """{group name: every group of that mesh dim as global ranks} for DeviceMeshes."""
    out = {}
    for mesh in meshes:
        names = getattr(mesh, "_dim_group_names", None) or []
        for d, name in enumerate(names):
            if name is not None:
                out[name] = _common.dim_groups(mesh, d)
    return out

"""What one DTensor step costs, priced from a shardcal profile: the Pricer behind shardcal.torch.

A step is a placement change on one mesh dim; Pricer finds the collective DTensor runs for it on
the mesh's backend, the bytes it moves (shards padded to the largest, as DTensor pads them) and the
link class of that mesh dim, and prices it with Profile.time_fn (bit-identical to predict()), with
a stand-in (a related collective's curve, else DTensor's own cost model) where the profile cannot
price it. shardcal.torch patches DTensor to call it (and re-exports these names); this module
imports no torch at module level.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Optional

from . import _torch_common as _common
from . import formats as _formats
from . import profile as _profile


class ShardcalTorchError(RuntimeError):
    """Bad input to the adapter (profile, ranks per host, torch version, a mesh it cannot price)."""


_dtype_names: dict = {}  # torch.dtype -> the profile's dtype name (or None)


def _dtype_name(dt) -> Optional[str]:
    name = _dtype_names.get(dt, False)
    if name is False:
        name = _dtype_names[dt] = _common.DTYPES.get(str(dt).replace("torch.", ""))
    return name


def _load_profile(profile) -> _profile.Profile:
    if isinstance(profile, _profile.Profile):
        return profile
    if isinstance(profile, (str, os.PathLike)):
        try:
            return _profile.load(os.fspath(profile))
        except OSError as e:
            raise ShardcalTorchError(f"profile {os.fspath(profile)!r}: cannot read it ({e.strerror or e}); "
                                     "give the path of a profile from shardbench calibrate") from None
        except _profile.ProfileError as e:
            raise ShardcalTorchError(f"profile: {e}") from None
    if isinstance(profile, dict):
        try:
            return _profile.Profile(profile, "<dict>")
        except _profile.ProfileError as e:
            raise ShardcalTorchError(f"profile: {e}") from None
    raise ShardcalTorchError(f"profile must be a path, a loaded shardcal.profile.Profile or its JSON as a dict, "
                             f"not {type(profile).__name__}")


def _default_ranks_per_host(device_type: str) -> int:
    # torchrun's LOCAL_WORLD_SIZE when set, else what DTensor itself assumes (device count).
    env = os.environ.get("LOCAL_WORLD_SIZE")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    from torch.distributed.device_mesh import _mesh_resources
    return max(1, _mesh_resources.num_devices_per_host(device_type))


def _numel(shape) -> int:
    return math.prod(int(s) for s in shape)


def _largest_logical(full, placements, d: int, mesh_shape) -> list:
    """The tensor as mesh dim d sees it in its largest group: every other mesh dim's shard is the
    largest one. DTensor's own logical shape uses this rank's coordinate, so ranks with smaller
    (uneven) shards would price other costs and could choose other plans; the largest shard is
    what the slowest group moves, the same on every rank. Nested chunks compose exactly:
    ceil(ceil(x / a) / b) = ceil(x / (a b))."""
    ls = [int(x) for x in full]
    for m, p in enumerate(placements):
        if m != d and p.is_shard():
            n = int(mesh_shape[m])
            if type(p).__name__ == "Shard":
                ls[p.dim] = -(-ls[p.dim] // n)
            else:  # _StridedShard: the largest of its local sizes
                ls[p.dim] = max(int(p.local_shard_size_and_offset(ls[p.dim], n, k)[0]) for k in range(n))
    return ls


def _dim_backend(dist, mesh, d: int) -> str:
    """The backend that runs mesh dim d's collectives on the mesh's device type: a process group
    made without a backend reports "undefined" and holds one per device ("cpu:gloo,cuda:nccl")."""
    try:
        group = mesh.get_group(d)
    except Exception:  # no process group for this dim: price the real collectives
        return "unknown"
    return _common.group_backend(dist, group, mesh.device_type)


def _link_class(groups, rph: int) -> dict:
    """The link class of groups of global ranks, host = rank // rph, by the rule `shardbench
    plan` prices a mesh dim with (shardcal.formats.groups_link_class): the most hosts any group
    spans, and the groups at once on one host by formats.json's rule. Groups not aligned with
    hosts (e.g. groups of 3 on 4-rank hosts) count as one rank per host, as in C++."""
    return _formats.groups_link_class(groups, rph)


# A collective the profile cannot price on a link class is priced from a related one it can (the
# first that works, named in the warning), else by DTensor's own cost model: working DTensor code
# keeps working with an incomplete profile. (label, [(collective, weight)]): the time at the same
# S in the collective table's convention. Ring algorithms: all-gather and reduce-scatter move the
# same bytes in the same steps, an all-reduce is one of each, an all-to-all sends (n-1)/n of S as
# an all-gather does.
_STANDINS = {
    "all_gather": [("reduce_scatter's curve (the same ring traffic at the same size)", [("reduce_scatter", 1.0)]),
                   ("half all_reduce's curve (an all-reduce is a reduce-scatter and an all-gather)",
                    [("all_reduce", 0.5)])],
    "reduce_scatter": [("all_gather's curve (the same ring traffic at the same size)", [("all_gather", 1.0)]),
                       ("half all_reduce's curve (an all-reduce is a reduce-scatter and an all-gather)",
                        [("all_reduce", 0.5)])],
    "all_reduce": [("reduce_scatter's plus all_gather's curves (an all-reduce is one of each)",
                    [("reduce_scatter", 1.0), ("all_gather", 1.0)]),
                   ("twice all_gather's curve (an all-reduce is a reduce-scatter and an all-gather)",
                    [("all_gather", 2.0)]),
                   ("twice reduce_scatter's curve (an all-reduce is a reduce-scatter and an all-gather)",
                    [("reduce_scatter", 2.0)])],
    "all_to_all": [("all_gather's curve (each rank sends (n-1)/n of the size, as in an all-gather)",
                    [("all_gather", 1.0)]),
                   ("reduce_scatter's curve (each rank sends (n-1)/n of the size, as in a reduce-scatter)",
                    [("reduce_scatter", 1.0)])],
}
_DTENSOR_COST = "DTensor's own cost model (torch.distributed.tensor._collective_utils)"


def _dtensor_cost_fn(mesh, d: int, collective: str):
    """DTensor's own estimate of `collective` of S bytes on mesh dim d, in us (its redistribute_cost's
    functions and its mesh topology guess), or None for a collective it does not price."""
    from torch.distributed.tensor import _collective_utils as cu
    try:
        topo = cu.MeshTopoInfo.build_from_mesh(mesh)
    except Exception:  # (a mesh DTensor cannot describe)
        return None
    gib = float(1 << 30)
    if collective == "all_gather":
        return lambda nbytes: cu.allgather_cost(nbytes / gib, topo, d)
    if collective == "reduce_scatter":
        return lambda nbytes: cu.reduce_scatter_cost(nbytes / gib, topo, d)
    if collective == "all_reduce":
        return lambda nbytes: cu.allreduce_cost(nbytes / gib, topo, d)
    if collective == "all_to_all":  # DTensor prices S(a) -> S(b) as an all-gather of the shard, + 1 us
        return lambda nbytes: cu.allgather_cost(nbytes / gib, topo, d) + 1.0
    return None


class Pricer:
    """Prices one DTensor step (a placement change on one mesh dim) from a profile, in us.
    strict: a collective the profile cannot price raises ShardcalTorchError instead of being
    priced by a stand-in (a related collective's curve, else DTensor's own cost) with a warning."""

    def __init__(self, prof: _profile.Profile, ranks_per_host: Optional[int], backend: Optional[str],
                 device_type: Optional[str] = None, strict: bool = False):
        self.profile = prof
        self.ranks_per_host = ranks_per_host
        self.backend = backend
        self.device_type = device_type
        self.strict = bool(strict)
        self._times: dict = {}
        self._mesh_info: dict = {}
        self._plan_ctx: dict = {}  # id(mesh) -> dtensor_plan._MeshContext
        self.unpriceable: dict = {}  # (link class, collective) -> why (no stand-in either)
        self.standins: dict = {}  # (link class, collective, dtype) -> (time function, label)
        self._warned: set = set()  # (link class, collective) warned about a stand-in
        # Plans made by shardcal.dtensor_plan (DTensor's graph plan over compact states) and by
        # DTensor's own planner; fast_plan=False sends every plan to DTensor's (tests compare them).
        self.fast_plan = True
        self.plans = {"fast": 0, "dtensor": 0}

    # -- the mesh: shape, device type, backend and link class per dim ---------------------
    def mesh_info(self, mesh):
        key = id(mesh)
        info = self._mesh_info.get(key)
        if info is None or info[0] is not mesh:
            import torch.distributed as dist
            shape = tuple(int(s) for s in mesh.shape)
            rph = self.ranks_per_host or _default_ranks_per_host(mesh.device_type)
            backends = tuple(self.backend or _dim_backend(dist, mesh, d) for d in range(len(shape)))
            links = tuple(_link_class(_common.dim_groups(mesh, d), rph) for d in range(len(shape)))
            info = (mesh, shape, self.device_type or mesh.device_type, backends, rph, links)
            self._mesh_info[key] = info
        return info

    def link(self, mesh, d: int) -> dict:
        """The link class of mesh dim d: group size, hosts a group spans, its ranks per host and
        the groups of this dim sharing a host (from the mesh's global ranks)."""
        return self.mesh_info(mesh)[5][d]

    def standin(self, mesh, d: int, collective: str, dtype: Optional[str]):
        """(time function of bytes -> us, label) pricing a collective the profile cannot price on
        mesh dim d's link class: a related collective's curve from the profile (_STANDINS), else
        DTensor's own cost model; None when neither can."""
        lc = self.link(mesh, d)
        key = (lc["group_size"], lc["hosts"], lc["ranks_per_host"], lc["concurrent_groups"], collective, dtype,
               lc.get("spanned_hosts", 0))
        if key in self.standins:
            return self.standins[key]
        found = None
        for label, parts in _STANDINS.get(collective, ()):
            try:
                fns = [(self.profile.time_fn(c, lc["group_size"], lc["hosts"], lc["ranks_per_host"], dtype,
                                             lc["concurrent_groups"], lc.get("spanned_hosts", 0)), w)
                       for c, w in parts]
            except _profile.ProfileError:
                continue
            found = ((lambda nbytes, fns=fns: sum(w * f(nbytes) for f, w in fns)), label)
            break
        if found is None:
            fn = _dtensor_cost_fn(mesh, d, collective)
            if fn is not None:
                found = (fn, _DTENSOR_COST)
        self.standins[key] = found
        return found

    def time_us(self, mesh, d: int, collective: str, nbytes: int, dtype: Optional[str],
                strict: bool = False) -> float:
        """The profile's time. A collective it cannot price: with one warning per collective and
        link class, a stand-in's time (a related collective's curve, else DTensor's own cost), or
        +inf (so the planner avoids it) when there is none; ShardcalTorchError when strict (the
        argument or the pricer's)."""
        lc = self.link(mesh, d)
        key = (lc["group_size"], lc["hosts"], lc["ranks_per_host"], lc["concurrent_groups"], collective, nbytes,
               dtype, lc.get("spanned_hosts", 0))
        t = self._times.get(key)
        if t is None:
            try:
                # predict(...).time_us, bit-identical, with the model choice and host transport of
                # this class resolved once (Profile.time_fn): a first plan prices 2-10 edges
                t = self.profile.time_fn(collective, lc["group_size"], lc["hosts"], lc["ranks_per_host"], dtype,
                                         lc["concurrent_groups"], lc.get("spanned_hosts", 0))(float(nbytes))
            except _profile.ProfileError as e:
                msg = (f"mesh {list(mesh.shape)}, mesh dim {d}: the profile cannot price {collective} of {nbytes} B: "
                       f"{e}")
                if strict or self.strict:
                    raise ShardcalTorchError(f"{msg} (strict: no stand-in price)") from None
                cls = key[:5]
                sub = self.standin(mesh, d, collective, dtype)
                if sub is None:
                    if cls not in self.unpriceable:
                        self.unpriceable[cls] = msg
                        warnings.warn(f"shardcal.torch: {msg}; no stand-in either: plans avoid it", RuntimeWarning,
                                      stacklevel=2)
                    t = float("inf")
                else:
                    t = float(sub[0](float(nbytes)))
                    if cls not in self._warned:
                        self._warned.add(cls)
                        warnings.warn(f"shardcal.torch: {msg}; priced as {sub[1]} instead: add {collective} for "
                                      f"this link class to the profile for its own curve, or use_profile(..., "
                                      f"strict=True) to raise", RuntimeWarning, stacklevel=2)
            self._times[key] = t
        return t

    def check_plan(self, mesh, infos, itemsize: int) -> None:
        """ShardcalTorchError when a planned step runs a collective the profile could not price
        on that dim's link class (no plan avoided it)."""
        for info in infos:
            src, dst = info.src_dst_placements
            q = self.step_query(mesh, info.mesh_dim, src, dst, info.logical_shape, itemsize)
            if q is None or q == "inf":
                continue
            lc = self.link(mesh, info.mesh_dim)
            why = self.unpriceable.get((lc["group_size"], lc["hosts"], lc["ranks_per_host"],
                                        lc["concurrent_groups"], q[0]))
            if why is not None:
                raise ShardcalTorchError(f"{why}; no redistribution plan avoids it (step {src} -> {dst} on mesh dim "
                                         f"{info.mesh_dim}): add {q[0]} for this link class to the profile")

    def step_query(self, mesh, d: int, src, dst, logical_shape, itemsize: int):
        """(collective, bytes in the profile's convention) DTensor runs for src -> dst on mesh dim d
        with this logical shape (the tensor as mesh dim d splits it; a callable is called only for
        a communicating step), None for a local step, or "inf" for a step DTensor's strategy
        planner must not take."""
        if src == dst or src.is_replicate():  # R -> S, R -> P: local
            return None
        _, shape, device_type, backends, _, _ = self.mesh_info(mesh)
        n = shape[d]
        if src.is_partial() and dst.is_partial() or src.is_shard() and dst.is_partial():
            return "inf"  # P -> P of another reduce op; S -> P is explicit-only (DTensor's rule)
        ls = [int(x) for x in (logical_shape() if callable(logical_shape) else logical_shape)]
        if src.is_shard():
            if dst.is_replicate():  # pad to the largest shard, all-gather
                ls[src.dim] = -(-ls[src.dim] // n)
                return "all_gather", n * _numel(ls) * itemsize
            if dst.is_shard():  # old dim padded to a full chunk, new dim to n full chunks
                ls[src.dim] = -(-ls[src.dim] // n)
                ls[dst.dim] = -(-ls[dst.dim] // n) * n
                if device_type == "cpu":  # gloo has no all-to-all: all-gather + local chunk
                    return "all_gather", n * _numel(ls) * itemsize
                return "all_to_all", _numel(ls) * itemsize
        if src.is_partial():
            if dst.is_replicate():
                return "all_reduce", _numel(ls) * itemsize
            if dst.is_shard():  # input padded to n full chunks, reduce-scattered
                ls[dst.dim] = -(-ls[dst.dim] // n) * n
                if backends[d] == "gloo":  # gloo: clone + all-reduce + copy
                    return "all_reduce", _numel(ls) * itemsize
                return "reduce_scatter", _numel(ls) * itemsize
        return None

    def step_us(self, mesh, d: int, src, dst, logical_shape, itemsize: int, dtype: Optional[str]) -> float:
        q = self.step_query(mesh, d, src, dst, logical_shape, itemsize)
        if q is None:
            return 0.0
        if q == "inf":
            return float("inf")
        return self.time_us(mesh, d, q[0], q[1], dtype)

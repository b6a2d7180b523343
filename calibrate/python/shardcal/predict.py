"""What one query costs: Python's entry to the C++ predict() (calibrate/src/predict.cpp).

S_eff (effective_bytes), the nearest measured class (docs/PROFILE_FORMAT.md "Choosing a model"),
its host-count transport, the notes that say what was extrapolated, and the price with its 95 %
interval are all computed by the C++ cost model through shardcal._core, the functions
`shardbench predict` calls (docs/CALIBRATION.md "The model"); this module fills in Python's
defaults and wraps the answers. The functions take the profile (a shardcal.profile.Profile) as
their first argument; Profile's methods of the same names call them.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Optional, Sequence

from . import formats as _formats
from .collectives import COLLECTIVES
from .profile_read import Model, ProfileError, _core


@dataclass
class Prediction:
    time_us: float
    model: Model
    segment: int
    extrapolated: bool
    note: str
    s_eff: float
    lo_us: float = 0.0  # 95 % prediction interval
    hi_us: float = 0.0
    basis: str = ""
    class_note: str = ""  # the link-class part of note ("" when the class was measured)
    size_octaves: float = 0.0  # log2(s_eff / nearest measured size) past the measured sizes, else 0
    size_edge_bytes: float = 0.0  # the nearest measured size when size_octaves != 0
    other_side: bool = False  # an intra-host group priced from inter-host measurements, or the reverse


def _collective(name: str) -> str:
    if name not in COLLECTIVES:
        raise ProfileError(f"unknown collective {name!r}; use one of {COLLECTIVES}")
    return name


def _ranks_per_host(group_size: int, hosts: int, ranks_per_host: Optional[int]) -> int:
    if ranks_per_host is not None:
        return ranks_per_host
    return group_size // hosts if hosts >= 1 else 0  # (predict rejects hosts < 1)


def effective_bytes(collective: str, rule: str, nbytes: float, counts: Sequence[int] = (), elem_size: int = 1,
                    group_size: Optional[int] = None) -> float:
    """S_eff as calibrate::effective_bytes (calibrate/include/shardcal/calibrate/predict.hpp):
    no v-form (all_reduce, broadcast): equal counts, S_eff = counts[0] * elem_size; all_to_all:
    n counts (one row) or n x n (the send matrix, row-major), the rule per row, the largest;
    others: the rule over the n counts. group_size defaults to len(counts)."""
    counts = list(counts)
    return _core.effective_bytes(_collective(collective), rule, nbytes, counts, elem_size,
                                 len(counts) if group_size is None else group_size)


def table_bytes(collective: str, counts: Sequence[int], elem_size: int = 1, group_size: Optional[int] = None) -> float:
    """S in the collective table's convention for counts, as calibrate::table_bytes."""
    counts = list(counts)
    return _core.table_bytes(_collective(collective), counts, elem_size,
                             len(counts) if group_size is None else group_size)


def bandwidth_growth(law: str, collective: str, n_b: int, h_b: int, n: int, h: int) -> float:
    """host_transport.cpp bandwidth_growth: "bus-factor" or "host-share"."""
    return _core.bandwidth_growth(law, _collective(collective), n_b, h_b, n, h)


def known_switch(collective: str, backend: str, h_b: int, h: int):
    """host_transport.cpp known_switch: NCCL's two-node all_reduce tree, (lo, hi) factors."""
    return _core.known_switch(_collective(collective), backend, h_b, h)


def predict(prof, collective: str, group_size: int, hosts: int = 1, ranks_per_host: Optional[int] = None,
            nbytes: float = 0.0, counts: Sequence[int] = (), elem_size: int = 1,
            dtype: Optional[str] = None, concurrent_groups: int = 1, _check_class: bool = True,
            spanned_hosts: int = 0) -> Prediction:
    """calib::predict: the price with its interval, the chosen model and segment, the notes.
    _check_class False prices a class whose hosts x ranks per host is not its group size as given.
    spanned_hosts: the hosts the group really spans where the class stands in for an uneven split
    (formats.group_link_class's "spanned_hosts"), for the host links' floor; 0: hosts."""
    r = prof._core.predict(_collective(collective), group_size, hosts,
                           _ranks_per_host(group_size, hosts, ranks_per_host), nbytes, list(counts), elem_size,
                           dtype, concurrent_groups, _check_class, spanned_hosts)
    return Prediction(r[0], prof.models[r[1]], *r[2:])


def choose_model(prof, collective: str, group_size: int, hosts: int = 1, concurrent_groups: int = 1,
                 dtype: Optional[str] = None):
    """The nearest measured class (docs/PROFILE_FORMAT.md "Choosing a model"), as predict()
    chooses it: (model, None) (the ranking key stays in C++)."""
    return predict(prof, collective, group_size, hosts, None, 0.0, (), 1, dtype, concurrent_groups, False).model, None


def host_transport(prof, best: Model, hosts: int, ranks_per_host: int, concurrent_groups: int = 1,
                   group_size: Optional[int] = None):
    """calib::host_transport for a query whose chosen model is `best`: its fields (laws, ratios,
    the testing model as `other`, `note`) as attributes, or None when the price is not transported."""
    t = prof._core.host_transport(best.index, hosts * ranks_per_host if group_size is None else group_size, hosts,
                                  ranks_per_host, concurrent_groups)
    if t is None:
        return None
    t["other"] = None if t["other"] is None else prof.models[t["other"]]
    return SimpleNamespace(**t)


def time_fn(prof, collective: str, group_size: int, hosts: int = 1, ranks_per_host: Optional[int] = None,
            dtype: Optional[str] = None, concurrent_groups: int = 1, spanned_hosts: int = 0):
    """predict(...).time_us for one link class, collective and dtype as a function of nbytes
    alone, bit-identical to predict(..., _check_class=False): a C++ calib::ClassPricer
    (pricing_api.hpp) with the class's model and host transport resolved once (and kept on the
    profile), a shardcal._core.TimeFn that the DTensor plan search also evaluates without Python.
    For planners that price many sizes and need no interval or notes. ProfileError as predict
    raises it."""
    fns = prof.__dict__.setdefault("_time_fns", {})
    key = (collective, group_size, hosts, ranks_per_host, dtype, concurrent_groups, spanned_hosts)
    fn = fns.get(key)
    if fn is None:
        fn = fns[key] = prof._core.time_fn(_collective(collective), group_size, hosts,
                                           _ranks_per_host(group_size, hosts, ranks_per_host), dtype,
                                           concurrent_groups, spanned_hosts)
    return fn


def mesh_topo(prof, mesh_shape: Sequence[int], ranks_per_host: int, collective: str = "all_gather",
              nbytes: Optional[float] = None, dtype: Optional[str] = None) -> dict:
    """Per-mesh-dim numbers in the shape of PyTorch DTensor's MeshTopoInfo.

    Ranks are numbered row-major over the mesh and host = rank // ranks_per_host (DTensor's
    assumption). Each dim's link class (hosts its groups span, their ranks per host, groups at
    once on one host) is `shardbench plan`'s: shardcal.formats.mesh_dim_link_class, whose
    concurrency comes from formats.json's link-class rule. For each dim the model for `collective`
    is chosen like predict() does, at `nbytes` (default: the last, large-message segment), and
    calib::mesh_dim_numbers gives mesh_dim_bandwidth (GB/s, 1e9 B/s; with contention shared by
    the dim's concurrent groups), mesh_dim_latency (us per step), mesh_dim_base_latency (us);
    also mesh_dim_devices, mesh_dim_bandwidth_dtensor (GiB/s: what DTensor's formulas divide its
    GiB counts by) and the link class and extrapolation note used per dim.
    """
    shape = [int(x) for x in mesh_shape]
    if not shape or min(shape) < 1 or ranks_per_host < 1:
        raise ProfileError("mesh_topo: mesh sizes and ranks_per_host must be >= 1")
    out = {"mesh_dim_devices": [], "mesh_dim_bandwidth": [], "mesh_dim_latency": [],
           "mesh_dim_base_latency": [], "mesh_dim_bandwidth_dtensor": [], "link_class": [],
           "extrapolated": [], "note": []}
    for i, n in enumerate(shape):
        lc = _formats.mesh_dim_link_class(shape, i, ranks_per_host)
        hosts, group_rph, concurrent = lc["hosts"], lc["ranks_per_host"], lc["concurrent_groups"]
        bw, step_us, base_us, extrapolated, note = prof._core.mesh_dim(
            _collective(collective), n, hosts, group_rph, concurrent, None if nbytes is None else float(nbytes), dtype,
            lc["spanned_hosts"])
        out["mesh_dim_devices"].append(n)
        out["mesh_dim_bandwidth"].append(bw)
        out["mesh_dim_latency"].append(step_us)
        out["mesh_dim_base_latency"].append(base_us)
        out["mesh_dim_bandwidth_dtensor"].append(bw * 1e9 / 1024 ** 3)
        out["link_class"].append({"group_size": n, "hosts": hosts, "ranks_per_host": group_rph,
                                  "concurrent_groups": concurrent})
        out["extrapolated"].append(extrapolated)
        out["note"].append(note)
    return out

"""What one query costs -- the Python mirror of calibrate/src/predict.cpp.

A query's S_eff from uneven counts (effective_bytes), the nearest measured class
(docs/PROFILE_FORMAT.md "Choosing a model"), its host-count transport (shardcal.host_transport),
the notes that say what was extrapolated, and the price with its 95 % interval
(shardcal.cost_model): the same model choice, segment and floating-point operations in the same
order as the C++ (tests/calibrate/parity_test.py). The functions take the profile (a
shardcal.profile.Profile) as their first argument; Profile's methods of the same names call them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from . import cost_model as _cm
from shardcal import formats as _formats
from . import host_transport as _ht
from shardcal.collectives import COLLECTIVES, HAS_V_FORM
from .profile_read import Model, ProfileError, _between_measured_classes, _contains


@dataclass
class Prediction:
    time_us: float
    model: Model
    segment: int
    extrapolated: bool
    note: str
    s_eff: float
    lo_us: float = 0.0  # 95 % prediction interval (cost_model.py)
    hi_us: float = 0.0
    basis: str = ""
    class_note: str = ""  # the link-class part of note ("" when the class was measured)
    size_octaves: float = 0.0  # log2(s_eff / nearest measured size) past the measured sizes, else 0
    size_edge_bytes: float = 0.0  # the nearest measured size when size_octaves != 0
    other_side: bool = False  # an intra-host group priced from inter-host measurements, or the reverse
    link_floor_us: float = 0.0  # the link ceiling's floor at the query (0: no ceiling)
    at_link_floor: bool = False  # the price sits on that floor (predict.cpp at_link_floor)
    transport: Optional[_ht.HostTransport] = None  # Prediction::transport (None: not transported)


def _route_latency_note(mode: str, tr, s_eff: float) -> str:
    """predict.cpp route_latency_note: what the routes' note adds for Open MPI's overlapped
    reduce_scatter ring."""
    if not _ht._route_latency_overlapped(tr):
        return ""
    if mode == "lock-step":
        return (" (Open MPI's reduce_scatter ring: its steps' messages are past the measured protocol "
                "switch, so its steps wait for each other)" if tr.route_step_us != 0 else "")
    if mode == "chain":
        extra = _ht.transported_chain_extra(tr, s_eff)[0]
        return ("; Open MPI's reduce_scatter ring overlaps its eager steps: priced by their dependency "
                "chain over the routes' hops (latency and the per-step message at each count's link share), "
                f"{'+' if extra >= 0 else ''}{extra:.4g} us in all"
                + (" (the interval reaches the prices without and with the extra on every step)"
                   if tr.route_step_us != 0 else ""))
    return (", priced at the geometric middle of with and without it (Open MPI's reduce_scatter "
            "ring overlaps some of its eager steps' latency; no chain: the routes list no hop latencies, or "
            "no loopback latency for several ranks per host, or the ring has over 1024 ranks, or no "
            "protocol switch was measured, or the ring is not carried at equal per-step messages): "
            "the interval reaches both" if tr.route_step_us != 0 else "")

def _factor_distance(x: int, r) -> float:
    lo, hi = r
    if x < lo:
        return lo / x
    if hi is not None and x > hi:
        return x / hi
    return 1.0

def _row_length(collective: str, size: int, group_size: int) -> int:
    if group_size < 1:
        raise ProfileError(f"group size must be >= 1, got {group_size}")
    if size == group_size:
        return group_size
    if collective == "all_to_all" and size == group_size * group_size:
        return group_size
    raise ProfileError(f"counts has {size} entries but the group size is {group_size}; give one count per "
                       "group position" + (" (all_to_all: or n x n, the send matrix row-major)"
                                           if collective == "all_to_all" else ""))


def _check_counts(collective: str, counts: Sequence[int], elem_size: int) -> None:
    if elem_size < 1:
        raise ProfileError(f"element size must be >= 1 byte, got {elem_size}")
    for i, c in enumerate(counts):
        if c < 0:
            raise ProfileError(f"counts[{i}] = {c} is negative; counts are elements per group position")
    if collective not in HAS_V_FORM:
        for i, c in enumerate(counts):
            if c != counts[0]:
                raise ProfileError(f"{collective} has no v-form: its count is the buffer, the same at every group "
                                   f"position, but counts[{i}] = {c} != counts[0] = {counts[0]}; give equal counts")


def effective_bytes(collective: str, rule: str, nbytes: float, counts: Sequence[int] = (), elem_size: int = 1,
                    group_size: Optional[int] = None) -> float:
    """S_eff as calibrate::effective_bytes (calibrate/include/shardcal/calibrate/predict.hpp):
    no v-form (all_reduce, broadcast): equal counts, S_eff = counts[0] * elem_size; all_to_all:
    n counts (one row) or n x n (the send matrix, row-major), the rule per row, the largest;
    others: the rule over the n counts. group_size defaults to len(counts)."""
    if not counts:
        if not math.isfinite(nbytes) or nbytes < 0:
            raise ProfileError(f"bytes must be finite and >= 0, got {nbytes}")
        return float(nbytes)
    _check_counts(collective, counts, elem_size)
    row = _row_length(collective, len(counts), len(counts) if group_size is None else group_size)
    es = float(elem_size)
    if collective not in HAS_V_FORM:
        return float(counts[0]) * es
    best = 0.0
    for r in range(0, len(counts), row):
        total = 0.0
        largest = 0.0
        for c in counts[r:r + row]:
            total += float(c)
            largest = max(largest, float(c))
        best = max(best, total * es if rule == "total" else float(row) * largest * es)
    return best


def table_bytes(collective: str, counts: Sequence[int], elem_size: int = 1, group_size: Optional[int] = None) -> float:
    """S in the collective table's convention for counts, as calibrate::table_bytes."""
    if not counts:
        raise ProfileError("table_bytes: counts is empty")
    # The table's S is the "total" rule: the largest row's sum (the buffer for no-v-form ops).
    return effective_bytes(collective, "total", 0, counts, elem_size, group_size)

def choose_model(prof, collective: str, group_size: int, hosts: int = 1, concurrent_groups: int = 1,
                 dtype: Optional[str] = None):
    """The nearest measured class (docs/PROFILE_FORMAT.md "Choosing a model"): (model, key)."""
    best = None
    best_key = None
    for m in prof.models:
        if m.collective != collective:
            continue
        d = m.domain
        if hosts > 1:
            side = 1 if (d["hosts"][1] is not None and d["hosts"][1] <= 1) else 0
        else:
            side = 1 if d["hosts"][0] > 1 else 0
        if dtype is not None:
            ds = 0 if m.dtype == dtype else (1 if m.dtype is None else 2)
        else:
            ds = 2 if m.dtype is not None else 0
        # Equally far host counts: the larger (small counts are often special cases).
        key = (side, _factor_distance(hosts, d["hosts"]), -m.hosts,
               _factor_distance(concurrent_groups, d["concurrent_groups"]),
               _factor_distance(group_size, d["group_size"]), ds)
        if best is None or key < best_key:
            best, best_key = m, key
    if best is None:
        have = ", ".join(sorted({m.collective for m in prof.models})) or "none"
        raise ProfileError(f"profile '{prof.cluster}' has no model for {collective} (it has: {have}); "
                           f"calibrate from a sweep that measures {collective}")
    return best, best_key


def predict(prof, collective: str, group_size: int, hosts: int = 1, ranks_per_host: Optional[int] = None,
            nbytes: float = 0.0, counts: Sequence[int] = (), elem_size: int = 1,
            dtype: Optional[str] = None, concurrent_groups: int = 1, _check_class: bool = True) -> Prediction:
    if collective not in COLLECTIVES:
        raise ProfileError(f"unknown collective {collective!r}; use one of {COLLECTIVES}")
    if ranks_per_host is None:
        ranks_per_host = group_size // hosts if hosts >= 1 else 0
    if min(group_size, hosts, ranks_per_host, concurrent_groups) < 1:
        raise ProfileError("link class: group size, hosts, ranks per host and concurrent groups must all be >= 1")
    if _check_class and hosts * ranks_per_host != group_size:
        raise ProfileError(f"link class: group size {group_size} != hosts {hosts} x ranks per host "
                           f"{ranks_per_host}; a group spanning h hosts has the same number of ranks on each")
    if counts:
        _row_length(collective, len(counts), group_size)
    m, key = choose_model(prof, collective, group_size, hosts, concurrent_groups, dtype)
    s_eff = effective_bytes(collective, m.effective_size, nbytes, counts, elem_size, group_size)
    side, dh, _, dc, dn, ds = key
    notes = []
    tr = _ht.host_transport(prof, m, hosts, ranks_per_host, concurrent_groups, group_size)
    if tr is not None:
        def outside(model, n):
            return _factor_distance(n, model.domain["group_size"]) != 1.0
        if outside(m, tr.n_model) or (tr.other is not None and outside(tr.other, tr.n_other)):
            sizes = f"{tr.n_model}" + (f" and {tr.n_other}" if tr.other is not None else "")
            host_counts = f"{m.hosts}" + (f" and {tr.other.hosts}" if tr.other is not None else "")
            notes.append(f"{ranks_per_host} ranks per host: group sizes {sizes} outside the measured ones "
                         f"at hosts={host_counts}")
    transport_class_extrapolated = bool(notes)
    if tr is not None:
        notes.append(_ht.transport_note(tr, m, hosts))
        if dc != 1.0:
            notes.append(f"nearest measured class: concurrent_groups={m.concurrent_groups}")
    elif side != 0 or dh != 1.0 or dc != 1.0:
        notes.append(f"nearest measured class: hosts={m.hosts} concurrent_groups={m.concurrent_groups}")
    if tr is not None:  # transported: each model's own group size was checked above
        pass
    elif dn != 1.0:
        notes.append(f"group size {group_size} outside the measured range")
    elif dc == 1.0 and m.domain["classes"] and not _between_measured_classes(
            m.domain["classes"], group_size, concurrent_groups):
        notes.append(f"group size {group_size} with {concurrent_groups} concurrent groups neither measured nor "
                     "between measured pairs at the same group size or concurrency")
    if ds == 2:
        notes.append(f"dtype model {m.dtype or 'pooled'} used for {dtype or 'an unspecified dtype'}")
    # The class's sigma (the size alone is not: the curve widens for it).
    if tr is not None:
        class_sigma = (_cm.EXTRAPOLATED_CLASS_LOG_SIGMA
                       if (dc != 1.0 or ds == 2 or tr.other is None or transport_class_extrapolated) else 0.0)
    else:
        class_sigma = (_cm.OTHER_SIDE_LOG_SIGMA if side != 0
                       else (_cm.EXTRAPOLATED_CLASS_LOG_SIGMA if notes else 0.0))
    class_note = "; ".join(notes)
    other_side = side != 0 and tr is None
    if other_side:
        notes.append(("an inter-host group priced from intra-host measurements" if hosts > 1 else
                      f"an intra-host group priced from inter-host measurements (hosts={m.hosts})") +
                     ": links never measured, 95 % interval x7 either way")
    pr = (_ht.price_transported(m, tr, concurrent_groups, s_eff, class_sigma) if tr is not None
          else _cm.price(m, group_size, concurrent_groups, s_eff, class_sigma, hosts))
    # The size: past the measured curve's sizes (what priced it), else outside the domain.
    # An MPI ring carried at equal per-step messages priced the measured count at s_eff n_b / n
    # (host_transport.cpp carried_at_equal_messages, measured_bytes_at): the note names that size.
    per_step = tr is not None and _ht._equal_message(tr, tr.law, tr.bw_law, tr.two_node_switch, tr.n_model,
                                                     tr.n_query, s_eff)
    # The ring routes (predict.cpp): what they add on each ring step, or that they do not apply.
    if tr is not None and tr.route_skipped:
        notes.append(f"ring routes not applied ({tr.route_skipped})")
    if tr is not None and tr.routes:
        if _ht.route_ring(tr, s_eff):
            notes.append(f"ring routes: hosts={hosts}'s ring takes {tr.route_latency_query_us:.4g} us routes at "
                         f"{tr.route_share_query_GBps:.4g} GB/s per flow, hosts={tr.hosts_model}'s "
                         f"{tr.route_latency_model_us:.4g} us at {tr.route_share_model_GBps:.4g} GB/s: "
                         f"{'+' if tr.route_step_us >= 0 else ''}{tr.route_step_us:.4g} us on each of "
                         f"{tr.route_steps} steps"
                         + _route_latency_note(_ht.route_latency(m, tr, s_eff), tr, s_eff)
                         + (f"; held at the chain's price at {at:.4g} B: a larger message is never priced faster"
                            if (at := _ht.transported_chain_hold_bytes(m, tr, concurrent_groups, s_eff)) > 0 else "")
                         + (f"; held at the eager steps' price at the switch ({hold:.4g} B): a larger message is "
                            "never priced faster"
                            if (hold := _ht.transported_eager_hold_bytes(m, tr, concurrent_groups, s_eff)) > 0 else "")
                         + (f"; the bandwidth term x{tr.route_bw_ratio:.4g} as far as the flows sharing the link "
                            f"overlap (their routes' latencies differ by {tr.route_skew_us:.4g} us"
                            + (f" at most, the {tr.route_skew_source}'s: the interval reaches whole overlap; "
                               "ring-routes writes share_skew_us" if tr.route_skew_source != "table" else "")
                            + ")" if tr.route_bw_ratio != 1.0 and _ht.route_latency(m, tr, s_eff) != "chain"
                            else ""))
        else:
            notes.append("ring routes not applied (the algorithm priced here is not a neighbour ring)")
    s_priced = s_eff * tr.n_model / tr.n_query if per_step else s_eff
    if pr.beyond_measured:
        edge = pr.curve.bytes[-1] if pr.beyond_octaves > 0 else pr.curve.bytes[0]
        factor = "" if s_priced < 1.0 else f"{2.0 ** abs(pr.beyond_octaves):.4g}x "
        equivalent = f" (the measured count's per-step equivalent of {s_eff:.4g} B)" if per_step else ""
        notes.append(f"size {s_priced:.4g} B{equivalent} is {factor}"
                     f"{'above the largest' if pr.beyond_octaves > 0 else 'below the smallest'} measured "
                     f"({edge:.4g} B): priced past the sweep, interval widened")
    elif not _contains(m.domain["bytes"], s_eff):
        notes.append(f"size {s_eff} B outside the measured range")
    # The link ceiling's floor at the query's group size (predict.cpp): a price on it says so,
    # and the note makes the prediction extrapolated as any note does.
    floor_us = _cm.link_floor_time_us(m, group_size, s_eff, hosts)
    at_floor = floor_us > 0 and pr.time_us <= floor_us
    # predict.cpp at_host_link_floor: the host links' floor binds (above every link's)
    at_host = at_floor and hosts > 1 and floor_us > _cm.link_floor_time_us(m, group_size, s_eff, 1)
    if at_floor:
        even = all(c == counts[0] for c in counts)
        what = (f"priced at the host links' floor ({m.host_link_GBps:.4g} GB/s per GPU and direction: the bytes "
                f"leaving each of {hosts} hosts through the PCIe links of its ranks, at most {max(1, group_size // hosts)} "
                f"on the least-populated)" if at_host
                else f"priced at the GPUs' link ceiling ({m.link_ceiling_GBps:.4g} GB/s per GPU and direction)")
        notes.append(what + ": "
                     + ("no collective of this size can run faster" if even
                        else "the floor at S_eff, the model's size for these uneven counts"))
    basis = "backbone" if pr.curve is None else ("measured curve" if pr.curve_exact else "nearest class's curve")
    if tr is not None:
        basis = (f"hosts={m.hosts} transported to hosts={hosts}"
                 f"{f', tested by hosts={tr.other.hosts}' if tr.other is not None and tr.law_tested else ', untested'}"
                 f" ({basis})")
    if pr.switch_gap:
        basis += ", switch in the gap"
    if pr.beyond_measured:
        basis += ", beyond the measured sizes"
    return Prediction(pr.time_us, m, pr.segment, bool(notes), "; ".join(notes), s_eff, pr.lo_us, pr.hi_us, basis,
                      class_note, pr.beyond_octaves if pr.beyond_measured else 0.0,
                      edge if pr.beyond_measured else 0.0, other_side, floor_us, at_floor, tr)


def time_fn(prof, collective: str, group_size: int, hosts: int = 1, ranks_per_host: Optional[int] = None,
            dtype: Optional[str] = None, concurrent_groups: int = 1):
    """predict(...).time_us for one link class, collective and dtype as a function of nbytes
    alone, bit-identical to predict(..., _check_class=False): the model choice and the host
    transport depend only on the class, so they are resolved once (and kept on the profile),
    and a call is the backbone plus the curve (cost_model.time_pricer). For planners that price
    many sizes and need no interval or notes. ProfileError as predict raises it."""
    fns = prof.__dict__.setdefault("_time_fns", {})
    key = (collective, group_size, hosts, ranks_per_host, dtype, concurrent_groups)
    fn = fns.get(key)
    if fn is not None:
        return fn
    if collective not in COLLECTIVES:
        raise ProfileError(f"unknown collective {collective!r}; use one of {COLLECTIVES}")
    rph = ranks_per_host
    if rph is None:
        rph = group_size // hosts if hosts >= 1 else 0
    if min(group_size, hosts, rph, concurrent_groups) < 1:
        raise ProfileError("link class: group size, hosts, ranks per host and concurrent groups must all be >= 1")
    m, _ = choose_model(prof, collective, group_size, hosts, concurrent_groups, dtype)
    tr = _ht.host_transport(prof, m, hosts, rph, concurrent_groups, group_size)
    price = (_ht.transported_time_pricer(m, tr, concurrent_groups) if tr is not None
             else _cm.time_pricer(m, group_size, concurrent_groups, hosts=hosts))
    inf = math.inf

    def time_us(nbytes: float) -> float:
        if not (nbytes >= 0.0) or nbytes == inf:  # effective_bytes's check
            raise ProfileError(f"bytes must be finite and >= 0, got {nbytes}")
        return price(float(nbytes))
    time_us.spec = getattr(price, "spec", None)  # cost_model.time_pricer's price as data (or None)
    fns[key] = time_us
    return time_us


def mesh_topo(prof, mesh_shape: Sequence[int], ranks_per_host: int, collective: str = "all_gather",
              nbytes: Optional[float] = None, dtype: Optional[str] = None) -> dict:
    """Per-mesh-dim numbers in the shape of PyTorch DTensor's MeshTopoInfo.

    Ranks are numbered row-major over the mesh and host = rank // ranks_per_host (DTensor's
    assumption). Each dim's link class (hosts its groups span, their ranks per host, groups at
    once on one host) is `shardbench plan`'s: shardcal.formats.mesh_dim_link_class, whose
    concurrency comes from formats.json's link-class rule. For each dim the
    model for `collective` is chosen like predict() does, at `nbytes` (default: the last,
    large-message segment). Returns mesh_dim_devices, mesh_dim_bandwidth (GB/s, 1e9 B/s; with
    contention B / (1 + gamma (c - 1)) for the dim's c concurrent groups),
    mesh_dim_latency (alpha_step, us per hop), mesh_dim_base_latency (alpha, us),
    mesh_dim_bandwidth_dtensor (GiB/s: what DTensor's formulas divide its GiB counts by) and
    the link class and extrapolation note used per dim.
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
        m, _ = choose_model(prof, collective, n, hosts, concurrent, dtype)
        if nbytes is None:
            probe = m.segments[-1].s_lo
        else:
            probe = float(nbytes)
        p = predict(prof, collective, n, hosts, group_rph, nbytes=probe, dtype=dtype,
                         concurrent_groups=concurrent, _check_class=False)
        s = p.model.segments[p.segment]
        # The bandwidth this dim's groups get: B shared between its concurrent groups.
        bw = s.bandwidth_GBps if s.contention is None else s.bandwidth_GBps / (
            1.0 + s.contention * float(concurrent - 1))
        out["mesh_dim_devices"].append(n)
        out["mesh_dim_bandwidth"].append(bw)
        out["mesh_dim_latency"].append(s.alpha_step_us)
        out["mesh_dim_base_latency"].append(s.alpha_us)
        out["mesh_dim_bandwidth_dtensor"].append(bw * 1e9 / 1024 ** 3)
        out["link_class"].append({"group_size": n, "hosts": hosts, "ranks_per_host": group_rph,
                                  "concurrent_groups": concurrent})
        out["extrapolated"].append(p.extrapolated)
        out["note"].append(p.note)
    return out

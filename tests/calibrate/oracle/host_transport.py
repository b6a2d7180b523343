"""Host-count transport, in one place -- the Python mirror of calibrate/src/host_transport.cpp.

A group spanning a host count the profile did not measure is priced from the nearest measured
inter-host count along the collective's algorithm (latency and bandwidth laws); a second measured
count tests those laws first and chooses them (host_transport()); the transported price and its
interval (price_transported()) are built on cost_model.price(). Same operations in the same order
as the C++ (tests/calibrate/parity_test.py). docs/CALIBRATION.md "Other host counts". The walk is
one way: predict -> host_transport -> cost_model.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Optional

from shardcal.collectives import busbw_factor, ring_steps
from .cost_model import (INTERVAL_Z, Priced, curve_for, link_floor_time_us, price, price_time_us,
                         segment_of, segment_time_us, time_pricer)

HOST_TRANSPORT_LOG_SIGMA = 0.15  # per doubling of hosts (host_transport.hpp kHostTransportLogSigma)
HOST_TRANSPORT_TESTED_LOG_SIGMA = 0.10  # ... after a second count tested the structure
SELECTOR_SWITCH_LOG_SIGMA = 0.20  # host_transport.hpp kSelectorSwitchLogSigma


LATENCY_LAWS = ("ring-steps", "tree-depth", "log2-ranks", "flat")  # host_transport.hpp LatencyLaw, in order


@dataclass
class HostTransport:
    """host_transport.hpp HostTransport: a price transported from the nearest measured
    host count along the collective's algorithm; `other` the count that tested the structure."""
    other: object  # the second host count's Model, or None (untested)
    n_model: int
    n_other: int
    n_query: int
    doublings: float
    test_doublings: float = 0.0
    law: str = "ring-steps"
    law_tested: bool = False
    law_discriminated: bool = False
    test_switch: bool = False
    latency_us: float = 0.0
    latency_ratio: float = 1.0
    bus_ratio: float = 1.0
    switch_lo_log_sigma: float = 0.0
    switch_hi_log_sigma: float = 0.0
    two_node_switch: bool = False
    algorithm_unknown: bool = False
    bw_law: str = "bus-factor"
    step_log_sigma: float = 0.0
    miss_bytes: list = field(default_factory=list)
    miss_log: list = field(default_factory=list)
    selector: bool = False
    mpi: bool = False
    op: str = "all_reduce"
    hosts_model: int = 0
    hosts_query: int = 0
    # The network's ring routes at both counts (host_transport.hpp HostTransport::routes ...):
    # applied where the priced algorithm is a neighbour ring over the hosts (route_ring).
    routes: bool = False
    route_step_us: float = 0.0  # latency(h) - latency(h_b), per ring step (may be < 0)
    forced_ring: bool = False  # forced_ring(): the test keeps the ring's laws, its miss widens
    ompi_ring_reduce_scatter: bool = False  # Open MPI's ring reduce_scatter (its eager steps overlap)
    route_chain: bool = False  # an overlapped ring's eager chain (both rings list their hops)
    route_chain_model: object = None  # _chain_envelope of the measured count's ring, the query's
    route_chain_query: object = None
    route_chain_carry: float = 1.0  # the query's ring steps over the measured one's
    route_lat_ratio: float = 1.0  # latency(h) / latency(h_b)
    route_bw_ratio: float = 1.0  # share(h_b) / share(h)
    route_skew_us: float = 0.0  # the contended ring's skew on its most shared link
    route_skew_source: str = "table"
    route_steps: int = 0  # the collective's ring steps on n_query ranks
    route_latency_model_us: float = 0.0
    route_latency_query_us: float = 0.0
    route_share_model_GBps: float = 0.0
    route_share_query_GBps: float = 0.0
    route_source: str = ""
    route_skipped: str = ""  # the profile has routes but they were not used: why
    # (The oracle's own, for parity_test.py's counts; no C++ field: how many of the second count's
    # test prices, over the laws tried, the ring routes carried.)
    test_routes: int = 0


# Open MPI's coll/tuned fixed decision rules as SMPI's `ompi` selector runs them (host_transport.cpp
# cites the sources: SimGrid src/smpi/colls/smpi_openmpi_selector.cpp, "Updated 02/2022"; Open MPI
# ompi/mca/coll/tuned/coll_tuned_decision_fixed.c). Rows (ranks_below, bytes_below, algorithm):
# the first row with n < ranks_below and the rule's size < bytes_below.
_INF = math.inf
_ALL = 2 ** 31 - 1
_RD, _NE, _PR, _BR = "recursive doubling", "neighbour exchange", "pairwise ring", "Bruck"
_RING, _RAB, _RB, _RH, _BF = "ring", "Rabenseifner", "reduce + broadcast", "recursive halving", "butterfly"
_OMPI_ALL_GATHER = (
    (3, _INF, "two-proc"), (32, _INF, _RD),
    (64, 1024, _RD), (64, 65536, _NE), (64, _INF, _PR),
    (128, 512, _RD), (128, 65536, _NE), (128, _INF, _PR),
    (256, 512, _RD), (256, 131072, _NE), (256, 524288, _PR), (256, 1048576, _NE), (256, _INF, _PR),
    (512, 32, _RD), (512, 128, _BR), (512, 1024, _RD), (512, 131072, _NE), (512, 524288, _PR),
    (512, 1048576, _NE), (512, _INF, _PR),
    (1024, 64, _RD), (1024, 256, _BR), (1024, 2048, _RD), (1024, _INF, _NE),
    (2048, 4, _RD), (2048, 8, _BR), (2048, 16, _RD), (2048, 32, _BR), (2048, 256, _RD), (2048, 512, _BR),
    (2048, 4096, _RD), (2048, _INF, _NE),
    (4096, 32, _BR), (4096, 128, _RD), (4096, 512, _BR), (4096, 4096, _RD), (4096, _INF, _NE),
    (_ALL, 2, _RD), (_ALL, 8, _BR), (_ALL, 16, _RD), (_ALL, 512, _BR), (_ALL, 4096, _RD), (_ALL, _INF, _NE),
)
_OMPI_ALL_REDUCE = (
    (4, 8, _RING), (4, 4096, _RD), (4, 8192, _RING), (4, 16384, _RD), (4, 65536, _RING), (4, 262144, _RING),
    (4, _INF, _RAB),
    (8, 16, _RING), (8, 8192, _RD), (8, _INF, _RAB),
    (16, 8192, _RD), (16, _INF, _RAB),
    (32, 64, _RING), (32, 4096, _RD), (32, _INF, _RAB),
    (64, 128, _RING), (64, _INF, _RAB),
    (128, 262144, _RD), (128, _INF, _RAB),
    (256, 131072, _RB), (256, 262144, _RD), (256, _INF, _RAB),
    (512, 4096, _RB), (512, _INF, _RAB),
    (2048, 2048, _RB), (2048, 16384, _RD), (2048, _INF, _RAB),
    (4096, 2048, _RB), (4096, 4096, _RING), (4096, 16384, _RD), (4096, _INF, _RAB),
    (_ALL, 2048, _RB), (_ALL, 16384, _RING), (_ALL, 32768, _RD), (_ALL, _INF, _RAB),
)
_OMPI_REDUCE_SCATTER = (
    (4, 65536, _RING), (4, 131072, _BF), (4, _INF, _RING),
    (8, 8, _RB), (8, 262144, _RH), (8, _INF, _RING),
    (32, 262144, _RH), (32, _INF, _RING),
    (64, 64, _RB), (64, 2048, _RH), (64, 524288, _BF), (64, _INF, _RING),
    (128, 256, _RB), (128, 512, _RH), (128, 2048, _BF), (128, 4096, _RH), (128, _INF, _BF),
    (256, 256, _RB), (256, 512, _RH), (256, _INF, _BF),
    (512, 256, _RB), (512, 1024, _RH), (512, _INF, _BF),
    (1024, 512, _RB), (1024, 2048, _RH), (1024, 8192, _BF), (1024, 16384, _RH), (1024, _INF, _BF),
    (2048, 512, _RB), (2048, 4096, _RH), (2048, 16384, _BF), (2048, 32768, _RH), (2048, _INF, _BF),
    (4096, 512, _RB), (4096, 4096, _RH), (4096, _INF, _BF),
    (_ALL, 1024, _RB), (_ALL, 8192, _RH), (_ALL, _INF, _BF),
)


def _latency_floor_us(m, n: int, c: int) -> float:
    """host_transport.cpp latency_floor_us: the price at 1 B without NCCL's downward lean."""
    if not m.channel_ramp:
        return price_time_us(m, n, c, 1.0)
    return price_time_us(dataclasses.replace(m, channel_ramp=False), n, c, 1.0)

def _select_row(rows, n: int, nbytes: float) -> str:
    for ranks_below, bytes_below, alg in rows:
        if n < ranks_below and nbytes < bytes_below:
            return alg
    return rows[-1][2]


def ompi_tuned_algorithm(collective: str, n: int, nbytes: float):
    """host_transport.cpp ompi_tuned_algorithm."""
    if collective == "all_gather":
        return _select_row(_OMPI_ALL_GATHER, n, nbytes / float(n))
    if collective == "all_reduce":
        return _select_row(_OMPI_ALL_REDUCE, n, nbytes)
    if collective == "reduce_scatter":
        return _select_row(_OMPI_REDUCE_SCATTER, n, nbytes)
    return None


def _ceil_log2(x: int) -> float:
    k = 0
    while x > 1 and (1 << k) < x:
        k += 1
    return float(k)


def algorithm_shape(alg: str, collective: str, n: int, h: int):
    """host_transport.cpp algorithm_shape: (latency steps, NIC bytes per byte of S)."""
    dn = float(n)
    r = dn / float(max(h, 1))
    hs = float(h - 1) / float(h) if h > 1 else 0.0
    lg, lh = _ceil_log2(n), _ceil_log2(h)
    ar = collective == "all_reduce"
    if alg == _RING:
        return (2.0 * (dn - 1.0) if ar else dn - 1.0), (2.0 if ar else 1.0) * (dn - 1.0) / dn
    if alg == _NE:
        return dn / 2.0, (dn - 1.0) / dn
    if alg == _RD:
        return lg, (r * lh if ar else r * hs)
    if alg == _BR:
        return lg, r * hs
    if alg == _PR:
        return dn - 1.0, r * hs
    if alg == "two-proc":
        return 1.0, r * hs
    if alg == _RAB:
        return 2.0 * lg, 2.0 * hs
    if alg == _RH:
        return lg, r * hs
    if alg == _BF:
        return lg, hs
    if alg == _RB:
        return 2.0 * lg, 2.0 * lh
    return dn - 1.0, (dn - 1.0) / dn


def selector_known(prof, collective: str) -> bool:
    """host_transport.cpp selector_known."""
    sel = getattr(prof, "mpi_selector", None)
    if prof.backend != "mpi" or sel is None or sel.get("selector") != "ompi":
        return False
    if collective in sel.get("forced", {}):
        return False
    return ompi_tuned_algorithm(collective, 2, 1.0) is not None


_FORCED_RINGS = {("all_gather", "NTSLR"), ("all_gather", "NTSLR_NB"), ("all_reduce", "lr"),
                 ("all_reduce", "ompi_ring_segmented"), ("reduce_scatter", "ompi_ring")}


def forced_ring(prof, collective: str) -> bool:
    """host_transport.cpp forced_ring: an MPI collective forced to one of SMPI's neighbour rings."""
    sel = getattr(prof, "mpi_selector", None)
    if prof.backend != "mpi" or sel is None:
        return False
    alg = sel.get("forced", {}).get(collective)
    return alg is not None and (collective, alg) in _FORCED_RINGS


def selector_structure(collective: str, n_b: int, h_b: int, n: int, h: int, nbytes: float):
    """host_transport.cpp selector_structure: (latency ratio, bus ratio, switched, from, to)."""
    ab, aq = ompi_tuned_algorithm(collective, n_b, nbytes), ompi_tuned_algorithm(collective, n, nbytes)
    if ab is None or aq is None:
        return 1.0, 1.0, False, None, None
    sb, sq = algorithm_shape(ab, collective, n_b, h_b), algorithm_shape(aq, collective, n, h)
    r = sq[0] / sb[0] if sb[0] > 0 else 1.0
    f = sq[1] / sb[1] if sb[1] > 0 else 1.0
    return r, f, ab != aq, ab, aq


def _transport_at(t: HostTransport, s_eff: float):
    """host_transport.cpp transport_at: (R, F, switch log sigma) at s_eff."""
    if not t.selector:
        return t.latency_ratio, t.bus_ratio, 0.0
    r, f, switched, _, _ = selector_structure(t.op, t.n_model, t.hosts_model, t.n_query, t.hosts_query, s_eff)
    return r, f, (SELECTOR_SWITCH_LOG_SIGMA if switched else 0.0)


def latency_growth(law: str, n_b: int, h_b: int, n: int, h: int) -> float:
    """host_transport.cpp latency_growth."""
    if law == "ring-steps":
        return float(n - 1) / float(n_b - 1) if n_b > 1 else 1.0
    if law == "tree-depth":
        return (1.0 + math.log2(float(h))) / (1.0 + math.log2(float(h_b)))
    if law == "log2-ranks":
        return math.log2(float(n)) / math.log2(float(n_b)) if n_b > 1 and n > 1 else 1.0
    return 1.0


def default_latency_law(collective: str, backend: str) -> str:
    """host_transport.cpp default_latency_law."""
    return "tree-depth" if backend == "nccl" and collective == "all_reduce" else "ring-steps"


BANDWIDTH_LAWS = ("bus-factor", "host-share")  # host_transport.hpp BandwidthLaw, in order


def default_bandwidth_law(collective: str) -> str:
    return "host-share" if collective == "all_to_all" else "bus-factor"


def transport_factor(latency_us: float, latency_ratio: float, bus_ratio: float, tb: float) -> float:
    share = min(1.0, latency_us / tb) if tb > 0 else 1.0
    return share * latency_ratio + (1.0 - share) * bus_ratio


def _transport_parts(latency_us: float, latency_ratio: float, bus_ratio: float, tb: float):
    """host_transport.cpp transport_parts: (latency part, bandwidth part) of tb carried by the
    factor, the latency part share min(1, L / tb) of tb."""
    share = min(1.0, latency_us / tb) if tb > 0 else 1.0
    return tb * share * latency_ratio, tb * (1.0 - share) * bus_ratio


def _routed_time(parts, g: float, extra: float, lat_ratio: float, steps: float, skew: float) -> float:
    """host_transport.cpp routed_time: the latency part gains `extra` (lock step: steps x delta;
    the eager chain's growth), the bandwidth part bw the share ratio g as far as the flows overlap,
    bw + (g - 1) max(0, bw - steps x skew); a shorter route (extra < 0) lowers the latency part at
    most to its lat_ratio share."""
    lat = parts[0] + extra
    if extra < 0:
        lat = max(lat, parts[0] * lat_ratio)
    return lat + parts[1] + (g - 1.0) * max(0.0, parts[1] - max(steps, 0.0) * skew)


@dataclass
class RouteStep:
    """host_transport.cpp RouteStep: the routes between two host counts; chain: the eager
    dependency chain's extra and ratio where both rings list their hops."""
    delta: float
    lat_ratio: float
    g: float
    chain: bool = False
    chain_from: object = None  # _chain_envelope of the two rings
    chain_to: object = None
    chain_carry: float = 1.0
    skew: float = 0.0  # the contended ring's skew on its most shared link (routed_time)
    skew_source: str = "table"  # "table", "hop spread" or "longest route"


def _route_latency_overlapped(t: HostTransport) -> bool:
    """host_transport.cpp route_latency_overlapped: Open MPI's double-buffered ring reduce_scatter."""
    return t.ompi_ring_reduce_scatter


def ompi_ring_reduce_scatter(prof, collective: str) -> bool:
    """host_transport.cpp ompi_ring_reduce_scatter: an MPI reduce_scatter not forced to another
    algorithm."""
    if prof.backend != "mpi" or collective != "reduce_scatter":
        return False
    sel = getattr(prof, "mpi_selector", None)
    if sel is None:
        return True
    alg = sel.get("forced", {}).get(collective)
    return alg is None or alg == "ompi_ring"


def _per_step_size_at(model, n_m: int, s_eff: float, n: int) -> float:
    """host_transport.cpp per_step_size_at: the size at the measured model whose per-step messages
    are the query's, at the group size of the curve that prices n_m."""
    cv, _ = curve_for(model, n_m, 1)
    return s_eff * float(cv.group_size if cv is not None else n_m) / float(n)


def _ring_family(op: str) -> bool:
    """host_transport.cpp ring_family: the collectives that run as neighbour rings over the hosts."""
    return op in ("all_gather", "reduce_scatter", "all_reduce")


def _route_latency_for(overlapped: bool, chain: bool, model, s_m: float) -> str:
    """host_transport.cpp route_latency_for: "lock-step", or for an overlapped ring below the
    measured model's first protocol switch at s_m (eager steps) "chain" where both rings list their
    hops, else "middle"."""
    if not overlapped:
        return "lock-step"
    if len(model.segments) < 2:  # no switch measured: which side is unknown
        return "middle"
    if segment_of(model, s_m) > 0:
        return "lock-step"
    return "chain" if chain else "middle"


def route_latency(model, t: HostTransport, s_eff: float) -> str:
    """host_transport.cpp route_latency."""
    return _route_latency_for(_route_latency_overlapped(t), t.route_chain and carried_at_equal_messages(t, s_eff), model,
                              _per_step_size_at(model, t.n_model, s_eff, t.n_query))


def _mode_routed_time(parts, r: RouteStep, steps: float, mode: str, chain=(0.0, 0.0, 1.0)) -> float:
    """host_transport.cpp mode_routed_time: lock step, the eager chain (its (extra, extra at 0 B,
    lat_ratio) at this size: `chain`; the share ratio is in the chain, not on the bandwidth part), or the
    geometric middle of the prices without and with the lock step's extra."""
    t1 = _routed_time(parts, r.g, steps * r.delta, r.lat_ratio, steps, r.skew)
    if mode == "chain":  # (the extra at 0 B on the latency part, the rest on the bandwidth part)
        return _routed_time((parts[0], max(0.0, parts[1] + (chain[0] - chain[1]))), 1.0, chain[1], chain[2],
                            steps, r.skew)
    if mode == "middle":
        t0 = _routed_time(parts, r.g, 0.0, r.lat_ratio, steps, r.skew)
        return math.sqrt(t0) * math.sqrt(t1) if t0 > 0 and t1 > 0 else t1
    return t1


CHAIN_MAX_RANKS = 1024  # host_transport.cpp kChainMaxRanks


def _upper_envelope(v):
    """host_transport.cpp upper_envelope: the upper envelope of lines (a, b) on m >= 0, slopes
    ascending."""
    v = sorted(v, key=lambda l: (l[1], -l[0]))
    h = []
    for ln in v:
        if h and h[-1][1] == ln[1]:
            continue
        while h and h[-1][0] <= ln[0]:
            h.pop()
        while len(h) >= 2:
            p, q = h[-2], h[-1]
            if (p[0] - ln[0]) * (q[1] - p[1]) <= (p[0] - q[0]) * (ln[1] - p[1]):
                h.pop()
            else:
                break
        h.append(ln)
    return h


def _envelope_at(e, m: float) -> float:
    """host_transport.cpp envelope_at."""
    if not e:
        return 0.0
    v = -math.inf
    for a, b in e:
        v = max(v, a + b * m)
    return v


def _envelope_breaks(e):
    """host_transport.cpp envelope_breaks."""
    return [(e[i][0] - e[i + 1][0]) / (e[i + 1][1] - e[i][1]) for i in range(len(e) - 1)]


def _chain_envelope(rr, hosts: int, c: int):
    """host_transport.cpp chain_envelope: the eager chain A(r, k) = max(max(A(r-1, k-1), A(r, k-2)) +
    L + m w, A(r, k-1) + m w) as the upper envelope of its paths' lines (a, b), the ring's
    transfers between hosts at its share; None without the ring's hops (or, c > 1, the loopback
    latency) or past CHAIN_MAX_RANKS ranks."""
    ring = next((x for x in rr["rings"] if x[0] == hosts), None)
    if ring is None or len(ring[3]) != hosts or c < 1:
        return None
    if c > 1 and rr.get("loopback") is None:
        return None
    if c > CHAIN_MAX_RANKS // hosts:
        return None
    n = hosts * c
    inter_w = 1.0 / (ring[2] * 1e3)
    loop_gbps = rr.get("loopback_GBps")
    loop_w = 1.0 / (loop_gbps * 1e3) if loop_gbps is not None else 0.0
    key = (tuple(ring[3]), inter_w, rr["loopback"] if rr.get("loopback") is not None else 0.0, loop_w, c)
    if key in _CHAIN_CACHE:  # (as host_transport.cpp keeps them: by their inputs)
        return _CHAIN_CACHE[key]
    into = []
    for r in range(n):
        frm = (r + n - 1) % n
        into.append((ring[3][frm // c], inter_w) if frm // c != r // c else (rr["loopback"], loop_w))
    zero = [(0.0, 0.0)]
    k2, k1 = [zero] * n, [zero] * n
    for _ in range(1, n):
        k0 = []
        for r in range(n):
            ha, hb = into[r]
            v = [(a + ha, b + hb) for a, b in k1[(r + n - 1) % n]]
            v += [(a + ha, b + hb) for a, b in k2[r]]
            v += [(a, b + hb) for a, b in k1[r]]
            k0.append(_upper_envelope(v))
        k2, k1 = k1, k0
    _CHAIN_CACHE[key] = _upper_envelope([ln for e in k1 for ln in e])
    return _CHAIN_CACHE[key]


_CHAIN_CACHE = {}


def _chain_extra(frm, to, carry: float, m: float):
    """host_transport.cpp chain_extra: (the query's chain minus the measured one's carried by the
    steps' ratio at a per-step message of m bytes, the same at 0 B, the two chains' ratio at 0 B)."""
    carried0 = _envelope_at(frm, 0.0) * carry
    return (_envelope_at(to, m) - _envelope_at(frm, m) * carry, _envelope_at(to, 0.0) - carried0,
            _envelope_at(to, 0.0) / carried0 if carried0 > 0 else 1.0)


def _add_chain(r: RouteStep, prof, op: str, h_from: int, h_to: int, c: int) -> None:
    """host_transport.cpp add_chain."""
    a = _chain_envelope(prof.ring_routes, h_from, c)
    b = _chain_envelope(prof.ring_routes, h_to, c)
    if a is None or b is None:
        return
    r.chain = True
    r.chain_from, r.chain_to = a, b
    r.chain_carry = float(ring_steps(op, h_to * c)) / float(ring_steps(op, h_from * c))


def chain_extra_at(t: HostTransport, s_eff: float):
    """host_transport.cpp chain_extra_at: the eager chain's (extra, extra at 0 B, lat_ratio) at s_eff."""
    if not t.route_chain or t.n_query < 1:
        return 0.0, 0.0, 1.0
    return _chain_extra(t.route_chain_model, t.route_chain_query, t.route_chain_carry, s_eff / float(t.n_query))


def transported_chain_extra(t: HostTransport, s_eff: float):
    """host_transport.cpp transported_chain_extra."""
    return chain_extra_at(t, s_eff)


def _route_step(prof, h_from: int, h_to: int):
    """host_transport.cpp route_step: (delta, lat_ratio, g) from h_from's ring to h_to's, or None
    when the profile's ring routes lack one of them (or it has none)."""
    rr = getattr(prof, "ring_routes", None)
    if rr is None:
        return None
    a = next((r for r in rr["rings"] if r[0] == h_from), None)
    b = next((r for r in rr["rings"] if r[0] == h_to), None)
    if a is None or b is None:
        return None
    g = a[2] / b[2]
    c = b if g >= 1.0 else a  # the contended ring's skew (the query's where g > 1)
    hops = c[3] if len(c) > 3 else ()
    # The table's skew on the most shared link, else the hops' spread, else the longest route.
    if len(c) > 4 and c[4] is not None:
        skew, source = c[4], "table"
    elif hops and len(hops) == c[0]:
        skew, source = max(hops) - min(hops), "hop spread"
    else:
        skew, source = c[1], "longest route"
    return RouteStep(b[1] - a[1], (b[1] / a[1] if a[1] > 0 else 1.0), g, skew=skew, skew_source=source)


def _ring_at_both(collective: str, n_b: int, n: int, nbytes: float) -> bool:
    """host_transport.cpp ring_at_both: the ompi selector runs a neighbour ring at both counts."""
    return (ompi_tuned_algorithm(collective, n_b, nbytes) == _RING
            and ompi_tuned_algorithm(collective, n, nbytes) == _RING)


def _miss_at(t: HostTransport, s_eff: float) -> float:
    """host_transport.cpp miss_at."""
    x = t.miss_bytes
    if not x or len(t.miss_log) != len(x) or math.isnan(s_eff):
        return 0.0
    s = max(s_eff, 1.0)
    if s <= x[0]:
        return t.miss_log[0]
    if s >= x[-1]:
        return t.miss_log[-1]
    i = bisect.bisect_right(x, s) - 1
    w = math.log(s / x[i]) / math.log(x[i + 1] / x[i])
    return (1 - w) * t.miss_log[i] + w * t.miss_log[i + 1]


def _widened_bound(f: float, t: float, bound: float, sign: float, extra: float) -> float:
    """host_transport.cpp widened_bound."""
    if not (bound > 0) or not (t > 0):
        return bound * f
    lb = math.log(bound / t)
    return f * t * math.exp(min(max(sign * math.hypot(lb, INTERVAL_Z * extra), -700.0), 700.0))


def _equal_message(t: HostTransport, law: str, bw: str, sw: bool, nb: int, n: int, s: float) -> bool:
    """host_transport.cpp equal_message: an MPI ring carried at equal per-step messages."""
    if not t.mpi or n <= 1 or nb <= 1:
        return False
    if t.op not in ("all_gather", "reduce_scatter", "all_reduce"):
        return False
    if t.selector:
        a = ompi_tuned_algorithm(t.op, nb, s * float(nb) / float(n))
        b = ompi_tuned_algorithm(t.op, n, s)
        return a == "ring" and b == "ring"
    return law == "ring-steps" and bw == "bus-factor" and not sw


# How many prices a shorter route lowered to the floor of routed_time (latency part x
# latency(h) / latency(h_b)): counted for tests/calibrate/parity_test.py, no C++ counterpart.
ROUTE_CLAMPS = [0]


def _transported_factor(t: HostTransport, eq: bool, at_r: float, at_f: float, tb: float) -> float:
    """host_transport.cpp transported_factor: a ring's steps at equal per-step messages, else the
    structure's share R + (1 - share) F."""
    return float(t.n_query - 1) / float(t.n_model - 1) if eq else transport_factor(t.latency_us, at_r, at_f, tb)


def _protocol_latency_us(model, n_m: int, concurrent_groups: int, nbytes: float, tb: float,
                         fallback: float) -> float:
    """host_transport.cpp protocol_latency_us: tb less the bandwidth term (its time less its time
    at 0 B) of the protocol segment the measured size's per-step message falls in (looked up at
    the group size of the curve that prices n_m), that term held at its largest below nbytes and
    within [0, tb]; fallback (t(1 B)) where it is not finite."""
    def bw_of(k, s):
        return (segment_time_us(model, k, n_m, s, concurrent_groups)
                - segment_time_us(model, k, n_m, 0.0, concurrent_groups))
    cv, _ = curve_for(model, n_m, 1)
    to_seg = float(cv.group_size if cv is not None else n_m) / float(n_m)
    seg = segment_of(model, nbytes * to_seg)
    bw = bw_of(seg, nbytes)
    for k in range(seg):
        edge = model.segments[k].s_hi
        if edge is not None:
            bw = max(bw, bw_of(k, math.nextafter(edge / to_seg, 0.0)))
    if not math.isfinite(bw) or not tb > 0:
        return fallback
    return tb - min(max(bw, 0.0), tb)


def _split_latency_us(model, t: HostTransport, eq: bool, concurrent_groups: int, measured: float,
                      tb: float) -> float:
    """host_transport.cpp split_latency_us: at the protocol segment's bandwidth term where the routes split a ring
    carried at equal per-step messages, else t(1 B)."""
    if not eq or not t.routes or not t.route_bw_ratio > 1.0:
        return t.latency_us
    return _protocol_latency_us(model, t.n_model, concurrent_groups, measured, tb, t.latency_us)


def _transported_time(t: HostTransport, eq: bool, at_r: float, at_f: float, tb: float, ring: bool,
                      which: str, mode: str, lat_us: float, s_eff: float, skew: float = -1.0) -> float:
    """host_transport.cpp transported_time: tb x the factor, or where the ring routes apply its
    latency and bandwidth parts with the routes' share ratio and extra latency; which: "price" (by
    mode, route_latency), "without" or "with" the lock step's extra."""
    if not t.routes or not ring:
        return tb * _transported_factor(t, eq, at_r, at_f, tb)
    steps = float(t.n_query - 1) / float(t.n_model - 1)
    q = (_transport_parts(lat_us, steps, steps, tb) if eq
         else _transport_parts(t.latency_us, at_r, at_f, tb))
    r = RouteStep(t.route_step_us, t.route_lat_ratio, t.route_bw_ratio,
                  skew=skew if skew >= 0 else t.route_skew_us)
    n_steps = float(t.route_steps)
    if which == "without":
        return _routed_time(q, r.g, 0.0, r.lat_ratio, n_steps, r.skew)
    m = "lock-step" if which == "with" else mode
    chain = chain_extra_at(t, s_eff) if m == "chain" else (0.0, 0.0, 1.0)
    extra = n_steps * r.delta if m == "lock-step" else chain[1] if m == "chain" else 0.0
    if extra < 0 and q[0] + extra < q[0] * (chain[2] if m == "chain" else r.lat_ratio):
        ROUTE_CLAMPS[0] += 1  # (the oracle's own count, for parity_test.py)
    return _mode_routed_time(q, r, n_steps, m, chain)


def carried_at_equal_messages(t: HostTransport, s_eff: float) -> bool:
    """host_transport.cpp carried_at_equal_messages (t is never inactive here: None is)."""
    return _equal_message(t, t.law, t.bw_law, t.two_node_switch, t.n_model, t.n_query, s_eff)


def route_ring(t: HostTransport, s_eff: float) -> bool:
    """host_transport.cpp route_ring: t's price at s_eff is a neighbour ring over the hosts at both
    counts (a ring carried at equal per-step messages, the ompi selector's ring at both counts,
    or the ring-steps latency law), so that the ring routes apply."""
    if not _ring_family(t.op):
        return False
    if carried_at_equal_messages(t, s_eff):
        return True
    return _ring_at_both(t.op, t.n_model, t.n_query, s_eff) if t.selector else t.law == "ring-steps"


def _eager_edge_size(model, t: HostTransport, s_eff: float) -> float:
    """host_transport.cpp eager_edge_size: past an overlapped ring's protocol switch (lock step)
    the largest query size priced below it, whose price the lock step's is held at or above; 0
    elsewhere."""
    if not t.routes or not _route_latency_overlapped(t) or len(model.segments) < 2 or \
            model.segments[0].s_hi is None:
        return 0.0
    if route_latency(model, t, s_eff) != "lock-step":
        return 0.0
    edge = model.segments[0].s_hi / _per_step_size_at(model, t.n_model, 1.0, t.n_query)
    for _ in range(8):  # (a few steps down where the division rounded up onto the switch)
        if not (edge > 0 and route_latency(model, t, edge) == "lock-step"):
            break
        edge = math.nextafter(edge, 0.0)
    if not (0 < edge < s_eff) or route_latency(model, t, edge) == "lock-step":
        return 0.0
    # only across the ring's own switch: the same ring carried the same way on both sides
    if not route_ring(t, s_eff) or not route_ring(t, edge) or \
            carried_at_equal_messages(t, edge) != carried_at_equal_messages(t, s_eff):
        return 0.0
    return edge


def price_transported(model, t: HostTransport, concurrent_groups: int, s_eff: float,
                      class_log_sigma: float = 0.0) -> Priced:
    """host_transport.cpp price_transported."""
    eq = _equal_message(t, t.law, t.bw_law, t.two_node_switch, t.n_model, t.n_query, s_eff)
    mb = s_eff * t.n_model / t.n_query if eq else s_eff
    b = price(model, t.n_model, concurrent_groups, mb)
    at_r, at_f, at_sw = _transport_at(t, s_eff)
    ring = t.routes and route_ring(t, s_eff)
    mode = route_latency(model, t, s_eff)
    lat = _split_latency_us(model, t, eq, concurrent_groups, mb, b.time_us)
    tq = _chain_held_us(model, t, concurrent_groups, s_eff,
                        _transported_time(t, eq, at_r, at_f, b.time_us, ring, "price", mode, lat, s_eff))
    edge = _eager_edge_size(model, t, s_eff)
    if edge > 0:  # held at or above the eager price at the switch's edge
        tq = max(tq, price_transported_time_us(model, t, concurrent_groups, edge))
    # The factor on b (its interval scales with it).
    f = tq / b.time_us if ring and b.time_us > 0 else _transported_factor(t, eq, at_r, at_f, b.time_us)
    step = t.step_log_sigma * t.doublings
    miss = _miss_at(t, s_eff) * t.doublings / t.test_doublings if t.test_doublings > 0 else 0.0
    common = step * step + miss * miss + class_log_sigma * class_log_sigma + at_sw * at_sw
    # The switch-level term, latency share q; none where the ring routes price the steps' latency
    # (an overlapped ring keeps it).
    q = min(1.0, lat * at_r / tq) if tq > 0 else 1.0  # (the split's)
    level = math.log1p(q) / INTERVAL_Z
    lo = math.hypot(t.switch_lo_log_sigma, level if t.n_query < t.n_model else 0.0)
    hi = math.hypot(t.switch_hi_log_sigma, level if t.n_query > t.n_model else 0.0)
    # Never below the link ceiling's floor at the query's group size (0 without a ceiling).
    floor_us = link_floor_time_us(model, t.n_query, s_eff, t.hosts_query)
    lo_us = _widened_bound(f, b.time_us, b.lo_us, -1.0, math.sqrt(common + lo * lo))
    hi_us = _widened_bound(f, b.time_us, b.hi_us, 1.0, math.sqrt(common + hi * hi))
    if ring and tq > 0 and (t.route_step_us != 0 or (mode == "chain" and transported_chain_extra(t, s_eff)[0] != 0)):
        # The interval reaches the bounds of both prices, with and without the extra route latency
        # (once each side, wherever the price lies).
        r0 = _transported_time(t, eq, at_r, at_f, b.time_us, True, "without", mode, lat, s_eff) / tq
        r1 = _transported_time(t, eq, at_r, at_f, b.time_us, True, "with", mode, lat, s_eff) / tq
        lo_us *= min(1.0, r0, r1)
        hi_us *= max(1.0, r0, r1)
    if ring and tq > 0 and t.route_bw_ratio != 1.0 and t.route_skew_source != "table" and mode != "chain":
        # A skew the table did not give: the interval reaches the price with whole overlap.
        rw = _transported_time(t, eq, at_r, at_f, b.time_us, True, "price", mode, lat, s_eff, 0.0) / tq
        lo_us *= min(1.0, rw)
        hi_us *= max(1.0, rw)
    lift = max(1.0, floor_us / tq) if tq > 0 else 1.0  # the upper side's width kept above the floor
    return Priced(max(tq, floor_us), max(lo_us, floor_us), max(hi_us * lift, floor_us),
                  b.segment, b.curve, b.curve_exact, b.switch_gap, b.beyond_measured, b.beyond_octaves)


def _chain_priced(model, t: HostTransport, s_eff: float) -> bool:
    """host_transport.cpp chain_priced."""
    return t.routes and route_ring(t, s_eff) and route_latency(model, t, s_eff) == "chain"


def _chain_held_us(model, t: HostTransport, concurrent_groups: int, s_eff: float, price_us: float,
                   held_at=None) -> float:
    """host_transport.cpp chain_held_us: an eager-chain price held at its largest at the sizes below
    where it can peak (1 B, the measured ring's chain's envelope breaks, the measured curve's knots
    and switches);
    held_at (a one-element list): where the held price came from (0: s_eff's own)."""
    if held_at is not None:
        held_at[0] = 0.0
    if not _chain_priced(model, t, s_eff):
        return price_us
    n = float(t.n_query)
    at = [1.0]
    at.extend(x * n for x in _envelope_breaks(t.route_chain_model))
    to_measured = float(t.n_model) / n
    to_curve = _per_step_size_at(model, t.n_model, 1.0, t.n_query)
    cv, _ = curve_for(model, t.n_model, concurrent_groups)
    if cv is not None:
        at.extend(k / to_measured for k in cv.bytes)
    for sg in model.segments:
        if sg.s_hi is not None:
            at.append(sg.s_hi / to_measured)
            if to_curve > 0:
                at.append(sg.s_hi / to_curve)
    clamps = ROUTE_CLAMPS[0]  # (the candidates' prices are not the query's: not counted)
    for c in at:
        if 0 < c < s_eff and _chain_priced(model, t, c):
            p = _raw_time_us(model, t, concurrent_groups, c)
            ROUTE_CLAMPS[0] = clamps
            if p > price_us:
                price_us = p
                if held_at is not None:
                    held_at[0] = c
    return price_us


def transported_chain_hold_bytes(model, t: HostTransport, concurrent_groups: int, s_eff: float) -> float:
    """host_transport.cpp transported_chain_hold_bytes."""
    at = [0.0]
    held = _chain_held_us(model, t, concurrent_groups, s_eff, _raw_time_us(model, t, concurrent_groups, s_eff), at)
    return at[0] if at[0] > 0 and held > link_floor_time_us(model, t.n_query, s_eff, t.hosts_query) else 0.0


def _unheld_time_us(model, t: HostTransport, concurrent_groups: int, s_eff: float) -> float:
    """host_transport.cpp unheld_time_us: price_transported_time_us without the hold across the
    switch or the floor."""
    return _chain_held_us(model, t, concurrent_groups, s_eff, _raw_time_us(model, t, concurrent_groups, s_eff))


def _raw_time_us(model, t: HostTransport, concurrent_groups: int, s_eff: float) -> float:
    """host_transport.cpp raw_time_us: the transported price before any hold or floor."""
    eq = _equal_message(t, t.law, t.bw_law, t.two_node_switch, t.n_model, t.n_query, s_eff)
    mb = s_eff * t.n_model / t.n_query if eq else s_eff
    tb = price_time_us(model, t.n_model, concurrent_groups, mb)
    at_r, at_f, _ = _transport_at(t, s_eff)
    return _transported_time(t, eq, at_r, at_f, tb, t.routes and route_ring(t, s_eff), "price",
                             route_latency(model, t, s_eff),
                             _split_latency_us(model, t, eq, concurrent_groups, mb, tb), s_eff)


def price_transported_time_us(model, t: HostTransport, concurrent_groups: int, s_eff: float) -> float:
    """host_transport.cpp price_transported_time_us."""
    tq = _unheld_time_us(model, t, concurrent_groups, s_eff)
    edge = _eager_edge_size(model, t, s_eff)
    if edge > 0:  # held at or above the eager price at the switch's edge
        tq = max(tq, price_transported_time_us(model, t, concurrent_groups, edge))
    return max(tq, link_floor_time_us(model, t.n_query, s_eff, t.hosts_query))


def transported_eager_hold_bytes(model, t: HostTransport, concurrent_groups: int, s_eff: float) -> float:
    """host_transport.cpp transported_eager_hold_bytes: the switch's edge where the hold binds, else 0."""
    edge = _eager_edge_size(model, t, s_eff)
    if not edge > 0:
        return 0.0
    held = price_transported_time_us(model, t, concurrent_groups, edge)
    return edge if held > max(_unheld_time_us(model, t, concurrent_groups, s_eff),
                              link_floor_time_us(model, t.n_query, s_eff, t.hosts_query)) else 0.0


def bandwidth_growth(law: str, collective: str, n_b: int, h_b: int, n: int, h: int) -> float:
    """host_transport.cpp bandwidth_growth."""
    if law == "host-share":
        return (float(h - 1) / h) / (float(h_b - 1) / h_b) if h_b > 1 else 1.0
    fb = busbw_factor(collective, n_b)
    return busbw_factor(collective, n) / fb if n_b > 1 and fb > 0 else 1.0


def known_switch(collective: str, backend: str, h_b: int, h: int):
    """host_transport.cpp known_switch: NCCL's two-node all_reduce tree."""
    if backend == "nccl" and collective == "all_reduce" and (h_b == 2) != (h == 2) and h_b > 1 and h > 1:
        return (1.0, 2.0) if h_b == 2 else (0.5, 1.0)
    return 1.0, 1.0


def transported_time_pricer(model, t: "HostTransport", concurrent_groups: int):
    """price_transported(model, t, concurrent_groups, s_eff).time_us as a function of s_eff alone
    (time_pricer of the measured count, then the structure's factor), bit-identical."""
    fb = time_pricer(model, t.n_model, concurrent_groups)

    def transported(s_eff):
        floor_us = link_floor_time_us(model, t.n_query, s_eff, t.hosts_query)  # the query's floor, after the factor
        eq = _equal_message(t, t.law, t.bw_law, t.two_node_switch, t.n_model, t.n_query, s_eff)
        mb = s_eff * t.n_model / t.n_query if eq else s_eff
        tb = fb(mb)
        at_r, at_f, _ = _transport_at(t, s_eff)
        # (price_transported_time_us: with the ring routes where they apply)
        tq = _chain_held_us(model, t, concurrent_groups, s_eff,
                            _transported_time(t, eq, at_r, at_f, tb, t.routes and route_ring(t, s_eff), "price",
                                              route_latency(model, t, s_eff),
                                              _split_latency_us(model, t, eq, concurrent_groups, mb, tb), s_eff))
        edge = _eager_edge_size(model, t, s_eff)
        if edge > 0:  # held at or above the eager price at the switch's edge
            tq = max(tq, transported(edge))
        return max(tq, floor_us)
    return transported


def host_transport(prof, best, hosts: int, ranks_per_host: int, concurrent_groups: int = 1,
                   group_size: Optional[int] = None):
    """host_transport.cpp host_transport(): the structure from the chosen model's host count to the
    query's, tested by a second measured inter-host model of prof (a Profile: its models and
    backend) when there is one (HostTransport), or None."""
    if hosts <= 1 or best.hosts <= 1 or best.hosts == hosts or "domain" in best.raw:
        return None
    other, other_d = None, 0.0
    for m in prof.models:
        if (m is best or m.collective != best.collective or m.hosts <= 1 or m.hosts == best.hosts
                or "domain" in m.raw or m.dtype != best.dtype or m.concurrent_groups != best.concurrent_groups):
            continue
        d = abs(math.log(float(m.hosts) / best.hosts))
        if other is None or d < other_d or (d == other_d and m.hosts > other.hosts):
            other, other_d = m, d
    c, rph, op = concurrent_groups, ranks_per_host, best.collective
    if group_size is None:
        group_size = hosts * rph
    t = HostTransport(other, best.hosts * rph, 0, group_size, abs(math.log2(float(hosts) / best.hosts)))
    t.law = default_latency_law(op, prof.backend)
    t.bw_law = default_bandwidth_law(op)
    t.step_log_sigma = HOST_TRANSPORT_LOG_SIGMA
    t.op, t.hosts_model, t.hosts_query = op, best.hosts, hosts
    t.selector = selector_known(prof, op)
    t.mpi = prof.backend == "mpi"
    t.forced_ring = forced_ring(prof, op)
    t.ompi_ring_reduce_scatter = ompi_ring_reduce_scatter(prof, op)
    # host_transport.cpp: the ring routes only where the table lists the query's, the measured and
    # the test's count, for one ring at a time; else why not (the note says).
    route_bq = route_ab = None
    rr = getattr(prof, "ring_routes", None)
    if rr is not None:
        listed = {x[0] for x in rr["rings"]}
        if hosts not in listed:
            t.route_skipped = f"hosts={hosts} is not in the table"
        elif best.hosts not in listed:
            t.route_skipped = f"the measured hosts={best.hosts} is not in the table"
        elif other is not None and other.hosts not in listed:
            t.route_skipped = f"the test's hosts={other.hosts} is not in the table"
        elif c > 1:
            t.route_skipped = f"{c} concurrent groups: the table describes one ring"
        if not t.route_skipped:
            route_bq = _route_step(prof, best.hosts, hosts)
            if other is not None:
                route_ab = _route_step(prof, other.hosts, best.hosts)
    if other is not None:
        a = other
        t.n_other = a.hosts * rph
        t.test_doublings = abs(math.log2(float(best.hosts) / a.hosts))
        # host_transport.cpp: at the largest ranks per host both counts measured (else the query's).
        trph = 0
        for g in best.group_sizes:
            if g % best.hosts == 0:
                for ga in a.group_sizes:
                    if ga % a.hosts == 0 and ga // a.hosts == g // best.hosts:
                        trph = max(trph, g // best.hosts)
        if trph == 0:
            trph = rph
        nb, na = best.hosts * trph, a.hosts * trph
        # An overlapped ring's eager steps: the chain from the other count's ring to the chosen one's.
        if route_ab is not None and _route_latency_overlapped(t):
            _add_chain(route_ab, prof, op, a.hosts, best.hosts, trph)
        cb, _ = curve_for(best, nb, c)
        ca, _ = curve_for(a, na, c)
        sizes = []
        if cb is not None and ca is not None and cb.bytes and ca.bytes:
            lo = max(cb.bytes[0], ca.bytes[0])
            hi = min(cb.bytes[-1], ca.bytes[-1])
            for cv in (cb, ca):
                sizes.extend(k for k in cv.bytes if lo <= k <= hi)
        else:
            sizes = [math.ldexp(1.0, i) for i in range(31)]
        sizes = sorted(set(sizes))
        slo, shi = known_switch(op, prof.backend, a.hosts, best.hosts)
        la = _latency_floor_us(a, na, c)
        # The ring routes from the other count to the chosen one (where they apply at all).
        rab = route_ab
        steps_b = float(ring_steps(op, nb))
        t.test_switch = slo != shi
        lat_laws = ((t.law,) + LATENCY_LAWS)[:1 if (t.selector or t.test_switch or t.forced_ring) else 5]
        bw_laws = ((t.bw_law,) + BANDWIDTH_LAWS)[:1 if (t.selector or t.test_switch or t.forced_ring
                                                        or prof.backend == "nccl")
                                                 else 3]
        # The eager chain's extra at each size (its hops move the per-step message k / nb).
        chain_at_size = [(0.0, 0.0, 1.0)] * len(sizes)
        if rab is not None and rab.chain:
            chain_at_size = [_chain_extra(rab.chain_from, rab.chain_to, rab.chain_carry, k / float(nb)) for k in sizes]
        best_score, default_score, first = 0.0, 0.0, True
        for bw in bw_laws:
            f = bandwidth_growth(bw, op, na, a.hosts, nb, best.hosts)
            for law in lat_laws:
                r = latency_growth(law, na, a.hosts, nb, best.hosts)
                miss, score = [], 0.0
                for ik, k in enumerate(sizes):
                    ta = price_time_us(a, na, c, k)
                    tb = price_time_us(best, nb, c, k)
                    if not (ta > 0) or not (tb > 0):
                        miss.append(0.0)
                        continue
                    rk, fk = r, f
                    if t.selector:
                        rk, fk, _, _, _ = selector_structure(op, na, a.hosts, nb, best.hosts, k)
                    q_lo = _transport_parts(la, rk, fk * slo, ta)
                    q_hi = _transport_parts(la, rk, fk * shi, ta)
                    eqm = _equal_message(t, law, bw, slo != shi, na, nb, k)
                    # A neighbour ring at both counts pays the routes' extra latency per step.
                    ring = _ring_family(op) and (eqm or (_ring_at_both(op, na, nb, k) if t.selector
                                                          else law == "ring-steps"))
                    if eqm:
                        ke = k * float(na) / float(nb)
                        te = price_time_us(a, na, c, ke)
                        steps = float(nb - 1) / float(na - 1)
                        lat = _protocol_latency_us(a, na, c, ke, te, la) if rab is not None and ring and rab.g > 1.0 else la
                        q_lo = q_hi = _transport_parts(lat, steps, steps, te)
                    p_lo, p_hi = q_lo[0] + q_lo[1], q_hi[0] + q_hi[1]
                    if rab is not None and ring:
                        # As priced: an overlapped ring's eager steps by their chain (or the middle).
                        mode = _route_latency_for(_route_latency_overlapped(t), rab.chain and eqm, a,
                                                  _per_step_size_at(a, na, k, nb))
                        p_lo = _mode_routed_time(q_lo, rab, steps_b, mode, chain_at_size[ik])
                        p_hi = _mode_routed_time(q_hi, rab, steps_b, mode, chain_at_size[ik])
                        t.test_routes += 1
                    # (A shorter route can carry the test's price to 0 (routed_time's floor at a route
                    # latency of 0): C++'s log(tb / 0) is +inf, Python's division raises.)
                    dm = (math.log(tb / p_lo) if tb < p_lo else
                          ((math.log(tb / p_hi) if p_hi > 0 else math.inf) if tb > p_hi else 0.0))
                    miss.append(dm)
                    score += abs(dm)
                if first:
                    default_score = score
                if first or score < best_score - 1e-9 * max(1.0, best_score):
                    first, best_score, t.law, t.bw_law, t.miss_log = False, score, law, bw, miss
        t.miss_bytes = sizes
        if not sizes:
            t.miss_log = []
        t.law_tested = bool(sizes)
        t.law_discriminated = t.law_tested and best_score < default_score - 1e-9 * max(1.0, default_score)
        if t.law_tested:
            t.step_log_sigma = HOST_TRANSPORT_TESTED_LOG_SIGMA
    t.latency_us = _latency_floor_us(best, t.n_model, c)
    t.latency_ratio = latency_growth(t.law, t.n_model, best.hosts, group_size, hosts)
    f = bandwidth_growth(t.bw_law, op, t.n_model, best.hosts, group_size, hosts)
    klo, khi = known_switch(op, prof.backend, best.hosts, hosts)
    mid = math.sqrt(klo * khi)
    lo, hi = klo, khi
    if not t.selector and not t.law_tested and prof.backend == "mpi" and t.bw_law == "bus-factor":
        other = bandwidth_growth("host-share", op, t.n_model, best.hosts, group_size, hosts) / f
        lo *= min(1.0, other)
        hi *= max(1.0, other)
        t.algorithm_unknown = other != 1.0
    t.two_node_switch = klo != khi
    t.bus_ratio = f * mid
    r = route_bq
    if r is not None:  # (host_transport.cpp: the routes from the chosen count to the query's)
        if _route_latency_overlapped(t):
            _add_chain(r, prof, op, best.hosts, hosts, rph)
        rings = {x[0]: x for x in prof.ring_routes["rings"]}
        t.routes = True
        t.route_chain, t.route_chain_model, t.route_chain_query = r.chain, r.chain_from, r.chain_to
        t.route_chain_carry = r.chain_carry
        t.route_step_us, t.route_lat_ratio, t.route_bw_ratio = r.delta, r.lat_ratio, r.g
        t.route_skew_us = r.skew
        t.route_skew_source = r.skew_source
        t.route_steps = ring_steps(op, group_size)
        t.route_latency_model_us, t.route_latency_query_us = rings[best.hosts][1], rings[hosts][1]
        t.route_share_model_GBps, t.route_share_query_GBps = rings[best.hosts][2], rings[hosts][2]
        t.route_source = prof.ring_routes["source"]
    t.switch_lo_log_sigma = math.log(mid / lo) / INTERVAL_Z
    t.switch_hi_log_sigma = math.log(hi / mid) / INTERVAL_Z
    return t


def transport_note(t, best, hosts: int) -> str:
    """host_transport.cpp transport_note."""
    note = (f"hosts={hosts} transported from the measured hosts={best.hosts} ({t.doublings:.3g} "
            f"{'doubling' if t.doublings == 1.0 else 'doublings'}, ")
    if t.selector:
        note += "the algorithms Open MPI's tuned rules (SMPI ompi selector) run at each count and size"
    else:
        note += f"{t.law} latency, {t.bw_law} bandwidth"
    if t.other is not None and not t.law_tested:
        note += f", untested by hosts={t.other.hosts} (no common measured sizes)"
    elif t.other is not None and t.selector:
        note += f", tested by hosts={t.other.hosts} (its miss widens)"
    elif t.other is not None and t.forced_ring:
        note += f" (the algorithm forced to a neighbour ring), tested by hosts={t.other.hosts} (its miss widens)"
    elif t.other is not None and t.test_switch:
        note += f"; hosts={t.other.hosts} across NCCL's two-node tree: defaults kept, its miss widens"
    elif t.other is not None:
        note += f"{' chosen by' if t.law_discriminated else ' consistent with'} hosts={t.other.hosts}"
    if t.two_node_switch:
        note += "; NCCL's two-node all_reduce tree in between: priced at its middle, widened"
    if t.algorithm_unknown:
        note += "; MPI's algorithm untested: widened toward host-share bandwidth"
    return note + ")"

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
import math
from dataclasses import dataclass, field
from typing import Optional

from .collectives import busbw_factor
from .cost_model import INTERVAL_Z, Priced, curve_for, price, price_time_us, time_pricer

HOST_TRANSPORT_LOG_SIGMA = 0.15  # per doubling of hosts (host_transport.hpp kHostTransportLogSigma)
HOST_TRANSPORT_TESTED_LOG_SIGMA = 0.10  # ... after a second count tested the structure


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


def price_transported(model, t: HostTransport, concurrent_groups: int, s_eff: float,
                      class_log_sigma: float = 0.0) -> Priced:
    b = price(model, t.n_model, concurrent_groups, s_eff)
    f = transport_factor(t.latency_us, t.latency_ratio, t.bus_ratio, b.time_us)
    step = t.step_log_sigma * t.doublings
    miss = _miss_at(t, s_eff) * t.doublings / t.test_doublings if t.test_doublings > 0 else 0.0
    common = step * step + miss * miss + class_log_sigma * class_log_sigma
    tq = b.time_us * f
    q = min(1.0, t.latency_us * t.latency_ratio / tq) if tq > 0 else 1.0
    level = math.log1p(q) / INTERVAL_Z
    lo = math.hypot(t.switch_lo_log_sigma, level if t.n_query < t.n_model else 0.0)
    hi = math.hypot(t.switch_hi_log_sigma, level if t.n_query > t.n_model else 0.0)
    return Priced(tq, _widened_bound(f, b.time_us, b.lo_us, -1.0, math.sqrt(common + lo * lo)),
                  _widened_bound(f, b.time_us, b.hi_us, 1.0, math.sqrt(common + hi * hi)), b.segment, b.curve,
                  b.curve_exact, b.switch_gap, b.beyond_measured, b.beyond_octaves)


def price_transported_time_us(model, t: HostTransport, concurrent_groups: int, s_eff: float) -> float:
    tb = price_time_us(model, t.n_model, concurrent_groups, s_eff)
    return tb * transport_factor(t.latency_us, t.latency_ratio, t.bus_ratio, tb)


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
        tb = fb(s_eff)
        return tb * transport_factor(t.latency_us, t.latency_ratio, t.bus_ratio, tb)
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
        la = price_time_us(a, na, c, 1.0)
        t.test_switch = slo != shi
        lat_laws = ((t.law,) + LATENCY_LAWS)[:1 if t.test_switch else 5]
        bw_laws = ((t.bw_law,) + BANDWIDTH_LAWS)[:1 if (t.test_switch or prof.backend == "nccl") else 3]
        best_score, default_score, first = 0.0, 0.0, True
        for bw in bw_laws:
            f = bandwidth_growth(bw, op, na, a.hosts, nb, best.hosts)
            for law in lat_laws:
                r = latency_growth(law, na, a.hosts, nb, best.hosts)
                miss, score = [], 0.0
                for k in sizes:
                    ta = price_time_us(a, na, c, k)
                    tb = price_time_us(best, nb, c, k)
                    if not (ta > 0) or not (tb > 0):
                        miss.append(0.0)
                        continue
                    p_lo = ta * transport_factor(la, r, f * slo, ta)
                    p_hi = ta * transport_factor(la, r, f * shi, ta)
                    dm = math.log(tb / p_lo) if tb < p_lo else (math.log(tb / p_hi) if tb > p_hi else 0.0)
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
    t.latency_us = price_time_us(best, t.n_model, c, 1.0)
    t.latency_ratio = latency_growth(t.law, t.n_model, best.hosts, group_size, hosts)
    f = bandwidth_growth(t.bw_law, op, t.n_model, best.hosts, group_size, hosts)
    klo, khi = known_switch(op, prof.backend, best.hosts, hosts)
    mid = math.sqrt(klo * khi)
    lo, hi = klo, khi
    if not t.law_tested and prof.backend == "mpi" and t.bw_law == "bus-factor":
        other = bandwidth_growth("host-share", op, t.n_model, best.hosts, group_size, hosts) / f
        lo *= min(1.0, other)
        hi *= max(1.0, other)
        t.algorithm_unknown = other != 1.0
    t.two_node_switch = klo != khi
    t.bus_ratio = f * mid
    t.switch_lo_log_sigma = math.log(mid / lo) / INTERVAL_Z
    t.switch_hi_log_sigma = math.log(hi / mid) / INTERVAL_Z
    return t


def transport_note(t, best, hosts: int) -> str:
    """host_transport.cpp transport_note."""
    note = (f"hosts={hosts} transported from the measured hosts={best.hosts} ({t.doublings:.3g} "
            f"{'doubling' if t.doublings == 1.0 else 'doublings'}, {t.law} latency, {t.bw_law} bandwidth")
    if t.other is not None and not t.law_tested:
        note += f", untested by hosts={t.other.hosts} (no common measured sizes)"
    elif t.other is not None and t.test_switch:
        note += f"; hosts={t.other.hosts} across NCCL's two-node tree: defaults kept, its miss widens"
    elif t.other is not None:
        note += f"{' chosen by' if t.law_discriminated else ' consistent with'} hosts={t.other.hosts}"
    if t.two_node_switch:
        note += "; NCCL's two-node all_reduce tree in between: priced at its middle, widened"
    if t.algorithm_unknown:
        note += "; MPI's algorithm untested: widened toward host-share bandwidth"
    return note + ")"

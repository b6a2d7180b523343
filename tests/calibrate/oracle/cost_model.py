"""The cost model, defined once -- the Python mirror of calibrate/src/cost_model.cpp.

Same operations in the same order as the C++ (tests/calibrate/parity_test.py compares the two on
random queries). A prediction is the backbone (per size segment a sum of linear terms) times,
where the link class was measured, the measured curve: the log ratio of measured time to backbone
interpolated in log(size) between measured sizes, the log-log line between two measured sizes
that straddle a segment boundary; every price carries a 95 % interval. docs/CALIBRATION.md
"The model".
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Optional

from shardcal.collectives import busbw_factor, ring_steps  # the collective table

# Term order = the fitter's design columns (cost_model.hpp `Term`).
TERMS = ("alpha", "alpha_step", "inv_bandwidth", "contention")

INTERVAL_Z = 1.959963984540054
INTERVAL_LEVEL = 0.95
UNMEASURED_MODEL_LOG_SIGMA = 0.35
EXTRAPOLATED_CLASS_LOG_SIGMA = 0.15
OTHER_SIDE_LOG_SIGMA = 1.0
CURVE_SWITCH_LOG = 0.6931471805599453  # ln 2 (cost_model.hpp kCurveSwitchLog)
LN2 = 0.6931471805599453  # cost_model.hpp kLn2
BEYOND_LOG_SIGMA_PER_OCTAVE = 0.12  # cost_model.hpp kBeyondLogSigmaPerOctave
CHANNEL_RAMP_OCTAVES = 5.0  # cost_model.hpp kChannelRampOctaves
CURVE_MAX_NOISE = 5.0
CURVE_MAX_KAPPA = 100.0

# The collective table's link floor terms (core/src/collectives.cpp kTable: link_share, busbw_flat),
# written out here rather than read from the package: the bytes one rank's links must carry in
# one direction per byte of S, by any algorithm (docs/CALIBRATION.md "Link ceilings").
LINK_FLOOR_TERMS = {  # (link_share, busbw_flat)
    "all_gather": (1.0, 0.0),
    "reduce_scatter": (1.0, 0.0),
    "all_reduce": (1.0, 0.0),  # not the busbw factor's 2: in-network reduction moves each byte once
    "all_to_all": (1.0, 0.0),
    "broadcast": (0.0, 1.0),
    "scatter": (1.0, 0.0),
    "gather": (1.0, 0.0),
}


# host_bytes_per_rank (kTable): across hosts a host's links carry its ranks' own bytes (all_to_all),
# not the group's data once.
HOST_BYTES_PER_RANK = {"all_to_all"}
ROOTED = {"broadcast", "scatter", "gather"}  # has_root: no host floor (where the root sits decides)


def host_floor_factor(collective: str, n: int, r: int) -> float:
    """CollectiveInfo::host_floor_factor: bytes through each host link per byte of S, for a
    group of n with r ranks on its least-populated host (0 inside one host)."""
    if collective in ROOTED or n <= 1 or r < 1 or r >= n:
        return 0.0
    share, flat = LINK_FLOOR_TERMS[collective]
    f = share * float(n - r) / float(n) + flat
    return f if collective in HOST_BYTES_PER_RANK else f / float(r)


def link_floor_factor(collective: str, n: int) -> float:
    """CollectiveInfo::link_floor_factor (core/include/shardcal/collectives.hpp); 0 for n <= 1."""
    if n <= 1:
        return 0.0
    share, flat = LINK_FLOOR_TERMS[collective]
    return share * (float(n) - 1.0) / float(n) + flat


def link_floor_time_us(model, n: int, s_eff: float, hosts: int = 0) -> float:
    """cost_model.cpp link_floor_time_us via link_ceiling.hpp link_floor_us: the least time (us)
    the profile's link ceiling allows at s_eff (GB/s = bytes per ns) for a group of n across
    `hosts` hosts (0: the model's), with the host links' floor across hosts; 0 without a ceiling."""
    hosts = hosts if hosts > 0 else model.hosts
    g = model.link_ceiling_GBps
    all_links = s_eff * link_floor_factor(model.collective, n) / g * 1e-3 if g > 0 else 0.0
    gh = model.host_link_GBps
    if hosts <= 1 or gh <= 0:
        return all_links
    return max(all_links, s_eff * host_floor_factor(model.collective, n, n // hosts) / gh * 1e-3)


def _log_link_floor(model, n: int, s_eff: float, hosts: int) -> float:
    """cost_model.cpp log_link_floor: ln of the floor, -inf without one."""
    f = link_floor_time_us(model, n, s_eff, hosts)
    return math.log(f) if f > 0 else -math.inf


@dataclass
class MeasuredCurve:
    group_size: int
    concurrent_groups: int
    bytes: list
    log_ratio: list
    kappa: list
    kappa_scale: float
    noise: float
    shrink: float
    weight: float = 1.0


@dataclass
class Priced:
    time_us: float
    lo_us: float
    hi_us: float
    segment: int
    curve: Optional[MeasuredCurve]
    curve_exact: bool
    switch_gap: bool
    beyond_measured: bool
    beyond_octaves: float = 0.0  # log2(s_eff / nearest measured size) when beyond_measured


def term_feature(term: int, collective: str, n: int, s_eff: float, concurrent_groups: int) -> float:
    if term == 0:
        return 1.0
    if term == 1:
        return float(ring_steps(collective, n))
    if term == 2:
        return s_eff * busbw_factor(collective, n)
    return s_eff * busbw_factor(collective, n) * float(concurrent_groups - 1)


def segment_coefficient(seg, term: int) -> float:
    if term == 0:
        return seg.alpha_us
    if term == 1:
        return seg.alpha_step_us
    if term == 2:
        return 1.0 / (seg.bandwidth_GBps * 1e3)
    return seg.contention / (seg.bandwidth_GBps * 1e3) if seg.contention is not None else 0.0


def segment_of(model, s_eff: float) -> int:
    seg = 0
    while seg + 1 < len(model.segments) and s_eff >= model.segments[seg].s_hi:
        seg += 1
    return seg


def segment_time_us(model, segment: int, n: int, s_eff: float, concurrent_groups: int = 1) -> float:
    if n <= 1:  # a group of one rank moves nothing: the first segment's alpha at every size
        return model.segments[0].alpha_us
    s = model.segments[segment]
    t = 0.0
    for j in range(len(TERMS)):
        t += segment_coefficient(s, j) * term_feature(j, model.collective, n, s_eff, concurrent_groups)
    return t


def backbone_time_us(model, n: int, s_eff: float, concurrent_groups: int = 1) -> float:
    return segment_time_us(model, segment_of(model, s_eff), n, s_eff, concurrent_groups)


def curve_for(model, n: int, concurrent_groups: int):
    best, best_d, best_same_c = None, math.inf, False
    for c in model.curves:
        d = abs(math.log(float(n) / c.group_size)) + abs(math.log(float(concurrent_groups) / c.concurrent_groups))
        same_c = c.concurrent_groups == concurrent_groups
        if d < best_d or (d == best_d and same_c and not best_same_c):
            best, best_d, best_same_c = c, d, same_c
    return best, best is not None and best_d == 0.0


def _lg2(s: float) -> float:
    return math.log2(max(s, 1.0))


def _log_time(t: float) -> float:
    return math.log(max(t, 1e-6))


def _rms(v) -> float:
    ss = 0.0
    for r in v:
        ss += r * r
    return math.sqrt(ss / float(len(v)))


def _hypot(a: float, b: float) -> float:
    return math.hypot(a, b)


def _backbone_sigma(model, seg: int, n: int, s_eff: float, c: int) -> float:
    s = model.segments[seg]
    t = max(segment_time_us(model, seg, n, s_eff, c), 1e-6)
    alpha_term = t if n <= 1 else s.alpha_us + s.alpha_step_us * float(ring_steps(model.collective, n))
    bw_term = 0.0 if n <= 1 else t - alpha_term
    var = 0.0
    if s.alpha_rel_se is not None:
        var += (alpha_term / t * s.alpha_rel_se) ** 2
    if s.bandwidth_rel_se is not None:
        var += (bw_term / t * s.bandwidth_rel_se) ** 2
    q = model.quality
    if q["points"] > 0:
        err = q["holdout_mape"] if q.get("holdout_mape") is not None else q["mape"]
        var += err * err
    else:
        var += UNMEASURED_MODEL_LOG_SIGMA * UNMEASURED_MODEL_LOG_SIGMA
    return math.sqrt(var)


def _curve_part(model, cv: MeasuredCurve, n: int, c: int, s_eff: float, log_bb: float, hosts: int = 0):
    """(log_t, sigma, env_lo, env_hi, switch_gap, beyond, beyond_octaves, bound_lo, bound_hi,
    end_sigma), as curve_part() in C++."""
    k = len(cv.bytes)
    x = _lg2(s_eff)
    # The backbone at the knots depends on the class, not the size: computed once per (n, c) and
    # kept on the curve (a query walks the knots; a planner prices many sizes of one class).
    memo = cv.__dict__.setdefault("_knot_log_bb", {})
    knots = memo.get((n, c))
    if knots is None or len(knots) != k:
        knots = memo[(n, c)] = [_log_time(backbone_time_us(model, n, b, c)) for b in cv.bytes]

    def log_bb_at(i):
        return knots[i]

    def yk(i):
        return log_bb_at(i) + cv.weight * cv.log_ratio[i]

    def ymono(upto):  # non-decreasing knot values, restarted at a backbone drop (as C++)
        run, prev_bb = yk(0), log_bb_at(0)
        for j in range(1, upto + 1):
            bb, y = log_bb_at(j), yk(j)
            run = y if bb < prev_bb else max(run, y)
            prev_bb = bb
        return run

    x0, xk = _lg2(cv.bytes[0]), _lg2(cv.bytes[-1])
    if x < x0 or x > xk:
        # Beyond the measured sizes: the geometric middle of the backbone carried and the end's
        # log-log line carried, inside t(S) <= t(kS) <= k t(S) (as C++ curve_part).
        up = x > xk
        d = x - xk if up else x0 - x
        ye = ymono(k - 1) if up else yk(0)
        yn = ymono(k - 2) if up else ymono(1)
        slope = (ye - yn) / (xk - _lg2(cv.bytes[k - 2])) if up else (yn - ye) / (_lg2(cv.bytes[1]) - x0)
        slope = min(max(slope, 0.0), LN2)
        far = ye + LN2 * d if up else ye - LN2 * d
        carried = min(max(log_bb + cv.weight * cv.log_ratio[k - 1 if up else 0], min(ye, far)), max(ye, far))
        # The line stops at the link ceiling's floor (C++ applies it in both directions).
        line = max(ye + slope * d if up else ye - slope * d, _log_link_floor(model, n, s_eff, hosts))
        # Upwards the middle; downwards the backbone carried, or for NCCL (channel_ramp) leaning
        # towards the line by (1 - a) / 2, a the backbone's latency share at the smallest knot,
        # the lean held past CHANNEL_RAMP_OCTAVES below it.
        w_line, lean_line, lean_from = (0.5 if up else 0.0), line, carried
        if not up and model.channel_ramp:
            s0 = segment_of(model, cv.bytes[0])
            a = min(max(segment_time_us(model, s0, n, 1.0, c) / math.exp(log_bb_at(0)), 0.0), 1.0)
            w_line = 0.5 * (1.0 - a)
            if d > CHANNEL_RAMP_OCTAVES:
                sk = cv.bytes[0] * 2.0 ** -CHANNEL_RAMP_OCTAVES
                fk = ye - LN2 * CHANNEL_RAMP_OCTAVES
                lean_from = min(max(_log_time(backbone_time_us(model, n, sk, c)) + cv.weight * cv.log_ratio[0],
                                    min(ye, fk)), max(ye, fk))
                lean_line = max(ye - slope * CHANNEL_RAMP_OCTAVES, _log_link_floor(model, n, sk, hosts))
        log_t = min(max(carried + w_line * (lean_line - lean_from), min(ye, far)), max(ye, far))
        grow = max(cv.kappa_scale / 2.0, BEYOND_LOG_SIGMA_PER_OCTAVE) * d
        misfit = (1 - cv.weight) * _rms(cv.log_ratio)
        end_sig = math.sqrt(cv.noise * cv.noise + misfit * misfit + cv.kappa_scale * cv.kappa_scale / 4.0)
        env_hi = max(carried, line)
        if up and ye - yn <= INTERVAL_Z * end_sig:  # a flat top: the upper side is the physical bound
            env_hi = far
        return (log_t, math.sqrt(cv.noise * cv.noise + grow * grow + misfit * misfit), min(carried, line),
                env_hi, False, True, d if up else -d, min(ye, far), max(ye, far), end_sig)
    i = bisect.bisect_right(cv.bytes, max(s_eff, 1.0))
    i = 0 if i == 0 else i - 1
    if i + 1 >= k:
        i = k - 2
    xi, xj = _lg2(cv.bytes[i]), _lg2(cv.bytes[i + 1])
    g = xj - xi
    w = (x - xi) / g if g > 0 else 0.0
    yi = ymono(i)
    yj = yk(i + 1) if log_bb_at(i + 1) < log_bb_at(i) else max(yk(i + 1), yi)
    ruler = (1 - w) * yi + w * yj
    # (at a measured size by the size, not by w: as C++)
    switch = max(s_eff, 1.0) not in (cv.bytes[i], cv.bytes[i + 1]) and (
        segment_of(model, cv.bytes[i]) != segment_of(model, cv.bytes[i + 1])
                            or cv.weight * abs(cv.log_ratio[i + 1] - cv.log_ratio[i]) > CURVE_SWITCH_LOG)
    env_lo = env_hi = 0.0
    if switch:
        log_t = ruler
        env_lo, env_hi = min(yi, yj), max(yi, yj)
    else:
        shape = log_bb - ((1 - w) * log_bb_at(i) + w * log_bb_at(i + 1))
        r = (1 - w) * cv.log_ratio[i] + w * cv.log_ratio[i + 1] - (1 - cv.shrink) * shape
        log_t = max(log_bb + cv.weight * r, yi)
    kap = max(cv.kappa_scale, cv.kappa[i], cv.kappa[i + 1])
    curv = kap * w * (1 - w) * g
    misfit = (1 - cv.weight) * _rms(cv.log_ratio)
    shape_dev = abs(log_t - ruler)  # the backbone's shape vs the log-log line: one sigma
    return (log_t, math.sqrt(cv.noise * cv.noise + curv * curv + misfit * misfit + shape_dev * shape_dev),
            env_lo, env_hi, switch, False, 0.0, 0.0, 0.0, 0.0)


def price(model, n: int, concurrent_groups: int, s_eff: float, class_log_sigma: float = 0.0,
          hosts: int = 0) -> Priced:
    """cost_model.cpp price(); hosts: the queried group's (0: the model's), for the host links'
    floor."""
    cv, exact = curve_for(model, n, concurrent_groups) if n > 1 else (None, False)
    return price_on(model, cv, exact, n, concurrent_groups, s_eff, class_log_sigma, hosts)


def price_on(model, cv, exact: bool, n: int, concurrent_groups: int, s_eff: float,
             class_log_sigma: float = 0.0, hosts: int = 0) -> Priced:
    """price() on a given curve (cost_model.cpp price_on)."""
    c = concurrent_groups
    seg = segment_of(model, s_eff)
    bb = segment_time_us(model, seg, n, s_eff, c)
    floor_us = link_floor_time_us(model, n, s_eff, hosts)  # 0 without a ceiling
    if cv is None or len(cv.bytes) < 2:
        sig = _backbone_sigma(model, seg, n, s_eff, c)
        sig = _hypot(sig, class_log_sigma)
        # No price and no bound below the floor (price_on's backbone branch).
        lift = max(1.0, floor_us / bb) if bb > 0 else 1.0  # the upper side's width kept above the floor
        return Priced(max(bb, floor_us), max(bb * math.exp(-INTERVAL_Z * sig), floor_us),
                      max(bb * math.exp(INTERVAL_Z * sig) * lift, floor_us), seg, None, False, False, False)
    log_t, sig, env_lo, env_hi, switch, beyond, octaves, bound_lo, bound_hi, end_sig = _curve_part(
        model, cv, n, c, s_eff, _log_time(bb), hosts)
    if beyond:
        sig = _hypot(sig, _backbone_sigma(model, seg, n, s_eff, c))
    if not exact:
        lgo = model.quality.get("leave_group_out_mape")
        e = lgo if lgo is not None else EXTRAPOLATED_CLASS_LOG_SIGMA
        sig = _hypot(sig, e)
        end_sig = _hypot(end_sig, e)
    sig = _hypot(sig, class_log_sigma)
    end_sig = _hypot(end_sig, class_log_sigma)
    lo, hi = log_t - INTERVAL_Z * sig, log_t + INTERVAL_Z * sig
    if switch:
        lo = min(lo, env_lo - INTERVAL_Z * cv.noise)
        hi = max(hi, env_hi + INTERVAL_Z * cv.noise)
    if beyond:
        lo = max(env_lo - INTERVAL_Z * sig, bound_lo - INTERVAL_Z * end_sig)
        hi = min(env_hi + INTERVAL_Z * sig, bound_hi + INTERVAL_Z * end_sig)
    # The floor in linear time (a price on it is the floor exactly); the interval's lower end not
    # below it and its upper end not below the price (price_on's last lines).
    time_us = max(math.exp(log_t), floor_us)
    return Priced(time_us, min(max(math.exp(min(max(lo, -700.0), 700.0)), floor_us), time_us),
                  max(min(math.exp(min(max(hi, -700.0), 700.0)) * max(1.0, floor_us / math.exp(log_t)),
                          math.exp(700.0)), time_us), seg, cv,
                  exact, switch, beyond, octaves)


def price_time_us(model, n: int, concurrent_groups: int, s_eff: float, hosts: int = 0) -> float:
    return price(model, n, concurrent_groups, s_eff, 0.0, hosts).time_us


def time_pricer(model, n: int, concurrent_groups: int, curve: Optional[MeasuredCurve] = None,
                hosts: int = 0):
    """price(model, n, concurrent_groups, s_eff).time_us as a function of s_eff alone, bit-identical
    (the same operations in the same order) but without the interval: the segment coefficients,
    collective-table factors, curve and its monotone knot values are resolved once for the class,
    so a planner pricing many sizes pays only the segment lookup, four products and, with a curve,
    the interpolation. tests/calibrate/time_pricer_test.py compares it to price().

    The link ceiling's floor (link_floor_time_us) is applied as price_on applies it: in the
    curve's upward line and as max(time, floor) on the result. The returned function's `spec`
    describes the price before that last max; hosts (0: the model's) the queried group's, for the
    host links' floor."""
    segs = model.segments

    def floor_us(s_eff):  # link_floor_time_us, the same operations
        return link_floor_time_us(model, n, s_eff, hosts)
    if n <= 1:  # segment_time_us: a group of one rank moves nothing
        a = segs[0].alpha_us

        def constant(s_eff):
            return max(a, floor_us(s_eff))  # (the floor is 0 at n <= 1)
        constant.spec = ("constant", a)  # price_spec: the same function as data
        return constant
    c = concurrent_groups
    rs = float(ring_steps(model.collective, n))
    bf = busbw_factor(model.collective, n)
    cm1 = float(c - 1)
    coefs = [tuple(segment_coefficient(sg, j) for j in range(len(TERMS))) for sg in segs]
    his = [sg.s_hi for sg in segs]
    last = len(segs) - 1

    def backbone(s_eff):
        seg = 0
        while seg < last and s_eff >= his[seg]:
            seg += 1
        a0, a1, a2, a3 = coefs[seg]
        t = 0.0  # segment_time_us's sum, term by term as term_feature computes each
        t += a0 * 1.0
        t += a1 * rs
        x = s_eff * bf
        t += a2 * x
        t += a3 * (x * cm1)
        return t

    # price_spec: these functions as data, for a compiled evaluator (shardcal._dtensor_search.Price,
    # the DTensor adapter's plan search) that computes the same operations in the same order
    spec = ("backbone", rs, bf, cm1, coefs, his[:last])  # (the last segment's upper bound is never compared)
    cv = curve if curve is not None else curve_for(model, n, c)[0]  # given: a transported class's
    if cv is None or len(cv.bytes) < 2:
        def floored(s_eff):
            return max(backbone(s_eff), floor_us(s_eff))
        floored.spec = spec
        return floored
    k = len(cv.bytes)
    kb = [_log_time(backbone_time_us(model, n, b, c)) for b in cv.bytes]  # as _curve_part's knots
    wgt, lr = cv.weight, cv.log_ratio
    yk = [kb[i] + wgt * lr[i] for i in range(k)]
    ym = [yk[0]]  # ymono(j) for every j: _curve_part's running value
    run, prev_bb = yk[0], kb[0]
    for j in range(1, k):
        run = yk[j] if kb[j] < prev_bb else max(run, yk[j])
        prev_bb = kb[j]
        ym.append(run)
    xs = [_lg2(b) for b in cv.bytes]
    x0, xk = xs[0], xs[-1]
    knot_bytes = cv.bytes
    seg_at = [segment_of(model, b) for b in cv.bytes]
    shrink1 = 1 - cv.shrink
    exp, log, bisect_right = math.exp, math.log, bisect.bisect_right
    # Below the smallest knot, NCCL's price leans towards the line by ramp_w, its offset held at
    # ramp_held past CHANNEL_RAMP_OCTAVES (_curve_part).
    ramp_w = ramp_held = 0.0
    if model.channel_ramp:
        a = segment_time_us(model, segment_of(model, cv.bytes[0]), n, 1.0, c) / exp(kb[0])
        ramp_w = 0.5 * (1.0 - min(max(a, 0.0), 1.0))
        sk = cv.bytes[0] * 2.0 ** -CHANNEL_RAMP_OCTAVES
        fk = yk[0] - LN2 * CHANNEL_RAMP_OCTAVES
        ck = min(max(log(max(backbone(sk), 1e-6)) + wgt * lr[0], min(yk[0], fk)), max(yk[0], fk))
        f = floor_us(sk)
        lk = max(yk[0] - min(max((ym[1] - yk[0]) / (xs[1] - x0), 0.0), LN2) * CHANNEL_RAMP_OCTAVES,
                 math.log(f) if f > 0 else -math.inf)
        ramp_held = ramp_w * (lk - ck)

    def with_curve(s_eff):
        return max(curve_time(s_eff), floor_us(s_eff))

    def curve_time(s_eff):
        bb = backbone(s_eff)
        log_bb = log(max(bb, 1e-6))
        x = math.log2(max(s_eff, 1.0))
        if x < x0 or x > xk:  # _curve_part's beyond branch, time only
            if x > xk:
                d = x - xk
                ye = ym[k - 1]
                slope = min(max((ye - ym[k - 2]) / (xk - xs[k - 2]), 0.0), LN2)
                far = ye + LN2 * d
                carried = min(max(log_bb + wgt * lr[k - 1], min(ye, far)), max(ye, far))
                f = floor_us(s_eff)  # the line stops at the floor (_log_link_floor)
                return exp(0.5 * (carried + max(ye + slope * d, math.log(f) if f > 0 else -math.inf)))
            d = x0 - x
            ye = yk[0]
            far = ye - LN2 * d
            carried = min(max(log_bb + wgt * lr[0], min(ye, far)), max(ye, far))
            if not ramp_w:
                return exp(carried)
            if d > CHANNEL_RAMP_OCTAVES:
                return exp(min(max(carried + ramp_held, min(ye, far)), max(ye, far)))
            slope = min(max((ym[1] - ye) / (xs[1] - x0), 0.0), LN2)
            f = floor_us(s_eff)
            line = max(ye - slope * d, math.log(f) if f > 0 else -math.inf)
            return exp(min(max(carried + ramp_w * (line - carried), min(ye, far)), max(ye, far)))
        i = bisect_right(knot_bytes, max(s_eff, 1.0))
        i = 0 if i == 0 else i - 1
        if i + 1 >= k:
            i = k - 2
        xi, xj = xs[i], xs[i + 1]
        g = xj - xi
        w = (x - xi) / g if g > 0 else 0.0
        yi = ym[i]
        yj = yk[i + 1] if kb[i + 1] < kb[i] else max(yk[i + 1], yi)
        if max(s_eff, 1.0) not in (knot_bytes[i], knot_bytes[i + 1]) and (
                seg_at[i] != seg_at[i + 1] or wgt * abs(lr[i + 1] - lr[i]) > CURVE_SWITCH_LOG):
            return exp((1 - w) * yi + w * yj)
        shape = log_bb - ((1 - w) * kb[i] + w * kb[i + 1])
        r = (1 - w) * lr[i] + w * lr[i + 1] - shrink1 * shape
        return exp(max(log_bb + wgt * r, yi))

    with_curve.spec = spec + (("curve", [float(b) for b in knot_bytes], xs, kb, yk, ym, list(lr), seg_at, wgt,
                               shrink1, CURVE_SWITCH_LOG),)
    return with_curve

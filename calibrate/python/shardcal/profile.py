"""Read shardcal calibration profiles and predict collective times, standard library only.

A profile (schema "shardcal.profile", version 1; docs/PROFILE_FORMAT.md) prices one collective
on one link class with the cost model of cost_model.py (docs/CALIBRATION.md "The model"): per
size segment the backbone

    t_us = alpha_us + alpha_step_us * steps(n) + S_eff * f(n) / (bandwidth_GBps * 1e3)
                                                 * (1 + contention * (concurrent_groups - 1))

(contention absent = 0; n = 1: the first segment's alpha_us at every size), times the measured
curve of the link class where the profile has one, with a 95 % interval. This module predicts
exactly what the C++ reader (calibrate/src/profile.cpp, cost_model.cpp) predicts: the same model
choice (nearest measured class), the same segment and the same floating-point operations in the
same order; tests/calibrate/parity_test.py checks it on random queries.

    import shardcal.profile as sp
    prof = sp.load("configs/profiles/dtensor-default.json")
    p = prof.predict("all_gather", group_size=8, hosts=2, nbytes=1 << 20)
    print(p.time_us, (p.lo_us, p.hi_us), p.extrapolated, p.note)
    topo = prof.mesh_topo([2, 4], ranks_per_host=4)   # DTensor MeshTopoInfo-shaped numbers
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from . import cost_model as _cm
from . import formats as _formats

_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", re.ASCII)
SCHEMA, VERSION = _formats.schema("profile")


# The collective table, as data: collectives.json next to this file is what
# `shardbench info --collectives --json` prints for core/src/collectives.cpp (a test keeps the
# two equal), so a new collective reaches Python without editing this module.
def _load_table() -> list:
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "collectives.json"), encoding="utf-8") as f:
        return json.load(f)["collectives"]


TABLE = {row["name"]: row for row in _load_table()}
# Names in table order.
COLLECTIVES = tuple(TABLE)
# Collectives whose per-position counts may differ (v-form); the others' count is the buffer,
# the same at every position.
HAS_V_FORM = frozenset(name for name, row in TABLE.items() if row["has_v_form"])
# Collectives whose data all flows one way (root -> the others): they measure a link's bandwidth.
ONE_WAY = tuple(name for name, row in TABLE.items() if row["one_way"])
MAX_DEPTH = 32  # deepest JSON nesting accepted, as kMaxDepth in calibrate/src/profile.cpp
DTYPES = ("f32", "f64", "f16", "bf16", "i32", "i64", "u8")
DTYPE_SIZE = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "u8": 1}


def busbw_factor(collective: str, n: int) -> float:
    if n <= 1:
        return 0.0
    row = TABLE[collective]
    nn = float(n)
    # The same operations in the same order as CollectiveInfo::busbw (bit-identical results).
    return row["busbw_share"] * (nn - 1.0) / nn + row["busbw_flat"]


def ring_steps(collective: str, n: int) -> int:
    if n <= 1:
        return 0
    return TABLE[collective]["ring_rounds"] * (n - 1)


def bandwidth_growth(law: str, collective: str, n_b: int, h_b: int, n: int, h: int) -> float:
    """cost_model.cpp bandwidth_growth."""
    if law == "host-share":
        return (float(h - 1) / h) / (float(h_b - 1) / h_b) if h_b > 1 else 1.0
    fb = busbw_factor(collective, n_b)
    return busbw_factor(collective, n) / fb if n_b > 1 and fb > 0 else 1.0


def known_switch(collective: str, backend: str, h_b: int, h: int):
    """cost_model.cpp known_switch: NCCL's two-node all_reduce tree."""
    if backend == "nccl" and collective == "all_reduce" and (h_b == 2) != (h == 2) and h_b > 1 and h > 1:
        return (1.0, 2.0) if h_b == 2 else (0.5, 1.0)
    return 1.0, 1.0


class ProfileError(ValueError):
    """A profile or a query is invalid; the message names the JSON pointer and the fix."""


@dataclass
class Segment:
    s_lo: float
    s_hi: Optional[float]
    alpha_us: float
    alpha_step_us: float
    bandwidth_GBps: float
    # Relative standard errors of alpha_us and bandwidth_GBps from the fit (None = unknown).
    alpha_rel_se: Optional[float] = None
    bandwidth_rel_se: Optional[float] = None
    # Contention gamma: with c groups at once per host the bandwidth term is multiplied by
    # 1 + gamma (c - 1) (None = 0).
    contention: Optional[float] = None


@dataclass
class Model:
    collective: str
    hosts: int
    concurrent_groups: int
    dtype: Optional[str]
    group_sizes: list
    effective_size: str
    segments: list
    quality: dict
    domain: dict  # name -> (lo, hi or None), as effective_domain() in C++
    index: int = 0
    raw: dict = field(default_factory=dict, repr=False)
    curves: list = field(default_factory=list)  # cost_model.MeasuredCurve per measured class


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


def _fail(origin: str, ptr: str, what: str, fix: str):
    raise ProfileError(f"{origin}: {ptr or '/'}: {what}; {fix}")


def _no_constants(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _num(origin, obj, ptr, key, lo, strict=False):
    if key not in obj:
        _fail(origin, f"{ptr}/{key}", "required field is missing", "add it or regenerate the profile")
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        _fail(origin, f"{ptr}/{key}", f"expected a number, got {json.dumps(v)[:60]}", "fix the value")
    try:
        x = float(v)
    except OverflowError:  # an integer literal beyond double range (C++ rejects it while parsing)
        _fail(origin, f"{ptr}/{key}", "number out of range", "fix the value")
    if not math.isfinite(x) or x < lo or (strict and x == lo):
        _fail(origin, f"{ptr}/{key}", f"must be finite and {'>' if strict else '>='} {lo}, got {v}",
              "refit with shardbench calibrate or fix the value")
    return x


def _int(origin, obj, ptr, key, lo):
    if key not in obj:
        _fail(origin, f"{ptr}/{key}", "required field is missing", "add it or regenerate the profile")
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or v > (1 << 24):
        _fail(origin, f"{ptr}/{key}", f"expected an integer >= {lo}, got {json.dumps(v)[:60]}", "fix the value")
    return v


def _range(origin, v, ptr, integral):
    if not isinstance(v, list) or len(v) != 2:
        _fail(origin, ptr, "expected [lo, hi] (hi may be null)", "fix the value")
    box = {"0": v[0], "1": v[1]}
    if integral:
        lo = float(_int(origin, box, ptr, "0", 1))
        hi = None if v[1] is None else float(_int(origin, box, ptr, "1", 1))
    else:
        lo = _num(origin, box, ptr, "0", 0.0)
        hi = None if v[1] is None else _num(origin, box, ptr, "1", 0.0)
    if hi is not None and hi < lo:
        _fail(origin, ptr, "upper bound below lower bound", "swap or fix the bounds")
    return (lo, hi)


def _parse_model(origin: str, m: Any, ptr: str, index: int) -> Model:
    if not isinstance(m, dict):
        _fail(origin, ptr, "expected an object", "fix the value")
    known = {"collective", "hosts", "concurrent_groups", "dtype", "group_sizes", "effective_size",
             "segments", "quality", "domain", "curves", "extra"}
    for k in m:
        if k not in known:
            _fail(origin, f"{ptr}/{k}", f"unknown key '{k}'", "remove it; free-form data belongs under \"extra\"")
    for k in known - {"domain", "curves", "extra"}:
        if k not in m:
            _fail(origin, f"{ptr}/{k}", "required field is missing", "add it or regenerate the profile")
    if not isinstance(m["collective"], str) or m["collective"] not in COLLECTIVES:
        _fail(origin, f"{ptr}/collective", f"unknown collective {m['collective']!r}", f"use one of {COLLECTIVES}")
    hosts = _int(origin, m, ptr, "hosts", 1)
    cg = _int(origin, m, ptr, "concurrent_groups", 1)
    dtype = m["dtype"]
    if dtype is not None and (not isinstance(dtype, str) or dtype not in DTYPES):
        _fail(origin, f"{ptr}/dtype", f"unknown dtype {dtype!r}", f"use null or one of {DTYPES}")
    gs = m["group_sizes"]
    if not isinstance(gs, list):
        _fail(origin, f"{ptr}/group_sizes", "expected an array", "fix the value")
    for i, n in enumerate(gs):
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1 << 24 or n % hosts or (i and n <= gs[i - 1]):
            _fail(origin, f"{ptr}/group_sizes/{i}", "group sizes must be ascending integers, multiples of hosts",
                  "fix the value")
    if not isinstance(m["effective_size"], str) or m["effective_size"] not in ("total", "n_times_max"):
        _fail(origin, f"{ptr}/effective_size", "unknown effective-size rule", "use \"total\" or \"n_times_max\"")
    segs = m["segments"]
    if not isinstance(segs, list) or not segs:
        _fail(origin, f"{ptr}/segments", "expected a non-empty array", "fix the value")
    out = []
    for i, s in enumerate(segs):
        p = f"{ptr}/segments/{i}"
        if not isinstance(s, dict):
            _fail(origin, p, "expected an object", "fix the value")
        for k in s:
            if k not in ("s_lo", "s_hi", "alpha_us", "alpha_step_us", "bandwidth_GBps", "alpha_rel_se",
                         "bandwidth_rel_se", "contention"):
                _fail(origin, f"{p}/{k}", f"unknown key '{k}'", "remove it")
        if "s_hi" not in s:
            _fail(origin, f"{p}/s_hi", "required field is missing", "add it (null = unbounded)")
        seg = Segment(_num(origin, s, p, "s_lo", 0.0),
                      None if s["s_hi"] is None else _num(origin, s, p, "s_hi", 0.0),
                      _num(origin, s, p, "alpha_us", 0.0), _num(origin, s, p, "alpha_step_us", 0.0),
                      _num(origin, s, p, "bandwidth_GBps", 0.0, strict=True))
        # Optional relative standard errors: absent = unknown; present = a finite number >= 0.
        if "alpha_rel_se" in s:
            seg.alpha_rel_se = _num(origin, s, p, "alpha_rel_se", 0.0)
        if "bandwidth_rel_se" in s:
            seg.bandwidth_rel_se = _num(origin, s, p, "bandwidth_rel_se", 0.0)
        if "contention" in s:
            seg.contention = _num(origin, s, p, "contention", 0.0)
        if i == 0 and seg.s_lo != 0:
            _fail(origin, f"{p}/s_lo", "the first segment must start at 0 bytes", "set it to 0")
        if i > 0 and (out[-1].s_hi is None or seg.s_lo != out[-1].s_hi):
            _fail(origin, f"{p}/s_lo", "segments overlap, are unsorted or have a gap",
                  "sort by s_lo; each s_lo must equal the previous s_hi")
        if seg.s_hi is not None and seg.s_hi <= seg.s_lo:
            _fail(origin, f"{p}/s_hi", "segment is empty or reversed", "make s_hi greater than s_lo")
        out.append(seg)
    if out[-1].s_hi is not None:
        _fail(origin, f"{ptr}/segments/{len(out) - 1}/s_hi", "the last segment must be unbounded",
              "set it to null")
    q = m["quality"]
    if not isinstance(q, dict):
        _fail(origin, f"{ptr}/quality", "expected an object", "fix the value")
    for k in q:
        if k not in ("points", "mape", "max_rel_error", "holdout_mape", "leave_group_out_mape",
                     "leave_mesh_out_mape", "leave_concurrency_out_mape", "leave_size_out_mape"):
            _fail(origin, f"{ptr}/quality/{k}", f"unknown key '{k}'", "remove it")
    _int(origin, q, f"{ptr}/quality", "points", 0)
    _num(origin, q, f"{ptr}/quality", "mape", 0.0)
    _num(origin, q, f"{ptr}/quality", "max_rel_error", 0.0)
    for k in ("holdout_mape", "leave_group_out_mape"):
        if k not in q:
            _fail(origin, f"{ptr}/quality/{k}", "required field is missing", "add it (null = not measured)")
        if q[k] is not None:
            _num(origin, q, f"{ptr}/quality", k, 0.0)
    # optional: absent = not measured (leave_size_out_mape: the model in use, docs/CALIBRATION.md)
    for k in ("leave_mesh_out_mape", "leave_concurrency_out_mape", "leave_size_out_mape"):
        if q.get(k) is not None:
            _num(origin, q, f"{ptr}/quality", k, 0.0)
    if "extra" in m and not isinstance(m["extra"], dict):
        _fail(origin, f"{ptr}/extra", "expected an object", "fix the value")
    if "domain" in m:
        d = m["domain"]
        if not isinstance(d, dict) or set(d) - {"classes"} != {"hosts", "concurrent_groups", "group_size", "bytes"}:
            _fail(origin, f"{ptr}/domain", "expected hosts, concurrent_groups, group_size, bytes (and optional classes)",
                  "fix the value")
        domain = {k: _range(origin, d[k], f"{ptr}/domain/{k}", integral=(k != "bytes")) for k in d if k != "classes"}
        classes = []
        if "classes" in d:
            if not isinstance(d["classes"], list):
                _fail(origin, f"{ptr}/domain/classes", "expected an array of [group size, concurrent groups]",
                      "fix the value")
            for i, e in enumerate(d["classes"]):
                if (not isinstance(e, list) or len(e) != 2
                        or any(not isinstance(x, int) or isinstance(x, bool) or not 1 <= x <= 1 << 24 for x in e)):
                    _fail(origin, f"{ptr}/domain/classes/{i}", "expected [group size, concurrent groups], integers >= 1",
                          "fix the value")
                classes.append((e[0], e[1]))
        domain["classes"] = classes
    else:
        domain = {"hosts": (float(hosts), float(hosts)), "concurrent_groups": (float(cg), float(cg)),
                  "group_size": (float(gs[0]), float(gs[-1])) if gs else (1.0, None), "bytes": (0.0, None),
                  "classes": []}
    curves = _parse_curves(origin, m.get("curves"), f"{ptr}/curves", hosts) if "curves" in m else []
    return Model(m["collective"], hosts, cg, dtype, list(gs), m["effective_size"], out, m["quality"], domain,
                 index, m, curves)


def _numbers(origin, v, ptr, lo):
    if not isinstance(v, list):
        _fail(origin, ptr, "expected an array of numbers", "fix the value")
    return [_num(origin, dict(enumerate(v)), ptr, i, lo) for i in range(len(v))]


def _parse_curves(origin: str, cs: Any, ptr: str, hosts: int) -> list:
    """The measured curves (docs/PROFILE_FORMAT.md "curves"), checked as the C++ reader does."""
    if not isinstance(cs, list):
        _fail(origin, ptr, "expected an array of curves", "fix the value")
    out, seen = [], set()
    for i, c in enumerate(cs):
        p = f"{ptr}/{i}"
        if not isinstance(c, dict):
            _fail(origin, p, "expected an object", "fix the value")
        keys = ("group_size", "concurrent_groups", "bytes", "log_ratio", "kappa", "kappa_scale", "noise", "shrink",
                "weight")
        for k in c:
            if k not in keys:
                _fail(origin, f"{p}/{k}", f"unknown key '{k}'", "remove it")
        for k in keys:
            if k not in c:
                _fail(origin, f"{p}/{k}", "required field is missing", "add it or regenerate the profile")
        n = _int(origin, c, p, "group_size", 1)
        if n % hosts:
            _fail(origin, f"{p}/group_size", f"group size {n} is not a multiple of hosts={hosts}", "fix the value")
        cg = _int(origin, c, p, "concurrent_groups", 1)
        by = _numbers(origin, c["bytes"], f"{p}/bytes", 1.0)
        if len(by) < 2:
            _fail(origin, f"{p}/bytes", "a curve needs at least 2 measured sizes", "fix the value or drop the curve")
        for j in range(1, len(by)):
            if not by[j] > by[j - 1]:
                _fail(origin, f"{p}/bytes/{j}", "sizes must be strictly ascending", "sort them and drop duplicates")
        lr = _numbers(origin, c["log_ratio"], f"{p}/log_ratio", -math.inf)
        ka = _numbers(origin, c["kappa"], f"{p}/kappa", 0.0)
        for j, x in enumerate(ka):
            if x > _cm.CURVE_MAX_KAPPA:
                _fail(origin, f"{p}/kappa/{j}", f"kappa above {_cm.CURVE_MAX_KAPPA}", "regenerate the profile")
        if len(lr) != len(by):
            _fail(origin, f"{p}/log_ratio", f"has {len(lr)} entries, bytes has {len(by)}",
                  "give one log ratio per measured size")
        if len(ka) != len(by):
            _fail(origin, f"{p}/kappa", f"has {len(ka)} entries, bytes has {len(by)}", "give one kappa per measured size")
        for j, x in enumerate(lr):
            if abs(x) > 50:
                _fail(origin, f"{p}/log_ratio/{j}", "a log ratio beyond +-50", "regenerate the profile")
        kr = _num(origin, c, p, "kappa_scale", 0.0)
        noise = _num(origin, c, p, "noise", 0.0)
        if kr > _cm.CURVE_MAX_KAPPA:
            _fail(origin, f"{p}/kappa_scale", f"above {_cm.CURVE_MAX_KAPPA}", "regenerate the profile")
        if noise > _cm.CURVE_MAX_NOISE:
            _fail(origin, f"{p}/noise", f"above {_cm.CURVE_MAX_NOISE}", "regenerate the profile")
        shrink = _num(origin, c, p, "shrink", 0.0)
        if shrink > 1:
            _fail(origin, f"{p}/shrink", "shrink above 1", "shrink is in [0, 1]")
        weight = _num(origin, c, p, "weight", 0.0)
        if weight > 1:
            _fail(origin, f"{p}/weight", "weight above 1", "weight is in [0, 1]")
        if (n, cg) in seen:
            _fail(origin, p, "a second curve for the same group size and concurrent groups", "keep one curve per class")
        seen.add((n, cg))
        out.append(_cm.MeasuredCurve(n, cg, by, lr, ka, kr, noise, shrink, weight))
    return out


def _between_measured_classes(classes, n: int, c: int) -> bool:
    """(n, c) measured or between measured pairs at the same n or the same c (as C++)."""
    at_n = [mc for mn, mc in classes if mn == n]
    at_c = [mn for mn, mc in classes if mc == c]
    return ((any(x <= c for x in at_n) and any(x >= c for x in at_n))
            or (any(x <= n for x in at_c) and any(x >= n for x in at_c)))


def _factor_distance(x: int, r) -> float:
    lo, hi = r
    if x < lo:
        return lo / x
    if hi is not None and x > hi:
        return x / hi
    return 1.0


def _contains(r, x: float) -> bool:
    return x >= r[0] and (r[1] is None or x <= r[1])


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
    """S_eff as calibrate::effective_bytes (calibrate/include/shardcal/calibrate/profile.hpp):
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


def _check_depth(text: str, origin: str) -> None:
    """Rejects nesting deeper than MAX_DEPTH before json.loads (which would recurse), exactly where
    the C++ reader's parser callback does: nlohmann reports depth = the number of containers open
    around an event, so a container may start at depth <= MAX_DEPTH and a key or scalar may sit
    at depth <= MAX_DEPTH."""
    depth = 0
    in_str = False
    esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch in " \t\r\n,:":
            continue
        if ch in "]}":
            depth -= 1
            continue
        if depth > MAX_DEPTH:
            raise ProfileError(f"{origin}: JSON nested deeper than {MAX_DEPTH} levels; a profile is never "
                               "that deep: the file is corrupt, regenerate it")
        if ch in "[{":
            depth += 1
        elif ch == '"':
            in_str = True


class Profile:
    def __init__(self, doc: dict, origin: str = "<profile>"):
        if not isinstance(doc, dict):
            _fail(origin, "", "expected an object", "fix the file")
        if doc.get("schema") != SCHEMA:
            _fail(origin, "/schema", f"unknown schema {doc.get('schema')!r}", f"this reader reads {SCHEMA!r}")
        v = doc.get("version")
        if isinstance(v, bool) or v != VERSION or not isinstance(v, int):
            _fail(origin, "/version", f"unsupported version {v!r}", f"this reader reads version {VERSION}")
        known = {"schema", "version", "cluster", "created", "shardcal_version", "backend", "memory", "models",
                 "local_copy", "provenance", "fit_method", "extra"}
        for k in doc:
            if k not in known:
                _fail(origin, f"/{k}", f"unknown key '{k}'", "remove it; free-form data belongs under \"extra\"")
        for k in ("cluster", "created", "shardcal_version", "backend", "memory", "models"):
            if k not in doc:
                _fail(origin, f"/{k}", "required field is missing", "add it or regenerate the profile")
            if k != "models" and not isinstance(doc[k], str):
                _fail(origin, f"/{k}", "expected a string", "fix the value")
        if not doc["cluster"]:
            _fail(origin, "/cluster", "cluster name is empty", "give the cluster a name (--name)")
        if len(doc["created"]) > 40 or not _ISO.fullmatch(doc["created"]):
            _fail(origin, "/created", "not an ISO 8601 UTC time", "write it like 2026-11-23T16:00:00Z")
        if doc["backend"] not in ("mpi", "nccl", "sim", "model"):
            _fail(origin, "/backend", f"unknown backend {doc['backend']!r}", "use mpi, nccl, sim or model")
        if doc["memory"] not in ("host", "cuda"):
            _fail(origin, "/memory", f"unknown memory {doc['memory']!r}", "use host or cuda")
        for k in ("provenance", "fit_method", "extra"):
            if k in doc and not isinstance(doc[k], dict):
                _fail(origin, f"/{k}", "expected an object", "fix the value")
        self.cluster = doc["cluster"]
        self.created = doc["created"]
        self.shardcal_version = doc["shardcal_version"]
        self.backend = doc["backend"]
        self.memory = doc["memory"]
        self.provenance = doc.get("provenance")
        self.fit_method = doc.get("fit_method")
        # The copy cost calibrate fitted and adopted (ns per byte, 0 = free); None: the memory
        # space's built-in bandwidth (docs/PROFILE_FORMAT.md "local_copy").
        self.local_copy_ns_per_byte = None
        if "local_copy" in doc:
            lc = doc["local_copy"]
            if not isinstance(lc, dict):
                _fail(origin, "/local_copy", "expected an object", "fix the value")
            for k in lc:
                if k not in ("ns_per_byte", "se_ns_per_byte", "transitions"):
                    _fail(origin, f"/local_copy/{k}", f"unknown key '{k}'", "remove it")
            self.local_copy_ns_per_byte = _num(origin, lc, "/local_copy", "ns_per_byte", 0.0)
            if self.local_copy_ns_per_byte > 10.0:  # Profile::kMaxCopyNsPerByte (C++)
                _fail(origin, "/local_copy/ns_per_byte", "copy cost slower than 0.1 GB/s (at most 10)",
                      "refit with shardbench calibrate or remove local_copy")
            _num(origin, lc, "/local_copy", "se_ns_per_byte", 0.0)
            _int(origin, lc, "/local_copy", "transitions", 1)
        if not isinstance(doc["models"], list):
            _fail(origin, "/models", "expected an array", "fix the value")
        self.models = [_parse_model(origin, m, f"/models/{i}", i) for i, m in enumerate(doc["models"])]
        seen = set()
        for m in self.models:
            key = (m.collective, m.hosts, m.concurrent_groups, m.dtype)
            if key in seen:
                _fail(origin, f"/models/{m.index}", "a second model for the same collective, hosts, "
                      "concurrent_groups and dtype", "keep one model per class")
            seen.add(key)
        self.doc = doc

    # -- prediction -------------------------------------------------------------------------
    def choose_model(self, collective: str, group_size: int, hosts: int = 1, concurrent_groups: int = 1,
                     dtype: Optional[str] = None):
        """The nearest measured class (docs/PROFILE_FORMAT.md "Choosing a model"): (model, key)."""
        best = None
        best_key = None
        for m in self.models:
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
            have = ", ".join(sorted({m.collective for m in self.models})) or "none"
            raise ProfileError(f"profile '{self.cluster}' has no model for {collective} (it has: {have}); "
                               f"calibrate from a sweep that measures {collective}")
        return best, best_key

    def host_transport(self, best, hosts: int, ranks_per_host: int, concurrent_groups: int = 1,
                       group_size: Optional[int] = None):
        """profile.cpp host_transport(): the structure from the chosen model's host count to the
        query's, tested by a second measured inter-host model when there is one
        (cost_model.HostTransport), or None."""
        if hosts <= 1 or best.hosts <= 1 or best.hosts == hosts or "domain" in best.raw:
            return None
        other, other_d = None, 0.0
        for m in self.models:
            if (m is best or m.collective != best.collective or m.hosts <= 1 or m.hosts == best.hosts
                    or "domain" in m.raw or m.dtype != best.dtype or m.concurrent_groups != best.concurrent_groups):
                continue
            d = abs(math.log(float(m.hosts) / best.hosts))
            if other is None or d < other_d or (d == other_d and m.hosts > other.hosts):
                other, other_d = m, d
        c, rph, op = concurrent_groups, ranks_per_host, best.collective
        if group_size is None:
            group_size = hosts * rph
        t = _cm.HostTransport(other, best.hosts * rph, 0, group_size, abs(math.log2(float(hosts) / best.hosts)))
        t.law = _cm.default_latency_law(op, self.backend)
        t.bw_law = _cm.default_bandwidth_law(op)
        t.step_log_sigma = _cm.HOST_TRANSPORT_LOG_SIGMA
        if other is not None:
            a = other
            t.n_other = a.hosts * rph
            t.test_doublings = abs(math.log2(float(best.hosts) / a.hosts))
            # profile.cpp: at the largest ranks per host both counts measured (else the query's).
            trph = 0
            for g in best.group_sizes:
                if g % best.hosts == 0:
                    for ga in a.group_sizes:
                        if ga % a.hosts == 0 and ga // a.hosts == g // best.hosts:
                            trph = max(trph, g // best.hosts)
            if trph == 0:
                trph = rph
            nb, na = best.hosts * trph, a.hosts * trph
            cb, _ = _cm.curve_for(best, nb, c)
            ca, _ = _cm.curve_for(a, na, c)
            sizes = []
            if cb is not None and ca is not None and cb.bytes and ca.bytes:
                lo = max(cb.bytes[0], ca.bytes[0])
                hi = min(cb.bytes[-1], ca.bytes[-1])
                for cv in (cb, ca):
                    sizes.extend(k for k in cv.bytes if lo <= k <= hi)
            else:
                sizes = [math.ldexp(1.0, i) for i in range(31)]
            sizes = sorted(set(sizes))
            slo, shi = known_switch(op, self.backend, a.hosts, best.hosts)
            la = _cm.price_time_us(a, na, c, 1.0)
            t.test_switch = slo != shi
            lat_laws = ((t.law,) + _cm.LATENCY_LAWS)[:1 if t.test_switch else 5]
            bw_laws = ((t.bw_law,) + _cm.BANDWIDTH_LAWS)[:1 if (t.test_switch or self.backend == "nccl") else 3]
            best_score, default_score, first = 0.0, 0.0, True
            for bw in bw_laws:
                f = bandwidth_growth(bw, op, na, a.hosts, nb, best.hosts)
                for law in lat_laws:
                    r = _cm.latency_growth(law, na, a.hosts, nb, best.hosts)
                    miss, score = [], 0.0
                    for k in sizes:
                        ta = _cm.price_time_us(a, na, c, k)
                        tb = _cm.price_time_us(best, nb, c, k)
                        if not (ta > 0) or not (tb > 0):
                            miss.append(0.0)
                            continue
                        p_lo = ta * _cm.transport_factor(la, r, f * slo, ta)
                        p_hi = ta * _cm.transport_factor(la, r, f * shi, ta)
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
                t.step_log_sigma = _cm.HOST_TRANSPORT_TESTED_LOG_SIGMA
        t.latency_us = _cm.price_time_us(best, t.n_model, c, 1.0)
        t.latency_ratio = _cm.latency_growth(t.law, t.n_model, best.hosts, group_size, hosts)
        f = bandwidth_growth(t.bw_law, op, t.n_model, best.hosts, group_size, hosts)
        klo, khi = known_switch(op, self.backend, best.hosts, hosts)
        mid = math.sqrt(klo * khi)
        lo, hi = klo, khi
        if not t.law_tested and self.backend == "mpi" and t.bw_law == "bus-factor":
            other = bandwidth_growth("host-share", op, t.n_model, best.hosts, group_size, hosts) / f
            lo *= min(1.0, other)
            hi *= max(1.0, other)
            t.algorithm_unknown = other != 1.0
        t.two_node_switch = klo != khi
        t.bus_ratio = f * mid
        t.switch_lo_log_sigma = math.log(mid / lo) / _cm.INTERVAL_Z
        t.switch_hi_log_sigma = math.log(hi / mid) / _cm.INTERVAL_Z
        return t

    @staticmethod
    def _transport_note(t, best, hosts: int) -> str:
        """profile.cpp transport_note."""
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

    def predict(self, collective: str, group_size: int, hosts: int = 1, ranks_per_host: Optional[int] = None,
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
        m, key = self.choose_model(collective, group_size, hosts, concurrent_groups, dtype)
        s_eff = effective_bytes(collective, m.effective_size, nbytes, counts, elem_size, group_size)
        side, dh, _, dc, dn, ds = key
        notes = []
        tr = self.host_transport(m, hosts, ranks_per_host, concurrent_groups, group_size)
        if tr is not None:
            def outside(model, n):
                return _factor_distance(n, model.domain["group_size"]) != 1.0
            if outside(m, tr.n_model) or (tr.other is not None and outside(tr.other, tr.n_other)):
                sizes = f"{tr.n_model}" + (f" and {tr.n_other}" if tr.other is not None else "")
                counts = f"{m.hosts}" + (f" and {tr.other.hosts}" if tr.other is not None else "")
                notes.append(f"{ranks_per_host} ranks per host: group sizes {sizes} outside the measured ones "
                             f"at hosts={counts}")
        transport_class_extrapolated = bool(notes)
        if tr is not None:
            notes.append(self._transport_note(tr, m, hosts))
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
        if not _contains(m.domain["bytes"], s_eff):
            notes.append(f"size {s_eff} B outside the measured range")
        pr = (_cm.price_transported(m, tr, concurrent_groups, s_eff, class_sigma) if tr is not None
              else _cm.price(m, group_size, concurrent_groups, s_eff, class_sigma))
        basis = "backbone" if pr.curve is None else ("measured curve" if pr.curve_exact else "nearest class's curve")
        if tr is not None:
            basis = (f"hosts={m.hosts} transported to hosts={hosts}"
                     f"{f', tested by hosts={tr.other.hosts}' if tr.other is not None and tr.law_tested else ', untested'}"
                     f" ({basis})")
        if pr.switch_gap:
            basis += ", switch in the gap"
        if pr.beyond_measured:
            basis += ", beyond the measured sizes"
        return Prediction(pr.time_us, m, pr.segment, bool(notes), "; ".join(notes), s_eff, pr.lo_us, pr.hi_us, basis)

    def __getstate__(self):  # the price functions of time_fn are closures: rebuilt on use
        state = dict(self.__dict__)
        state.pop("_time_fns", None)
        return state

    def time_fn(self, collective: str, group_size: int, hosts: int = 1, ranks_per_host: Optional[int] = None,
                dtype: Optional[str] = None, concurrent_groups: int = 1):
        """predict(...).time_us for one link class, collective and dtype as a function of nbytes
        alone, bit-identical to predict(..., _check_class=False): the model choice and the host
        transport depend only on the class, so they are resolved once (and kept on the profile),
        and a call is the backbone plus the curve (cost_model.time_pricer). For planners that price
        many sizes and need no interval or notes. ProfileError as predict raises it."""
        fns = self.__dict__.setdefault("_time_fns", {})
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
        m, _ = self.choose_model(collective, group_size, hosts, concurrent_groups, dtype)
        tr = self.host_transport(m, hosts, rph, concurrent_groups, group_size)
        price = (_cm.transported_time_pricer(m, tr, concurrent_groups) if tr is not None
                 else _cm.time_pricer(m, group_size, concurrent_groups))
        inf = math.inf

        def time_us(nbytes: float) -> float:
            if not (nbytes >= 0.0) or nbytes == inf:  # effective_bytes's check
                raise ProfileError(f"bytes must be finite and >= 0, got {nbytes}")
            return price(float(nbytes))
        time_us.spec = getattr(price, "spec", None)  # cost_model.time_pricer's price as data (or None)
        fns[key] = time_us
        return time_us

    # -- DTensor / autoparallel bridge -----------------------------------------------------
    def mesh_topo(self, mesh_shape: Sequence[int], ranks_per_host: int, collective: str = "all_gather",
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
            m, _ = self.choose_model(collective, n, hosts, concurrent, dtype)
            if nbytes is None:
                probe = m.segments[-1].s_lo
            else:
                probe = float(nbytes)
            p = self.predict(collective, n, hosts, group_rph, nbytes=probe, dtype=dtype,
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


def loads(text: str, origin: str = "<string>") -> Profile:
    _check_depth(text, origin)
    try:
        doc = json.loads(text, parse_constant=_no_constants)
    except ValueError as e:
        raise ProfileError(f"{origin}: not valid JSON ({e}); the file may be truncated or corrupt: "
                           f"regenerate it with shardbench calibrate") from None
    return Profile(doc, origin)


def load(path: str) -> Profile:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise ProfileError(f"{path}: not valid UTF-8 ({e}); the file is corrupt: regenerate it") from None
    if not text.strip():
        raise ProfileError(f"{path}: the profile file is empty; regenerate it with shardbench calibrate")
    return loads(text, path)


_BYTE_UNITS = {"": 1, "B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "KB": 1e3, "kB": 1e3,
               "MB": 1e6, "GB": 1e9}
_USAGE = "usage: python -m shardcal.profile PROFILE COLLECTIVE GROUP_SIZE HOSTS BYTES  (BYTES: 4096, 64KiB, 3MiB, 1.5GB)"


def _collective_alias(name: str) -> str:
    """The table's name for a collective as the tools spell it (alltoall, osu_allreduce,
    all_reduce_perf, bcast), as shardbench's --collective reads it; the name itself otherwise."""
    s = name.strip().lower().rsplit("/", 1)[-1]
    s = s[4:] if s.startswith("osu_") else s
    s = s[:-5] if s.endswith("_perf") else s
    key = re.sub(r"[-_ ]", "", s)
    if key == "bcast":
        return "broadcast"
    return next((c for c in COLLECTIVES if c.replace("_", "") == key), name)


def _main(argv: Sequence[str]) -> int:
    """`python -m shardcal.profile PROFILE COLLECTIVE N HOSTS BYTES`: one prediction, as
    `shardbench predict` words it. A user's mistake is one line on stderr and exit 2."""
    import sys

    def fail(what: str) -> int:
        print(f"shardcal.profile: error: {what}", file=sys.stderr)
        return 2

    if len(argv) != 5:
        return fail(f"expected 5 arguments, got {len(argv)}; {_USAGE}")
    path, collective, n_text, hosts_text, bytes_text = argv
    ints = {}
    for name, text in (("GROUP_SIZE", n_text), ("HOSTS", hosts_text)):
        if not re.fullmatch(r"[0-9]+", text.strip()) or int(text) < 1:
            return fail(f"{name} '{text}' is not a positive whole number; {_USAGE}")
        ints[name] = int(text)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", bytes_text)
    if not m or m.group(2) not in _BYTE_UNITS:
        return fail(f"BYTES '{bytes_text}' is not a byte count; write e.g. 4096, 64KiB, 3MiB, 1.5GB "
                    "(KiB/MiB/GiB = 1024^k, KB/MB/GB = 1000^k)")
    nbytes = float(m.group(1)) * _BYTE_UNITS[m.group(2)]
    if ints["GROUP_SIZE"] % ints["HOSTS"]:
        return fail(f"GROUP_SIZE {ints['GROUP_SIZE']} is not a multiple of HOSTS {ints['HOSTS']}; a group has "
                    "the same number of ranks on each host")
    try:
        prof = load(path)
        pr = prof.predict(_collective_alias(collective), ints["GROUP_SIZE"], ints["HOSTS"], nbytes=nbytes)
    except ProfileError as e:
        return fail(str(e))
    except OSError as e:
        return fail(f"{path}: cannot read the profile ({e.strerror}); check the path")
    print(f"{pr.time_us:.6g} us (95 % interval {pr.lo_us:.6g} .. {pr.hi_us:.6g} us; model /models/{pr.model.index}, "
          f"segment {pr.segment}{', extrapolated: ' + pr.note if pr.extrapolated else ''})")
    return 0


if __name__ == "__main__":  # tiny CLI: python -m shardcal.profile PROFILE COLLECTIVE N HOSTS BYTES
    import sys

    sys.exit(_main(sys.argv[1:]))

"""The profile reader -- the Python mirror of calibrate/src/profile_read.cpp, standard library only.

ProfileData checks a parsed shardcal.profile v1 document (docs/PROFILE_FORMAT.md) the way the C++
reader does and holds its fields and models; shardcal.profile.Profile adds the predictions
(shardcal.predict). parse_text / read_text are the JSON and file steps of shardcal.profile's
loads / load.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from . import cost_model as _cm
from shardcal import formats as _formats
from shardcal.collectives import COLLECTIVES

_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", re.ASCII)
SCHEMA, VERSION = _formats.schema("profile")
MAX_DEPTH = 32  # deepest JSON nesting accepted, as kMaxDepth in calibrate/src/profile_read.cpp
DTYPES = ("f32", "f64", "f16", "bf16", "i32", "i64", "u8")
DTYPE_SIZE = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "u8": 1}


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
    # The profile's link ceiling (extra.link_ceiling.GBps), 0 = none: Model::link_ceiling_GBps,
    # which the C++ reader copies into every model; prices never fall below its floor.
    link_ceiling_GBps: float = 0.0
    # Its host-link part (extra.link_ceiling.host_GBps), 0 = none: Model::host_link_GBps.
    host_link_GBps: float = 0.0
    # The profile's backend is NCCL (Model::channel_ramp, set on read): below the measured sizes
    # the price leans from the backbone carried towards the log-log line.
    channel_ramp: bool = False

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

def _contains(r, x: float) -> bool:
    return x >= r[0] and (r[1] is None or x <= r[1])

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

class ProfileData:
    """A checked profile document: its fields and models (shardcal.profile.Profile predicts)."""

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
        # Which algorithms the MPI library chooses (docs/PROFILE_FORMAT.md "extra.mpi_selector"):
        # {"selector": NAME, "forced": {collective: algorithm}}; None: not known. Under "extra"
        # (free-form), so that readers older than the field still read the profile.
        self.mpi_selector = None
        ex = doc.get("extra")
        if isinstance(ex, dict) and "mpi_selector" in ex:
            sel = ex["mpi_selector"]
            if not isinstance(sel, dict):
                _fail(origin, "/extra/mpi_selector", "expected an object", "fix the value")
            for k in sel:
                if k not in ("selector", "forced"):
                    _fail(origin, f"/extra/mpi_selector/{k}", f"unknown key '{k}'", "remove it")
            if not isinstance(sel.get("selector"), str) or not sel["selector"]:
                _fail(origin, "/extra/mpi_selector/selector", "expected a non-empty string", "fix the value")
            forced = sel.get("forced", {})
            if not isinstance(forced, dict) or not all(isinstance(v, str) for v in forced.values()):
                _fail(origin, "/extra/mpi_selector/forced", "expected an object of algorithm names",
                      "fix the value")
            for k in forced:
                if k not in COLLECTIVES:
                    _fail(origin, f"/extra/mpi_selector/forced/{k}", f"unknown collective '{k}'",
                          "use a collective table name")
            self.mpi_selector = {"selector": sel["selector"], "forced": dict(forced)}
        # The GPUs' link ceiling (docs/PROFILE_FORMAT.md "extra.link_ceiling"), checked as
        # profile_read.cpp link_ceiling(): {"GBps": 1e-3..1e6, "gpus": [string], "source": string}.
        self.link_ceiling = None
        if isinstance(ex, dict) and "link_ceiling" in ex:
            lc = ex["link_ceiling"]
            if not isinstance(lc, dict):
                _fail(origin, "/extra/link_ceiling", "expected an object", "fix the value")
            for k in lc:
                if k not in ("GBps", "host_GBps", "gpus", "source"):
                    _fail(origin, f"/extra/link_ceiling/{k}", f"unknown key '{k}'", "remove it")
            gbps = _num(origin, lc, "/extra/link_ceiling", "GBps", 1e-3)
            if gbps > 1e6:
                _fail(origin, "/extra/link_ceiling/GBps", f"must be <= 1e6, got {lc['GBps']}", "fix the value")
            gpus = lc.get("gpus", [])
            if not isinstance(gpus, list) or not all(isinstance(g, str) for g in gpus):
                _fail(origin, "/extra/link_ceiling/gpus", "expected an array of GPU names", "fix the value")
            if not isinstance(lc.get("source", ""), str):
                _fail(origin, "/extra/link_ceiling/source", "expected a string", "fix the value")
            host = 0.0
            if "host_GBps" in lc:  # profile_read.cpp: 1e-3 .. the whole ceiling
                host = _num(origin, lc, "/extra/link_ceiling", "host_GBps", 1e-3)
                if host > gbps:
                    _fail(origin, "/extra/link_ceiling/host_GBps", f"must be <= {gbps}, got {lc['host_GBps']}",
                          "fix the value")
            self.link_ceiling = {"GBps": gbps, "host_GBps": host, "gpus": list(gpus),
                                 "source": lc.get("source", "")}
        # The network's ring routes (docs/PROFILE_FORMAT.md "ring_routes"), checked as
        # profile_read.cpp ring_routes(): {"source": TEXT, "hosts_order": [TEXT], "rings": [{"hosts":
        # H >= 2, "latency_us": 1e-6..1e6, "share_GBps": 1e-3..1e6, "share_skew_us": 0..latency_us,
        # "hop_latency_us": [H numbers
        # 1e-6..1e6, the largest latency_us] (optional)}, ...]} (at least one), ascending hosts, each
        # once, "loopback_latency_us": 0..1e6 (optional), "loopback_GBps": 1e-3..1e6 (optional), no
        # other keys.
        # Held as {"source": str, "rings": [(hosts, latency_us, share_GBps, hops or ()), ...],
        # "loopback": float or None, "loopback_GBps": float or None} (Profile::RingRoutes).
        self.ring_routes = None
        if isinstance(ex, dict) and "ring_routes" in ex:
            rr = ex["ring_routes"]
            ptr = "/extra/ring_routes"
            if not isinstance(rr, dict):
                _fail(origin, ptr, "expected an object", "fix the value")
            for k in rr:
                if k not in ("source", "hosts_order", "rings", "loopback_latency_us", "loopback_GBps"):
                    _fail(origin, f"{ptr}/{k}", f"unknown key '{k}'", "remove it")
            if not isinstance(rr.get("source", ""), str):
                _fail(origin, f"{ptr}/source", "expected a string", "fix the value")
            if "rings" not in rr:
                _fail(origin, f"{ptr}/rings", "required field is missing", "add it or regenerate the profile")
            loopback = None
            if "loopback_latency_us" in rr:
                loopback = _num(origin, rr, ptr, "loopback_latency_us", 0.0)
                if loopback > 1e6:
                    _fail(origin, f"{ptr}/loopback_latency_us", f"must be <= 1e6, got {rr['loopback_latency_us']}",
                          "fix the value")
            loopback_gbps = None
            if "loopback_GBps" in rr:  # (as share_GBps: below 1 MB/s is a unit mistake)
                loopback_gbps = _num(origin, rr, ptr, "loopback_GBps", 1e-3)
                if loopback_gbps > 1e6:
                    _fail(origin, f"{ptr}/loopback_GBps", f"must be <= 1e6, got {rr['loopback_GBps']}",
                          "fix the value")
            if "hosts_order" in rr and (not isinstance(rr["hosts_order"], list)
                                        or not all(isinstance(x, str) for x in rr["hosts_order"])):
                _fail(origin, f"{ptr}/hosts_order", "expected an array of strings", "fix the value")
            if not isinstance(rr["rings"], list):
                _fail(origin, f"{ptr}/rings", "expected an array", "fix the value")
            if not rr["rings"]:
                _fail(origin, f"{ptr}/rings", "no host counts", "give the table ring-routes wrote")
            rings = []
            for i, e in enumerate(rr["rings"]):
                p = f"{ptr}/rings/{i}"
                if not isinstance(e, dict):
                    _fail(origin, p, "expected an object", "fix the value")
                for k in e:
                    if k not in ("hosts", "latency_us", "share_GBps", "share_skew_us", "hop_latency_us"):
                        _fail(origin, f"{p}/{k}", f"unknown key '{k}'", "remove it")
                h = _int(origin, e, p, "hosts", 2)
                # (Two hosts are never 0 us apart; a route of more than a second, or a link below
                # 1 MB/s, is a unit mistake.)
                lat = _num(origin, e, p, "latency_us", 1e-6)
                if lat > 1e6:
                    _fail(origin, f"{p}/latency_us", f"must be <= 1e6, got {e['latency_us']}", "fix the value")
                share = _num(origin, e, p, "share_GBps", 1e-3)
                if share > 1e6:
                    _fail(origin, f"{p}/share_GBps", f"must be <= 1e6, got {e['share_GBps']}", "fix the value")
                skew = None  # (0: the flows sharing that link take routes of one latency)
                if "share_skew_us" in e:
                    skew = _num(origin, e, p, "share_skew_us", 0.0)
                    if skew > 1e6:
                        _fail(origin, f"{p}/share_skew_us", f"must be <= 1e6, got {e['share_skew_us']}", "fix the value")
                    if skew > lat * (1 + 1e-9):
                        _fail(origin, f"{p}/share_skew_us", f"share_skew_us {skew} exceeds latency_us {lat}",
                              "two routes cannot differ by more than the longest (ring-routes writes it so)")
                hops = ()
                if "hop_latency_us" in e:
                    hv = e["hop_latency_us"]
                    if not isinstance(hv, list):
                        _fail(origin, f"{p}/hop_latency_us", "expected an array", "fix the value")
                    if len(hv) != h:
                        _fail(origin, f"{p}/hop_latency_us", f"{len(hv)} hop latencies for a ring of {h} hosts",
                              "give one per step, host i to host i+1 (ring-routes writes them so)")
                    hops = tuple(_numbers(origin, hv, f"{p}/hop_latency_us", 1e-6))
                    if any(x > 1e6 for x in hops):
                        _fail(origin, f"{p}/hop_latency_us", "must be <= 1e6", "fix the value")
                    # (The ring's longest route is its longest step.)
                    if abs(max(hops) - lat) > 1e-6 * lat:
                        _fail(origin, f"{p}/hop_latency_us", f"the longest hop latency {max(hops)} is not latency_us {lat}",
                              "make latency_us the largest hop latency (ring-routes writes them so)")
                    # (Two of the ring's flows differ by at most its hops' spread; 2e-6 for rounding.)
                    if skew is not None and skew > max(hops) - min(hops) + 2e-6:
                        _fail(origin, f"{p}/share_skew_us",
                              f"share_skew_us {skew} exceeds the hops' spread {max(hops) - min(hops)}",
                              "two of the ring's flows cannot differ by more than its hops do "
                              "(ring-routes writes it so)")
                if rings and h <= rings[-1][0]:
                    _fail(origin, p, f"hosts {h} after {rings[-1][0]}",
                          "list each host count once, ascending (ring-routes writes them so)")
                rings.append((h, lat, share, hops, skew))
            self.ring_routes = {"source": rr.get("source", ""), "rings": rings, "loopback": loopback,
                                "loopback_GBps": loopback_gbps}
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
        for m in self.models:  # (profile_read.cpp: every model prices with the profile's ceiling)
            m.link_ceiling_GBps = self.link_ceiling["GBps"] if self.link_ceiling else 0.0
            m.host_link_GBps = self.link_ceiling["host_GBps"] if self.link_ceiling else 0.0
            m.channel_ramp = self.backend == "nccl"
        seen = set()
        for m in self.models:
            key = (m.collective, m.hosts, m.concurrent_groups, m.dtype)
            if key in seen:
                _fail(origin, f"/models/{m.index}", "a second model for the same collective, hosts, "
                      "concurrent_groups and dtype", "keep one model per class")
            seen.add(key)
        self.doc = doc


def parse_text(text: str, origin: str = "<string>") -> dict:
    """The profile document in text (loads' JSON step): depth-checked, no NaN/Infinity."""
    _check_depth(text, origin)
    try:
        doc = json.loads(text, parse_constant=_no_constants)
    except ValueError as e:
        raise ProfileError(f"{origin}: not valid JSON ({e}); the file may be truncated or corrupt: "
                           f"regenerate it with shardbench calibrate") from None
    return doc


def read_text(path: str) -> str:
    """The text of the profile file at path (load's file step)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise ProfileError(f"{path}: not valid UTF-8 ({e}); the file is corrupt: regenerate it") from None
    if not text.strip():
        raise ProfileError(f"{path}: the profile file is empty; regenerate it with shardbench calibrate")
    return text

"""Reading and validating the report's inputs (JSON files only).

Every defect raises InputError with one message naming the file, the line (JSON Lines) and the
field, and saying how to fix it. Formats: sweep results (docs/RESULTS_FORMAT.md), profiles
(docs/PROFILE_FORMAT.md, read by the shardcal package, calibrate/python), `shardbench validate`
JSON Lines and `shardbench gate` JSON reports (docs/REPORTS.md "Inputs").
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Optional

import shardcal.profile as sp
# The formats' identities and the link-class rule, as the C++ side defines them (the shardcal
# package's copy of formats/formats.json; tests keep it equal to formats/include/shardcal/formats/).
# concurrent_groups evaluates the rule's definition there rather than restating it, so a change of
# the rule (operands, rounding, bounds) reaches the report without a Python edit.
from shardcal.formats import FORMATS, concurrent_groups

RESULTS_SCHEMA = FORMATS["schemas"]["results"]["schema"]
RESULTS_VERSION = FORMATS["schemas"]["results"]["version"]
VALIDATE_SCHEMA = FORMATS["schemas"]["validate"]["schema"]
VALIDATE_SUMMARY_SCHEMA = FORMATS["schemas"]["validate_summary"]["schema"]
GATE_SCHEMA = FORMATS["schemas"]["gate"]["schema"]


class InputError(Exception):
    """Bad input: the message names the file, line and field and says what to do."""


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _parse_json(text: str):
    return json.loads(text, parse_constant=_reject_constant)


def _read_text(path: str, what: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read the {what} ({e.strerror}); check the path") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text at byte {e.start}; is this really a {what}?") from None
    if not text.strip():
        raise InputError(f"{path}: the {what} is empty; pass a file written by shardbench")
    return text


def _jsonl_records(path: str, what: str):
    """Yields (line number, record) for every non-blank line. A torn last line (no trailing
    newline, not parseable: a run killed mid-write, docs/RESULTS_FORMAT.md) is skipped with a
    warning; any other unparseable line is an error."""
    text = _read_text(path, what)
    lines = text.split("\n")
    torn_ok = not text.endswith("\n")
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = _parse_json(line)
        except (ValueError, RecursionError) as e:
            if i == 1:
                try:
                    whole = _parse_json(text)
                except (ValueError, RecursionError):
                    whole = None
                if isinstance(whole, dict):
                    raise InputError(f"{path}: line 1: the file is one JSON document (field \"schema\" = "
                                     f"{json.dumps(whole.get('schema'))[:60]}), not JSON Lines; expected a "
                                     f"{what}: check which file goes to which option") from None
            if torn_ok and i == len(lines):
                warn(f"{path}: line {i}: ignoring a torn last line (the run was killed while writing it)")
                continue
            raise InputError(f"{path}: line {i}: not valid JSON ({e}); every line of a {what} is one "
                             "JSON object") from None
        if not isinstance(rec, dict):
            raise InputError(f"{path}: line {i}: the record is a {type(rec).__name__}, not a JSON object; "
                             f"is this a {what}?")
        yield i, rec


_warnings: list = []


def warn(msg: str) -> None:
    _warnings.append(msg)


def warnings() -> list:
    return list(_warnings)


# -- typed field access ------------------------------------------------------------------------
def _where(path: str, line: Optional[int]) -> str:
    return f"{path}: line {line}" if line is not None else path


def _get(obj: dict, dotted: str, path: str, line: Optional[int], fix: str = ""):
    cur: Any = obj
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise InputError(f"{_where(path, line)}: field \"{dotted}\" is missing"
                             f"{'; ' + fix if fix else '; the file is not in the documented format'}")
        cur = cur[part]
    return cur


def _num(obj: dict, dotted: str, path: str, line: Optional[int], lo: float = -math.inf,
         strict: bool = False, allow_null: bool = False) -> Optional[float]:
    v = _get(obj, dotted, path, line)
    if v is None and allow_null:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)) \
            or v < lo or (strict and v == lo):
        bound = f"{'>' if strict else '>='} {lo:g}" if lo != -math.inf else "finite"
        raise InputError(f"{_where(path, line)}: field \"{dotted}\" must be a number {bound}, got "
                         f"{json.dumps(v)[:60]}; the file is damaged or not in the documented format")
    return float(v)


def _str(obj: dict, dotted: str, path: str, line: Optional[int], choices=None) -> str:
    v = _get(obj, dotted, path, line)
    if not isinstance(v, str) or not v:
        raise InputError(f"{_where(path, line)}: field \"{dotted}\" must be a non-empty string, got "
                         f"{json.dumps(v)[:60]}")
    if choices is not None and v not in choices:
        raise InputError(f"{_where(path, line)}: field \"{dotted}\" is {v!r}; expected one of "
                         f"{', '.join(choices)}")
    return v


def _int(obj: dict, dotted: str, path: str, line: Optional[int], lo: int = 0) -> int:
    v = _get(obj, dotted, path, line)
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise InputError(f"{_where(path, line)}: field \"{dotted}\" must be an integer >= {lo}, got "
                         f"{json.dumps(v)[:60]}")
    return v


# -- sweep results -------------------------------------------------------------------------------
@dataclass
class Run:
    """One results file: its first context record and its usable points."""
    path: str
    backend: str
    world: int
    memory: str
    n_hosts: int
    host_names: list
    date: str
    git_revision: str
    libraries: dict
    collectives: list = field(default_factory=list)   # dicts, see _collective
    transitions: list = field(default_factory=list)   # dicts, see _transition
    n_records: int = 0
    n_wrong: int = 0
    n_failed: int = 0
    n_contexts: int = 0

    def where(self, cluster: Optional[str] = None) -> str:
        hosts = ", ".join(self.host_names[:3]) + (", ..." if len(self.host_names) > 3 else "")
        c = f"cluster {cluster} · " if cluster else ""
        return (f"{c}{self.backend} · world {self.world} · {self.n_hosts} host"
                f"{'s' if self.n_hosts != 1 else ''} ({hosts})")


def _median_ci(rec: dict, path: str, line: int):
    ci = _get(rec, "stats.median_ci", path, line)
    if ci is None or not isinstance(ci, dict):
        return None, None
    lo = _num(rec, "stats.median_ci.lo", path, line, 0.0, allow_null=True)
    hi = _num(rec, "stats.median_ci.hi", path, line, 0.0, allow_null=True)
    return lo, hi


# The point record's fields, per kind, as formats.json lists them: [name, type in a collective
# point, in a transition point, least value]. The C++ writer is checked against the same list
# (unit test ResultsRecord), so the report reads every field by its listed name and type and names
# none itself.
_POINT_FIELDS = FORMATS["results_point"]["fields"]
_POINT_PARAMS = FORMATS["results_point"]["point"]
_KIND_COLUMN = {"collective": 1, "transition": 2}


def _typed(obj: dict, name: str, typ: str, lo, path: str, line: int):
    """The field `name` of `obj` checked against its listed type (formats.json "results_point")."""
    lo = -math.inf if lo is None else lo
    if "|" in typ:
        if _get(obj, name, path, line) is None and "null" in typ.split("|"):
            return None
        return _typed(obj, name, typ.split("|")[0], lo, path, line)
    if typ == "string":
        return _str(obj, name, path, line)
    if typ == "collective":
        return _str(obj, name, path, line, sp.COLLECTIVES)
    if typ == "dtype":
        return _str(obj, name, path, line, sp.DTYPES)
    if typ == "integer":
        return _int(obj, name, path, line, int(lo) if lo != -math.inf else -(1 << 62))
    if typ == "number":
        return _num(obj, name, path, line, lo)
    v = _get(obj, name, path, line)
    ok = {"object": lambda: isinstance(v, dict),
          "boolean": lambda: isinstance(v, bool),
          "null": lambda: v is None,
          "integers": lambda: isinstance(v, list) and all(
              isinstance(x, int) and not isinstance(x, bool) and x >= lo for x in v),
          "numbers": lambda: isinstance(v, list) and all(
              isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= lo
              for x in v)}.get(typ)
    if ok is None:
        raise InputError(f"formats.json lists field \"{name}\" with the unknown type {typ!r}")
    if not ok():
        bound = f" >= {lo:g}" if lo != -math.inf else ""
        raise InputError(f"{_where(path, line)}: field \"{name}\" must be {typ}{bound}, got "
                         f"{json.dumps(v)[:60]}; the file is damaged or not in the documented format")
    return v


def _listed(obj: dict, rows: list, kind: str, path: str, line: int, prefix: str = "") -> dict:
    """Every field `rows` lists for `kind`, read and checked; optional ones only when present."""
    out = {}
    holder = _get(obj, prefix[:-1], path, line) if prefix else obj
    for row in rows:
        name, typ = row[0], row[_KIND_COLUMN[kind]]
        lo = row[3] if len(row) > 3 else None
        if typ == "absent" or (typ.endswith("?") and not (isinstance(holder, dict) and name in holder)):
            continue
        out[name] = _typed(obj, prefix + name, typ.rstrip("?"), lo, path, line)
    return out


def _point(rec: dict, kind: str, path: str, line: int) -> dict:
    """A point record as a dict of its listed fields, the "point" fields merged in (the same
    names mean the same values: root, mode), plus the p50 and its confidence interval."""
    out = _listed(rec, _POINT_FIELDS, kind, path, line)
    out.update(_listed(rec, _POINT_PARAMS, kind, path, line, "point."))
    p50 = _num(rec, "stats.p50", path, line, 0.0, strict=True)
    lo, hi = _median_ci(rec, path, line)
    out.update({"line": line, "p50_s": p50,
                "ci_lo_s": lo if lo is not None else p50,
                "ci_hi_s": hi if hi is not None else p50})
    return out


def _collective(rec: dict, path: str, line: int, n_hosts: int) -> dict:
    p = _point(rec, "collective", path, line)
    p["conc"] = concurrent_groups(p["groups"], p["hosts_spanned"], n_hosts)
    p["uneven"] = len(set(p["counts"])) > 1
    return p


def _transition(rec: dict, path: str, line: int) -> dict:
    p = _point(rec, "transition", path, line)
    plan = p["transition"].get("plan")
    p["steps"] = len(plan) if isinstance(plan, list) else 0
    return p


def load_results(path: str) -> Run:
    run: Optional[Run] = None
    for line, rec in _jsonl_records(path, "sweep results file (JSON Lines)"):
        rtype = rec.get("type")
        if run is None:
            if rtype != "context":
                raise InputError(f"{path}: line {line}: field \"type\" is {json.dumps(rtype)[:40]}, expected "
                                 "\"context\"; line 1 of a sweep results file is its context record "
                                 "(is this a shardbench sweep --out file?)")
            if rec.get("schema") != RESULTS_SCHEMA:
                raise InputError(f"{path}: line {line}: field \"schema\" is {json.dumps(rec.get('schema'))[:60]}, "
                                 f"expected \"{RESULTS_SCHEMA}\"; this is not a sweep results file")
            v = rec.get("version")
            if v != RESULTS_VERSION or isinstance(v, bool):
                raise InputError(f"{path}: line {line}: field \"version\" is {json.dumps(v)[:20]}; this report "
                                 f"reads results format version {RESULTS_VERSION}: re-run the sweep with "
                                 "this shardbench")
            hosts = _get(rec, "hosts", path, line)
            names = [h.get("name", "?") for h in hosts if isinstance(h, dict)] if isinstance(hosts, list) else []
            libs = rec.get("library_versions") if isinstance(rec.get("library_versions"), dict) else {}
            run = Run(path=path, backend=_str(rec, "backend", path, line),
                      world=_int(rec, "world", path, line, 1), memory=_str(rec, "memory", path, line),
                      n_hosts=_int(rec, "n_hosts", path, line, 1), host_names=names,
                      date=str(rec.get("date", "?")), git_revision=str(rec.get("git_revision", "?")),
                      libraries=libs)
            run.n_contexts = 1
            continue
        if rtype == "context":
            run.n_contexts += 1
            continue
        if rtype != "point":
            continue  # readers ignore unknown record types
        run.n_records += 1
        wrong = rec.get("wrong")
        if isinstance(wrong, (int, float)) and not isinstance(wrong, bool) and wrong > 0:
            run.n_wrong += 1
            continue
        stats = rec.get("stats")
        if isinstance(stats, dict) and stats.get("p50") is None and "p50" in stats:
            run.n_failed += 1  # a point that produced no samples
            continue
        kind = _str(rec, "point.kind", path, line)
        if kind == "transition" and isinstance(stats, dict) and stats.get("p50") == 0:
            # 0 s is a measurement for local steps where computation is not timed (SMPI); it has
            # no place on a log axis. Anything that communicates at 0 s failed (as the C++ reader).
            plan = rec.get("transition", {}).get("plan") if isinstance(rec.get("transition"), dict) else None
            steps = plan if isinstance(plan, list) else []
            if any(isinstance(st, dict) and st.get("collective") in sp.COLLECTIVES for st in steps) or not steps:
                run.n_failed += 1
            continue
        if kind == "collective":
            run.collectives.append(_collective(rec, path, line, run.n_hosts))
        elif kind == "transition":
            run.transitions.append(_transition(rec, path, line))
    if run is None:
        raise InputError(f"{path}: no records; pass a file written by shardbench sweep --out")
    if not run.collectives and not run.transitions:
        raise InputError(f"{path}: no usable point records ({run.n_records} point records, {run.n_wrong} with "
                         f"wrong > 0, {run.n_failed} failed); nothing to plot: run the sweep (again)")
    return run


# -- profile -------------------------------------------------------------------------------------
def load_profile(path: str) -> sp.Profile:
    _read_text(path, "profile")
    try:
        return sp.load(path)
    except sp.ProfileError as e:
        raise InputError(str(e)) from None
    except (ValueError, RecursionError) as e:
        raise InputError(f"{path}: not a valid JSON profile ({e}); pass a shardbench calibrate --out file") from None


# -- validate (shardbench validate, JSON Lines) ----------------------------------------------------
@dataclass
class Validate:
    path: str
    transitions: list
    summary: Optional[dict]
    profile: dict


def _roles(v, path, line, i) -> list:
    roles = v if isinstance(v, list) else [v]
    for r in roles:
        if r not in ("chosen", "greedy", "alternative"):
            raise InputError(f"{path}: line {line}: field \"plans[{i}].role\" is {json.dumps(r)[:40]}; "
                             "expected chosen, greedy or alternative (or a list of them)")
    return roles


def _merge_roles(plans: list) -> list:
    """The same plan listed once per role (chosen and greedy) becomes one plan with both roles."""
    out = []
    for p in plans:
        for q in out:
            if q["steps"] == p["steps"] and q["median_us"] == p["median_us"] and q["predicted_us"] == p["predicted_us"]:
                q["roles"] += [r for r in p["roles"] if r not in q["roles"]]
                break
        else:
            out.append(p)
    return out


def load_validate(path: str) -> Validate:
    trans, summary, prof = [], None, {}
    for line, rec in _jsonl_records(path, "validate file (JSON Lines)"):
        schema = rec.get("schema")
        if schema == VALIDATE_SUMMARY_SCHEMA:
            summary = {"line": line, "transitions": _int(rec, "transitions", path, line, 0),
                       "regret_median": _num(rec, "regret.median", path, line, 0.0, allow_null=True),
                       "regret_p95": _num(rec, "regret.p95", path, line, 0.0, allow_null=True),
                       "mape": _num(rec, "mape", path, line, 0.0, allow_null=True)}
            continue
        if schema != VALIDATE_SCHEMA:
            raise InputError(f"{path}: line {line}: field \"schema\" is {json.dumps(schema)[:60]}; expected "
                             f"\"{VALIDATE_SCHEMA}\" or \"{VALIDATE_SUMMARY_SCHEMA}\": pass a shardbench "
                             "validate output file")
        if rec.get("version") != 1:
            raise InputError(f"{path}: line {line}: field \"version\" is {json.dumps(rec.get('version'))}; "
                             "this report reads version 1")
        if isinstance(rec.get("profile"), dict):
            prof = rec["profile"]
        t = {"line": line,
             "mesh": _str(rec, "transition.mesh", path, line),
             "from": _str(rec, "transition.from", path, line),
             "to": _str(rec, "transition.to", path, line),
             "shape": str(_get(rec, "transition", path, line).get("shape", "")),
             "dtype": str(_get(rec, "transition", path, line).get("dtype", "")),
             "regret": _num(rec, "regret", path, line, 0.0, allow_null=True),
             "greedy_speedup": _num(rec, "greedy_speedup", path, line, 0.0, allow_null=True),
             "plans": []}
        plans = _get(rec, "plans", path, line)
        if not isinstance(plans, list) or not plans:
            raise InputError(f"{path}: line {line}: field \"plans\" must be a non-empty list")
        for i, p in enumerate(plans):
            if not isinstance(p, dict):
                raise InputError(f"{path}: line {line}: field \"plans[{i}]\" is not an object")
            pre = f"plans[{i}]"
            t["plans"].append({
                "roles": _roles(_get(p, "role", path, line), path, line, i),
                # null: no finite price (a step the profile prices +inf, e.g. the greedy plan's)
                "predicted_us": _num(p, "predicted_us", f"{path}: line {line}: {pre}", None, 0.0, allow_null=True),
                "median_us": _num(p, "measured_us.median", f"{path}: line {line}: {pre}", None, 0.0, strict=True),
                "ci_lo_us": _num(p, "measured_us.ci_lo", f"{path}: line {line}: {pre}", None, 0.0, allow_null=True),
                "ci_hi_us": _num(p, "measured_us.ci_hi", f"{path}: line {line}: {pre}", None, 0.0, allow_null=True),
                "steps": p.get("steps") if isinstance(p.get("steps"), list) else [],
            })
        t["plans"] = _merge_roles(t["plans"])
        trans.append(t)
    if not trans:
        raise InputError(f"{path}: no \"{VALIDATE_SCHEMA}\" transition lines; nothing to plot: pass a "
                         "shardbench validate output file that measured at least one transition")
    return Validate(path=path, transitions=trans, summary=summary, profile=prof)


# -- gate (shardbench gate --json) ----------------------------------------------------------------
GATE_VERDICTS = ("pass", "regression", "inconclusive", "incomparable")
POINT_VERDICTS = ("pass", "regression", "improvement", "inconclusive")


def load_gate(path: str) -> dict:
    text = _read_text(path, "gate report (JSON)")
    try:
        g = _parse_json(text)
    except (ValueError, RecursionError) as e:
        raise InputError(f"{path}: not valid JSON ({e}); pass the file written by shardbench gate --json") from None
    if not isinstance(g, dict) or g.get("schema") != GATE_SCHEMA:
        got = g.get("schema") if isinstance(g, dict) else type(g).__name__
        raise InputError(f"{path}: field \"schema\" is {json.dumps(got)[:60]}, expected \"{GATE_SCHEMA}\"; "
                         "pass the file written by shardbench gate --json")
    if g.get("version") != 1:
        raise InputError(f"{path}: field \"version\" is {json.dumps(g.get('version'))}; this report reads version 1")
    out = {"path": path, "verdict": _str(g, "verdict", path, None, GATE_VERDICTS),
           "exit_code": g.get("exit_code"), "alpha": g.get("alpha"),
           "max_slowdown": _num(g, "max_slowdown", path, None, 0.0),
           "fdr": g.get("fdr"), "incomparable_reason": str(g.get("incomparable_reason") or ""),
           "env_differences": g.get("env_differences") or [],
           "env_change_allowed": bool(g.get("env_change_allowed")),
           "only_baseline": g.get("only_baseline") or [], "only_candidate": g.get("only_candidate") or [],
           "points": [], "models": []}
    pts = _get(g, "points", path, None)
    if not isinstance(pts, list):
        raise InputError(f"{path}: field \"points\" must be a list")
    for i, p in enumerate(pts):
        w = f"{path}: points[{i}]"
        if not isinstance(p, dict):
            raise InputError(f"{w}: not an object")
        out["points"].append({
            "key": str(p.get("key", "")),
            "label": str(p.get("label") or p.get("key") or f"point {i}"),
            "baseline_us": _num(p, "baseline_median_us", w, None, 0.0, allow_null=True),
            "candidate_us": _num(p, "candidate_median_us", w, None, 0.0, allow_null=True),
            "ratio": _num(p, "ratio", w, None, 0.0, allow_null=True),
            "ci_lo": _num(p, "ci_lo", w, None, 0.0, allow_null=True),
            "ci_hi": _num(p, "ci_hi", w, None, 0.0, allow_null=True),
            "p": _num(p, "p", w, None, 0.0, allow_null=True),
            "q": _num(p, "q", w, None, 0.0, allow_null=True),
            "verdict": _str(p, "verdict", w, None, POINT_VERDICTS),
            "reason": str(p.get("reason", "")),
        })
    models = g.get("models") or []
    if not isinstance(models, list):
        raise InputError(f"{path}: field \"models\" must be a list")
    for i, m in enumerate(models):
        w = f"{path}: models[{i}]"
        if not isinstance(m, dict):
            raise InputError(f"{w}: not an object")
        out["models"].append({
            "collective": str(m.get("collective", "")), "link": str(m.get("link") or ""),
            "segment": m.get("segment"),
            "param": _str(m, "param", w, None),
            "at": str(m.get("at") or ""),  # time_us rows: "n=8 c=1 S_eff=65536"
            "baseline": _num(m, "baseline", w, None, allow_null=True),
            "candidate": _num(m, "candidate", w, None, allow_null=True),
            "ratio": _num(m, "ratio", w, None, 0.0, allow_null=True),
            "ci_lo": _num(m, "ci_lo", w, None, 0.0, allow_null=True),
            "ci_hi": _num(m, "ci_hi", w, None, 0.0, allow_null=True),
            "verdict": str(m.get("verdict", "")),
        })
    return out


def display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("../..") else path

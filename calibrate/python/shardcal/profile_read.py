"""Reading profiles: the C++ reader checks, Python shows what it accepted.

A shardcal.profile v1 document (docs/PROFILE_FORMAT.md) is parsed and checked by the C++ reader
(calibrate/src/profile_read.cpp, through the compiled module shardcal._core), the same code that
`shardbench` reads profiles with; a defect raises ProfileError with the JSON pointer and a fix.
ProfileData keeps the handle the predictions use (shardcal.predict) and plain views of the
document's fields and models for reports and adapters: the values as written, no arithmetic.
"""

from __future__ import annotations

import json
from typing import Optional

from . import formats as _formats

try:  # the compiled cost model is the package's core, not an option (calibrate/python/setup.py)
    from . import _core
except ImportError as _e:  # pragma: no cover - a broken install
    raise ImportError("shardcal._core, the package's compiled cost model, is not built or does not load "
                      f"({_e}); run bash scripts/python-env.sh in the shardcal checkout (it needs g++, python3-dev, "
                      "pybind11-dev and nlohmann-json3-dev: bash scripts/setup.sh installs them)") from _e

SCHEMA, VERSION = _formats.schema("profile")
MAX_DEPTH = 32  # deepest JSON nesting accepted (kMaxDepth in calibrate/src/profile_read.cpp)
DTYPES = ("f32", "f64", "f16", "bf16", "i32", "i64", "u8")
DTYPE_SIZE = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "u8": 1}

# A profile or a query is invalid: the C++ reader's or predict()'s message (JSON pointer and fix).
ProfileError = _core.ProfileError


class _View:
    """A JSON object of an accepted profile as attributes (optional keys absent: their default)."""

    _defaults: dict = {}

    def __init__(self, obj: dict):
        self.__dict__.update(self._defaults)
        self.__dict__.update(obj)

    def __eq__(self, other):
        return type(other) is type(self) and other.__dict__ == self.__dict__

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"


class Segment(_View):
    """One size segment of a model's backbone, its keys as written (docs/PROFILE_FORMAT.md)."""

    _defaults = {"alpha_rel_se": None, "bandwidth_rel_se": None, "contention": None}


class MeasuredCurve(_View):
    """One measured class's curve, its keys as written (docs/PROFILE_FORMAT.md "curves")."""


class Model:
    """One model of a profile: its class, segments, quality, the domain predict() uses (the written
    one, else derived from the measured class, as C++ effective_domain), curves and the raw JSON."""

    def __init__(self, raw: dict, index: int, domain: dict):
        self.collective = raw["collective"]
        self.hosts = raw["hosts"]
        self.concurrent_groups = raw["concurrent_groups"]
        self.dtype = raw["dtype"]
        self.group_sizes = list(raw["group_sizes"])
        self.effective_size = raw["effective_size"]
        self.segments = [Segment(s) for s in raw["segments"]]
        self.quality = raw["quality"]
        self.domain = domain
        self.index = index
        self.raw = raw
        self.curves = [MeasuredCurve(c) for c in raw.get("curves", [])]

    def __repr__(self):
        return (f"Model(index={self.index}, collective={self.collective!r}, hosts={self.hosts}, "
                f"concurrent_groups={self.concurrent_groups}, dtype={self.dtype!r})")


class ProfileData:
    """An accepted profile: the C++ handle (`_core`) and views of its fields and models.

    doc: the parsed document (a dict), or text: its JSON text (parsed by the C++ reader first,
    so its errors name the line)."""

    def __init__(self, doc: Optional[dict] = None, origin: str = "<profile>", text: Optional[str] = None):
        if text is None:
            try:
                text = json.dumps(doc, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ProfileError(f"{origin}: not a JSON document ({e}); a profile holds JSON values and finite "
                                   "numbers only") from None
        self.origin = origin
        self._core = _core.Profile(text, origin)
        # The document as read, not the caller's dict: a later change to that dict must not reach
        # the views or a pickled copy while the C++ prices keep the text read here.
        self._bind(json.loads(text))

    def _bind(self, doc: dict) -> None:
        self.doc = doc
        self.cluster = doc["cluster"]
        self.created = doc["created"]
        self.shardcal_version = doc["shardcal_version"]
        self.backend = doc["backend"]
        self.memory = doc["memory"]
        self.provenance = doc.get("provenance")
        self.fit_method = doc.get("fit_method")
        # Which algorithms the MPI library chooses (docs/PROFILE_FORMAT.md "extra.mpi_selector").
        sel = (doc.get("extra") or {}).get("mpi_selector")
        self.mpi_selector = None if sel is None else {"selector": sel["selector"], "forced": dict(sel.get("forced", {}))}
        # The fitted copy cost (ns per byte); None: the memory space's built-in bandwidth.
        self.local_copy_ns_per_byte = doc["local_copy"]["ns_per_byte"] if "local_copy" in doc else None
        self.models = [Model(m, i, d) for i, (m, d) in enumerate(zip(doc["models"], self._core.domains()))]

    # The C++ handle does not pickle: a pickled profile is its document, read again on load.
    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_core", None)
        state.pop("_time_fns", None)  # (their C++ price functions)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._core = _core.Profile(json.dumps(self.doc), self.origin)


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

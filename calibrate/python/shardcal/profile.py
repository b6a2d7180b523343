"""Read shardcal calibration profiles and predict collective times.

A profile (schema "shardcal.profile", version 1; docs/PROFILE_FORMAT.md) prices collectives on
link classes with the cost model of docs/CALIBRATION.md "The model" (per size segment a
backbone of linear terms, times the measured curve of the link class where the profile has one,
with a 95 % interval). The reading and every price are the C++ ones (calibrate/src: the reader,
predict(), the cost model, host transport), reached through the compiled module shardcal._core:
`shardbench predict` and this module give the same answer, bit for bit.

    import shardcal.profile as sp
    prof = sp.load("configs/profiles/dtensor-default.json")
    p = prof.predict("all_gather", group_size=8, hosts=2, nbytes=1 << 20)
    print(p.time_us, (p.lo_us, p.hi_us), p.extrapolated, p.note)
    topo = prof.mesh_topo([2, 4], ranks_per_host=4)   # DTensor MeshTopoInfo-shaped numbers

This module is the package's public face for profiles: profile_read (the C++ reader's handle
and views of the fields: Segment, Model, ProfileError), predict (Prediction, predict, time_fn,
mesh_topo, effective_bytes, ...), collectives (the collective table). It re-exports the names it
has always had.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from . import predict as _predict
from .collectives import COLLECTIVES, HAS_V_FORM, ONE_WAY, TABLE, busbw_factor, ring_steps  # re-exported
from .predict import Prediction, bandwidth_growth, effective_bytes, known_switch, table_bytes  # re-exported
from .profile_read import (DTYPE_SIZE, DTYPES, MAX_DEPTH, SCHEMA, VERSION, Model,  # re-exported
                           ProfileData, ProfileError, Segment, read_text)

__all__ = ["COLLECTIVES", "DTYPES", "DTYPE_SIZE", "HAS_V_FORM", "MAX_DEPTH", "ONE_WAY", "SCHEMA", "TABLE",
           "VERSION", "Model", "Prediction", "Profile", "ProfileError", "Segment", "bandwidth_growth",
           "busbw_factor", "effective_bytes", "known_switch", "load", "loads", "ring_steps", "table_bytes"]


class Profile(ProfileData):
    """A checked profile (ProfileData: the C++ reader's handle, its fields and models) and the
    predictions made from it (shardcal.predict, which calls the C++ predict())."""

    def choose_model(self, collective: str, group_size: int, hosts: int = 1, concurrent_groups: int = 1,
                     dtype: Optional[str] = None):
        """The nearest measured class (docs/PROFILE_FORMAT.md "Choosing a model"): (model, None)."""
        return _predict.choose_model(self, collective, group_size, hosts, concurrent_groups, dtype)

    def host_transport(self, best, hosts: int, ranks_per_host: int, concurrent_groups: int = 1,
                       group_size: Optional[int] = None):
        """The C++ host transport from the chosen model's host count to the query's, tested by a
        second measured inter-host model when there is one (predict.host_transport), or None."""
        return _predict.host_transport(self, best, hosts, ranks_per_host, concurrent_groups, group_size)

    def predict(self, collective: str, group_size: int, hosts: int = 1, ranks_per_host: Optional[int] = None,
                nbytes: float = 0.0, counts: Sequence[int] = (), elem_size: int = 1,
                dtype: Optional[str] = None, concurrent_groups: int = 1, _check_class: bool = True,
                spanned_hosts: int = 0) -> Prediction:
        """The price of one collective call with its 95 % interval and notes (predict.predict)."""
        return _predict.predict(self, collective, group_size, hosts, ranks_per_host, nbytes, counts, elem_size,
                                dtype, concurrent_groups, _check_class, spanned_hosts)

    def time_fn(self, collective: str, group_size: int, hosts: int = 1, ranks_per_host: Optional[int] = None,
                dtype: Optional[str] = None, concurrent_groups: int = 1, spanned_hosts: int = 0):
        """predict(...).time_us for one link class, collective and dtype as a function of nbytes
        alone, bit-identical to predict(..., _check_class=False) (predict.time_fn, which says how)."""
        return _predict.time_fn(self, collective, group_size, hosts, ranks_per_host, dtype, concurrent_groups,
                                spanned_hosts)

    # -- DTensor / autoparallel bridge -----------------------------------------------------
    def mesh_topo(self, mesh_shape: Sequence[int], ranks_per_host: int, collective: str = "all_gather",
                  nbytes: Optional[float] = None, dtype: Optional[str] = None) -> dict:
        """Per-mesh-dim numbers in the shape of PyTorch DTensor's MeshTopoInfo (predict.mesh_topo,
        which lists them)."""
        return _predict.mesh_topo(self, mesh_shape, ranks_per_host, collective, nbytes, dtype)


def loads(text: str, origin: str = "<string>") -> Profile:
    return Profile(None, origin, text)


def load(path: str) -> Profile:
    return loads(read_text(path), path)


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

"""What every shardcal file format shares, for Python readers and scripts.

formats.json next to this file is a copy of formats/formats.json (the test reports.formats_sync
keeps the two equal; the C++ unit test FormatsTable checks formats/include/shardcal/formats/
against it): the schema names and versions of the files shardbench writes, and the link-class rule
as data, which concurrent_groups() evaluates instead of restating. The link class of a mesh dim
follows calibrate/src/step_cost.cpp (group_link_class, mesh_dim_link_class), checked number for
number by tests/calibrate/parity_test.py. write_text_atomic() is how scripts write their outputs.
"""
import json
import math
import os
import tempfile
from typing import Any, Optional, Sequence

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "formats.json"), encoding="utf-8") as _f:
    FORMATS = json.load(_f)


def schema(kind: str) -> tuple:
    """(schema name, version) of a format: "results", "profile", "gate", "validate", ..."""
    s = FORMATS["schemas"][kind]
    return s["schema"], s["version"]


def identity_problem(doc: Any, kind: str) -> Optional[str]:
    """Why `doc` (a parsed file or record) is not of format `kind` by its "schema" and "version",
    or None when it is."""
    name, version = schema(kind)
    got = doc.get("schema") if isinstance(doc, dict) else None
    if got != name:
        return f"not a {name} file (schema {got!r})"
    if doc.get("version") != version:
        return f"{name} version {doc.get('version')!r}; this reader takes version {version}"
    return None


_LINK_RULE = FORMATS["link_class"]["concurrent_groups"]["definition"]
_ROUNDING = {"half_away_from_zero": lambda x: int(math.copysign(math.floor(abs(x) + 0.5), x))}


def concurrent_groups(groups: int, hosts_spanned: int, n_hosts: int) -> int:
    """Groups of one mesh dim at once on one host, by formats.json's link-class definition."""
    inputs = {"groups": groups, "hosts_spanned": hosts_spanned, "n_hosts": n_hosts}
    value = math.prod(inputs[k] for k in _LINK_RULE["product_of"]) / max(
        _LINK_RULE["divisor_at_least"], inputs[_LINK_RULE["divided_by"]])
    return max(_LINK_RULE["at_least"], _ROUNDING[_LINK_RULE["rounding"]](value))


def group_link_class(group_size: int, hosts_spanned: int, concurrent: int) -> dict:
    """A group's link class: a group whose ranks do not split evenly over the hosts it spans
    counts as one rank per host (the C++ group_link_class); "spanned_hosts" keeps the hosts it
    spans, for the host links' floor (LinkClass::spanned_hosts)."""
    hosts = hosts_spanned if group_size % hosts_spanned == 0 else group_size
    return {"group_size": group_size, "hosts": hosts, "ranks_per_host": group_size // hosts,
            "concurrent_groups": concurrent, "spanned_hosts": hosts_spanned}


def groups_link_class(groups: Sequence[Sequence[int]], ranks_per_host: int) -> dict:
    """The link class of the groups of one mesh dim, given as lists of global ranks with host =
    rank // ranks_per_host: the most hosts any group spans, and the groups at once on one host
    by the rule over the hosts all groups cover."""
    hosts_spanned = max(len({r // ranks_per_host for r in g}) for g in groups)
    n_hosts = len({r // ranks_per_host for g in groups for r in g})
    return group_link_class(len(groups[0]), hosts_spanned,
                            concurrent_groups(len(groups), hosts_spanned, n_hosts))


def mesh_dim_groups(shape: Sequence[int], dim: int) -> list:
    """The groups of mesh dim `dim` of a mesh with row-major ranks, as lists of ranks."""
    stride = math.prod(shape[dim + 1:])
    n = shape[dim]
    return [[hi + lo + k * stride for k in range(n)]
            for hi in range(0, math.prod(shape), n * stride) for lo in range(stride)]


def mesh_dim_link_class(shape: Sequence[int], dim: int, ranks_per_host: int) -> dict:
    """The link class of mesh dim `dim` (row-major ranks, host = rank // ranks_per_host), as
    `shardbench plan` prices it."""
    return groups_link_class(mesh_dim_groups(shape, dim), ranks_per_host)


def write_text_atomic(path: str, text: str) -> None:
    """Writes `text` to `path` through a temporary file in the same directory, renamed into place:
    readers never see a half-written file, and a failure leaves no temporary file behind."""
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        # mkstemp makes the file 0600; give it what open() would have (0666 less the umask).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise

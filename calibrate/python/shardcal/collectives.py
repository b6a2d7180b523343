"""The collective table, as data: collectives.json next to this file is what
`shardbench info --collectives --json` prints for core/src/collectives.cpp (the test
cli.collectives_table keeps the two equal), so a new collective reaches Python without editing
code. Its own module so that the package's modules read it without importing each other
(shardcal.profile re-exports every name here).
"""

from __future__ import annotations

import json
import os


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

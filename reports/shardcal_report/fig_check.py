"""Figure of `shardbench check --json C.json` (docs/CHECK.md): per class (collective, group size,
hosts, concurrency), the job's calls over the profile's price and its 95 % interval.

Reads only the check file: it holds, per class, every point's calls (µs) and the profile's price,
lo and hi at that size (`point_calls`), so the curve here is the profile's own prediction at the
measured sizes (no model re-implemented)."""
from __future__ import annotations

import json

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from . import style
from .fig_sweep import Figure
from .style import plt

VERDICT_COLOR = {"slower": "tab:red", "faster": "tab:blue", "within": "tab:green",
                 "no slower than (one-sided)": "tab:green"}


def load_check(path: str) -> dict:
    with open(path) as f:
        doc = json.load(f)
    if doc.get("schema") != "shardcal.check":
        raise ValueError(f"{path}: not a shardbench check file (schema {doc.get('schema')!r})")
    return doc


def class_label(c: dict) -> str:
    return (f"{c['collective']} n={c['group_size']} hosts={c['hosts']} "
            f"concurrency={c['concurrent_groups']}")


def check_figure(doc: dict, where: str, outdir: str, name: str = "check.png"):
    classes = [c for c in doc["classes"] if c.get("point_calls")]
    if not classes:
        return None
    fig, axes = style.grid(len(classes), max_cols=3, w=5.2, h=4.0)
    for ax, c in zip(axes, classes):
        pts = sorted(c["point_calls"], key=lambda p: p["bytes"])
        xs = np.array([p["bytes"] for p in pts], dtype=float)
        ax.fill_between(xs, [p["lo_us"] for p in pts], [p["hi_us"] for p in pts], color="0.85",
                        step=None, label="profile 95 % interval")
        ax.plot(xs, [p["priced_us"] for p in pts], color="k", lw=1.2, label="profile price")
        for p in pts:
            ys = p["samples_us"]
            ax.scatter([p["bytes"]] * len(ys), ys, s=10, alpha=0.6,
                       marker="v" if p["one_sided"] else "o",
                       color=VERDICT_COLOR.get(c["verdict"], "0.4"))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        if len(xs):
            style.bytes_axis(ax, float(xs.min()), float(xs.max()))
        ax.set_xlabel("S (bytes, the collective table's)")
        ax.set_ylabel("time per call (µs, log)")
        ax.set_title(f"{class_label(c)}\n{c['verdict']}: median {c['median_ratio']:.2f}x, "
                     f"{c['share_above'] * 100:.0f} % above", fontsize=9)
    hs = [Patch(color="0.85"), Line2D([], [], color="k"),
          Line2D([], [], marker="o", ls="", color="0.4"), Line2D([], [], marker="v", ls="", color="0.4")]
    style.legend_below(fig, hs, ["profile's 95 % interval", "profile's price", "call (all ranks: min)",
                                 "call (upper bound: fewer ranks)"], ncol=4)
    fig.suptitle(f"Check against profile {doc['profile'].get('cluster', '?')}: {doc['verdict'].upper()} "
                 f"(exit {doc['exit']}) — {where}")
    style.save(fig, f"{outdir}/{name}")
    return Figure(name, "check: calls vs the profile",
                  "Per class (collective, group size, hosts a group spans, groups at once on a host): "
                  "every call of the checked results (one dot per call; triangles are upper bounds, a "
                  "rank's kernel that includes its wait for the others) over the profile's price (black) "
                  "and its 95 % prediction interval (grey) at the measured sizes; the dots' colour is "
                  f"the class's verdict (red slower, green within, blue faster). {where}.")

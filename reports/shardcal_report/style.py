"""Shared plotting helpers: byte-size axes, colours, saving."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator  # noqa: E402

DPI = 100
COLORS = plt.get_cmap("tab10").colors
plt.rcParams.update({
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "figure.titlesize": 12,
    "axes.grid": True,
    "grid.alpha": 0.3,
})


def fmt_bytes(x: float) -> str:
    if x <= 0:
        return "0"
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if x >= (1 << k):
            v = x / (1 << k)
            return f"{v:.0f} {unit}" if abs(v - round(v)) < 1e-9 else f"{v:.3g} {unit}"
    return f"{x:.0f} B" if abs(x - round(x)) < 1e-9 else f"{x:.3g} B"


def fmt_us(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.3g} s"
    if x >= 1e3:
        return f"{x / 1e3:.3g} ms"
    return f"{x:.3g} µs"


def bytes_axis(ax, lo: float, hi: float, axis: str = "x", max_labels: int = 7) -> None:
    """Log2 byte axis with labels like 8 B, 1 KiB, 4 MiB, thinned so labels never overlap."""
    lo = max(lo, 1.0)
    hi = max(hi, lo * 2)
    e0, e1 = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    step = max(1, math.ceil((e1 - e0 + 1) / max_labels))
    if step > 1 and step % 2:
        step += 1  # even steps keep labels on powers of 4: 1 KiB, 4 KiB, ...
    start = e0 - (e0 % step)
    ticks = [2.0 ** e for e in range(start, e1 + 1, step) if lo / 2 <= 2.0 ** e <= hi * 2]
    if axis == "x":
        ax.set_xscale("log", base=2)
        a = ax.xaxis
        ax.set_xlim(lo / 1.4, hi * 1.4)
    else:
        ax.set_yscale("log", base=2)
        a = ax.yaxis
        ax.set_ylim(lo / 1.4, hi * 1.4)
    a.set_major_locator(FixedLocator(ticks))
    a.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_bytes(v)))
    a.set_minor_locator(NullLocator())
    a.set_minor_formatter(NullFormatter())


def save(fig, path: str) -> None:
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)


def grid(n: int, max_cols: int = 3, w: float = 5.0, h: float = 3.8, sharey: bool = False):
    cols = min(n, max_cols)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(w * cols, h * rows), squeeze=False, sharey=sharey,
                             layout="constrained")
    flat = [a for row in axes for a in row]
    for a in flat[n:]:
        a.set_visible(False)
    return fig, flat[:n]


def legend_below(fig, handles, labels, ncol: int = 4) -> None:
    """One legend for the whole figure, below the panels (never over data)."""
    if handles:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(ncol, len(labels)),
                   frameon=False)

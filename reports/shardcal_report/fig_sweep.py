"""Figures from sweep results (and the fitted profile when given): bus bandwidth vs size per
collective and mesh dim with the model drawn over the points, relative residuals per model
segment, even vs uneven shards on the chosen effective size, transition cost heatmaps."""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional

import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.lines import Line2D

import shardcal.profile as sp

from . import style
from .style import plt


@dataclass
class Figure:
    file: str
    title: str
    caption: str


RULE_NAMES = {"total": "total (sum of shards)", "n_times_max": "n × largest shard"}


def _class_label(p: dict) -> str:
    return (f"n={p['group_size']}, {p['hosts_spanned']} host{'s' if p['hosts_spanned'] != 1 else ''}, "
            f"{p['conc']} group{'s' if p['conc'] != 1 else ''} at once per host")


def _predict(prof, op: str, p: dict, nbytes: float = 0.0, counts=()):
    """Profile prediction for a point's link class (None when the profile has no model)."""
    n, hosts = p["group_size"], p["hosts_spanned"]
    rph = n // hosts if n % hosts == 0 else max(1, n // hosts)
    try:
        return prof.predict(op, n, hosts=hosts, ranks_per_host=rph, nbytes=nbytes, counts=counts,
                            elem_size=p["elem_size"], dtype=p["dtype"], concurrent_groups=p["conc"],
                            _check_class=(n % hosts == 0))
    except sp.ProfileError:
        return None


def _broken(xs, preds, ys):
    """x, y arrays with a gap (NaN) wherever the model segment changes: a piecewise model is drawn
    as separate pieces, not joined by a vertical jump."""
    ox, oy = [], []
    for i, (x, pr, y) in enumerate(zip(xs, preds, ys)):
        if i and pr.segment != preds[i - 1].segment:
            ox.append(np.nan)
            oy.append(np.nan)
        ox.append(x)
        oy.append(y)
    return np.array(ox), np.array(oy)


def _ordered(items, key):
    out = OrderedDict()
    for it in items:
        out.setdefault(key(it), []).append(it)
    return out


# -- bus bandwidth vs size ------------------------------------------------------------------------
MODE_MARKER = {"per_iteration": ("o", "full"), "pipelined": ("s", "none")}


def busbw_figures(run, prof, where: str, prefix: str, outdir: str) -> list:
    figs = []
    even = [p for p in run.collectives if p["distribution"] == "even" and p["bytes"] > 0]
    multi_dtype = len({p["dtype"] for p in even}) > 1
    for (op, dtype), pts in _ordered(even, lambda p: (p["op"], p["dtype"])).items():
        # One panel per link class (group size, hosts a group spans, groups at once per host): what a
        # model covers. Colour: the mesh dims of that class (legend in the panel); marker: timing mode.
        panels = _ordered(pts, lambda p: (p["group_size"], p["hosts_spanned"], p["conc"]))
        fig, axes = style.grid(len(panels), max_cols=3, w=5.2, h=3.9)
        handles = OrderedDict()
        lo = min(p["bytes"] for p in pts)
        hi = max(p["bytes"] for p in pts)
        for ax, ppts in zip(axes, panels.values()):
            dims = list(_ordered(ppts, lambda p: (p["mesh"], p["mesh_dim"])))
            dim_handles = OrderedDict()
            for key, sp_ in _ordered(ppts, lambda p: (p["mesh"], p["mesh_dim"], p["mode"])).items():
                mesh, dim, mode = key
                color = style.COLORS[dims.index((mesh, dim)) % 10]
                marker, fill = MODE_MARKER.get(mode, ("^", "full"))
                sp_.sort(key=lambda p: p["bytes"])
                x = np.array([p["bytes"] for p in sp_])
                f = np.array([p["busbw_factor"] for p in sp_])
                t = np.array([p["p50_s"] for p in sp_])
                tlo = np.array([p["ci_lo_s"] for p in sp_])
                thi = np.array([p["ci_hi_s"] for p in sp_])
                y = x * f / t / 1e9
                ylo = x * f / thi / 1e9
                yhi = x * f / tlo / 1e9
                ax.errorbar(x, y, yerr=[np.maximum(y - ylo, 0), np.maximum(yhi - y, 0)], fmt=marker, ms=4.5,
                            fillstyle=fill, capsize=2.5, color=color, lw=1, alpha=0.9)
                dim_handles.setdefault(f"mesh {mesh} dim {dim}", Line2D([], [], marker="o", ls="", color=color))
                handles.setdefault(f"median, 95% CI: {mode.replace('_', '-')}",
                                   Line2D([], [], marker=marker, fillstyle=fill, ls="", color="0.3"))
            if len(dim_handles) <= 8:
                ax.legend(list(dim_handles.values()), list(dim_handles.keys()), loc="lower right", fontsize=7,
                          framealpha=0.8, handletextpad=0.2, borderpad=0.3)
            else:
                ax.text(0.98, 0.02, f"{len(dim_handles)} mesh dims", transform=ax.transAxes, ha="right",
                        fontsize=7)
            if prof is not None:
                p0 = ppts[0]
                xs = np.geomspace(max(lo, 1.0), hi, 160)
                preds = [_predict(prof, op, p0, nbytes=float(s)) for s in xs]
                if all(pr is not None for pr in preds):
                    f0 = p0["busbw_factor"]
                    yb = np.array([s * f0 / (pr.time_us * 1e3) for s, pr in zip(xs, preds)])
                    extrap = preds[-1].extrapolated
                    lab = "fitted model" + (" (extrapolated: nearest class)" if extrap else "")
                    (h,) = ax.plot(*_broken(xs, preds, yb), "-" if not extrap else "--", color="k", lw=1.3,
                                   label=lab, zorder=3)
                    handles.setdefault(lab, h)
                    # The prediction's 95 % interval (docs/CALIBRATION.md "Prediction intervals"):
                    # a slower time is a lower bandwidth, so hi_us gives the band's lower edge.
                    ylo = np.array([s * f0 / (pr.hi_us * 1e3) if pr.hi_us > 0 else np.nan for s, pr in zip(xs, preds)])
                    yhi = np.array([s * f0 / (pr.lo_us * 1e3) if pr.lo_us > 0 else np.nan for s, pr in zip(xs, preds)])
                    h = ax.fill_between(xs, ylo, yhi, color="0.6", alpha=0.25, lw=0, zorder=1,
                                        label="model's 95% prediction interval")
                    handles.setdefault("model's 95% prediction interval", h)
                    m = preds[-1].model
                    for seg in m.segments[:-1]:
                        if lo <= seg.s_hi <= hi:
                            h = ax.axvline(seg.s_hi, color="0.4", ls=":", lw=1, label="model segment boundary")
                            handles.setdefault("model segment boundary", h)
                else:
                    ax.text(0.02, 0.96, f"no {op} model in the profile", transform=ax.transAxes, va="top",
                            fontsize=8, color="0.3")
            style.bytes_axis(ax, lo, hi)
            ax.set_yscale("log")
            ax.set_xlabel("message size S (bytes, collective-table convention)")
            ax.set_ylabel("bus bandwidth (GB/s)")
            ax.set_title(_class_label(ppts[0]))
        dt = f", {dtype}" if multi_dtype else ""
        fig.suptitle(f"{op}{dt}: bus bandwidth vs message size, even shards — {where}")
        style.legend_below(fig, list(handles.values()), list(handles.keys()), ncol=4)
        name = f"{prefix}busbw_{op}{'_' + dtype if multi_dtype else ''}.png"
        style.save(fig, f"{outdir}/{name}")
        model_txt = ("the black line is the fitted profile's prediction (dashed: extrapolated from the nearest "
                     "measured class), the grey band its 95% prediction interval, dotted verticals its "
                     "size-segment boundaries"
                     if prof is not None else "no profile given, so no model curve")
        figs.append(Figure(name, f"{op}{dt}: bus bandwidth vs size",
                           f"Bus bandwidth (GB/s, log) of {op} against message size (log2 bytes), one panel per "
                           f"link class (group size n, hosts a group spans, groups of the dim running at once on "
                           f"a host), one colour per mesh dim of that class (legend in the panel), marker = timing "
                           f"mode. Points: median of the slowest-rank samples; error bars: the median's 95% CI; "
                           f"{model_txt}. {where}."))
    return figs


# -- relative residuals per model segment -----------------------------------------------------------
def residual_figure(run, prof, where: str, prefix: str, outdir: str) -> Optional[Figure]:
    by_model = OrderedDict()
    # The mode the profile's models describe (imported nccl-tests logs are pipelined).
    mode = (getattr(prof, "fit_method", None) or {}).get("timing_mode", "per_iteration")
    for p in run.collectives:
        if p["distribution"] != "even" or p["mode"] != mode or p["bytes"] <= 0:
            continue
        pr = _predict(prof, p["op"], p, nbytes=p["bytes"])
        if pr is None:
            continue
        meas = p["p50_s"] * 1e6
        by_model.setdefault(pr.model.index, (pr.model, []))[1].append(
            (pr.s_eff, (pr.time_us - meas) / meas * 100.0, pr.segment, pr.extrapolated))
    if not by_model:
        return None
    items = sorted(by_model.values(), key=lambda mv: (sp.COLLECTIVES.index(mv[0].collective), mv[0].index))
    fig, axes = style.grid(len(items), max_cols=4, w=4.3, h=3.3)
    handles = OrderedDict()
    for ax, (m, pts) in zip(axes, items):
        x = np.array([q[0] for q in pts])
        y = np.array([q[1] for q in pts])
        lo, hi = max(1.0, x.min()), max(2.0, x.max())
        for seg in sorted({q[2] for q in pts}):
            sel = np.array([q[2] == seg for q in pts])
            ext = np.array([q[3] for q in pts])
            c = style.COLORS[seg % 10]
            lab = f"segment {seg}"
            h = ax.scatter(x[sel & ~ext], y[sel & ~ext], s=16, color=c, label=lab, zorder=3)
            handles.setdefault(lab, h)
            if (sel & ext).any():
                lab = "priced by a nearest-class model (extrapolated)"
                h = ax.scatter(x[sel & ext], y[sel & ext], s=16, facecolors="none", edgecolors=c, label=lab,
                               zorder=3)
                handles.setdefault(lab, h)
        for seg in m.segments[:-1]:
            if lo / 2 <= seg.s_hi <= hi * 2:
                h = ax.axvline(seg.s_hi, color="0.4", ls=":", lw=1)
                handles.setdefault("segment boundary", h)
        ax.axhline(0, color="k", lw=0.8)
        # The points are priced by the model predict uses (backbone x measured curve): its
        # in-sample error is theirs, its held-out error leave_size_out_mape; the backbone's
        # k-fold holdout (holdout_mape) is another model's, named as such.
        q = m.quality or {}
        hm = q.get("leave_size_out_mape")
        if hm is not None:
            band = ax.axhspan(-hm * 100, hm * 100, color="0.85", zorder=0)
            handles.setdefault("± holdout MAPE (each size left out)", band)
        txt = f"MAPE {float(np.mean(np.abs(y))):.0f}%"
        txt += f", holdout {hm * 100:.0f}%" if hm is not None else ", holdout n/a"
        bb = q.get("holdout_mape")
        txt += f"; backbone alone: holdout {bb * 100:.0f}%" if bb is not None else ""
        style.bytes_axis(ax, lo, hi, max_labels=5)
        # (pred - meas) / meas >= -100%; above, clip at +300% and mark clipped points at the edge.
        ymax = min(max(10.0, float(np.max(np.abs(y))) * 1.15), 300.0)
        ax.set_ylim(max(-ymax, -108.0), ymax)
        over = y > ymax
        if over.any():
            h = ax.scatter(x[over], np.full(over.sum(), ymax * 0.97), marker="^", s=30, color="tab:red",
                           zorder=4, clip_on=False)
            handles.setdefault(f"beyond the axis (> +{ymax:.0f}%)", h)
        ax.set_xlabel("effective size S_eff (bytes)")
        ax.set_ylabel("(pred − meas) / meas (%)")
        n = "/".join(str(g) for g in m.group_sizes) or "any"
        ax.set_title(f"{m.collective}: n={n}, {m.hosts} host{'s' if m.hosts != 1 else ''}, "
                     f"{m.concurrent_groups} group{'s' if m.concurrent_groups != 1 else ''} at once\n{txt}",
                     fontsize=9)
    fig.suptitle(f"Relative residuals of the profile's prices per size segment (even shards) — {where}")
    order = sorted(handles, key=lambda k: (not k.startswith("segment "), k))
    style.legend_below(fig, [handles[k] for k in order], order, ncol=4)
    name = f"{prefix}residuals.png"
    style.save(fig, f"{outdir}/{name}")
    return Figure(name, "model residuals per segment",
                  "Relative error of the profile's prediction (what shardbench predict prices: the backbone times "
                  "the measured curve), (predicted − measured) / measured in %, for every even-shard point of the "
                  "profile's timing mode, one panel per fitted model (collective × link class); colour = the size "
                  "segment that priced the point, dotted verticals = segment boundaries. Panel titles: MAPE of these "
                  "points (in sample), holdout = the same model's error with each measured size left out in turn "
                  "(grey band = ± it), and the backbone's k-fold holdout without the measured curves. "
                  f"{where}.")


# -- even vs uneven shards on the effective size ------------------------------------------------------
def uneven_figure(run, prof, where: str, prefix: str, outdir: str) -> Optional[Figure]:
    rows = []
    for op in sp.COLLECTIVES:
        if op not in sp.HAS_V_FORM:
            continue
        pts = [p for p in run.collectives if p["op"] == op and p["mode"] == "per_iteration" and p["bytes"] > 0]
        classes = _ordered([p for p in pts if p["uneven"]], lambda p: (p["mesh"], p["mesh_dim"]))
        if not classes:
            continue
        # The class with the largest group (the most uneven shapes), first on ties.
        (mesh, dim), _ = max(classes.items(), key=lambda kv: kv[1][0]["group_size"])
        cls = [p for p in pts if p["mesh"] == mesh and p["mesh_dim"] == dim]
        chosen = None
        if prof is not None:
            pr = _predict(prof, op, cls[0], nbytes=1.0)
            chosen = pr.model.effective_size if pr is not None else None
        rows.append((op, cls, chosen))
    if not rows:
        return None
    fig, axes2 = plt.subplots(len(rows), 2, figsize=(11, 3.4 * len(rows)), squeeze=False, layout="constrained")
    handles = OrderedDict()
    dists = OrderedDict()
    for _, cls, _ in rows:
        for p in cls:
            if p["distribution"] != "even":
                dists.setdefault(p["distribution"], len(dists))
    for (op, cls, chosen), axes in zip(rows, axes2):
        rules = ["total", "n_times_max"]
        if chosen == "n_times_max":
            rules.reverse()
        for ax, rule in zip(axes, rules):
            xs_all = []
            groups = _ordered(cls, lambda p: p["distribution"])
            for dist, dp in groups.items():
                x = np.array([sp.effective_bytes(op, rule, 0, p["counts"], p["elem_size"], p["group_size"]) for p in dp])
                y = np.array([p["p50_s"] * 1e6 for p in dp])
                ok = x > 0
                x, y = x[ok], y[ok]
                if not len(x):
                    continue
                xs_all.extend(x)
                order = np.argsort(x)
                if dist == "even":
                    lab = "even shards"
                    (h,) = ax.plot(x[order], y[order], "o-", color="k", ms=4, lw=1, label=lab, zorder=2)
                else:
                    lab = f"uneven: {dist}"
                    h = ax.scatter(x, y, s=22, color=style.COLORS[(dists[dist] + 1) % 10], marker="s",
                                   label=lab, zorder=3)
                handles.setdefault(lab, h)
            if not xs_all:
                continue
            mape_txt = ""
            lo, hi = min(xs_all), max(xs_all)
            if prof is not None and chosen is not None:
                xs = np.geomspace(max(1.0, lo), max(hi, 2.0), 120)
                preds = [_predict(prof, op, cls[0], nbytes=float(s)) for s in xs]
                if all(pr is not None for pr in preds):
                    (h,) = ax.plot(*_broken(xs, preds, [pr.time_us for pr in preds]), "--", color="tab:red", lw=1.2,
                                   label="fitted model (even shards)", zorder=1)
                    handles.setdefault("fitted model (even shards)", h)
                    errs = []
                    for p in cls:
                        if not p["uneven"]:
                            continue
                        s_eff = sp.effective_bytes(op, rule, 0, p["counts"], p["elem_size"], p["group_size"])
                        pr = _predict(prof, op, p, nbytes=s_eff)
                        if pr is not None and s_eff > 0:
                            errs.append(abs(pr.time_us - p["p50_s"] * 1e6) / (p["p50_s"] * 1e6))
                    if errs:
                        mape_txt = f"\nuneven points priced by the model on this S_eff: MAPE {np.mean(errs) * 100:.0f}%"
            style.bytes_axis(ax, lo, hi, max_labels=6)
            ax.set_yscale("log")
            ax.set_xlabel(f"S_eff = {RULE_NAMES[rule]} (bytes)")
            ax.set_ylabel("median time (µs)")
            tag = ("chosen by the fit" if rule == chosen else "not chosen") if chosen else "no profile"
            ax.set_title(f"{op}, mesh {cls[0]['mesh']} dim {cls[0]['mesh_dim']} (n={cls[0]['group_size']}): "
                         f"{RULE_NAMES[rule]} — {tag}{mape_txt}", fontsize=9)
    fig.suptitle(f"Even vs uneven shards on the effective size S_eff — {where}")
    style.legend_below(fig, list(handles.values()), list(handles.keys()), ncol=4)
    name = f"{prefix}uneven.png"
    style.save(fig, f"{outdir}/{name}")
    return Figure(name, "even vs uneven shards",
                  "Median time (µs, log) of the v-form collectives against the effective size S_eff (log2 bytes) "
                  "under the two rules of docs/PROFILE_FORMAT.md: left the rule the fit chose, right the other one. "
                  "When a rule is right, uneven shards (squares) fall on the even-shard curve (black) and the "
                  "fitted model (dashed red) prices them well (MAPE in the corner, this link class only). One link "
                  f"class per collective: the largest group measured with uneven shards. {where}.")


# -- transition cost heatmaps ---------------------------------------------------------------------
def _common_size(pts) -> float:
    """The size measured for the most (from, to) pairs; larger on ties."""
    have = {}
    for p in pts:
        have.setdefault(p["size"], set()).add((p["from"], p["to"]))
    return max(have, key=lambda s: (len(have[s]), s))


def transition_figures(run, where: str, prefix: str, outdir: str) -> list:
    """One heatmap figure per shard distribution (and dtype, when there are several); a panel per mesh."""
    pts = [p for p in run.transitions if p["mode"] == "per_iteration"] or run.transitions
    multi_dtype = len({p["dtype"] for p in pts}) > 1
    figs = []
    for (dist, dtype), dp in _ordered(pts, lambda p: (p["distribution"], p["dtype"])).items():
        safe = "".join(c if c.isalnum() else "-" for c in dist).strip("-")
        name = f"{prefix}transitions_{safe}{'_' + dtype if multi_dtype else ''}.png"
        figs.append(_transition_figure(dp, dist, where, name, outdir))
    return figs


def _transition_figure(pts, dist: str, where: str, name: str, outdir: str) -> Figure:
    panels = _ordered(pts, lambda p: (p["mesh"], p["dtype"]))
    cells = []
    for (mesh, dtype), pp in panels.items():
        size = _common_size(pp)
        sel = {(p["from"], p["to"]): p for p in pp if p["size"] == size}
        froms = list(OrderedDict.fromkeys(p["from"] for p in pp))
        tos = list(OrderedDict.fromkeys(p["to"] for p in pp))
        m = np.full((len(froms), len(tos)), np.nan)
        for (f, t), p in sel.items():
            m[froms.index(f), tos.index(t)] = p["p50_s"] * 1e6
        cells.append(((mesh, dtype), size, froms, tos, m))
    vals = np.concatenate([c[4][~np.isnan(c[4])] for c in cells])
    norm = LogNorm(vmin=max(vals.min(), 1e-3), vmax=max(vals.max(), vals.min() * 1.01))
    n = len(cells)
    wmax = max(len(c[3]) for c in cells)
    hmax = max(len(c[2]) for c in cells)
    cols = min(n, 2 if wmax <= 10 else 1)
    rows = math.ceil(n / cols)
    cell_w, fs = (1.25, 8) if wmax <= 6 else (0.95, 7)
    fig, axes = plt.subplots(rows, cols, figsize=(cols * (2.4 + cell_w * wmax), rows * (1.9 + 0.55 * hmax)),
                             squeeze=False, layout="constrained")
    flat = [a for r in axes for a in r]
    for a in flat[n:]:
        a.set_visible(False)
    im = None
    cmap = plt.get_cmap("viridis").copy()
    cmap.set_bad("0.92")
    for ax, ((mesh, dtype), size, froms, tos, m) in zip(flat, cells):
        im = ax.imshow(np.ma.masked_invalid(m), cmap=cmap, norm=norm, aspect="auto")
        ax.set_xticks(range(len(tos)), tos, fontsize=fs + 1, rotation=0 if wmax <= 6 else 30,
                      ha="center" if wmax <= 6 else "right")
        ax.set_yticks(range(len(froms)), froms, fontsize=fs + 1)
        ax.grid(False)
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                v = m[i, j]
                if np.isnan(v):
                    ax.text(j, i, "–", ha="center", va="center", fontsize=fs, color="0.5")
                else:
                    ax.text(j, i, style.fmt_us(v), ha="center", va="center", fontsize=fs,
                            color="white" if norm(v) < 0.6 else "black")
        ax.set_xlabel("to (target placement)")
        ax.set_ylabel("from (source placement)")
        ax.set_title(f"mesh {mesh}, {dtype}, {style.fmt_bytes(size)} tensor", fontsize=9)
    cb = fig.colorbar(im, ax=flat[:n], shrink=0.9, pad=0.02)
    cb.set_label("median time (µs, log colour)")
    fig.suptitle(f"Transition cost (from × to), median time, {dist} shards — {where}")
    style.save(fig, f"{outdir}/{name}")
    return Figure(name, f"transition cost heatmap ({dist} shards)",
                  "Median time of each measured placement transition (row: source placement, column: target), "
                  f"shards split '{dist}', one panel per mesh shape, at the tensor size measured for most pairs "
                  f"(in the panel title); '–' = pair not measured at that size. {where}.")

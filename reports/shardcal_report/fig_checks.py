"""Figures from `shardbench validate` (predicted vs measured plan times, the planner's regret) and
`shardbench gate` (worst points baseline vs candidate, model parameters)."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from . import style
from .fig_sweep import Figure
from .style import plt

ROLE_STYLE = {"chosen": ("tab:blue", "o"), "greedy": ("tab:orange", "s"), "alternative": ("0.55", "^")}
VERDICT_COLOR = {"regression": "tab:red", "improvement": "tab:green", "pass": "tab:blue",
                 "inconclusive": "tab:orange"}
MAX_ROWS = 20


def _ratio_ticks(axis, left: float, right: float) -> None:
    """Readable ticks on a log ratio axis: 0.5, 0.8, 1, 1.25, 2, ... within [left, right]."""
    span = right / left
    if span > 8:
        cands = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100)
    elif span > 2.2:
        cands = (0.25, 0.5, 0.8, 1, 1.25, 2, 4)
    else:
        cands = (0.5, 0.67, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2)
    ticks = [t for t in cands if left <= t <= right]
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def _model_label(m: dict) -> str:
    link = str(m.get("link") or "").replace("concurrent_groups=", "groups=").replace(" dtype=pooled", "")
    seg = f" seg {m['segment']}" if m.get("segment") not in (None, "") else ""
    if m.get("at"):  # a priced time: its class and worst size
        seg = " " + m["at"]
    param = {"bandwidth_GBps": "bandwidth", "alpha_us": "α", "time_us": "time"}.get(m["param"], m["param"])
    return f"{param}: {m.get('collective', '')} {link}{seg}"


def percentile(xs, q: float) -> float:
    """numpy's default (linear) percentile."""
    return float(np.percentile(np.asarray(xs, dtype=float), q))


def _short(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def transition_label(t: dict) -> str:
    shape = f" {t['shape']}" if t.get("shape") else ""
    return f"{t['mesh']}: {t['from']} → {t['to']}{shape}"


def validate_figure(v, where: str, outdir: str) -> Figure:
    fig = plt.figure(figsize=(17, 0.9 + max(4.6, 0.32 * min(MAX_ROWS, len(v.transitions)) + 1.2)),
                     layout="constrained")
    gs = fig.add_gridspec(1, 3, width_ratios=[1.1, 1, 0.8])
    ax = fig.add_subplot(gs[0])
    handles = OrderedDict()
    allv = []
    unpriced = 0
    for t in v.transitions:
        for p in t["plans"]:
            if p["predicted_us"] is None:
                unpriced += 1
                continue
            role = "chosen" if "chosen" in p["roles"] else ("greedy" if "greedy" in p["roles"] else "alternative")
            c, mk = ROLE_STYLE[role]
            lab = {"chosen": "cost planner's choice", "greedy": "greedy plan",
                   "alternative": "alternative plan"}[role]
            if "chosen" in p["roles"] and "greedy" in p["roles"]:
                lab = "chosen = greedy"
                c, mk = "tab:purple", "D"
            y = p["median_us"]
            lo = p["ci_lo_us"] if p["ci_lo_us"] is not None else y
            hi = p["ci_hi_us"] if p["ci_hi_us"] is not None else y
            x = max(p["predicted_us"], 1e-3)
            h = ax.errorbar([x], [y], yerr=[[max(y - lo, 0)], [max(hi - y, 0)]], fmt=mk, color=c, ms=5,
                            capsize=2, lw=1, label=lab, alpha=0.85)
            handles.setdefault(lab, h)
            allv += [x, y]
    if not allv:  # every plan priced +inf: nothing to place on the predicted axis
        allv = [t["plans"][0]["median_us"] for t in v.transitions]
        ax.text(0.5, 0.5, "no plan has a finite predicted time", transform=ax.transAxes, ha="center")
    lo, hi = min(allv) / 1.5, max(allv) * 1.5
    xs = np.array([lo, hi])
    (h,) = ax.plot(xs, xs, "k-", lw=1, label="predicted = measured")
    handles.setdefault("predicted = measured", h)
    ax.fill_between(xs, xs / 1.25, xs * 1.25, color="0.88", zorder=0)
    handles.setdefault("± 25%", plt.Rectangle((0, 0), 1, 1, color="0.88"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    ax.set_xlabel("predicted time (µs, profile)")
    ax.set_ylabel("measured median time (µs), 95% CI")
    errs = [abs(p["predicted_us"] - p["median_us"]) / p["median_us"] for t in v.transitions for p in t["plans"]
            if p["predicted_us"] is not None]
    mape = v.summary["mape"] if v.summary and v.summary.get("mape") is not None else (
        float(np.mean(errs)) if errs else None)
    ax.set_title("Plans: predicted vs measured" + (f" (MAPE {mape * 100:.0f}%)" if mape is not None else "")
                 + (f"\n{unpriced} plan(s) without a finite prediction not drawn" if unpriced else ""))
    ax.legend(list(handles.values()), list(handles.keys()), loc="upper left", bbox_to_anchor=(0.0, -0.13),
              ncol=2, frameon=False)

    # Regret and greedy speed-up per transition, worst regret first.
    ts = sorted(v.transitions, key=lambda t: -(t["regret"] or 0))[:MAX_ROWS]
    labels = [_short(transition_label(t)) for t in ts]
    yy = np.arange(len(ts))[::-1]
    ax2 = fig.add_subplot(gs[1])
    reg = np.array([t["regret"] if t["regret"] is not None else np.nan for t in ts])
    ax2.barh(yy, reg - 1, left=1, color=["tab:red" if r > 1.05 else "tab:blue" for r in reg], height=0.6)
    ax2.scatter(reg, yy, marker="|", s=120, color="k", zorder=3)
    ax2.axvline(1, color="k", lw=0.8)
    regs = [t["regret"] for t in v.transitions if t["regret"] is not None]
    if regs:
        med, p95 = percentile(regs, 50), percentile(regs, 95)
        ax2.axvline(med, color="0.3", ls="--", lw=1)
        ax2.axvline(p95, color="0.3", ls=":", lw=1)
        ax2.set_title(f"Regret: measured(chosen) / best measured\nmedian {med:.2f} (dashed), p95 {p95:.2f} (dotted)")
    ax2.set_yticks(yy, labels, fontsize=8)
    ax2.set_xlabel("regret (×, 1 = the chosen plan was the fastest)")
    fin_reg = reg[np.isfinite(reg)]
    ax2.set_xlim(left=min(0.95, float(fin_reg.min()) * 0.98) if len(fin_reg) else 0.95)

    ax3 = fig.add_subplot(gs[2], sharey=ax2)
    sp_ = np.array([t["greedy_speedup"] if t["greedy_speedup"] is not None else np.nan for t in ts])
    ax3.barh(yy, sp_ - 1, left=1, color=["tab:green" if s_ >= 1 else "tab:red" for s_ in np.nan_to_num(sp_, nan=1)],
             height=0.6)
    ax3.scatter(sp_, yy, marker="|", s=120, color="k", zorder=3)
    ax3.axvline(1, color="k", lw=0.8)
    ax3.tick_params(labelleft=False)
    ax3.set_xscale("log")
    fin = sp_[np.isfinite(sp_) & (sp_ > 0)]
    if len(fin):
        span = max(float(fin.max()), 1.0 / float(fin.min()), 1.25) * 1.15
        ax3.set_xlim(1 / span, span)
        _ratio_ticks(ax3.xaxis, 1 / span, span)
    ax3.set_xlabel("greedy / chosen, measured (×, log)")
    ax3.set_title("Greedy speed-up: greedy / chosen\n> 1: the cost planner's plan was faster")
    more = f" (worst {MAX_ROWS} of {len(v.transitions)} shown)" if len(v.transitions) > MAX_ROWS else ""
    fig.suptitle(f"Planner validation: {len(v.transitions)} transitions{more} — {where}")
    name = "validate.png"
    style.save(fig, f"{outdir}/{name}")
    return Figure(name, "planner validation",
                  "Left: every measured plan, predicted time against measured median (log-log; error bars = the "
                  "median's 95% CI; grey band ±25%). Middle: the planner's regret per transition, the chosen "
                  "plan's measured time over the fastest measured plan (1 = it picked the fastest), worst first. "
                  f"Right: how much faster the chosen plan ran than the greedy one. {where}.")


def gate_figures(g: dict, where: str, outdir: str) -> list:
    figs = []
    pts = [p for p in g["points"] if None not in (p["ratio"], p["baseline_us"], p["candidate_us"])]
    pts = sorted(pts, key=lambda p: -p["ratio"])[:MAX_ROWS]
    if pts:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(15, 1.6 + 0.34 * len(pts)), sharey=True,
                                     layout="constrained")
        yy = np.arange(len(pts))[::-1]
        labels = [_short(p["label"], 60) for p in pts]
        a1.hlines(yy, [p["baseline_us"] for p in pts], [p["candidate_us"] for p in pts], color="0.7", lw=1.5)
        a1.scatter([p["baseline_us"] for p in pts], yy, color="0.35", marker="o", s=28, label="baseline", zorder=3)
        a1.scatter([p["candidate_us"] for p in pts], yy, color="tab:red", marker="D", s=24, label="candidate",
                   zorder=3)
        a1.set_xscale("log")
        a1.set_yticks(yy, labels, fontsize=8)
        a1.set_xlabel("median time (µs, log)")
        a1.set_title("Baseline vs candidate median")
        r = np.array([p["ratio"] for p in pts])
        lo = np.array([p["ci_lo"] if p["ci_lo"] is not None else p["ratio"] for p in pts])
        hi = np.array([p["ci_hi"] if p["ci_hi"] is not None else p["ratio"] for p in pts])
        for i, p in enumerate(pts):
            a2.errorbar([r[i]], [yy[i]], xerr=[[max(r[i] - lo[i], 0)], [max(hi[i] - r[i], 0)]], fmt="o",
                        color=VERDICT_COLOR.get(p["verdict"], "k"), ms=5, capsize=3, lw=1.2)
        a2.axvline(1.0, color="k", lw=0.8)
        thr = 1.0 + g["max_slowdown"]
        a2.axvline(thr, color="tab:red", ls="--", lw=1)
        # Log ratio axis around the points; a CI wider than 4x the ratio runs off the edge.
        left = min(0.95, float(np.min(np.maximum(lo, r / 4))) / 1.05)
        right = max(thr * 1.05, float(np.max(np.minimum(hi, r * 4))) * 1.05)
        a2.set_xscale("log")
        a2.set_xlim(left, right)
        _ratio_ticks(a2.xaxis, left, right)
        a2.set_xlabel("candidate / baseline median (×, log), bootstrap CI")
        a2.set_title(f"Ratio per point; dashed: 1 + max slowdown = {thr:g}")
        used = OrderedDict((p["verdict"], VERDICT_COLOR.get(p["verdict"], "k")) for p in pts)
        hs = [Line2D([], [], marker="o", ls="", color="0.35"), Line2D([], [], marker="D", ls="", color="tab:red")]
        hs += [Line2D([], [], marker="o", ls="", color=c) for c in used.values()]
        style.legend_below(fig, hs, ["baseline median", "candidate median"] + [f"verdict: {v}" for v in used],
                           ncol=6)
        more = f"; worst {len(pts)} of {len(g['points'])} points" if len(g["points"]) > len(pts) else ""
        fig.suptitle(f"Performance gate: verdict {g['verdict'].upper()} (exit {g['exit_code']}){more} — {where}")
        style.save(fig, f"{outdir}/gate.png")
        figs.append(Figure("gate.png", "gate: worst points",
                           "The gate's points with the largest candidate/baseline ratio, worst first. Left: the two "
                           "medians (µs, log). Right: the ratio with its bootstrap confidence interval, coloured by "
                           "the point's verdict; a regression needs its whole interval right of the dashed line "
                           f"(and significance after false-discovery-rate control). {where}."))
    models = [m for m in g["models"] if m["ratio"] is not None and m["ratio"] > 0]
    if models:
        models.sort(key=lambda m: -abs(np.log(m["ratio"])))
        models = models[:MAX_ROWS]
        fig, ax = plt.subplots(figsize=(11, 1.8 + 0.34 * len(models)), layout="constrained")
        yy = np.arange(len(models))[::-1]
        los, his = [], []
        for i, m in enumerate(models):
            lo = m["ci_lo"] if m["ci_lo"] is not None else m["ratio"]
            hi = m["ci_hi"] if m["ci_hi"] is not None else m["ratio"]
            los.append(max(lo, m["ratio"] / 4, 1e-3))
            his.append(min(hi, m["ratio"] * 4))
            ax.errorbar([m["ratio"]], [yy[i]], xerr=[[max(m["ratio"] - lo, 0)], [max(hi - m["ratio"], 0)]],
                        fmt={"bandwidth_GBps": "o", "time_us": "D"}.get(m["param"], "s"),
                        color=VERDICT_COLOR.get(m["verdict"], "0.3"), ms=5, capsize=3)
        ax.axvline(1.0, color="k", lw=0.8)
        left, right = min(0.8, min(los) / 1.1), max(1.25, max(his) * 1.1)
        ax.set_xscale("log")
        ax.set_xlim(left, right)
        _ratio_ticks(ax.xaxis, left, right)
        ax.set_yticks(yy, [_short(_model_label(m), 70) for m in models], fontsize=8)
        ax.set_xlabel("candidate / baseline (×, log), with CI; bandwidth > 1, α and time < 1 are faster")
        ax.set_title(f"Gate, model level: priced times (diamonds), fitted α (alpha_us, squares) and bandwidth "
                     f"(circles), largest changes first — {where}", fontsize=9)
        used = OrderedDict((m["verdict"] or "?", VERDICT_COLOR.get(m["verdict"], "0.3")) for m in models)
        hs = [Line2D([], [], marker="o", ls="", color=c) for c in used.values()]
        fig.legend(hs, list(used.keys()), loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, frameon=False)
        style.save(fig, f"{outdir}/gate_models.png")
        figs.append(Figure("gate_models.png", "gate: model parameters",
                           "Ratio candidate/baseline of each link class's priced time (at its worst measured "
                           "size) and of each fitted model parameter, with its confidence interval, largest "
                           "changes first, coloured by the gate's verdict for it (bandwidth_GBps: < 1 is slower; "
                           "alpha_us and time_us: > 1 is slower)."))
    return figs



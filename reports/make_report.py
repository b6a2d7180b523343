#!/usr/bin/python3
"""Make a report (PNG figures, index.html, summary.md) from shardbench JSON outputs.

    /usr/bin/python3 reports/make_report.py --out DIR RESULTS.jsonl [RESULTS.jsonl ...]
        [--profile P.json] [--validate V.jsonl] [--gate G.json] [--title TEXT]

Reads JSON files only (no communication, no shardbench). See docs/REPORTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile


MARKER = ".shardcal-report"  # marks a directory this tool wrote, so a rerun may replace it

EPILOG = """\
figures (each PNG is embedded in index.html with a caption; summary.md has the key numbers):
  busbw_<collective>.png  bus bandwidth vs message size, one panel per link class (its mesh dims
                          as colours), median with 95% CI error bars, the fitted model drawn
                          over it (--profile); one file per dtype when there are several
  residuals.png           (--profile) relative error of the model per fitted model and size segment
  uneven.png              even vs uneven shards on the effective size the fit chose (and the other)
  transitions_<dist>.png  transition cost heatmap, from x to placement, per mesh shape (one file
                          per shard distribution)
  validate.png            (--validate) predicted vs measured plan times, the planner's regret
  gate.png, gate_models.png  (--gate) worst points baseline vs candidate, model parameters
  With several results files the per-file figures are prefixed run1_, run2_, ...
  A missing optional input omits its section, with a line saying so.

exit codes: 0 report written; 2 bad input (empty, not the documented format: the message names
the file, line and field) or unusable --out, and nothing is written; 1 internal error.
The report is written to a temporary directory next to DIR and renamed into place, so DIR is
either the complete new report or untouched. An existing DIR is replaced only if it is empty or
a report this tool wrote.

example (after scripts/run.sh):
  /usr/bin/python3 reports/make_report.py --out out/report out/sweep/local.jsonl \\
      --profile out/profile.json
"""


class UsageError(Exception):
    pass


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="make_report.py",
        description="Plots and a summary of shardbench sweep results, the calibrated profile,\n"
                    "shardbench validate and shardbench gate outputs, as DIR/index.html, DIR/summary.md\n"
                    "and DIR/*.png. Reads JSON files only; details in docs/REPORTS.md.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", metavar="RESULTS.jsonl",
                    help="sweep results files (shardbench sweep --out; docs/RESULTS_FORMAT.md)")
    ap.add_argument("--out", required=True, metavar="DIR", help="output directory (created or replaced)")
    ap.add_argument("--profile", metavar="P.json",
                    help="calibrated profile (shardbench calibrate --out): model curves, residuals, fit table")
    ap.add_argument("--validate", metavar="V.jsonl", help="shardbench validate output: predicted vs measured, regret")
    ap.add_argument("--gate", metavar="G.json", help="shardbench gate --json report: worst points, verdict")
    ap.add_argument("--check", metavar="C.json",
                    help="shardbench check --json report: the calls per class over the profile's price and interval")
    ap.add_argument("--title", metavar="TEXT", help="report title (default: names the cluster, backend and world)")

    def error(msg):
        raise UsageError(f"{msg} (see --help)")

    ap.error = error  # exit 2 through our own path, one line
    return ap.parse_args(argv)


def check_out_dir(out: str) -> None:
    if os.path.lexists(out):
        if not os.path.isdir(out) or os.path.islink(out):
            raise UsageError(f"--out {out}: exists and is not a directory; choose another --out or remove it")
        entries = os.listdir(out)
        if entries and MARKER not in entries:
            raise UsageError(f"--out {out}: the directory exists, is not empty and is not a report written by "
                             "make_report.py (no .shardcal-report marker); choose another --out or remove it")


def fmt_pct(x) -> str:
    return "n/a" if x is None else f"{x * 100:.1f}%"


def load_inputs(args):
    from shardcal_report import load

    runs = [load.load_results(p) for p in args.results]
    prof = load.load_profile(args.profile) if args.profile else None
    val = load.load_validate(args.validate) if args.validate else None
    gate = load.load_gate(args.gate) if args.gate else None
    if args.check:
        from shardcal_report import fig_check
        args.check_doc = fig_check.load_check(args.check)
    return runs, prof, val, gate


def make(args, data, tmp: str):
    from shardcal_report import load, fig_sweep, fig_checks
    from shardcal_report.write import Section

    runs, prof, val, gate = data
    cluster = prof.cluster if prof is not None else None
    r0 = runs[0]
    title = args.title or f"shardcal report — {r0.where(cluster)}"
    sections = []
    key = Section("Key numbers")
    inputs = Section("Inputs")
    rows = []
    for r in runs:
        mpi = str(r.libraries.get({"nccl": "NCCL", "mpi": "MPI"}.get(r.backend, ""), ""))
        rows.append(["results", load.display_path(r.path),
                     f"{r.backend}, world {r.world}, {r.n_hosts} host(s), {r.date}, git {r.git_revision}"
                     + (f", {r.backend.upper()} {mpi.split(',')[0]}" if mpi else "")])
    if prof is not None:
        rows.append(["profile", load.display_path(args.profile),
                     f"cluster {prof.cluster}, backend {prof.backend}, {len(prof.models)} models, "
                     f"created {prof.created}"])
    if val is not None:
        rows.append(["validate", load.display_path(args.validate), f"{len(val.transitions)} transitions"])
    if gate is not None:
        rows.append(["gate", load.display_path(args.gate), f"verdict {gate['verdict']}, {len(gate['points'])} points"])
    inputs.table(["kind", "file", "what"], rows)
    sections += [key, inputs]
    key_rows = []

    # Sweep figures, per results file.
    for i, r in enumerate(runs):
        prefix = f"run{i + 1}_" if len(runs) > 1 else ""
        where = r.where(cluster)
        s = Section(f"Sweep: {load.display_path(r.path)}" if len(runs) > 1 else "Sweep")
        ops = sorted({p['op'] for p in r.collectives}, key=lambda o: load.sp.COLLECTIVES.index(o))
        s.p(f"{where}. {r.n_records} point records: {len(r.collectives)} collective and {len(r.transitions)} "
            f"transition points used; {r.n_wrong} excluded for wrong results (wrong > 0), {r.n_failed} failed. "
            f"Collectives: {', '.join(ops) or 'none'}.")
        if prof is not None and prof.backend not in (r.backend, "model"):
            s.p(f"Note: the profile was calibrated on backend {prof.backend}, this file was measured on {r.backend}: "
                "the model curves describe another system.")
        for f in fig_sweep.busbw_figures(r, prof, where, prefix, tmp):
            s.fig(f)
        if not r.collectives:
            s.p("Bus bandwidth figures omitted: this file has no collective points.")
        f = fig_sweep.uneven_figure(r, prof, where, prefix, tmp)
        if f is not None:
            s.fig(f)
        else:
            s.p("Even vs uneven figure omitted: no uneven-shard collective points (sweep config distributions).")
        tfigs = fig_sweep.transition_figures(r, where, prefix, tmp)
        for f in tfigs:
            s.fig(f)
        if not tfigs:
            s.p("Transition heatmap omitted: this file has no transition points.")
        sections.append(s)

    # Calibration fit.
    s = Section("Calibration fit")
    if prof is None:
        s.p("Omitted: no --profile given (shardbench calibrate --out P.json; docs/CALIBRATION.md).")
        key_rows.append(["fit holdout MAPE", "no profile given"])
    else:
        mrows, holdouts, bb_holdouts = [], [], []
        # The segments' terms from the file itself (the loader above checked it), as it names them.
        with open(args.profile, encoding="utf-8") as f:
            raw_models = json.load(f)["models"]
        for m, raw in zip(prof.models, raw_models):
            q = m.quality or {}
            # The held-out error of the model predict uses (backbone x measured curve, each size
            # left out in turn); the k-fold holdout and the rest are the backbone's alone.
            if q.get("leave_size_out_mape") is not None:
                holdouts.append(q["leave_size_out_mape"])
            if q.get("holdout_mape") is not None:
                bb_holdouts.append(q["holdout_mape"])
            segs = "; ".join(f"[{_b(g['s_lo'])}, {_b(g['s_hi']) if g['s_hi'] is not None else '∞'}): "
                             + _segment_terms(g) for g in raw["segments"])
            mrows.append([m.collective, m.hosts, m.concurrent_groups, m.dtype or "pooled",
                          "/".join(map(str, m.group_sizes)) or "any", m.effective_size, q.get("points", 0),
                          fmt_pct(q.get("leave_size_out_mape")),
                          fmt_pct(q.get("mape")), fmt_pct(q.get("holdout_mape")),
                          fmt_pct(q.get("leave_group_out_mape")), segs])
        s.p(f"Profile {load.display_path(args.profile)}: cluster {prof.cluster}, backend {prof.backend}/"
            f"{prof.memory}, {len(prof.models)} models. Holdout: the held-out error of the model predict uses "
            "(backbone × measured curve), each measured size left out in turn (n/a: too few sizes, or an older "
            "profile); backbone: the fitted lines alone — training MAPE, k-fold holdout over sizes, "
            "LOGO: leave one group size out (n/a: one group size measured).")
        s.table(["collective", "hosts", "groups at once", "dtype", "n", "S_eff rule", "points",
                 "holdout MAPE (model in use)", "backbone MAPE", "backbone k-fold holdout", "backbone LOGO MAPE",
                 "segments"], mrows)
        if holdouts:
            hs = sorted(holdouts)
            key_rows.append(["fit holdout MAPE (over models)",
                             f"median {fmt_pct(fig_checks.percentile(hs, 50))}, worst {fmt_pct(hs[-1])} "
                             f"({len(hs)} models; the model predict uses, each measured size left out in turn)"])
        else:
            key_rows.append(["fit holdout MAPE (over models)",
                             "not in the profile (leave_size_out_mape: re-calibrate with this shardcal)"])
        if bb_holdouts:
            hs = sorted(bb_holdouts)
            key_rows.append(["backbone k-fold holdout MAPE (over models)",
                             f"median {fmt_pct(fig_checks.percentile(hs, 50))}, worst {fmt_pct(hs[-1])} "
                             f"({len(hs)} models; the fitted lines alone, without the measured curves)"])
        for i, r in enumerate(runs):
            prefix = f"run{i + 1}_" if len(runs) > 1 else ""
            f = fig_sweep.residual_figure(r, prof, r.where(cluster), prefix, tmp)
            if f is not None:
                s.fig(f)
            else:
                s.p(f"Residuals omitted for {load.display_path(r.path)}: no even-shard point the profile prices.")
    sections.append(s)

    # Planner validation.
    s = Section("Planner validation")
    if val is None:
        s.p("Omitted: no --validate given (shardbench validate output, JSON Lines).")
        key_rows.append(["planner regret", "no validate file given"])
    else:
        regs = [t["regret"] for t in val.transitions if t["regret"] is not None]
        sm = val.summary
        med = sm["regret_median"] if sm and sm.get("regret_median") is not None else (
            fig_checks.percentile(regs, 50) if regs else None)
        p95 = sm["regret_p95"] if sm and sm.get("regret_p95") is not None else (
            fig_checks.percentile(regs, 95) if regs else None)
        mape = sm["mape"] if sm else None
        mape_note = ""
        if mape is None:
            errs = [abs(p["predicted_us"] - p["median_us"]) / p["median_us"] for t in val.transitions
                    for p in t["plans"] if p["predicted_us"] is not None]
            if errs:
                mape = sum(errs) / len(errs)
                mape_note = f" (computed here over the {len(errs)} plans with a finite prediction)"
        src = "summary line" if sm else "computed here (the file has no summary line)"
        prof_txt = ""
        if val.profile:
            prof_txt = f" Profile: {val.profile.get('path', '?')} (cluster {val.profile.get('cluster', '?')})."
        unpriced = sum(1 for t in val.transitions for p in t["plans"] if p["predicted_us"] is None)
        unpriced_txt = (f" ({unpriced} without a finite predicted time: the profile prices one of their steps +inf)"
                        if unpriced else "")
        s.p(f"{len(val.transitions)} transitions, {sum(len(t['plans']) for t in val.transitions)} plans measured"
            f"{unpriced_txt}."
            f"{prof_txt} Regret = measured time of the chosen plan / fastest measured plan of the transition; "
            f"greedy speed-up = measured greedy / measured chosen (> 1: the cost planner's plan was faster); numbers "
            f"from the {src}.")
        s.table(["regret median", "regret p95", "prediction MAPE"],
                [[f"{med:.3f}" if med is not None else "n/a", f"{p95:.3f}" if p95 is not None else "n/a",
                  fmt_pct(mape) + mape_note]])
        key_rows.append(["planner regret", f"median {med:.3f}, p95 {p95:.3f}" if med is not None else "n/a"])
        key_rows.append(["plan time prediction MAPE", fmt_pct(mape) + mape_note])
        worst = sorted(val.transitions, key=lambda t: -(t["regret"] or 0))[:10]
        s.table(["transition", "regret", "greedy speed-up"],
                [[fig_checks.transition_label(t), f"{t['regret']:.3f}" if t["regret"] is not None else "n/a",
                  f"{t['greedy_speedup']:.3f}" if t["greedy_speedup"] is not None else "n/a"] for t in worst])
        where = f"{val.profile.get('cluster')}" if val.profile.get("cluster") else load.display_path(args.validate)
        s.fig(fig_checks.validate_figure(val, f"cluster {where}", tmp))
    sections.append(s)

    # Gate.
    s = Section("Performance gate")
    if gate is None:
        s.p("Omitted: no --gate given (shardbench gate --json G.json).")
        key_rows.append(["gate verdict", "no gate report given"])
    else:
        counts = {}
        for p in gate["points"]:
            counts[p["verdict"]] = counts.get(p["verdict"], 0) + 1
        ctext = ", ".join(f"{v} {counts[v]}" for v in ("regression", "inconclusive", "improvement", "pass")
                          if v in counts) or "no points"
        s.p(f"Verdict: {gate['verdict'].upper()} (exit code {gate['exit_code']}); alpha {gate['alpha']}, max slowdown "
            f"{gate['max_slowdown']:g}, FDR control {gate['fdr']}. Points: {ctext}. Only in baseline: "
            f"{len(gate['only_baseline'])}; only in candidate: {len(gate['only_candidate'])}.")
        key_rows.append(["gate verdict", f"{gate['verdict']} (exit {gate['exit_code']}; {ctext})"])
        if gate["env_differences"]:
            s.p("Environment differences" + (" (allowed by --allow-env-change)" if gate["env_change_allowed"] else "")
                + ":")
            s.table(["field", "baseline", "candidate"],
                    [[d.get("field"), d.get("baseline"), d.get("candidate")] for d in gate["env_differences"]
                     if isinstance(d, dict)])
        if gate["incomparable_reason"]:
            s.p(f"Incomparable: {gate['incomparable_reason']}")
        worst = sorted(gate["points"], key=lambda p: -(p["ratio"] if p["ratio"] is not None else 0))[:10]
        if worst:
            s.table(["point", "baseline µs", "candidate µs", "ratio", "CI", "p", "q", "verdict"],
                    [[p["label"], _f(p["baseline_us"], 4), _f(p["candidate_us"], 4), _f(p["ratio"], 4),
                      f"[{_f(p['ci_lo'])}, {_f(p['ci_hi'])}]", _f(p["p"]), _f(p["q"]), p["verdict"]]
                     for p in worst])
        for f in fig_checks.gate_figures(gate, f"{load.display_path(args.gate)}", tmp):
            s.fig(f)
    sections.append(s)
    # shardbench check: a job's (or a run's) calls against the profile.
    if getattr(args, "check_doc", None) is not None:
        from shardcal_report import fig_check
        doc = args.check_doc
        s = Section("Check against the profile")
        counts = {}
        for c in doc["classes"]:
            counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
        s.p(f"Verdict: {doc['verdict'].upper()} (exit {doc['exit']}); classes: "
            + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())) + ".")
        s.table(["class", "calls", "median measured/priced", "above 95 %", "verdict"],
                [[fig_check.class_label(c), c["calls"], f"{c['median_ratio']:.3f}",
                  f"{c['share_above'] * 100:.0f} %", c["verdict"]] for c in doc["classes"]])
        key_rows.append(["check verdict", f"{doc['verdict']} (exit {doc['exit']})"])
        f = fig_check.check_figure(doc, load.display_path(args.check), tmp)
        if f is not None:
            s.fig(f)
        sections.append(s)
    key.table(["what", "value"], key_rows)
    ws = load.warnings()
    if ws:
        w = Section("Warnings")
        for x in ws:
            w.p(x)
        sections.append(w)
    return title, sections


def _f(x, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}g}"


def _segment_terms(seg: dict) -> str:
    """A profile segment's model terms as the file names them (each name carries its unit,
    docs/PROFILE_FORMAT.md): every member but the range and the relative standard errors, so a
    term added to the model shows without an edit here; terms at 0 are left out."""
    parts = []
    for k, v in seg.items():
        if k in ("s_lo", "s_hi") or k.endswith("_rel_se") or v == 0:
            continue
        # A slope at the fitter's floor (B 1e6 GB/s) is a segment without size term.
        parts.append("flat (no size term)" if k == "bandwidth_GBps" and v > 1e4 else f"{k} {v:.3g}")
    return ", ".join(parts)


def _b(x) -> str:
    from shardcal_report.style import fmt_bytes
    return fmt_bytes(x)


def main(argv=None) -> int:
    try:
        import shardcal.profile  # noqa: F401  (the installed package, calibrate/python)
    except ImportError:
        print(f"make_report.py: the shardcal package is not installed for {sys.executable}: run "
              "`bash scripts/python-env.sh` and use .venv/bin/python (or pip install ./calibrate/python)",
              file=sys.stderr)
        return 2
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        out = os.path.abspath(args.out)
        check_out_dir(out)
        from shardcal_report.load import InputError
        from shardcal_report.write import html_page, markdown
    except UsageError as e:
        print(f"make_report.py: {e}", file=sys.stderr)
        return 2
    parent = os.path.dirname(out)
    tmp = None
    try:
        # Inputs are read and checked before anything is created.
        from shardcal_report import load
        data = load_inputs(args)
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.tmp-", dir=parent)
        title, sections = make(args, data, tmp)
        with open(os.path.join(tmp, "summary.md"), "w", encoding="utf-8") as f:
            f.write(markdown(title, sections))
        with open(os.path.join(tmp, "index.html"), "w", encoding="utf-8") as f:
            f.write(html_page(title, sections))
        with open(os.path.join(tmp, MARKER), "w", encoding="utf-8") as f:
            f.write("written by reports/make_report.py; the directory is replaced on the next run\n")
        os.chmod(tmp, 0o755)
        old = None
        if os.path.lexists(out):
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.old-", dir=parent)
            os.rename(out, os.path.join(old, "r"))
        try:
            os.rename(tmp, out)
        except OSError:
            if old:  # put the previous report back
                os.rename(os.path.join(old, "r"), out)
                os.rmdir(old)
            raise
        tmp = None
        if old:
            shutil.rmtree(old, ignore_errors=True)
        for w in load.warnings():
            print(f"make_report.py: warning: {w}", file=sys.stderr)
        pngs = sorted(x for x in os.listdir(out) if x.endswith(".png"))
        print(f"report: {os.path.join(args.out, 'index.html')} ({len(pngs)} figures; summary: "
              f"{os.path.join(args.out, 'summary.md')})")
        return 0
    except InputError as e:
        print(f"make_report.py: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"make_report.py: cannot write the report under {parent}: {e}", file=sys.stderr)
        return 2
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Open MPI's eager reduce_scatter ring on SMPI: its dependency chain, and what else sets its time.

docs/CALIBRATION.md "Other host counts" prices the eager steps of Open MPI's reduce_scatter ring
(coll_base_reduce_scatter_intra_ring, SMPI's ompi_ring) by their dependency chain: message k
reaches rank r once rank r-1 holds message k-1 and rank r holds message k-2 (its receive for k
is posted then), one hop later,

    A(r, k) = max(max(A(r-1, k-1), A(r, k-2)) + hop(r-1 -> r), A(r, k-1) + transfer(r-1 -> r)),
    A(., 0) = A(., -1) = 0,

done at the largest A(., n-1). Here a hop costs its route latency plus the per-step message's
transfer time at the ring flow's link share (m / share_GBps between hosts, m / loopback bandwidth
inside one: routes.json's loopback_GBps, else --loopback-GBps), and a flow moves one message at a
time (calibrate/src/host_transport.cpp chain_envelope prices it so). The event simulation below
does not: a transfer starts once its send and its receive are both posted (SMPI's eager sends
with smpi/async-small-thresh:0), pays the route latency, then moves its bytes at the link share,
shared equally by the flows leaving the same host at that moment (SimGrid's max-min sharing of a
host's NIC; loopback transfers unshared, SimGrid's cluster loopback).

  series DIR   every measured eager point of an SMPI host series (per-step message below SMPI's
               eager limit) beside the chain and the simulation with every rank entering at
               once. On tests/data/smpi-hosts (4 ranks per host) the simulation gives 2, 4 and 8
               hosts to within 0.1 % on 8 of the 11 series, the chain to within 5 % on those
               whose ring flows keep a whole link; at 16 hosts, on the series swept from a
               window start (every rank at one instant), the simulation within 0.2 % on flat,
               torus, torus3d, ft-cyclic, eth and bb-shared (swept from a barrier it was 21 and
               26 % low on flat and torus: the barrier's stagger, below).
  probe FILE   the output of scripts/simulate/eager_ring_probe.c (the ring's message pattern
               under SMPI, timed as shardbench times an operation) beside the simulation, run
               twice: every rank entering at once, and each rank entering when the probe says it
               left the barrier before the operation. Its last line is machine-readable:
               "result spread_us=S skewed_err_pct=E1 at_once_err_pct=E2".

What the probe shows (docs/CALIBRATION.md "What the chain leaves out"): the 16-host miss of the
barrier-started series was NIC sharing that the ranks' staggered entry sets off. Open MPI's barrier (SMPI's ompi selector)
releases 8, 16 and 32 ranks at once, but on 16 hosts x 4 the first rank of each host (the one
that receives from the previous host) leaves it 2 us after the middle two and 4 us after the
last (18, 16, 16, 14 us). Its receives are then posted late, the previous host's messages to it
bunch up, and two of them cross the NIC at once. Replayed with those entry times the simulation
gives SMPI's time to 0.05 %; entering at once it is 15 % low at 16 KiB per step.

  /usr/bin/python3 calibrate/scripts/eager_ring.py series tests/data/smpi-hosts/flat
  /usr/bin/python3 calibrate/scripts/eager_ring.py series --check-through 8 [--chain-tolerance 0.05] DIR
  /usr/bin/python3 calibrate/scripts/eager_ring.py probe OUT --hosts 16 --ranks-per-host 4 \\
      --message 16384 [--check]

Exit status: 0; 1 when a --check fails; 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

EAGER_LIMIT_BYTES = 65536  # SMPI's smpi/send-is-detached-thresh default (host-series.sh keeps it)


def die(msg: str) -> None:
    print(f"eager_ring: error: {msg}", file=sys.stderr)
    sys.exit(2)


def chain_us(hops_us: list[float], ranks_per_host: int, loop_us: float, t_inter: float,
             t_loop: float) -> float:
    """The dependency chain's end over a ring of len(hops_us) hosts x ranks_per_host ranks."""
    c = ranks_per_host
    n = len(hops_us) * c
    prev2 = [0.0] * n
    prev1 = [0.0] * n
    for _ in range(1, n):
        cur = [0.0] * n
        for r in range(n):
            frm = (r - 1) % n
            tx = t_loop if frm // c == r // c else t_inter
            hop = (loop_us if frm // c == r // c else hops_us[frm // c]) + tx
            cur[r] = max(max(prev1[frm], prev2[r]) + hop, prev1[r] + tx)
        prev2, prev1 = prev1, cur
    return max(prev1)


def simulate_us(hops_us: list[float], c: int, m: float, share_Bpus: float, loop_lat: float,
                loop_Bpus: float, entry: list[float] | None = None) -> float:
    """Event simulation of the ring's eager steps; the largest per-rank elapsed time (us).

    hops_us[h]: the route latency from host h to host h+1; c ranks per host. Rank r posts send 1
    and receives 1 and 2 when it enters; once message k has arrived it posts send k+1 and receive
    k+2. A message moves once both ends are posted: the latency, then its bytes at share_Bpus
    shared equally by the flows leaving that host (loopback transfers unshared)."""
    hosts = len(hops_us)
    n = hosts * c
    base = min(entry) if entry else 0.0
    t0 = [e - base for e in entry] if entry else [0.0] * n  # relative: absolute clocks lose ulps
    sent: set[tuple[int, int]] = set()  # (sender, k) posted
    recv: set[tuple[int, int]] = set()  # (receiver, k) posted
    done: dict[tuple[int, int], float] = {}
    started: set[tuple[int, int]] = set()
    flows: list[dict] = []

    def match(r: int, k: int, now: float) -> None:
        frm = (r - 1) % n
        if not 1 <= k <= n - 1 or (r, k) in started or (frm, k) not in sent or (r, k) not in recv:
            return
        started.add((r, k))
        inter = frm // c != r // c
        flows.append({"r": r, "k": k, "lat_end": now + (hops_us[frm // c] if inter else loop_lat),
                      "rem": float(m), "link": ("nic", frm // c) if inter else ("loop", r, k),
                      "bw": share_Bpus if inter else loop_Bpus, "rate": 0.0})

    starts = sorted((t0[r], r) for r in range(n))
    si = 0
    t = 0.0
    # Every iteration ends a latency, a transfer or a rank's entry: 2 per message + n entries.
    for _ in range(4 * n * n + n + 16):
        moving = [f for f in flows if f["lat_end"] <= t]
        load: dict = {}
        for f in moving:
            load[f["link"]] = load.get(f["link"], 0) + 1
        for f in moving:
            f["rate"] = f["bw"] / load[f["link"]]
        nxt = [f["lat_end"] if f["lat_end"] > t else t + f["rem"] / f["rate"] for f in flows]
        if si < len(starts):
            nxt.append(starts[si][0])
        if not nxt:
            break
        nt = max(t, min(nxt))
        # Finished: every moving flow whose bytes end by nt (within rounding of nt itself, so that
        # a remainder below one ulp of the clock cannot stall the loop).
        tol = 4 * math.ulp(max(1.0, nt))
        finished = [f for f in moving if t + f["rem"] / f["rate"] <= nt + tol]
        for f in moving:
            f["rem"] -= f["rate"] * (nt - t)
        t = nt
        while si < len(starts) and starts[si][0] <= t:
            r = starts[si][1]
            si += 1
            sent.add((r, 1))
            recv.update({(r, 1), (r, 2)})
            for rr, k in ((r, 1), (r, 2), ((r + 1) % n, 1)):
                match(rr, k, t)
        for f in finished:
            flows.remove(f)
            r, k = f["r"], f["k"]
            done[(r, k)] = t
            sent.add((r, k + 1))
            recv.add((r, k + 2))
        for f in finished:
            match((f["r"] + 1) % n, f["k"] + 1, t)
            match(f["r"], f["k"] + 2, t)
    else:
        die(f"the simulation did not finish ({len(done)} of {n * (n - 1)} messages; a bug)")
    if len(done) != n * (n - 1):
        die(f"the simulation stalled after {len(done)} of {n * (n - 1)} messages (a bug)")
    return max(done[(r, n - 1)] - t0[r] for r in range(n))


def positive(name: str, v, zero_ok: bool = False) -> float:
    """v as a finite number > 0 (>= 0 with zero_ok), else one error line and exit 2."""
    if (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
            or v < 0 or (v == 0 and not zero_ok)):
        die(f"{name} = {v!r}: expected a finite number {'>=' if zero_ok else '>'} 0")
    return float(v)


def load_series(d: Path) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for f in sorted(d.glob("hosts*.jsonl")):
        mt = re.fullmatch(r"hosts(\d+)\.jsonl", f.name)
        if not mt:
            continue
        pts = []
        try:
            lines = f.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            die(f"{f}: cannot read ({e})")
        for line_no, line in enumerate(lines, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                die(f"{f}:{line_no}: not JSON ({e}); give a results file written by shardbench sweep")
            if isinstance(rec, dict) and rec.get("type") == "point" and rec.get("collective") == "reduce_scatter":
                try:
                    n, c = rec["group_size"], rec.get("max_ranks_per_host")
                    for name, v in (("group_size", n), ("max_ranks_per_host", c)):
                        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                            die(f"{f}:{line_no}: {name} = {v!r}: expected a whole number >= 1")
                    pts.append({"n": n, "c": c,
                                "bytes": positive(f"{f}:{line_no}: bytes", rec["bytes"]),
                                "us": positive(f"{f}:{line_no}: stats.p50", rec["stats"]["p50"]) * 1e6})
                except (KeyError, TypeError) as e:
                    die(f"{f}:{line_no}: a reduce_scatter point without {e} (group_size, bytes, stats.p50)")
        out[int(mt.group(1))] = pts
    return out


def cmd_series(a: argparse.Namespace) -> int:
    loop_Bpus = positive("--loopback-GBps", a.loopback_GBps) * 1e3
    routes_path = a.series / "routes.json"
    if not routes_path.is_file():
        die(f"{routes_path}: missing; host-series.sh writes it beside the series "
            "(or scripts/simulate/host-series.sh --routes-only)")
    try:
        routes = json.loads(routes_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        die(f"{routes_path}: not a readable JSON file ({e})")
    if not isinstance(routes, dict) or not isinstance(routes.get("rings"), list):
        die(f"{routes_path}: expected an object with a 'rings' list (format shardcal-ring-routes/1)")
    rings = {r.get("hosts"): r for r in routes["rings"] if isinstance(r, dict)}
    loop_lat = routes.get("loopback_latency_us")
    if routes.get("loopback_GBps") is not None:  # (the table's, where ring-routes wrote it)
        loop_Bpus = positive(f"{routes_path}: loopback_GBps", routes["loopback_GBps"]) * 1e3
    series = load_series(a.series)
    if not series:
        die(f"{a.series}: no hostsH.jsonl results; give a directory host-series.sh wrote")
    worst, worst_chain, checked = 0.0, 0.0, 0
    print(f"{a.series}: eager reduce_scatter (per-step message < {EAGER_LIMIT_BYTES} B) beside its "
          "dependency chain and the event simulation, every rank entering at once")
    print(f"{'hosts':>5} {'ranks':>5} {'message B':>10} {'measured us':>12} {'chain us':>10} {'err':>8} "
          f"{'simulated':>10} {'err':>8}")
    for h in sorted(series):
        ring = rings.get(h)
        if ring is None or "hop_latency_us" not in ring:
            print(f"{h:>5}: skipped (routes.json has no hop list for {h} hosts)")
            continue
        hops = ring["hop_latency_us"]
        if not isinstance(hops, list) or len(hops) != h:
            die(f"{routes_path}: hosts {h}: hop_latency_us has {len(hops) if isinstance(hops, list) else 'no'} "
                f"entries, expected {h}; re-run ring-routes")
        hops = [positive(f"{routes_path}: hosts {h}: hop_latency_us", x) for x in hops]
        share = positive(f"{routes_path}: hosts {h}: share_GBps", ring.get("share_GBps")) * 1e3
        for p in sorted(series[h], key=lambda q: q["bytes"]):
            n = p["n"]
            c = p["c"] or n // h
            if n != c * h or n < 2:
                die(f"{a.series}/hosts{h}.jsonl: {n} ranks on {h} hosts is not {c} per host")
            if c > 1 and loop_lat is None:
                die(f"{routes_path}: no loopback_latency_us for {c} ranks per host (the platform "
                    "gives its hosts no loopback route, or the table predates it): give the hosts a "
                    "loopback link and re-run ring-routes")
            ll = positive(f"{routes_path}: loopback_latency_us", loop_lat, zero_ok=True) if c > 1 else 1.0
            msg = p["bytes"] / n
            if msg >= EAGER_LIMIT_BYTES:
                continue
            ch = chain_us(hops, c, ll, msg / share, msg / loop_Bpus)
            sim = simulate_us(hops, c, msg, share, ll, loop_Bpus)
            e_ch, e_sim = ch / p["us"] - 1, sim / p["us"] - 1
            print(f"{h:>5} {n:>5} {msg:>10.0f} {p['us']:>12.1f} {ch:>10.1f} {100 * e_ch:>+7.1f}% "
                  f"{sim:>10.1f} {100 * e_sim:>+7.2f}%")
            if a.check_through is not None and h <= a.check_through:
                checked += 1
                worst = max(worst, abs(e_sim))
                worst_chain = max(worst_chain, abs(e_ch))
    if a.check_through is None:
        return 0
    if checked == 0:
        die(f"--check-through {a.check_through}: no eager point at or below {a.check_through} hosts")
    ok = worst <= a.tolerance
    print(f"check: the simulation within {100 * worst:.2f} % of {checked} eager points up to "
          f"{a.check_through} hosts (limit {100 * a.tolerance:.2f} %): {'ok' if ok else 'FAILED'}")
    if a.chain_tolerance is not None:
        ok_chain = worst_chain <= a.chain_tolerance
        print(f"check: the chain within {100 * worst_chain:.2f} % of the same points "
              f"(limit {100 * a.chain_tolerance:.2f} %): {'ok' if ok_chain else 'FAILED'}")
        ok = ok and ok_chain
    return 0 if ok else 1


def cmd_probe(a: argparse.Namespace) -> int:
    n = a.hosts * a.ranks_per_host
    entry: dict[int, float] = {}
    measured = None
    try:
        lines = a.output.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        die(f"{a.output}: cannot read ({e})")
    for line_no, line in enumerate(lines, 1):
        w = line.split()
        try:
            if w and w[0] == "entry" and len(w) == 4:
                entry[int(w[1])] = float(w[2])
            elif w and w[0] == "max_elapsed_us" and len(w) == 2:
                measured = float(w[1])
        except ValueError:
            die(f"{a.output}:{line_no}: '{line}' is not the probe's output")
    if measured is None or sorted(entry) != list(range(n)):
        die(f"{a.output}: expected 'entry RANK ENTRY ELAPSED' for ranks 0..{n - 1} and "
            f"'max_elapsed_us X' (scripts/simulate/eager_ring_probe.c on {n} ranks); "
            f"found {len(entry)} entries{'' if measured is not None else ', no max_elapsed_us'}")
    positive(f"{a.output}: max_elapsed_us", measured)
    if not all(math.isfinite(v) for v in entry.values()):
        die(f"{a.output}: an entry time is not finite")
    args = ([positive("--inter-lat", a.inter_lat)] * a.hosts, a.ranks_per_host, float(a.message),
            positive("--inter-GBps", a.inter_GBps) * 1e3, positive("--loopback-lat", a.loopback_lat, zero_ok=True),
            positive("--loopback-GBps", a.loopback_GBps) * 1e3)
    skewed = simulate_us(*args, entry=[entry[r] for r in range(n)])
    at_once = simulate_us(*args)
    spread = max(entry.values()) - min(entry.values())
    e_sk, e_at = 100 * (skewed / measured - 1), 100 * (at_once / measured - 1)
    print(f"{a.hosts} hosts x {a.ranks_per_host} ranks, {a.message} B per step: SMPI {measured:.3f} us; "
          f"simulated with the probe's entry times (spread {spread:.3f} us) {skewed:.3f} us "
          f"({e_sk:+.2f} %), every rank entering at once {at_once:.3f} us ({e_at:+.2f} %)")
    ok = abs(skewed / measured - 1) <= a.tolerance
    if a.check:
        print(f"check: the simulation with entry times within {100 * a.tolerance:.2f} % of SMPI: "
              f"{'ok' if ok else 'FAILED'}")
    print(f"result spread_us={spread:.6f} skewed_err_pct={e_sk:.4f} at_once_err_pct={e_at:.4f}")
    return 1 if a.check and not ok else 0


def main() -> int:
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(doc.split("\n\n")[1:]))
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("series", help="a host series' eager points beside the chain and the simulation")
    s.add_argument("series", type=Path, help="a host series directory (hostsH.jsonl + routes.json)")
    s.add_argument("--loopback-GBps", type=float, default=150.0,
                   help="bandwidth between two ranks of one host where routes.json gives none "
                        "(default 150: host-series.sh's)")
    s.add_argument("--check-through", type=int, metavar="H",
                   help="exit 1 unless the simulation is within --tolerance of every eager point up to H hosts")
    s.add_argument("--tolerance", type=float, default=0.005, help="relative (default 0.005)")
    s.add_argument("--chain-tolerance", type=float, metavar="F",
                   help="with --check-through: also exit 1 unless the chain is within F (relative)")
    p = sub.add_parser("probe", help="eager_ring_probe.c's output beside the event simulation")
    p.add_argument("output", type=Path, help="the probe's stdout")
    p.add_argument("--hosts", type=int, required=True)
    p.add_argument("--ranks-per-host", type=int, required=True)
    p.add_argument("--message", type=int, required=True, help="bytes per step (the probe's argument)")
    p.add_argument("--inter-lat", type=float, default=3.0, help="us host to host (make-platform flat: 3)")
    p.add_argument("--inter-GBps", type=float, default=25.0, help="per NIC and direction (default 25)")
    p.add_argument("--loopback-lat", type=float, default=1.0, help="us (default 1)")
    p.add_argument("--loopback-GBps", type=float, default=150.0, help="(default 150)")
    p.add_argument("--check", action="store_true", help="exit 1 unless the skewed simulation is within --tolerance")
    p.add_argument("--tolerance", type=float, default=0.005, help="relative (default 0.005)")
    a = ap.parse_args()
    for name in ("tolerance", "chain_tolerance"):
        v = getattr(a, name, None)
        if v is not None and not (math.isfinite(v) and v >= 0):
            die(f"--{name.replace('_', '-')} {v}: expected a finite number >= 0")
    if a.cmd == "probe" and (a.hosts < 1 or a.ranks_per_host < 1 or a.hosts * a.ranks_per_host < 2
                             or a.message < 1):
        die("--hosts and --ranks-per-host >= 1 (at least 2 ranks in all), --message >= 1")
    if a.cmd == "series" and a.check_through is not None and a.check_through < 1:
        die(f"--check-through {a.check_through}: expected a host count >= 1")
    return cmd_series(a) if a.cmd == "series" else cmd_probe(a)


if __name__ == "__main__":
    sys.exit(main())

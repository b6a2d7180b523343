"""Prices never fall with size on other host counts (docs/CALIBRATION.md "Other host counts"): every
SMPI host series under tests/data/smpi-hosts calibrated from its 2- and 4-host sweeps (with its ring
routes), then priced at 2-16 hosts x 1, 2, 4 ranks per host for all_gather, all_reduce and
reduce_scatter from 1 KiB to 173 MiB in 1/16 octaves (the package prices through the C++ core). Where
a price past an overlapped ring's protocol switch is held at the eager price at the switch (the
note says so; host_transport.cpp eager_edge_size), or an eager chain's price at its price at a
smaller size (chain_held_us), the test oracle (tests/calibrate/oracle) prices it too: the same time,
interval and note.
Collectives left to Open MPI's selector (not forced to one algorithm in the profile's
extra.mpi_selector) are not checked for falls: their measured times fall at the selector's algorithm
switches (all_reduce on 16 hosts x 4: 103.6 -> 54.3 us from 128 to 256 KiB); their held prices are
compared with the oracle's too.

usage: hosts_monotone_test.py SHARDBENCH REPO"""
import glob
import json
import os
import subprocess
import sys
import tempfile


def main(sb, repo):
    import shardcal.profile as sp
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from oracle import profile as oracle

    series = sorted(glob.glob(os.path.join(repo, "tests", "data", "smpi-hosts", "*", "hosts4.jsonl")))
    assert len(series) >= 10, series
    checked = skipped = priced = held = chain_held = 0
    with tempfile.TemporaryDirectory() as tmp:
        for h4 in series:
            d = os.path.dirname(h4)
            name = os.path.basename(d)
            out = os.path.join(tmp, name + ".json")
            routes = os.path.join(d, "routes.json")
            cmd = [sb, "calibrate", "--results", os.path.join(d, "hosts2.jsonl"), h4, "--out", out,
                   "--name", name] + (["--routes", routes] if os.path.exists(routes) else [])
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, f"{name}: {r.stderr}"
            prof, oprof = sp.load(out), oracle.load(out)
            with open(out) as f:
                sel = json.load(f).get("extra", {}).get("mpi_selector")
            for coll in ("all_gather", "all_reduce", "reduce_scatter"):
                falls_real = bool(sel and sel.get("selector") == "ompi" and coll not in sel.get("forced", {}))
                skipped += falls_real
                checked += not falls_real
                for hosts in range(2, 17):
                    for rph in (1, 2, 4):
                        prev = None
                        for e in range(160, 440):  # 2^10 .. 2^27.4375 B
                            b = 2.0 ** (e / 16)
                            p = prof.predict(coll, hosts * rph, hosts, rph, nbytes=b)
                            t = p.time_us
                            priced += 1
                            held_chain = "held at the chain's price" in p.note
                            chain_held += held_chain
                            if "held at the eager steps' price" in p.note or held_chain:
                                held += not held_chain
                                o = oprof.predict(coll, hosts * rph, hosts, rph, nbytes=b)
                                assert (o.time_us, o.note) == (t, p.note), (name, coll, hosts, rph, b, o, p)
                                for a, c in ((o.lo_us, p.lo_us), (o.hi_us, p.hi_us)):
                                    assert abs(a - c) <= 1e-12 * c, (name, coll, hosts, rph, b, o, p)
                            assert falls_real or prev is None or t >= prev[1], (
                                f"{name}: {coll} on {hosts} hosts x {rph}: {prev[1]!r} us at {prev[0]!r} B, "
                                f"{t!r} us at {b!r} B")
                            prev = (b, t)
    assert checked >= 30 and priced >= 39 * 45 * 280 and held >= 15 and chain_held >= 15, (
        checked, priced, held, chain_held)
    print(f"hosts monotone: {checked} series x collective ({skipped} left to Open MPI's selector: not checked "
          f"for falls), {priced} prices, none falls with size; {held} held at the eager price at the switch, "
          f"{chain_held} at the eager chain's price at a smaller size, as the oracle")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

#!/usr/bin/python3
"""`shardbench predict` end to end: JSON output equals the Python module's prediction, text
output names model/segment/extrapolation, and bad profiles or arguments exit 2 with one clear
message. Usage: predict_cli_test.py SHARDBENCH REPO"""
import json
import os
import subprocess
import sys
import tempfile


def run(sb, *args):
    return subprocess.run([sb, "predict", *args], capture_output=True, text=True, timeout=60)


def main(sb, repo):
    import shardcal.profile as sp

    dt = os.path.join(repo, "configs", "profiles", "dtensor-default.json")
    prof = sp.load(dt)
    # A 1 MiB all_gather over 8 ranks on 2 hosts, as JSON, against the module.
    r = run(sb, "--profile", dt, "--collective", "all_gather", "--group-size", "8", "--hosts", "2",
            "--ranks-per-host", "4", "--bytes", "1MiB", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    want = prof.predict("all_gather", 8, 2, 4, nbytes=1 << 20)
    assert abs(j["time_us"] - want.time_us) <= 1e-12 * want.time_us, (j, want)
    assert j["model"]["index"] == want.model.index and j["segment"]["index"] == 0
    assert j["extrapolated"] is False and j["model"]["hosts"] == 2
    # Text form; uneven counts with a dtype.
    r = run(sb, "--profile", dt, "--collective", "reduce_scatter", "--group-size", "4", "--counts", "3,5,0,4",
            "--dtype", "f32")
    assert r.returncode == 0, r.stderr
    assert "model /models/2" in r.stdout and "segment 0" in r.stdout and "extrapolated: no" in r.stdout, r.stdout
    assert "S_eff=48 B" in r.stdout, r.stdout
    # all_reduce/broadcast counts are the buffer (the same at every position):
    # --counts 4,4,4,4 --dtype f32 is S = 16 B, as --bytes 16, and the pair is consistent.
    def js(*args):
        r = run(sb, "--profile", dt, *args, "--json")
        assert r.returncode == 0, (args, r.stderr)
        return json.loads(r.stdout)

    a = js("--collective", "all_reduce", "--group-size", "4", "--bytes", "16", "--dtype", "f32")
    b = js("--collective", "all_reduce", "--group-size", "4", "--counts", "4,4,4,4", "--dtype", "f32")
    c = js("--collective", "all_reduce", "--group-size", "4", "--bytes", "16", "--counts", "4,4,4,4", "--dtype", "f32")
    assert a["s_eff_bytes"] == b["s_eff_bytes"] == c["s_eff_bytes"] == 16, (a, b, c)
    assert a["time_us"] == b["time_us"] == c["time_us"], (a, b, c)
    # DTensor prices Shard -> Shard as allgather_cost + 1.0 us.
    a = js("--collective", "all_gather", "--group-size", "8", "--hosts", "2", "--bytes", "1MiB")
    b = js("--collective", "all_to_all", "--group-size", "8", "--hosts", "2", "--bytes", "1MiB")
    assert abs(b["time_us"] - (a["time_us"] + 1.0)) <= 1e-9 * b["time_us"], (a, b)
    # all_to_all counts: one row (what every rank sends to each position) or the n x n matrix;
    # the matrix's S is its largest row (here 2 + 9 = 11 elements = 44 B).
    b = js("--collective", "all_to_all", "--group-size", "2", "--counts", "1,2,9,2", "--bytes", "44",
           "--dtype", "f32")
    want = prof.predict("all_to_all", 2, 1, 2, counts=[1, 2, 9, 2], elem_size=4, dtype="f32")
    assert b["s_eff_bytes"] == want.s_eff == 44 and abs(b["time_us"] - want.time_us) <= 1e-12 * want.time_us, (b, want)
    with tempfile.TemporaryDirectory() as tmp:
        # A measured-style profile with one class: another class is extrapolated and says so.
        doc = json.load(open(dt))
        doc["backend"] = "mpi"
        doc["models"] = [m for m in doc["models"] if m["hosts"] == 1]
        for m in doc["models"]:
            del m["domain"]
            m["group_sizes"] = [2, 4]
        one = os.path.join(tmp, "one.json")
        json.dump(doc, open(one, "w"))
        r = run(sb, "--profile", one, "--collective", "all_gather", "--group-size", "8", "--hosts", "2",
                "--bytes", "4096")
        assert r.returncode == 0, r.stderr
        assert "extrapolated: yes (nearest measured class: hosts=1" in r.stdout, r.stdout
        # Bad profiles and arguments: exit 2, one line naming the problem.
        text = open(dt).read()
        bad = {
            "truncated": (text[: len(text) // 2], "not valid JSON"),
            "empty": ("", "empty"),
            "version": (text.replace('"version": 1', '"version": 7'), "/version: unsupported version 7"),
            "negative B": (text.replace('"bandwidth_GBps": 94.1671579648', '"bandwidth_GBps": -1', 1),
                           "/models/0/segments/0/bandwidth_GBps"),
        }
        for name, (content, words) in bad.items():
            path = os.path.join(tmp, name + ".json")
            open(path, "w").write(content)
            r = run(sb, "--profile", path, "--collective", "all_gather", "--group-size", "4", "--bytes", "1")
            assert r.returncode == 2, (name, r.returncode, r.stderr)
            assert words in r.stderr and r.stderr.count("\n") == 1, (name, r.stderr)
            assert "Traceback" not in r.stderr
    for args, words in [
        (["--collective", "allgatherv", "--group-size", "4", "--bytes", "1"], "all_gather"),
        (["--collective", "all_gather", "--group-size", "4", "--bytes", "1 MiB"], "not a byte count"),
        (["--collective", "all_gather", "--group-size", "4", "--counts", "1,x,2,3"], "--counts: item 1"),
        (["--collective", "all_gather", "--group-size", "4", "--counts", "1,2,3"], "counts has 3 entries"),
        (["--collective", "all_gather", "--group-size", "4", "--bytes", "10", "--counts", "1,2,3,5"], "disagrees"),
        (["--collective", "all_gather", "--group-size", "6", "--hosts", "4", "--bytes", "1"], "not a multiple"),
        (["--collective", "broadcast", "--group-size", "4", "--bytes", "1"], "no model for broadcast"),
        (["--collective", "all_reduce", "--group-size", "4", "--counts", "4,5,4,4"], "has no v-form"),
        (["--collective", "all_reduce", "--group-size", "4", "--bytes", "64", "--counts", "4,4,4,4",
          "--dtype", "f32"], "disagrees"),
        (["--collective", "all_to_all", "--group-size", "4", "--counts", "1,2,3,4,5"], "n x n"),
        (["--collective", "all_gather", "--group-size", "4"], "give --bytes"),
    ]:
        r = run(sb, "--profile", dt, *args)
        assert r.returncode == 2, (args, r.returncode, r.stdout, r.stderr)
        assert words in r.stderr, (args, r.stderr)
    # A profile written by `shardbench calibrate` (when this build has it): both readers load it
    # and agree on its predictions.
    if subprocess.run([sb, "calibrate", "--help"], capture_output=True).returncode == 0:
        with tempfile.TemporaryDirectory() as tmp:
            res, out = os.path.join(tmp, "r.jsonl"), os.path.join(tmp, "p.json")
            cfg = os.path.join(repo, "tests", "calibrate", "configs", "cli.json")
            r = subprocess.run([sb, "sweep", "--backend", "sim", "--world", "4", "--config", cfg, "--out", res],
                               capture_output=True, text=True, timeout=240)
            assert r.returncode == 0, r.stderr
            r = subprocess.run([sb, "calibrate", "--results", res, "--out", out], capture_output=True, text=True,
                               timeout=240)
            assert r.returncode == 0, r.stderr
            fitted = sp.load(out)
            assert fitted.models, "calibrate wrote no model"
            for m in fitted.models:
                n = m.group_sizes[-1] if m.group_sizes else 2
                for nbytes in (8, 4096, 1 << 20):
                    r = run(sb, "--profile", out, "--collective", m.collective, "--group-size", str(n),
                            "--hosts", str(m.hosts), "--concurrent-groups", str(m.concurrent_groups),
                            "--bytes", str(nbytes), "--json")
                    assert r.returncode == 0, r.stderr
                    j = json.loads(r.stdout)
                    want = fitted.predict(m.collective, n, m.hosts, nbytes=nbytes,
                                          concurrent_groups=m.concurrent_groups)
                    assert abs(j["time_us"] - want.time_us) <= 1e-9 * want.time_us, (j, want)
                    assert j["extrapolated"] == want.extrapolated
            print(f"predict CLI: calibrate's profile ({len(fitted.models)} models) read by both readers")
    transport(sb, repo, sp)
    past_the_sweep(sb, repo, sp)
    link_ceiling(sb, repo)
    ring_routes(sb, repo)
    python_profile_edges(repo)
    print("predict CLI: ok")


def transport(sb, repo, sp):
    """A host count no model measured: predict's JSON says where the price came from (base count,
    doublings, laws, the count that tested them), the text names it, and `plan` shows the same
    note on the step it priced that way (docs/CALIBRATION.md "Other host counts")."""
    series = os.path.join(repo, "tests", "data", "smpi-hosts", "flat")
    with tempfile.TemporaryDirectory() as tmp:
        prof = os.path.join(tmp, "p.json")
        r = subprocess.run([sb, "calibrate", "--results", os.path.join(series, "hosts2.jsonl"),
                            os.path.join(series, "hosts4.jsonl"), "--out", prof, "--name", "smpi-2-4"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        args = ["--profile", prof, "--collective", "all_gather", "--group-size", "32", "--hosts", "8",
                "--ranks-per-host", "4", "--bytes", "4MiB", "--dtype", "f32"]
        r = run(sb, *args, "--json")
        assert r.returncode == 0, r.stderr
        j = json.loads(r.stdout)
        t = j["transport"]
        for k in ("latency_floor_us", "latency_ratio", "bandwidth_ratio"):
            assert t.pop(k) > 0, (k, t)
        assert t == {"from_hosts": 4, "to_hosts": 8, "doublings": 1.0, "tested_by_hosts": 2,
                     "laws_chosen_by_test": False, "test_across_switch": False, "latency_law": "ring-steps",
                     "bandwidth_law": "bus-factor", "two_node_switch": False, "algorithm_unknown": False,
                     "equal_messages": True, "measured_bytes": float(2 << 20)}, t
        assert j["extrapolated"] is True and "transported from the measured hosts=4" in j["note"], j
        assert j["basis"].startswith("hosts=4 transported to hosts=8, tested by hosts=2"), j["basis"]
        want = sp.load(prof).predict("all_gather", 32, 8, 4, nbytes=4 << 20, dtype="f32")
        assert abs(j["time_us"] - want.time_us) <= 1e-9 * want.time_us, (j["time_us"], want.time_us)
        r = run(sb, *args)
        assert r.returncode == 0 and "hosts=8 transported from the measured hosts=4 (1 doubling" in r.stdout, r.stdout
        # A measured class has no transport.
        r = run(sb, "--profile", prof, "--collective", "all_gather", "--group-size", "16", "--hosts", "4",
                "--ranks-per-host", "4", "--bytes", "4MiB", "--dtype", "f32", "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["transport"] is None, r.stdout
        # plan on a 32-rank mesh of 8 hosts: its all_gather step is priced by the transport and says so.
        r = subprocess.run([sb, "plan", "--profile", prof, "--mesh", "32", "--ranks-per-host", "4", "--shape",
                            "4096x1024", "--dtype", "f32", "--from", "S(0)", "--to", "R"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "transported from the measured hosts=4" in r.stdout, r.stdout
    print("predict CLI: host-count transport named in JSON, text and plan")


def python_profile_edges(repo):
    """The Python package over the C++ reader (issue 45 review): an error message cut inside a
    UTF-8 character still reads (not an empty ProfileError), and a profile built from a dict does
    not follow later changes to that dict, in its views or a pickled copy."""
    import pickle
    import shardcal.profile as sp
    with open(os.path.join(repo, "configs", "profiles", "dtensor-default.json")) as f:
        base = json.load(f)
    for bad in ("a" + "\u00e9" * 200, "aa" + "\u00e9" * 200):
        d = json.loads(json.dumps(base))
        d["models"][0]["hosts"] = bad
        try:
            sp.Profile(d)
        except sp.ProfileError as e:
            assert "hosts" in str(e) or "/models/0" in str(e), str(e)
        else:
            raise AssertionError("a string host count was accepted")
    d = json.loads(json.dumps(base))
    p = sp.Profile(d)
    before = p.predict("all_gather", 8, 1, 8, nbytes=1 << 20).time_us
    d["models"][0]["segments"][0]["alpha_us"] = 9999.0
    assert p.predict("all_gather", 8, 1, 8, nbytes=1 << 20).time_us == before
    assert pickle.loads(pickle.dumps(p)).predict("all_gather", 8, 1, 8, nbytes=1 << 20).time_us == before
    print("predict CLI: the Python profile's errors and copies")


def link_ceiling(sb, repo):
    """The GPUs' link ceiling (docs/CALIBRATION.md "Link ceilings"): a log naming H100s gets the
    ceiling in its profile; fitted to a flat top (sizes <= 4 MiB), prices far past it sit on the
    floor, say so, and never fall below it; a log whose GPUs the table rates below what the log
    measured (H100 times relabelled as T4s) loses the ceiling, and calibrate says why."""
    log = os.path.join(repo, "tests", "data", "realdata", "ncclt-all_gather-H100-1x8-1.txt")
    with tempfile.TemporaryDirectory() as tmp:
        cut = os.path.join(tmp, "ag.txt")
        with open(log) as f, open(cut, "w") as out:
            for line in f:
                fields = line.split()
                if fields and fields[0].isdigit() and len(fields) > 6 and int(fields[0]) > 4 << 20:
                    continue
                out.write(line)
        res, prof = os.path.join(tmp, "r.jsonl"), os.path.join(tmp, "p.json")
        for cmd in (["import", cut, "--out", res], ["calibrate", "--results", res, "--out", prof]):
            r = subprocess.run([sb, *cmd], capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr
        assert "link ceiling: 513 GB/s per GPU and direction (H100" in r.stdout, r.stdout
        with open(prof) as f:
            lc = json.load(f)["extra"]["link_ceiling"]
        assert lc["GBps"] == 513 and lc["gpus"] == ["NVIDIA H100 80GB HBM3"], lc
        def q(nbytes):
            r = run(sb, "--profile", prof, "--collective", "all_gather", "--group-size", "8",
                    "--bytes", str(nbytes), "--json")
            assert r.returncode == 0, r.stderr
            return json.loads(r.stdout)
        floor = lambda s: s * 7 / 8 / 513 * 1e-3  # us: all_gather moves (n-1)/n of S per rank
        big = q(8 << 30)
        assert big["link_ceiling"]["binds"] is True, big
        assert abs(big["time_us"] - floor(8 << 30)) <= 1e-9 * big["time_us"], big
        assert big["interval_us"][0] >= big["link_ceiling"]["floor_us"] * (1 - 1e-12), big
        assert "priced at the GPUs' link ceiling (513 GB/s" in big["note"], big["note"]
        assert big["time_us"] == big["link_ceiling"]["floor_us"], big  # exactly on it: binds is reliable
        # Uneven counts: S_eff (8 x the largest shard) is the model's size, not the bytes that must
        # move, so the note does not claim a physical bound there.
        r = run(sb, "--profile", prof, "--collective", "all_gather", "--group-size", "8", "--counts",
                ",".join([str(1 << 28)] + ["0"] * 7), "--dtype", "f32", "--json")
        assert r.returncode == 0, r.stderr
        uneven = json.loads(r.stdout)
        assert uneven["link_ceiling"]["binds"] is True and "the floor at S_eff" in uneven["note"], uneven
        small = q(1 << 20)
        assert small["link_ceiling"]["binds"] is False and "link ceiling" not in small["note"], small
        for e in range(20, 40):
            p = q(1 << e)
            assert p["time_us"] >= floor(1 << e) * (1 - 1e-12) and p["interval_us"][0] <= p["time_us"], (e, p)
        # Relabelled as T4s (15.75 GB/s): the log's own times refute the ceiling.
        t4 = os.path.join(tmp, "t4.txt")
        with open(cut) as f, open(t4, "w") as out:
            out.write(f.read().replace("NVIDIA H100 80GB HBM3", "Tesla T4"))
        for cmd in (["import", t4, "--out", res], ["calibrate", "--results", res, "--out", prof]):
            r = subprocess.run([sb, *cmd], capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr
        assert "link ceiling 15.75 GB/s (T4: PCIe 3.0 x16 15.75 GB/s) dropped:" in r.stdout, r.stdout
        with open(prof) as f:
            doc = json.load(f)
        assert "link_ceiling" not in doc["extra"] and "link_ceiling_dropped" in doc["extra"], doc["extra"]
        assert q(8 << 30)["link_ceiling"] is None


def ring_routes(sb, repo):
    """calibrate --routes (docs/CALIBRATION.md "Other host counts"): the fat-tree series' table goes
    into the profile and predict names what it adds (text and JSON) or why not; a table whose host
    order is not the sweep's, an empty table and a missing file exit 2 without a profile."""
    d = os.path.join(repo, "tests", "data", "smpi-hosts", "fat-tree")
    res = [os.path.join(d, f"hosts{h}.jsonl") for h in (2, 4)]
    with tempfile.TemporaryDirectory() as tmp:
        prof = os.path.join(tmp, "p.json")
        r = subprocess.run([sb, "calibrate", "--results", *res, "--routes", os.path.join(d, "routes.json"),
                            "--out", prof], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "ring routes: 15 host counts" in r.stdout, (r.stdout, r.stderr)
        with open(prof) as f:
            rr = json.load(f)["extra"]["ring_routes"]
        assert rr["hosts_order"][:3] == ["node-0", "node-1", "node-2"] and len(rr["rings"]) == 15, rr
        def q(hosts, *extra):
            r = run(sb, "--profile", prof, "--collective", "all_gather", "--bytes", "1MiB", "--group-size",
                    str(4 * hosts), "--hosts", str(hosts), "--ranks-per-host", "4", "--json", *extra)
            assert r.returncode == 0, r.stderr
            return json.loads(r.stdout)
        p8 = q(8)
        routes = p8["transport"]["routes"]
        assert routes["applied"] is True and routes["extra_us_per_step"] == 1.5 and routes["steps"] == 31, routes
        assert routes["share_ratio"] == 1.0 and routes["skew_us"] == 0.0, routes  # the table's share_skew_us
        # (one share: the price splits at its time at 1 B, as without routes)
        assert routes["latency_split_us"] == p8["transport"]["latency_floor_us"], routes
        assert "+1.5 us on each of 31 steps" in p8["note"], p8["note"]
        assert abs(p8["time_us"] - 133.652) < 0.01, p8  # the SMPI series' measured 133.65 us
        p32 = q(32)  # past the table (2..16): not applied, and said so
        assert p32["transport"]["routes"] == {"applied": False, "reason": "hosts=32 is not in the table"}, p32
        assert "ring routes not applied (hosts=32 is not in the table)" in p32["note"], p32["note"]
        # Bad tables: one error line, exit 2, no profile.
        spread = os.path.join(tmp, "spread.json")
        with open(os.path.join(d, "routes.json")) as f:
            doc = json.load(f)
        doc["hosts_order"] = ["node-0", "node-4", "node-8", "node-12"] + [h for h in doc["hosts_order"]
                                                                          if h not in ("node-0", "node-4", "node-8", "node-12")]
        with open(spread, "w") as f:
            json.dump(doc, f)
        swapped = os.path.join(tmp, "swapped.json")  # the sweep's hosts, another order: another ring
        with open(os.path.join(d, "routes.json")) as f:
            doc = json.load(f)
        doc["hosts_order"][0], doc["hosts_order"][1] = doc["hosts_order"][1], doc["hosts_order"][0]
        with open(swapped, "w") as f:
            json.dump(doc, f)
        empty = os.path.join(tmp, "empty.json")
        with open(empty, "w") as f:
            json.dump({"format": "shardcal-ring-routes/1", "rings": []}, f)
        for path, words in ((spread, "its rings are not the ones the sweep ran"),
                            (swapped, "its rings are not the ones the sweep ran"), (empty, "no host counts"),
                            (os.path.join(tmp, "nope.json"), "nope.json")):
            out = os.path.join(tmp, "bad.json")
            r = subprocess.run([sb, "calibrate", "--results", *res, "--routes", path, "--out", out],
                               capture_output=True, text=True, timeout=120)
            lines = r.stderr.splitlines()
            assert r.returncode == 2 and len(lines) == 1 and words in lines[0] and not os.path.exists(out), \
                (path, r.returncode, r.stderr)


def past_the_sweep(sb, repo, sp):
    """Sizes past the measured ones and a link class never measured (issue 43): `predict` says so in
    one field (text note, --json `extrapolation`), C++ and Python agree, prices never fall with size
    and the interval holds the price past both ends, and `plan` says when its choice rests on
    extrapolated prices (docs/CALIBRATION.md "Past the measured sizes")."""
    log = os.path.join(repo, "tests", "data", "realdata", "ncclt-all_reduce-H100-2x8-1.txt")
    with tempfile.TemporaryDirectory() as tmp:
        res, prof = os.path.join(tmp, "r.jsonl"), os.path.join(tmp, "p.json")
        for cmd in (["import", log, "--out", res], ["calibrate", "--results", res, "--out", prof]):
            r = subprocess.run([sb, *cmd], capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr
        py = sp.load(prof)
        def q(nbytes, hosts=2, rph=8):
            r = run(sb, "--profile", prof, "--collective", "all_reduce", "--group-size", "16", "--hosts",
                    str(hosts), "--ranks-per-host", str(rph), "--bytes", str(nbytes), "--json")
            assert r.returncode == 0, r.stderr
            return json.loads(r.stdout)
        inside = q(1 << 20)  # measured: 8 B .. 8 GiB
        assert inside["extrapolated"] is False and inside["extrapolation"]["size"] is None, inside
        above = q(8 * 8589934592)
        size = above["extrapolation"]["size"]
        assert above["extrapolated"] is True and size["direction"] == "above", above
        assert abs(size["factor"] - 8.0) < 1e-9 and size["measured_edge_bytes"] == 8589934592, size
        assert "8x above the largest measured" in above["note"], above["note"]
        want = py.predict("all_reduce", 16, 2, 8, nbytes=8 * 8589934592)
        assert want.extrapolated and abs(want.time_us - above["time_us"]) <= 1e-9 * want.time_us
        assert want.size_octaves == 3.0 and want.size_edge_bytes == 8589934592, want
        zero = q(0)  # below 1 B the price is the 1-byte price: no factor
        assert zero["extrapolation"]["size"] == {"direction": "below", "factor": None, "measured_edge_bytes": 8.0}
        assert "0 B is below the smallest measured (8 B)" in zero["note"], zero["note"]
        # Prices never fall with size, and the interval holds the price, past both ends.
        prev = 0.0
        for e in range(-4, 80):  # 1 B .. 2^40 B in half octaves
            p = py.predict("all_reduce", 16, 2, 8, nbytes=2.0 ** (e / 2))
            assert p.lo_us <= p.time_us <= p.hi_us and p.time_us >= prev, (e, p)
            prev = p.time_us
        # An intra-host group from an inter-host profile: labelled, and plan says its choice rests on it.
        other = q(1 << 20, hosts=1, rph=16)
        assert other["extrapolation"]["other_side"] is True, other
        assert "intra-host group priced from inter-host measurements" in other["note"], other["note"]
        r = subprocess.run([sb, "plan", "--profile", prof, "--mesh", "2x4", "--ranks-per-host", "4", "--shape",
                            "8192x8192", "--dtype", "bf16", "--from", "P(sum),P(sum)", "--to", "R,R", "--k", "1"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "the choice rests on extrapolated prices" in r.stdout and "link class never measured" in r.stdout, \
            r.stdout
        # The host links' floor (docs/CALIBRATION.md "Link ceilings"): 2 ranks on 2 hosts move half
        # of 1 GiB off each host through one H100's PCIe 5.0 (63 GB/s): >= 8.52 ms; the bus factor
        # alone priced it at 4.0 ms. The measured class (8 ranks per host) stays above it.
        assert json.load(open(prof))["extra"]["link_ceiling"]["host_GBps"] == 63.0
        one = json.loads(run(sb, "--profile", prof, "--collective", "all_reduce", "--group-size", "2", "--hosts", "2",
                             "--ranks-per-host", "1", "--bytes", "1GiB", "--json").stdout)
        floor = 2.0 ** 29 / 63e9 * 1e6
        assert one["link_ceiling"]["host_link_binds"] is True and abs(one["time_us"] - floor) <= 1e-9 * floor, one
        assert one["interval_us"][1] > 1.2 * one["time_us"], one  # lifted, not collapsed onto the floor
        assert "priced at the host links' floor (63 GB/s" in one["note"], one["note"]
        assert py.predict("all_reduce", 2, 2, 1, nbytes=2.0 ** 30).time_us == one["time_us"]
        assert q(1 << 30)["link_ceiling"]["host_link_binds"] is False
        # A log whose points beat the floor (the 2x8 log filed as 16 hosts x 1 rank: 8 GiB in 47.5 ms
        # against 127 ms) drops the host link alone: the whole ceiling stays.
        res16, prof16 = os.path.join(tmp, "r16.jsonl"), os.path.join(tmp, "p16.json")
        for cmd in (["import", log, "--hosts", "16", "--ranks-per-host", "1", "--out", res16],
                    ["calibrate", "--results", res16, "--out", prof16]):
            r = subprocess.run([sb, *cmd], capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr
        assert "host-link floor 63 GB/s dropped (the rest of the ceiling kept)" in r.stdout, r.stdout
        extra = json.load(open(prof16))["extra"]
        assert "host_GBps" not in extra["link_ceiling"] and extra["link_ceiling"]["GBps"] == 513.0, extra
        assert "host-link floor" in extra["link_ceiling_dropped"], extra
    print("predict CLI: sizes past the sweep and other link classes named in JSON, text and plan; the host "
          "links' floor binds where the bus factor ran faster than PCIe, dropped where a log beat it")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

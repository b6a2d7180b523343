#!/usr/bin/python3
"""Checks of the profile readers and prices run by ctest with the project's venv python (the
package shardcal with its compiled core shardcal._core; the schema check needs jsonschema and
skips without it). The package prices through the C++ cost model; the pure-Python pricing in
tests/calibrate/oracle/ (the package's own before issue 45) is the oracle these checks hold it to.

  schema REPO       configs/schema/profile.schema.json accepts valid profiles, rejects bad ones.
  parity TOOL REPO   C++ predict (tests/calibrate/profile_predict_tool), the package
                     (shardcal.profile, installed from calibrate/python) and the oracle agree on
                     >= 1000 random queries over random profiles and
                     configs/profiles/dtensor-default.json: the package's times and intervals
                     equal C++'s bit for bit, the oracle's within 1e-9 relative; same model, same
                     segment, same extrapolation flag, the same notes word for word; same queries
                     rejected; the three readers accept and reject the same mutated profiles.
                     Some random profiles carry a GPU link ceiling (extra.link_ceiling, docs/
                     CALIBRATION.md "Link ceilings") low enough that the floor binds on a share
                     of queries: prices, interval ends, transported prices and the curve's
                     upward line on or moved by the floor are counted, and too few fail.
                     Some carry the network's ring routes (extra.ring_routes, host_transport.cpp
                     route_ring): transported queries priced with them (neighbour rings, longer
                     and shorter routes, link-share ratios), overlapped (MPI reduce_scatter: the
                     extra latency in the interval), not applied (NCCL's tree-depth all_reduce,
                     the ompi selector's other algorithms, other laws) and the second count's
                     test with them are counted, and too few fail.
  table TOOL REPO    the Python module's copy of the collective table (COLLECTIVES, HAS_V_FORM,
                     busbw_factor, ring_steps) and the collective enum of
                     configs/schema/profile.schema.json equal the C++ table
                     (profile_predict_tool --table); and the link class of every dim of meshes
                     aligned with the hosts or not (mesh 2x3 on 4-rank hosts: groups of 3 across
                     a host boundary) is the same in shardcal.formats, in mesh_topo() and in C++
                     (profile_predict_tool --link-classes: `shardbench plan`'s rule).
  timefn REPO        Profile.time_fn (the DTensor adapter's time-only prices, a shardcal._core.TimeFn
                     that the compiled plan search evaluates itself) is bit-identical to
                     predict().time_us on random queries over random profiles with curves and
                     transported host counts; same queries rejected with the same message; and
                     the oracle's time_fn gives the same bits, also swept across each curve;
                     some profiles with a link ceiling (queries and swept sizes on its floor
                     counted, too few fail) and with ring routes (queries priced with and
                     without them counted, too few fail).
  dtensor REPO       configs/profiles/dtensor-default.json reproduces PyTorch DTensor's cost
                     functions (torch/distributed/tensor/_collective_utils.py: MeshTopoInfo,
                     allgather_cost, allreduce_cost, reduce_scatter_cost, and redistribute_cost's
                     Shard -> Shard = allgather_cost + 1.0 us for all_to_all), written out here
                     from their published formulas, on random meshes; and mesh_topo() returns
                     DTensor's per-dim bandwidth and latency.
"""
import itertools
import json
import math
import os
import random
import subprocess
import sys
import tempfile

# The collective names in table order, from the source tree's table data (the `table` check
# compares them with the C++ table), so a new collective needs no edit here.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "calibrate", "python",
                       "shardcal", "collectives.json"), encoding="utf-8") as _f:
    COLLS = [row["name"] for row in json.load(_f)["collectives"]]
DTYPES = ["f32", "f64", "f16", "bf16", "i32", "i64", "u8"]


def load_module(repo):
    import shardcal.profile

    return shardcal.profile


def load_oracle():
    """tests/calibrate/oracle/profile.py: the pure-Python pricing, a test oracle only."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import oracle.profile

    return oracle.profile


def rnum(rng, lo, hi):
    # Mix of "nice" and arbitrary doubles, so parsing and arithmetic both get exercised.
    x = rng.uniform(lo, hi)
    return round(x, rng.choice([0, 1, 3, 17]))


def random_profile(rng, host_counts=(1, 1, 2, 4), colls=None, cgs=(1, 1, 2, 4), dtypes=(None, None, "f32", "bf16")):
    models = []
    used = set()
    for _ in range(rng.randint(1, 10)):
        coll = rng.choice(colls or COLLS)
        hosts = rng.choice(host_counts)
        cg = rng.choice(cgs)
        dtype = rng.choice(dtypes)
        if (coll, hosts, cg, dtype) in used:
            continue
        used.add((coll, hosts, cg, dtype))
        sizes = sorted(rng.sample([hosts * k for k in range(1, 9)], rng.randint(0, 3)))
        nseg = rng.randint(1, 4)
        breaks = sorted(rng.sample([2 ** k for k in range(3, 26)], nseg - 1))
        bounds = [0] + breaks + [None]
        segs = [{"s_lo": bounds[i], "s_hi": bounds[i + 1], "alpha_us": rnum(rng, 0, 50),
                 "alpha_step_us": rnum(rng, 0, 5), "bandwidth_GBps": max(0.01, rnum(rng, 0.01, 400))}
                for i in range(nseg)]
        for seg in segs:  # optional relative standard errors (measured profiles carry them)
            if rng.random() < 0.3:
                seg["alpha_rel_se"] = rnum(rng, 0, 2)
                seg["bandwidth_rel_se"] = rnum(rng, 0, 0.5)
            if rng.random() < 0.3:  # contention between concurrent groups (pooled models)
                seg["contention"] = rnum(rng, 0, 1.5)
        m = {"collective": coll, "hosts": hosts, "concurrent_groups": cg, "dtype": dtype, "group_sizes": sizes,
             "effective_size": rng.choice(["total", "n_times_max"]), "segments": segs,
             "quality": {"points": 10, "mape": 0.05, "max_rel_error": 0.2, "holdout_mape": None,
                         "leave_group_out_mape": 0.1}}
        if rng.random() < 0.6:  # measured curves (cost_model: the second layer), some classes
            curves = []
            for n in sorted(set(rng.choice([hosts * k for k in range(1, 9)]) for _ in range(rng.randint(1, 3)))):
                if n < 2:
                    continue
                k = rng.randint(2, 9)
                by = sorted(set(float(rng.choice([2 ** rng.randint(0, 30), rng.randint(1, 1 << 28)])) for _ in range(k)))
                if len(by) < 2:
                    continue
                curves.append({"group_size": n, "concurrent_groups": rng.choice([1, cg]),
                               "bytes": by, "log_ratio": [rnum(rng, -0.5, 0.5) for _ in by],
                               "kappa": [0.0] + [rnum(rng, 0, 0.2) for _ in by[1:-1]] + [0.0],
                               "kappa_scale": rnum(rng, 0, 0.2), "noise": rnum(rng, 0.001, 0.05),
                               "shrink": rnum(rng, 0, 1), "weight": rng.choice([1.0, rnum(rng, 0, 1)])})
            seen_nc = set()
            curves = [c for c in curves if (c["group_size"], c["concurrent_groups"]) not in seen_nc
                      and not seen_nc.add((c["group_size"], c["concurrent_groups"]))]
            if curves:
                m["curves"] = curves
        if rng.random() < 0.3:
            lo = rng.choice([0, 64])
            m["domain"] = {"hosts": [hosts, rng.choice([hosts, None])], "concurrent_groups": [1, rng.choice([cg, None])],
                           "group_size": [1, rng.choice([None, 16])], "bytes": [lo, rng.choice([None, 1 << 22])]}
            if rng.random() < 0.6:  # measured (n, c) pairs: queries between them or not
                m["domain"]["classes"] = [[rng.choice([1, 2, 4, 8, 16]), rng.choice([1, 2, 4, 8])]
                                          for _ in range(rng.randint(1, 4))]
        models.append(m)
    doc = {"schema": "shardcal.profile", "version": 1, "cluster": "rand", "created": "2026-11-23T16:00:00Z",
           "shardcal_version": "0.1.0", "backend": "mpi", "memory": "host", "models": models}
    if rng.random() < 0.5:  # NCCL's transport branches (tree depth, the two-node switch, rings only)
        doc["backend"], doc["memory"] = "nccl", "cuda"
    if rng.random() < 0.3:  # a fitted copy cost (0 = free copies, e.g. a simulated platform)
        doc["local_copy"] = {"ns_per_byte": rng.choice([0, rnum(rng, 0, 1)]), "se_ns_per_byte": rnum(rng, 0, 0.1),
                             "transitions": rng.randint(3, 40)}
    return doc


def random_query(rng, colls=None, host_counts=(1, 1, 2, 3, 4, 8)):
    coll = rng.choice(colls or COLLS)
    hosts = rng.choice(host_counts)
    rph = rng.choice([1, 2, 4, 8])
    n = hosts * rph
    if rng.random() < 0.03:
        n += 1  # inconsistent class: both must reject
    cg = rng.choice([1, 1, 2, 3, 8])
    dtype = rng.choice([None, None, "f32", "bf16", "u8"])
    elem = {"f32": 4, "bf16": 2, "u8": 1}.get(dtype, 1)
    counts = []
    nbytes = 0.0
    if rng.random() < 0.4:
        counts = [rng.choice([0, rng.randint(0, 1 << rng.randint(0, 22))]) for _ in range(n)]
        r = rng.random()
        if r < 0.4:  # even counts (the only valid form for all_reduce / broadcast)
            counts = [counts[0]] * n
        elif r < 0.6 and n <= 16:  # an n x n all_to_all send matrix (invalid for the others)
            counts = [rng.randint(0, 1 << rng.randint(0, 20)) for _ in range(n * n)]
    else:
        nbytes = float(rng.choice([0, 1, 7, 2 ** rng.randint(0, 30), rng.uniform(0, 1 << 28)]))
    return coll, n, hosts, rph, cg, nbytes, dtype, elem, counts


def add_link_ceiling(crng, doc, share):
    """With probability `share`, give the profile a GPU link ceiling (extra.link_ceiling,
    docs/CALIBRATION.md "Link ceilings"): its slowest segment's bandwidth times 0.5-3, so the
    floor binds at large sizes on most of its models and not at small ones (the fastest
    bandwidth times 0.5-3 put under 1 % of queries on the floor). crng is the ceilings' own RNG:
    the profiles' and queries' draws are the same with or without ceilings. Returns doc."""
    if crng.random() < share:
        slowest = min(seg["bandwidth_GBps"] for m in doc["models"] for seg in m["segments"])
        gbps = max(1e-3, round(slowest * crng.uniform(0.5, 3.0), crng.choice([1, 3, 17])))  # reader: >= 1e-3
        doc.setdefault("extra", {})["link_ceiling"] = {"GBps": gbps, "gpus": ["NVIDIA H100 80GB HBM3"],
                                                       "source": "parity_test.py: slowest segment x 0.5-3"}
        # Half of them with a host link (its own draws, so the other profiles' stay as they were):
        # 2-50 % of the ceiling, so that groups across hosts meet the host links' floor.
        hrng = random.Random("host_GBps" + repr(gbps))
        if hrng.random() < 0.5:
            doc["extra"]["link_ceiling"]["host_GBps"] = max(1e-3, min(gbps, round(gbps * hrng.uniform(0.02, 0.5), 3)))
    return doc


ROUTE_HOSTS = (2, 3, 4, 6, 8, 16)  # the inter-host queries' host counts (random_query in parity / timefn)


def add_ring_routes(rrng, doc, share):
    """With probability `share`, give the profile the network's ring routes (extra.ring_routes,
    docs/CALIBRATION.md "Other host counts"; profile_read.cpp ring_routes): for some but not all
    of the host counts its models measured and the queries ask for (ROUTE_HOSTS), a ring's route
    latency and link share per flow. Latencies around one base value, longer, shorter, equal or
    near 0; shares equal to a base, smaller or larger: so a transported neighbour ring pays extra
    latency on its steps or less, and its bandwidth term a share ratio of 1 or not. rrng is the
    routes' own RNG: the profiles' and queries' draws are the same with or without routes.
    Returns doc."""
    if rrng.random() >= share:
        return doc
    counts = sorted({m["hosts"] for m in doc["models"] if m["hosts"] >= 2} | set(ROUTE_HOSTS))
    keep = [h for h in counts if rrng.random() < 0.85]
    if len(keep) == len(counts):  # never all of them: some transports find no routes
        keep.remove(rrng.choice(keep))
    if len(keep) < 2:
        keep = sorted(rrng.sample(counts, 2))
    lat0 = round(rrng.uniform(0.2, 5.0), rrng.choice([1, 3, 17]))
    share0 = round(rrng.uniform(1.0, 50.0), rrng.choice([1, 3, 17]))
    rings = []
    for h in keep:
        r = rrng.random()
        # (near 0: the reader refuses 0 us between two hosts; a near-0 route meets routed_time's cap)
        lat = 1e-3 if r < 0.08 else lat0 if r < 0.3 else max(1e-3, round(lat0 * rrng.uniform(0.1, 6.0),
                                                                         rrng.choice([1, 3, 17])))
        r = rrng.random()
        gbps = share0 if r < 0.45 else round(share0 * (rrng.uniform(0.1, 1.0) if r < 0.85 else rrng.uniform(1.0, 3.0)),
                                             rrng.choice([1, 3, 17]))
        rings.append({"hosts": h, "latency_us": lat, "share_GBps": gbps})
    rr = {"source": "parity_test.py: random routes", "rings": rings}
    # Most tables also list every step's route latency (the longest being latency_us) and the
    # loopback's, so that an overlapped ring's eager steps are priced by their dependency chain
    # (host_transport.cpp chain_envelope); some lack one or the other (the middle instead).
    # (Their own RNG, seeded from the table's draws: the routes above stay as they were.)
    hrng = random.Random(repr(rings))
    # Most also give the skew on the most shared link (ring-routes writes it): 0 (one latency,
    # whole overlap) or up to the longest route. (Their own RNG: the draws above stay as they were.)
    # Some tables give no skew (older ring-routes), so the hops' spread or the longest route stands in.
    srng = random.Random("skew" + repr(rings))
    if srng.random() < 0.6:
        for e in rings:
            r = srng.random()
            e["share_skew_us"] = 0.0 if r < 0.3 else min(e["latency_us"], round(
                e["latency_us"] * srng.uniform(0.0, 1.0), srng.choice([1, 3, 17])))
    if hrng.random() < 0.85:
        for e in rings:
            hops = [max(1e-3, round(e["latency_us"] * hrng.uniform(0.2, 1.0), hrng.choice([1, 3, 17])))
                    for _ in range(e["hosts"])]
            hops = [min(x, e["latency_us"]) for x in hops]
            hops[hrng.randrange(e["hosts"])] = e["latency_us"]
            e["hop_latency_us"] = hops
            if "share_skew_us" in e:  # (the reader: at most the hops' spread)
                e["share_skew_us"] = min(e["share_skew_us"], max(hops) - min(hops))
        if hrng.random() < 0.9:
            # (0 too: SimGrid's example clusters' loopback_lat="0")
            rr["loopback_latency_us"] = (0.0 if hrng.random() < 0.15 else
                                         round(hrng.uniform(0.05, 3.0), hrng.choice([1, 3, 17])))
    # Most give the loopback's bandwidth too (its own RNG: the draws above stay as they were),
    # from slower than the links (SimGrid's example clusters) to far faster.
    lrng = random.Random("loopback_GBps" + repr(rings))
    if "loopback_latency_us" in rr and lrng.random() < 0.8:
        rr["loopback_GBps"] = max(1e-3, round(lrng.choice([0.1, 1.0, 25.0, 150.0]) * lrng.uniform(0.5, 2.0),
                                              lrng.choice([1, 3, 17])))
    # In tables without skews, some rings without hops too (the oldest ring-routes): the longest
    # route stands in.
    if "share_skew_us" not in rings[0]:
        for e in rings:
            if srng.random() < 0.3:
                e.pop("hop_latency_us", None)
    doc.setdefault("extra", {})["ring_routes"] = rr
    return doc


def past_sweep_queries(crng, doc, k):
    """k queries in the classes of doc's measured curves at 1-1024x their largest size: where
    the curve's upward line meets a link ceiling's floor (cost_model.cpp curve_part), which
    random sizes seldom reach. From crng, so the other queries are unchanged."""
    curves = [(m, c) for m in doc["models"] for c in m.get("curves", ())]
    out = []
    for _ in range(k if curves else 0):
        m, c = crng.choice(curves)
        nbytes = c["bytes"][-1] * 2.0 ** crng.uniform(0.0, 10.0)
        out.append((m["collective"], c["group_size"], m["hosts"], c["group_size"] // m["hosts"],
                    c["concurrent_groups"], nbytes, m["dtype"], {"f32": 4, "bf16": 2}.get(m["dtype"], 1), []))
    return out


def selector_profiles(tmp, k, crng=None, rrng=None):
    """k inter-host MPI profiles whose mpi_selector says SMPI's ompi selector (host transport by
    Open MPI's tuned rules), one with a forced all_gather; their own RNG, so the other profiles'
    draws are unchanged. Named h-sel*, so their queries are inter-host ones. With crng, some
    carry a link ceiling (add_link_ceiling); with rrng, some ring routes (add_ring_routes)."""
    srng = random.Random(20261129 + k)
    out = []
    for i in range(k):
        doc = random_profile(srng, (2, 4, 8) if i % 2 == 0 else (2,), ("all_gather", "all_reduce", "reduce_scatter"),
                             (1,), (None,))
        if crng is not None:
            add_link_ceiling(crng, doc, 0.6)
        if rrng is not None:
            add_ring_routes(rrng, doc, 0.8)
        doc["backend"], doc["memory"] = "mpi", "host"
        doc.setdefault("extra", {})["mpi_selector"] = {"selector": "ompi"}
        if i == 1:
            doc["extra"]["mpi_selector"]["forced"] = {"all_gather": "NTSLR", "reduce_scatter": "ompi_ring"}
        path = os.path.join(tmp, f"h-sel{i}.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        out.append(path)
    return out


def parity(tool, repo):
    sp = load_module(repo)
    orc = load_oracle()
    rng = random.Random(20261123)
    total = 0
    compared = 0
    transported = 0
    grown = 0
    seen_ok = set()
    crng = random.Random(20261130)  # the link ceilings' own draws (add_link_ceiling)
    floor = {"profiles": 0, "queries": 0, "time": 0, "lo": 0, "hi": 0, "line": 0, "carried": 0, "transported": 0,
             "free": 0}
    rrng = random.Random(20261201)  # the ring routes' own draws (add_ring_routes)
    from oracle import host_transport as oht  # (load_oracle put it on sys.path)
    routes = {"profiles": 0, "queries": 0, "ring": 0, "longer": 0, "shorter": 0, "share": 0, "equal share": 0,
              "equal latency": 0, "share > 2": 0, "protocol split": 0, "clamped": 0, "lowered": 0, "skipped": 0,
              "moved": 0, "overlapped": 0, "chain": 0, "middle": 0, "rendezvous": 0, "held": 0, "tree": 0, "selector": 0, "not ring": 0, "tested": 0}
    with tempfile.TemporaryDirectory() as tmp:
        profiles = [os.path.join(repo, "configs", "profiles", "dtensor-default.json")]
        for i in range(12):
            path = os.path.join(tmp, f"p{i}.json")
            with open(path, "w") as f:
                json.dump(add_ring_routes(rrng, add_link_ceiling(crng, random_profile(rng), 0.6), 0.7), f)
            profiles.append(path)
        for i in range(4):  # inter-host models only: queries at other host counts are transported
            path = os.path.join(tmp, f"h{i}.json")
            with open(path, "w") as f:
                json.dump(add_ring_routes(rrng, add_link_ceiling(crng, random_profile(
                    rng, (2, 4, 8), ("all_gather", "all_reduce", "reduce_scatter"), (1,), (None,)), 0.6), 0.8), f)
            profiles.append(path)
        profiles += selector_profiles(tmp, 3, crng, rrng)
        for path in profiles:
            prof = sp.load(path)
            oprof = orc.load(path)
            with open(path) as f:  # the optional relative SEs are read as written (absent: None)
                raw = json.load(f)
            # With a link ceiling: the profile without it too (the package: C++, fast), to tell which
            # prices the floor moved.
            bare = None
            if "link_ceiling" in raw.get("extra", {}):
                floor["profiles"] += 1
                doc = json.loads(json.dumps(raw))
                del doc["extra"]["link_ceiling"]
                bare = sp.loads(json.dumps(doc), path + " without its link ceiling")
            # With ring routes: the profile without them (the package), to tell which prices they moved.
            plain = None
            if "ring_routes" in raw.get("extra", {}):
                routes["profiles"] += 1
                doc = json.loads(json.dumps(raw))
                del doc["extra"]["ring_routes"]
                plain = sp.loads(json.dumps(doc), path + " without its ring routes")
            for m, rm in zip(prof.models, raw["models"]):
                for seg, rs in zip(m.segments, rm["segments"]):
                    assert (seg.alpha_rel_se, seg.bandwidth_rel_se, seg.contention) == \
                        (rs.get("alpha_rel_se"), rs.get("bandwidth_rel_se"), rs.get("contention")), (path, rs)
            inter = os.path.basename(path).startswith("h")
            queries = [random_query(rng, ("all_gather", "all_reduce", "reduce_scatter"), (2, 3, 4, 6, 8, 16))
                       if inter else random_query(rng) for _ in range(200)]
            if bare is not None:
                queries += past_sweep_queries(crng, raw, 16)
            lines = []
            for (coll, n, hosts, rph, cg, nbytes, dtype, elem, counts) in queries:
                lines.append(f"{coll} {n} {hosts} {rph} {cg} {nbytes!r} {dtype or '-'} {elem} "
                             f"{','.join(map(str, counts)) if counts else '-'}")
            out = subprocess.run([tool, path], input="\n".join(lines) + "\n", capture_output=True, text=True,
                                 timeout=120)
            assert out.returncode == 0, out.stderr
            got = out.stdout.splitlines()
            assert len(got) == len(queries), (path, len(got), out.stdout[:500])
            for q, line, text in zip(queries, got, lines):
                total += 1
                coll, n, hosts, rph, cg, nbytes, dtype, elem, counts = q
                got_p = {}
                clamps = oht.ROUTE_CLAMPS[0]
                for who, pr in (("package", prof), ("oracle", oprof)):
                    try:
                        p = got_p[who] = pr.predict(coll, n, hosts, rph, nbytes=nbytes, counts=counts,
                                                    elem_size=elem, dtype=dtype, concurrent_groups=cg)
                    except (sp.ProfileError, orc.ProfileError) as e:
                        assert line.startswith("error "), f"{path}: '{text}': {who} rejected ({e}), C++ gave {line}"
                        continue
                    assert line.startswith("ok "), f"{path}: '{text}': C++ rejected ({line}), {who} gave {p.time_us}"
                    _, t, lo, hi, mi, seg, ex = line.split()
                    for what, a, b in (("time", float(t), p.time_us), ("interval lo", float(lo), p.lo_us),
                                       ("interval hi", float(hi), p.hi_us)):
                        rel = abs(a - b) / max(abs(b), 1e-300)
                        # the package is the C++ model: the same bits; the oracle: the same arithmetic
                        # (its intervals may differ from C++'s in the last bits)
                        assert (a == b) if who == "package" else rel <= 1e-9, \
                            f"{path}: '{text}': {what}: C++ {a!r} {who} {b!r} (rel {rel:.3g})"
                    assert p.lo_us <= p.time_us <= p.hi_us, f"{path}: '{text}': {p.time_us} outside [{p.lo_us}, {p.hi_us}]"
                    assert int(mi) == p.model.index, f"{path}: '{text}': model C++ {mi} {who} {p.model.index}"
                    assert int(seg) == p.segment, f"{path}: '{text}': segment C++ {seg} {who} {p.segment}"
                    assert bool(int(ex)) == p.extrapolated, f"{path}: '{text}': extrapolated C++ {ex} {who} {p.note}"
                if not line.startswith("ok "):
                    continue
                p, o = got_p["package"], got_p["oracle"]
                # The notes word for word: among them the C++'s "priced at the GPUs' link ceiling"
                # exactly where the oracle's price sits on its floor (predict.cpp at_link_floor).
                assert p.note == o.note, f"{path}: '{text}': notes differ:\n C++:    {p.note}\n oracle: {o.note}"
                if bare is not None:
                    floor["queries"] += 1
                    assert o.link_floor_us > 0 or n <= 1 or o.s_eff == 0, (path, text, o)
                    b = bare.predict(coll, n, hosts, rph, nbytes=nbytes, counts=counts, elem_size=elem, dtype=dtype,
                                     concurrent_groups=cg)
                    on = o.link_floor_us > 0 and p.time_us == o.link_floor_us  # C++ on the oracle's floor, bit for bit
                    assert on == o.at_link_floor, f"{path}: '{text}': C++ {p.time_us!r}, oracle's floor " \
                                                  f"{o.link_floor_us!r}, oracle at_link_floor {o.at_link_floor}"
                    floor["time"] += on
                    floor["transported"] += on and "transported" in p.basis
                    floor["lo"] += o.link_floor_us > 0 and p.lo_us == o.link_floor_us and not on
                    # On the floor the upper side keeps its width above it (price_on: lifted with the
                    # price; a random ceiling above the physical upper bound k t(S) past the sweep
                    # can still meet it there).
                    floor["hi"] += on and p.hi_us > p.time_us
                    # moved, not onto the floor: a curve's upward line past the sweep stopped at it
                    # (curve_part; the price is the line's geometric middle with the backbone
                    # carried), or a transported price's measured count sat on its own floor
                    moved = not on and b.time_us != p.time_us
                    floor["line"] += moved and "transported" not in p.basis
                    floor["carried"] += moved and "transported" in p.basis
                    floor["free"] += (b.time_us, b.lo_us, b.hi_us) == (p.time_us, p.lo_us, p.hi_us)
                # The ring routes (host_transport.cpp route_ring): which kind of transported query
                # met them (the oracle's transport; its prices, intervals and notes equal C++'s above).
                tr = o.transport
                if tr is not None and tr.route_skipped:
                    routes["skipped"] += 1  # a count missing from the table, or concurrent groups
                if tr is not None and tr.routes:
                    routes["queries"] += 1
                    if oht.route_ring(tr, o.s_eff):
                        over = oht._route_latency_overlapped(tr)
                        routes["overlapped" if over else "ring"] += 1
                        if over:  # past the measured protocol switch: lock step; else the chain or the middle
                            routes[{"lock-step": "rendezvous", "chain": "chain", "middle": "middle"}[
                                oht.route_latency(o.model, tr, o.s_eff)]] += 1
                            # in lock step, held at the eager price at the switch's edge (never
                            # falls): the hold binds (the notes, compared word for word, say so)
                            routes["held"] += oht.transported_eager_hold_bytes(o.model, tr, cg, o.s_eff) > 0
                        routes["longer"] += tr.route_step_us > 0
                        routes["shorter"] += tr.route_step_us < 0
                        # a shorter route: its latency part lowered by delta per step, or at most to
                        # the route latencies' ratio (host_transport.cpp routed_time)
                        routes["clamped"] += oht.ROUTE_CLAMPS[0] > clamps
                        routes["lowered"] += tr.route_step_us < 0 and not over and oht.ROUTE_CLAMPS[0] == clamps
                        routes["share"] += tr.route_bw_ratio != 1.0
                        routes["share > 2"] += tr.route_bw_ratio > 2.0
                        if oht.carried_at_equal_messages(tr, o.s_eff) and tr.route_bw_ratio > 1.0:
                            # split at the protocol segment's bandwidth term, not at t(1 B)
                            mb = o.s_eff * tr.n_model / tr.n_query
                            tb = oht.price_time_us(o.model, tr.n_model, cg, mb)
                            routes["protocol split"] += oht._split_latency_us(o.model, tr, True, cg, mb, tb) != tr.latency_us
                        if tr.route_bw_ratio != 1.0:  # the skew's source, each way (routed_time)
                            way = "up" if tr.route_bw_ratio > 1.0 else "down"
                            routes[f"skew {tr.route_skew_source} {way}"] = routes.get(
                                f"skew {tr.route_skew_source} {way}", 0) + 1
                        routes["equal share"] += tr.route_bw_ratio == 1.0
                        routes["equal latency"] += tr.route_step_us == 0
                        if not over and (tr.route_step_us != 0 or tr.route_bw_ratio != 1.0):
                            b = plain.predict(coll, n, hosts, rph, nbytes=nbytes, counts=counts, elem_size=elem,
                                              dtype=dtype, concurrent_groups=cg)
                            routes["moved"] += b.time_us != p.time_us
                    elif tr.selector:
                        routes["selector"] += 1
                    elif tr.law == "tree-depth":
                        routes["tree"] += 1
                    else:
                        routes["not ring"] += 1
                    routes["tested"] += tr.test_routes > 0 and "tested by" in p.basis
                compared += 1
                transported += "tested by" in p.basis
                grown += "untested" in p.basis
                seen_ok.add(coll)
    for c in COLLS:  # every collective is queried and predicted by both
        assert c in seen_ok, f"no accepted query for {c}: {sorted(seen_ok)}"
    edge_parity(tool, sp, orc)
    agree = reject_parity(tool, sp, orc, rng)
    print(f"parity: the C++ reader, the package and the oracle agree on accepting/rejecting {agree} mutated profiles")
    print(f"parity: {compared} predictions equal (package: bit for bit; oracle: <= 1e-9 rel), "
          f"{total - compared} rejected by all, "
          f"{len(profiles)} profiles; {transported} of them transported between host counts and tested by a second, "
          f"{grown} transported untested")
    print(f"parity: link ceiling on {floor['profiles']} profiles, {floor['queries']} of their predictions: "
          f"{floor['time']} priced on the floor ({floor['transported']} of them transported), "
          f"{floor['lo']} more with the interval's lower end on it, {floor['hi']} of those with the upper end lifted above it, "
          f"{floor['line']} moved above it by the floor of a curve's upward line, {floor['carried']} transported "
          f"from a measured count's floored price; {floor['free']} untouched")
    print(f"parity: ring routes on {routes['profiles']} profiles, {routes['queries']} transported predictions "
          f"between counts the routes list: {routes['ring']} neighbour rings priced with them ({routes['longer']} "
          f"longer routes, {routes['shorter']} shorter ({routes['lowered']} by the steps' extra, {routes['clamped']} "
          f"to the route latencies' ratio), {routes['equal latency']} equal, {routes['share']} with a link-share "
          f"ratio, {routes['equal share']} equal shares (counting overlapped rings too); {routes['moved']} moved "
          f"from the price without routes), {routes['overlapped']} overlapped rings (MPI reduce_scatter: {routes['chain']} eager by "
          f"their chain, {routes['middle']} eager at the middle, {routes['rendezvous']} past the measured switch in "
          f"lock step, {routes['held']} of them held at the eager price at the switch), "
          f"not applied: {routes['tree']} tree-depth, {routes['selector']} ompi selector's other algorithms, "
          f"{routes['not ring']} other laws; {routes['tested']} tested by a second count with routes; "
          f"{routes['skipped']} not applied for a count missing from the table or concurrent groups")
    assert compared >= 1000, compared
    assert transported >= 20, f"only {transported} queries exercised the tested host-count transport"
    assert grown >= 20, f"only {grown} queries exercised the untested host-count transport"
    # The floor binds on a good share and not on every query: each of its paths is compared with C++.
    for k, least in (("time", 100), ("transported", 20), ("lo", 50), ("hi", 20), ("line", 10), ("carried", 20),
                     ("free", 200)):
        assert floor[k] >= least, f"link ceiling: only {floor[k]} queries of kind {k!r} (want >= {least}): {floor}"
    # The ring routes apply, are kept out, overlap and reach the second count's test: each kind compared.
    for k, least in (("ring", 40), ("longer", 20), ("shorter", 20), ("lowered", 5), ("clamped", 10), ("share", 30), ("share > 2", 10), ("protocol split", 10),
                     ("equal share", 3), ("moved", 40), ("overlapped", 10), ("chain", 4), ("middle", 2), ("rendezvous", 4), ("tree", 10), ("selector", 20),
                     ("not ring", 8), ("tested", 20), ("skipped", 50), ("skew table up", 5), ("skew table down", 3),
                     ("skew hop spread up", 3), ("skew hop spread down", 2), ("skew longest route up", 2),
                     ("skew longest route down", 1)):
        assert routes.get(k, 0) >= least, f"ring routes: only {routes.get(k, 0)} queries of kind {k!r} (want >= {least}): {routes}"


MUTANTS = [None, -1, 0, 0.5, 1, 2, 1e308, -0.0, "", "x", "total", "f32", [], {}, [1, None], [2, 1], True,
           99999999999999999999, 10 ** 400, 65536, "2026-11-23T16:00:00Z"]


def timefn(repo):
    """Profile.time_fn (the time-only price path the DTensor adapter plans with) returns exactly
    predict(..., _check_class=False).time_us -- bit-identical, not within a tolerance -- and
    rejects the same queries, on random queries over random profiles (curves, several host counts
    transported from one count, tested by a second or untested), the built-in
    DTensor profile and the emulated two-host profile; each class's function is asked twice (its
    cache) and sizes at and around the curves' knots."""
    sp = load_module(repo)
    orc = load_oracle()
    from shardcal import _core  # the DTensor adapter's compiled search evaluates a _core.TimeFn itself
    from oracle.cost_model import link_floor_time_us  # (load_oracle put the oracle on sys.path)
    rng = random.Random(20261128)
    crng = random.Random(20261131)  # the link ceilings' own draws (add_link_ceiling)
    rrng = random.Random(20261202)  # the ring routes' own draws (add_ring_routes)
    counts = {"compared": 0, "curve": 0, "two counts": 0, "prior": 0, "rejected": 0, "oracle": 0,
              "oracle curve": 0, "oracle sweep": 0, "on floor": 0, "on host floor": 0, "sweep on floor": 0, "routed": 0, "not routed": 0}
    with tempfile.TemporaryDirectory() as tmp:
        profiles = [os.path.join(repo, "configs", "profiles", "dtensor-default.json"),
                    os.path.join(repo, "tests", "data", "emulate", "two-hosts-400mbit.profile.json")]
        for i in range(16):
            path = os.path.join(tmp, f"p{i}.json")
            with open(path, "w") as f:
                json.dump(add_ring_routes(rrng, add_link_ceiling(crng, random_profile(rng), 0.5), 0.5), f)
            profiles.append(path)
        for i in range(8):  # inter-host models only: queries at other host counts are transported
            path = os.path.join(tmp, f"h{i}.json")
            with open(path, "w") as f:
                json.dump(add_ring_routes(rrng, add_link_ceiling(crng, random_profile(
                    rng, (2, 4, 8) if i % 2 else (2,), ("all_gather", "all_reduce", "reduce_scatter"), (1,), (None,)),
                    0.5), 0.6), f)
            profiles.append(path)
        profiles += selector_profiles(tmp, 4, crng, rrng)
        for path in profiles:
            prof = sp.load(path)
            oprof = orc.load(path)
            inter = os.path.basename(path).startswith("h")
            knots = sorted({float(b) for m in prof.models for c in m.curves for b in c.bytes})
            for _ in range(300):
                coll, n, hosts, rph, cg, nbytes, dtype, _, _ = (
                    random_query(rng, ("all_gather", "all_reduce", "reduce_scatter"), (2, 3, 4, 6, 8, 16))
                    if inter else random_query(rng))
                if knots and rng.random() < 0.3:  # at a knot, just off it, or between two
                    b = rng.choice(knots)
                    nbytes = rng.choice([b, math.nextafter(b, 0.0), math.nextafter(b, math.inf), b * rng.uniform(0.5, 2)])
                args = (coll, n, hosts, rph, dtype, cg)
                try:
                    want = prof.predict(coll, n, hosts, rph, nbytes=nbytes, dtype=dtype, concurrent_groups=cg,
                                        _check_class=False)
                except sp.ProfileError as e:
                    try:
                        got = prof.time_fn(*args)(nbytes)
                    except sp.ProfileError as e2:
                        assert str(e2) == str(e), f"{path}: {args} {nbytes!r}: predict: {e}; time_fn: {e2}"
                        counts["rejected"] += 1
                        continue
                    raise AssertionError(f"{path}: {args} {nbytes!r}: predict rejected ({e}), time_fn gave {got!r}")
                for _ in range(2):
                    got = prof.time_fn(*args)(nbytes)
                    assert got == want.time_us, f"{path}: {args} {nbytes!r}: predict {want.time_us!r} time_fn {got!r}"
                fn = prof.time_fn(*args)
                assert isinstance(fn, _core.TimeFn), type(fn)  # (what the compiled search prices with)
                ofn = oprof.time_fn(*args)
                got = ofn(nbytes)
                assert got == want.time_us, f"{path}: {args} {nbytes!r}: predict {want.time_us!r} oracle {got!r}"
                counts["oracle"] += 1
                om = oprof.models[want.model.index]  # the link ceiling's floor (0 without one)
                counts["on floor"] += want.time_us == link_floor_time_us(om, n, want.s_eff, hosts) > 0
                counts["on host floor"] += "priced at the host links' floor" in want.note
                counts["routed"] += "ring routes: " in want.note  # (priced with the ring routes, or not)
                counts["not routed"] += "ring routes not applied" in want.note
                if ofn.spec is not None and len(ofn.spec) == 7:  # a curve: also a sweep across its knots
                    counts["oracle curve"] += 1
                    # (up to 2^10 x past the last knot: far past the sweep the physical bounds bind)
                    top = 1024.0 * max(ofn.spec[6][1])
                    for j in range(48):
                        b = rng.uniform(0.5, top) if j % 2 else math.exp(rng.uniform(0.0, math.log(top)))
                        got = ofn(b)
                        assert got == fn(b), f"{path}: {args} {b!r}: time_fn {fn(b)!r} oracle {got!r}"
                        counts["oracle sweep"] += 1
                        counts["sweep on floor"] += got == link_floor_time_us(om, n, b, hosts) > 0
                counts["compared"] += 1
                counts["curve"] += "curve" in want.basis
                counts["two counts"] += "tested by" in want.basis
                counts["prior"] += "untested" in want.basis
            for nb in (-1.0, math.inf, math.nan):  # effective_bytes's rejection, word for word
                m = prof.models[0]
                try:
                    prof.predict(m.collective, 2, 1, 2, nbytes=nb, _check_class=False)
                    raise AssertionError(f"predict took {nb}")
                except sp.ProfileError as e:
                    try:
                        prof.time_fn(m.collective, 2, 1, 2)(nb)
                        raise AssertionError(f"time_fn took {nb}")
                    except sp.ProfileError as e2:
                        assert str(e2) == str(e), (str(e), str(e2))
    import pickle  # a profile with bound price functions still pickles (its C++ parts are rebuilt)
    prof = sp.load(profiles[1])
    want = prof.time_fn("all_gather", 4, 2, 2, "f32")(1e6)
    again = pickle.loads(pickle.dumps(prof))
    assert again.time_fn("all_gather", 4, 2, 2, "f32")(1e6) == want == \
        prof.predict("all_gather", 4, 2, 2, nbytes=1e6, dtype="f32").time_us
    print(f"time_fn == predict().time_us on {counts['compared']} queries over {len(profiles)} profiles "
          f"({counts['curve']} on a measured curve, {counts['two counts']} transported and tested by a second count, "
          f"{counts['prior']} transported untested; {counts['oracle']} also equal to the oracle's, "
          f"{counts['oracle curve']} of them with a curve, swept at {counts['oracle sweep']} more sizes); "
          f"{counts['rejected']} rejected alike; on a link ceiling's floor: {counts['on floor']} queries "
          f"({counts['on host floor']} on the host links' floor), "
          f"{counts['sweep on floor']} swept sizes; ring routes applied on {counts['routed']} transported queries, "
          f"not applied on {counts['not routed']}")
    for k in ("compared", "curve", "two counts", "prior", "rejected", "oracle", "oracle curve", "on floor",
              "on host floor", "sweep on floor", "routed", "not routed"):
        assert counts[k] >= 20, f"too few queries of kind {k!r}: {counts}"


def mutate(rng, doc):
    """Replace, delete or add one value somewhere in the document."""
    nodes = []

    def walk(v, parent, key):
        nodes.append((v, parent, key))
        if isinstance(v, dict):
            for k in list(v):
                walk(v[k], v, k)
        elif isinstance(v, list):
            for i in range(len(v)):
                walk(v[i], v, i)

    walk(doc, None, None)
    v, parent, key = rng.choice(nodes)
    op = rng.random()
    if parent is None:
        return doc
    if op < 0.7:
        parent[key] = json.loads(json.dumps(rng.choice(MUTANTS)))
    elif op < 0.85:
        del parent[key]
    elif isinstance(v, dict):
        v[rng.choice(["extra", "colour", "s_hi", "domain"])] = rng.choice(MUTANTS)
    elif isinstance(v, list):
        v.append(json.loads(json.dumps(v[0])) if v else 1)
    return doc


def readers_agree(tool, path, readers, what):
    """The C++ reader (`tool`: prints nothing when it accepts) and each (label, module) of readers
    accept or reject `path` alike (what: the case, for the message); whether C++ accepted."""
    out = subprocess.run([tool, path], input="", capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    cpp_ok = out.stdout == ""
    for who, mod in readers:  # (one C++ run for all the Python readers)
        try:
            mod.load(path)
            py_ok, why = True, ""
        except mod.ProfileError as e:
            py_ok, why = False, str(e)
        assert cpp_ok == py_ok, f"{what}: C++ {'accepts' if cpp_ok else 'rejects: ' + out.stdout.strip()} " \
                                f"but {who} {'accepts' if py_ok else 'rejects: ' + why}"
    return cpp_ok


def edge_parity(tool, *readers):
    """Deterministic edge cases the C++ reader and each of `readers` (the package, the oracle)
    must treat alike: nesting around the depth limit (32), integer literals beyond double range
    (C++ rejects while parsing; Python must raise ProfileError, not OverflowError) and
    extra.link_ceiling's and extra.ring_routes' bounds and shape."""
    base = random_profile(random.Random(3))
    cases = []
    for depth in range(28, 38):
        for leaf in (1, [], {}, "s"):
            doc = json.loads(json.dumps(base))
            inner = leaf
            for _ in range(depth):
                inner = {"x": inner} if len(cases) % 2 else [inner]
            doc["extra"] = {"deep": inner}
            cases.append((f"depth {depth} leaf {json.dumps(leaf)}", json.dumps(doc)))
    cases.append(("depth 100000", json.dumps(base)[:-1] + ', "extra": ' + "[" * 100000 + "]" * 100000 + "}"))
    for key in ("alpha_us", "bandwidth_GBps", "s_lo", "alpha_rel_se"):
        doc = json.loads(json.dumps(base))
        doc["models"][0]["segments"][0][key] = 10 ** 400
        cases.append((f"{key} = 1e400 (integer literal)", json.dumps(doc)))
    # extra.link_ceiling (profile_read.cpp link_ceiling()): GBps in [1e-3, 1e6], names, source.
    for lc in ({"GBps": 1e-3}, {"GBps": 0.000999}, {"GBps": 0}, {"GBps": -1}, {"GBps": 1e6}, {"GBps": 1000001},
               {"GBps": 10 ** 400}, {"GBps": True}, {"GBps": "450"}, {"GBps": None}, {}, {"gpus": ["A"]},
               {"GBps": 450, "gpus": ["NVIDIA H100 80GB HBM3"], "source": "NVLink 4"}, {"GBps": 450, "gpus": []},
               {"GBps": 450, "gpus": "H100"}, {"GBps": 450, "gpus": [1]}, {"GBps": 450, "source": 1},
               {"GBps": 450, "colour": 1}, None, [], 450):
        doc = json.loads(json.dumps(base))
        doc["extra"] = {"link_ceiling": lc}
        cases.append((f"link_ceiling {json.dumps(lc)}", json.dumps(doc)))
    # extra.ring_routes (profile_read.cpp ring_routes()): ascending hosts >= 2, each once, latency
    # in [0, 1e6], share in [1e-3, 1e6], no other keys; the bad cases of test_profile.cpp
    # Profile.RingRoutesTransport (unsorted hosts, share 0, negative latency, hosts 1, an unknown key).
    def ring(h=2, lat=1.0, share=1.0, **more):
        return dict({"hosts": h, "latency_us": lat, "share_GBps": share}, **more)
    for rr in ({"source": "t", "rings": [ring(4), ring(2)]}, {"rings": [ring(2, 1, 0)]}, {"rings": [ring(2, -1)]},
               {"rings": [ring(1)]}, {"rings": [ring(2, bogus=0)]},
               {"source": "t", "rings": [ring(2, 1.5, 25.0), ring(4, 3.0, 12.5)]}, {"rings": []}, {"rings": [ring(2)]},
               {"rings": [ring(2), ring(2)]}, {"rings": [ring(2), ring(3), ring(16777216)]},
               {"rings": [ring(16777217)]},
               {"rings": [ring(2, 0.0, 1e-3)]}, {"rings": [ring(2, 1e6, 1e6)]}, {"rings": [ring(2, 1000001)]},
               {"rings": [ring(2, 1, 0.000999)]}, {"rings": [ring(2, 1, 1000001)]}, {"rings": [ring(2.0)]},
               {"rings": [ring(True)]}, {"rings": [ring(2, "1")]}, {"rings": [ring(2, None)]},
               {"rings": [ring(2, 1, 10 ** 400)]}, {"rings": [{"hosts": 2, "latency_us": 1}]},
               {"rings": [{"latency_us": 1, "share_GBps": 1}]}, {"rings": [[2, 1, 1]]}, {"rings": {}}, {"source": "t"},
               {"source": 1, "rings": []}, {"source": "t", "rings": [], "hosts_order": []}, None, [], 1,
               {"rings": [ring(2, 1.5, hop_latency_us=[1.5, 0.75])], "loopback_latency_us": 1},
               {"rings": [ring(2, 1.5, hop_latency_us=[1.5])]}, {"rings": [ring(2, 1.5, hop_latency_us=[1.0, 0.75])]},
               {"rings": [ring(2, 1.5, hop_latency_us=[1.5, 0])]}, {"rings": [ring(2, 1.5, hop_latency_us=1.5)]},
               {"rings": [ring(2, 1.5, hop_latency_us=[1.5, "1"])]}, {"rings": [ring(2)], "loopback_latency_us": 0},
               {"rings": [ring(2)], "loopback_latency_us": -0.5}, {"rings": [ring(2)], "loopback_latency_us": "1"}, {"rings": [ring(2)], "loopback_latency_us": 1e7},
               {"rings": [ring(2)], "loopback_GBps": 0.1}, {"rings": [ring(2)], "loopback_GBps": 1e-3},
               {"rings": [ring(2)], "loopback_GBps": 0.000999}, {"rings": [ring(2)], "loopback_GBps": 0},
               {"rings": [ring(2)], "loopback_GBps": 1000001}, {"rings": [ring(2)], "loopback_GBps": "150"},
               {"rings": [ring(2, 1.5, hop_latency_us=[1.5, 1.5000001])]},
               {"rings": [ring(2, 1.5, share_skew_us=0)]}, {"rings": [ring(2, 1.5, share_skew_us=1.5)]},
               {"rings": [ring(2, 1.5, share_skew_us=1.6)]}, {"rings": [ring(2, 1.5, share_skew_us=-0.1)]},
               {"rings": [ring(2, 1.5, share_skew_us="0")]}, {"rings": [ring(2, 1e6, share_skew_us=1000001)]},
               {"rings": [ring(2, 1.5, share_skew_us=0.5, hop_latency_us=[1.5, 1.0])]},
               {"rings": [ring(2, 1.5, share_skew_us=0.6, hop_latency_us=[1.5, 1.0])]}):
        doc = json.loads(json.dumps(base))
        doc["extra"] = {"ring_routes": rr}
        cases.append((f"ring_routes {json.dumps(rr)}", json.dumps(doc)))
    outcomes = set()
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in cases:
            path = os.path.join(tmp, "edge.json")
            with open(path, "w") as f:
                f.write(text)
            cpp_ok = readers_agree(tool, path, [(sp.__name__, sp) for sp in readers], name)
            outcomes.add((name.split()[0], cpp_ok))
    assert ("depth", True) in outcomes and ("depth", False) in outcomes, outcomes
    assert ("link_ceiling", True) in outcomes and ("link_ceiling", False) in outcomes, outcomes
    assert ("ring_routes", True) in outcomes and ("ring_routes", False) in outcomes, outcomes
    print(f"parity: {len(cases)} edge cases (depth limit, huge integers, link ceilings, ring routes) treated alike")


def table(tool, repo):
    sp = load_module(repo)
    out = subprocess.run([tool, "--table"], capture_output=True, text=True, timeout=60, check=True)
    rows = [line.split() for line in out.stdout.splitlines()]
    names = [r[0] for r in rows]
    assert tuple(names) == sp.COLLECTIVES, (names, sp.COLLECTIVES)
    assert names == COLLS, (names, COLLS)
    assert {r[0] for r in rows if r[1] == "1"} == set(sp.HAS_V_FORM), rows
    for r in rows:
        for n in range(1, 17):
            f, st = float(r[2 * n]), int(r[2 * n + 1])
            assert sp.busbw_factor(r[0], n) == f, (r[0], n, sp.busbw_factor(r[0], n), f)
            assert sp.ring_steps(r[0], n) == st, (r[0], n, sp.ring_steps(r[0], n), st)
    with open(os.path.join(repo, "configs", "schema", "profile.schema.json")) as f:
        text = f.read()
    # The one enum that lists "all_gather" must list every entry, in table order, and nothing else.
    at = text.index('"all_gather"')
    enum = json.loads(text[text.rindex("[", 0, at): text.index("]", at) + 1])
    assert enum == names, (enum, names)
    print(f"table: {len(names)} collectives agree (Python module, profile schema, C++ table)")
    link_classes(tool, repo, sp)


def link_classes(tool, repo, sp):
    """Python's link class of each mesh dim against C++'s, on aligned and unaligned meshes."""
    from shardcal import formats

    cases = [([2, 3], 4), ([4, 3], 4), ([3, 2], 4), ([6], 4), ([2, 4], 4), ([3, 3], 2)]
    for ndim in (1, 2, 3):
        for shape in itertools.product([1, 2, 3, 4, 6], repeat=ndim):
            if math.prod(shape) <= 48:
                cases += [(list(shape), rph) for rph in (1, 2, 3, 4, 8)]
    stdin = "".join("x".join(map(str, s)) + f" {rph}\n" for s, rph in cases)
    out = subprocess.run([tool, "--link-classes"], input=stdin, capture_output=True, text=True,
                         timeout=60, check=True).stdout.splitlines()
    assert len(out) == len(cases), (len(out), len(cases))
    keys = ("group_size", "hosts", "ranks_per_host", "concurrent_groups")
    for (shape, rph), line in zip(cases, out):
        want = [tuple(int(x) for x in dim.split()) for dim in line.split(" | ")]
        got = [tuple(formats.mesh_dim_link_class(shape, d, rph)[k] for k in keys) for d in range(len(shape))]
        assert got == want, (shape, rph, "Python", got, "C++", want)
    # mesh_topo() prices each dim with that same class (the unaligned 2x3 on 4-rank hosts: its
    # inner dim's groups of 3 span 2 hosts, 2 groups at once per host).
    prof = sp.load(os.path.join(repo, "configs", "profiles", "dtensor-default.json"))
    topo = prof.mesh_topo([2, 3], 4)
    got = [tuple(lc[k] for k in keys) for lc in topo["link_class"]]
    assert got == [(2, 2, 1, 3), (3, 3, 1, 2)], got
    print(f"table: link classes of {len(cases)} meshes agree (shardcal.formats, mesh_topo, C++)")


def reject_parity(tool, sp, orc, rng):
    """The C++ reader, the package (the C++ reader through shardcal._core: a ProfileError, never a
    crash) and the oracle's reader all accept or all reject each mutated profile."""
    n = accepted = 0
    crng = random.Random(20261132)  # link ceilings (add_link_ceiling): mutations reach extra.link_ceiling too
    rrng = random.Random(20261203)  # ring routes (add_ring_routes): and extra.ring_routes
    routed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(300):
            base = add_ring_routes(rrng, add_link_ceiling(crng, random_profile(rng), 0.5), 0.4)
            if rng.random() < 0.5:
                base["models"].append(json.loads(json.dumps(base["models"][0])))
                base["models"][-1]["concurrent_groups"] = 16
                base["models"][-1]["domain"] = {"hosts": [1, None], "concurrent_groups": [1, None],
                                                "group_size": [1, None], "bytes": [0, None]}
            doc = mutate(rng, base)
            for _ in range(rng.randint(0, 2)):
                doc = mutate(rng, doc)
            path = os.path.join(tmp, f"m{i}.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            cpp_ok = readers_agree(tool, path, [("the package", sp), ("the oracle", orc)], json.dumps(doc))
            n += 1
            accepted += cpp_ok
            routed += "ring_routes" in (doc.get("extra") if isinstance(doc.get("extra"), dict) else {})
    assert routed >= 50, f"only {routed} mutated profiles carry ring routes"
    assert 20 <= accepted <= n - 20, f"mutations too {'mild' if accepted > 20 else 'harsh'}: {accepted}/{n} accepted"
    return f"{n} ({accepted} accepted, {routed} with ring routes)"


# --- PyTorch DTensor's model, from the published formulas (see module docstring) --------------
def dtensor_topo(mesh_shape, devices_per_host):
    bw = [87.7] * len(mesh_shape)
    lat = [0.6] * len(mesh_shape)
    total = 1
    for d in reversed(range(len(mesh_shape))):
        total *= mesh_shape[d]
        if total > devices_per_host:
            bw[d] *= 0.22
            lat[d] = 2.7
    return bw, lat


def dtensor_cost(coll, bytes_gb, n, bw, lat):
    if coll == "all_to_all":  # redistribute_cost: Shard -> Shard = allgather_cost(shard bytes) + 1.0
        return dtensor_cost("all_gather", bytes_gb, n, bw, lat) + 1.0
    hops = 2 * (n - 1) if coll == "all_reduce" else n - 1
    return 6.6 + hops * lat + (bytes_gb * hops / n) / bw * 1e6


def dtensor(repo):
    sp = load_module(repo)
    prof = sp.load(os.path.join(repo, "configs", "profiles", "dtensor-default.json"))
    rng = random.Random(7)
    checked = 0
    worst = 0.0
    for _ in range(400):
        ndim = rng.randint(1, 3)
        shape = [rng.choice([1, 2, 4, 8]) for _ in range(ndim)]
        dph = rng.choice([1, 2, 4, 8])
        bw, lat = dtensor_topo(shape, dph)
        topo = prof.mesh_topo(shape, dph)
        for d in range(ndim):
            # A size-1 dim moves nothing (cost 6.6 us either way); DTensor may still label it
            # inter-host, mesh_topo reports the one host its one-rank groups live on.
            if shape[d] > 1:
                assert math.isclose(topo["mesh_dim_bandwidth_dtensor"][d], bw[d], rel_tol=1e-12), (shape, dph, topo, bw)
                assert topo["mesh_dim_latency"][d] == lat[d], (shape, dph, topo, lat)
            assert topo["mesh_dim_base_latency"][d] == 6.6
            assert not topo["extrapolated"][d], topo
            lc = topo["link_class"][d]
            for coll in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all"):
                nbytes = rng.choice([0, 1, 4096, 1 << 20, rng.randint(0, 1 << 34)])
                want = dtensor_cost(coll, nbytes / 1024 / 1024 / 1024, shape[d], bw[d], lat[d])
                p = prof.predict(coll, shape[d], lc["hosts"], lc["ranks_per_host"], nbytes=nbytes,
                                 concurrent_groups=lc["concurrent_groups"], _check_class=False)
                rel = abs(p.time_us - want) / want
                worst = max(worst, rel)
                assert rel <= 1e-12, (coll, shape, dph, d, nbytes, p.time_us, want)
                assert not p.extrapolated
                checked += 1
    print(f"dtensor: {checked} costs equal DTensor's (worst relative difference {worst:.3g})")
    dtensor_contention(sp)


def dtensor_contention(sp):
    """mesh_topo's bandwidth under contention: B / (1 + gamma (c - 1)) for the dim's concurrency,
    the bandwidth that reproduces predict's slope in size."""
    doc = {"schema": "shardcal.profile", "version": 1, "cluster": "cont", "created": "2026-11-23T16:00:00Z",
           "shardcal_version": "0.1.0", "backend": "mpi", "memory": "host",
           "models": [{"collective": "all_gather", "hosts": 1, "concurrent_groups": 1, "dtype": None,
                       "group_sizes": [2, 8], "effective_size": "total",
                       "segments": [{"s_lo": 0, "s_hi": None, "alpha_us": 5.0, "alpha_step_us": 1.0,
                                     "bandwidth_GBps": 10.0, "contention": 0.5}],
                       "quality": {"points": 10, "mape": 0.01, "max_rel_error": 0.02, "holdout_mape": None,
                                   "leave_group_out_mape": None},
                       "domain": {"hosts": [1, 1], "concurrent_groups": [1, 8], "group_size": [2, 8],
                                  "bytes": [0, None]}}]}
    prof = sp.loads(json.dumps(doc), "contention")
    for shape in ([8], [2, 4], [4, 2], [2, 2, 2]):
        topo = prof.mesh_topo(shape, 8)
        for d, n in enumerate(shape):
            lc = topo["link_class"][d]
            c = lc["concurrent_groups"]
            want = 10.0 / (1 + 0.5 * (c - 1))
            assert math.isclose(topo["mesh_dim_bandwidth"][d], want, rel_tol=1e-12), (shape, d, topo)
            t1, t2 = (prof.predict("all_gather", n, 1, n, nbytes=s, concurrent_groups=c).time_us
                      for s in (1 << 20, 1 << 24))
            slope = (t2 - t1) / ((1 << 24) - (1 << 20))  # us per byte = f(n) / (bw * 1e3)
            f = (n - 1) / n
            assert math.isclose(slope, f / (topo["mesh_dim_bandwidth"][d] * 1e3), rel_tol=1e-9), (shape, d, slope)
    print("dtensor: mesh_topo bandwidth includes contention")


def schema(repo):
    try:
        import jsonschema
    except ImportError:
        print("SKIP: python module jsonschema not available for " + sys.executable)
        sys.exit(77)
    with open(os.path.join(repo, "configs", "schema", "profile.schema.json")) as f:
        sch = json.load(f)
    jsonschema.Draft202012Validator.check_schema(sch)
    v = jsonschema.Draft202012Validator(sch)
    with open(os.path.join(repo, "configs", "profiles", "dtensor-default.json")) as f:
        docs = [json.load(f)]
    rng = random.Random(5)
    docs += [random_profile(rng) for _ in range(20)]
    for d in docs:
        v.validate(d)
    bad = json.loads(json.dumps(docs[0]))
    bad["models"][0]["segments"][0]["bandwidth_GBps"] = 0
    assert not v.is_valid(bad), "schema accepts B = 0"
    bad = json.loads(json.dumps(docs[0]))
    bad["models"][0]["colour"] = 1
    assert not v.is_valid(bad), "schema accepts an unknown key"
    good = json.loads(json.dumps(docs[0]))
    good["local_copy"] = {"ns_per_byte": 0, "se_ns_per_byte": 0.01, "transitions": 18}
    v.validate(good)
    for k, value in (("ns_per_byte", -0.1), ("transitions", 0), ("GBps", 1)):
        bad = json.loads(json.dumps(good))
        bad["local_copy"][k] = value
        assert not v.is_valid(bad), f"schema accepts local_copy.{k} = {value!r}"
    for key in ("alpha_rel_se", "bandwidth_rel_se", "contention"):
        good = json.loads(json.dumps(docs[0]))
        good["models"][0]["segments"][0][key] = 0.25
        v.validate(good)
        for value in (-0.1, None, "0.1"):
            bad = json.loads(json.dumps(good))
            bad["models"][0]["segments"][0][key] = value
            assert not v.is_valid(bad), f"schema accepts {key} = {value!r}"
    print(f"schema: {len(docs)} profiles valid, bad ones rejected")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "schema":
        schema(sys.argv[2])
        sys.exit(0)
    if len(sys.argv) >= 2 and sys.argv[1] == "parity" and len(sys.argv) == 4:
        parity(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "timefn":
        timefn(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "table":
        table(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 2 and sys.argv[1] == "dtensor" and len(sys.argv) == 3:
        dtensor(sys.argv[2])
    else:
        sys.exit(__doc__)

"""First-call speed: DTensor's default planner vs DTensor with a shardcal profile (no assertions).

What a redistribute pays on the first call of a (spec, spec) pair is one `_gen_transform_infos`
(its plan cache is empty) on top of the communication. One process, torch's fake process group
(collectives complete at once, so the redistribute column is planning + DTensor's dispatch and
local tensor work, the least favourable case for a slower planner), CPU wall time
(`time.perf_counter`). Every repeat runs each variant once, interleaved (A, B, C, A, B, C, ...;
the order reversed in odd repeats); before each timed call every variant clears what install()
clears (plans, planners, DTensor's op-sharding caches), so all find the same caches empty. The
tables give medians and default / variant (>= 1: the profile is not slower).

Three passes per case. The first two interleave only `default` and `active` (issue 34's
acceptance: the first call with a profile against DTensor's default, side by side): warm, then
with the CPU caches flushed (--flush-mib MiB copied before each timed call, both variants: a
program's other work between two first calls). The third interleaves all five variants in a
shuffled order per repeat (seeded), so each follows each other equally often on average: the heavy
variants (profile, dtensor search, mesh=: graphs built, a millisecond of Python search,
use_profile's entry) leave the CPU caches and the allocator in a different state for whichever
variant runs next, which in a fixed five-way order moved the whole call of the light ones by
10-90 us, several times the planning difference measured. Variants:

  default       DTensor as shipped (its greedy planner), after the adapter's apply and restore (the
                work `active` does before its call)
  active        a program that installed the profile once (`use_profile(P, mesh=mesh)`, made once
                per case and applied around each timed call): the first call of a pair it has not
                planned before, every price new (the pricer's price cache cleared). The issue's
                "first call with the profile".
  mesh=         a fresh `use_profile(P, mesh=mesh)` per repeat, the call right after entry: it also
                pays for entry's side effects on the process (memory the entry touched and freed)
  profile       a fresh `use_profile(P)` in a process that has never planned with a profile
                (shardcal's state graphs and the profile's price functions cleared, the mesh's
                link classes unknown): the very first plan
  dtensor search  as active, but with DTensor's own graph planner searching under the profile's
                prices (`Pricer.fast_plan = False`): what shardcal/dtensor_plan.py saves

Columns "plan": one `_gen_transform_infos`; "redistribute": `DTensor.redistribute` of a
1024x1024 f32 (by default) DTensor, the first call of the pair (plan cache cleared; the fake
group's collectives take no time); "planning in it": the `_gen_transform_infos` inside that call
(timed by a wrapper both variants run through); "cached": the next `_gen_transform_infos` of the
pair (cache hit).
--gc collects garbage before each timed call (all variants), which also leaves the CPU caches cold.

    .venv/bin/python scripts/torch/dtensor_first_call.py [--profile P] [--repeats N] [--shape AxB] [--gc]
"""
import argparse
import gc
import random
import statistics
import time

import torch
import torch.distributed as dist
import torch.distributed.tensor._redistribute as rd
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard
from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta
from torch.testing._internal.distributed.fake_pg import FakeStore

import shardcal.dtensor_plan as dplan
import shardcal.torch as st

# mesh, ranks per host, from, to: the emulated two-host rows of docs/PERFORMANCE.md (2x2, 2 per
# host) and 2x4 / 2x2x2 cases on 4-rank hosts
CASES = [((2, 2), 2, "R,P", "R,R"), ((2, 2), 2, "R,S(1)", "R,R"), ((2, 2), 2, "P,P", "R,R"),
         ((2, 2), 2, "S(0),R", "R,S(0)"), ((2, 2), 2, "S(1),R", "R,R"),
         ((2, 4), 4, "R,S(0)", "R,R"), ((2, 4), 4, "S(0),R", "R,R"), ((2, 2, 2), 4, "S(0),S(1),R", "R,S(0),S(1)")]
VARIANTS = ("default", "active", "mesh=", "profile", "dtensor search")


def placements(text):
    return tuple(Replicate() if p == "R" else Partial() if p == "P" else Shard(int(p[2:-1])) for p in text.split(","))


def plan_text(infos):
    return " ".join(f"{i.mesh_dim}:{i.src_dst_placements[0]}→{i.src_dst_placements[1]}" for i in infos)


def clear():
    # what install() clears (plans, planners, DTensor's op-sharding caches), in every variant, so
    # the first redistribute of each finds the same caches empty
    st._clear_caches(rd, DTensor)


COLLECT = False
FLUSH = None  # (source, destination) tensors copied before each timed call of the cold pass
IN_CALL: list = []  # seconds spent in _gen_transform_infos during the timed redistribute


def _time_planning():
    """Wraps DTensor's _gen_transform_infos (the one redistribute calls) to time it inside the call."""
    inner = rd._gen_transform_infos

    def timed_gen(*args, **kwargs):
        t = time.perf_counter()
        out = inner(*args, **kwargs)
        IN_CALL.append(time.perf_counter() - t)
        return out

    timed_gen.cache_clear = inner.cache_clear
    rd._gen_transform_infos = timed_gen


def timed(fn):
    if COLLECT:
        gc.collect()
    if FLUSH is not None:  # CPU caches flushed (a program's other work between two first calls)
        FLUSH[1].copy_(FLUSH[0])
    t = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t) * 1e3, out


def run_variant(which, profile, rph, mesh, src, dst, x, dst_pl, adapter):
    """(plan ms, redistribute ms, cached ms, plan, planning in the redistribute ms) of one variant."""
    def measure(pricer=None):
        def fresh():
            clear()
            if pricer is not None:
                pricer._times.clear()  # every price of the plan new
        fresh()
        plan_ms, infos = timed(lambda: rd._gen_transform_infos(src, dst))
        cached_ms, _ = timed(lambda: rd._gen_transform_infos(src, dst))
        fresh()
        IN_CALL.clear()
        red_ms, _ = timed(lambda: x.redistribute(mesh, dst_pl))
        return plan_ms, red_ms, cached_ms, infos, sum(IN_CALL) * 1e3

    if which == "default":
        # the work the active variant does before its call (the adapter's apply, then restore),
        # so both calls start from the same state: a program applies once
        st._push(adapter)
        st._remove(adapter)
        return measure()
    if which in ("active", "dtensor search"):
        adapter.pricer.fast_plan = which == "active"
        st._push(adapter)
        try:
            return measure(adapter.pricer)
        finally:
            st._remove(adapter)
    profile.__dict__.pop("_time_fns", None)  # the profile's per-class price functions: none yet
    if which == "profile":
        dplan.forget_graphs()  # a process that never planned with a profile
        with st.use_profile(profile, ranks_per_host=rph):
            plan_ms, _, cached_ms, infos, _ = measure()
        dplan.forget_graphs()
        profile.__dict__.pop("_time_fns", None)
        with st.use_profile(profile, ranks_per_host=rph):  # the first redistribute, likewise cold
            clear()
            IN_CALL.clear()
            red_ms, _ = timed(lambda: x.redistribute(mesh, dst_pl))
        return plan_ms, red_ms, cached_ms, infos, sum(IN_CALL) * 1e3
    with st.use_profile(profile, ranks_per_host=rph, mesh=mesh):
        return measure()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="configs/profiles/dtensor-default.json")
    ap.add_argument("--repeats", type=int, default=31)
    ap.add_argument("--shape", default="1024x1024", help="global tensor shape (f32)")
    ap.add_argument("--gc", action="store_true", help="gc.collect() before each timed call")
    ap.add_argument("--flush-mib", type=int, default=16,
                    help="MiB copied before each timed call of the cold pass (default 16; 0: no cold pass)")
    ap.add_argument("--no-gc", action="store_true",
                    help="gc.disable() for the run: no collection lands in a timed call (the variants "
                         "allocate differently around it: use_profile's entry, the adapter's apply)")
    a = ap.parse_args()
    global COLLECT
    COLLECT = a.gc
    if a.no_gc:
        gc.disable()
    try:
        shape = tuple(int(x) for x in a.shape.split("x"))
    except ValueError:
        ap.error(f"--shape {a.shape!r}: write e.g. 1024x1024")
    if min(shape) < 1 or a.repeats < 1 or a.flush_mib < 0:
        ap.error("--shape sizes and --repeats must be >= 1, --flush-mib >= 0")
    try:
        profile = st._load_profile(a.profile)  # read and checked once, outside the timing
        st.runtime_estimator(profile)
    except st.ShardcalTorchError as e:
        ap.error(str(e))
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=8)
    _time_planning()
    meta = TensorMeta(torch.Size(shape), tuple(torch.empty(shape, device="meta").stride()), torch.float32)
    print(f"torch {torch.__version__}; profile {a.profile}; {a.shape} f32; fake process group, rank 0 of 8; "
          f"medians of {a.repeats} interleaved repeats; ms of wall time unless said; ratio = default / variant"
          f"{'; gc.collect() before each timed call' if a.gc else ''}{'; gc disabled' if a.no_gc else ''}")
    rows_a, rows_c, rows_b = [], [], []
    flush = (torch.ones(a.flush_mib << 18), torch.empty(a.flush_mib << 18)) if a.flush_mib else None
    global FLUSH
    for mesh_shape, rph, frm, to in CASES:
        mesh = init_device_mesh("cpu", mesh_shape)
        src = DTensorSpec(mesh, placements(frm), tensor_meta=meta)
        dst = DTensorSpec(mesh, placements(to), tensor_meta=meta)
        full = torch.randn(shape)
        local = torch.randn(_local_shape(shape, mesh, placements(frm)))
        x = DTensor.from_local(local, mesh, placements(frm), run_check=False, shape=full.shape,
                               stride=full.stride())
        adapter = st._make_adapter(profile, rph, None, mesh, None, True)  # what use_profile(mesh=) makes
        head = f"| {'x'.join(map(str, mesh_shape))} | {rph} | `{frm} → {to}` |"
        passes = [(("default", "active"), rows_a, None)] + \
            ([(("default", "active"), rows_c, flush)] if flush else []) + [(VARIANTS, rows_b, None)]
        for variants, rows, flush_now in passes:
            FLUSH = flush_now
            t = {v: ([], [], [], []) for v in variants}
            plans = {}
            for r in range(a.repeats):
                order = list(variants if r % 2 else variants[::-1])
                if len(variants) > 2:
                    random.Random(r).shuffle(order)
                for which in order:
                    plan_ms, red_ms, cached_ms, infos, in_call_ms = run_variant(
                        which, profile, rph, mesh, src, dst, x, placements(to), adapter)
                    for lst, v in zip(t[which], (plan_ms, red_ms, cached_ms, in_call_ms)):
                        lst.append(v)
                    plans[which] = plan_text(infos)
            med = {v: [statistics.median(lst) for lst in t[v]] for v in variants}
            same = "yes" if plans["default"] == plans["active"] else "no"
            if len({plans[v] for v in variants if v != "default"}) > 1:  # never seen: say so, no abort
                same += f" (profile variants differ: {plans})"
            if rows is not rows_b:
                d, ac = med["default"], med["active"]
                rows.append(f"{head} {same} | {d[0]:.3f} / {ac[0]:.3f} | {d[0] / ac[0]:.2f}× | "
                            f"{d[3] * 1e3:.1f} / {ac[3] * 1e3:.1f} | {d[1]:.3f} / {ac[1]:.3f} | **{d[1] / ac[1]:.2f}×** | "
                            f"{d[2] * 1e3:.1f} / {ac[2] * 1e3:.1f} |")
            else:
                d, ac, w, p, ds = (med[v] for v in VARIANTS)
                rows.append(f"{head} {same} | {d[0]:.3f} / {ac[0]:.3f} / {w[0]:.3f} / {p[0]:.3f} / {ds[0]:.3f} | "
                            f"{d[0] / ac[0]:.2f}×, {d[0] / w[0]:.2f}× | {d[1]:.3f} / {ac[1]:.3f} / {w[1]:.3f} / {p[1]:.3f} | "
                            f"{d[1] / ac[1]:.2f}×, {d[1] / w[1]:.2f}× |")
    pair = ("| mesh | ranks/host | from → to | same plan | plan: default / active (ms) | plan ratio "
            "| planning in the redistribute: default / active (µs) | redistribute: default / active (ms) "
            "| redistribute ratio | cached: default / active (µs) |")
    five = ("| mesh | ranks/host | from → to | same plan | plan: default / active / mesh= / profile / dtensor search (ms) "
            "| plan ratio active, mesh= | redistribute: default / active / mesh= / profile (ms) "
            "| redistribute ratio active, mesh= |")
    tables = [("First call, default vs active (only these two interleaved):", pair, rows_a),
              (f"The same, CPU caches flushed ({a.flush_mib} MiB copied before each timed call, both variants):",
               pair, rows_c),
              ("All five variants interleaved (order shuffled per repeat):", five, rows_b)]
    for title, header, rows in tables:
        if rows:
            print(f"\n{title}\n\n{header}\n|{'---|' * header.count(' | ')}---|")
            print("\n".join(rows))


def _local_shape(shape, mesh, pls):
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset
    return list(compute_local_shape_and_global_offset(torch.Size(shape), mesh, pls)[0])


if __name__ == "__main__":
    main()

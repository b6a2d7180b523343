"""DTensor's graph planner (`DTensorRedistributePlanner.find_min_cost_path`, torch 2.15) redone over
compact states, for the plans `shardcal.torch` makes while a profile is active.

Why: DTensor's Dijkstra builds a `DistState` dataclass, `Shard`/`Replicate` objects and a
`ShardOrderEntry` tuple for every neighbour of every state it expands, and prices each edge through
two `DTensorSpec`s; a first plan took 0.4-11 ms where DTensor's greedy default takes ~0.05 ms.
Here a state is two tuples of ints (a code per mesh dim, the mesh dims sharding each tensor dim in
order) and an edge is priced by the same `Pricer` calls, so the first plan costs a fraction of that.

The plans are DTensor's own, step for step: the same neighbours in the same order (get_next_state's
cases 1-6, then `_get_shard_to_partial_target_states`), the same edge costs (the adapter's
cost_function: `Pricer.step_us` of the one mesh dim that changes, with the largest logical shape),
summed in the same order, and the same heap order ((cost, push counter)), so ties break the same
way. `tests/torch/dtensor_adapter_test.py` case `fastplan` compares the two on every source and
target of several meshes, shapes and dtypes. Only plain Shard/Replicate/Partial placements without
symbolic shapes come here; anything else (a `_StridedShard` in the planner's targets, tracing)
returns None and the caller uses DTensor's planner.

Placement codes: t >= 0 = Shard(t), -1 = Replicate, -2 - k = Partial(reduce op number k).
"""

from __future__ import annotations

import heapq

_R = -1


def plan(pricer, rd, planner, src_spec, dst_spec, itemsize: int, dtype):
    """DTensor's min-cost plan (a list of `_TransformInfo`) for src_spec -> dst_spec, or None when
    this planner does not handle the case. `planner` is `rd.get_redistribute_planner(mesh, meta)`,
    whose reduce-op set is updated as DTensor updates it (it persists between plans and decides
    which R -> P edges exist)."""
    if planner.strided_shard_placements_in_target or src_spec.use_strided_shard_as_shard_order or \
            dst_spec.use_strided_shard_as_shard_order or src_spec.shard_order is None or dst_spec.shard_order is None:
        return None
    from torch.distributed.tensor.placement_types import Partial, Replicate, Shard

    mesh = src_spec.mesh
    full = src_spec.shape
    ndim_t = len(full)
    try:
        full_ints = tuple(int(x) for x in full)
    except TypeError:
        return None
    if any(type(x) is not int for x in full):  # SymInt: DTensor's symbolic costs
        return None
    ops_set = planner.partial_reduce_ops_in_target
    for p in (*src_spec.placements, *dst_spec.placements):
        if type(p) is Partial:
            ops_set.add(p.reduce_op)
    ops: list = []  # reduce op number k -> name
    partial_obj: dict = {}  # reduce op -> a Partial object (the specs' own where they have one)
    for p in (*src_spec.placements, *dst_spec.placements):
        if type(p) is Partial and p.reduce_op not in partial_obj:
            partial_obj[p.reduce_op] = p
    for op in ops_set:
        if op not in partial_obj:
            partial_obj[op] = Partial(op)

    def code(p) -> int:
        if type(p) is Shard:
            return p.dim
        if type(p) is Replicate:
            return _R
        if p.reduce_op not in ops:
            ops.append(p.reduce_op)
        return -2 - ops.index(p.reduce_op)

    def order_of(spec):
        order = [()] * ndim_t
        for entry in spec.shard_order:
            order[entry.tensor_dim] = tuple(entry.mesh_dims)
        return tuple(order)

    src = (tuple(code(p) for p in src_spec.placements), order_of(src_spec))
    dst = (tuple(code(p) for p in dst_spec.placements), order_of(dst_spec))
    # R -> P edges: one per reduce op of the planner's set, in the set's own iteration order
    r_to_p = [(-2 - (ops.index(op) if op in ops else (ops.append(op) or len(ops) - 1)), op) for op in ops_set]
    sum_codes = {c for c, op in ((-2 - k, op) for k, op in enumerate(ops)) if op == "sum"}
    dst_pl = dst[0]

    _, mesh_shape, device_type, backends, _, _ = pricer.mesh_info(mesh)
    cpu = device_type == "cpu"
    time_us = pricer.time_us
    inf = float("inf")
    edge_memo: dict = {}

    def edge(pl, d, b):
        """The adapter's cost_function for changing mesh dim d of placements pl to code b."""
        key = (pl, d, b)
        c = edge_memo.get(key)
        if c is not None:
            return c
        a = pl[d]
        if a == _R:  # R -> S, R -> P: local
            c = 0.0
        elif b <= -2:  # S -> P, P -> P: DTensor's +inf for the search
            c = inf
        else:
            n = mesh_shape[d]
            ls = list(full_ints)  # the largest logical shape mesh dim d sees
            for m, q in enumerate(pl):
                if m != d and q >= 0:
                    ls[q] = -(-ls[q] // mesh_shape[m])
            if a >= 0:
                ls[a] = -(-ls[a] // n)
                if b == _R:
                    coll, nb = "all_gather", n
                else:
                    ls[b] = -(-ls[b] // n) * n
                    coll, nb = ("all_gather", n) if cpu else ("all_to_all", 1)
            elif b == _R:
                coll, nb = "all_reduce", 1
            else:
                ls[b] = -(-ls[b] // n) * n
                coll, nb = ("all_reduce", 1) if backends[d] == "gloo" else ("reduce_scatter", 1)
            numel = nb * itemsize
            for x in ls:
                numel *= x
            c = time_us(mesh, d, coll, numel, dtype)
        edge_memo[key] = c
        return c

    def neighbours(state):
        """(next state, cost) in get_next_state's order, then the explicit S -> P(sum) steps."""
        pl, order = state
        out = []
        for a in range(ndim_t):  # case 1: S(a) -> S(b) on the last mesh dim sharding a
            if not order[a]:
                continue
            m = order[a][-1]
            rest = order[a][:-1]
            for b in range(ndim_t):
                if b == a:
                    continue
                no = list(order)
                no[a] = rest
                no[b] = order[b] + (m,)
                npl = pl[:m] + (b,) + pl[m + 1:]
                out.append(((npl, tuple(no)), edge(pl, m, b)))
        for a in range(ndim_t):  # case 2: S -> R
            if not order[a]:
                continue
            m = order[a][-1]
            no = order[:a] + (order[a][:-1],) + order[a + 1:]
            out.append(((pl[:m] + (_R,) + pl[m + 1:], no), edge(pl, m, _R)))
        for m, p in enumerate(pl):  # case 3: P -> R
            if p <= -2:
                out.append(((pl[:m] + (_R,) + pl[m + 1:], order), edge(pl, m, _R)))
        for m, p in enumerate(pl):  # case 4: R -> S
            if p == _R:
                for b in range(ndim_t):
                    no = order[:b] + (order[b] + (m,),) + order[b + 1:]
                    out.append(((pl[:m] + (b,) + pl[m + 1:], no), edge(pl, m, b)))
        for m, p in enumerate(pl):  # case 5: P -> S
            if p <= -2:
                for b in range(ndim_t):
                    no = order[:b] + (order[b] + (m,),) + order[b + 1:]
                    out.append(((pl[:m] + (b,) + pl[m + 1:], no), edge(pl, m, b)))
        for m, p in enumerate(pl):  # case 6: R -> P, no mixed reduce ops except sum + avg
            if p == _R:
                for c, op in r_to_p:
                    npl = pl[:m] + (c,) + pl[m + 1:]
                    kinds = {ops[-2 - q] for q in npl if q <= -2}
                    if len(kinds) > 1 and kinds != {"sum", "avg"}:
                        continue
                    out.append(((npl, order), edge(pl, m, c)))
        for a in range(ndim_t):  # explicit S -> P(sum) where the target is P(sum): 0 (DTensor's)
            if not order[a]:
                continue
            m = order[a][-1]
            if dst_pl[m] in sum_codes:
                no = order[:a] + (order[a][:-1],) + order[a + 1:]
                out.append(((pl[:m] + (dst_pl[m],) + pl[m + 1:], no), 0.0))
        return out

    # Dijkstra exactly as find_min_cost_path: heap of (cost, counter, state, path link)
    counter = 0
    pq = [(0.0, 0, src, (src, None))]
    visited = set()
    path = None
    while pq:
        cost, _, state, link = heapq.heappop(pq)
        if state == dst:
            path = link
            break
        if state in visited:
            continue
        visited.add(state)
        seen: dict = {}  # get_next_state returns a dict: a repeated state keeps its first place, last cost
        for nxt, c in neighbours(state):
            seen[nxt] = c
        for nxt, c in seen.items():
            if nxt not in visited:
                counter += 1
                heapq.heappush(pq, (cost + c, counter, nxt, (nxt, link)))
    if path is None:
        return None  # DTensor raises here: let its planner say so
    states = []
    while path is not None:
        states.append(path[0])
        path = path[1]
    states.reverse()

    def placement(c):
        if c >= 0:
            return Shard(c)
        if c == _R:
            return Replicate()
        return partial_obj[ops[-2 - c]]

    from torch.distributed.tensor._dtensor_spec import ShardOrderEntry
    objs: dict = {}
    for p in (*src_spec.placements, *dst_spec.placements):
        objs.setdefault(code(p), p)
    infos = []
    for cur, nxt in zip(states, states[1:]):
        if cur[0] == nxt[0]:
            continue
        d = next(m for m, (a, b) in enumerate(zip(cur[0], nxt[0])) if a != b)
        pls = tuple(objs.get(c) or placement(c) for c in cur[0])
        order = tuple(ShardOrderEntry(tensor_dim=t, mesh_dims=ms) for t, ms in enumerate(cur[1]) if ms)
        ls = planner.get_logical_shape(planner.DistState(pls, order), d, full)
        infos.append(rd._TransformInfo(mesh_dim=d, src_dst_placements=(pls[d], objs.get(nxt[0][d]) or
                                                                       placement(nxt[0][d])),
                                       logical_shape=ls))
    return infos

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
import threading

from .profile import ProfileError

_R = -1
_lock = threading.Lock()
_op_codes: dict = {}  # reduce op name -> its code (-2, -3, ...), the same in every plan
_graphs: dict = {}  # (tensor dims, R -> P codes in order) -> _Graph (its states: any number of mesh dims)


def _op_code(op: str) -> int:
    c = _op_codes.get(op)
    if c is None:
        with _lock:
            c = _op_codes.setdefault(op, -2 - len(_op_codes))
    return c


class _Graph:
    """DTensor's state graph for one (tensor dims, R -> P reduce ops) without costs: states
    numbered as first met, each expanded state's neighbours (state number, edge number) in
    get_next_state's order, each edge (placements, mesh dim, new code). It depends on no shape,
    dtype, mesh or profile, so it is kept for the process and shared by every plan (and warmed by
    use_profile(mesh=...))."""

    def __init__(self, ndim_t: int, r_to_p: tuple):
        self.ndim_t = ndim_t
        self.r_to_p = r_to_p  # (code, op name) in the planner's set order
        self.ids: dict = {}
        self.states: list = []
        self.adj: list = []  # state number -> [(state number, edge number)] or None
        self.edge_ids: dict = {}
        self.edges: list = []  # edge number -> (placements, mesh dim, code)
        # edge number -> 0.0 (R -> S, R -> P: local), +inf (S -> P, P -> P: never searched) or None
        # (a collective, priced per plan): the adapter's cost_function's rules, without a call
        self.fixed: list = []

    def sid(self, state) -> int:
        i = self.ids.get(state)
        if i is None:
            with _lock:
                i = self.ids.get(state)
                if i is None:
                    i = len(self.states)
                    self.states.append(state)
                    self.adj.append(None)
                    self.ids[state] = i
        return i

    def neighbours(self, i: int) -> list:
        nb = self.adj[i]
        if nb is None:
            nb = self._expand(self.states[i])
            self.adj[i] = nb
        return nb

    def _eid(self, key) -> int:
        e = self.edge_ids.get(key)
        if e is None:
            with _lock:
                e = self.edge_ids.get(key)
                if e is None:
                    e = len(self.edges)
                    pl, d, b = key
                    self.fixed.append(0.0 if pl[d] == _R else (float("inf") if b <= -2 else None))
                    self.edges.append(key)
                    self.edge_ids[key] = e
        return e

    def _expand(self, state) -> list:
        """get_next_state's cases 1-6 in its order (no _StridedShard: plain placements only)."""
        pl, order = state
        ndim_t = self.ndim_t
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
                out.append(((pl[:m] + (b,) + pl[m + 1:], tuple(no)), (pl, m, b)))
        for a in range(ndim_t):  # case 2: S -> R
            if not order[a]:
                continue
            m = order[a][-1]
            no = order[:a] + (order[a][:-1],) + order[a + 1:]
            out.append(((pl[:m] + (_R,) + pl[m + 1:], no), (pl, m, _R)))
        for m, p in enumerate(pl):  # case 3: P -> R
            if p <= -2:
                out.append(((pl[:m] + (_R,) + pl[m + 1:], order), (pl, m, _R)))
        for m, p in enumerate(pl):  # case 4: R -> S
            if p == _R:
                for b in range(ndim_t):
                    no = order[:b] + (order[b] + (m,),) + order[b + 1:]
                    out.append(((pl[:m] + (b,) + pl[m + 1:], no), (pl, m, b)))
        for m, p in enumerate(pl):  # case 5: P -> S
            if p <= -2:
                for b in range(ndim_t):
                    no = order[:b] + (order[b] + (m,),) + order[b + 1:]
                    out.append(((pl[:m] + (b,) + pl[m + 1:], no), (pl, m, b)))
        names = {c: op for op, c in _op_codes.items()}
        for m, p in enumerate(pl):  # case 6: R -> P, no mixed reduce ops except sum + avg
            if p == _R:
                for c, _ in self.r_to_p:
                    npl = pl[:m] + (c,) + pl[m + 1:]
                    kinds = {names[q] for q in npl if q <= -2}
                    if len(kinds) > 1 and kinds != {"sum", "avg"}:
                        continue
                    out.append(((npl, order), (pl, m, c)))
        # get_next_state returns a dict: a repeated state keeps its first place and its last edge
        seen: dict = {}
        for nxt, key in out:
            seen[nxt] = key
        return [(self.sid(nxt), self._eid(key)) for nxt, key in seen.items()]


def _graph(ndim_t: int, r_to_p: tuple) -> _Graph:
    key = (ndim_t, r_to_p)
    g = _graphs.get(key)
    if g is None:
        with _lock:
            g = _graphs.setdefault(key, _Graph(ndim_t, r_to_p))
    return g


def warm(ndim_mesh: int, tensor_dims=(1, 2, 3), ops=("sum",)) -> None:
    """Expands every state of the graphs plans on a mesh of ndim_mesh dims will most likely use
    (tensors of tensor_dims dims; no reduce op and each of ops for R -> P), so a first plan finds
    its graph built. A few ms per graph; what a plan then pays is the search and its prices."""
    import itertools
    for ndim_t in tensor_dims:
        for r_to_p in [()] + [((_op_code(op), op),) for op in ops]:
            g = _graph(ndim_t, r_to_p)
            codes = [_R] + list(range(ndim_t)) + [c for c, _ in r_to_p]
            for pl in itertools.product(codes, repeat=ndim_mesh):
                order = [[] for _ in range(ndim_t)]
                for m, c in enumerate(pl):
                    if c >= 0:
                        order[c].append(m)
                g.neighbours(g.sid((tuple(pl), tuple(tuple(o) for o in order))))


_placement_types: tuple = ()


def _load_placement_types() -> tuple:
    global _placement_types
    from torch.distributed.tensor.placement_types import Partial, Replicate, Shard
    _placement_types = (Partial, Replicate, Shard)
    return _placement_types


def plan(pricer, rd, planner, src_spec, dst_spec, itemsize: int, dtype):
    """DTensor's min-cost plan (a list of `_TransformInfo`) for src_spec -> dst_spec, or None when
    this planner does not handle the case. `planner` is `rd.get_redistribute_planner(mesh, meta)`,
    whose reduce-op set is updated as DTensor updates it (it persists between plans and decides
    which R -> P edges exist)."""
    if planner.strided_shard_placements_in_target or src_spec.use_strided_shard_as_shard_order or \
            dst_spec.use_strided_shard_as_shard_order or src_spec.shard_order is None or dst_spec.shard_order is None:
        return None
    Partial, Replicate, Shard = _placement_types or _load_placement_types()

    mesh = src_spec.mesh
    full = src_spec.shape
    ndim_t = len(full)
    if any(type(x) is not int for x in full):  # SymInt: DTensor's symbolic costs
        return None
    ops_set = planner.partial_reduce_ops_in_target
    partial_obj: dict = {}  # reduce op -> a Partial object (the specs' own where they have one)
    for p in (*src_spec.placements, *dst_spec.placements):
        if type(p) is Partial:
            ops_set.add(p.reduce_op)
            partial_obj.setdefault(p.reduce_op, p)

    def code(p) -> int:
        if type(p) is Shard:
            return p.dim
        if type(p) is Replicate:
            return _R
        return _op_code(p.reduce_op)

    def order_of(spec):
        order = [()] * ndim_t
        for entry in spec.shard_order:
            order[entry.tensor_dim] = tuple(entry.mesh_dims)
        return tuple(order)

    src = (tuple(code(p) for p in src_spec.placements), order_of(src_spec))
    dst = (tuple(code(p) for p in dst_spec.placements), order_of(dst_spec))
    # R -> P edges: one per reduce op of the planner's set, in the set's own iteration order
    g = _graph(ndim_t, tuple((_op_code(op), op) for op in ops_set))
    sum_code = _op_code("sum")
    dst_pl = dst[0]
    to_sum = sum_code in dst_pl  # explicit S -> P(sum) steps exist only toward a P(sum) target

    _, mesh_shape, device_type, backends, _, links = pricer.mesh_info(mesh)
    # Pricer.time_us's cache keys, per mesh dim: a hit costs one lookup
    prefix = [(lc["group_size"], lc["hosts"], lc["ranks_per_host"], lc["concurrent_groups"]) for lc in links]
    times = pricer._times
    cpu = device_type == "cpu"
    full_ints = tuple(full)
    time_us = pricer.time_us
    profile = pricer.profile
    fns: dict = {}
    inf = float("inf")
    edges = g.edges
    fixed = g.fixed

    def edge(e):
        """The adapter's cost_function for edge e: Pricer.step_us of the mesh dim that changes."""
        pl, d, b = edges[e]
        a = pl[d]
        if a == _R:  # R -> S, R -> P: local
            return 0.0
        if b <= -2:  # S -> P, P -> P: DTensor's +inf for the search
            return inf
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
        key = prefix[d] + (coll, numel, dtype)
        t = times.get(key)
        if t is None:
            # Pricer.time_us's price through the class's Profile.time_fn, bound once per plan;
            # a class the profile cannot price goes through time_us (its warning and +inf)
            fn = fns.get((d, coll))
            if fn is None:
                lc = links[d]
                try:
                    fn = profile.time_fn(coll, lc["group_size"], lc["hosts"], lc["ranks_per_host"], dtype,
                                         lc["concurrent_groups"])
                except ProfileError:
                    fn = False
                fns[(d, coll)] = fn
            if fn is False:
                return time_us(mesh, d, coll, numel, dtype)
            t = times[key] = fn(float(numel))
        return t

    def to_sum_steps(i):
        """_get_shard_to_partial_target_states: S -> P(sum) on the last mesh dim sharding a tensor
        dim where the target is P(sum), cost 0."""
        pl, order = g.states[i]
        out = []
        for a in range(ndim_t):
            if order[a] and dst_pl[order[a][-1]] == sum_code:
                m = order[a][-1]
                no = order[:a] + (order[a][:-1],) + order[a + 1:]
                out.append((g.sid((pl[:m] + (sum_code,) + pl[m + 1:], no)), -1))
        return out

    # Dijkstra as find_min_cost_path: heap of (cost, push counter, state, path link). An entry
    # costing at least the best target entry pushed so far would be popped after it, so it is
    # counted (the counter orders ties) but not pushed.
    src_i, dst_i = g.sid(src), g.sid(dst)
    cost_of: dict = {-1: 0.0}  # edge number -> price (this tensor, mesh and profile)
    counter = 0
    best = inf
    pq = [(0.0, 0, src_i, (src_i, None))]
    visited = set()
    path = None
    pop, push = heapq.heappop, heapq.heappush
    while pq:
        cost, _, i, link = pop(pq)
        if i == dst_i:
            path = link
            break
        if i in visited:
            continue
        visited.add(i)
        nb = g.neighbours(i)
        if to_sum:
            nb = nb + to_sum_steps(i)
        for j, e in nb:
            if j in visited:
                continue
            counter += 1
            c = cost_of.get(e)
            if c is None:
                c = fixed[e] if e >= 0 else None
                if c is None:
                    c = edge(e)
                cost_of[e] = c
            c += cost
            if c >= best:
                continue
            if j == dst_i:
                best = c
            push(pq, (c, counter, j, (j, link)))
    if path is None:
        return None  # DTensor raises here: let its planner say so
    states = []
    while path is not None:
        states.append(g.states[path[0]])
        path = path[1]
    states.reverse()

    def placement(c):
        if c >= 0:
            return Shard(c)
        if c == _R:
            return Replicate()
        op = next(o for o, k in _op_codes.items() if k == c)
        return partial_obj.get(op) or Partial(op)

    objs: dict = {}
    for p in (*src_spec.placements, *dst_spec.placements):
        objs.setdefault(code(p), p)
    # Each step's logical shape as planner.get_logical_shape(DistState(...), d, full) computes it
    # (the same Shard.local_shard_size_and_offset calls with this rank's coordinates, tensor dims
    # in order, each one's mesh dims in shard order) without building a DistState per step.
    coords: dict = {}
    shard_size = Shard.local_shard_size_and_offset
    infos = []
    for cur, nxt in zip(states, states[1:]):
        if cur[0] == nxt[0]:
            continue
        d = next(m for m, (a, b) in enumerate(zip(cur[0], nxt[0])) if a != b)
        ls = list(full)
        for t, ms in enumerate(cur[1]):
            for m in ms:
                if m == d:
                    continue
                r = coords.get(m)
                if r is None:
                    r = coords[m] = mesh._sym_get_coordinate(m)
                x, k = ls[t], mesh_shape[m]
                if type(x) is int and type(r) is int:  # local_shard_size_and_offset's ints, ~5 us less
                    if x % k == 0:
                        ls[t] = x // k
                    else:
                        c = (x + k - 1) // k
                        ls[t] = max(0, min(x, c * r + c) - c * r)
                else:
                    ls[t] = shard_size(x, k, r)[0]
        infos.append(rd._TransformInfo(mesh_dim=d, src_dst_placements=(objs.get(cur[0][d]) or placement(cur[0][d]),
                                                                       objs.get(nxt[0][d]) or placement(nxt[0][d])),
                                       logical_shape=ls))
    return infos

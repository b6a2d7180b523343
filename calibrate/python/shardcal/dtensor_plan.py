"""DTensor's graph planner (`DTensorRedistributePlanner.find_min_cost_path`, torch 2.15) redone over
compact states, for the plans `shardcal.torch` makes while a profile is active.

Why: DTensor's Dijkstra builds a `DistState` dataclass, `Shard`/`Replicate` objects and a
`ShardOrderEntry` tuple for every neighbour of every state it expands, and prices each edge through
two `DTensorSpec`s; a first plan took 0.4-11 ms where DTensor's greedy default takes ~0.05 ms.
Here a state is two tuples of ints (a code per mesh dim, the mesh dims sharding each tensor dim in
order) and an edge is priced by the same `Pricer` calls, so the first plan costs a fraction of that.
The whole plan runs compiled (`_dtensor_search.cpp` in shardcal._core, pybind11: the specs' states, the search, the
`_TransformInfo` list; ~2 us per popped state in Python was most of a first plan, and the Python
around the compiled search kept the first redistribute at 0.84-0.91x the greedy default's speed):
the graph stays defined here (`_Graph` numbers its states and registers its edges and expanded
states with the compiled copy), and each price is the C++ cost model's: a class's Profile.time_fn
is evaluated by the compiled search itself, an unbound class comes from the `price` callback.
The same plan is also made in Python (`_search` and the steps below, `use_compiled = False`): the
reference the tests compare.

The plans are DTensor's own, step for step: the same neighbours in the same order (get_next_state's
cases 1-6, then `_get_shard_to_partial_target_states`), the same edge costs (the adapter's
cost_function: `Pricer.step_us` of the one mesh dim that changes, with the largest logical shape),
summed in the same order, and the same heap order ((cost, push counter)), so ties break the same
way. `tests/torch/dtensor_adapter_test.py` case `fastplan` compares DTensor's planner with both
searches on every source and target of several meshes, shapes and dtypes. Only plain Shard/Replicate/Partial placements without
symbolic shapes come here; anything else (a `_StridedShard` in the planner's targets, a SymInt
size) returns None and the caller uses DTensor's planner. While torch.compile traces one rank for all
(compile_on_one_rank), this rank's coordinates may be symbolic: the Python path plans then.

Placement codes: t >= 0 = Shard(t), -1 = Replicate, -2 - k = Partial(reduce op number k).
"""

from __future__ import annotations

import heapq
import threading
import warnings
import weakref

from .profile import ProfileError

# The search compiled (_dtensor_search.cpp), part of the package's compiled core shardcal._core,
# where it prices with the C++ cost model (profile_read imports _core and says when it is missing)
from ._core import search as _compiled

# Whether plan() searches with the compiled module (tests set False to check the Python search)
use_compiled = _compiled is not None
_R = -1
# The price callback's collective codes (_dtensor_search.cpp's Coll)
COLLECTIVES = ("all_gather", "all_to_all", "all_reduce", "reduce_scatter")
_lock = threading.Lock()
_op_codes: dict = {}  # reduce op name -> its code (-2, -3, ...), the same in every plan
_graphs: dict = {}  # (tensor dims, R -> P codes in order) -> _Graph (its states: any number of mesh dims)
_graph_of: dict = {}  # (tensor dims, *reduce-op set in its order) -> its _Graph: plan's lookup without building the key
# plans made by the compiled plan() and by the Python path (which may still search compiled): tests
# check which one ran (not locked: a count may be lost between threads)
stats = {"compiled plan": 0, "python plan": 0}


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
        # state number -> [(mesh dim m, state number)]: _get_shard_to_partial_target_states's
        # S -> P(sum) steps on the last mesh dim sharding each tensor dim, taken (cost 0) when the
        # target has P(sum) on m
        self.sums: list = []
        # the compiled copy: edges and expanded states mirrored; it expands a state through a weak
        # reference (a C++ object's references are invisible to Python's cycle collector)
        self.compiled = None
        if _compiled is not None:
            ref = weakref.ref(self)
            self.compiled = _compiled.Graph(lambda i: ref().neighbours(i), _op_code("sum"))

    def sid(self, state) -> int:
        i = self.ids.get(state)
        if i is None:
            out_of_step = False
            with _lock:
                i = self.ids.get(state)
                if i is None:
                    i = len(self.states)
                    # Stored here first: the compiled copy's plan() may find the state as soon as it
                    # is numbered there (another thread, between two bytecodes) and expand it
                    self.states.append(state)
                    self.adj.append(None)
                    self.sums.append(None)
                    if self.compiled is not None:  # numbered there too: its plan() needs no Python
                        try:
                            n = self.compiled.add_state(list(state[0]), [list(o) for o in state[1]])
                        except BaseException:
                            del self.states[i:], self.adj[i:], self.sums[i:]
                            raise
                        if n != i:  # (a bug: plan in Python from now on rather than plan wrong)
                            out_of_step = True
                            self.compiled = None
                    self.ids[state] = i
            if out_of_step:
                _out_of_step("state")
        return i

    def neighbours(self, i: int) -> list:
        nb = self.adj[i]
        if nb is None:
            nb = self._expand(self.states[i])
            sums = self._sum_steps(self.states[i])
            with _lock:
                if self.adj[i] is None:
                    if self.compiled is not None:  # first: if it refuses, nothing is half-registered
                        self.compiled.set_adj(i, nb, sums)
                    self.sums[i] = sums
                    self.adj[i] = nb
                nb = self.adj[i]
        return nb

    def _sum_steps(self, state) -> list:
        pl, order = state
        sum_code = _op_code("sum")
        out = []
        for a in range(self.ndim_t):
            if order[a]:
                m = order[a][-1]
                no = order[:a] + (order[a][:-1],) + order[a + 1:]
                out.append((m, self.sid((pl[:m] + (sum_code,) + pl[m + 1:], no))))
        return out

    def _eid(self, key) -> int:
        e = self.edge_ids.get(key)
        if e is None:
            out_of_step = False
            with _lock:
                e = self.edge_ids.get(key)
                if e is None:
                    e = len(self.edges)
                    pl, d, b = key
                    self.edges.append(key)  # (as sid: stored here first)
                    if self.compiled is not None:
                        try:
                            n = self.compiled.add_edge(list(pl), d, b)
                        except BaseException:
                            del self.edges[e:]
                            raise
                        if n != e:
                            out_of_step = True
                            self.compiled = None
                    self.edge_ids[key] = e
            if out_of_step:
                _out_of_step("edge")
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
        with _lock:  # (another thread may register a reduce op meanwhile)
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


def _out_of_step(what: str) -> None:
    warnings.warn(f"shardcal.dtensor_plan: the compiled {what} table is out of step with Python's (a bug: "
                  f"please report it); this graph plans in Python from now on", RuntimeWarning, stacklevel=3)


def _graph(ndim_t: int, r_to_p: tuple) -> _Graph:
    key = (ndim_t, r_to_p)
    g = _graphs.get(key)
    if g is None:
        new = _Graph(ndim_t, r_to_p)  # (outside the lock: it registers P(sum)'s code, which takes it)
        with _lock:
            g = _graphs.setdefault(key, new)
    return g


def forget_graphs() -> None:
    """Drops every state graph (benchmarks: a process that never planned)."""
    with _lock:
        _graph_of.clear()
        _graphs.clear()


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


def _edge_query(edge, full, itemsize: int, mesh_shape, cpu: bool, gloo):
    """What edge (placements, mesh dim d, new code) runs: 0.0 (local), +inf (never searched) or
    (d, collective code, bytes), by the adapter's cost_function (Pricer.step_query) for the largest
    logical shape mesh dim d sees. _dtensor_search.cpp's edge_price mirrors it."""
    pl, d, b = edge
    a = pl[d]
    if a == _R:  # R -> S, R -> P: local
        return 0.0
    if b <= -2:  # S -> P, P -> P: DTensor's +inf for the search
        return float("inf")
    n = mesh_shape[d]
    ls = list(full)
    for m, q in enumerate(pl):
        if m != d and q >= 0:
            ls[q] = -(-ls[q] // mesh_shape[m])
    if a >= 0:
        ls[a] = -(-ls[a] // n)
        if b == _R:
            ci, nb = 0, n  # all_gather
        else:
            ls[b] = -(-ls[b] // n) * n
            ci, nb = (0, n) if cpu else (1, 1)  # all_gather (gloo: no all-to-all) or all_to_all
    elif b == _R:
        ci, nb = 2, 1  # all_reduce
    else:
        ls[b] = -(-ls[b] // n) * n
        ci, nb = (2, 1) if gloo[d] else (3, 1)  # reduce_scatter (gloo: all_reduce)
    numel = nb * itemsize
    for x in ls:
        numel *= x
    return d, ci, numel


def _search(g, src_i, dst_i, full, itemsize, mesh_shape, cpu, gloo, dst_pl, sum_code, price):
    """find_min_cost_path's Dijkstra in Python (the compiled one's reference and fallback): heap of
    (cost, push counter, state, path link). An entry costing at least the best target entry
    pushed so far would be popped after it, so it is counted (the counter orders ties) but not
    pushed. Returns the path's states, or None."""
    cost_of: dict = {-1: 0.0}  # edge number -> price (this tensor, mesh and profile)
    edges = g.edges
    to_sum = sum_code in dst_pl  # explicit S -> P(sum) steps exist only toward a P(sum) target
    counter = 0
    best = float("inf")
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
            nb = nb + [(j, -1) for m, j in g.sums[i] if dst_pl[m] == sum_code]
        for j, e in nb:
            if j in visited:
                continue
            counter += 1
            c = cost_of.get(e)
            if c is None:
                q = _edge_query(edges[e], full, itemsize, mesh_shape, cpu, gloo)
                c = cost_of[e] = q if type(q) is float else price(*q)
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
    return states


_placement_types: tuple = ()
_fake_mode = _FAKE = None  # torch's dispatch-mode query and its FAKE key, bound with the types


def _load_placement_types() -> tuple:
    global _placement_types, _fake_mode, _FAKE
    import torch
    from torch.distributed.tensor.placement_types import Partial, Replicate, Shard
    _fake_mode, _FAKE = torch._C._get_dispatch_mode, torch._C._TorchDispatchModeKey.FAKE
    _placement_types = (Partial, Replicate, Shard)
    return _placement_types


def _one_rank() -> bool:
    """torch.compiler.config.compile_on_one_rank: under a fake mode (with a shape env),
    DeviceMesh._sym_get_coordinate then gives symbolic coordinates."""
    import torch.compiler.config as config
    return bool(config.compile_on_one_rank)


class _MeshContext:
    """What plan() needs of a mesh, worked out once per Pricer and mesh: its shape, whether S(a) ->
    S(b) is an all-gather (cpu), which dims run gloo, the bound price functions and this rank's
    coordinates."""

    def __init__(self, pricer, mesh):
        self.mesh = mesh
        _, self.shape, device_type, backends, _, self.links = pricer.mesh_info(mesh)
        self.cpu = device_type == "cpu"
        self.gloo = [b == "gloo" for b in backends]
        self.profile = pricer.profile
        self.pricer = weakref.ref(pricer)  # (the pricer keeps this context: no cycle)
        self.fns: dict = {}  # (mesh dim, collective code, dtype) -> Profile.time_fn, or False
        self.coords: dict = {}  # mesh dim -> this rank's coordinate
        self.tables: dict = {}  # dtype -> price_table(dtype)

    def collectives(self, d: int) -> list:
        """The collectives DTensor runs on mesh dim d (_edge_query's rule): no all-to-all on a CPU
        mesh (gloo has none), no reduce-scatter on a gloo dim (an all-reduce instead)."""
        return ["all_gather", "all_reduce"] + ([] if self.gloo[d] else ["reduce_scatter"]) + \
            ([] if self.cpu else ["all_to_all"])

    def bind_usual(self) -> None:
        """Binds now the collectives DTensor runs on each dim for the usual dtypes, so a first plan
        only prices (use_profile(mesh=...))."""
        for d in range(len(self.shape)):
            for coll in self.collectives(d):
                for dt in ("f32", "bf16", "f16"):
                    self.bound(d, COLLECTIVES.index(coll), dt)

    def price_table(self, dtype):
        """The compiled search's MeshPrices (shardcal._core.search) for dtype: the mesh, and in entry
        d * 4 + collective code the bound price function (a Profile.time_fn: the C++ pricer,
        evaluated there); where none is bound yet or the profile cannot price it, the search calls plan's
        price callback, which binds it or warns and gives +inf."""
        t = self.tables.get(dtype)
        if t is None:
            ref = weakref.ref(self)  # (no cycle through the C++ object: see _Graph.compiled)
            t = self.tables[dtype] = _compiled.MeshPrices(list(self.shape), self.cpu, self.gloo,
                                                          lambda d, ci, numel: ref().price(d, ci, numel, dtype))
            for (d, ci, dt), fn in self.fns.items():
                if dt == dtype and fn is not False:
                    t.set(d * len(COLLECTIVES) + ci, fn)
            fast = self.fast_args()
            if fast is not None:  # the compiled plan() can do the whole plan (else: plan's Python path)
                t.set_torch(*fast)
        return t

    def fast_args(self):
        """MeshPrices.set_torch's arguments (this rank's coordinates, the torch types the compiled
        plan() reads and makes), or None where it cannot plan: this rank outside the mesh, or a
        _TransformInfo that the compiled module does not make as its constructor does (checked on
        one object: type, fields, equality)."""
        import dataclasses
        from torch.distributed.tensor import _redistribute as rd
        coords = self.mesh.get_coordinate()  # (eager, never symbolic: plan() checks for one-rank tracing)
        if coords is None or len(coords) != len(self.shape) or any(type(r) is not int for r in coords):
            return None
        info = rd._TransformInfo
        Partial, Replicate, Shard = _placement_types or _load_placement_types()
        fields = ["mesh_dim", "src_dst_placements", "logical_shape"]
        try:
            args = (1, (Replicate(), Shard(0)), [3, 4])
            made, want = _compiled.transform_info(info, *args), info(*args)
            if not dataclasses.is_dataclass(info) or [f.name for f in dataclasses.fields(info)] != fields or \
                    type(made) is not info or made != want or \
                    any(getattr(made, f) is not getattr(want, f) for f in fields):
                return None
        except Exception:  # (another torch: plan in Python)
            return None
        return list(coords), Shard, Replicate, Partial, info, _op_codes, _partial_of

    def price(self, d: int, ci: int, numel: int, dtype) -> float:
        """Pricer.time_us of collective COLLECTIVES[ci] moving numel bytes on mesh dim d (its cache;
        a class the profile cannot price: its warning and +inf), after binding the class's price
        function so the compiled search evaluates the next ones itself."""
        self.bound(d, ci, dtype)
        return self.pricer().time_us(self.mesh, d, COLLECTIVES[ci], numel, dtype)

    def bound(self, d: int, ci: int, dtype):
        """Profile.time_fn of collective COLLECTIVES[ci] on mesh dim d for dtype (False: unpriceable)."""
        fn = self.fns.get((d, ci, dtype))
        if fn is None:
            fn = self.fns[(d, ci, dtype)] = self.time_fn(d, COLLECTIVES[ci], dtype)
            if fn is not False and _compiled is not None:
                self.price_table(dtype).set(d * len(COLLECTIVES) + ci, fn)
        return fn

    def time_fn(self, d: int, coll: str, dtype):
        lc = self.links[d]
        try:
            return self.profile.time_fn(coll, lc["group_size"], lc["hosts"], lc["ranks_per_host"], dtype,
                                        lc["concurrent_groups"], lc.get("spanned_hosts", 0))
        except ProfileError:
            return False


def _partial_of(c: int):
    """The Partial of reduce op code c (a step to a Partial no spec of the plan holds)."""
    Partial = (_placement_types or _load_placement_types())[0]
    return Partial(next(o for o, k in _op_codes.items() if k == c))


def mesh_context(pricer, mesh) -> _MeshContext:
    """The pricer's _MeshContext for mesh, made now (use_profile(mesh=...) makes it on entry and
    binds the usual dtypes' prices)."""
    ctx = pricer._plan_ctx[id(mesh)] = _MeshContext(pricer, mesh)
    return ctx


def _compiled_plan(g, ctx, src_pl, src_spec, dst_pl, dst_spec, full, itemsize, dtype, planner):
    """shardcal._core.search.plan on g's compiled copy: the _TransformInfo list, None (no path / DTensor's
    planner), False (a state or reduce op not numbered yet) or True (the Python path plans)."""
    compiled = g.compiled
    if compiled is None:  # (the graph was found out of step meanwhile: see _out_of_step)
        return True
    try:
        return _compiled.plan(compiled, src_pl, src_spec.shard_order, dst_pl, dst_spec.shard_order, full, itemsize,
                              ctx.tables.get(dtype) or ctx.price_table(dtype), planner is not None)
    except ValueError:
        if g.compiled is not None:
            raise
        return True  # (found out of step during this plan)


def plan(pricer, rd, planner, src_spec, dst_spec, itemsize: int, dtype):
    """DTensor's min-cost plan (a list of `_TransformInfo`) for src_spec -> dst_spec, or None when
    this planner does not handle the case. `planner` is `rd.get_redistribute_planner(mesh, meta)`,
    whose reduce-op set is updated as DTensor updates it (it persists between plans and decides
    which R -> P edges exist), or None when there is none and the specs hold no Partial (an empty
    set, which this plan would not change)."""
    if (planner is not None and planner.strided_shard_placements_in_target) or \
            src_spec.use_strided_shard_as_shard_order or dst_spec.use_strided_shard_as_shard_order or \
            src_spec.shard_order is None or dst_spec.shard_order is None:
        return None
    Partial, Replicate, Shard = _placement_types or _load_placement_types()

    mesh = src_spec.mesh
    full = src_spec.shape
    ndim_t = len(full)
    for x in full:
        if type(x) is not int:  # SymInt: DTensor's symbolic costs
            return None
    src_pl, dst_pl_objs = src_spec.placements, dst_spec.placements
    if planner is not None:  # the specs' reduce ops join the planner's set (as DTensor's search does)
        ops_set = planner.partial_reduce_ops_in_target
        for p in (*src_pl, *dst_pl_objs):
            if type(p) is Partial:
                ops_set.add(p.reduce_op)
    else:
        ops_set = ()
    g = _graph_of.get((ndim_t, *ops_set))
    if g is None:
        # R -> P edges: one per reduce op of the planner's set, in the set's own iteration order
        key = (ndim_t, tuple((_op_code(op), op) for op in ops_set))
        g = _graph_of[(ndim_t, *ops_set)] = _graphs.get(key) or _graph(*key)
    ctx = pricer._plan_ctx.get(id(mesh))
    if ctx is None or ctx.mesh is not mesh:
        ctx = mesh_context(pricer, mesh)
    # this rank's coordinates are symbolic while torch.compile traces one rank for all: the Python
    # path asks the mesh for each (DeviceMesh._sym_get_coordinate), the compiled one has ints
    symbolic = _fake_mode(_FAKE) is not None and _one_rank()
    fast = use_compiled and g.compiled is not None and not symbolic
    if fast:  # the whole plan compiled, once the graph has numbered both states
        infos = _compiled_plan(g, ctx, src_pl, src_spec, dst_pl_objs, dst_spec, full, itemsize, dtype, planner)
        if infos is not False and infos is not True:
            stats["compiled plan"] += 1
            return infos
        fast = infos is False  # False: numbers first, then again; True: this path plans
    objs: dict = {}  # code -> a placement object (the specs' own where they have one)
    codes = []
    for p in (*src_pl, *dst_pl_objs):
        t = type(p)
        if t is Shard:
            c = p.dim
            if c < 0:  # (DTensor's specs hold normalized dims; else its planner decides)
                return None
        elif t is Replicate:
            c = _R
        elif t is Partial:
            if planner is None:  # (a Partial needs DTensor's planner: its reduce-op set)
                return None
            c = _op_code(p.reduce_op)
        else:  # (the adapter sends plain placements only)
            return None
        codes.append(c)
        if c not in objs:
            objs[c] = p
    k = len(src_spec.placements)
    src_order = [()] * ndim_t
    for entry in src_spec.shard_order:
        src_order[entry.tensor_dim] = tuple(entry.mesh_dims)
    dst_order = [()] * ndim_t
    for entry in dst_spec.shard_order:
        dst_order[entry.tensor_dim] = tuple(entry.mesh_dims)
    src = (tuple(codes[:k]), tuple(src_order))
    dst_pl = tuple(codes[k:])
    dst = (dst_pl, tuple(dst_order))
    mesh_shape = ctx.shape
    coords = {} if symbolic else ctx.coords  # (ints only are kept: see the loop below)
    full_ints = tuple(full)

    src_i, dst_i = g.sid(src), g.sid(dst)
    if fast:  # both states numbered now
        infos = _compiled_plan(g, ctx, src_pl, src_spec, dst_pl_objs, dst_spec, full, itemsize, dtype, planner)
        if infos is not False and infos is not True:
            stats["compiled plan"] += 1
            return infos
    stats["python plan"] += 1
    ids = False
    if use_compiled and g.compiled is not None:
        try:
            ids = g.compiled.search(src_i, dst_i, full_ints, itemsize, dst_pl, ctx.price_table(dtype))
        except OverflowError:  # bytes past int64 (meta tensors of exabytes): Python's ints plan it
            ids = False
    if ids is None:
        return None  # DTensor raises here: let its planner say so
    if ids is not False:
        states = [g.states[i] for i in ids]
    else:
        states = _search(g, src_i, dst_i, full_ints, itemsize, mesh_shape, ctx.cpu, ctx.gloo, dst_pl, _op_code("sum"),
                         lambda d, ci, numel: ctx.price(d, ci, numel, dtype))
        if states is None:
            return None

    def placement(c):
        if c >= 0:
            return Shard(c)
        if c == _R:
            return Replicate()
        return _partial_of(c)

    # Each step's logical shape as planner.get_logical_shape(DistState(...), d, full) computes it
    # (the same Shard.local_shard_size_and_offset calls with this rank's coordinates, tensor dims
    # in order, each one's mesh dims in shard order) without building a DistState per step.
    shard_size = Shard.local_shard_size_and_offset
    infos = []
    TransformInfo = rd._TransformInfo
    for j in range(1, len(states)):
        cur, nxt = states[j - 1], states[j]
        if cur[0] == nxt[0]:
            continue
        d = 0
        while cur[0][d] == nxt[0][d]:
            d += 1
        ls = list(full)
        for t, ms in enumerate(cur[1]):
            for m in ms:
                if m == d:
                    continue
                r = coords.get(m)
                if r is None:
                    r = mesh._sym_get_coordinate(m)
                    if type(r) is int:  # this rank's place in the mesh does not change
                        coords[m] = r
                x, k = ls[t], mesh_shape[m]
                if type(x) is int and type(r) is int:  # local_shard_size_and_offset's ints, ~5 us less
                    if x % k == 0:
                        ls[t] = x // k
                    else:
                        c = (x + k - 1) // k
                        ls[t] = max(0, min(x, c * r + c) - c * r)
                else:
                    ls[t] = shard_size(x, k, r)[0]
        infos.append(TransformInfo(mesh_dim=d, src_dst_placements=(objs.get(cur[0][d]) or placement(cur[0][d]),
                                                                   objs.get(nxt[0][d]) or placement(nxt[0][d])),
                                   logical_shape=ls))
    return infos

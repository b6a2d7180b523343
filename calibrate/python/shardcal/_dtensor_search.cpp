// shardcal._dtensor_search: a first plan of shardcal/dtensor_plan.py (DTensor's find_min_cost_path
// over compact states) compiled, for the DTensor adapter's first redistribute of a pair.
//
// Why: in Python the search costs ~2 us per popped state (7-37 a plan) and a first
// DTensor.redistribute with a profile ran at 0.6-0.8x the greedy default's speed (issue 34); with
// the search compiled but the rest in Python still 0.84-0.91x. `plan` does the whole plan in one
// call: the specs' states, the search, the _TransformInfo list (docs/PERFORMANCE.md: 0.99-1.11x).
// What stays defined once, in Python:
//   - the graph (states, neighbours in get_next_state's order, edges): `_Graph` numbers each state
//     and registers each edge and expanded state's neighbours here; a state not yet expanded is
//     expanded through the `expand` callback.
// The cost model is the C++ one: a class's price (Profile.time_fn, a shardcal._core.TimeFn) is
// evaluated here through its ClassPricer (pricing_api.hpp), the function predict() prices with;
// any other callable is called in Python. Part of the extension shardcal._core (submodule search).
// What is mirrored from Python, line for line: the search loop (heap of (cost, push counter), the
// cut at the best target entry), the edge rule (which collective an edge runs and its bytes:
// dtensor_plan._edge_query) and the steps' logical shapes (dtensor_plan.plan's Python path).
// tests/torch/dtensor_adapter_test.py `fastplan` compares both paths with DTensor's own planner.
//
// Placement codes: t >= 0 = Shard(t), -1 = Replicate, <= -2 = Partial (a reduce op's code).

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "_core.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <stdexcept>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

constexpr int kReplicate = -1;
constexpr int kMaxStates = 1 << 22;  // far above any plan graph (3 mesh dims, 3 tensor dims: ~200 states)
constexpr double kInf = std::numeric_limits<double>::infinity();

// Collective codes (dtensor_plan.COLLECTIVES' order).
enum Coll : int { kAllGather = 0, kAllToAll = 1, kAllReduce = 2, kReduceScatter = 3, kColls = 4 };

struct Edge {   // (placements, mesh dim d, new code b), placements in Graph::codes_
  int pl_off = 0;  // the source state's placement codes: codes_[pl_off, pl_off + pl_len)
  int pl_len = 0;
  int d = 0;  // the mesh dim that changes
  int b = 0;  // its new code
};

struct StateRec {  // an expanded state's neighbours and S -> P(sum) steps, in Graph's pools
  int adj_off = 0, adj_len = 0, sum_off = 0, sum_len = 0;
  bool expanded = false;
};

struct Step {  // a neighbour: state number and edge number (-1: a free S -> P(sum) step)
  int to;
  int edge;
};

struct SumStep {  // S -> P(sum) on mesh dim m to state `to`: taken when the target has P(sum) on m
  int m;
  int to;
};

struct Entry {
  double cost;
  std::int64_t counter;
  int state;
  int link;  // index into the search's (state, parent link) list: the path
};

struct Later {  // std::priority_queue is a max-heap: "greater" pops the least (cost, counter) first
  bool operator()(const Entry& x, const Entry& y) const {
    if (x.cost != y.cost) return x.cost > y.cost;
    return x.counter > y.counter;
  }
};

std::int64_t ceil_div(std::int64_t x, std::int64_t k) { return x / k + (x % k != 0); }  // x >= 0, k >= 1

std::int64_t round_up(std::int64_t x, std::int64_t k) {  // ceil(x / k) * k, or overflow_error
  std::int64_t r;
  if (__builtin_mul_overflow(ceil_div(x, k), k, &r)) throw std::overflow_error("search: bytes past int64");
  return r;
}

// An instance of the dataclass `cls` (DTensor's _TransformInfo) with these three fields, as its
// frozen dataclass __init__ leaves it: object.__new__, then object.__setattr__ of each field (what
// that __init__ does), without __post_init__ (two checks every step Graph::plan makes passes).
py::object new_transform_info(const py::object& cls, const py::object& mesh_dim, const py::object& placements,
                              const py::object& shape) {
  static const py::tuple* empty = new py::tuple();  // (never freed: no Python call at exit)
  static const py::str* f_mesh_dim = new py::str("mesh_dim");
  static const py::str* f_placements = new py::str("src_dst_placements");
  static const py::str* f_shape = new py::str("logical_shape");
  if (!PyType_Check(cls.ptr())) throw py::type_error("transform_info: cls must be a type");
  auto* tp = reinterpret_cast<PyTypeObject*>(cls.ptr());
  if (tp->tp_new == nullptr) throw py::type_error("transform_info: cls cannot be instantiated");
  py::object o = py::reinterpret_steal<py::object>(tp->tp_new(tp, empty->ptr(), nullptr));
  if (!o) throw py::error_already_set();
  if (PyObject_GenericSetAttr(o.ptr(), f_mesh_dim->ptr(), mesh_dim.ptr()) != 0 ||
      PyObject_GenericSetAttr(o.ptr(), f_placements->ptr(), placements.ptr()) != 0 ||
      PyObject_GenericSetAttr(o.ptr(), f_shape->ptr(), shape.ptr()) != 0)
    throw py::error_already_set();
  return o;
}

// What the search needs of one mesh and dtype: the mesh shape, whether S(a) -> S(b) is an
// all-gather (cpu), which dims run gloo, and the price of each (mesh dim, collective): a C++
// ClassPricer (a _core.TimeFn's, evaluated here), another Python callable, or nothing yet:
// then price(d, coll, bytes) (dtensor_plan's, which binds one or prices +inf with its warning).
class MeshPrices {
 public:
  MeshPrices(std::vector<std::int64_t> mesh, bool cpu, std::vector<bool> gloo, py::function price)
      : mesh_(std::move(mesh)), gloo_(std::move(gloo)), cpu_(cpu), prices_(mesh_.size() * kColls),
        fns_(mesh_.size() * kColls), price_(std::move(price)) {
    if (gloo_.size() != mesh_.size()) throw py::value_error("MeshPrices: one gloo flag per mesh dim");
    for (std::int64_t n : mesh_)
      if (n < 1) throw py::value_error("MeshPrices: mesh sizes must be >= 1");
  }
  void set(std::size_t i, const py::object& fn) {
    if (i >= prices_.size()) throw py::index_error("MeshPrices.set");
    prices_[i].reset();
    fns_[i] = py::object();
    if (py::isinstance<shardcal_py::TimeFn>(fn))
      prices_[i].emplace(fn.cast<const shardcal_py::TimeFn&>().pricer);
    else
      fns_[i] = fn;
  }
  // the price of collective coll on mesh dim d: bound here, else price(d, coll, bytes)
  double at(int d, int coll, std::int64_t bytes) const {
    const auto i = static_cast<std::size_t>(d * kColls + coll);
    if (prices_[i]) return (*prices_[i])(static_cast<double>(bytes));
    if (fns_[i]) return fns_[i](static_cast<double>(bytes)).cast<double>();
    return price_(d, coll, bytes).cast<double>();
  }
  const std::vector<std::int64_t>& mesh() const { return mesh_; }
  bool gloo(std::size_t d) const { return gloo_[d]; }
  bool cpu() const { return cpu_; }

  // What Graph::plan needs besides the prices: this rank's coordinate on each mesh dim and the
  // torch types it reads and makes (dtensor_plan._MeshContext.price_table sets them).
  void set_torch(std::vector<std::int64_t> coords, py::object shard, py::object replicate, py::object partial,
                 py::object transform_info, py::dict op_codes, py::function partial_of) {
    if (coords.size() != mesh_.size()) throw py::value_error("set_torch: one coordinate per mesh dim");
    if (!PyType_Check(transform_info.ptr()) || reinterpret_cast<PyTypeObject*>(transform_info.ptr())->tp_new == nullptr)
      throw py::value_error("set_torch: transform_info must be an instantiable type");
    for (std::size_t m = 0; m < coords.size(); ++m)
      if (coords[m] < 0 || coords[m] >= mesh_[m]) throw py::value_error("set_torch: a coordinate outside the mesh");
    coords_ = std::move(coords);
    shard_ = std::move(shard);
    replicate_ = std::move(replicate);
    partial_ = std::move(partial);
    transform_info_ = std::move(transform_info);
    op_codes_ = std::move(op_codes);
    partial_of_ = std::move(partial_of);
  }
  bool has_torch() const { return static_cast<bool>(transform_info_); }
  const std::vector<std::int64_t>& coords() const { return coords_; }
  PyObject* shard_type() const { return shard_.ptr(); }
  PyObject* replicate_type() const { return replicate_.ptr(); }
  PyObject* partial_type() const { return partial_.ptr(); }
  // _TransformInfo(mesh_dim, src_dst_placements, logical_shape) by new_transform_info: ~3 us less a
  // step warm, ~9 us cold than the Python __init__, which was most of a compiled plan's time.
  // dtensor_plan._MeshContext.fast_args checks once that it equals the real constructor's object;
  // dtensor_adapter_test.py `fastplan` compares every plan's objects with DTensor's own.
  py::object make_info(const py::object& mesh_dim, const py::object& placements, const py::object& shape) const {
    return new_transform_info(transform_info_, mesh_dim, placements, shape);
  }
  const py::dict& op_codes() const { return op_codes_; }
  const py::function& partial_of() const { return partial_of_; }
  const py::str& name_dim() const { return f_dim_; }
  const py::str& name_reduce_op() const { return f_reduce_op_; }

 private:
  std::vector<std::int64_t> coords_;
  py::object shard_, replicate_, partial_, transform_info_;
  py::str f_dim_{"dim"}, f_reduce_op_{"reduce_op"};
  py::dict op_codes_;
  py::function partial_of_;
  std::vector<std::int64_t> mesh_;
  std::vector<bool> gloo_;
  bool cpu_;
  std::vector<std::optional<shardcal::calib::ClassPricer>> prices_;
  std::vector<py::object> fns_;
  py::function price_;
};

class Graph {
 public:
  // expand(state): the Python graph expands a state and calls set_adj; sum_code: P(sum)'s code
  Graph(py::function expand, int sum_code) : expand_(std::move(expand)), sum_code_(sum_code) {}

  int add_edge(const std::vector<int>& pl, int d, int b) {
    if (d < 0 || static_cast<std::size_t>(d) >= pl.size()) throw py::value_error("add_edge: mesh dim out of range");
    edges_.push_back(Edge{static_cast<int>(codes_.size()), static_cast<int>(pl.size()), d, b});
    codes_.insert(codes_.end(), pl.begin(), pl.end());
    return static_cast<int>(edges_.size()) - 1;
  }

  void set_adj(int state, const std::vector<std::pair<int, int>>& nbrs, const std::vector<std::pair<int, int>>& sums) {
    check_state(state);
    auto s = static_cast<std::size_t>(state);
    if (states_.size() <= s) states_.resize(s + 1);
    StateRec& r = states_[s];
    // checked before anything is stored: a refused call leaves the state unexpanded
    for (const auto& [to, e] : nbrs) {
      check_state(to);
      if (e < 0 || e >= static_cast<int>(edges_.size())) throw py::value_error("set_adj: unknown edge");
    }
    for (const auto& [m, to] : sums) {
      check_state(to);
      if (m < 0) throw py::value_error("set_adj: mesh dim < 0");
    }
    r.adj_off = static_cast<int>(steps_.size());
    r.adj_len = static_cast<int>(nbrs.size());
    for (const auto& [to, e] : nbrs) steps_.push_back(Step{to, e});
    r.sum_off = static_cast<int>(sum_steps_.size());
    r.sum_len = static_cast<int>(sums.size());
    for (const auto& [m, to] : sums) sum_steps_.push_back(SumStep{m, to});
    r.expanded = true;
  }

  std::size_t edges() const { return edges_.size(); }

  // Python's _Graph numbers a state (placement codes, each tensor dim's mesh dims in order): the
  // same number here, so plan() finds a spec's state without Python. Returns the state's number.
  int add_state(const std::vector<int>& pl, const std::vector<std::vector<int>>& order) {
    std::string key;
    if (!state_key(pl, order, key)) throw py::value_error("add_state: a code or dim out of range");
    const auto found = ids_.find(key);
    if (found != ids_.end()) return found->second;
    const int i = static_cast<int>(keys_.size());
    check_state(i);  // (before anything is stored: a refusal leaves both tables as they were)
    keys_.push_back(key);
    ids_.emplace(std::move(key), i);
    return i;
  }

  // A state number as Python's _Graph numbers them: dense from 0 (a graph has a few hundred)
  static void check_state(int state) {
    if (state < 0 || state >= kMaxStates) throw py::value_error("not a state number of a plan graph");
  }

  // dtensor_plan.plan's whole work for plain placements, from the specs' own tuples: their states
  // (as registered by add_state), the search, and the _TransformInfo list (each step's mesh dim,
  // placement objects (the specs' own where they have one) and logical shape with this rank's
  // coordinates). Returns that list; None where dtensor_plan.plan returns None (no path; a Partial
  // with allow_partial false: it needs DTensor's planner); False where Python must number a state
  // or reduce op first (then call again); True where the Python path must plan (no torch types set,
  // a non-int size, bytes past int64, anything else not plain).
  py::object plan(const py::handle& src_pl, const py::handle& src_order, const py::handle& dst_pl,
                  const py::handle& dst_order, const py::handle& full_obj, std::int64_t itemsize,
                  const MeshPrices& fns, bool allow_partial) {
    const py::object number = py::bool_(false), python = py::bool_(true);
    if (!fns.has_torch() || !PyTuple_Check(full_obj.ptr())) return python;
    const Py_ssize_t ndim_t = PyTuple_GET_SIZE(full_obj.ptr());
    if (ndim_t > 64) return python;
    PlanScratch own;
    PlanScratch& S = plan_scratch_.busy ? own : plan_scratch_;  // (as the search's: fewer allocations)
    const BusyUse use(S.busy);
    std::vector<std::int64_t>& full = S.full;
    full.resize(static_cast<std::size_t>(ndim_t));
    for (Py_ssize_t t = 0; t < ndim_t; ++t) {
      PyObject* x = PyTuple_GET_ITEM(full_obj.ptr(), t);
      if (!PyLong_CheckExact(x)) return python;
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
      if (overflow != 0 || v < 0) return python;
      full[static_cast<std::size_t>(t)] = v;
    }
    const std::size_t nm = fns.mesh().size();
    std::vector<int>& codes = S.codes;  // src's codes, then dst's
    std::vector<PyObject*>& objs = S.objs;  // the placement object of each code in codes
    codes.clear();
    objs.clear();
    for (const py::handle& tup : {src_pl, dst_pl}) {
      if (!PyTuple_Check(tup.ptr()) || static_cast<std::size_t>(PyTuple_GET_SIZE(tup.ptr())) != nm) return python;
      for (std::size_t m = 0; m < nm; ++m) {
        PyObject* p = PyTuple_GET_ITEM(tup.ptr(), static_cast<Py_ssize_t>(m));
        PyObject* t = reinterpret_cast<PyObject*>(Py_TYPE(p));
        int c;
        if (t == fns.shard_type()) {
          const py::object dim = py::reinterpret_steal<py::object>(PyObject_GetAttr(p, fns.name_dim().ptr()));
          if (!dim) throw py::error_already_set();
          long v;
          if (!small_int(dim.ptr(), v) || v < 0 || v >= ndim_t) return python;
          c = static_cast<int>(v);
        } else if (t == fns.replicate_type()) {
          c = kReplicate;
        } else if (t == fns.partial_type()) {
          if (!allow_partial) return py::none();
          const py::object op = py::reinterpret_steal<py::object>(PyObject_GetAttr(p, fns.name_reduce_op().ptr()));
          if (!op) throw py::error_already_set();
          PyObject* code = PyDict_GetItemWithError(fns.op_codes().ptr(), op.ptr());  // borrowed
          if (code == nullptr) {
            if (PyErr_Occurred()) throw py::error_already_set();
            return number;  // a reduce op not numbered yet
          }
          long v;
          if (!small_int(code, v) || v > -2 || v < -100) return python;
          c = static_cast<int>(v);
        } else {
          return python;
        }
        codes.push_back(c);
        objs.push_back(p);
      }
    }
    std::vector<std::vector<int>>&src_o = S.src_o, &dst_o = S.dst_o;
    if (!read_order(src_order, ndim_t, nm, src_o) || !read_order(dst_order, ndim_t, nm, dst_o)) return python;
    std::string& key = S.key;
    std::vector<int>&src_codes = S.src_codes, &dst_codes = S.dst_codes;
    src_codes.assign(codes.begin(), codes.begin() + static_cast<std::ptrdiff_t>(nm));
    dst_codes.assign(codes.begin() + static_cast<std::ptrdiff_t>(nm), codes.end());
    if (!state_key(src_codes, src_o, key)) return python;
    const auto si = ids_.find(key);
    if (si == ids_.end()) return number;
    if (!state_key(dst_codes, dst_o, key)) return python;
    const auto di = ids_.find(key);
    if (di == ids_.end()) return number;
    std::optional<std::vector<int>> path;
    try {
      path = search(si->second, di->second, full, itemsize, dst_codes, fns);
    } catch (const std::overflow_error&) {
      return python;  // Python's ints plan it
    }
    if (!path) return py::none();

    // The steps, as dtensor_plan.plan builds them (the Python path: its reference)
    const std::vector<std::int64_t>& mesh = fns.mesh();
    const std::vector<std::int64_t>& coords = fns.coords();
    py::list infos;
    std::vector<int>&cur_pl = S.cur_pl, &nxt_pl = S.nxt_pl;
    std::vector<std::vector<int>>&cur_o = S.cur_o, &nxt_o = S.nxt_o;
    decode((*path)[0], cur_pl, cur_o);
    for (std::size_t j = 1; j < path->size(); ++j) {
      decode((*path)[j], nxt_pl, nxt_o);
      if (cur_pl != nxt_pl) {
        std::size_t d = 0;
        while (cur_pl[d] == nxt_pl[d]) ++d;
        py::list ls(static_cast<std::size_t>(ndim_t));
        for (std::size_t t = 0; t < full.size(); ++t) {
          std::int64_t x = full[t];
          for (int m : cur_o[t]) {
            if (static_cast<std::size_t>(m) == d) continue;
            const std::int64_t k = mesh[static_cast<std::size_t>(m)], r = coords[static_cast<std::size_t>(m)];
            if (x % k == 0) {
              x /= k;
            } else {  // Shard.local_shard_size_and_offset: chunks of ceil(x / k), the last ones short
              const std::int64_t c = ceil_div(x, k);
              std::int64_t lo, hi;
              if (__builtin_mul_overflow(c, r, &lo) || __builtin_add_overflow(lo, c, &hi)) return python;
              x = std::max<std::int64_t>(0, std::min(x, hi) - lo);
            }
          }
          ls[t] = py::int_(x);
        }
        py::object a = placement(cur_pl[d], codes, objs, fns);
        py::object b = placement(nxt_pl[d], codes, objs, fns);
        infos.append(fns.make_info(py::int_(d), py::make_tuple(a, b), ls));
      }
      std::swap(cur_pl, nxt_pl);
      std::swap(cur_o, nxt_o);
    }
    return infos;
  }

 private:
  // the placement object for code c: the specs' own first (as dtensor_plan.plan's objs), else made
  static py::object placement(int c, const std::vector<int>& codes, const std::vector<PyObject*>& objs,
                              const MeshPrices& fns) {
    for (std::size_t i = 0; i < codes.size(); ++i)
      if (codes[i] == c) return py::reinterpret_borrow<py::object>(objs[i]);
    if (c >= 0) return py::reinterpret_borrow<py::object>(fns.shard_type())(c);
    if (c == kReplicate) return py::reinterpret_borrow<py::object>(fns.replicate_type())();
    return fns.partial_of()(c);
  }

  // an exact int that fits a long (no Python error left set either way)
  static bool small_int(PyObject* x, long& out) {
    if (!PyLong_CheckExact(x)) return false;
    int overflow = 0;
    out = PyLong_AsLongAndOverflow(x, &overflow);
    return overflow == 0;
  }

  // a spec's shard_order (ShardOrderEntry(tensor_dim, mesh_dims) tuples) as each tensor dim's mesh dims
  static bool read_order(const py::handle& order, Py_ssize_t ndim_t, std::size_t nm,
                         std::vector<std::vector<int>>& out) {
    out.resize(static_cast<std::size_t>(ndim_t));
    for (auto& o : out) o.clear();
    if (!PyTuple_Check(order.ptr())) return false;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(order.ptr()); ++i) {
      PyObject* e = PyTuple_GET_ITEM(order.ptr(), i);
      if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 2) return false;
      PyObject* t = PyTuple_GET_ITEM(e, 0);
      PyObject* ms = PyTuple_GET_ITEM(e, 1);
      long tv;
      if (!PyTuple_Check(ms) || !small_int(t, tv) || tv < 0 || tv >= ndim_t) return false;
      auto& o = out[static_cast<std::size_t>(tv)];
      o.clear();  // (a repeated tensor dim: the last entry, as the Python path's assignment)
      for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(ms); ++k) {
        long mv;
        if (!small_int(PyTuple_GET_ITEM(ms, k), mv) || mv < 0 || static_cast<std::size_t>(mv) >= nm) return false;
        o.push_back(static_cast<int>(mv));
      }
    }
    return true;
  }

  // A state's key: mesh dims, their codes, then per tensor dim its mesh-dim count and mesh dims;
  // every number in a byte (codes -100..63, at most 64 dims), false when one is not.
  static bool state_key(const std::vector<int>& pl, const std::vector<std::vector<int>>& order, std::string& key) {
    key.clear();
    if (pl.size() > 64 || order.size() > 64) return false;
    key.push_back(static_cast<char>(pl.size()));
    for (int c : pl) {
      if (c < -100 || c > 63) return false;
      key.push_back(static_cast<char>(c));
    }
    for (const auto& o : order) {
      if (o.size() > 64) return false;
      key.push_back(static_cast<char>(o.size()));
      for (int m : o) {
        if (m < 0 || m > 63) return false;
        key.push_back(static_cast<char>(m));
      }
    }
    return true;
  }

  void decode(int state, std::vector<int>& pl, std::vector<std::vector<int>>& order) const {
    const std::string& k = keys_[static_cast<std::size_t>(state)];
    std::size_t i = 0;
    const auto nm = static_cast<std::size_t>(k[i++]);
    pl.assign(nm, 0);
    for (std::size_t m = 0; m < nm; ++m) pl[m] = static_cast<signed char>(k[i++]);
    std::size_t t = 0;
    for (; i < k.size(); ++t) {
      const auto n = static_cast<std::size_t>(k[i++]);
      if (order.size() <= t) order.emplace_back();
      order[t].clear();
      for (std::size_t q = 0; q < n; ++q) order[t].push_back(static_cast<signed char>(k[i++]));
    }
    order.resize(t);
  }

 public:
  // DTensor's min-cost path src -> dst as state numbers (src first), or None when there is none.
  // full: the global shape; dst_pl: the target's codes (S -> P(sum) steps exist toward a P(sum)
  // there); prices: the mesh and its prices.
  std::optional<std::vector<int>> search(int src, int dst, const std::vector<std::int64_t>& full, std::int64_t itemsize,
                                         const std::vector<int>& dst_pl, const MeshPrices& fns) {
    if (!expand_) throw py::value_error("search: Graph made without expand");
    check_state(src);
    check_state(dst);
    if (full.size() > 64) throw py::value_error("search: more than 64 tensor dims");
    for (std::int64_t x : full)
      if (x < 0) throw py::value_error("search: a negative tensor size");
    if (itemsize < 1 || itemsize > 64) throw py::value_error("search: itemsize must be 1..64 bytes");
    const std::vector<std::int64_t>& mesh = fns.mesh();
    const bool cpu = fns.cpu();
    if (dst_pl.size() != mesh.size()) throw py::value_error("search: dst_pl has one code per mesh dim");
    bool to_sum = false;
    const int sum_code = sum_code_;
    for (int c : dst_pl) to_sum = to_sum || c == sum_code;
    // the graph's buffers, kept between searches: a first plan runs with cold caches, where each
    // allocation the search would make (~25, growing a heap and lists) is a cache miss or more
    SearchScratch own;
    SearchScratch& S = scratch_.busy ? own : scratch_;  // (busy: a search inside a callback)
    const BusyUse use(S.busy);
    S.visited.clear();
    S.prices.clear();
    S.links.clear();
    S.pq.clear();
    S.nb.clear();
    std::vector<char>& visited = S.visited;
    std::vector<double>& cost_of = S.cost_of;
    cost_of.assign(edges_.size(), std::numeric_limits<double>::quiet_NaN());
    std::vector<Priced>& prices = S.prices;  // the plan's distinct prices: a handful, a linear scan is enough
    std::vector<std::pair<int, int>>& links = S.links;  // (state, parent link)
    std::vector<Entry>& pq = S.pq;  // a binary heap, least (cost, counter) first, as std::priority_queue
    std::vector<Step>& nb = S.nb;
    std::int64_t counter = 0;
    double best = kInf;
    links.push_back({src, -1});
    push(pq, Entry{0.0, 0, src, 0});
    std::vector<std::int64_t>& ls = S.ls;
    ls.assign(full.size(), 0);

    auto edge_price = [&](int e) -> double {  // dtensor_plan._edge_query: the adapter's cost_function
      const Edge& E = edges_[static_cast<std::size_t>(e)];
      const int* pl = codes_.data() + E.pl_off;
      if (static_cast<std::size_t>(E.pl_len) != mesh.size()) throw py::value_error("search: an edge of another mesh");
      const int d = E.d, b = E.b, a = pl[d];
      if (a == kReplicate) return 0.0;  // R -> S, R -> P: local
      if (b <= -2) return kInf;         // S -> P, P -> P: DTensor's +inf for the search
      const std::int64_t n = mesh[static_cast<std::size_t>(d)];
      ls.assign(full.begin(), full.end());  // the largest logical shape mesh dim d sees
      // (a graph holds one tensor rank: a Shard code past it is a caller's error, not a read)
      if (a >= static_cast<int>(ls.size()) || b >= static_cast<int>(ls.size()))
        throw py::value_error("search: a Shard dim past the tensor's rank");
      for (std::size_t m = 0; m < mesh.size(); ++m) {
        const int q = pl[m];
        if (q >= static_cast<int>(ls.size())) throw py::value_error("search: a Shard dim past the tensor's rank");
        if (static_cast<int>(m) != d && q >= 0)
          ls[static_cast<std::size_t>(q)] = ceil_div(ls[static_cast<std::size_t>(q)], mesh[m]);
      }
      int coll;
      std::int64_t nbytes = itemsize;
      if (a >= 0) {
        auto& la = ls[static_cast<std::size_t>(a)];
        la = ceil_div(la, n);
        if (b == kReplicate) {
          coll = kAllGather;
          nbytes *= n;
        } else {
          auto& lb = ls[static_cast<std::size_t>(b)];
          lb = round_up(lb, n);
          coll = cpu ? kAllGather : kAllToAll;
          if (cpu) nbytes *= n;
        }
      } else if (b == kReplicate) {
        coll = kAllReduce;
      } else {
        auto& lb = ls[static_cast<std::size_t>(b)];
        lb = round_up(lb, n);
        coll = fns.gloo(static_cast<std::size_t>(d)) ? kAllReduce : kReduceScatter;
      }
      for (std::int64_t x : ls)  // Python's ints do not overflow: past int64, the Python search plans
        if (__builtin_mul_overflow(nbytes, x, &nbytes)) throw std::overflow_error("search: bytes past int64");
      for (const auto& p : prices)
        if (p.d == d && p.coll == coll && p.bytes == nbytes) return p.us;
      const double us = fns.at(d, coll, nbytes);
      prices.push_back(Priced{d, coll, nbytes, us});
      return us;
    };

    while (!pq.empty()) {
      std::pop_heap(pq.begin(), pq.end(), Later{});
      const Entry top = pq.back();
      pq.pop_back();
      if (top.state == dst) {
        std::vector<int> path;
        for (int l = top.link; l >= 0; l = links[static_cast<std::size_t>(l)].second)
          path.push_back(links[static_cast<std::size_t>(l)].first);
        return std::vector<int>(path.rbegin(), path.rend());
      }
      const auto i = static_cast<std::size_t>(top.state);
      if (i < visited.size() && visited[i]) continue;
      if (visited.size() <= i) visited.resize(i + 1, 0);
      visited[i] = 1;
      if (i >= states_.size() || !states_[i].expanded) {
        expand_(top.state);  // Python's _Graph expands it and calls set_adj
        if (i >= states_.size() || !states_[i].expanded) throw py::value_error("expand() did not register the state");
      }
      // a copy: callbacks may register states and edges (and reallocate these pools)
      const StateRec& r = states_[i];
      nb.assign(steps_.begin() + r.adj_off, steps_.begin() + r.adj_off + r.adj_len);
      if (to_sum)
        for (int k = r.sum_off; k < r.sum_off + r.sum_len; ++k) {
          const SumStep& ss = sum_steps_[static_cast<std::size_t>(k)];
          if (ss.m >= 0 && static_cast<std::size_t>(ss.m) < dst_pl.size() &&
              dst_pl[static_cast<std::size_t>(ss.m)] == sum_code)
            nb.push_back(Step{ss.to, -1});
        }
      for (const Step& st : nb) {
        const auto j = static_cast<std::size_t>(st.to);
        if (j < visited.size() && visited[j]) continue;
        ++counter;
        double c = 0.0;
        if (st.edge >= 0) {
          const auto e = static_cast<std::size_t>(st.edge);
          if (e >= cost_of.size()) cost_of.resize(edges_.size(), std::numeric_limits<double>::quiet_NaN());
          if (cost_of[e] != cost_of[e]) cost_of[e] = edge_price(st.edge);  // NaN: not priced yet
          c = cost_of[e];
        }
        c += top.cost;
        if (c >= best) continue;
        if (st.to == dst) best = c;
        links.push_back({st.to, top.link});
        push(pq, Entry{c, counter, st.to, static_cast<int>(links.size()) - 1});
      }
    }
    return std::nullopt;
  }

 private:
  struct Priced {
    int d, coll;
    std::int64_t bytes;
    double us;
  };
  struct SearchScratch {
    std::vector<char> visited;
    std::vector<double> cost_of;
    std::vector<Priced> prices;
    std::vector<std::pair<int, int>> links;
    std::vector<Entry> pq;
    std::vector<Step> nb;
    std::vector<std::int64_t> ls;
    bool busy = false;
  };
  static void push(std::vector<Entry>& heap, const Entry& e) {
    heap.push_back(e);
    std::push_heap(heap.begin(), heap.end(), Later{});
  }
  // (per graph, used under the GIL; a callback that searches again gets fresh buffers)
  SearchScratch scratch_;
  struct PlanScratch {
    std::vector<std::int64_t> full;
    std::vector<int> codes, src_codes, dst_codes, cur_pl, nxt_pl;
    std::vector<PyObject*> objs;
    std::vector<std::vector<int>> src_o, dst_o, cur_o, nxt_o;
    std::string key;
    bool busy = false;
  };
  struct BusyUse {
    explicit BusyUse(bool& b) : b_(b) { b_ = true; }
    ~BusyUse() { b_ = false; }
    BusyUse(const BusyUse&) = delete;
    BusyUse& operator=(const BusyUse&) = delete;
    bool& b_;
  };
  PlanScratch plan_scratch_;

  // flat pools: a plan touches a few dozen states and edges, and cold (its first call) each
  // separate allocation would be a cache miss
  std::vector<Edge> edges_;
  std::vector<int> codes_;
  std::vector<StateRec> states_;
  std::vector<Step> steps_;
  std::vector<SumStep> sum_steps_;
  py::function expand_;
  int sum_code_;
  std::unordered_map<std::string, int> ids_;  // state key -> number (add_state)
  std::vector<std::string> keys_;             // number -> key
};

// Graph.plan without pybind11's call machinery (argument vectors allocated per call, overload
// resolution): a first plan runs with cold caches, where that cost ~3 us more than this. Arguments
// as Graph.plan's, the graph first; the two objects are unpacked with pybind11's casts (type-checked).
PyObject* plan_fastcall(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 9) {
    PyErr_SetString(PyExc_TypeError, "plan(graph, src_pl, src_order, dst_pl, dst_order, full, itemsize, prices, "
                                     "allow_partial): 9 arguments");
    return nullptr;
  }
  try {
    Graph& g = py::cast<Graph&>(py::handle(args[0]));
    const MeshPrices& fns = py::cast<const MeshPrices&>(py::handle(args[7]));
    int overflow = 0;
    const long long itemsize = PyLong_AsLongLongAndOverflow(args[6], &overflow);
    if (itemsize == -1 && PyErr_Occurred()) return nullptr;
    const int allow = PyObject_IsTrue(args[8]);
    if (allow < 0) return nullptr;
    if (overflow != 0) throw py::value_error("plan: itemsize out of range");
    return g.plan(args[1], args[2], args[3], args[4], args[5], itemsize, fns, allow != 0).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (py::reference_cast_error&) {  // (pybind11's, without a message: None or another type)
    PyErr_SetString(PyExc_TypeError, "plan: the graph must be a Graph and prices a MeshPrices");
  } catch (py::cast_error& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (py::builtin_exception& e) {
    e.set_error();
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyMethodDef plan_def = {"plan", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&plan_fastcall)),
                        METH_FASTCALL, "Graph.plan(graph, ...) without pybind11's dispatcher"};

}  // namespace

void shardcal_py::bind_search(py::module_& m) {
  m.add_object("plan", py::reinterpret_steal<py::object>(PyCFunction_NewEx(&plan_def, nullptr, m.attr("__name__").ptr())));
  m.def("transform_info", &new_transform_info, py::arg("cls"), py::arg("mesh_dim"), py::arg("src_dst_placements"),
        py::arg("logical_shape"));
  py::class_<MeshPrices>(m, "MeshPrices")
      .def(py::init<std::vector<std::int64_t>, bool, std::vector<bool>, py::function>(), py::arg("mesh"),
           py::arg("cpu"), py::arg("gloo"), py::arg("price"))
      .def("set", &MeshPrices::set, py::arg("i"), py::arg("fn"))
      .def("set_torch", &MeshPrices::set_torch, py::arg("coords"), py::arg("shard"), py::arg("replicate"),
           py::arg("partial"), py::arg("transform_info"), py::arg("op_codes"), py::arg("partial_of"));
  py::class_<Graph>(m, "Graph")
      .def(py::init<py::function, int>(), py::arg("expand"), py::arg("sum_code"))
      .def("add_edge", &Graph::add_edge, py::arg("pl"), py::arg("d"), py::arg("b"))
      .def("set_adj", &Graph::set_adj, py::arg("state"), py::arg("nbrs"), py::arg("sums"))
      .def("edges", &Graph::edges)
      .def("add_state", &Graph::add_state, py::arg("pl"), py::arg("order"))
      .def("plan", &Graph::plan, py::arg("src_pl"), py::arg("src_order"), py::arg("dst_pl"), py::arg("dst_order"),
           py::arg("full"), py::arg("itemsize"), py::arg("prices"), py::arg("allow_partial"))
      .def("search", &Graph::search, py::arg("src"), py::arg("dst"), py::arg("full"), py::arg("itemsize"),
           py::arg("dst_pl"), py::arg("prices"));
}

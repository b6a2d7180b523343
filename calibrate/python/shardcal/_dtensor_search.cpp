// shardcal._dtensor_search: the Dijkstra of shardcal/dtensor_plan.py (DTensor's
// find_min_cost_path over compact states) compiled, for the adapter's first plan of a pair.
//
// Why: in Python the search costs ~2 us per popped state (7-37 a plan) and a first
// DTensor.redistribute with a profile ran at 0.6-0.8x the greedy default's speed (issue 34);
// here a plan's search costs a few microseconds. What stays defined once, in Python:
//   - the graph (states, neighbours in get_next_state's order, edges): `_Graph` registers each
//     edge and each expanded state's neighbours here; a state not yet expanded is expanded
//     through the `expand` callback;
//   - the cost model: a class's price function (cost_model.time_pricer) is evaluated here from its
//     `spec` (its constants; the same operations in the same order: `Price`), other kinds through
//     their Python function. tests/calibrate/parity_test.py `timefn` compares them bit for bit.
// What is mirrored from Python, line for line: the search loop (heap of (cost, push counter), the
// cut at the best target entry) and the edge rule (which collective an edge runs and its bytes:
// dtensor_plan._edge_query). tests/torch/dtensor_adapter_test.py `fastplan` compares both searches
// with DTensor's own planner.
//
// Placement codes: t >= 0 = Shard(t), -1 = Replicate, <= -2 = Partial (a reduce op's code).

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <queue>
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

double py_max(double a, double b) { return b > a ? b : a; }  // Python's max(a, b): the first unless b is larger

// cost_model.time_pricer's price function from its `spec` (the same constants), computing the same
// operations in the same order, so its prices are bit-identical to the Python function's (the
// same libm's log, log2 and exp; built with -ffp-contract=off, no fused multiply-add).
// tests/calibrate/parity_test.py `timefn` compares them on every query it makes.
class Price {
 public:
  explicit Price(const py::tuple& spec) {
    const auto kind = spec[0].cast<std::string>();
    if (kind == "constant") {
      constant_ = true;
      a_ = spec[1].cast<double>();
      return;
    }
    if (kind != "backbone" || (spec.size() != 6 && spec.size() != 7)) throw py::value_error("unknown price spec");
    rs_ = spec[1].cast<double>();
    bf_ = spec[2].cast<double>();
    cm1_ = spec[3].cast<double>();
    for (const auto& c : spec[4].cast<py::list>()) {
      const auto t = c.cast<py::tuple>();
      if (t.size() != 4) throw py::value_error("price spec: 4 coefficients a segment");
      coefs_.push_back({t[0].cast<double>(), t[1].cast<double>(), t[2].cast<double>(), t[3].cast<double>()});
    }
    his_ = spec[5].cast<std::vector<double>>();
    if (coefs_.empty() || his_.size() + 1 != coefs_.size()) throw py::value_error("price spec: segments");
    if (spec.size() == 7) {
      const auto cv = spec[6].cast<py::tuple>();
      if (cv.size() != 11 || cv[0].cast<std::string>() != "curve") throw py::value_error("price spec: curve");
      knot_bytes_ = cv[1].cast<std::vector<double>>();
      xs_ = cv[2].cast<std::vector<double>>();
      kb_ = cv[3].cast<std::vector<double>>();
      yk_ = cv[4].cast<std::vector<double>>();
      ym_ = cv[5].cast<std::vector<double>>();
      lr_ = cv[6].cast<std::vector<double>>();
      seg_at_ = cv[7].cast<std::vector<long>>();
      wgt_ = cv[8].cast<double>();
      shrink1_ = cv[9].cast<double>();
      switch_ = cv[10].cast<double>();
      const std::size_t k = knot_bytes_.size();
      if (k < 2 || xs_.size() != k || kb_.size() != k || yk_.size() != k || ym_.size() != k || lr_.size() != k ||
          seg_at_.size() != k)
        throw py::value_error("price spec: curve knots");
      curve_ = true;
    }
  }

  double operator()(double s) const {
    if (constant_) return a_;
    const double bb = backbone(s);
    if (!curve_) return bb;
    const std::size_t k = knot_bytes_.size();
    const double log_bb = std::log(py_max(bb, 1e-6));
    const double x = std::log2(py_max(s, 1.0));
    if (x < xs_[0]) return std::exp(log_bb + wgt_ * lr_[0]);
    if (x > xs_[k - 1]) return std::exp(py_max(log_bb + wgt_ * lr_[k - 1], ym_[k - 1]));
    std::size_t i = static_cast<std::size_t>(
        std::upper_bound(knot_bytes_.begin(), knot_bytes_.end(), py_max(s, 1.0)) - knot_bytes_.begin());
    i = i == 0 ? 0 : i - 1;
    if (i + 1 >= k) i = k - 2;
    const double xi = xs_[i], xj = xs_[i + 1];
    const double g = xj - xi;
    const double w = g > 0 ? (x - xi) / g : 0.0;
    const double yi = ym_[i];
    const double yj = kb_[i + 1] < kb_[i] ? yk_[i + 1] : py_max(yk_[i + 1], yi);
    if (0 < w && w < 1 && (seg_at_[i] != seg_at_[i + 1] || wgt_ * std::fabs(lr_[i + 1] - lr_[i]) > switch_))
      return std::exp((1 - w) * yi + w * yj);
    const double shape = log_bb - ((1 - w) * kb_[i] + w * kb_[i + 1]);
    const double r = (1 - w) * lr_[i] + w * lr_[i + 1] - shrink1_ * shape;
    return std::exp(py_max(log_bb + wgt_ * r, yi));
  }

 private:
  double backbone(double s) const {
    std::size_t seg = 0;
    const std::size_t last = coefs_.size() - 1;
    while (seg < last && s >= his_[seg]) ++seg;
    const auto& a = coefs_[seg];
    double t = 0.0;  // segment_time_us's sum, term by term
    t += a[0] * 1.0;
    t += a[1] * rs_;
    const double x = s * bf_;
    t += a[2] * x;
    t += a[3] * (x * cm1_);
    return t;
  }

  bool constant_ = false, curve_ = false;
  double a_ = 0, rs_ = 0, bf_ = 0, cm1_ = 0, wgt_ = 0, shrink1_ = 0, switch_ = 0;
  std::vector<std::array<double, 4>> coefs_;
  std::vector<double> his_, knot_bytes_, xs_, kb_, yk_, ym_, lr_;
  std::vector<long> seg_at_;
};

// What the search needs of one mesh and dtype: the mesh shape, whether S(a) -> S(b) is an
// all-gather (cpu), which dims run gloo, and the price of each (mesh dim, collective): a Price
// (evaluated here), a Python callable (a price kind with no spec: host transport), or nothing yet:
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
    const py::object spec = py::getattr(fn, "spec", py::none());
    if (!spec.is_none())
      prices_[i].emplace(spec.cast<py::tuple>());
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

 private:
  std::vector<std::int64_t> mesh_;
  std::vector<bool> gloo_;
  bool cpu_;
  std::vector<std::optional<Price>> prices_;
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

  // A state number as Python's _Graph numbers them: dense from 0 (a graph has a few hundred)
  static void check_state(int state) {
    if (state < 0 || state >= kMaxStates) throw py::value_error("not a state number of a plan graph");
  }

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
    std::vector<char> visited;
    std::vector<double> cost_of(edges_.size(), std::numeric_limits<double>::quiet_NaN());
    struct Priced {
      int d, coll;
      std::int64_t bytes;
      double us;
    };
    std::vector<Priced> prices;  // the plan's distinct prices: a handful, a linear scan is enough
    std::vector<std::pair<int, int>> links;  // (state, parent link)
    std::priority_queue<Entry, std::vector<Entry>, Later> pq;
    std::vector<Step> nb;
    std::int64_t counter = 0;
    double best = kInf;
    links.push_back({src, -1});
    pq.push(Entry{0.0, 0, src, 0});
    std::vector<std::int64_t> ls(full.size());

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
      const Entry top = pq.top();
      pq.pop();
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
        pq.push(Entry{c, counter, st.to, static_cast<int>(links.size()) - 1});
      }
    }
    return std::nullopt;
  }

 private:
  // flat pools: a plan touches a few dozen states and edges, and cold (its first call) each
  // separate allocation would be a cache miss
  std::vector<Edge> edges_;
  std::vector<int> codes_;
  std::vector<StateRec> states_;
  std::vector<Step> steps_;
  std::vector<SumStep> sum_steps_;
  py::function expand_;
  int sum_code_;
};

}  // namespace

PYBIND11_MODULE(_dtensor_search, m) {
  m.doc() = "DTensor's min-cost redistribution search over shardcal.dtensor_plan's compact states";
  py::class_<Price>(m, "Price")
      .def(py::init<const py::tuple&>(), py::arg("spec"))
      .def("__call__", &Price::operator(), py::arg("nbytes"));
  py::class_<MeshPrices>(m, "MeshPrices")
      .def(py::init<std::vector<std::int64_t>, bool, std::vector<bool>, py::function>(), py::arg("mesh"),
           py::arg("cpu"), py::arg("gloo"), py::arg("price"))
      .def("set", &MeshPrices::set, py::arg("i"), py::arg("fn"));
  py::class_<Graph>(m, "Graph")
      .def(py::init<py::function, int>(), py::arg("expand"), py::arg("sum_code"))
      .def("add_edge", &Graph::add_edge, py::arg("pl"), py::arg("d"), py::arg("b"))
      .def("set_adj", &Graph::set_adj, py::arg("state"), py::arg("nbrs"), py::arg("sums"))
      .def("edges", &Graph::edges)
      .def("search", &Graph::search, py::arg("src"), py::arg("dst"), py::arg("full"), py::arg("itemsize"),
           py::arg("dst_pl"), py::arg("prices"));
}

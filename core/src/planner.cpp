// The cost-based planner: k cheapest loop-free plans by Dijkstra-style state expansion over
// canonical states (shardcal/planner.hpp, docs/PLANNER.md). Pure (no communication).
#include "shardcal/planner.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>

#include "shardcal/error.hpp"

namespace shardcal {

namespace {

// A priced step out of a state. The step's specs are not stored: they are the specs of the two
// states (SearchGraph::spec), built only for the plans returned.
struct Edge {
  int mesh_dim = 0;
  StepKind kind = StepKind::LocalSlice;
  int to = -1;      // state id
  double cost = 0;  // finite, >= 0
};

using Sym = std::uint16_t;  // a placement's id in SearchGraph::symbols

// Keys of `len` symbols to dense ids (0, 1, 2, ... in insertion order), by open addressing over
// a power-of-two array of ids. Keys live end to end in one array, with their hashes: an entry
// costs no allocation of its own, a lookup hashes a few symbols and compares one or two keys.
class KeyTable {
 public:
  // Sized for `expected` keys without growing.
  KeyTable(std::size_t len, std::size_t expected) : len_(len) {
    std::size_t n = 64;
    while (n < 2 * expected) n *= 2;
    slots_.assign(n, -1);
    keys_.reserve(expected * len);
    hashes_.reserve(expected);
  }
  static std::uint32_t hash(const Sym* key, std::size_t len) {
    std::uint32_t h = 0x811c9dc5u;
    for (std::size_t j = 0; j < len; ++j) h = (h ^ key[j]) * 0x9e3779b1u;
    return h ^ (h >> 15);
  }
  int find(const Sym* key, std::uint32_t h) const {
    if (slots_.empty()) return -1;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      const int id = slots_[i];
      if (id < 0) return -1;
      if (hashes_[std::size_t(id)] == h && std::equal(key, key + len_, this->key(id))) return id;
    }
  }
  int add(const Sym* key, std::uint32_t h) {  // key must be absent
    if (2 * (hashes_.size() + 1) > slots_.size()) {
      slots_.assign(std::max<std::size_t>(64, 2 * slots_.size()), -1);
      for (std::size_t id = 0; id < hashes_.size(); ++id) place(int(id));
    }
    keys_.insert(keys_.end(), key, key + len_);
    hashes_.push_back(h);
    place(int(hashes_.size() - 1));
    return int(hashes_.size() - 1);
  }
  const Sym* key(int id) const { return keys_.data() + std::size_t(id) * len_; }

 private:
  void place(int id) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = hashes_[std::size_t(id)] & mask;
    while (slots_[i] >= 0) i = (i + 1) & mask;
    slots_[i] = id;
  }
  std::size_t len_;
  std::vector<Sym> keys_;
  std::vector<std::uint32_t> hashes_;
  std::vector<int> slots_;  // -1 = empty
};

// A canonical state. Its key (SearchGraph::ids) is its placements' symbols, one per mesh dim;
// its edges are a range of SearchGraph::edges.
struct State {
  int edge_begin = -1;  // -1: not expanded yet
  int edge_count = 0;
};

// One partial plan (walk from the source). Labels live in a pool; parent links share prefixes.
struct Label {
  double cost = 0;
  int steps = 0;
  int state = -1;
  int parent = -1;                  // label index, -1 for the root
  int edge = -1;                    // edge index in parent's state
  // Tie-break key: the sequence of per-step codes (mesh dim, kind, edge index) from the root,
  // stored as this step's code; the sequence is the parent chain's (no vector per label).
  std::int64_t code = 0;
};

// Lexicographic tie-break sequence element.
std::int64_t order_code(int mesh_dim, StepKind kind, int edge_index) {
  return (std::int64_t(mesh_dim) << 40) | (std::int64_t(kind) << 32) | std::int64_t(edge_index);
}

std::string step_text(const Step& s) {
  return "mesh dim " + std::to_string(s.mesh_dim) + ": " +
         placements_to_string(canonical_placements(s.before)) + " -> " +
         placements_to_string(canonical_placements(s.after)) + " " + step_kind_name(s.kind);
}

bool is_integer(DType t) { return t == DType::I32 || t == DType::I64 || t == DType::U8; }

void check_specs(const TensorSpec& from, const TensorSpec& to) {
  if (!(from.mesh() == to.mesh()))
    throw Error("cannot plan between meshes " + from.mesh().to_string() + " and " +
                to.mesh().to_string() + ": source and target must use the same mesh");
  if (!(from.meta() == to.meta()))
    throw Error("cannot plan a [" + shape_to_string(from.meta().shape) + "] " +
                std::string(dtype_name(from.meta().dtype)) + " tensor into a [" +
                shape_to_string(to.meta().shape) + "] " + std::string(dtype_name(to.meta().dtype)) +
                " spec: shape and dtype must match");
}

// `c` if it is a valid price; the step (built only then) is named in the error.
template <class MakeStep>
double checked(double c, MakeStep&& make_step) {
  if (std::isnan(c) || c < 0)
    throw Error("the step cost function priced " + step_text(make_step()) + " at " +
                std::to_string(c) +
                ": prices must be >= 0 (+inf = never take the step); fix the cost function or "
                "the profile it reads");
  return c;
}

}  // namespace

CostedPlan price_plan(const Plan& plan, const StepCostFn& cost) {
  CostedPlan cp;
  cp.plan = plan;
  for (const Step& s : plan.steps) {
    const double c = checked(cost(s, describe_step(s)), [&] { return s; });
    cp.step_cost.push_back(c);
    cp.total += c;
  }
  return cp;
}

namespace {

std::vector<bool> ops_used_by(const TensorSpec& from, const TensorSpec& to) {
  std::vector<bool> ops(std::size(kAllReduceOps), false);
  ops[std::size_t(ReduceOp::Sum)] = true;
  for (const TensorSpec* sp : {&from, &to})
    for (const Placement& p : sp->placements())
      if (p.is_partial()) ops[std::size_t(p.op)] = true;
  return ops;
}

// Explicit-size shard placements of the target: the extra steps a search offers (SearchGraph).
std::string target_extras(const TensorSpec& to) {
  std::string s;
  for (int i = 0; i < to.mesh().ndim(); ++i)
    if (to.placement(i).is_shard() && !to.placement(i).sizes.empty())
      s += std::to_string(i) + ":" + to.placement(i).to_string() + ";";
  return s;
}

}  // namespace

// The states and priced edges of one (mesh, tensor, cost function, partial ops, target extras):
// built lazily by searches, shareable between searches with the same parameters (PlanCache).
// A state's steps are legal_steps' (decided here on symbols, in legal_steps' order, without
// building specs), less local_embed_partial onto P(max|min) for integer dtypes (their fills
// overflow when a sum/avg over another mesh dim is reduced while they are there), plus, per mesh
// dim, a step onto the target's placement there when it spells explicit (uneven) sizes, which
// legal_steps does not enumerate.
struct SearchGraph {
  std::mutex mu;  // one search at a time
  std::vector<bool> ops_used;
  TensorSpec extras_from;  // the target: mesh, tensor, and the explicit sizes offered
  int nd;                  // mesh dims: the length of a state's key
  // The canonical placements met so far, by symbol; a deque so references stay valid as it
  // grows (sym_ptr holds them).
  std::deque<Placement> symbols;
  std::vector<const Placement*> sym_ptr;
  // What a step's traffic depends on of a placement: the tensor dim it shards and its sizes;
  // R and P(op) are alike (their symbol -> R's, symbol 0).
  std::vector<Sym> traffic_sym;
  std::vector<Sym> targets;  // what legal_steps tries on a mesh dim, in its order
  KeyTable ids;              // state keys -> state ids
  std::vector<State> states;
  std::vector<Edge> edges;  // every expanded state's, contiguous per state
  std::vector<std::optional<TensorSpec>> specs;  // per state, built on demand (spec())
  // Prices of traffic-only costs (StepCostFn::bind), by what the step's traffic depends on
  // (price key): the state's traffic symbols with the step's target on its mesh dim, then its
  // source placement there and the mesh dim (the kind follows from the two placements). States
  // that differ in R and P on other mesh dims share them.
  KeyTable price_keys;
  std::vector<double> prices;

  SearchGraph(std::vector<bool> ops, const TensorSpec& to)
      : ops_used(std::move(ops)),
        extras_from(to),
        nd(to.mesh().ndim()),
        ids(std::size_t(nd), 64),
        price_keys(std::size_t(nd) + 2, 256) {
    targets.push_back(symbol(Placement::replicate()));  // symbol 0
    for (ReduceOp op : kAllReduceOps)
      if (ops_used[std::size_t(op)]) targets.push_back(symbol(Placement::partial(op)));
    for (int d = 0; d < to.ndim(); ++d) targets.push_back(symbol(Placement::shard(d)));
    states.reserve(64);
    edges.reserve(512);
  }
  const DeviceMesh& mesh() const { return extras_from.mesh(); }
  const TensorMeta& meta() const { return extras_from.meta(); }

  Sym symbol(const Placement& p) {
    for (std::size_t k = 0; k < symbols.size(); ++k)
      if (symbols[k] == p) return Sym(k);
    if (symbols.size() >= 0xffff)
      throw Error("plan search: more than 65535 distinct placements; plan fewer explicit sizes");
    symbols.push_back(p);
    sym_ptr.push_back(&symbols.back());
    traffic_sym.push_back(p.is_shard() ? Sym(symbols.size() - 1) : Sym(0));
    return Sym(symbols.size() - 1);
  }
  void encode(const std::vector<Placement>& canon, Sym* key) {
    for (std::size_t j = 0; j < canon.size(); ++j) key[j] = symbol(canon[j]);
  }
  TensorSpec decode(const Sym* key) const {
    std::vector<Placement> ps;
    ps.reserve(std::size_t(nd));
    for (int j = 0; j < nd; ++j) ps.push_back(*sym_ptr[key[j]]);
    return TensorSpec(mesh(), std::move(ps), meta());
  }
  const TensorSpec& spec(int state) {
    if (specs.size() <= std::size_t(state)) specs.resize(std::size_t(state) + 1);
    std::optional<TensorSpec>& sp = specs[std::size_t(state)];
    if (!sp) sp = decode(ids.key(state));
    return *sp;
  }
  int intern(const Sym* key) {
    const std::uint32_t h = KeyTable::hash(key, std::size_t(nd));
    const int id = ids.find(key, h);
    if (id >= 0) return id;
    states.push_back(State{});
    return ids.add(key, h);
  }
};

namespace {

// Buffers one search reuses for every state it expands.
struct ExpandScratch {
  std::vector<Sym> key, tkey, pkey, extra;
  std::vector<const Placement*> before;
  std::vector<std::pair<int, Sym>> legal;  // (mesh dim, target symbol) of the legal steps
  StepDescriber describer;
  int prepared_dim = -1;  // the mesh dim `describer` is prepared for in this state, -1 = none
  StepTraffic traffic;
};

// Prices the steps out of state `s` into its edges. `price` is the cost's traffic-only form for
// this mesh and dtype (empty: `cost` is called with each step's specs).
void expand(SearchGraph& g, int s, const StepCostFn& cost, const TrafficCostFn& price,
            ExpandScratch& x) {
  const DeviceMesh& mesh = g.mesh();
  const int nd = g.nd;
  const std::size_t n = std::size_t(nd);
  x.key.assign(g.ids.key(s), g.ids.key(s) + n);  // a copy: interning below grows the table
  x.tkey = x.key;
  x.pkey.resize(n + 2);
  x.before.resize(n);
  for (std::size_t j = 0; j < n; ++j) x.before[j] = g.sym_ptr[x.key[j]];
  const std::span<const Placement* const> before(x.before.data(), n);
  x.prepared_dim = -1;
  const int first_edge = int(g.edges.size());
  // The step on mesh dim i onto `t` (x.tkey = the target state's key).
  auto add = [&](int i, StepKind kind, Sym t) {
    auto make_step = [&] { return Step{i, kind, g.spec(s), g.decode(x.tkey.data())}; };
    auto traffic = [&]() -> const StepTraffic& {
      if (x.prepared_dim != i) x.describer.prepare(mesh, g.meta(), before, i), x.prepared_dim = i;
      x.describer.describe(kind, *g.sym_ptr[t], x.traffic);
      return x.traffic;
    };
    double c = 0;
    if (price) {
      for (std::size_t j = 0; j < n; ++j) x.pkey[j] = g.traffic_sym[x.key[j]];
      x.pkey[std::size_t(i)] = t;
      x.pkey[n] = x.key[std::size_t(i)];
      x.pkey[n + 1] = Sym(i);
      const std::uint32_t h = KeyTable::hash(x.pkey.data(), n + 2);
      const int id = g.price_keys.find(x.pkey.data(), h);
      if (id >= 0) {
        c = g.prices[std::size_t(id)];
      } else {
        c = checked(price(traffic()), make_step);
        g.price_keys.add(x.pkey.data(), h);
        g.prices.push_back(c);
      }
    } else {
      c = checked(cost(make_step(), traffic()), make_step);
    }
    if (std::isinf(c)) return;
    g.edges.push_back(Edge{i, kind, g.intern(x.tkey.data()), c});
  };
  // legal_steps' rule on the canonical placements: a kind goes there, it changes the placement,
  // and no inner mesh dim shards a tensor dim the step splits or joins.
  auto inner_shards = [&](int i, int d) {
    if (d < 0) return false;
    for (int j = i + 1; j < nd; ++j)
      if (x.before[std::size_t(j)]->is_shard(d) && mesh.extent(j) > 1) return true;
    return false;
  };
  const bool integer = is_integer(g.meta().dtype);
  x.legal.clear();
  for (int i = 0; i < nd; ++i) {
    if (mesh.extent(i) == 1) continue;
    const Sym cur_sym = x.key[std::size_t(i)];
    const Placement& cur = *x.before[std::size_t(i)];
    if (inner_shards(i, cur.is_shard() ? cur.dim : -1)) continue;
    for (Sym t_sym : g.targets) {
      if (t_sym == cur_sym) continue;
      const Placement& t = *g.sym_ptr[t_sym];
      const std::optional<StepKind> k = step_kind_for(cur, t);
      if (!k) continue;
      if (t.is_shard() && inner_shards(i, t.dim)) continue;
      if (*k == StepKind::LocalEmbedPartial && t.op != ReduceOp::Sum && integer) continue;
      x.legal.emplace_back(i, t_sym);
      x.tkey[std::size_t(i)] = t_sym;
      add(i, *k, t_sym);
      x.tkey[std::size_t(i)] = cur_sym;
    }
  }
  // Explicit target sizes: built and checked as specs (rare, and validity depends on sizes).
  for (int i = 0; i < nd; ++i) {
    const Placement& t = g.extras_from.placement(i);
    if (!t.is_shard() || t.sizes.empty() || mesh.extent(i) == 1) continue;
    std::optional<TensorSpec> after;
    try {
      after = g.spec(s).with_placement(i, t);
    } catch (const Error&) {
      continue;
    }
    const Placement& cur = *x.before[std::size_t(i)];
    StepKind k = StepKind::LocalSlice;
    if (cur.is_shard())
      k = StepKind::AllToAll;
    else if (cur.is_partial())
      k = StepKind::ReduceScatter;
    const Step st{i, k, g.spec(s), TensorSpec(mesh, canonical_placements(*after), g.meta())};
    if (!step_problem(st).empty()) continue;
    x.extra.resize(n);
    g.encode(st.after.placements(), x.extra.data());  // may add symbols: sym_ptr stays valid
    bool dup = false;
    for (const auto& [li, l_sym] : x.legal) {
      if (li != i) continue;
      x.tkey[std::size_t(i)] = l_sym;
      dup = dup || x.tkey == x.extra;
      x.tkey[std::size_t(i)] = x.key[std::size_t(i)];
    }
    if (dup) continue;
    x.tkey = x.extra;
    add(i, k, x.extra[std::size_t(i)]);
    x.tkey = x.key;
  }
  g.states[std::size_t(s)] = State{first_edge, int(g.edges.size()) - first_edge};
}

SearchResult search(SearchGraph& g, const TensorSpec& from, const TensorSpec& to,
                    const StepCostFn& cost, const SearchOptions& opt) {
  const std::size_t k = std::size_t(opt.k);
  // The max_states bound counts the states *this search* reaches (its endpoints and the targets
  // of the edges of every state it expands), not the size of the graph, which a PlanCache shares
  // between searches: the answer must not depend on what was searched before.
  std::vector<char> reached;
  std::size_t n_reached = 0;
  auto reach = [&](int id) {
    if (reached.size() < g.states.size()) reached.resize(g.states.size(), 0);
    if (reached[std::size_t(id)]) return;
    reached[std::size_t(id)] = 1;
    if (++n_reached > opt.max_states)
      throw Error("plan search " + placements_to_string(from.placements()) + " -> " +
                  placements_to_string(to.placements()) + " on mesh " + from.mesh().to_string() +
                  ": more than max_states = " + std::to_string(opt.max_states) +
                  " states; raise SearchOptions::max_states (shardbench plan --max-states) or use "
                  "plan_redistribution");
  };
  std::vector<Sym> key(std::size_t(g.nd));
  g.encode(canonical_placements(from), key.data());
  const int src = g.intern(key.data());
  reach(src);
  g.encode(canonical_placements(to), key.data());
  const int dst = g.intern(key.data());
  reach(dst);

  SearchResult res;
  if (src == dst) {
    CostedPlan cp;
    cp.plan = Plan{from, to, {}};
    res.alternatives.push_back(cp);
    res.best = cp;
    res.states_explored = 1;
    return res;
  }

  // Per search: how often each state was expanded, and its k best queued labels (best_n[s] of
  // them at best[s * k ...], best first). Sized to the whole graph, so a search on a large warm
  // (cached) graph allocates and zeroes O(states x k) even when it reaches few states. Left so on
  // purpose: the cold search (the common case, and a fresh graph) needs these sizes anyway, and
  // the alternatives cost it: a generation stamp checked per edge relaxation slows its hot loop,
  // and scratch kept in each cached graph holds states x k ints per graph between searches.
  std::vector<int> pops, best, best_n;
  auto grow = [&] {
    if (pops.size() < g.states.size()) {
      pops.resize(g.states.size(), 0), best_n.resize(g.states.size(), 0);
      best.resize(g.states.size() * k, -1);
    }
  };
  grow();
  std::vector<Label> pool;
  pool.reserve(64);
  pool.push_back(Label{0, 0, src, -1, -1, 0});
  // Lexicographic comparison of two labels' code sequences of equal length (worse() compares
  // step counts first): the prefixes (parents) first, then the last codes.
  auto order_cmp = [&](auto&& self, int a, int b) -> int {
    if (a == b) return 0;  // also the root: equal lengths reach it together
    const Label& x = pool[std::size_t(a)];
    const Label& y = pool[std::size_t(b)];
    if (const int c = self(self, x.parent, y.parent); c != 0) return c;
    return x.code < y.code ? -1 : x.code > y.code ? 1 : 0;
  };
  auto worse = [&](int a, int b) {  // priority_queue: top = least
    const Label& x = pool[std::size_t(a)];
    const Label& y = pool[std::size_t(b)];
    if (x.cost != y.cost) return x.cost > y.cost;
    if (x.steps != y.steps) return x.steps > y.steps;
    return order_cmp(order_cmp, a, b) > 0;
  };
  std::vector<int> queue_buf;
  queue_buf.reserve(64);
  std::priority_queue<int, std::vector<int>, decltype(worse)> queue(worse, std::move(queue_buf));
  queue.push(0);
  std::vector<int> found;
  std::size_t expanded = 0;
  // The cost's traffic-only form, bound on the first state this search prices.
  bool bound = false;
  TrafficCostFn price;
  ExpandScratch scratch;
  while (!queue.empty() && found.size() < k) {
    const int li = queue.top();
    queue.pop();
    const int s = pool[std::size_t(li)].state;
    if (std::size_t(pops[std::size_t(s)]) >= k) continue;
    expanded += pops[std::size_t(s)] == 0;
    ++pops[std::size_t(s)];
    if (s == dst) {
      found.push_back(li);
      continue;  // a plan never passes through its target
    }
    if (g.states[std::size_t(s)].edge_begin < 0) {
      if (!bound) {
        price = cost.bind(g.mesh(), g.meta().dtype), bound = true;
        if (!price && cost.traffic_only())
          throw Error("plan search on mesh " + g.mesh().to_string() +
                      ": the traffic-only step cost's binder returned an empty price function "
                      "(it must return a callable for every mesh and dtype)");
      }
      expand(g, s, cost, price, scratch);
      grow();
    }
    const Edge* const edges = g.edges.data() + g.states[std::size_t(s)].edge_begin;
    const std::size_t ne = std::size_t(g.states[std::size_t(s)].edge_count);
    if (pops[std::size_t(s)] == 1)  // first expansion of s in this search
      for (std::size_t e = 0; e < ne; ++e) reach(edges[e].to);
    for (std::size_t e = 0; e < ne; ++e) {
      const Edge& ed = edges[e];
      if (std::size_t(pops[std::size_t(ed.to)]) >= k) continue;
      // Cheap pre-check against the k best labels already queued for the target state.
      const double c = pool[std::size_t(li)].cost + ed.cost;
      int* const bt = best.data() + std::size_t(ed.to) * k;
      int& bn = best_n[std::size_t(ed.to)];
      if (std::size_t(bn) == k && pool[std::size_t(bt[k - 1])].cost < c) continue;
      // Loop-free: the walk must not revisit a state.
      bool loop = false;
      for (int a = li; a >= 0; a = pool[std::size_t(a)].parent)
        if (pool[std::size_t(a)].state == ed.to) {
          loop = true;
          break;
        }
      if (loop) continue;
      Label nl;
      nl.cost = c;
      nl.steps = pool[std::size_t(li)].steps + 1;
      nl.state = ed.to;
      nl.parent = li;
      nl.edge = int(e);
      nl.code = order_code(ed.mesh_dim, ed.kind, int(e));
      // Only the k best labels per state can become one of the k cheapest plans through it.
      pool.push_back(nl);
      const int ni = int(pool.size() - 1);
      if (std::size_t(bn) == k && !worse(bt[k - 1], ni)) {
        pool.pop_back();
        continue;
      }
      // Insert after every label no worse than it (stable among equals), dropping the k+1-th.
      std::size_t pos = 0;
      while (pos < std::size_t(bn) && !worse(bt[pos], ni)) ++pos;
      for (std::size_t q = std::min(std::size_t(bn), k - 1); q > pos; --q) bt[q] = bt[q - 1];
      bt[pos] = ni;
      bn = int(std::min(std::size_t(bn) + 1, k));
      queue.push(ni);
    }
  }
  res.states_explored = expanded;
  if (found.empty())
    throw Error("plan search " + placements_to_string(from.placements()) + " -> " +
                placements_to_string(to.placements()) + " on mesh " + from.mesh().to_string() +
                ": no plan of finite cost (the cost function prices every path at +inf; does the "
                "profile have models for the collectives the transition needs?)");
  // Every state a plan passes through exists: sizing specs now keeps spec() from resizing it
  // while a Step holds a reference to another of its entries.
  if (g.specs.size() < g.states.size()) g.specs.resize(g.states.size());
  for (int li : found) {
    std::vector<int> chain;
    for (int a = li; pool[std::size_t(a)].parent >= 0; a = pool[std::size_t(a)].parent)
      chain.push_back(a);
    std::reverse(chain.begin(), chain.end());
    CostedPlan cp;
    cp.plan.from = from;
    cp.plan.to = to;
    for (int a : chain) {
      const Label& l = pool[std::size_t(a)];
      const int ps = pool[std::size_t(l.parent)].state;
      const Edge& ed = g.edges[std::size_t(g.states[std::size_t(ps)].edge_begin + l.edge)];
      cp.plan.steps.push_back(Step{ed.mesh_dim, ed.kind, g.spec(ps), g.spec(ed.to)});
      cp.step_cost.push_back(ed.cost);
      cp.total += ed.cost;
    }
    // Keep the caller's spelling of the endpoints (as plan_redistribution does).
    if (!cp.plan.steps.empty()) cp.plan.steps.back().after = to;
    res.alternatives.push_back(std::move(cp));
  }
  res.best = res.alternatives.front();
  return res;
}

void check_request(const TensorSpec& from, const TensorSpec& to, const StepCostFn& cost,
                   const SearchOptions& opt) {
  check_specs(from, to);
  if (opt.k < 1)
    throw Error("plan search: k = " + std::to_string(opt.k) +
                " alternatives requested; ask for at least 1");
  if (!cost) throw Error("plan search: no step cost function given");
}

}  // namespace

SearchResult plan_cheapest(const TensorSpec& from, const TensorSpec& to, const StepCostFn& cost,
                           const SearchOptions& opt) {
  check_request(from, to, cost, opt);
  SearchGraph g(ops_used_by(from, to), to);
  return search(g, from, to, cost, opt);
}

std::shared_ptr<const SearchResult> PlanCache::get(const TensorSpec& from, const TensorSpec& to,
                                                   const StepCostFn& cost,
                                                   const std::string& cost_key,
                                                   const SearchOptions& opt) {
  check_request(from, to, cost, opt);
  std::string key = from.serialize();
  key += '|';
  key += to.serialize();
  key += '|';
  key += cost_key;
  key += "|k=" + std::to_string(opt.k) + ";max=" + std::to_string(opt.max_states);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) {
      ++hits_;
      return it->second;
    }
  }
  // A miss: the graph level's key (built only now, a hit needs none).
  const std::vector<bool> ops = ops_used_by(from, to);
  std::string gkey = "mesh=" + from.mesh().to_string() +
                     ";shape=" + shape_to_string(from.meta().shape) +
                     ";dtype=" + std::string(dtype_name(from.meta().dtype)) + ";ops=";
  for (bool b : ops) gkey += b ? '1' : '0';
  gkey += ";extras=" + target_extras(to) + "|" + cost_key;
  std::shared_ptr<SearchGraph> graph;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);  // another thread may have searched it meanwhile
    if (it != map_.end()) {
      ++hits_;
      return it->second;
    }
    ++misses_;
    auto git = graphs_.find(gkey);
    if (git == graphs_.end()) {
      if (graphs_.size() >= capacity_) graphs_.clear();
      git = graphs_.emplace(gkey, std::make_shared<SearchGraph>(ops, to)).first;
    }
    graph = git->second;
  }
  // Searched outside the cache lock, inside the graph's (its states grow as it is explored).
  std::shared_ptr<const SearchResult> r;
  {
    std::lock_guard<std::mutex> glock(graph->mu);
    r = std::make_shared<const SearchResult>(search(*graph, from, to, cost, opt));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (map_.size() >= capacity_) map_.clear();
  map_.emplace(std::move(key), r);
  return r;
}

std::size_t PlanCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}
std::size_t PlanCache::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}
std::size_t PlanCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size();
}
void PlanCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  map_.clear();
  graphs_.clear();
}

void PlanCache::clear_results() {
  std::lock_guard<std::mutex> lock(mu_);
  map_.clear();
}

RecvReport recv_report(const Plan& plan) {
  const DeviceMesh& mesh = plan.from.mesh();
  const int n = mesh.size();
  const std::int64_t es = std::int64_t(dtype_size(plan.from.meta().dtype));
  RecvReport r;
  r.received.assign(std::size_t(n), 0);
  r.lower_bound.assign(std::size_t(n), 0);
  for (const Step& st : plan.steps) {
    if (!step_collective(st.kind)) continue;
    const std::int64_t m = mesh.extent(st.mesh_dim);
    for (int rank = 0; rank < n; ++rank) {
      const std::vector<std::int64_t> c = step_group_counts(st, rank);
      const std::size_t p = std::size_t(mesh.group_position(rank, {st.mesh_dim}));
      std::int64_t recv = 0;
      switch (st.kind) {
        case StepKind::AllGather:
          for (std::size_t q = 0; q < c.size(); ++q)
            if (q != p) recv += c[q];
          break;
        case StepKind::ReduceScatter: recv = c[p] * (m - 1); break;
        case StepKind::AllReduce: recv = c[p] * (m - 1); break;
        case StepKind::AllToAll:
          for (std::size_t q = 0; q < std::size_t(m); ++q)
            if (q != p) recv += c[q * std::size_t(m) + p];
          break;
        default: break;
      }
      r.received[std::size_t(rank)] += recv * es;
    }
  }
  // A source Partial the target keeps (the same op on the same mesh dim) leaves the rank's
  // values valid where its blocks overlap; a Partial reduced away (or changed) makes every
  // target element depend on other ranks' contributions: then the whole target block is new.
  bool reduced = false;
  for (int i = 0; i < mesh.ndim(); ++i) {
    const Placement& a = plan.from.placement(i);
    const Placement& b = plan.to.placement(i);
    if (a.is_partial() && mesh.extent(i) > 1 && !(b.is_partial() && b.op == a.op)) reduced = true;
  }
  for (int rank = 0; rank < n; ++rank) {
    const Box tb = plan.to.local_box(rank);
    std::int64_t lb = tb.numel();
    if (!reduced) lb -= intersect(plan.from.local_box(rank), tb).numel();
    r.lower_bound[std::size_t(rank)] = lb * es;
  }
  for (int rank = 0; rank < n; ++rank) {
    r.max_received = std::max(r.max_received, r.received[std::size_t(rank)]);
    r.max_lower_bound = std::max(r.max_lower_bound, r.lower_bound[std::size_t(rank)]);
  }
  return r;
}

}  // namespace shardcal

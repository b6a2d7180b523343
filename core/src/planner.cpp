// The cost-based planner: k cheapest loop-free plans by Dijkstra-style state expansion over
// canonical states (shardcal/planner.hpp, docs/PLANNER.md). Pure (no communication).
#include "shardcal/planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>

#include "shardcal/error.hpp"

namespace shardcal {

namespace {

struct Edge {
  Step step;
  int to = -1;      // state id
  double cost = 0;  // finite, >= 0
};

struct State {
  TensorSpec spec;  // canonical spelling
  bool expanded_edges = false;
  std::vector<Edge> edges;
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
std::int64_t order_code(const Step& s, int edge_index) {
  return (std::int64_t(s.mesh_dim) << 40) | (std::int64_t(s.kind) << 32) | std::int64_t(edge_index);
}

std::string step_text(const Step& s) {
  return "mesh dim " + std::to_string(s.mesh_dim) + ": " +
         placements_to_string(canonical_placements(s.before)) + " -> " +
         placements_to_string(canonical_placements(s.after)) + " " + step_kind_name(s.kind);
}

// Steps from `spec`: legal_steps plus, per mesh dim, a step onto the target's placement on that
// dim when the target spells explicit (uneven) shard sizes, which legal_steps does not
// enumerate.
bool is_integer(DType t) { return t == DType::I32 || t == DType::I64 || t == DType::U8; }

std::vector<Step> candidate_steps(const TensorSpec& spec, const TensorSpec& to,
                                  const std::vector<bool>& ops_used) {
  std::vector<Step> out = legal_steps(spec, ops_used);
  // legal_steps already drops partial ops other than those in ops_used (sum and the endpoints'
  // ops: a P(max) intermediate costs what P(sum) costs and is only reduced away again).
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const Step& st) {
                             const Placement& p = st.after.placement(st.mesh_dim);
                             // Integer max/min fills (the type's extreme values) overflow when
                             // a sum/avg over another mesh dim is reduced while they are there.
                             return st.kind == StepKind::LocalEmbedPartial &&
                                    p.op != ReduceOp::Sum && is_integer(st.before.meta().dtype);
                           }),
            out.end());
  for (int i = 0; i < spec.mesh().ndim(); ++i) {
    const Placement& t = to.placement(i);
    if (!t.is_shard() || t.sizes.empty() || spec.mesh().extent(i) == 1) continue;
    std::optional<TensorSpec> after;
    try {
      after = spec.with_placement(i, t);
    } catch (const Error&) {
      continue;
    }
    const Placement& cur = spec.placement(i);
    StepKind k = StepKind::LocalSlice;
    if (cur.is_shard())
      k = StepKind::AllToAll;
    else if (cur.is_partial())
      k = StepKind::ReduceScatter;
    Step st{i, k, spec, TensorSpec(spec.mesh(), canonical_placements(*after), spec.meta())};
    if (!step_problem(st).empty()) continue;
    const std::string key = state_key(st.after);
    bool dup = false;
    for (const Step& o : out)
      if (o.mesh_dim == i && state_key(o.after) == key) dup = true;
    if (!dup) out.push_back(std::move(st));
  }
  return out;
}

// A state's id key: canonical placements as bytes (kind, dim, op, explicit sizes). Equal iff the
// placements are equal, like their text, without formatting numbers.
void state_bytes(std::string& key, const std::vector<Placement>& ps) {
  key.clear();
  auto put = [&](std::int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const Placement& p : ps) {
    key.push_back(char(p.kind));
    key.push_back(char(p.op));
    put(p.dim);
    put(std::int64_t(p.sizes.size()));
    for (std::int64_t x : p.sizes) put(x);
  }
}

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

double checked_cost(const StepCostFn& cost, const Step& s, const StepTraffic& t) {
  const double c = cost(s, t);
  if (std::isnan(c) || c < 0)
    throw Error("the step cost function priced " + step_text(s) + " at " + std::to_string(c) +
                ": prices must be >= 0 (+inf = never take the step); fix the cost function or "
                "the profile it reads");
  return c;
}

}  // namespace

CostedPlan price_plan(const Plan& plan, const StepCostFn& cost) {
  CostedPlan cp;
  cp.plan = plan;
  for (const Step& s : plan.steps) {
    const double c = checked_cost(cost, s, describe_step(s));
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

// Explicit-size shard placements of the target: the extra steps candidate_steps offers.
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
struct SearchGraph {
  std::mutex mu;  // one search at a time
  std::vector<bool> ops_used;
  TensorSpec extras_from;  // a target with the explicit sizes candidate_steps offers
  std::vector<State> states;
  std::unordered_map<std::string, int> ids;
};

namespace {

SearchResult search(SearchGraph& g, const TensorSpec& from, const TensorSpec& to,
                    const StepCostFn& cost, const SearchOptions& opt) {
  const std::size_t k = std::size_t(opt.k);
  std::string key;  // reused: no allocation per lookup once it has grown
  auto intern = [&](const TensorSpec& spec) -> int {
    std::vector<Placement> canon = canonical_placements(spec);
    state_bytes(key, canon);
    auto it = g.ids.find(key);
    if (it != g.ids.end()) return it->second;
    const int id = int(g.states.size());
    g.ids.emplace(key, id);
    g.states.push_back(State{TensorSpec(spec.mesh(), std::move(canon), spec.meta()), false, {}});
    return id;
  };
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
  const int src = intern(from);
  reach(src);
  const int dst = intern(to);
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

  // Per search: how often each state was expanded, and its k best queued labels.
  std::vector<int> pops;
  std::vector<std::vector<int>> bests;
  auto grow = [&] {
    if (pops.size() < g.states.size())
      pops.resize(g.states.size(), 0), bests.resize(g.states.size());
  };
  grow();
  std::vector<Label> pool;
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
  std::priority_queue<int, std::vector<int>, decltype(worse)> queue(worse);
  queue.push(0);
  std::vector<int> found;
  std::size_t expanded = 0;
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
    if (!g.states[std::size_t(s)].expanded_edges) {
      std::vector<Step> steps =
          candidate_steps(g.states[std::size_t(s)].spec, g.extras_from, g.ops_used);
      std::vector<Edge> edges;
      edges.reserve(steps.size());
      for (Step& st : steps) {
        const double c = checked_cost(cost, st, describe_legal_step(st));  // legal by construction
        if (std::isinf(c)) continue;
        const int t = intern(st.after);
        edges.push_back(Edge{std::move(st), t, c});
      }
      g.states[std::size_t(s)].edges = std::move(edges);
      g.states[std::size_t(s)].expanded_edges = true;
      grow();
    }
    const std::size_t ne = g.states[std::size_t(s)].edges.size();
    if (pops[std::size_t(s)] == 1)  // first expansion of s in this search
      for (std::size_t e = 0; e < ne; ++e) reach(g.states[std::size_t(s)].edges[e].to);
    for (std::size_t e = 0; e < ne; ++e) {
      const Edge& ed = g.states[std::size_t(s)].edges[e];
      if (std::size_t(pops[std::size_t(ed.to)]) >= k) continue;
      // Cheap pre-check against the k best labels already queued for the target state.
      const double c = pool[std::size_t(li)].cost + ed.cost;
      std::vector<int>& best = bests[std::size_t(ed.to)];
      if (best.size() == k && pool[std::size_t(best.back())].cost < c) continue;
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
      nl.code = order_code(ed.step, int(e));
      // Only the k best labels per state can become one of the k cheapest plans through it.
      pool.push_back(std::move(nl));
      const int ni = int(pool.size() - 1);
      if (best.size() == k && !worse(best.back(), ni)) {
        pool.pop_back();
        continue;
      }
      best.insert(
          std::upper_bound(best.begin(), best.end(), ni, [&](int a, int b) { return worse(b, a); }),
          ni);
      if (best.size() > k) best.pop_back();
      queue.push(ni);
    }
  }
  res.states_explored = expanded;
  if (found.empty())
    throw Error("plan search " + placements_to_string(from.placements()) + " -> " +
                placements_to_string(to.placements()) + " on mesh " + from.mesh().to_string() +
                ": no plan of finite cost (the cost function prices every path at +inf; does the "
                "profile have models for the collectives the transition needs?)");
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
      const Edge& ed =
          g.states[std::size_t(pool[std::size_t(l.parent)].state)].edges[std::size_t(l.edge)];
      cp.plan.steps.push_back(ed.step);
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
  SearchGraph g;
  g.ops_used = ops_used_by(from, to);
  g.extras_from = to;
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
  const std::vector<bool> ops = ops_used_by(from, to);
  std::string gkey = "mesh=" + from.mesh().to_string() +
                     ";shape=" + shape_to_string(from.meta().shape) +
                     ";dtype=" + std::string(dtype_name(from.meta().dtype)) + ";ops=";
  for (bool b : ops) gkey += b ? '1' : '0';
  gkey += ";extras=" + target_extras(to) + "|" + cost_key;
  std::shared_ptr<SearchGraph> graph;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) {
      ++hits_;
      return it->second;
    }
    ++misses_;
    auto git = graphs_.find(gkey);
    if (git == graphs_.end()) {
      if (graphs_.size() >= capacity_) graphs_.clear();
      auto g = std::make_shared<SearchGraph>();
      g->ops_used = ops;
      g->extras_from = to;
      git = graphs_.emplace(gkey, std::move(g)).first;
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

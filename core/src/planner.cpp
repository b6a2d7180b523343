// The cost-based planner: k cheapest loop-free plans by Dijkstra-style state expansion over
// canonical states (shardcal/planner.hpp, docs/PLANNER.md). Pure (no communication).
#include "shardcal/planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>

#include "shardcal/error.hpp"

namespace shardcal {

namespace {

struct Edge {
  Step step;
  int to = -1;        // state id
  double cost = 0;    // finite, >= 0
};

struct State {
  TensorSpec spec;    // canonical spelling
  bool expanded_edges = false;
  std::vector<Edge> edges;
  int pops = 0;
};

// One partial plan (walk from the source). Labels live in a pool; parent links share prefixes.
struct Label {
  double cost = 0;
  int steps = 0;
  int state = -1;
  int parent = -1;   // label index, -1 for the root
  int edge = -1;     // edge index in parent's state
  std::vector<std::int64_t> order;  // tie-break key: per step (mesh dim, kind, edge index)
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
std::vector<Step> candidate_steps(const TensorSpec& spec, const TensorSpec& to) {
  std::vector<Step> out = legal_steps(spec);
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
    if (cur.is_shard()) k = StepKind::AllToAll;
    else if (cur.is_partial()) k = StepKind::ReduceScatter;
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

SearchResult plan_cheapest(const TensorSpec& from, const TensorSpec& to, const StepCostFn& cost,
                           const SearchOptions& opt) {
  check_specs(from, to);
  if (opt.k < 1)
    throw Error("plan search: k = " + std::to_string(opt.k) +
                " alternatives requested; ask for at least 1");
  if (!cost) throw Error("plan search: no step cost function given");
  const std::size_t k = std::size_t(opt.k);

  std::vector<State> states;
  std::unordered_map<std::string, int> ids;
  auto intern = [&](const TensorSpec& spec) -> int {
    std::string key = state_key(spec);
    auto it = ids.find(key);
    if (it != ids.end()) return it->second;
    if (states.size() >= opt.max_states)
      throw Error("plan search " + placements_to_string(from.placements()) + " -> " +
                  placements_to_string(to.placements()) + " on mesh " + from.mesh().to_string() +
                  ": more than max_states = " + std::to_string(opt.max_states) +
                  " states; raise SearchOptions::max_states (shardbench plan --max-states) or use "
                  "plan_redistribution");
    const int id = int(states.size());
    ids.emplace(std::move(key), id);
    states.push_back(State{TensorSpec(spec.mesh(), canonical_placements(spec), spec.meta()), false,
                           {}, 0});
    return id;
  };
  const int src = intern(from);
  const int dst = intern(to);

  SearchResult res;
  if (src == dst) {
    CostedPlan cp;
    cp.plan = Plan{from, to, {}};
    res.alternatives.push_back(cp);
    res.best = cp;
    res.states_explored = states.size();
    return res;
  }

  std::vector<Label> pool;
  pool.push_back(Label{0, 0, src, -1, -1, {}});
  auto worse = [&](int a, int b) {  // priority_queue: top = least
    const Label& x = pool[std::size_t(a)];
    const Label& y = pool[std::size_t(b)];
    if (x.cost != y.cost) return x.cost > y.cost;
    if (x.steps != y.steps) return x.steps > y.steps;
    return x.order > y.order;
  };
  std::priority_queue<int, std::vector<int>, decltype(worse)> queue(worse);
  queue.push(0);
  std::vector<int> found;
  while (!queue.empty() && found.size() < k) {
    const int li = queue.top();
    queue.pop();
    const int s = pool[std::size_t(li)].state;
    if (std::size_t(states[std::size_t(s)].pops) >= k) continue;
    ++states[std::size_t(s)].pops;
    if (s == dst) {
      found.push_back(li);
      continue;  // a plan never passes through its target
    }
    if (!states[std::size_t(s)].expanded_edges) {
      std::vector<Step> steps = candidate_steps(states[std::size_t(s)].spec, to);
      std::vector<Edge> edges;
      edges.reserve(steps.size());
      for (Step& st : steps) {
        const double c = checked_cost(cost, st, describe_step(st));
        if (std::isinf(c)) continue;
        const int t = intern(st.after);
        edges.push_back(Edge{std::move(st), t, c});
      }
      states[std::size_t(s)].edges = std::move(edges);
      states[std::size_t(s)].expanded_edges = true;
    }
    const std::size_t ne = states[std::size_t(s)].edges.size();
    for (std::size_t e = 0; e < ne; ++e) {
      const Edge& ed = states[std::size_t(s)].edges[e];
      if (std::size_t(states[std::size_t(ed.to)].pops) >= k) continue;
      // Loop-free: the walk must not revisit a state.
      bool loop = false;
      for (int a = li; a >= 0; a = pool[std::size_t(a)].parent)
        if (pool[std::size_t(a)].state == ed.to) {
          loop = true;
          break;
        }
      if (loop) continue;
      Label nl;
      nl.cost = pool[std::size_t(li)].cost + ed.cost;
      nl.steps = pool[std::size_t(li)].steps + 1;
      nl.state = ed.to;
      nl.parent = li;
      nl.edge = int(e);
      nl.order = pool[std::size_t(li)].order;
      nl.order.push_back(order_code(ed.step, int(e)));
      pool.push_back(std::move(nl));
      queue.push(int(pool.size() - 1));
    }
  }
  res.states_explored = states.size();
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
      const Edge& ed = states[std::size_t(pool[std::size_t(l.parent)].state)].edges[std::size_t(l.edge)];
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
  const bool partial = plan.from.has_partial();
  for (int rank = 0; rank < n; ++rank) {
    const Box tb = plan.to.local_box(rank);
    std::int64_t lb = tb.numel();
    if (!partial) lb -= intersect(plan.from.local_box(rank), tb).numel();
    r.lower_bound[std::size_t(rank)] = lb * es;
  }
  for (int rank = 0; rank < n; ++rank) {
    r.max_received = std::max(r.max_received, r.received[std::size_t(rank)]);
    r.max_lower_bound = std::max(r.max_lower_bound, r.lower_bound[std::size_t(rank)]);
  }
  return r;
}

}  // namespace shardcal

// Plans as checked data: canonical states, legal steps, plan validation, and the rule-based
// planner. Pure functions of layouts (no communication); see shardcal/plan.hpp.
#include "shardcal/plan.hpp"

#include <algorithm>
#include <set>

#include "shardcal/error.hpp"

namespace shardcal {

std::string step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::AllGather: return "all_gather";
    case StepKind::AllReduce: return "all_reduce";
    case StepKind::ReduceScatter: return "reduce_scatter";
    case StepKind::AllToAll: return "all_to_all";
    case StepKind::LocalSlice: return "local_slice";
    case StepKind::LocalPartial: return "local_partial";
    case StepKind::LocalEmbedPartial: return "local_embed_partial";
  }
  return "?";
}

std::optional<Collective> step_collective(StepKind k) {
  switch (k) {
    case StepKind::AllGather: return Collective::AllGather;
    case StepKind::AllReduce: return Collective::AllReduce;
    case StepKind::ReduceScatter: return Collective::ReduceScatter;
    case StepKind::AllToAll: return Collective::AllToAll;
    case StepKind::LocalSlice:
    case StepKind::LocalPartial:
    case StepKind::LocalEmbedPartial: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<StepKind> step_kind_for(const Placement& a, const Placement& b) {
  using K = Placement::Kind;
  if (a.kind == K::Shard && b.kind == K::Replicate) return StepKind::AllGather;
  if (a.kind == K::Shard && b.kind == K::Shard) return StepKind::AllToAll;
  if (a.kind == K::Partial && b.kind == K::Replicate) return StepKind::AllReduce;
  if (a.kind == K::Partial && b.kind == K::Shard) return StepKind::ReduceScatter;
  if (a.kind == K::Replicate && b.kind == K::Shard) return StepKind::LocalSlice;
  if (a.kind == K::Replicate && b.kind == K::Partial) return StepKind::LocalPartial;
  if (a.kind == K::Shard && b.kind == K::Partial && b.op != ReduceOp::Avg)
    return StepKind::LocalEmbedPartial;
  return std::nullopt;
}

namespace {

std::string step_label(const Step& s) {
  std::string from = "?", to = "?";
  if (s.mesh_dim >= 0 && s.mesh_dim < int(s.before.placements().size()))
    from = s.before.placement(s.mesh_dim).to_string();
  if (s.mesh_dim >= 0 && s.mesh_dim < int(s.after.placements().size()))
    to = s.after.placement(s.mesh_dim).to_string();
  return "mesh dim " + std::to_string(s.mesh_dim) + ": " + from + " -> " + to + "  " +
         step_kind_name(s.kind);
}

std::string human_bytes(std::int64_t b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(b);
  int u = 0;
  while (v >= 1024.0 && u < 4 && std::int64_t(v) % 1024 == 0) {
    v /= 1024.0;
    ++u;
  }
  return std::to_string(std::int64_t(v)) + " " + unit[u];
}

}  // namespace

std::string Step::to_string() const {
  const Step& step = *this;
  std::string s = step_label(*this);
  if (!step_problem(*this).empty()) return s + "  (illegal step)";
  const StepTraffic t = describe_step(*this);
  if (!t.collective) return s + "  local";
  s += "  " + std::to_string(t.groups) + " group" + (t.groups == 1 ? "" : "s") + " x " +
       std::to_string(t.group_size) + " ranks, " +
       (t.plain_groups == t.groups ? std::string("plain")
        : t.plain_groups == 0      ? std::string("v-form")
                                   : "mixed (" + std::to_string(t.plain_groups) + " of " +
                                         std::to_string(t.groups) + " groups plain)") +
       ", " +
       human_bytes(t.bytes) + " (" + std::string(collective_info(*t.collective).bytes_convention) +
       "), max send " + human_bytes(t.max_send_bytes) + ", max recv " + human_bytes(t.max_recv_bytes);
  // Per-group-position element counts of the heaviest group (all_to_all: send matrix rows).
  const std::size_t m = std::size_t(t.group_size);
  const bool matrix = t.counts.size() == m * m && step.kind == StepKind::AllToAll;
  s += "\n      counts" + std::string(matrix ? " (send matrix, row = sender)" : "") + ": [";
  const std::size_t shown = std::min<std::size_t>(t.counts.size(), 64);
  for (std::size_t k = 0; k < shown; ++k)
    s += std::string(k == 0 ? "" : (matrix && k % m == 0 ? "; " : ",")) + std::to_string(t.counts[k]);
  s += std::string(shown < t.counts.size() ? ", ..." : "") + "]" +
       (t.groups_identical ? "" : " (heaviest group " + std::to_string(t.heaviest_group) +
                                      "; groups differ)") +
       ", " + std::to_string(t.elem_size) + " B/element";
  return s;
}

std::string Plan::to_string() const {
  std::string s = placements_to_string(from.placements()) + " -> " +
                  placements_to_string(to.placements()) + " (" + std::to_string(steps.size()) +
                  " step" + (steps.size() == 1 ? "" : "s") + ")";
  for (const Step& st : steps) s += "\n  " + st.to_string();
  return s;
}

// ---- States -----------------------------------------------------------------------------------

std::vector<Placement> canonical_placements(const TensorSpec& spec) {
  std::vector<Placement> out = spec.placements();
  for (int i = 0; i < spec.mesh().ndim(); ++i) {
    Placement& p = out[std::size_t(i)];
    if (spec.mesh().extent(i) == 1) {
      p = Placement::replicate();
      continue;
    }
    if (p.is_partial()) p.dim = -1, p.sizes.clear();
    if (p.is_replicate()) p = Placement::replicate();
    if (p.is_shard() && !p.sizes.empty() && spec.same_layout_on(i, Placement::shard(p.dim)))
      p.sizes.clear();
  }
  return out;
}

std::string state_key(const TensorSpec& spec) {
  return "mesh=" + spec.mesh().to_string() + ";shape=" + shape_to_string(spec.meta().shape) +
         ";dtype=" + std::string(dtype_name(spec.meta().dtype)) +
         ";placements=" + placements_to_string(canonical_placements(spec));
}

// ---- Steps ------------------------------------------------------------------------------------

std::string step_problem(const Step& step) {
  const TensorSpec& a = step.before;
  const TensorSpec& b = step.after;
  if (!(a.mesh() == b.mesh()))
    return "its before and after specs use different meshes (" + a.mesh().to_string() + " and " +
           b.mesh().to_string() + ")";
  if (!(a.meta() == b.meta())) return "its before and after specs describe different tensors";
  const int i = step.mesh_dim;
  if (i < 0 || i >= a.mesh().ndim())
    return "mesh dim " + std::to_string(i) + " does not exist on mesh " + a.mesh().to_string();
  if (a.mesh().extent(i) == 1)
    return "mesh dim " + std::to_string(i) + " has size 1, yet the step claims " +
           step_kind_name(step.kind) +
           ": every placement of a size-1 mesh dim holds the same data, so nothing moves there "
           "and a plan must have no step on it (remove the step)";
  const std::vector<Placement> ca = canonical_placements(a), cb = canonical_placements(b);
  for (int j = 0; j < a.mesh().ndim(); ++j)
    if (j != i && !(ca[std::size_t(j)] == cb[std::size_t(j)]))
      return "it also changes mesh dim " + std::to_string(j) + " (" +
             ca[std::size_t(j)].to_string() + " -> " + cb[std::size_t(j)].to_string() +
             "): a step changes one mesh dim only";
  const Placement& pa = ca[std::size_t(i)];
  const Placement& pb = cb[std::size_t(i)];
  if (pa == pb) return "it changes nothing (" + pa.to_string() + " is already that layout)";
  const std::optional<StepKind> want = step_kind_for(pa, pb);
  if (!want)
    return "no single step goes from " + pa.to_string() + " to " + pb.to_string() +
           " (S -> P(avg) and P -> P of another op go through R: two steps)";
  if (*want != step.kind)
    return pa.to_string() + " -> " + pb.to_string() + " is " + step_kind_name(*want) +
           ", not " + step_kind_name(step.kind);
  // A collective along mesh dim i combines the pieces its group holds; they are the pieces of
  // tensor dim d only when no inner mesh dim splits d further (else each member holds a
  // sub-piece and the group's union is not the block the step assumes).
  const int ta = pa.is_shard() ? pa.dim : -1, tb = pb.is_shard() ? pb.dim : -1;
  for (int j = i + 1; j < a.mesh().ndim(); ++j) {
    const Placement& pj = ca[std::size_t(j)];
    if (pj.is_shard() && (pj.dim == ta || pj.dim == tb))
      return "inner mesh dim " + std::to_string(j) + " (" + pj.to_string() +
             ") shards tensor dim " + std::to_string(pj.dim) + ", which this step " +
             (pa.is_shard(pj.dim) ? "gathers" : "splits") +
             " on mesh dim " + std::to_string(i) + ": gather mesh dim " + std::to_string(j) +
             " first (all_gather to R), then re-shard it after this step";
  }
  return {};
}

std::vector<Step> legal_steps(const TensorSpec& spec) { return legal_steps(spec, {}); }

std::vector<Step> legal_steps(const TensorSpec& spec, const std::vector<bool>& partial_ops) {
  if (!partial_ops.empty() && partial_ops.size() != std::size(kAllReduceOps))
    throw Error("legal_steps: partial_ops has " + std::to_string(partial_ops.size()) +
                " entries; pass none (every op) or one per reduce op (" +
                std::to_string(std::size(kAllReduceOps)) + ")");
  std::vector<Step> out;
  const std::vector<Placement> c = canonical_placements(spec);
  // Targets are built on the canonical spec: explicit sizes on a size-1 mesh dim would otherwise
  // stop summing to their parent piece once an outer dim re-splits it.
  const TensorSpec canon(spec.mesh(), c, spec.meta());
  const int nd = spec.mesh().ndim();
  // step_problem's checks, decided on the canonical placements before any spec is built (the
  // search calls this for every state): the targets are canonical chunk/R/P placements on a mesh
  // dim of size > 1, other mesh dims keep their placements, so a step is legal iff a kind goes
  // there, it changes the placement, and no inner mesh dim shards a tensor dim it splits or
  // joins. The latter also guarantees with_placement succeeds (no inner explicit sizes sharding a
  // re-split dim). tests/planner/test_describe_step_scale.cpp checks this against step_problem.
  auto inner_shards = [&](int i, int d) {
    if (d < 0) return false;
    for (int j = i + 1; j < nd; ++j)
      if (c[std::size_t(j)].is_shard(d) && spec.mesh().extent(j) > 1) return true;
    return false;
  };
  for (int i = 0; i < nd; ++i) {
    if (spec.mesh().extent(i) == 1) continue;
    const Placement& cur = c[std::size_t(i)];
    const int cur_dim = cur.is_shard() ? cur.dim : -1;
    if (inner_shards(i, cur_dim)) continue;  // every step on i joins cur_dim (or splits it again)
    auto consider = [&](Placement t) {
      const std::optional<StepKind> k = step_kind_for(cur, t);
      if (!k || cur == t) return;
      if (t.is_shard() && inner_shards(i, t.dim)) return;
      out.push_back(Step{i, *k, spec, canon.with_placement(i, std::move(t))});
    };
    consider(Placement::replicate());
    for (ReduceOp op : kAllReduceOps)
      if (partial_ops.empty() || partial_ops[std::size_t(op)]) consider(Placement::partial(op));
    for (int d = 0; d < spec.ndim(); ++d) consider(Placement::shard(d));
  }
  return out;
}

void validate_plan(const Plan& plan) {
  const std::string what = "invalid plan " + placements_to_string(plan.from.placements()) + " -> " +
                           placements_to_string(plan.to.placements()) + " on mesh " +
                           plan.from.mesh().to_string();
  const std::string fix =
      "; build plans with plan_redistribution(), or chain steps taken from legal_steps()";
  if (!(plan.from.mesh() == plan.to.mesh()) || !(plan.from.meta() == plan.to.meta()))
    throw Error(what + ": source " + plan.from.serialize() + " and target " + plan.to.serialize() +
                " differ in mesh or tensor (shape, dtype)" + fix);
  std::string cur = state_key(plan.from);
  const std::size_t n = plan.steps.size();
  for (std::size_t k = 0; k < n; ++k) {
    const Step& st = plan.steps[k];
    const std::string where = what + ": step " + std::to_string(k + 1) + " of " +
                              std::to_string(n) + " (" + step_label(st) + ") ";
    if (!(st.before.mesh() == plan.from.mesh()) || !(st.before.meta() == plan.from.meta()))
      throw Error(where + "is for another mesh or tensor: " + st.before.serialize() + fix);
    const std::string start = state_key(st.before);
    if (start != cur)
      throw Error(where + "starts from " + placements_to_string(canonical_placements(st.before)) +
                  " but " + (k == 0 ? "the plan starts" : "the step before it ends") + " at " +
                  placements_to_string(canonical_placements(k == 0 ? plan.from : plan.steps[k - 1].after)) +
                  ": steps must chain" + fix);
    const std::string problem = step_problem(st);
    if (!problem.empty()) throw Error(where + "is not legal: " + problem + fix);
    cur = state_key(st.after);
  }
  if (cur != state_key(plan.to))
    throw Error(what + ": the " + (n == 0 ? "plan has no steps and its source" : "last step") +
                " ends at " +
                placements_to_string(canonical_placements(n == 0 ? plan.from : plan.steps.back().after)) +
                ", not at the target " + placements_to_string(canonical_placements(plan.to)) + fix);
}

// ---- Planner ----------------------------------------------------------------------------------

namespace {

class PlanBuilder {
 public:
  explicit PlanBuilder(const TensorSpec& from) : cur_(from) {}

  void emit(int dim, StepKind kind, Placement to) {
    TensorSpec next = cur_.with_placement(dim, std::move(to));
    steps_.push_back(Step{dim, kind, cur_, next});
    cur_ = std::move(next);
  }

  // Move mesh dim `i` from its current placement to `target` with one or two steps.
  void transition(int i, const Placement& target) {
    const Placement from = cur_.placement(i);
    // DTensor's order has no S -> P step: the greedy baseline keeps going through R.
    const bool embed = from.is_shard() && target.is_partial();
    if (const std::optional<StepKind> k = step_kind_for(from, target); k && !embed)
      return emit(i, *k, target);
    // S -> P and P(op) -> P(other op) go through Replicate.
    if (target.is_partial()) {
      transition(i, Placement::replicate());
      return emit(i, StepKind::LocalPartial, target);
    }
    throw Error("internal: no transition " + from.to_string() + " -> " + target.to_string());
  }

  const TensorSpec& current() const { return cur_; }
  std::vector<Step> take() { return std::move(steps_); }

 private:
  TensorSpec cur_;
  std::vector<Step> steps_;
};

}  // namespace

Plan plan_redistribution(const TensorSpec& from, const TensorSpec& to) {
  if (!(from.mesh() == to.mesh()))
    throw Error("cannot redistribute between meshes " + from.mesh().to_string() + " and " +
                to.mesh().to_string() + ": source and target must use the same mesh");
  if (!(from.meta() == to.meta()))
    throw Error("cannot redistribute a [" + shape_to_string(from.meta().shape) + "] " +
                std::string(dtype_name(from.meta().dtype)) + " tensor into a [" +
                shape_to_string(to.meta().shape) + "] " + std::string(dtype_name(to.meta().dtype)) +
                " spec: shape and dtype must match");
  // Outer mesh dims first, so that when an inner dim is (re)sharded its parent extents are final.
  // A step on mesh dim i is a collective over the group along i; it is only correct when no inner
  // mesh dim shards a tensor dim the step touches (else the group holds interleaved pieces), so
  // such inner dims are gathered first (innermost first) and re-sharded when their turn comes.
  // Mesh dims of size 1 get no step: every placement there is the same data. The walk starts
  // from the canonical spelling of the source (R on size-1 dims), so explicit sizes on a size-1
  // dim cannot stop fitting when an outer dim re-splits their piece.
  const DeviceMesh& mesh = from.mesh();
  PlanBuilder b(TensorSpec(mesh, canonical_placements(from), from.meta()));
  const int k = mesh.ndim();
  for (int i = 0; i < k; ++i) {
    if (mesh.extent(i) == 1) continue;
    const Placement& target = to.placement(i);
    if (b.current().same_layout_on(i, target)) continue;
    std::set<int> touched;
    if (b.current().placement(i).is_shard()) touched.insert(b.current().placement(i).dim);
    if (target.is_shard()) touched.insert(target.dim);
    for (int j = k - 1; j > i; --j) {
      const Placement& pj = b.current().placement(j);
      if (mesh.extent(j) > 1 && pj.is_shard() && touched.count(pj.dim))
        b.emit(j, StepKind::AllGather, Placement::replicate());
    }
    b.transition(i, target);
  }
  Plan plan{from, to, b.take()};
  // Keep the caller's spelling of the target (chunk vs explicit sizes of the same layout, any
  // placement on a size-1 mesh dim).
  if (!plan.steps.empty()) plan.steps.back().after = to;
  return plan;
}

}  // namespace shardcal
